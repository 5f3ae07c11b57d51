"""A destination a switch has no next hop toward is a counted drop, never a crash.

Routing computed without failed links (``Topology.compute_next_hops(down_links)``) gives a
switch an empty tuple toward every host it can no longer reach; an edge switch that lost
all its up-links is the simplest case.  Before this was handled, ``Switch.route`` divided
by the length of that tuple and the simulation aborted with ``ZeroDivisionError``; a
``gse agent`` whose configuration held an empty list counted an error per packet and
exited 0.  Now: the simulation, fabric mode and the UDP switch agent count the packet as
``unreachable`` and drop it, and an agent configuration with an empty list is refused at
start-up with the file and field named.
"""

import asyncio

import pytest

from gse.config import ConfigError, GseConfig, RoceConfig
from gse.runtimes.sim.fabric_nodes import attachments, extended_routes
from gse.runtimes.sim.run import build_network, route_summary
from gse.runtimes.udp.config import check_node_config, loopback_addresses, node_configs
from gse.runtimes.udp.io import Scheduler
from gse.runtimes.udp.build import build_node
from gse.wire.codec import encode
from gse.wire.packet import ACK, DATA, PRIO_DATA, Packet, make_packet
from gse.workloads.traffic import Message
from switchmodel.fabric import FabricConfig, FabricSpine
from switchmodel.switch import Switch
from topologies import fat_tree
from udp_fakes import FakeEndpoint


def data(dst, entropy=0):
    return make_packet(kind=DATA, src=0, dst=dst, msg_id=1, entropy=entropy, payload_len=4096,
                       msg_len=1 << 20, prio=PRIO_DATA)


@pytest.mark.parametrize("cls, forwarding", [(Switch, "spray"), (Switch, "ecmp"),
                                             (FabricSpine, "spray")])
def test_route_with_no_next_hop_is_a_counted_drop(cls, forwarding):
    sw = cls(20, "s", [(0, 1), (), (2,)], 0x1234, forwarding)
    assert sw.route(data(1)) == -1                    # was ZeroDivisionError
    assert sw.unreachable == 1 and sw.unroutable == 0 and sw.forwarded == 0
    assert sw.route(data(2)) == 2 and sw.route(data(0)) in (0, 1)
    assert sw.forwarded == 2
    assert sw.route(data(7)) == -1 and sw.unroutable == 1 and sw.unreachable == 1


def edge_cut_off(topo):
    """(edge switch 0, the links of its up-links): without them its hosts are cut off."""
    edge = topo.node_id("edge0_0")
    ups = [li for li in topo.nodes[edge].ports
           if topo.nodes[topo.links[li].other(edge)[0]].kind != "host"]
    return edge, ups


def install_routes(net, topo, protocol, down):
    """What a switch learns after ``down`` fail: its rows of the recomputed table."""
    table = topo.compute_next_hops(down)
    if protocol == "gse-fabric":
        leaf_of, leaves = attachments(topo)
        shadow = type("T", (), {})()
        shadow.hosts, shadow.nodes, shadow.switches = topo.hosts, topo.nodes, topo.switches
        shadow.next_hops = table
        rows = extended_routes(shadow, leaf_of, leaves)
    else:
        rows = {s: list(table[s]) for s in topo.switches}
    for sn in net.switches:
        sn.switch.next_hops = rows[sn.switch.node]


@pytest.mark.parametrize("protocol", ["gse", "roce", "gse-fabric"])
def test_simulation_counts_packets_to_a_cut_off_edge(protocol):
    """h0 hangs off edge0_0, whose two up-links are gone: its traffic to another pod is
    dropped and counted at edge0_0; traffic between other hosts is delivered."""
    topo = fat_tree(4)
    edge, ups = edge_cut_off(topo)
    assert topo.compute_next_hops(ups)[edge][15] == ()    # the empty next-hop list
    cfg = {"gse": GseConfig, "roce": RoceConfig, "gse-fabric": FabricConfig}[protocol]()
    net = build_network(topo, protocol, cfg, 1)
    install_routes(net, topo, protocol, ups)
    msgs = [Message(1, 0, 15, 20_000), Message(2, 4, 12, 20_000)]
    net.schedule(msgs)
    net.run(3_000_000_000)                                # 3 ms: no exception on the way
    assert (4, 2) in net.records and (0, 1) not in net.records
    counts = route_summary(net)
    if protocol == "gse-fabric":
        leaf = next(sn for sn in net.switches if sn.switch.node == edge)
        assert leaf.agent.unroutable > 0 and leaf.switch.unreachable > 0
    else:
        assert counts["unreachable"] > 0 and counts["unroutable"] == counts["unreachable"]


def test_agent_config_with_an_empty_next_hop_list_is_refused():
    topo = fat_tree(4)
    conf = node_configs(topo, [], address_of=loopback_addresses(topo))[16]
    conf["next_hops"][15] = []
    with pytest.raises(ConfigError) as err:
        check_node_config(conf, "edge0_0.json")
    assert "edge0_0.json" in str(err.value) and "next_hops[15] is empty" in str(err.value)


def test_udp_switch_counts_a_datagram_it_has_no_route_for():
    """Routes that change while an agent runs may leave a row empty: a counted drop."""
    topo = fat_tree(4)
    conf = node_configs(topo, [], address_of=loopback_addresses(topo))[16]
    conf["next_hops"][15] = []
    loop = asyncio.new_event_loop()
    try:
        sched = Scheduler(loop)
        ep = FakeEndpoint()
        node = build_node(conf, sched, ep, None)
        peer = tuple(conf["ports"][0]["peer_addr"])          # h0
        node.datagram(encode(Packet(ACK, 0, 15, msg_id=5)), peer)
        node.datagram(encode(Packet(ACK, 0, 1, msg_id=5)), peer)
        c = node.counters(0)
        assert c["unroutable"] == 1 and c["unreachable"] == 1 and c["forwarded"] == 1
        assert len(ep.out) == 1
        sched.close()
    finally:
        loop.close()


def test_fabric_leaf_drops_granted_data_it_has_no_uplink_for():
    """The leaf's own spraying reads the next-hop table too."""
    from gse.runtimes.sim.fabric_nodes import LeafNode
    topo = fat_tree(4)
    edge, ups = edge_cut_off(topo)
    net = build_network(topo, "gse-fabric", FabricConfig(), 3)
    install_routes(net, topo, "gse-fabric", ups)
    leaf = next(sn for sn in net.switches if sn.switch.node == edge)
    assert isinstance(leaf, LeafNode)
    voq_pkts = [make_packet(kind=DATA, src=0, dst=15, msg_id=1, psn=psn, payload_len=4096,
                            msg_len=40960, prio=PRIO_DATA)
                for psn in range(3)]
    agent = leaf.agent
    for p in voq_pkts:
        agent.receive(p, 0, 0)
    assert agent.unroutable >= 1                 # its REQUEST had no route either
    before = agent.unroutable
    agent.out.clear()
    voq = agent.voqs[15]
    voq.req_total = voq.enq_total                # all asked for, and granted (as the
    agent._credit(voq, voq.enq_total, 0)         # far leaf would)
    assert agent.unroutable == before + 3 and not agent.out
    assert leaf.switch.unreachable == agent.unroutable
