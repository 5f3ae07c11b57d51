"""The parameters of fabric mode (``gse-fabric``): plain hosts, scheduling leaves.

Every field can be set with ``--set name=value``; docs/fabric-mode.md has the table.
Bytes are wire bytes (header plus payload) and times integer picoseconds.
"""

from gse.config import PS_PER_US, ConfigError, GseConfig, _Config
from gse.wire.packet import HEADER_BYTES


class FabricConfig(_Config):
    """Fabric mode: plain hosts (RoCE-like, no congestion control) under scheduling leaves."""

    NAME = "GSE fabric"
    __slots__ = (
        # plain host (gse.agents.plain_host)
        "mtu", "ack_every_bytes", "rto_ps", "rto_max_ps", "max_inbound_per_peer",
        "max_inbound", "max_finished",
        # leaf scheduling
        "reorder", "reorder_timeout_ps", "spray", "container_packets", "grant_bytes",
        "grant_rate_fraction", "request_bytes", "request_timeout_ps", "voq_buffer_bytes",
        "paths", "host_xoff_bytes", "host_xon_bytes", "pause_quanta", "log_grants",
        "reorder_buffer_bytes",
        # loss recovery between the leaves (switchmodel.fabric_recovery)
        "leaf_recovery", "leaf_ack_packets", "leaf_ack_delay_ps", "leaf_nack_timeout_ps",
        "leaf_rto_ps", "leaf_repair_timeout_ps", "leaf_retx_buffer_bytes", "path_suspect_ps",
        "leaf_repair_priority",
        # congestion inside the fabric (switchmodel.fabric_congestion)
        "ecn_bytes", "pacer_window_ps", "pacer_increase", "pacer_min_fraction",
        "path_hot_skips", "path_hot_per_mark", "trim", "path_share_pacing",
        "path_share_headroom", "path_share_start", "path_weights", "path_weight_gain",
        "nack_by_delay", "delay_margin_ps", "delay_live_ps", "delay_nack_max_ps",
        "delay_weights", "delay_weight_unit_ps", "delay_weight_floor_ps", "plan_weights",
        "plan_step", "plan_pacing", "plan_pace_all", "plan_floor", "plan_suspects_ps",
        "plan_infer_links", "plan_infer_keep", "plan_suspects_keep", "plan_gossip_ps",
        "plan_gossip_lag_ps", "plan_gossip_flood", "gossip_suspect_ps",
        # switch egress queues
        "queue_bytes", "control_queue_bytes", "leaf_queue_bytes", "forwarding",
    )
    # what RoceHost reads and a plain host never changes: no DCQCN, hence no CNP
    dcqcn = False
    cnp_interval_ps = 50 * PS_PER_US

    def __init__(self, **overrides):
        self.mtu = 4096
        self.ack_every_bytes = 16 * 1024
        self.rto_ps = 1000 * PS_PER_US       # the RoCE NIC's go-back-N backstop, unchanged
        self.rto_max_ps = 16000 * PS_PER_US
        self.max_inbound_per_peer = 256      # the host's bounded state, as RoceConfig's
        self.max_inbound = 4096
        self.max_finished = 16384
        self.reorder = "leaf"                # "leaf": the destination leaf restores order
        # a hole this old is lost: two full 1-BDP queues of skew between sprayed paths
        self.reorder_timeout_ps = 30 * PS_PER_US
        self.spray = "packet"                # "packet" or "container" of container_packets
        self.container_packets = 4
        # "leaf": each VOQ walks every path in turn, its uplinks and (entropy byte 1) the
        # spine's; "hash": the spines hash the entropy, as for the other protocols
        self.paths = "leaf"
        self.grant_bytes = 4 * (4096 + HEADER_BYTES)   # wire bytes per GRANT: 4 packets
        self.grant_rate_fraction = 1.0
        self.request_bytes = 4 * (4096 + HEADER_BYTES)  # REQUEST at most every this much
        self.request_timeout_ps = 100 * PS_PER_US       # re-REQUEST when starved
        self.voq_buffer_bytes = 32 * 1024 * 1024        # a deep-buffered leaf (VOQ memory)
        self.host_xoff_bytes = 4 * 1024 * 1024  # PAUSE a host holding this much (0 = never)
        self.host_xon_bytes = 3 * 1024 * 1024
        self.pause_quanta = 65535
        self.log_grants = False              # keep every grant (tests of the pacer)
        # packets a leaf holds for reordering, in all (beyond: dropped and counted; the
        # hole timer then skips past them and the host resends)
        self.reorder_buffer_bytes = 32 * 1024 * 1024
        # the leaves repair fabric losses (with reorder="leaf"): the source leaf keeps what
        # it sprayed until the destination leaf ACKs it, resends what is NACKed or times out
        self.leaf_recovery = True
        self.leaf_ack_packets = 8                       # ACK a pair every 8 in-order packets
        self.leaf_ack_delay_ps = 4 * PS_PER_US          # ... or this long after the last one
        # NACK a hole this old (then again with backoff): above the path skew of a loaded
        # fabric; a NACK that was not needed costs one duplicate packet
        self.leaf_nack_timeout_ps = 12 * PS_PER_US
        # resend what is unacknowledged this long (a lost tail, NACK or ACK): a few RTTs
        self.leaf_rto_ps = 60 * PS_PER_US
        # skip a hole no repair filled (the source leaf failed): below the host's RTO
        self.leaf_repair_timeout_ps = 500 * PS_PER_US
        self.leaf_retx_buffer_bytes = 32 * 1024 * 1024  # sent-but-unACKed memory per leaf
        self.path_suspect_ps = 500 * PS_PER_US          # avoid a path that lost a packet
        # a NACKed packet's resend crosses the fabric at control priority: a hole stalls
        # its whole pair at the destination leaf, so its repair should not queue behind
        # new data (the source's timeout resends stay data)
        self.leaf_repair_priority = True
        # spine and core queues mark fabric DATA CE above this many bytes (0: no ECN); the
        # destination leaf slows the pacer of a downlink whose data came marked, and tells
        # the source leaf which paths marked it, which then avoids them for path_hot_ps
        self.ecn_bytes = 64 * 1024
        self.pacer_window_ps = 8 * PS_PER_US    # one leaf-to-leaf RTT: the pacer's step
        self.pacer_increase = 1.0 / 16          # ... up by this fraction per clean window
        self.pacer_min_fraction = 0.4           # ... down (by half the marked share) to this
        # the source leaf skips an uplink a turn per CE mark it caused, up to this many
        # owed (0: never, the default: with the widths a route update tells the leaves, it
        # made no difference, see docs/fabric-mode.md)
        self.path_hot_skips = 0
        self.path_hot_per_mark = 1
        # spine and core queues trim fabric DATA to its header instead of dropping it, and
        # the destination leaf NACKs a trimmed packet at once (only with leaf recovery and
        # reorder="leaf": a plain host could not use a trimmed header; else drop-tail)
        self.trim = True
        # the source leaf sends a remote VOQ's granted packets no faster than the share of
        # the line rate its live paths carry toward the destination (live over all paths,
        # times path_share_headroom, at most 1): live is what the widths a route update
        # tells it, less the paths it suspects.  Off: with even spraying a pair's live
        # paths are not its share (docs/fabric-mode.md, "What remains with a quarter ...")
        self.path_share_pacing = False
        self.path_share_headroom = 1.0
        # a route change starts each busy downlink's pacer at the lowest live-path share
        # of the pairs it serves (then ECN raises it); off: mixed per seed (fabric-mode.md)
        self.path_share_start = False
        # the source leaf weights each path toward a destination leaf by the CE marks its
        # packets earned (echoed per packet in the leaf ACKs): weight 1 / (1 + this times
        # the path's mark fraction, an EWMA with gain path_weight_gain); 0: even spraying
        # over the live paths (switchmodel.fabric_weights)
        self.path_weights = 0.0
        self.path_weight_gain = 1.0 / 8
        # the source leaf stamps its send time into fabric DATA, the destination leaf
        # measures each path's queueing delay and gives a hole the time the slowest live
        # path needs (plus delay_margin_ps; paths heard from in delay_live_ps; at most
        # delay_nack_max_ps) before its first NACK (switchmodel.fabric_delay); off: the
        # fixed leaf_nack_timeout_ps
        self.nack_by_delay = False
        self.delay_margin_ps = 4 * PS_PER_US
        self.delay_live_ps = 25 * PS_PER_US
        self.delay_nack_max_ps = 100 * PS_PER_US
        # > 0: the destination leaf echoes its paths' queueing delays in leaf ACKs (4 bits
        # each, in units of delay_weight_unit_ps) and the source leaf weights each path by
        # 1 / (1 + this times its delay over 15 units); 0: even spraying
        self.delay_weights = 0.0
        self.delay_weight_unit_ps = 2 * PS_PER_US
        self.delay_weight_floor_ps = 8 * PS_PER_US     # ... above this delay only
        # when routes change the control plane computes a weight per live path of every
        # pair of leaves (greedy max-min over the paths, steps of plan_step of a line
        # rate; demand "all" pairs or the "active" ones, the source leaves' VOQs) and the
        # leaves spray by it (switchmodel.fabric_maxmin); "": even over the live paths.
        # The four plan_ settings below are on together since 2026-12-06 (issue 28)
        self.plan_weights = "active"
        self.plan_step = 1.0 / 64
        # > 0 (with plan_weights): the source leaf also paces each remote VOQ at this
        # times its pair's max-min rate of the same computation; 0: the weights only
        self.plan_pacing = 0.9
        # ... the pairs the plan gives the line rate too (a margin while the queues the
        # failure left drain; off: only the pairs with a bottleneck are paced)
        self.plan_pace_all = True
        # with plan_pacing: the destination's ECN response does not cut a downlink below
        # the planned rates (times plan_pacing) of the flows it serves
        self.plan_floor = True
        # > 0: the control plane also polls the leaves' suspected paths this often and
        # plans again, without them, when they change (before routes change; simulation
        # only, as the whole plan; docs/fabric-mode.md "The control plane's plan").  Off:
        # it pays only with a controller that hears every leaf within ~20 us (at 50 us a
        # quarter of the core links at 1 ms detection is worse than without: 1.95 / 1.81)
        self.plan_suspects_ps = 0
        # > 0, with plan_suspects_ps: the control plane infers the dead links from all
        # the leaves' suspected paths (greedy set cover, fabric_maxmin.infer_links; a
        # link must explain at least this many) and every pair plans without the paths
        # through them, not only without its own suspects
        self.plan_infer_links = 0
        # with plan_infer_links: the links inferred dead stay so until the routes change
        # (the leaves' own suspicions expire after path_suspect_ps, before 1 ms detection)
        self.plan_infer_keep = False
        # with plan_suspects_ps: a pair plans without the paths it reported until the
        # routes first change, not only while its leaf suspects them (path_suspect_ps)
        self.plan_suspects_keep = False
        # > 0: the leaves tell each other their suspected paths and demand in their control
        # messages and each computes the plan itself, at most this often (fabric_gossip:
        # no controller in the loop, before the routes change; simulation only: the UDP
        # and Mininet runtimes have no fault injector to give the leaves the routes)
        self.plan_gossip_ps = 5 * PS_PER_US
        # ... from the reports as they stood this long before each plan's epoch, so that
        # the leaves that heard them agree (0: the latest; 20 us made seed 1 1.46 -> 1.79)
        self.plan_gossip_lag_ps = 0
        # ... and a leaf whose report changed sends it to every other leaf at once (one
        # small control message each), not only in the messages it sends anyway
        self.plan_gossip_flood = True
        # ... and while the leaves report, a path that lost a packet is suspected this long
        # instead of path_suspect_ps: past 1 ms detection, so that the reports keep the dead
        # paths out of every leaf's plan until the routes change (500 us: the ring +2.8%)
        self.gossip_suspect_ps = 2000 * PS_PER_US
        self.queue_bytes = GseConfig.BDP_BYTES          # drop-tail unless trim
        self.control_queue_bytes = GseConfig.BDP_BYTES
        # a leaf's egress ports draw on its deep buffer: the destination pacers of a source
        # leaf's peers do not coordinate, so their grants may briefly exceed its uplinks
        self.leaf_queue_bytes = 1024 * 1024
        self.forwarding = "spray"            # spines spread by the leaf's entropy
        self._apply(overrides)

    def validate(self):
        self._positive(("mtu", "ack_every_bytes", "rto_ps", "rto_max_ps", "reorder_timeout_ps",
                        "container_packets", "grant_bytes", "request_bytes",
                        "request_timeout_ps", "voq_buffer_bytes", "queue_bytes",
                        "control_queue_bytes", "leaf_queue_bytes", "max_inbound_per_peer",
                        "max_inbound", "max_finished", "reorder_buffer_bytes",
                        "leaf_ack_packets", "leaf_ack_delay_ps", "leaf_nack_timeout_ps",
                        "leaf_rto_ps", "leaf_repair_timeout_ps", "leaf_retx_buffer_bytes",
                        "path_suspect_ps", "gossip_suspect_ps", "delay_live_ps",
                        "delay_nack_max_ps", "delay_weight_unit_ps"))
        if not self.delay_weights >= 0 or (self.delay_weights and (self.path_weights
                                                                   or self.path_hot_skips)):
            raise ConfigError("delay_weights must be >= 0 and excludes path_weights and "
                              "path_hot_skips (all three use the leaf ACK's sack_bits)")
        if self.delay_margin_ps < 0 or self.delay_weight_floor_ps < 0:
            raise ConfigError("delay_margin_ps and delay_weight_floor_ps must be >= 0, got "
                              "%r, %r" % (self.delay_margin_ps, self.delay_weight_floor_ps))
        if self.leaf_recovery and self.leaf_repair_timeout_ps >= self.rto_ps:
            raise ConfigError("leaf_repair_timeout_ps (%d) must be below the host's rto_ps "
                              "(%d): a hole must be skipped before the host gives up"
                              % (self.leaf_repair_timeout_ps, self.rto_ps))
        if self.reorder not in ("leaf", "host"):
            raise ConfigError("reorder must be 'leaf' or 'host', got %r" % self.reorder)
        if self.spray not in ("packet", "container"):
            raise ConfigError("spray must be 'packet' or 'container', got %r" % self.spray)
        if self.forwarding not in ("spray", "ecmp"):
            raise ConfigError("forwarding must be 'spray' or 'ecmp', got %r" % self.forwarding)
        if self.paths not in ("leaf", "hash"):
            raise ConfigError("paths must be 'leaf' or 'hash', got %r" % self.paths)
        if self.ecn_bytes < 0 or self.path_hot_skips < 0:
            raise ConfigError("ecn_bytes and path_hot_skips must be >= 0")
        if not 0 < self.pacer_min_fraction <= 1 or not 0 < self.pacer_increase <= 1:
            raise ConfigError("pacer_min_fraction and pacer_increase must be in (0, 1]")
        self._positive(("pacer_window_ps",))
        if not self.path_weights >= 0 or not 0 < self.path_weight_gain <= 1:
            raise ConfigError("need path_weights >= 0 and 0 < path_weight_gain <= 1, got "
                              "%r, %r" % (self.path_weights, self.path_weight_gain))
        if not isinstance(self.plan_infer_links, int) or self.plan_infer_links < 0:
            raise ConfigError("plan_infer_links must be an integer >= 0 (0: off), got %r"
                              % (self.plan_infer_links,))
        if min(self.plan_pacing, self.plan_suspects_ps, self.plan_gossip_ps,
               self.plan_gossip_lag_ps) < 0:
            raise ConfigError("plan_pacing, plan_suspects_ps, plan_gossip_ps and "
                              "plan_gossip_lag_ps must be >= 0, got %r, %r, %r, %r"
                              % (self.plan_pacing, self.plan_suspects_ps,
                                 self.plan_gossip_ps, self.plan_gossip_lag_ps))
        if self.plan_weights not in ("", "all", "active") or not 0 < self.plan_step <= 1:
            raise ConfigError("plan_weights must be '', 'all' or 'active' and plan_step in "
                              "(0, 1], got %r, %r" % (self.plan_weights, self.plan_step))
        if self.path_weights and self.path_hot_skips:
            raise ConfigError("path_weights and path_hot_skips both use the leaf ACK's "
                              "sack_bits: set at most one")
        if not self.path_share_headroom >= 1:
            raise ConfigError("path_share_headroom must be >= 1, got %r"
                              % self.path_share_headroom)
        if not 0 < self.grant_rate_fraction <= 1:
            raise ConfigError("grant_rate_fraction must be in (0, 1], got %r"
                              % self.grant_rate_fraction)
        if self.grant_bytes < self.mtu + HEADER_BYTES:
            raise ConfigError("grant_bytes must cover one full packet (%d), got %r"
                              % (self.mtu + HEADER_BYTES, self.grant_bytes))
        if self.host_xoff_bytes < 0 or not 0 <= self.host_xon_bytes <= self.host_xoff_bytes:
            raise ConfigError("need 0 <= host_xon_bytes <= host_xoff_bytes, got %r, %r"
                              % (self.host_xon_bytes, self.host_xoff_bytes))
        if not 1 <= self.pause_quanta <= 65535:
            raise ConfigError("pause_quanta must be 1..65535, got %r" % self.pause_quanta)
        if not 64 <= self.mtu <= 65535 - 64 - 28:
            raise ConfigError("mtu must be 64..65443 payload bytes, got %r" % self.mtu)
        if self.rto_max_ps < self.rto_ps:
            raise ConfigError("rto_max_ps must be >= rto_ps")
