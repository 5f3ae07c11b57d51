"""Sender side of the RoCEv2 baseline: one queue pair (``RoceFlow``) per message, go-back-N.

What the sender of a RoCEv2 NIC does, reduced to what matters for loss and tail latency:

* it sends packets in order at the rate its DCQCN limiter allows (line rate when DCQCN is
  off), with one fixed entropy (UDP source port) per flow, so per-flow ECMP keeps the
  whole flow on one path;
* a cumulative ACK moves ``una`` and restarts the RTO; a NAK rewinds the flow to the NAK'd
  psn (go back N); the RTO (with backoff) rewinds to the oldest unacknowledged psn when
  NAKs and ACKs stop;
* a CNP cuts the flow's DCQCN rate (``gse.agents.dcqcn``); DCQCN's own timers raise it.

Which flow sends next is the NIC's choice (``gse.agents.roce_nic``); ``RoceSender`` makes the
packet.  Its methods return whether the flow has data to send again (go back N), and the
host (``gse.agents.roce_host``) hands the flow to the NIC then: the sender never sees the
NIC's queues.
"""

from gse.agents.dcqcn import NEVER, Dcqcn
from gse.wire.packet import DATA, F_ECT, F_LAST, F_RETX, PRIO_DATA, new_packet
from switchmodel.switch import mix32

# The RoCE host's timer kinds: one heap (``HostAgent.timers``) shared by the sender, the
# NIC and the receiver, whose handlers ``RoceHost.on_timer_kind`` names.
T_PACE = 0      # NIC: the earliest rate limiter opens (``RoceNic.pace_at``)
T_RTO = 1       # sender: a flow's retransmission timeout (``RoceFlow.rto_deadline``)
T_DCQCN = 2     # sender: a flow's DCQCN rate-increase timers (``RoceFlow.dcqcn_armed``)
T_GEN = 3       # NIC, nic_scheduler "htsim": a flow's line-rate pacer (``RoceFlow.gen_at``)
T_CNP = 4       # receiver, cnp_pacing "grid": a receiving flow's CNP tick (``cnp_at``)
TIMER_NAMES = ("pace", "rto", "dcqcn", "gen", "cnp")


class RoceFlow:
    __slots__ = ("msg_id", "src", "dst", "size", "mtu", "npkts", "next_psn", "una",
                 "high", "entropy", "cc", "next_send", "rto_deadline", "rto_armed",
                 "rto_backoff", "retransmits", "retx_bytes", "done", "in_ring", "dcqcn_armed",
                 "last_len",
                 "gen", "gen_at", "last_gen", "paused")

    def __init__(self, msg_id, src, dst, size, mtu, cc, round_up=False):
        if size <= 0 or size >= 2 ** 32:
            raise ValueError("message %d: size must be in 1..2^32-1 bytes, got %d"
                             % (msg_id, size))
        self.msg_id = msg_id
        self.src = src
        self.dst = dst
        self.size = size
        self.mtu = mtu
        self.npkts = (size + mtu - 1) // mtu
        # payload of the last packet: what is left, or a full packet (htsim rounds up)
        self.last_len = mtu if round_up else size - (self.npkts - 1) * mtu
        self.next_psn = 0         # next psn to put on the wire
        self.una = 0              # every psn below this is acknowledged
        self.high = 0             # highest psn sent so far, plus one
        self.entropy = mix32(src * 65599 + msg_id) & 0xFFFF   # the QP's UDP source port
        self.cc = cc              # Dcqcn, or None at line rate
        self.next_send = 0        # earliest time the rate limiter allows the next packet
        self.rto_deadline = NEVER
        self.rto_armed = NEVER    # the time of its one T_RTO heap entry (NEVER: none)
        self.rto_backoff = 1
        self.retransmits = 0
        self.retx_bytes = 0
        self.done = False
        self.in_ring = False      # the NIC holds it among the flows it serves
        self.dcqcn_armed = NEVER
        self.gen = self.npkts     # packets its pacer made available (htsim NIC: counts up)
        self.gen_at = NEVER                 # when the pacer makes the next one
        self.last_gen = 0
        self.paused = False       # htsim NIC: its pacer heard a PAUSE, no RESUME yet

    def payload_of(self, psn):
        return self.last_len if psn == self.npkts - 1 else self.mtu

    def has_data(self):
        return not self.done and self.next_psn < self.npkts

    def acked_packets(self):
        return self.una

    def waiting_for(self):
        """Timed out with nothing acknowledged since / to send (its NIC, rate limiter or
        a PAUSE holds it) / all out, unacknowledged (``HostAgent.waiting``)."""
        return "path" if self.rto_backoff > 1 else "send" if self.next_psn < self.npkts else "ack"


