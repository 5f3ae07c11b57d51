"""The unchanged endpoint of fabric mode: a RoCE-like host with no scheduling of its own.

``PlainHost`` is ``gse.agents.roce_host.RoceHost`` as a RoCEv2 NIC runs without congestion
control:
one flow per message at line rate with a fixed entropy, in-order receiver, cumulative
ACKs, go-back-N on NAK, RTO with backoff.  It has no credit, no spraying, no DCQCN (the
fabric config has ``dcqcn = False``), so everything the fabric does to keep queues short
is done by the leaves (``switchmodel.fabric``).

With ``reorder="leaf"`` (the default) the destination leaf hands packets over in order
and the host is exactly ``RoceHost``.  With ``reorder="host"`` the leaf forwards sprayed
packets as they come and the host's receiver (``HeldReceiver``) holds early packets (a NIC
reorder buffer):
it accepts every new psn, acknowledges the in-order prefix, and sends one NAK for the
first missing psn only once that hole is ``reorder_timeout_ps`` old (spraying reorders
by far less when nothing is lost), so the go-back-N sender is not rewound by mere
reordering.
"""

from gse.agents.roce_host import RoceHost
from gse.agents.roce_receiver import RoceReceiver, RoceRecvFlow


class HeldRecvFlow(RoceRecvFlow):
    __slots__ = ("held", "hole_since")

    def __init__(self, size, mtu):
        super().__init__(size, mtu)
        self.held = set()          # psns received beyond the in-order point
        self.hole_since = -1       # when the current hole was first seen


class HeldReceiver(RoceReceiver):
    """``RoceReceiver`` with a reorder buffer: early packets are held, not discarded."""

    __slots__ = ("hole_ps", "ooo_held")

    def __init__(self, addr, config, nic, timers, events):
        super().__init__(addr, config, nic, timers, events)
        self.hole_ps = config.reorder_timeout_ps
        self.ooo_held = 0

    def on_data(self, pkt, now):
        key = (pkt.src, pkt.msg_id)
        if key in self.finished:
            self.duplicates += 1
            self._ack(pkt, self.finished[key])
            return
        flow = self.incoming.get(key)
        if flow is None:
            if not self._admit(pkt):
                return
            flow = self.incoming[key] = HeldRecvFlow(pkt.msg_len, self.config.mtu)
        psn = pkt.psn
        if psn < flow.expected or psn in flow.held or psn >= flow.npkts:
            self.duplicates += 1
            self._ack(pkt, flow.expected)
            return
        if psn > flow.expected:
            flow.held.add(psn)
            self.ooo_held += 1
            if flow.hole_since < 0:
                flow.hole_since = now
            elif now - flow.hole_since >= self.hole_ps and flow.nak_for != flow.expected:
                flow.nak_for = flow.expected
                self._nak(pkt, flow)
            return
        mtu = self.config.mtu
        expected = psn + 1
        accepted = pkt.payload_len
        held = flow.held
        while expected in held:
            held.remove(expected)
            accepted += mtu if expected < flow.npkts - 1 else flow.size - expected * mtu
            expected += 1
        flow.unacked += accepted
        self.payload_bytes += accepted
        flow.expected = expected
        flow.nak_for = -1
        flow.hole_since = now if held else -1
        if expected == flow.npkts:
            self._deliver(key, flow, now)
            self._ack(pkt, flow.npkts)
        elif flow.unacked >= self.config.ack_every_bytes:
            flow.unacked = 0
            self._ack(pkt, flow.expected)


class PlainHost(RoceHost):
    """``RoceHost``, with a ``HeldReceiver`` when ``reorder="host"``."""

    __slots__ = ()

    def make_receiver(self, config):
        if config.reorder == "host":
            return HeldReceiver(self.addr, config, self.nic, self.timers, self._events)
        return RoceHost.make_receiver(self, config)

    def counters(self):
        c = RoceHost.counters(self)
        c["ooo_held"] = getattr(self.receiver, "ooo_held", 0)
        return c
