"""Fabric scheduling (GSE's global scheduling): the leaf switch as a sans-I/O agent.

In fabric mode the hosts are plain senders (``gse.agents.plain_host``: line rate, in order,
go-back-N) and the *leaves* schedule.  Every leaf plays both roles of GSE's edge node:

Source side (GSP ingress).  Data from a local host goes into a virtual output queue
(VOQ) per **destination host**, created when its first packet arrives and freed as soon
as it is empty.  The leaf asks the destination host's leaf for credit with REQUESTs that
carry the VOQ's absolute byte total (coalesced: at most one per ``request_bytes`` of new
data, but at once when everything asked so far was granted or a message's last packet
(``F_LAST``) arrives), and sends granted packets into the fabric, spraying them per packet
(or per container of ``container_packets``) over every path: each VOQ walks its uplinks
round robin from a random start, and with ``paths="leaf"`` byte 1 of the entropy it writes
walks the spine's uplinks too (a ``FabricSpine`` follows it), so that every destination's
traffic is split evenly over all spine-to-core links; with ``paths="hash"`` the entropy
is fresh per packet and the spines hash it, as for the other protocols.  A packet that
enters the fabric carries a small shim in header fields that DATA does not use (``aux`` =
sequence number of its VOQ, ``sack_base`` = the host's own entropy), see
docs/wire-format.md, "Fabric mode".

Destination side (GSP egress).  One grant pacer per host-facing port hands out credit
round robin over the source VOQs that want it, at the port's rate times
``grant_rate_fraction``: a grant of ``b`` wire bytes is followed by the next one ``b``'s
wire time later, so scheduled arrivals never exceed the downlink.  GRANTs carry the VOQ's
cumulative credit (a lost or duplicated GRANT is repaired by the next; a starved source's
re-REQUEST, ``F_RETX``, with the credit it has seen, makes the pacer repeat the total).
Fabric data is put back in VOQ order before it goes down to the host (``reorder="leaf"``),
or forwarded as it comes to a host that reorders itself (``reorder="host"``).  With
``leaf_recovery`` (the default, with ``reorder="leaf"``) the leaves repair fabric losses:
the source leaf keeps what it sprayed until the destination leaf acknowledges it, the
destination NACKs holes, the source resends on another path and steers away from paths
that lost packets (``switchmodel.fabric_recovery``).
A hole that no repair fills (or, without recovery, one older than ``reorder_timeout_ps``)
is skipped: the host's go-back-N (NAK, RTO) resends it end to end.  Traffic between two
hosts of one leaf asks the same pacer by function calls: it sees every byte for its port.

A freed queue leaves one record per peer (byte total and sequence number at the source,
granted total and expected sequence at the destination), as a switch keeps a table entry
per destination; totals and sequence numbers travel as 32-bit serial numbers (RFC 1982),
widened against that record.

Driven like a host agent (``receive(pkt, in_port, now)``, ``on_timer(now)``,
``next_deadline()``), it appends ``(port, packet)`` to ``out`` and ``(port, PAUSE or RESUME)``
to ``pfc_out`` (toward local hosts over ``host_xoff_bytes``); the runtime drains both.
"""

from collections import deque
from heapq import heappop, heappush

from gse.wire.linkrate import wire_time_ps
from gse.wire.packet import (ACK, DATA, F_ECT, F_LAST, F_RETX, F_TRIMMED, GRANT,
                             HEADER_BYTES, NACK, PAUSE, PRIO_CONTROL, REQUEST, RESUME, make_packet)
from switchmodel.fabric_config import FabricConfig
from switchmodel.fabric_congestion import T_PACE, LeafCongestion
from switchmodel.fabric_order import NEVER, T_HOLE, LeafReorder, unwrap32
from switchmodel.fabric_plan import path_entropy
from switchmodel.fabric_recovery import T_RETX, LeafRecovery
from switchmodel.fabric_delay import LeafDelay
from switchmodel.switch import Switch, mix32

__all__ = ["FabricConfig", "FabricLeaf", "FabricSpine", "unwrap32"]

