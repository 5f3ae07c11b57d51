"""Forwarding with explicit per-flow routes, for replaying another simulator's path choices.

A ``PinnedSwitch`` forwards the packets of a pinned flow (its source, destination and
message id, so a flow's data and its ACKs are pinned separately) to the port given for it,
and every other packet as the ``Switch`` it stands in for would.  Used to run a workload on
the very paths htsim's ECMP chose for it (gse.runtimes.sim.routes), so that what differs
between the two runs is the model, not the luck of the hash.
"""

from switchmodel.switch import Switch


class PinnedSwitch(Switch):
    __slots__ = ("pins",)

    def __init__(self, base, pins):
        Switch.__init__(self, base.node, base.name, base.next_hops, base.salt,
                        "spray" if base.spray else "ecmp")
        self.pins = dict(pins)      # (src, dst, msg_id) -> local port

    def route(self, pkt):
        port = self.pins.get((pkt.src, pkt.dst, pkt.msg_id))
        if port is None:
            return Switch.route(self, pkt)
        self.forwarded += 1
        return port
