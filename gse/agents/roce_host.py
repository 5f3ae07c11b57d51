"""The RoCEv2 baseline host: one reliable-connected flow per message, go-back-N, DCQCN.

What a RoCEv2 NIC does, reduced to what matters for loss and tail latency:

* the sender sends packets in order at the rate its DCQCN limiter allows (line rate when
  DCQCN is off), with one fixed entropy (UDP source port) per flow, so per-flow ECMP keeps
  the whole flow on one path;
* the receiver accepts only the next expected packet; anything later is discarded and
  answered with one NAK naming the expected psn (go-back-N); duplicates are re-ACKed;
  ACKs are cumulative, every ``ack_every_bytes`` and at the end;
* a NAK rewinds the sender to the NAK'd psn; the RTO (with backoff) rewinds to the oldest
  unacknowledged psn when NAKs and ACKs stop;
* an ECN-CE data packet makes the receiver send a CNP, at most one per flow per
  ``cnp_interval``; the sender's DCQCN cuts its rate on it.

Which queue pair the NIC serves next (``nic_scheduler``): ``rr`` rotates a ring in the
order queue pairs became active; ``htsim`` is what htsim's RoCE host does (roce.cpp,
queue.cpp FairPriorityQueue, fairpullqueue.cpp).  There every flow has its own pacer that
puts one packet into the host's queue per wire time at line rate, from its start on, and
stops while the host is PAUSEd (restarting at the RESUME, or one wire time after its last
packet if that is later; a flow that starts during a PAUSE never heard it and goes on until
the next one, roce.cpp:235-238); the host's queue sends ACKs first, then data, each class
round robin by flow id, one packet per turn, from a cursor that keeps its place when flows
come and go (ACKs in ``gse.common.fairq.FairQueue``).  Here
the pacers are timers (``T_GEN``) that make a flow's next packet available, and the NIC
takes available packets in htsim's order (``_poll_by_id``).  A pacer is rarely the binding
limit on a shared NIC, but it is at ties: a packet the pacer makes at the instant the NIC
finishes the previous one waits for the next turn, as in htsim, and the first round at a
common start serves every flow once before any flow twice.  ``round_up_packets`` sends
every packet full size, the last one too, as htsim rounds a flow up to whole packets.

Same sans-I/O interface as ``GseHost``; ``poll(now, data_ok)`` lets a PFC-paused NIC send
only control packets.
"""

from bisect import bisect_left, bisect_right, insort

from gse.agents.dcqcn import NEVER, Dcqcn
from gse.agents.events import MessageCompleted, MessageDelivered
from gse.agents.interface import HostAgent
from gse.common.fairq import FairQueue
from gse.common.fifo import Fifo
from gse.common.finished import FinishedIds
from gse.common.timers import TimerHeap
from gse.wire.packet import (ACK, CNP, DATA, F_ECN_CE, F_ECT, F_LAST, F_RETX, HEADER_BYTES, NACK,
                             PRIO_CONTROL, PRIO_DATA, new_packet)
from switchmodel.switch import mix32

T_PACE = 0
T_RTO = 1
T_DCQCN = 2
T_GEN = 3       # nic_scheduler "htsim": a flow's line-rate pacer
T_CNP = 4       # cnp_pacing "grid": a receiving flow's CNP tick
FINISHED_HOLD = 4     # a finished flow's id is remembered this many maximum RTOs