class RoceSender:
    """The go-back-N and DCQCN reaction of every flow started at one host."""

    __slots__ = ("addr", "config", "line_mbps", "timers", "rto_ps", "round_up", "timeouts",
                 "retransmits", "retransmit_bytes", "cnps_received")

    def __init__(self, addr, config, line_mbps, timers):
        self.addr = addr
        self.config = config
        self.line_mbps = line_mbps
        self.timers = timers      # the host's heap (T_RTO, T_DCQCN entries)
        self.rto_ps = config.rto_ps   # read per packet: not looked up on the config
        self.round_up = getattr(config, "round_up_packets", False)
        self.timeouts = 0
        self.retransmits = self.retransmit_bytes = 0
        self.cnps_received = 0

    def start(self, msg_id, dst, size, now, rate_log):
        """A new flow, its rate limiter open from ``now``; its DCQCN logs its rate changes
        into ``rate_log[msg_id]`` unless ``rate_log`` is None."""
        cfg = self.config
        cc = Dcqcn(self.line_mbps, cfg) if cfg.dcqcn else None
        if cc is not None and rate_log is not None:
            cc.log = rate_log[msg_id] = [(now, cc.rc, cc.rt, cc.alpha)]
        flow = RoceFlow(msg_id, self.addr, dst, size, cfg.mtu, cc, self.round_up)
        flow.next_send = now
        return flow

    def send(self, flow, now):
        """The flow's next packet, which the NIC chose to send now."""
        psn = flow.next_psn
        flow.next_psn = psn + 1
        length = flow.payload_of(psn)
        flags = F_ECT
        if psn < flow.high:
            flags |= F_RETX
            flow.retransmits += 1
            flow.retx_bytes += length
            self.retransmits += 1
            self.retransmit_bytes += length
        else:
            flow.high = psn + 1
        if psn == flow.npkts - 1:
            flags |= F_LAST
        cc = flow.cc
        if cc is not None:
            cc.on_sent(length + 64, now)
            if cc.limited():
                flow.next_send = now + cc.gap_ps(length + 64)
        if flow.rto_deadline == NEVER:
            self._arm_rto(flow, now + self.rto_ps * flow.rto_backoff)
        return new_packet(DATA, self.addr, flow.dst, flow.msg_id, psn, flow.entropy, length,
                          flags, flow.size, 0, 0, 0, 0, now, PRIO_DATA)

    def on_ack(self, flow, psn, now):
        """A cumulative ACK up to ``psn``: True if the whole flow is acknowledged
        (``flow.done``)."""
        if psn > flow.una:
            flow.una = min(psn, flow.npkts)
            self._progress(flow, now)
            if flow.next_psn < flow.una:
                flow.next_psn = flow.una
        if flow.una >= flow.npkts:
            flow.done = True
        return flow.done

    def on_nak(self, flow, psn, now):
        """A NAK: everything below ``psn`` arrived, ``psn`` did not.  True if the flow went
        back to it (it has data to send again); ``flow.done`` if it is all acknowledged."""
        psn = min(psn, flow.npkts)
        if psn > flow.una:
            flow.una = psn
            self._progress(flow, now)
        if flow.una >= flow.npkts:
            flow.done = True
            return False
        if flow.next_psn > psn:
            flow.next_psn = psn          # go back N
            return True
        return False

    def _progress(self, flow, now):
        """Something new was acknowledged: the RTO restarts from now, without backoff."""
        flow.rto_backoff = 1
        self._arm_rto(flow, now + self.rto_ps)

    def _arm_rto(self, flow, t):
        """The RTO falls due at ``t``.  A flow has at most one T_RTO heap entry
        (``rto_armed``), never later than its deadline: a later deadline keeps the entry,
        which pushes a new one for the deadline when it pops (``on_rto``); an earlier one
        (an ACK after a backed-off timeout) replaces it, and the old entry, superseded,
        is skipped."""
        flow.rto_deadline = t
        if flow.rto_armed == NEVER or t < flow.rto_armed:
            flow.rto_armed = t
            self.timers.push(t, T_RTO, flow)

    def on_cnp(self, flow, now):
        """A CNP for a flow under DCQCN: cut its rate."""
        self.cnps_received += 1
        flow.cc.on_cnp(now)
        self.arm_dcqcn(flow)

    def on_rto(self, flow, t, now):
        """A T_RTO entry of the flow for ``t`` fell due: True if it timed out (it goes
        back to ``una`` and has data to send again)."""
        if t != flow.rto_armed:
            return False                 # superseded by an earlier entry
        flow.rto_armed = NEVER
        if flow.done or flow.rto_deadline == NEVER:
            return False
        if now < flow.rto_deadline:
            self._arm_rto(flow, flow.rto_deadline)
            return False
        if flow.una >= flow.high:
            flow.rto_deadline = NEVER    # nothing outstanding: the next send re-arms
            return False
        self.timeouts += 1
        flow.next_psn = flow.una
        cfg = self.config
        if flow.rto_backoff * cfg.rto_ps < cfg.rto_max_ps:
            flow.rto_backoff *= 2
        self._arm_rto(flow, now + cfg.rto_ps * flow.rto_backoff)
        return True

    def arm_dcqcn(self, flow):
        t = flow.cc.next_deadline()
        if t != NEVER and (flow.dcqcn_armed == NEVER or t < flow.dcqcn_armed):
            flow.dcqcn_armed = t
            self.timers.push(t, T_DCQCN, flow)

    def on_dcqcn(self, flow, t, now):
        """A T_DCQCN entry fell due: DCQCN's rate increase (superseded entries skipped)."""
        if flow.done or t != flow.dcqcn_armed:
            return
        flow.dcqcn_armed = NEVER
        flow.cc.on_timer(now)
        if not flow.cc.limited():
            flow.next_send = now
        self.arm_dcqcn(flow)
