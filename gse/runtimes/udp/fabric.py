"""Fabric mode (``gse-fabric``) over UDP: the leaf scheduler as a switch node.

In fabric mode the hosts are plain RoCE-like senders (``gse.agents.plain_host``) and the
leaves schedule: ``switchmodel.fabric.FabricLeaf`` keeps a VOQ per destination host,
asks the destination's leaf for credit with REQUESTs, sprays what it is granted, and
restores order before the destination host (docs/fabric-mode.md).  ``LeafDriver`` runs
that agent behind a node's UDP socket exactly as ``gse.runtimes.sim.fabric_nodes.LeafNode``
runs it on the simulation's event queue: every datagram is decoded and handed to
``receive(pkt, in_port, now)``, the agent's ``out`` is offered to the emulated egress
ports (``gse.runtimes.udp.link``), its PAUSE/RESUME frames to local hosts are sent (and
a PAUSE refreshed at half its time while it must hold), and its one deadline is a timer
of the node's scheduler.  Spines are ordinary switch nodes (``SwitchDriver``) whose switch
is a ``FabricSpine`` with ``paths="leaf"``.

On the wire nothing is new: leaf-to-leaf REQUESTs and GRANTs and the DATA shim are the
64-byte header of docs/wire-format.md ("Fabric mode"), addressed to the leaves' node ids,
which every switch routes like the leaf's first host (``switchmodel.fabric_plan``).

A leaf keeps packets (VOQs, reorder buffers), so every datagram is decoded into a packet
of its own, DATA with its payload bytes, and everything the leaf sends is encoded again
(it rewrites DATA's entropy, ``aux`` and ``sack_base``), except control packets it only
routes (a host's ACK or NAK), which go out as the datagram that came in.
"""

from gse.agents.driver import LeafAgentDriver
from gse.runtimes.udp.io import record_error
from gse.runtimes.udp.node import NodeDriver
from gse.wire.packet import (DATA, F_TRIMMED, HEADER_BYTES, PAUSE, PRIO_CONTROL, PRIO_DATA,
                             RESUME, new_packet)

__all__ = ["LeafDriver"]


class LeafDriver(NodeDriver):
    """One leaf of fabric mode: a ``FabricLeaf`` agent behind the node's socket, driven by
    ``driver`` (``gse.agents.driver.LeafAgentDriver``)."""

    __slots__ = ("switch", "agent", "latency", "driver", "timer_fn", "forward_fn",
                 "refresh_fn", "pfc_frames", "agent_errors", "routed", "raw",
                 "route_updates")

    def __init__(self, node, name, kind, sched, endpoint, switch, agent, latency_ps):
        NodeDriver.__init__(self, node, name, kind, sched, endpoint)
        self.switch = switch
        self.agent = agent
        self.latency = latency_ps
        self.driver = LeafAgentDriver(agent, self._offer, self.send_pfc, self._arm,
                                      self._agent_error)
        self.timer_fn = self._on_timer      # bound once
        self.forward_fn = self._forward
        self.refresh_fn = self._refresh_pause
        self.pfc_frames = 0                 # PAUSE/RESUME frames sent to hosts
        self.agent_errors = 0
        # while the leaf handles a control packet it only routes: that packet and the
        # datagram it came in, which is what leaves again (no encoding)
        self.routed = None
        self.raw = None
        self.route_updates = None   # gse.runtimes.udp.faults.RouteUpdates, when scheduled

    def datagram(self, data, addr):
        pkt = self._decode(data, addr, None)    # a packet of its own: the leaf may keep it
        if pkt is None:
            return
        if pkt.kind == DATA and not pkt.flags & F_TRIMMED and pkt.payload is None:
            pkt.payload = data[HEADER_BYTES:]   # re-encoded with the bytes that came
        if self.latency:
            self.sched.at(self.sched.now() + self.latency, self.forward_fn, (pkt, data))
            return
        self._handle(pkt, data, self.sched.now())

    def _forward(self, _t, item):
        self._handle(item[0], item[1], self.sched.now())

    def _handle(self, pkt, data, now):
        kind = pkt.kind
        if kind == PAUSE or kind == RESUME:   # no one pauses a leaf: refused, counted
            quanta = self.admit_pfc(pkt, data)
            if quanta >= 0:
                self.ports[pkt.ingress].on_pfc(kind == PAUSE, quanta, now)
            return
        if kind != DATA:
            self.routed = pkt
            self.raw = data
        try:
            self.driver.receive(pkt, pkt.ingress, now)
        finally:
            self.routed = self.raw = None

    def _on_timer(self, t, _arg):
        self.driver.on_timer(t, self.sched.now())

    def _offer(self, port, pkt, now):
        self.ports[port].offer(pkt, self.raw if pkt is self.routed else None, now)

    def _arm(self, t, _now):
        self.sched.at(t, self.timer_fn, None)

    def send_pfc(self, port, kind, now):
        """PAUSE (refreshed at half its time while the host must hold) or RESUME to the
        host on ``port``, ahead of data, as ``LeafNode.send_pfc`` in the simulation."""
        quanta = self.agent.cfg.pause_quanta if kind == PAUSE else 0
        p = self.ports[port]
        self.pfc_frames += 1
        p.offer(new_packet(kind, self.node, max(p.peer, 0), 0, 0, 0, 0, 0, 0, quanta,
                           PRIO_DATA, 0, 0, now, PRIO_CONTROL), None, now)
        if kind == PAUSE:
            half = quanta * 512 * 1_000_000 // p.mbps // 2
            self.sched.at(now + half, self.refresh_fn, port)

    def _refresh_pause(self, _t, port):
        if self.agent.pausing[port]:
            self.send_pfc(port, PAUSE, self.sched.now())

    def _agent_error(self, what, exc):
        self.agent_errors += 1
        record_error(self.sched.errors, "leaf %d: %s: %r" % (self.node, what, exc))

    def counters(self, now):
        c = NodeDriver.counters(self, now)
        c["role"] = "switch"
        c["unreachable"] = self.switch.unreachable
        c["forwarded"] = self.switch.forwarded
        c["agent_errors"] = self.agent_errors
        c["pfc_frames"] = self.pfc_frames
        c["fabric"] = self.agent.counters()
        c["fabric_idle"] = self.agent.idle()
        if self.route_updates is not None:
            c["route_updates"] = {"applied": self.route_updates.applied,
                                  "entries": self.route_updates.entries}
        return c