MASK32 = 0xFFFFFFFF
T_PACER = 0
T_REQUEST = 1
MAX_BACKOFF = 16
RECOVERY_MAX_BACKOFF = 2  # with leaf recovery, a REQUEST lost to a dead path is re-sent
                          # on a working one: no reason to wait long
CATCHUP_GRANTS = 4     # a late pacer makes up at most this many grants' worth of time


class FabricSpine(Switch):
    """A spine switch in fabric mode with ``paths="leaf"``: byte 1 of the entropy names
    its uplink, so that every VOQ of a source leaf walks all the fabric's paths in turn."""

    __slots__ = ()

    def route(self, pkt):
        dst = pkt.dst
        hops = self.hops_to(dst)
        if hops is None:
            self.unroutable += 1
            return -1
        n = len(hops)
        if n == 0:
            self.unreachable += 1
            return -1
        self.forwarded += 1
        if n == 1:
            return hops[0]
        return hops[((pkt.entropy >> 8) & 0xFF) % n]


class Voq:
    """Source side: the packets a local host sent toward one destination host."""

    __slots__ = ("dst", "dst_leaf", "pkts", "bytes", "enq_total", "req_total", "granted",
                 "sent", "seq", "rr", "req_seq", "req_deadline", "req_armed", "req_backoff",
                 "cont_left", "cont_port", "cont_entropy", "pace_next", "pace_armed")

    def __init__(self, dst, dst_leaf, total, seq):
        self.dst = dst
        self.dst_leaf = dst_leaf
        self.pkts = deque()
        self.bytes = 0
        self.enq_total = total    # wire bytes ever queued toward dst (cumulative)
        self.req_total = total    # ... of which asked for
        self.granted = total      # ... of which granted (cumulative credit seen)
        self.sent = total         # ... of which sent
        self.seq = seq            # last fabric sequence number used
        self.rr = 0               # the path round robin (the caller picks its start)
        self.req_seq = 0
        self.req_deadline = NEVER
        self.req_armed = NEVER    # time of this VOQ's pending timer entry
        self.req_backoff = 1
        self.cont_left = 0        # packets left in the current container
        self.cont_port = -1
        self.cont_entropy = 0
        self.pace_next, self.pace_armed = 0, False   # path-share pacing (fabric_congestion)


class Demand:
    """Destination side: one source VOQ that wants credit from a downlink's pacer."""

    __slots__ = ("src_leaf", "host", "need", "granted", "queued")

    def __init__(self, src_leaf, host, total):
        self.src_leaf = src_leaf
        self.host = host
        self.need = total         # cumulative bytes the source asked for
        self.granted = total      # cumulative bytes granted
        self.queued = False


class Downlink:
    """The grant pacer of one host-facing port."""

    __slots__ = ("host", "port", "mbps", "active", "next_time", "armed", "granted_bytes",
                 "grants", "log", "scale", "rate", "rx", "ce", "win_end")

    def __init__(self, host, port, gbps, fraction, log):
        self.host = host
        self.port = port
        self.mbps = max(1, int(round(gbps * fraction * 1000)))
        self.active = deque()     # Demands with need > granted, round robin
        self.next_time = 0
        self.armed = False
        self.granted_bytes = 0
        self.grants = 0
        self.log = [] if log else None   # (time, bytes) of every grant of new credit
        self.scale = 1.0          # the congestion response's share of mbps (fabric_congestion)
        self.rate = self.mbps     # what the pacer grants at: mbps * scale
        self.rx = 0               # fabric packets that arrived in the current window
        self.ce = 0               # ... of which marked CE
        self.win_end = NEVER