class RoceFlow:
    __slots__ = ("msg_id", "src", "dst", "size", "mtu", "npkts", "next_psn", "una",
                 "high", "entropy", "cc", "next_send", "rto_deadline", "rto_backoff",
                 "retransmits", "retx_bytes", "done", "in_ring", "dcqcn_armed", "last_len",
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
        self.rto_backoff = 1
        self.retransmits = 0
        self.retx_bytes = 0
        self.done = False
        self.in_ring = False
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


class RoceRecvFlow:
    __slots__ = ("expected", "npkts", "size", "unacked", "nak_for", "last_cnp", "src",
                 "msg_id", "entropy", "marked", "done")

    def __init__(self, size, mtu):
        self.size = size
        self.npkts = (size + mtu - 1) // mtu
        self.expected = 0
        self.unacked = 0
        self.nak_for = -1         # psn a NAK was already sent for
        self.last_cnp = -1
        self.src = self.msg_id = self.entropy = 0   # cnp_pacing "grid": where CNPs go
        self.marked = False       # cnp_pacing "grid": a CE mark since the last tick
        self.done = False


class RoceHost(HostAgent):
    __slots__ = ("addr", "config", "rng", "line_mbps", "out", "ring", "control", "timers",
                 "incoming", "finished", "malformed",
                 "stray", "timeouts", "naks_sent", "acks_sent", "cnps_sent", "cnps_received",
                 "retransmits", "retransmit_bytes", "duplicates", "ooo_discarded",
                 "receiver", "pace_at", "rto_ps", "ack_every", "cnp_interval",
                 "payload_bytes", "finished_hold", "max_finished",
                 "incoming_of", "max_inbound_per_peer", "max_inbound", "inbound_refused",
                 "by_id", "active", "active_ids", "all_ids", "cursor", "pacer_ps",
                 "acks", "rate_log", "round_up", "cnp_grid", "acked_done")

    def __init__(self, addr, config, rng, downlink_gbps):
        HostAgent.__init__(self)
        self.addr = addr
        self.config = config
        self.rng = rng
        self.line_mbps = int(round(downlink_gbps * 1000))
        self.out = {}
        self.ring = Fifo()
        self.control = Fifo()
        self.timers = TimerHeap()  # (deadline, kind, flow), lazily deleted
        self.incoming = {}        # (src, msg_id) -> RoceRecvFlow
        self.finished_hold = FINISHED_HOLD * config.rto_max_ps  # late packets' ids kept
        self.max_finished = config.max_finished                  # this long, this many
        self.finished = FinishedIds(self.finished_hold, self.max_finished)
        self.incoming_of = {}     # src -> its flows in self.incoming
        self.max_inbound_per_peer = config.max_inbound_per_peer
        self.max_inbound = config.max_inbound
        self.inbound_refused = 0  # DATA of a new flow beyond those limits, dropped
        self.receiver = self      # ``receiver.payload_bytes``: the watchdog, the sampler
        self.pace_at = -1         # pending wake-up for a rate-limited flow
        self.malformed = self.stray = self.timeouts = 0
        self.naks_sent = self.acks_sent = self.cnps_sent = self.cnps_received = 0
        self.retransmits = self.retransmit_bytes = self.duplicates = self.ooo_discarded = 0
        self.payload_bytes = 0    # payload accepted in order (time series: goodput)
        # read per packet: plain attributes, not looked up on the config object
        self.rto_ps = config.rto_ps
        self.ack_every = config.ack_every_bytes
        self.cnp_interval = config.cnp_interval_ps
        # nic_scheduler "htsim": flows with data, sorted by id, and htsim's cursor
        # (read with defaults: the fabric mode's plain host runs on a FabricConfig)
        self.by_id = getattr(config, "nic_scheduler", "rr") == "htsim"
        self.round_up = getattr(config, "round_up_packets", False)
        self.cnp_grid = getattr(config, "cnp_pacing", "interval") == "grid"
        self.active = []          # RoceFlow, ascending msg_id
        self.active_ids = []      # their msg_ids (for bisect)
        self.all_ids = []         # every msg_id started here: htsim's map never forgets
        self.cursor = -1          # msg_id the round robin resumes at; -1: from the start
        # one wire time at line rate, truncated as htsim's RoceSrc spacing (roce.h)
        self.pacer_ps = (config.mtu + HEADER_BYTES) * 8_000_000 // self.line_mbps
        # ACKs and NAKs round robin by flow id (htsim's high-priority FairPullQueue), or
        # None: control packets in ``control``, first come first served
        self.acks = FairQueue() if self.by_id else None
        # None, or a dict the DCQCN reaction point of every flow started from now on logs
        # its rate changes into: msg_id -> [(now, Rc, Rt, alpha), ...] (Dcqcn.log)
        self.rate_log = None
        self.acked_done = 0       # packets of the flows finished here (progress())

    # -- application ----------------------------------------------------------------------

    def start_message(self, msg_id, dst, size, now):
        if msg_id in self.out:
            raise ValueError("host %d: message id %d is already in use" % (self.addr, msg_id))
        if dst == self.addr:
            raise ValueError("host %d: message %d addressed to itself" % (self.addr, msg_id))
        cfg = self.config
        cc = Dcqcn(self.line_mbps, cfg) if cfg.dcqcn else None
        if cc is not None and self.rate_log is not None:
            cc.log = self.rate_log[msg_id] = [(now, cc.rc, cc.rt, cc.alpha)]
        flow = RoceFlow(msg_id, self.addr, dst, size, cfg.mtu, cc, self.round_up)
        flow.next_send = now
        self.out[msg_id] = flow
        if self.by_id:
            if not self.all_ids or self.all_ids[-1] < msg_id:
                self.all_ids.append(msg_id)
            elif msg_id not in self.all_ids:
                insort(self.all_ids, msg_id)
            flow.gen = 1          # the pacer's first packet goes at once
            flow.last_gen = now
            if flow.npkts > 1:
                flow.gen_at = now + self.pacer_ps
                self._push(flow.gen_at, T_GEN, flow)
        self._activate(flow)

    # -- runtime interface ----------------------------------------------------------------

    def has_work(self):
        return (bool(self.control) or bool(self.ring) or bool(self.active)
                or (self.acks is not None and self.acks.count > 0))

    def poll(self, now, data_ok=True):
        if self.control:
            return self.control.popleft()
        acks = self.acks
        if acks is not None and acks.count > 0:
            return acks.popleft()
        if not data_ok:
            return None
        if self.by_id:
            return self._poll_by_id(now)
        ring = self.ring
        for _ in range(len(ring)):
            flow = ring[0]
            if not flow.has_data():
                ring.popleft()
                flow.in_ring = False
                continue
            if flow.next_send > now:
                ring.rotate(-1)
                continue
            ring.rotate(-1)
            return self._send(flow, now)
        # nobody may send yet: wake up when the earliest limiter opens
        earliest = -1
        for i in range(len(ring)):
            flow = ring[i]
            if earliest < 0 or flow.next_send < earliest:
                earliest = flow.next_send
        if earliest > now and earliest != self.pace_at:
            self.pace_at = earliest
            self._push(earliest, T_PACE, None)
        return None

    def _poll_by_id(self, now):
        """htsim's host queue: round robin in flow-id order from the cursor, which points
        after the flow served last (among every flow this host ever started: a flow that
        starts behind it waits for the next round, as in htsim's FairPullQueue)."""
        active = self.active
        ids = self.active_ids
        n = len(active)
        i = 0 if self.cursor < 0 else bisect_left(ids, self.cursor)
        earliest = -1
        for _ in range(n):
            if i >= len(active):
                i = 0
            flow = active[i]
            if not flow.has_data():
                del active[i]
                del ids[i]
                flow.in_ring = False
                continue
            if flow.next_psn >= flow.gen:      # its pacer has not made the packet yet
                i += 1
                continue
            if flow.next_send > now:
                if earliest < 0 or flow.next_send < earliest:
                    earliest = flow.next_send
                i += 1
                continue
            j = bisect_right(self.all_ids, flow.msg_id)
            self.cursor = self.all_ids[j] if j < len(self.all_ids) else -1
            return self._send(flow, now)
        if earliest > now and earliest != self.pace_at:
            self.pace_at = earliest
            self._push(earliest, T_PACE, None)
        return None

    def _send(self, flow, now):
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
            flow.rto_deadline = now + self.rto_ps * flow.rto_backoff
            self._push(flow.rto_deadline, T_RTO, flow)
        return new_packet(DATA, self.addr, flow.dst, flow.msg_id, psn, flow.entropy, length,
                          flags, flow.size, 0, 0, 0, 0, now, PRIO_DATA)

    def next_deadline(self):
        return self.timers.first()

    def receive(self, pkt, now):
        if pkt.corrupt:
            self.malformed += 1
            return
        if pkt.dst != self.addr:
            self.stray += 1
            return
        kind = pkt.kind
        if kind == DATA:
            self._on_data(pkt, now)
        elif kind == ACK:
            self._on_ack(pkt, now)
        elif kind == NACK:
            self._on_nak(pkt, now)
        elif kind == CNP:
            self._on_cnp(pkt, now)
        else:
            self.stray += 1

    def on_timer(self, now):
        timers = self.timers
        t = timers.first()
        while 0 <= t <= now:
            flow = timers.pop()
            kind = timers.last_kind
            if kind == T_RTO:
                self._on_rto(flow, now)
            elif kind == T_DCQCN:
                self._on_dcqcn(flow, t, now)
            elif kind == T_GEN:
                self._on_pacer(flow, t, now)
            elif kind == T_CNP:
                self._on_cnp_tick(flow, t)
            elif t == self.pace_at:
                self.pace_at = -1   # the runtime polls the NIC after every timer
            t = timers.first()

    # -- receiver -------------------------------------------------------------------------

    def _on_data(self, pkt, now):
        key = (pkt.src, pkt.msg_id)
        flow = self.incoming.get(key)
        if flow is None:              # (a finished flow is no longer in self.incoming)
            if key in self.finished:
                self.duplicates += 1
                self._ack(pkt, self.finished[key])
                return
            if not self._admit(pkt):
                return
            flow = self.incoming[key] = RoceRecvFlow(pkt.msg_len, self.config.mtu)
            if self.cnp_grid:
                flow.src = pkt.src
                flow.msg_id = pkt.msg_id
                flow.entropy = pkt.entropy
                self._push(now + self.cnp_interval, T_CNP, flow)
        if self.cnp_grid:
            if pkt.flags & F_ECN_CE:
                flow.marked = True
        elif pkt.flags & F_ECN_CE and (flow.last_cnp < 0 or
                                       now - flow.last_cnp >= self.cnp_interval):
            flow.last_cnp = now
            self.cnps_sent += 1
            self._control(new_packet(CNP, self.addr, pkt.src, pkt.msg_id, 0, pkt.entropy,
                                     0, 0, 0, 0, 0, 0, 0, now, PRIO_CONTROL))
        psn = pkt.psn
        if psn == flow.expected:
            flow.expected = psn + 1
            flow.nak_for = -1
            flow.unacked += pkt.payload_len
            self.payload_bytes += pkt.payload_len
            if flow.expected == flow.npkts:
                flow.done = True
                self._done_in(key, flow.npkts, now)
                self._events.append(MessageDelivered(pkt.src, pkt.msg_id, flow.size, now))
                self._ack(pkt, flow.npkts)
            elif flow.unacked >= self.ack_every:
                flow.unacked = 0
                self._ack(pkt, flow.expected)
        elif psn > flow.expected:
            self.ooo_discarded += 1
            if flow.nak_for != flow.expected:
                flow.nak_for = flow.expected
                self.naks_sent += 1
                self._control(new_packet(NACK, self.addr, pkt.src, pkt.msg_id, flow.expected,
                                         pkt.entropy, 0, 0, flow.size, 0, 0, 0, 0, pkt.ts,
                                         PRIO_CONTROL))
        else:
            self.duplicates += 1
            self._ack(pkt, flow.expected)

    def _admit(self, pkt):
        """Room for a new incoming flow (it has a length; per-source and global limits):
        True, or False after counting the refusal (the sender retransmits)."""
        src = pkt.src
        if pkt.msg_len <= 0:
            self.duplicates += 1          # inconsistent: nothing to deliver
            return False
        if (len(self.incoming) >= self.max_inbound
                or self.incoming_of.get(src, 0) >= self.max_inbound_per_peer):
            self.inbound_refused += 1
            return False
        self.incoming_of[src] = self.incoming_of.get(src, 0) + 1
        return True

    def _done_in(self, key, npkts, now):
        """An incoming flow is complete: its id is remembered, for a bounded time and
        number, so that a late duplicate gets its final ACK instead of a new flow."""
        del self.incoming[key]
        src = key[0]
        n = self.incoming_of[src] - 1
        if n:
            self.incoming_of[src] = n
        else:
            del self.incoming_of[src]
        self.finished.add(key[0], key[1], npkts, now)

    def _ack(self, pkt, cum):
        self.acks_sent += 1
        self._control(new_packet(ACK, self.addr, pkt.src, pkt.msg_id, cum, pkt.entropy, 0, 0,
                                 pkt.msg_len, 0, 0, 0, 0, pkt.ts, PRIO_CONTROL))

    def _control(self, pkt):
        if self.acks is not None:
            self.acks.append(pkt)
        else:
            self.control.append(pkt)

    # -- sender feedback ------------------------------------------------------------------

    def _flow(self, pkt):
        flow = self.out.get(pkt.msg_id)
        if flow is None or flow.dst != pkt.src:
            self.stray += 1
            return None
        return flow

    def _on_ack(self, pkt, now):
        flow = self._flow(pkt)
        if flow is None:
            return
        if pkt.psn > flow.una:
            flow.una = min(pkt.psn, flow.npkts)
            flow.rto_backoff = 1
            flow.rto_deadline = now + self.rto_ps
            if flow.next_psn < flow.una:
                flow.next_psn = flow.una
        if flow.una >= flow.npkts:
            self._finish(flow, now)

    def _on_nak(self, pkt, now):
        flow = self._flow(pkt)
        if flow is None:
            return
        psn = min(pkt.psn, flow.npkts)
        if psn > flow.una:
            flow.una = psn
            flow.rto_backoff = 1
            flow.rto_deadline = now + self.rto_ps
        if flow.una >= flow.npkts:
            self._finish(flow, now)
            return
        if flow.next_psn > psn:
            flow.next_psn = psn          # go back N
            self._activate(flow)

    def _on_cnp(self, pkt, now):
        flow = self.out.get(pkt.msg_id)
        if flow is None or flow.cc is None:
            return
        self.cnps_received += 1
        flow.cc.on_cnp(now)
        self._arm_dcqcn(flow)

    def _finish(self, flow, now):
        flow.done = True
        self.acked_done += flow.npkts
        del self.out[flow.msg_id]
        self._events.append(MessageCompleted(flow.msg_id, flow.retransmits, now))

    # -- timers ---------------------------------------------------------------------------

    def _on_rto(self, flow, now):
        if flow.done or flow.rto_deadline == NEVER:
            return
        if now < flow.rto_deadline:
            self._push(flow.rto_deadline, T_RTO, flow)
            return
        if flow.una >= flow.high:
            flow.rto_deadline = NEVER    # nothing outstanding: the next send re-arms
            return
        self.timeouts += 1
        flow.next_psn = flow.una
        cfg = self.config
        if flow.rto_backoff * cfg.rto_ps < cfg.rto_max_ps:
            flow.rto_backoff *= 2
        flow.rto_deadline = now + cfg.rto_ps * flow.rto_backoff
        self._push(flow.rto_deadline, T_RTO, flow)
        self._activate(flow)

    def _arm_dcqcn(self, flow):
        t = flow.cc.next_deadline()
        if t != NEVER and (flow.dcqcn_armed == NEVER or t < flow.dcqcn_armed):
            flow.dcqcn_armed = t
            self._push(t, T_DCQCN, flow)

    def _on_dcqcn(self, flow, t, now):
        if flow.done or t != flow.dcqcn_armed:
            return
        flow.dcqcn_armed = NEVER
        flow.cc.on_timer(now)
        if not flow.cc.limited():
            flow.next_send = now
        self._arm_dcqcn(flow)

    def _on_cnp_tick(self, flow, t):
        """cnp_pacing "grid" (the DCQCN authors' ns-3, qbb-net-device.cc CheckandSendQCN):
        every cnp_interval from the flow's first packet, one CNP if a mark came since."""
        if flow.done:
            return
        if flow.marked:
            flow.marked = False
            self.cnps_sent += 1
            self._control(new_packet(CNP, self.addr, flow.src, flow.msg_id, 0, flow.entropy,
                                     0, 0, 0, 0, 0, 0, 0, t, PRIO_CONTROL))
        self._push(t + self.cnp_interval, T_CNP, flow)

    def _on_pacer(self, flow, t, now):
        """htsim NIC: the flow's pacer makes its next packet available; a pacer that falls
        due while its flow is paused stops until the RESUME (roce.cpp doNextEvent)."""
        if flow.done or t != flow.gen_at:
            return
        flow.gen_at = NEVER
        if flow.paused:
            return
        flow.gen += 1
        flow.last_gen = now
        if flow.gen < flow.npkts:
            flow.gen_at = now + self.pacer_ps
            self._push(flow.gen_at, T_GEN, flow)

    def on_pause(self, paused, now):
        """PAUSE or RESUME at the host's NIC: htsim's host queue relays it to every flow's
        pacer; at the RESUME a stopped pacer goes on at once, or one wire time after its
        last packet if that is later.  Only flows started by then hear it (a flow that
        starts during a PAUSE paces on, roce.cpp RoceSrc::receivePacket)."""
        if not self.by_id:
            return
        for flow in self.out.values():
            flow.paused = paused
        if paused:
            return
        for flow in self.out.values():
            if flow.gen < flow.npkts and flow.gen_at == NEVER and not flow.done:
                t = flow.last_gen + self.pacer_ps
                flow.gen_at = t if t > now else now
                self._push(flow.gen_at, T_GEN, flow)

    # -- helpers --------------------------------------------------------------------------

    def _activate(self, flow):
        if not flow.in_ring and flow.has_data():
            flow.in_ring = True
            if self.by_id:
                i = bisect_left(self.active_ids, flow.msg_id)
                self.active_ids.insert(i, flow.msg_id)
                self.active.insert(i, flow)
            else:
                self.ring.append(flow)

    def _push(self, t, kind, flow):
        self.timers.push(t, kind, flow)

    def counters(self):
        return {
            "malformed": self.malformed, "stray": self.stray, "timeouts": self.timeouts,
            "retransmits": self.retransmits, "retransmit_bytes": self.retransmit_bytes,
            "acks": self.acks_sent, "nacks": self.naks_sent, "cnps": self.cnps_sent,
            "cnps_received": self.cnps_received, "duplicates": self.duplicates,
            "ooo_discarded": self.ooo_discarded, "inbound_refused": self.inbound_refused,
        }
