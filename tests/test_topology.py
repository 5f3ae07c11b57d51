"""Tests of topologies: fat-tree shape and wiring, next-hop tables, paths, RTT, and errors."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from topologies import Topology, TopologyError, fat_tree, host_pod, node_pod, serialisation_ps


@pytest.fixture(scope="module")
def ft4():
    return fat_tree(4)


@pytest.fixture(scope="module")
def ft8():
    return fat_tree(8)


def count_paths(topo, src, dst):
    """Distinct paths from host ``src`` to host ``dst`` following every next hop, with their
    lengths in links; fails if any walk loops or dead-ends."""
    lengths = []

    def walk(node, nlinks):
        if node == dst:
            lengths.append(nlinks)
            return
        assert nlinks <= 2 * len(topo.nodes), "routing loop"
        hops = topo.next_hops[node][dst]
        assert hops, "switch %s has no next hop to %d" % (topo.nodes[node].name, dst)
        for port in hops:
            nxt, _ = topo.peer(node, port)
            assert topo.nodes[nxt].kind != "host" or nxt == dst, "forwarded into a host"
            walk(nxt, nlinks + 1)

    first, _ = topo.peer(src, 0)
    walk(first, 1)
    return lengths


def expected(topo, k, src, dst):
    half = k // 2
    if src // half == dst // half:
        return 2, 1
    if host_pod(topo, src) == host_pod(topo, dst):
        return 4, half
    return 6, half * half


@pytest.mark.parametrize("k", [2, 4, 8])
def test_fat_tree_counts(k):
    t = fat_tree(k)
    half = k // 2
    kinds = t.summary()["nodes_by_kind"]
    assert len(t.hosts) == k ** 3 // 4
    assert kinds == {"host": k ** 3 // 4, "edge": k * half, "agg": k * half, "core": half * half}
    assert len(t.switches) == 5 * k * k // 4
    assert len(t.links) == 3 * k ** 3 // 4
    assert t.hosts == list(range(len(t.hosts)))
    for nid in t.switches:
        assert len(t.nodes[nid].ports) == k
    for h in t.hosts:
        assert len(t.nodes[h].ports) == 1
        edge, _ = t.peer(h, 0)
        assert t.nodes[edge].name == "edge%d_%d" % (h // (half * half), (h // half) % half)


def test_fat_tree_counts_known():
    assert len(fat_tree(4).hosts) == 16 and len(fat_tree(4).links) == 48
    t8 = fat_tree(8)
    assert (len(t8.hosts), len(t8.switches), len(t8.links)) == (128, 80, 384)


def test_core_wiring(ft8):
    half = 4
    for j in range(half * half):
        core = ft8.node_id("core%d" % j)
        for pod in range(8):
            peer, _ = ft8.peer(core, pod)
            assert ft8.nodes[peer].name == "agg%d_%d" % (pod, j // half)


def test_peer_is_symmetric(ft4):
    for nid, node in enumerate(ft4.nodes):
        for port in range(len(node.ports)):
            peer, pport = ft4.peer(nid, port)
            assert ft4.peer(peer, pport) == (nid, port)


@pytest.mark.parametrize("k", [4, 8])
def test_every_switch_routes_to_every_host(k):
    t = fat_tree(k)
    for s in t.switches:
        row = t.next_hops[s]
        assert len(row) == len(t.hosts)
        for hops in row:
            assert hops and list(hops) == sorted(set(hops))
            assert all(0 <= p < len(t.nodes[s].ports) for p in hops)
    for h in t.hosts:
        assert t.next_hops[h] is None


def test_next_hops_interned():
    t = fat_tree(8)
    distinct = {id(h) for s in t.switches for h in t.next_hops[s]}
    assert len(distinct) < 50


def test_all_pairs_k4(ft4):
    for s in ft4.hosts:
        for d in ft4.hosts:
            if s != d:
                lengths = count_paths(ft4, s, d)
                nlinks, npaths = expected(ft4, 4, s, d)
                assert set(lengths) == {nlinks}
                assert len(lengths) == npaths


@given(st.integers(0, 127), st.integers(0, 127))
def test_paths_k8(ft8, s, d):
    if s == d:
        return
    lengths = count_paths(ft8, s, d)
    nlinks, npaths = expected(ft8, 8, s, d)
    assert set(lengths) == {nlinks} and len(lengths) == npaths
    path = ft8.path(s, d)
    assert path[0] == s and path[-1] == d and len(path) == nlinks + 1
    links = ft8.path_links(s, d)
    assert len(links) == nlinks
    for (u, v), link in zip(zip(path, path[1:]), links):
        assert {link.a, link.b} == {u, v}


def test_cases_by_locality(ft8):
    assert len(count_paths(ft8, 0, 1)) == 1            # same edge
    assert len(count_paths(ft8, 0, 4)) == 4            # same pod
    assert len(count_paths(ft8, 0, 127)) == 16         # across pods
    assert host_pod(ft8, 0) == 0 and host_pod(ft8, 127) == 7
    assert node_pod(ft8, ft8.node_id("core3")) is None
    assert node_pod(ft8, ft8.node_id("agg5_1")) == 5


def test_base_rtt_matches_htsim_setup(ft8):
    # 6 links: 12 us of propagation + 6 * (332.8 ns + 5.12 ns) of serialisation.
    cross = 12_000_000 + 6 * (332_800 + 5_120)
    assert ft8.base_rtt_ps(0, 127, 4160, 64) == cross == 14_027_520
    assert ft8.max_base_rtt_ps(4160, 64) == cross
    assert ft8.max_base_rtt_ps(4160, 64, exhaustive=False) == fat_tree(4).max_base_rtt_ps(4160, 64)
    assert ft8.base_rtt_ps(0, 1, 4160, 64) == 2 * (2_000_000 + 337_920)
    assert ft8.bottleneck_gbps(0, 127) == 100.0


def test_switch_latency_counts_both_directions():
    t = fat_tree(4, switch_latency_ns=100)
    assert t.switch_latency_ps == 100_000
    assert t.base_rtt_ps(0, 1, 4160, 64) - fat_tree(4).base_rtt_ps(0, 1, 4160, 64) == 200_000
    assert t.base_rtt_ps(0, 15, 4160, 64) - fat_tree(4).base_rtt_ps(0, 15, 4160, 64) == 1_000_000


def test_serialisation_exact():
    assert serialisation_ps(4160, 100.0) == 332_800
    assert serialisation_ps(64, 800) == 640
    assert serialisation_ps(1, 3) == 2667              # ceil(8000/3)
    assert serialisation_ps(4096, 400.0) == 81_920


@pytest.mark.parametrize("k,rule", [(3, "even"), (0, ">= 2"), (-2, ">= 2"), (66, "too large"),
                                    (4.0, "integer"), (True, "integer")])
def test_invalid_k(k, rule):
    with pytest.raises(TopologyError, match="k") as e:
        fat_tree(k)
    assert rule in str(e.value)


@pytest.mark.parametrize("kw,word", [
    ({"link_gbps": 0}, "link_gbps"), ({"link_gbps": -1.0}, "link_gbps"),
    ({"link_gbps": float("nan")}, "link_gbps"), ({"link_delay_ns": -1}, "link_delay_ns"),
    ({"switch_latency_ns": -5}, "switch_latency_ns"), ({"link_delay_ns": 0.0001}, "picosec"),
])
def test_invalid_parameters(kw, word):
    with pytest.raises(TopologyError, match=word):
        fat_tree(4, **kw)


def test_k16_builds():
    t = fat_tree(16)
    assert len(t.hosts) == 1024 and len(t.switches) == 320
    assert len(count_paths(t, 0, 1023)) == 64


def test_builder_validation():
    t = Topology("t")
    a = t.add_node("a", "host", 0)
    s = t.add_node("s", "edge", 1)
    with pytest.raises(TopologyError, match="numbered first"):
        t.add_node("b", "host", 0)
    with pytest.raises(TopologyError, match="duplicate node name 's'"):
        t.add_node("s", "agg", 2)
    with pytest.raises(TopologyError, match="kind 'router'"):
        t.add_node("r", "router", 2)
    with pytest.raises(TopologyError, match="delay"):
        t.add_link(a, s, 100.0, 1.5)
    with pytest.raises(TopologyError, match="rate"):
        t.add_link(a, s, 0, 0)
    with pytest.raises(TopologyError, match="does not exist"):
        t.add_link(a, 9, 100.0, 0)


def test_finalize_checks():
    t = Topology("two-links")
    h = t.add_node("h", "host", 0)
    s1 = t.add_node("s1", "edge", 1)
    s2 = t.add_node("s2", "edge", 1)
    t.add_link(h, s1, 100.0, 0)
    t.add_link(h, s2, 100.0, 0)
    with pytest.raises(TopologyError, match="host 'h' has 2 links"):
        t.finalize()

    t = Topology("split")
    h0 = t.add_node("h0", "host", 0)
    h1 = t.add_node("h1", "host", 0)
    s1 = t.add_node("s1", "edge", 1)
    s2 = t.add_node("s2", "edge", 1)
    t.add_link(h0, s1, 100.0, 0)
    t.add_link(h1, s2, 100.0, 0)
    with pytest.raises(TopologyError, match="not connected"):
        t.finalize()


def test_parallel_links_and_down_links():
    """Two switches joined by two links: both are next hops; with one down, one remains."""
    t = Topology("pair")
    h0 = t.add_node("h0", "host", 0)
    h1 = t.add_node("h1", "host", 0)
    s0 = t.add_node("s0", "leaf", 1)
    s1 = t.add_node("s1", "leaf", 1)
    t.add_link(h0, s0, 100.0, 1000)
    t.add_link(h1, s1, 100.0, 1000)
    l1 = t.add_link(s0, s1, 100.0, 1000)
    l2 = t.add_link(s0, s1, 50.0, 1000)
    t.finalize()
    assert t.next_hops[s0][h1] == (1, 2)
    assert t.next_hops[s0][h0] == (0,)
    assert t.path(h0, h1) == [h0, s0, s1, h1]
    assert t.path_links(h0, h1)[1] is l1
    down = t.compute_next_hops(down_links=[l1.index])
    assert down[s0][h1] == (2,)
    down = t.compute_next_hops(down_links=[l1.index, l2.index])
    assert down[s0][h1] == ()
    with pytest.raises(TopologyError, match="finalized"):
        t.add_node("x", "spine", 2)


def test_query_errors(ft4):
    with pytest.raises(TopologyError, match="not a host"):
        ft4.path(0, 16)
    with pytest.raises(TopologyError, match="both host 3"):
        ft4.path(3, 3)
    with pytest.raises(TopologyError, match="no port"):
        ft4.peer(0, 1)
    with pytest.raises(TopologyError, match="no node named"):
        ft4.node_id("core99")


def test_summary_and_names(ft4):
    s = ft4.summary()
    assert s["hosts"] == 16 and s["switches"] == 20 and s["links"] == 48
    assert s["link_gbps"] == [100.0]
    assert s["links_by_layer"] == {"host-edge": 16, "edge-agg": 16, "agg-core": 16}
    assert ft4.tier_name(0) == "host"
    assert ft4.tier_name(ft4.node_id("core0")) == "core"
    assert ft4.host_link(5).gbps == 100.0


def test_star_is_one_switch_with_its_hosts():
    from topologies import star
    from topologies.registry import build_topology, describe_topology_args
    import argparse
    t = star(5, link_delay_ns=1000)
    assert len(t.hosts) == 5 and len(t.switches) == 1
    sw = t.switches[0]
    assert [t.next_hops[sw][h] for h in range(5)] == [(h,) for h in range(5)]
    assert t.max_base_rtt_ps(1048, 64) == 4 * 1_000_000 + 2 * (1048 + 64) * 80
    args = argparse.Namespace(topology="star", hosts=3, k=8, link_gbps=100.0,
                              link_delay_ns=1000, switch_latency_ns=0)
    assert len(build_topology(args).hosts) == 3
    assert describe_topology_args(args)["hosts"] == 3
    with pytest.raises(TopologyError, match="hosts must be an integer >= 2"):
        star(1)
