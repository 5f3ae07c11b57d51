"""Fabric mode in the simulation runtime: leaf nodes that drive ``FabricLeaf`` agents.

``switch_factory(topo, cfg)`` is what ``gse.runtimes.sim.run.build_network`` hands
to ``gse.runtimes.sim.network.Network`` for protocol ``gse-fabric``: every switch that
hosts attach to (a fat-tree's edge, a spine-leaf's leaf) becomes a ``LeafNode`` around a
``switchmodel.fabric.FabricLeaf``, whose egress queues get the deep-buffer limit
``leaf_queue_bytes``; the others (aggregation, core, spine) stay ``SwitchNode``s that
spread packets by the entropy the source leaf wrote (``FabricSpine``: byte 1 names the
uplink, with ``paths="leaf"``; a hash of it otherwise).  Leaf-to-leaf REQUESTs and GRANTs
are addressed to the leaves' node ids, so every switch gets a copy of its next-hop table
extended with a row per leaf (the row of the leaf's first host).

``fabric_summary(net, summary)`` adds the leaves' figures to a run summary: VOQ and
reorder-buffer peaks as tiers ``edge_voq`` and ``edge_reorder`` of ``peak_queue_bytes``,
VOQ overflow drops into ``drops``, PAUSEs sent to hosts into ``pfc_pauses``, and the
counters under ``fabric``.
"""

from gse.agents.driver import LeafAgentDriver
from gse.metrics.fabric import fold_fabric_counters
from gse.runtimes.sim.network import SwitchNode
from gse.wire.packet import PAUSE, PRIO_CONTROL, PRIO_DATA, RESUME, Packet
from switchmodel.fabric import FabricLeaf, FabricSpine
from switchmodel.fabric_plan import attachments, extended_routes, leaf_ports, spine_fanout
from switchmodel.queue import QueueConfig


class LeafPorts(list):
    """A leaf's port list: every egress queue added gets the leaf's deep-buffer limits."""

    def __init__(self, queue_config):
        super().__init__()
        self.queue_config = queue_config

    def append(self, port):
        port.queue.cfg = self.queue_config
        super().append(port)


class LeafNode:
    """A leaf switch of the simulation whose forwarding is a ``FabricLeaf`` agent, driven by
    ``driver`` (``gse.agents.driver.LeafAgentDriver``)."""

    __slots__ = ("eq", "switch", "agent", "ports", "latency", "unroutable", "pfc",
                 "pfc_frames", "bad_frames", "driver", "timer_fn")

    def __init__(self, eq, switch, agent, latency_ps):
        self.eq = eq
        self.switch = switch
        self.agent = agent
        self.ports = []
        self.latency = latency_ps
        self.unroutable = 0
        self.pfc = None               # no PFC inside the fabric
        self.pfc_frames = 0           # PAUSE/RESUME frames sent to hosts, refreshes included
        self.bad_frames = 0
        self.driver = LeafAgentDriver(agent, self._offer, self._send_pfc, self._arm)
        self.timer_fn = self.on_timer     # bound once, for the event queue

    def receive(self, pkt, in_port):
        if self.latency:
            self.eq.at(self.eq.now + self.latency, self.forward, pkt, in_port)
        else:
            self.forward(pkt, in_port)

    def forward(self, pkt, in_port):
        kind = pkt.kind
        if kind == PAUSE or kind == RESUME:
            if pkt.corrupt:
                self.bad_frames += 1
            else:
                self.ports[in_port].on_pfc(pkt, self.eq.now)
            return
        self.driver.receive(pkt, in_port, self.eq.now)

    def on_timer(self, t, _b):
        self.driver.on_timer(t, self.eq.now)

    def _offer(self, port, pkt, _now):
        self.ports[port].offer(pkt)

    def _send_pfc(self, port, kind, _now):
        self.send_pfc(port, kind)

    def _arm(self, t, now):
        self.eq.at(t if t > now else now, self.timer_fn, t, None)

    def send_pfc(self, port, kind):
        """PAUSE (refreshed at half its time while it must hold) or RESUME to a host."""
        quanta = self.agent.cfg.pause_quanta if kind == PAUSE else 0
        self.pfc_frames += 1
        self.ports[port].offer(Packet(kind, self.switch.node, -1, 0, 0, 0, 0, 0, 0, quanta,
                                      PRIO_DATA, 0, 0, self.eq.now, PRIO_CONTROL))
        if kind == PAUSE:
            half = quanta * 512 * 1_000_000 // self.ports[port].mbps // 2
            self.eq.at(self.eq.now + half, self.refresh_pause, port, None)

    def refresh_pause(self, port, _b):
        if self.agent.pausing[port]:
            self.send_pfc(port, PAUSE)


def switch_factory(topo, cfg):
    """``make(eq, switch)`` for ``gse.runtimes.sim.network.Network``: leaves schedule, the
    rest forward."""
    leaf_of, leaves = attachments(topo)
    tables = extended_routes(topo, leaf_of, leaves)
    leaf_set = set(leaves)
    deep = QueueConfig(cfg.leaf_queue_bytes, cfg.leaf_queue_bytes)

    def make(eq, switch):
        nid = switch.node
        switch.next_hops = tables[nid]
        if nid not in leaf_set:
            if cfg.paths == "leaf":
                switch = FabricSpine(nid, switch.name, tables[nid], switch.salt, "spray")
            return SwitchNode(eq, switch, topo.switch_latency_ps)
        host_ports, host_gbps = leaf_ports(topo, nid)
        agent = FabricLeaf(nid, cfg, switch, host_ports, host_gbps, leaf_of,
                           spine_fanout(topo, nid, tables))
        node = LeafNode(eq, switch, agent, topo.switch_latency_ps)
        node.ports = LeafPorts(deep)
        return node
    return make


def leaf_agents(net):
    return [sn.agent for sn in net.switches if isinstance(sn, LeafNode)]


def fabric_summary(net, summary):
    """Fold the leaves' figures into a run summary (see the module docstring)."""
    return fold_fabric_counters([agent.counters() for agent in leaf_agents(net)], summary)