class FabricLeaf(LeafReorder, LeafRecovery, LeafCongestion, LeafDelay):
    """One leaf's fabric scheduling (see the module docstring).

    ``spine_fanout``: how many uplinks a spine picks among by byte 1 of the entropy (the
    k/2 of a Fat-Tree's aggregation switch; 1 if unknown), so that a path the leaf suspects
    is one the spine really takes (``switchmodel.fabric_plan.spine_fanout``)."""

    def __init__(self, node, cfg, switch, host_ports, host_gbps, leaf_of, spine_fanout=1):
        self.node = node
        self.cfg = cfg
        self.switch = switch              # routes everything the fabric does not touch
        self.host_ports = host_ports      # local host -> port
        self.port_host = {p: h for h, p in host_ports.items()}
        self.leaf_of = leaf_of            # host -> its leaf's node id
        self.reorder_at_leaf = cfg.reorder == "leaf"
        self.container = cfg.container_packets if cfg.spray == "container" else 1
        self.leaf_paths = cfg.paths == "leaf"
        self.recovery = bool(cfg.leaf_recovery) and self.reorder_at_leaf
        self.first_hole_ps = cfg.leaf_nack_timeout_ps if self.recovery else cfg.reorder_timeout_ps
        self.spine_fanout = max(1, min(256, int(spine_fanout))) if self.leaf_paths else 1
        self.ecn = cfg.ecn_bytes > 0      # spray DATA ECN-capable, pace by the marks
        self.hot_ps = cfg.path_hot_skips if self.ecn and self.recovery and self.leaf_paths else 0
        self.hot_per_mark, self.mtu_wire = cfg.path_hot_per_mark, cfg.mtu + HEADER_BYTES
        self._init_share(cfg, host_gbps)
        self._init_paths(cfg)     # path_weights, nack_by_delay (fabric_weights, _delay)
        self.hot_bits = {}        # (src leaf, host) -> paths that marked CE, for the next ACK
        self.hot = {}             # dst leaf -> {path key: avoided until}
        self.widths = {}          # dst host -> live paths beyond each uplink (set_widths)
        self.sent_bufs = {}       # dst host -> SentBuffer (live while it holds packets)
        self.suspects = {}        # dst leaf -> {path key: suspected until}
        self.ack_due = {}         # (src leaf, host) -> in-order packets not yet ACKed
        self.retx_bytes = 0
        self.ctrl_rr = 0          # the path walk of control packets that are steered
        self.proven = {}          # dst leaf -> (port, entropy, time) of its latest ACKed path
        self.echo = {}            # src leaf -> (path entropy, time) of its latest DATA here
        self.downlinks = {h: Downlink(h, p, host_gbps[h], cfg.grant_rate_fraction,
                                      cfg.log_grants) for h, p in host_ports.items()}
        self.voqs = {}            # dst host -> Voq (live only while it holds packets)
        self.tails = {}           # dst host -> (byte total, seq) of a freed VOQ
        self.demands = {}         # (src leaf, host) -> Demand (live while it wants credit)
        self.dtails = {}          # (src leaf, host) -> granted total of a freed Demand
        self.reorders = {}        # (src leaf, host) -> Reorder (live while it holds packets)
        self.rtails = {}          # (src leaf, host) -> next expected seq
        self.ingress_bytes = {p: 0 for p in host_ports.values()}
        self.pausing = {p: False for p in host_ports.values()}
        self.timers, self.tseq = [], 0
        self.salt, self.entropy = switch.salt, switch.salt & 0xFFFF
        self.out, self.pfc_out = [], []
        self.voq_bytes = self.reorder_bytes = 0
        self.voq_peak = self.reorder_peak = self.voq_drops = self.voqs_created = 0
        self.requests = self.rerequests = self.grants = self.regrants = 0
        self.stale_grants = self.hole_skips = self.skipped = self.late = 0
        self.duplicates = self.pauses_sent = self.bad_frames = self.stray = 0
        self.unroutable = self.reorder_drops = 0
        self.leaf_resends = self.leaf_timeouts = self.leaf_acks = self.leaf_nacks = 0
        self.nacks_received = self.stale_acks = self.stale_nacks = self.bad_acks = 0
        self.retx_peak = self.retx_unbuffered = self.paths_suspected = self.all_suspected = 0
        self.ce_received = self.pacer_cuts = self.paths_hot = self.repair_charges = 0
        self.trimmed_nacks = self.trimmed_stale = self.paths_cleared = 0
        self.pacer_low = 1.0

    # -- runtime interface ----------------------------------------------------------------

    def receive(self, pkt, in_port, now):
        kind = pkt.kind
        if kind == DATA and not pkt.flags & F_TRIMMED:
            if pkt.corrupt:
                self.bad_frames += 1     # the leaf reads past the routing header: FCS check
                return
            if in_port in self.port_host:
                if 0 <= pkt.dst < len(self.leaf_of):
                    self._enqueue(pkt, in_port, now)
                    return
            elif pkt.dst in self.host_ports:
                self._arrive(pkt, now)
                return
        elif kind == DATA and pkt.dst in self.host_ports and self.recovery \
                and in_port not in self.port_host:
            self._trimmed(pkt, now)      # a spine trimmed it: NACK it at once, not down
            return
        elif pkt.dst == self.node:
            if pkt.corrupt:
                self.bad_frames += 1
                return
            if self.recovery and 0 <= pkt.src < len(self.switch.next_hops) \
                    and self._heard(pkt, now):    # (answer on its path; a report: done)
                return
            if kind == REQUEST:
                self._request_pkt(pkt, now)
            elif kind == GRANT:
                self._grant_pkt(pkt, now)
            elif kind == ACK and self.recovery:
                self._ack_pkt(pkt, now)
            elif kind == NACK and self.recovery:
                self._nack_pkt(pkt, now)
            else:
                self.stray += 1
            return
        if self.recovery and in_port in self.port_host and 0 <= pkt.dst < len(self.leaf_of):
            port = self._steer(pkt, self.leaf_of[pkt.dst], now)   # a host's ACK or NAK
            if port >= 0:
                self.out.append((port, pkt))
                return
        port = self.switch.route(pkt)
        if port < 0:
            self.unroutable += 1
            return
        self.out.append((port, pkt))

    def next_deadline(self):
        return self.timers[0][0] if self.timers else -1

    def on_timer(self, now):
        timers = self.timers
        while timers and timers[0][0] <= now:
            t, _, kind, obj = heappop(timers)
            if kind == T_PACER:
                if obj.armed and obj.next_time <= now:
                    self._grant(obj, now, obj.next_time)
            elif kind == T_REQUEST:
                self._request_timer(obj, now)
            elif kind == T_HOLE:
                self._hole_timer(obj, now)
            elif kind == T_RETX:
                self._retx_timer(obj, now)
            elif kind == T_PACE:
                self._pace_timer(obj, now)
            else:
                self._ack_timer(obj, now)

    def idle(self):
        """No VOQ, no pending demand, no held packet: every per-destination queue freed."""
        return (not self.voqs and not self.demands and not self.reorders and not self.sent_bufs
                and self.retx_bytes == 0 and self.voq_bytes == 0 and self.reorder_bytes == 0
                and not any(dl.active for dl in self.downlinks.values()))

    def counters(self):
        return {"voqs_created": self.voqs_created, "voqs_live": len(self.voqs),
                "voq_peak_bytes": self.voq_peak, "voq_drops": self.voq_drops,
                "reorder_peak_bytes": self.reorder_peak, "requests": self.requests,
                "rerequests": self.rerequests, "grants": self.grants,
                "regrants": self.regrants, "stale_grants": self.stale_grants,
                "hole_skips": self.hole_skips, "skipped_packets": self.skipped,
                "late_packets": self.late, "duplicates": self.duplicates,
                "host_pauses": self.pauses_sent, "bad_frames": self.bad_frames,
                "stray": self.stray, "unroutable": self.unroutable,
                "reorder_drops": self.reorder_drops, "leaf_resends": self.leaf_resends,
                "leaf_timeouts": self.leaf_timeouts, "leaf_acks": self.leaf_acks,
                "leaf_nacks": self.leaf_nacks, "nacks_received": self.nacks_received,
                "stale_acks": self.stale_acks, "stale_nacks": self.stale_nacks,
                "bad_acks": self.bad_acks, "retx_peak_bytes": self.retx_peak,
                "retx_unbuffered": self.retx_unbuffered,
                "paths_suspected": self.paths_suspected, "all_suspected": self.all_suspected,
                "paths_cleared": self.paths_cleared,
                "sent_buffers_live": len(self.sent_bufs), "ce_received": self.ce_received,
                "pacer_cuts": self.pacer_cuts, "pacer_low_pct": int(self.pacer_low * 100),
                "paths_hot": self.paths_hot, "repair_charges": self.repair_charges,
                "trimmed_nacks": self.trimmed_nacks, "trimmed_stale": self.trimmed_stale,
                "share_holds": self.share_holds, "weight_samples": self.weight_samples,
                "weight_skips": self.weight_skips, "delay_waits": self.delay_waits,
                "plan_sets": self.plan_sets, "plan_picks": self.plan_picks,
                "gossip_bytes": self.gossip_bytes, "gossip_plans": self.gossip_plans}

    # -- source side ----------------------------------------------------------------------

    def _enqueue(self, pkt, in_port, now):
        size = pkt.size
        if self.voq_bytes + size > self.cfg.voq_buffer_bytes:
            self.voq_drops += 1
            return
        dst = pkt.dst
        voq = self.voqs.get(dst)
        if voq is None:
            total, seq = self.tails.pop(dst, (0, 0))
            voq = self.voqs[dst] = Voq(dst, self.leaf_of[dst], total, seq)
            self.voqs_created += 1
            # a random first path, so that VOQs created together do not walk in step
            voq.rr = mix32(self.salt + self.voqs_created * 0x9E3779B1) & 0xFFFF
        pkt.ingress = in_port
        voq.pkts.append(pkt)
        voq.bytes += size
        voq.enq_total += size
        self.voq_bytes += size
        if self.voq_bytes > self.voq_peak:
            self.voq_peak = self.voq_bytes
        xoff = self.cfg.host_xoff_bytes
        b = self.ingress_bytes[in_port] = self.ingress_bytes[in_port] + size
        if xoff and b > xoff and not self.pausing[in_port]:
            self.pausing[in_port] = True
            self.pauses_sent += 1
            self.pfc_out.append((in_port, PAUSE))
        self._maybe_request(voq, now, pkt.flags & F_LAST)
        if voq.granted > voq.sent:
            self._drain(voq, now)

    def _maybe_request(self, voq, now, last=False):
        unasked = voq.enq_total - voq.req_total
        if unasked <= 0:
            return
        if unasked < self.cfg.request_bytes and voq.req_total > voq.granted and not last:
            return                       # coalesce while credit is still due
        voq.req_total = voq.enq_total
        self._send_request(voq, now, False)

    def _send_request(self, voq, now, retx):
        if voq.dst_leaf == self.node:
            self._on_request(self.node, voq.dst, voq.req_total, voq.granted, False, now)
            return
        voq.req_seq += 1
        self.requests += 1
        self.entropy = (self.entropy + 1) & 0xFFFF
        pkt = make_packet(kind=REQUEST, src=self.node, dst=voq.dst_leaf, msg_id=voq.dst,
                          psn=voq.req_seq & MASK32, entropy=self.entropy,
                          flags=F_RETX if retx else 0, credit=voq.req_total & MASK32,
                          aux=voq.granted & MASK32, ts=now, prio=PRIO_CONTROL)
        self._route(pkt)
        if voq.req_deadline == NEVER:
            voq.req_deadline = now + self.cfg.request_timeout_ps * voq.req_backoff
            self._arm_request(voq)

    def _arm_request(self, voq):
        if voq.req_armed == NEVER:
            voq.req_armed = voq.req_deadline
            self._push(voq.req_deadline, T_REQUEST, voq)

    def _request_timer(self, voq, now):
        voq.req_armed = NEVER
        if self.voqs.get(voq.dst) is not voq or voq.req_deadline == NEVER:
            return
        if now < voq.req_deadline:
            self._arm_request(voq)
            return
        if voq.granted >= voq.req_total and voq.req_total == voq.enq_total:
            voq.req_deadline = NEVER
            return
        voq.req_total = voq.enq_total
        self.rerequests += 1
        self._send_request(voq, now, True)
        if voq.req_backoff < (RECOVERY_MAX_BACKOFF if self.recovery else MAX_BACKOFF):
            voq.req_backoff *= 2
        voq.req_deadline = now + self.cfg.request_timeout_ps * voq.req_backoff
        self._arm_request(voq)

    def _grant_pkt(self, pkt, now):
        voq = self.voqs.get(pkt.msg_id)
        if voq is None or voq.dst_leaf != pkt.src:
            self.stale_grants += 1       # the VOQ is done: an old or repeated GRANT
            return
        self._credit(voq, unwrap32(pkt.credit, voq.granted), now)

    def _credit(self, voq, total, now):
        if total > voq.req_total:
            total = voq.req_total        # never more than asked (a confused peer)
        if total <= voq.granted:
            self.stale_grants += 1
            return
        voq.granted = total
        voq.req_backoff = 1
        voq.req_deadline = (now + self.cfg.request_timeout_ps if total < voq.req_total
                            else NEVER)
        self._drain(voq, now)
        if self.voqs.get(voq.dst) is voq:
            self._maybe_request(voq, now)
            if voq.req_deadline != NEVER:
                self._arm_request(voq)

    def _drain(self, voq, now):
        pkts = voq.pkts
        credit = voq.granted - voq.sent
        local = voq.dst_leaf == self.node
        out = self.out
        share = self.share_pacing and not local and (self.widths or self.suspects)
        while pkts and pkts[0].size <= credit:
            if share and self._share_hold(voq, pkts[0].size, now):
                break                     # paced to its live paths' share: a timer resumes
            pkt = pkts.popleft()
            size = pkt.size
            credit -= size
            voq.sent += size
            voq.bytes -= size
            self.voq_bytes -= size
            port = pkt.ingress
            b = self.ingress_bytes[port] = self.ingress_bytes[port] - size
            if self.pausing[port] and b <= self.cfg.host_xon_bytes:
                self.pausing[port] = False
                self.pfc_out.append((port, RESUME))
            if local:
                out.append((self.host_ports[voq.dst], pkt))
                continue
            voq.seq += 1
            pkt.aux = voq.seq & MASK32
            pkt.sack_base = pkt.entropy
            if self.ecn:
                pkt.flags |= F_ECT
            if voq.cont_left <= 0:        # a new container: the next path
                if self.recovery:         # ... that is not suspected
                    port, entropy, voq.rr = self._next_path(voq.dst, voq.dst_leaf, voq.rr,
                                                            now)
                    if port < 0:          # cut off from dst: kept, resent when routed
                        self.unroutable += 1
                        self.switch.unreachable += 1
                        self._keep(voq, pkt, voq.seq, -1, 0, now)
                        continue
                    voq.cont_port = port
                    voq.cont_entropy = entropy
                else:
                    hops = self.switch.next_hops[voq.dst]
                    n = len(hops)
                    if n == 0:            # cut off from dst: a counted drop (its seq is a
                        self.unroutable += 1   # hole the far leaf skips; the host resends)
                        self.switch.unreachable += 1
                        continue
                    voq.rr += 1           # each VOQ over every uplink in turn
                    voq.cont_port = hops[voq.rr % n]
                    if self.leaf_paths:   # ... and byte 1 over the spine's uplinks
                        voq.cont_entropy = path_entropy(voq.rr, n)
                    else:
                        self.entropy = (self.entropy + 1) & 0xFFFF
                        voq.cont_entropy = self.entropy
                voq.cont_left = self.container
            voq.cont_left -= 1
            pkt.entropy = voq.cont_entropy
            if self.recovery:
                self._keep(voq, pkt, voq.seq, voq.cont_port, voq.cont_entropy, now)
            out.append((voq.cont_port, pkt))
        if not pkts:
            del self.voqs[voq.dst]
            self.tails[voq.dst] = (voq.enq_total, voq.seq)

    # -- destination side: grants ---------------------------------------------------------

    def _request_pkt(self, pkt, now):
        host = pkt.msg_id
        hops = self.switch.next_hops
        if host not in self.downlinks or not 0 <= pkt.src < len(hops) or not hops[pkt.src]:
            # (a source no GRANT could reach: forged, and per-source state is bounded by
            # the nodes of the fabric)
            self.stray += 1
            return
        key = (pkt.src, host)
        d = self.demands.get(key)
        ref_need = d.need if d is not None else self.dtails.get(key, 0)
        ref_granted = d.granted if d is not None else ref_need
        self._on_request(pkt.src, host, unwrap32(pkt.credit, ref_need),
                         unwrap32(pkt.aux, ref_granted), pkt.flags & F_RETX, now)

    def _on_request(self, src_leaf, host, need, seen, retx, now):
        key = (src_leaf, host)
        d = self.demands.get(key)
        if d is None:
            base = self.dtails.get(key, 0)
            if need <= base:
                if retx and seen < base:
                    self._send_grant(src_leaf, host, base, now, True)
                return
            d = self.demands[key] = Demand(src_leaf, host, base)
            self.dtails.pop(key, None)
        if need > d.need:
            d.need = need
        if retx and seen < d.granted:
            self._send_grant(src_leaf, host, d.granted, now, True)
        dl = self.downlinks[host]
        if d.need > d.granted and not d.queued:
            d.queued = True
            dl.active.append(d)
            if not dl.armed:
                if dl.next_time <= now:
                    self._grant(dl, now)     # an idle pacer grants at once
                else:
                    dl.armed = True
                    self._push(dl.next_time, T_PACER, dl)

    def _grant(self, dl, now, due=NEVER):
        """The pacer's turn: one grant of new credit, round robin.  Spaced from ``due`` (its
        timer's time): a late timer catches up by up to ``CATCHUP_GRANTS`` grants' time."""
        dl.armed = False
        start = now
        if NEVER < due < now:
            start = max(due, now - wire_time_ps(CATCHUP_GRANTS * self.cfg.grant_bytes, dl.rate))
        active = dl.active
        while active:
            d = active.popleft()
            want = d.need - d.granted
            if want <= 0:                # cannot happen; free it rather than spin
                d.queued = False
                self._free_demand(d)
                continue
            amount = want if want < self.cfg.grant_bytes else self.cfg.grant_bytes
            d.granted += amount
            dl.granted_bytes += amount
            dl.grants += 1
            if dl.log is not None:
                dl.log.append((now, amount))
            dl.next_time = start + wire_time_ps(amount, dl.rate)
            if d.need > d.granted:
                active.append(d)
            else:
                d.queued = False
                self._free_demand(d)
            if active:
                dl.armed = True
                self._push(dl.next_time, T_PACER, dl)
            self._send_grant(d.src_leaf, d.host, d.granted, now, False)
            return

    def _free_demand(self, d):
        key = (d.src_leaf, d.host)
        if self.demands.get(key) is d:
            del self.demands[key]
            self.dtails[key] = d.granted

    def _send_grant(self, src_leaf, host, total, now, repeat):
        if src_leaf == self.node:
            voq = self.voqs.get(host)
            if voq is not None:
                self._credit(voq, total, now)
            return
        if repeat:
            self.regrants += 1
        else:
            self.grants += 1
        self.entropy = (self.entropy + 1) & 0xFFFF
        self._route(make_packet(kind=GRANT, src=self.node, dst=src_leaf, msg_id=host,
                                entropy=self.entropy, credit=total & MASK32, ts=now,
                                prio=PRIO_CONTROL))

    # -- helpers --------------------------------------------------------------------------

    def _route(self, pkt):
        if self.recovery:
            port = self._steer(pkt, pkt.dst, pkt.ts, True)
            if port >= 0:
                self.out.append((port, pkt))
                return
        port = self.switch.route(pkt)
        if port < 0:
            self.unroutable += 1
        else:
            self.out.append((port, pkt))

    def _push(self, t, kind, obj):
        self.tseq += 1
        heappush(self.timers, (t, self.tseq, kind, obj))
