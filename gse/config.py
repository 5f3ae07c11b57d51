"""Transport and switch parameters, with UET-style defaults, each explained where it is set
(the switch queue is the 1-BDP, 178,450-byte queue with trimming of htsim's UET runs, whose
set-up and figures are in experiments/data/htsim_anchors.json).

Every field can be overridden (CLI ``--set name=value``, or keyword arguments).  Values are
integers in bytes and picoseconds so that the event order never depends on float rounding.
"""

import math

PS_PER_US = 1_000_000
PS_PER_NS = 1_000

NIC_SCHEDULERS = ("rr", "htsim")
DCQCN_VARIANTS = ("paper", "mlx")
PFC_MODELS = ("802.1qbb", "htsim")


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names the field."""


def fault_rates_error(loss, corrupt, loss_name="--loss", corrupt_name="--corrupt"):
    """What is wrong with a link's loss and corruption probabilities, or None.

    Each must be in [0, 1) and so must their sum: a packet is lost with probability
    ``loss`` and corrupted with ``corrupt``, so at 1 nothing ever arrives intact and a run
    would retransmit for ever."""
    for name, value in ((loss_name, loss), (corrupt_name, corrupt)):
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not 0.0 <= value < 1.0):
            return "%s must be a probability in [0, 1), got %r" % (name, value)
    if loss + corrupt >= 1.0:
        return ("%s + %s must be below 1 (got %r + %r): no packet would arrive intact"
                % (loss_name, corrupt_name, loss, corrupt))
    return None


class _Config:
    """Shared behaviour: keyword overrides, string conversion for the CLI, validation."""

    __slots__ = ()
    NAME = "protocol"

    def set(self, name, value):
        """Set one field, converting strings (from the command line) to the field's type."""
        if name not in self.__slots__:
            raise ConfigError("unknown %s parameter %r (known: %s)"
                              % (self.NAME, name, ", ".join(sorted(self.__slots__))))
        current = getattr(self, name, None)
        if isinstance(value, str) and not isinstance(current, str):
            value = _parse_value(name, value, current)
        value = _check_type(name, value, current)
        setattr(self, name, value)

    def _apply(self, overrides):
        for name, value in overrides.items():
            self.set(name, value)
        self.validate()

    def _positive(self, names):
        for name in names:
            if getattr(self, name) <= 0:
                raise ConfigError("%s must be positive, got %r" % (name, getattr(self, name)))

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}


