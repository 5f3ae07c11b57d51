"""The RoCEv2 baseline host: one reliable-connected flow per message, go-back-N, DCQCN.

Split as the GSE host is: ``RoceHost`` is the sans-I/O interface (``HostAgent``) over

* ``RoceSender`` (``gse.agents.roce_sender``): the flows started here (``RoceFlow``),
  go-back-N on ACK, NAK and RTO, the DCQCN reaction to CNPs;
* ``RoceReceiver`` (``gse.agents.roce_receiver``, ``agent.receiver``): in-order acceptance,
  cumulative ACKs, NAKs, CNP generation, delivery;
* ``RoceNic`` (``gse.agents.roce_nic``): control before data, which flow sends next (``rr``
  or htsim's per-flow pacers and flow-id order), the pacers' PAUSE.

The host owns what they share: the timer heap (``timers``; kinds in ``roce_sender``) and
the unfinished flows (``out``), and wires them up: the packets and timers go to their
handler (``on_packet``, ``on_timer_kind``: the two dispatch tables), and a flow the sender
rewinds goes back to the NIC.  ``poll(now, data_ok)`` lets a PFC-paused NIC send only
control packets.  ``deadlines()`` names every armed deadline.
"""

from gse.agents.dcqcn import NEVER
from gse.agents.events import MessageCompleted
from gse.agents.interface import HostAgent
from gse.agents.roce_nic import RoceNic
from gse.agents.roce_receiver import RoceReceiver
from gse.agents.roce_sender import T_CNP, T_DCQCN, T_GEN, T_PACE, T_RTO, RoceSender
from gse.wire.packet import ACK, CNP, DATA, NACK


class RoceHost(HostAgent):
    __slots__ = ("config", "rng", "line_mbps", "out", "acked_done", "rate_log",
                 "sender", "receiver", "nic")

    def __init__(self, addr, config, rng, downlink_gbps):
        HostAgent.__init__(self, addr)
        self.config = config
        self.rng = rng
        self.line_mbps = int(round(downlink_gbps * 1000))
        self.out = {}             # msg_id -> RoceFlow, until acknowledged in full
        self.acked_done = 0       # packets of the flows finished here (progress())
        # None, or a dict the DCQCN reaction point of every flow started from now on logs
        # its rate changes into: msg_id -> [(now, Rc, Rt, alpha), ...] (Dcqcn.log)
        self.rate_log = None
        self.sender = RoceSender(addr, config, self.line_mbps, self.timers)
        self.nic = RoceNic(config, self.line_mbps, self.timers, self.out)
        self.receiver = self.make_receiver(config)

    def make_receiver(self, config):
        """The receiver (``PlainHost`` makes one that holds early packets)."""
        return RoceReceiver(self.addr, config, self.nic, self.timers, self._events)

    # -- application ----------------------------------------------------------------------

    def start_message(self, msg_id, dst, size, now):
        if msg_id in self.out:
            raise ValueError("host %d: message id %d is already in use" % (self.addr, msg_id))
        if dst == self.addr:
            raise ValueError("host %d: message %d addressed to itself" % (self.addr, msg_id))
        flow = self.sender.start(msg_id, dst, size, now, self.rate_log)
        self.out[msg_id] = flow
        self.nic.add(flow, now)

    # -- runtime interface ----------------------------------------------------------------

    def has_work(self):
        return self.nic.has_work()

    def poll(self, now, data_ok=True):
        nic = self.nic
        pkt = nic.next_control()
        if pkt is not None or not data_ok:
            return pkt
        flow = nic.next_flow(now)
        if flow is None:
            return None
        return self.sender.send(flow, now)

    def next_deadline(self):
        return self.timers.first()

    def on_packet(self, pkt, now):
        """The dispatch table on packet kinds (``HostAgent.receive`` checked the packet)."""
        kind = pkt.kind
        if kind == DATA:
            self.receiver.on_data(pkt, now)
        elif kind == ACK:
            self._on_ack(pkt, now)
        elif kind == NACK:
            self._on_nak(pkt, now)
        elif kind == CNP:
            self._on_cnp(pkt, now)
        else:
            return False
        return True

    def on_timer_kind(self, kind, owner, t, now):
        """The dispatch table on timer kinds (``HostAgent.on_timer`` pops them)."""
        if kind == T_RTO:
            if self.sender.on_rto(owner, t, now):
                self.nic.activate(owner)
        elif kind == T_DCQCN:
            self.sender.on_dcqcn(owner, t, now)
        elif kind == T_GEN:
            self.nic.on_pacer(owner, t, now)
        elif kind == T_CNP:
            self.receiver.on_cnp_tick(owner, t)
        elif kind == T_PACE:
            self.nic.on_pace(t)

    def on_pause(self, paused, now):
        self.nic.on_pause(paused, now)

    # -- sender feedback ------------------------------------------------------------------

    def _flow(self, pkt):
        flow = self.out.get(pkt.msg_id)
        if flow is None or flow.dst != pkt.src:
            self.stray += 1
            return None
        return flow

    def _on_ack(self, pkt, now):
        flow = self._flow(pkt)
        if flow is not None and self.sender.on_ack(flow, pkt.psn, now):
            self._finish(flow, now)

    def _on_nak(self, pkt, now):
        flow = self._flow(pkt)
        if flow is None:
            return
        if self.sender.on_nak(flow, pkt.psn, now):
            self.nic.activate(flow)
        elif flow.done:
            self._finish(flow, now)

    def _on_cnp(self, pkt, now):
        flow = self.out.get(pkt.msg_id)
        if flow is not None and flow.cc is not None:
            self.sender.on_cnp(flow, now)

    def _finish(self, flow, now):
        """The flow is acknowledged in full.  (The one place that announces a
        ``MessageCompleted``.)"""
        self.acked_done += flow.npkts
        del self.out[flow.msg_id]
        self._events.append(MessageCompleted(flow.msg_id, flow.retransmits, now))

    # -- inspection -----------------------------------------------------------------------

    def deadlines(self):
        """Every armed deadline, named: ``(kind, flow, t)``, ``kind`` one of
        ``roce_sender.TIMER_NAMES`` ("pace" has no flow: None).  ``timers`` holds an entry
        at or before each (entries of deadlines since moved or dropped are skipped when
        they pop), so ``next_deadline()`` is never later than the earliest of them."""
        out = []
        if self.nic.pace_at >= 0:
            out.append(("pace", None, self.nic.pace_at))
        for flow in self.out.values():
            if flow.rto_deadline != NEVER:
                out.append(("rto", flow, flow.rto_deadline))
            if flow.dcqcn_armed != NEVER:
                out.append(("dcqcn", flow, flow.dcqcn_armed))
            if flow.gen_at != NEVER:
                out.append(("gen", flow, flow.gen_at))
        for flow in self.receiver.incoming.values():
            if flow.cnp_at != NEVER:
                out.append(("cnp", flow, flow.cnp_at))
        return out

    def counters(self):
        tx = self.sender
        rx = self.receiver
        return {
            "malformed": self.malformed, "stray": self.stray, "timeouts": tx.timeouts,
            "retransmits": tx.retransmits, "retransmit_bytes": tx.retransmit_bytes,
            "acks": rx.acks_sent, "nacks": rx.naks_sent, "cnps": rx.cnps_sent,
            "cnps_received": tx.cnps_received, "duplicates": rx.duplicates,
            "ooo_discarded": rx.ooo_discarded, "inbound_refused": rx.inbound_refused,
        }
