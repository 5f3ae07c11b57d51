"""Receiver side of the RoCEv2 baseline: in-order acceptance, ACK/NAK/CNP, delivery.

* The receiver accepts only the next expected packet; anything later is discarded and
  answered with one NAK naming the expected psn (go-back-N); duplicates are re-ACKed.
  ACKs are cumulative, every ``ack_every_bytes`` and at the end.
* An ECN-CE data packet makes it send a CNP, at most one per flow per ``cnp_interval``
  (``cnp_pacing`` "interval"), or one per ``cnp_interval`` tick of the flow's own grid if a
  mark came since the last tick ("grid", the DCQCN authors' ns-3).
* A flow is delivered when its last packet is accepted; then only its id is remembered,
  ``FINISHED_HOLD`` x ``rto_max_ps`` and ``max_finished`` at most, so that a late
  duplicate gets the final ACK instead of starting a new flow.  New flows are admitted up
  to ``max_inbound_per_peer`` per source and ``max_inbound`` in all.

ACKs, NAKs and CNPs go to the NIC's control queues (``RoceNic.enqueue_control``).
"""

from gse.agents.dcqcn import NEVER
from gse.agents.events import MessageDelivered
from gse.agents.roce_sender import T_CNP
from gse.common.finished import FinishedIds
from gse.wire.packet import ACK, CNP, F_ECN_CE, NACK, PRIO_CONTROL, new_packet

FINISHED_HOLD = 4     # a finished flow's id is remembered this many maximum RTOs


class RoceRecvFlow:
    __slots__ = ("expected", "npkts", "size", "unacked", "nak_for", "last_cnp", "src",
                 "msg_id", "entropy", "marked", "done", "cnp_at")

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
        self.cnp_at = NEVER       # cnp_pacing "grid": its next tick


class RoceReceiver:
    """The flows arriving at one host."""

    __slots__ = ("addr", "config", "nic", "timers", "incoming", "incoming_of", "finished",
                 "finished_hold", "max_finished", "max_inbound_per_peer", "max_inbound",
                 "events", "ack_every", "cnp_interval", "cnp_grid", "payload_bytes",
                 "acks_sent", "naks_sent", "cnps_sent", "duplicates", "ooo_discarded",
                 "inbound_refused", "last_src", "last_msg", "last_flow")

    def __init__(self, addr, config, nic, timers, events):
        self.addr = addr
        self.config = config
        self.nic = nic            # where ACKs, NAKs and CNPs go
        self.timers = timers      # the host's heap (T_CNP entries)
        self.incoming = {}        # (src, msg_id) -> RoceRecvFlow
        self.incoming_of = {}     # src -> its flows in self.incoming
        self.finished_hold = FINISHED_HOLD * config.rto_max_ps  # late packets' ids kept
        self.max_finished = config.max_finished                  # this long, this many
        self.finished = FinishedIds(self.finished_hold, self.max_finished)
        self.max_inbound_per_peer = config.max_inbound_per_peer
        self.max_inbound = config.max_inbound
        self.events = events      # the host's event queue: MessageDelivered goes there
        # read per packet: plain attributes, not looked up on the config object
        self.ack_every = config.ack_every_bytes
        self.cnp_interval = config.cnp_interval_ps
        self.cnp_grid = getattr(config, "cnp_pacing", "interval") == "grid"
        self.payload_bytes = 0    # payload accepted in order (time series: goodput)
        self.acks_sent = self.naks_sent = self.cnps_sent = 0
        self.duplicates = self.ooo_discarded = 0
        self.inbound_refused = 0  # DATA of a new flow beyond the limits, dropped
        # the flow of the last DATA accepted and its (src, msg_id): most packets are of the
        # same flow as the one before, found without a tuple and a dict lookup (None once
        # delivered: _deliver)
        self.last_src = self.last_msg = -1
        self.last_flow = None

    def on_data(self, pkt, now):
        flow = self.last_flow
        if flow is None or pkt.src != self.last_src or pkt.msg_id != self.last_msg:
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
                    flow.cnp_at = now + self.cnp_interval
                    self.timers.push(flow.cnp_at, T_CNP, flow)
            self.last_src = pkt.src
            self.last_msg = pkt.msg_id
            self.last_flow = flow
        if self.cnp_grid:
            if pkt.flags & F_ECN_CE:
                flow.marked = True
        elif pkt.flags & F_ECN_CE and (flow.last_cnp < 0 or
                                       now - flow.last_cnp >= self.cnp_interval):
            flow.last_cnp = now
            self.cnps_sent += 1
            self.nic.enqueue_control(new_packet(CNP, self.addr, pkt.src, pkt.msg_id, 0,
                                                pkt.entropy, 0, 0, 0, 0, 0, 0, 0, now,
                                                PRIO_CONTROL))
        psn = pkt.psn
        if psn == flow.expected:
            flow.expected = psn + 1
            flow.nak_for = -1
            flow.unacked += pkt.payload_len
            self.payload_bytes += pkt.payload_len
            if flow.expected == flow.npkts:
                self._deliver((pkt.src, pkt.msg_id), flow, now)
                self._ack(pkt, flow.npkts)
            elif flow.unacked >= self.ack_every:
                flow.unacked = 0
                self._ack(pkt, flow.expected)
        elif psn > flow.expected:
            self.ooo_discarded += 1
            if flow.nak_for != flow.expected:
                flow.nak_for = flow.expected
                self._nak(pkt, flow)
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

    def _deliver(self, key, flow, now):
        """An incoming flow is complete: delivered, and its id remembered, for a bounded
        time and number, so that a late duplicate gets its final ACK instead of a new
        flow.  (The one place that announces a ``MessageDelivered``.)"""
        flow.done = True
        del self.incoming[key]
        if flow is self.last_flow:
            self.last_flow = None
        src = key[0]
        n = self.incoming_of[src] - 1
        if n:
            self.incoming_of[src] = n
        else:
            del self.incoming_of[src]
        self.finished.add(src, key[1], flow.npkts, now)
        self.events.append(MessageDelivered(src, key[1], flow.size, now))

    def _ack(self, pkt, cum):
        self.acks_sent += 1
        self.nic.enqueue_control(new_packet(ACK, self.addr, pkt.src, pkt.msg_id, cum,
                                            pkt.entropy, 0, 0, pkt.msg_len, 0, 0, 0, 0,
                                            pkt.ts, PRIO_CONTROL))

    def _nak(self, pkt, flow):
        """Go back to ``flow.expected`` (echoing the timestamp of the packet that showed
        the gap)."""
        self.naks_sent += 1
        self.nic.enqueue_control(new_packet(NACK, self.addr, pkt.src, pkt.msg_id,
                                            flow.expected, pkt.entropy, 0, 0, flow.size, 0,
                                            0, 0, 0, pkt.ts, PRIO_CONTROL))

    def on_cnp_tick(self, flow, t):
        """cnp_pacing "grid" (the DCQCN authors' ns-3, qbb-net-device.cc CheckandSendQCN):
        every cnp_interval from the flow's first packet, one CNP if a mark came since."""
        if flow.done:
            flow.cnp_at = NEVER
            return
        if flow.marked:
            flow.marked = False
            self.cnps_sent += 1
            self.nic.enqueue_control(new_packet(CNP, self.addr, flow.src, flow.msg_id, 0,
                                                flow.entropy, 0, 0, 0, 0, 0, 0, 0, t,
                                                PRIO_CONTROL))
        flow.cnp_at = t + self.cnp_interval
        self.timers.push(flow.cnp_at, T_CNP, flow)