class GseConfig(_Config):
    """Parameters of the GSE host agent and of the switch queues it runs over."""

    NAME = "GSE"
    __slots__ = (
        # host
        "mtu", "unsched_bytes", "unsched_charge_cap_bytes", "credit_bytes",
        "grant_rate_fraction", "policy",
        "ack_every_bytes", "ack_delay_ps", "n_entropies", "entropy_penalty",
        "entropy_trim_penalty",
        "entropy_suspect_ps", "reorder_window_ps",
        "rto_ps", "rto_max_ps", "tlp_min_ps", "request_timeout_ps",
        "max_requests_per_peer", "max_requests", "max_finished",
        "max_inbound_per_peer", "max_inbound", "max_reassembly_bytes",
        # switch queues
        "queue_bytes", "trim", "trim_bytes", "control_queue_bytes",
        "ecn", "ecn_kmin_bytes", "ecn_kmax_bytes", "ecn_pmax_pct", "forwarding",
    )

    # BDP of the k=8 reference fabric: 100 Gb/s x ~14.3 us = 178,450 B (htsim's UET queue).
    BDP_BYTES = 178_450

    def __init__(self, **overrides):
        self.mtu = 4096                      # payload bytes per DATA packet
        self.unsched_bytes = self.BDP_BYTES  # unscheduled first window (0 = off)
        # a newcomer's unscheduled window delays grants to the others by its wire time,
        # at most this much ahead (0 = never)
        self.unsched_charge_cap_bytes = self.BDP_BYTES
        self.credit_bytes = 4 * 4096         # credit per GRANT: 4 MTU
        self.grant_rate_fraction = 1.0       # receiver grants at this fraction of its downlink
        self.policy = "rr"                   # "rr" round robin, "srpt", "fifo" oldest first
        self.ack_every_bytes = 16 * 1024     # coalesce ACKs; at once on ECN-CE, trim, OOO fill
        self.ack_delay_ps = 10 * PS_PER_US   # ... and never hold one back longer than this
        self.n_entropies = 256               # entropy values a message sprays over
        self.entropy_penalty = 64            # selections an ECN-marked entropy sits out
        self.entropy_trim_penalty = 256      # ... and a trimmed one
        # a path that lost a packet silently (no trim: maybe a dead link) is avoided this
        # long (0: penalised like a trim instead)
        self.entropy_suspect_ps = 500 * PS_PER_US
        # A hole is lost once a packet sent this much later is acknowledged: two hops of a
        # full 1-BDP queue (2 x 14.3 us) is the most reordering trimming lets spraying cause.
        self.reorder_window_ps = 30 * PS_PER_US
        self.rto_ps = 100 * PS_PER_US        # 15 us + 6 queue drains at 100 Gb/s, rounded
        self.rto_max_ps = 1600 * PS_PER_US
        self.tlp_min_ps = 10 * PS_PER_US     # tail-loss probe: 2 x smoothed RTT, at least this
        self.request_timeout_ps = 100 * PS_PER_US  # re-REQUEST when starved of credit
        # Messages known only from a REQUEST (no DATA yet) a receiver keeps per source and
        # in all; a REQUEST beyond is refused (the sender asks again).  They are granted
        # for half a request timeout at most before their data shows, and forgotten a
        # request timeout after their first grant if it never does.
        self.max_requests_per_peer = 8
        self.max_requests = 256
        # ids of delivered messages a receiver remembers (late duplicates get a final ACK),
        # each for 4 x rto_max_ps at most; the oldest are forgotten beyond this many
        self.max_finished = 16384
        # messages a receiver reassembles at once, per source and in all, and the bytes
        # of state they may hold (bitmaps plus 512 B each: a 4 GB message's bitmap is
        # 128 KiB); DATA of a new message beyond is dropped and counted (the sender
        # retransmits); state idle for 4 x rto_max_ps goes first
        self.max_inbound_per_peer = 256
        self.max_inbound = 4096
        self.max_reassembly_bytes = 32 * 1024 * 1024
        self.queue_bytes = self.BDP_BYTES    # per egress port; 1 BDP with trimming
        self.trim = True
        self.trim_bytes = self.BDP_BYTES     # trim DATA arriving at a data queue this full
        self.control_queue_bytes = self.BDP_BYTES  # headers/control queue limit (drop beyond)
        self.ecn = True
        self.ecn_kmin_bytes = self.BDP_BYTES // 5      # 0.2 BDP
        self.ecn_kmax_bytes = self.BDP_BYTES * 4 // 5  # 0.8 BDP
        self.ecn_pmax_pct = 100
        self.forwarding = "spray"            # "spray" by entropy, or "ecmp" per flow
        self._apply(overrides)

    def validate(self):
        positive = ("mtu", "credit_bytes", "ack_every_bytes", "ack_delay_ps", "n_entropies",
                    "rto_ps", "tlp_min_ps",
                    "rto_max_ps", "request_timeout_ps", "queue_bytes", "control_queue_bytes",
                    "reorder_window_ps", "max_requests_per_peer", "max_requests",
                    "max_finished", "max_inbound_per_peer", "max_inbound",
                    "max_reassembly_bytes")
        self._positive(positive)
        if not 0 <= self.unsched_bytes < 2 ** 32:
            raise ConfigError("unsched_bytes must be in [0, 2^32), got %r" % self.unsched_bytes)
        if not 64 <= self.mtu <= 65535 - 64 - 28:
            raise ConfigError("mtu must be 64..65443 payload bytes, got %r" % self.mtu)
        if not 0 < self.grant_rate_fraction <= 2:
            raise ConfigError("grant_rate_fraction must be in (0, 2], got %r"
                              % self.grant_rate_fraction)
        if self.policy not in ("rr", "srpt", "fifo"):
            raise ConfigError("policy must be 'rr', 'srpt' or 'fifo', got %r" % self.policy)
        if self.forwarding not in ("spray", "ecmp"):
            raise ConfigError("forwarding must be 'spray' or 'ecmp', got %r" % self.forwarding)
        if not 0 <= self.ecn_kmin_bytes <= self.ecn_kmax_bytes:
            raise ConfigError("need 0 <= ecn_kmin_bytes <= ecn_kmax_bytes, got %r, %r"
                              % (self.ecn_kmin_bytes, self.ecn_kmax_bytes))
        if not 0 <= self.ecn_pmax_pct <= 100:
            raise ConfigError("ecn_pmax_pct must be 0..100, got %r" % self.ecn_pmax_pct)
        for name in ("entropy_penalty", "entropy_trim_penalty"):
            if getattr(self, name) < 0:
                raise ConfigError("%s must be >= 0, got %r" % (name, getattr(self, name)))
        if self.entropy_suspect_ps < 0:
            raise ConfigError("entropy_suspect_ps must be >= 0, got %r"
                              % self.entropy_suspect_ps)
        if self.n_entropies > 65536:
            raise ConfigError("n_entropies must be <= 65536, got %r" % self.n_entropies)
        if self.rto_max_ps < self.rto_ps:
            raise ConfigError("rto_max_ps must be >= rto_ps")



