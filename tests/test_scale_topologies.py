"""Topologies at the seed's scale: next hops per attachment group, base RTTs per pair of
attachment switches, the 10k-GPU fabrics by name."""

import argparse
from collections import deque

import pytest

from topologies.fattree import fat_tree
from topologies.hops import HopRow
from topologies.podfattree import pod_fat_tree
from topologies.registry import PRESETS, TOPOLOGIES, build_topology
from topologies.spineleaf import spine_leaf_rail
from topologies.topology import Topology


def brute_force_table(topo, down=()):
    """Per switch and host, the ports on shortest live paths: one BFS per host, the
    definition the grouped table must agree with."""
    down = set(down)
    n = len(topo.nodes)
    table = {s: [] for s in topo.switches}
    for h in topo.hosts:
        dist = [-1] * n
        li = topo.nodes[h].ports[0]
        if li not in down:
            link = topo.links[li]
            first = link.b if link.a == h else link.a
            dist[first] = 1
            q = deque([first])
            while q:
                u = q.popleft()
                for li2 in topo.nodes[u].ports:
                    if li2 in down:
                        continue
                    l2 = topo.links[li2]
                    v = l2.b if l2.a == u else l2.a
                    if topo.nodes[v].kind != "host" and dist[v] < 0:
                        dist[v] = dist[u] + 1
                        q.append(v)
        for s in topo.switches:
            if dist[s] < 0:
                table[s].append(())
                continue
            hops = []
            for port, li2 in enumerate(topo.nodes[s].ports):
                if li2 in down:
                    continue
                l2 = topo.links[li2]
                v = l2.b if l2.a == s else l2.a
                if v == h and dist[s] == 1:
                    hops.append(port)
                elif topo.nodes[v].kind != "host" and dist[v] == dist[s] - 1:
                    hops.append(port)
            table[s].append(tuple(hops))
    return table


SMALL = [
    lambda: fat_tree(4),
    lambda: spine_leaf_rail(servers=8, nics_per_server=4, groups=2, spines=2),
    lambda: pod_fat_tree(pods=2, groups_per_pod=2, servers_per_group=2, nics_per_server=2),
]


@pytest.mark.parametrize("make", SMALL)
def test_grouped_table_is_the_shortest_path_table(make):
    topo = make()
    want = brute_force_table(topo)
    for s in topo.switches:
        row = topo.next_hops[s]
        assert isinstance(row, HopRow)
        assert list(row) == want[s]
        assert row[:3] == want[s][:3]
        assert len(row.rows) < len(topo.hosts)          # per group, not per host
    # a switch link and a host link down: still the definition, host cut off everywhere
    inner = next(link.index for link in topo.links
                 if topo.nodes[link.a].kind != "host" and topo.nodes[link.b].kind != "host")
    host_link = topo.nodes[3].ports[0]
    table = topo.compute_next_hops([inner, host_link])
    want = brute_force_table(topo, [inner, host_link])
    for s in topo.switches:
        assert list(table[s]) == want[s]
        assert table[s][3] == ()


def test_writing_one_entry_changes_that_row_and_host_only():
    topo = fat_tree(4)
    s0, s1 = topo.switches[0], topo.switches[1]
    row0, row1 = topo.next_hops[s0], topo.next_hops[s1]
    before0, before1 = list(row0), list(row1)
    row0[5] = (9,)
    assert row0[5] == (9,)
    assert [row0[h] for h in range(16) if h != 5] == [before0[h] for h in range(16) if h != 5]
    assert list(row1) == before1                        # the shared arrays were not touched
    row0[5] = (1, 2)
    assert row0[5] == (1, 2) and row0.overrides == {5: (1, 2)} and not row1.overrides
    assert row0.group_of is row1.group_of               # still shared: nothing was copied
    with pytest.raises(IndexError):
        row0[16] = (0,)


def _args(name):
    return argparse.Namespace(topology=name, k=8, link_gbps=100.0, link_delay_ns=1000,
                              switch_latency_ns=0)


@pytest.mark.parametrize("name, hosts, switches, links", [
    ("spine-leaf-rail-10k", 10240, 160 + 64, 20480),
    ("pod-fat-tree-10k", 10240, 160 + 160 + 64, 30720),
    ("fat-tree-k32", 8192, 512 + 512 + 256, 24576),
])
def test_presets_have_their_documented_sizes(name, hosts, switches, links):
    assert name in TOPOLOGIES and name in PRESETS
    topo = build_topology(_args(name))
    assert (len(topo.hosts), len(topo.switches), len(topo.links)) == (hosts, switches, links)
    # 1:1: every non-top switch has as many links up as down
    for s in topo.switches:
        node = topo.nodes[s]
        tiers = [topo.nodes[topo.peer(s, p)[0]].tier for p in range(len(node.ports))]
        up = sum(1 for t in tiers if t > node.tier)
        if up:
            assert up == len(tiers) - up, node.name
    # the table grows with the groups (attachment switches), not the hosts
    groups = len({topo.peer(h, 0)[0] for h in topo.hosts})
    assert all(len(topo.next_hops[s].rows) == groups for s in topo.switches)
    # base RTTs: host 0's maximum is the maximum over a sample of pairs anywhere
    best = topo.max_base_rtt_ps(4160, 64)
    sample = [(h, (h * 7919 + 13) % hosts) for h in range(0, hosts, 97)]
    rtts = [topo.base_rtt_ps(a, b, 4160, 64) for a, b in sample if a != b]
    assert max(rtts) == best
    assert len(topo._segments) <= groups * groups


def test_base_rtt_counts_every_link_of_the_path():
    topo = spine_leaf_rail(servers=4, nics_per_server=2, groups=2, spines=1)
    for a, b in ((0, 1), (0, 2), (0, 4), (1, 7)):
        links = topo.path_links(a, b)
        want = 2 * topo.switch_latency_ps * (len(links) - 1) + sum(
            2 * link.delay_ps + (4160 * 8_000_000 + 99_999) // 100_000
            + (64 * 8_000_000 + 99_999) // 100_000 for link in links)
        assert topo.base_rtt_ps(a, b, 4160, 64) == want
        assert topo.bottleneck_gbps(a, b) == 100.0


def test_topology_without_hosts_behind_a_switch_still_routes():
    t = Topology("line")
    h0, h1 = t.add_node("h0", "host", 0), t.add_node("h1", "host", 0)
    s0, s1, s2 = (t.add_node("s%d" % i, "edge", 1) for i in range(3))
    t.add_link(h0, s0, 100, 1000)
    t.add_link(h1, s2, 100, 1000)
    t.add_link(s0, s1, 100, 1000)
    t.add_link(s1, s2, 100, 1000)
    t.finalize()
    assert t.path(h0, h1) == [h0, s0, s1, s2, h1]
    assert t.next_hops[s1][h0] == (0,) and t.next_hops[s1][h1] == (1,)
