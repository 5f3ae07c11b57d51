"""Pin flows to given routes on a built simulation network (``run_simulation(routes=...)``).

A route is ``(msg_id, direction, switches)``: the message's data (``"data"``, source to
destination) or its ACKs and other control packets (``"ack"``, back to the source) cross
``switches`` (node names or ids) in order.  Each switch on the way is given a
``switchmodel.pinned.PinnedSwitch`` that sends that flow to the next one; flows without a
route keep the configured forwarding.  experiments/validate_htsim_roce.py replays htsim's
own ECMP choices this way (experiments/data/htsim_roce/).
"""

from collections.abc import Iterable, Sequence
from typing import Any

from gse.workloads.traffic import Message
from switchmodel.pinned import PinnedSwitch
from topologies.topology import TopologyError


def _node(topo, ref, where):
    if isinstance(ref, str):
        try:
            return topo.node_id(ref)
        except TopologyError:
            raise ValueError("%s: no node named %r in %s" % (where, ref, topo.name)) from None
    if not 0 <= ref < len(topo.nodes):
        raise ValueError("%s: no node %r in %s" % (where, ref, topo.name))
    return ref


def pin_routes(net: Any, messages: Iterable[Message],
               routes: Iterable[tuple[int, str, Sequence[int | str]]]
               ) -> dict[int, dict[tuple[int, int, int], int]]:
    """Replace the switches that ``routes`` cross with pinned ones; returns pins per node."""
    topo = net.topo
    by_id: dict[int, list[Message]] = {}
    for m in messages:
        by_id.setdefault(m.msg_id, []).append(m)
    pins: dict[int, dict[tuple[int, int, int], int]] = {}
    for msg_id, direction, path in routes:
        where = "route of message %r (%s)" % (msg_id, direction)
        found = by_id.get(msg_id)
        if not found:
            raise ValueError("%s: no such message" % where)
        if len(found) > 1:
            raise ValueError("%s: message id used by %d sources; routes need unique ids"
                             % (where, len(found)))
        m = found[0]
        if direction == "data":
            key = (m.src, m.dst, m.msg_id)
        elif direction == "ack":
            key = (m.dst, m.src, m.msg_id)
        else:
            raise ValueError("%s: direction must be 'data' or 'ack'" % where)
        nodes = [_node(topo, ref, where) for ref in path]
        for here, nxt in zip(nodes, nodes[1:]):
            port = next((p for p in range(len(topo.nodes[here].ports))
                         if topo.peer(here, p)[0] == nxt), None)
            if port is None or topo.nodes[here].kind == "host":
                raise ValueError("%s: %s has no link to %s" % (where, topo.nodes[here].name,
                                                              topo.nodes[nxt].name))
            pins.setdefault(here, {})[key] = port
    for sn in net.switches:
        node_pins = pins.get(sn.switch.node)
        if node_pins:
            sn.switch = PinnedSwitch(sn.switch, node_pins)
    return pins