def _check_type(name, value, current):
    """``value`` for a field whose default is ``current``: of the same kind (an integer for
    an integer, a finite number for a float, a boolean -- or 0/1 -- for a flag), so that a
    wrong type is a ConfigError naming the field, not a TypeError later."""
    if isinstance(current, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise ConfigError("parameter %s must be true or false, got %r" % (name, value))
    if isinstance(current, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError("parameter %s must be an integer, got %r" % (name, value))
    if isinstance(current, float):
        if (isinstance(value, (int, float)) and not isinstance(value, bool)
                and math.isfinite(value)):
            return value
        raise ConfigError("parameter %s must be a finite number, got %r" % (name, value))
    if isinstance(current, str) and not isinstance(value, str):
        raise ConfigError("parameter %s must be a string, got %r" % (name, value))
    return value


def _parse_value(name, text, current):
    try:
        if isinstance(current, bool):
            low = text.strip().lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(text)
        if isinstance(current, int):
            return int(text.replace("_", ""))
        if isinstance(current, float):
            return float(text)
    except ValueError:
        raise ConfigError("parameter %s: cannot read %r as %s"
                          % (name, text, type(current).__name__)) from None
    return text


class RoceConfig(_Config):
    """Parameters of the RoCEv2 baseline: go-back-N host, DCQCN, ECN, PFC switches.

    Defaults (the ``deployed`` baseline): PFC on every switch ingress with htsim's thresholds
    (XOFF 62,250 B, XON 49,800 B, 415,000 B per egress: the set-up of its RoCE runs in
    experiments/data/htsim_anchors.json), DCQCN as in its paper (g = 1/256, 55 us timers,
    10 MB byte counter, F = 5, 40/200 Mb/s increases, CNP at most every 50 us per flow)
    with RED marking at 100 KB / 400 KB / 0.2.  Those ECN
    thresholds are the HPCC simulator's values *at 25 Gb/s*: it scales them with the link
    rate, to 400 KB / 1,600 KB / 0.2 at 100 Gb/s (its mix/config.txt:52-54, run.py:96-98),
    the ``hpcc-dcqcn`` baseline.  ``htsim`` reproduces htsim's RoCE model.  BASELINES and
    docs/comparison.md give every value's source.
    """

    NAME = "RoCE"
    __slots__ = (
        "mtu", "ack_every_bytes", "rto_ps", "rto_max_ps", "cnp_interval_ps", "cnp_pacing",
        "dcqcn", "dcqcn_g", "dcqcn_alpha_timer_ps", "dcqcn_increase_timer_ps",
        "dcqcn_byte_counter", "dcqcn_f", "dcqcn_ai_mbps", "dcqcn_hai_mbps",
        "dcqcn_min_rate_mbps", "dcqcn_variant", "dcqcn_decrease_period_ps", "dcqcn_clamp_target",
        "dcqcn_initial_alpha",
        "queue_bytes", "ecn", "ecn_kmin_bytes", "ecn_kmax_bytes", "ecn_pmax_pct", "ecn_mark_on",
        "pfc", "pfc_xoff_bytes", "pfc_xon_bytes", "pfc_headroom_bytes", "pfc_dynamic_alpha",
        "pfc_pause_quanta", "switch_buffer_bytes", "forwarding",
        # htsim's RoCE model (docs/comparison.md): framing, NIC and PFC semantics
        "round_up_packets", "nic_scheduler", "pfc_model", "switch_control_priority",
        "max_inbound_per_peer", "max_inbound", "max_finished",
    )

    def __init__(self, **overrides):
        self.mtu = 4096
        self.ack_every_bytes = 16 * 1024
        self.rto_ps = 1000 * PS_PER_US       # go-back-N backstop; NAKs do the usual work
        self.rto_max_ps = 16000 * PS_PER_US
        self.cnp_interval_ps = 50 * PS_PER_US
        # "interval": a CE mark is answered at once unless a CNP went to that flow within
        # cnp_interval (the DCQCN paper's notification point, NVIDIA's min_time_between_cnps);
        # "grid": every cnp_interval from the flow's first packet, one CNP if a mark came
        # since (the DCQCN authors' ns-3)
        self.cnp_pacing = "interval"
        self.dcqcn = True
        self.dcqcn_g = 1.0 / 256
        self.dcqcn_alpha_timer_ps = 55 * PS_PER_US
        self.dcqcn_increase_timer_ps = 55 * PS_PER_US
        self.dcqcn_byte_counter = 10 * 1024 * 1024
        self.dcqcn_f = 5
        self.dcqcn_ai_mbps = 40
        self.dcqcn_hai_mbps = 200
        self.dcqcn_min_rate_mbps = 100
        # "paper": Zhu et al. 2015, CNPs paced at the receiver; "mlx": ConnectX-4+ as the HPCC
        # simulator implements it (gse/agents/dcqcn.py): cuts batched per decrease period
        self.dcqcn_variant = "paper"
        self.dcqcn_decrease_period_ps = 4 * PS_PER_US   # mlx only
        self.dcqcn_clamp_target = False                  # mlx only (paper: always)
        self.dcqcn_initial_alpha = 1.0   # paper variant; the DCQCN authors' ns-3 starts at 0.5
        self.queue_bytes = 415_000           # per egress port (drop-tail if PFC is off)
        self.ecn = True
        self.ecn_kmin_bytes = 100_000
        self.ecn_kmax_bytes = 400_000
        self.ecn_pmax_pct = 20
        # mark by the queue a packet joins ("enqueue") or leaves behind ("dequeue", as the
        # HPCC simulator and htsim do)
        self.ecn_mark_on = "enqueue"
        self.pfc = True
        self.pfc_xoff_bytes = 62_250
        self.pfc_xon_bytes = 49_800
        # what is on the wire when a PAUSE lands: 2 x 1 us x 100 Gb/s plus a packet at
        # each end, rounded up
        self.pfc_headroom_bytes = 40_000
        self.pfc_dynamic_alpha = 0.0         # > 0: XOFF = alpha x free shared buffer
        self.pfc_pause_quanta = 65535        # x 512 bit times (335 us at 100 Gb/s), refreshed
        self.switch_buffer_bytes = 32 * 1024 * 1024
        self.forwarding = "ecmp"
        # False: the last packet carries what is left; True: flows are rounded up to whole
        # packets, the last one full size on the wire (htsim, roce.cpp send_packet)
        self.round_up_packets = False
        # which queue pair the NIC serves next: "rr" round robin in the order queue pairs
        # became active; "htsim" round robin in flow-id order with a cursor that survives
        # arrivals (htsim's FairPullQueue behind per-flow line-rate pacers)
        self.nic_scheduler = "rr"
        # "802.1qbb": data class counted while queued, PAUSE with quanta refreshed while
        # over XOFF, control packets never held; "htsim": every packet counted until its
        # last bit left, XON strictly below, PAUSE until RESUME, delivered after the link
        # delay without queueing, and holding every packet (queue_lossless_input.cpp)
        self.pfc_model = "802.1qbb"
        # switch egress: True serves control (ACK, NACK, CNP) ahead of data; False one FIFO
        # for every packet (htsim's LosslessOutputQueue)
        self.switch_control_priority = True
        # incoming flows a host keeps at once, per source and in all (DATA of a new flow
        # beyond is dropped and counted), and finished flows' ids (4 x rto_max_ps at most)
        self.max_inbound_per_peer = 256
        self.max_inbound = 4096
        self.max_finished = 16384
        self._apply(overrides)

    def validate(self):
        self._positive(("mtu", "ack_every_bytes", "rto_ps", "rto_max_ps",
                        "max_inbound_per_peer", "max_inbound", "max_finished",
                        "dcqcn_alpha_timer_ps", "dcqcn_increase_timer_ps",
                        "queue_bytes", "pfc_xoff_bytes", "dcqcn_decrease_period_ps",
                        "switch_buffer_bytes", "dcqcn_min_rate_mbps"))
        for name in ("cnp_interval_ps", "dcqcn_byte_counter", "dcqcn_f", "dcqcn_ai_mbps",
                     "dcqcn_hai_mbps"):      # 0: a CNP per mark / no byte counter / no stage
            if getattr(self, name) < 0:
                raise ConfigError("%s must be >= 0, got %r" % (name, getattr(self, name)))
        if self.dcqcn_variant not in DCQCN_VARIANTS:
            raise ConfigError("dcqcn_variant must be one of %s, got %r"
                              % (", ".join(DCQCN_VARIANTS), self.dcqcn_variant))
        if self.cnp_pacing not in ("interval", "grid"):
            raise ConfigError("cnp_pacing must be 'interval' or 'grid', got %r" % self.cnp_pacing)
        if self.cnp_pacing == "grid" and self.cnp_interval_ps <= 0:
            raise ConfigError("cnp_pacing 'grid' needs cnp_interval_ps > 0")
        if self.ecn_mark_on not in ("enqueue", "dequeue"):
            raise ConfigError("ecn_mark_on must be 'enqueue' or 'dequeue', got %r"
                              % self.ecn_mark_on)
        if not 0 < self.dcqcn_initial_alpha <= 1:
            raise ConfigError("dcqcn_initial_alpha must be in (0, 1], got %r"
                              % self.dcqcn_initial_alpha)
        if not 0 < self.dcqcn_g < 1:
            raise ConfigError("dcqcn_g must be in (0, 1), got %r" % self.dcqcn_g)
        if not 0 <= self.pfc_xon_bytes <= self.pfc_xoff_bytes:
            raise ConfigError("need 0 <= pfc_xon_bytes <= pfc_xoff_bytes, got %r, %r"
                              % (self.pfc_xon_bytes, self.pfc_xoff_bytes))
        if not 0 <= self.pfc_dynamic_alpha <= 8:
            raise ConfigError("pfc_dynamic_alpha must be in [0, 8], got %r"
                              % self.pfc_dynamic_alpha)
        if not 0 <= self.ecn_kmin_bytes <= self.ecn_kmax_bytes:
            raise ConfigError("need 0 <= ecn_kmin_bytes <= ecn_kmax_bytes")
        if not 0 <= self.ecn_pmax_pct <= 100:
            raise ConfigError("ecn_pmax_pct must be 0..100, got %r" % self.ecn_pmax_pct)
        if self.forwarding not in ("spray", "ecmp"):
            raise ConfigError("forwarding must be 'spray' or 'ecmp', got %r" % self.forwarding)
        if self.rto_max_ps < self.rto_ps:
            raise ConfigError("rto_max_ps must be >= rto_ps")
        if not 64 <= self.mtu <= 65535 - 64 - 28:
            raise ConfigError("mtu must be 64..65443 payload bytes, got %r" % self.mtu)
        if self.nic_scheduler not in NIC_SCHEDULERS:
            raise ConfigError("nic_scheduler must be one of %s, got %r"
                              % (", ".join(NIC_SCHEDULERS), self.nic_scheduler))
        if self.pfc_model not in PFC_MODELS:
            raise ConfigError("pfc_model must be one of %s, got %r"
                              % (", ".join(PFC_MODELS), self.pfc_model))
        if self.pfc_model == "htsim" and not self.pfc:
            raise ConfigError("pfc_model 'htsim' models htsim's lossless fabric: it needs pfc=1")


# Named RoCE baselines (``--baseline``): the model of RoCEv2 that GSE is compared against.
# Each sets its values together over RoceConfig's defaults; docs/comparison.md gives the
# source of every value.
BASELINES = {
    # RoCEv2 + PFC + DCQCN + ECN as deployed: RoceConfig's defaults
    "deployed": {},
    # htsim's RoCE model (uet-htsim main_roce.cpp, roce.cpp): no congestion control,
    # 4,150 B payload + 64 B header, an ACK per packet, flows rounded up to whole packets,
    # per-flow line-rate pacers into a fair host queue, single-FIFO lossless switch queues,
    # PFC XOFF above 15 x 4,150 B and XON below 12 x 4,150 B per ingress, no pause timer
    "htsim": {
        "dcqcn": False, "ecn": False, "mtu": 4150, "ack_every_bytes": 1,
        "round_up_packets": True, "nic_scheduler": "htsim", "pfc_model": "htsim",
        "switch_control_priority": False, "pfc": True, "pfc_xoff_bytes": 62_250,
        "pfc_xon_bytes": 49_800, "pfc_dynamic_alpha": 0.0, "forwarding": "ecmp",
    },
    # DCQCN as the HPCC authors' ns-3 simulator runs it at 100 Gb/s (its run.py --cc dcqcn
    # --bw 100; alibaba-edu/High-Precision-Congestion-Control): ConnectX-style reaction point,
    # a CNP for every marked packet, marks on dequeue at 400 KB / 1600 KB / 20%, an ACK per
    # packet, 1,048-B packets on the wire (1,000 B payload + 48 B of its headers: 984 + 64
    # here), dynamic PFC threshold of 1/8 of the free 32 MiB buffer
    "hpcc-dcqcn": {
        "dcqcn": True, "dcqcn_variant": "mlx", "dcqcn_g": 1.0 / 256,
        "dcqcn_alpha_timer_ps": 1 * PS_PER_US, "dcqcn_decrease_period_ps": 4 * PS_PER_US,
        "dcqcn_increase_timer_ps": 300 * PS_PER_US, "dcqcn_f": 1, "dcqcn_ai_mbps": 20,
        "dcqcn_hai_mbps": 200, "dcqcn_min_rate_mbps": 1000, "dcqcn_clamp_target": False,
        "dcqcn_byte_counter": 0, "cnp_interval_ps": 0,
        "ecn": True, "ecn_kmin_bytes": 400_000, "ecn_kmax_bytes": 1_600_000, "ecn_pmax_pct": 20,
        "ecn_mark_on": "dequeue", "mtu": 984, "ack_every_bytes": 1,
        "pfc": True, "pfc_dynamic_alpha": 0.125, "switch_buffer_bytes": 32 * 1024 * 1024,
    },
}


def roce_baseline(name, **overrides):
    """The RoceConfig of baseline ``name`` (BASELINES), then ``overrides``."""
    if name not in BASELINES:
        raise ConfigError("unknown baseline %r (known: %s)" % (name, ", ".join(BASELINES)))
    values = dict(BASELINES[name])
    values.update(overrides)
    return RoceConfig(**values)
