"""The seed article's fabrics (section 9): rail-optimised Spine-Leaf and pod-based Fat-Tree.

Checked as plain data: NIC i of every server on the group's Leaf i, full meshes where the
article says so, every host reachable from every host, and 1:1 capacity at every tier
(per switch: as much capacity up as down; per layer: the same total at every layer).
"""

import argparse

import pytest

from gse.cli.main import build_parser, main
from topologies.fattree import host_pod, node_pod
from topologies.podfattree import pod_fat_tree
from topologies.registry import (TOPOLOGIES, add_topology_options, build_topology,
                                 describe_topology_args)
from topologies.spineleaf import spine_leaf_rail
from topologies.topology import TopologyError


def neighbours(topo, node):
    out = []
    for port in range(len(topo.nodes[node].ports)):
        peer, _ = topo.peer(node, port)
        out.append(peer)
    return out


def assert_full_reachability(topo):
    hosts = topo.hosts
    for s in topo.switches:
        for h in hosts:
            assert topo.next_hops[s][h], "%s has no route to host %d" % (topo.nodes[s].name, h)
    for a in hosts:
        for b in hosts:
            if a != b:
                path = topo.path(a, b)
                assert path[0] == a and path[-1] == b


def assert_one_to_one(topo):
    """Every switch below the top tier has equal capacity down and up, and every layer of
    links carries the same total capacity."""
    top = max(n.tier for n in topo.nodes)
    for s in topo.switches:
        node = topo.nodes[s]
        down = up = 0.0
        for li in node.ports:
            link = topo.links[li]
            peer = link.b if link.a == s else link.a
            if topo.nodes[peer].tier < node.tier:
                down += link.gbps
            else:
                up += link.gbps
        if node.tier < top:
            assert down == up, "%s: %g Gb/s down vs %g up" % (node.name, down, up)
    layers = {}
    for link in topo.links:
        name = topo.link_tier_name(link)
        layers[name] = layers.get(name, 0.0) + link.gbps
    assert len(set(layers.values())) == 1, layers
    return layers


@pytest.mark.parametrize("kwargs", [
    {},                                              # the seed's shape: 8 servers x 8 NICs
    {"servers": 8, "groups": 2},
    {"servers": 8, "spines": 4},                     # 2 parallel links per Leaf-Spine pair
    {"servers": 6, "nics_per_server": 4, "groups": 3, "spines": 1},
])
def test_spine_leaf_rail_shape_reachability_and_capacity(kwargs):
    topo = spine_leaf_rail(**kwargs)
    m = topo.meta
    nics = m["nics_per_server"]
    assert len(topo.hosts) == m["servers"] * nics
    leaves = [n for n in topo.nodes if n.kind == "leaf"]
    spines = [n for n in topo.nodes if n.kind == "spine"]
    assert len(leaves) == m["groups"] * nics and len(spines) == m["spines"]
    for h in topo.hosts:
        server, nic = divmod(h, nics)
        assert topo.nodes[h].name == "s%dn%d" % (server, nic)
        leaf = neighbours(topo, h)[0]
        assert topo.nodes[leaf].name == "leaf%d_%d" % (m["group_of"][h], nic)   # multi-rail
    for leaf in leaves:
        peers = neighbours(topo, leaf.id)
        assert {topo.nodes[p].kind for p in peers} == {"host", "spine"}
        assert {p for p in peers if topo.nodes[p].kind == "spine"} == {s.id for s in spines}
        rails = {m["nic_of"][p] for p in peers if topo.nodes[p].kind == "host"}
        assert len(rails) == 1                     # one rail per Leaf
    assert_full_reachability(topo)
    layers = assert_one_to_one(topo)
    assert set(layers) == {"host-leaf", "leaf-spine"}


def test_spine_leaf_rail_hops():
    topo = spine_leaf_rail(servers=8)
    rail = [topo.node_id("s0n3"), topo.node_id("s5n3")]
    cross = [topo.node_id("s0n3"), topo.node_id("s0n4")]
    assert len(topo.path_links(*rail)) == 2        # same rail: one Leaf
    assert len(topo.path_links(*cross)) == 4       # another rail: through a Spine


@pytest.mark.parametrize("kwargs", [
    {},                                              # 2 pods x 2 groups x 4 servers x 8 NICs
    {"pods": 3, "groups_per_pod": 1, "servers_per_group": 2, "nics_per_server": 4},
    {"pods": 2, "groups_per_pod": 2, "servers_per_group": 4, "nics_per_server": 2,
     "spines_per_pod": 2, "cores_per_group": 4},     # parallel links at both tiers
])
def test_pod_fat_tree_shape_reachability_and_capacity(kwargs):
    topo = pod_fat_tree(**kwargs)
    m = topo.meta
    nics, n_spines, cpg = m["nics_per_server"], m["spines_per_pod"], m["cores_per_group"]
    leaves = [n for n in topo.nodes if n.kind == "leaf"]
    spines = [n for n in topo.nodes if n.kind == "spine"]
    cores = [n for n in topo.nodes if n.kind == "core"]
    assert len(leaves) == m["pods"] * m["groups_per_pod"] * nics
    assert len(spines) == m["pods"] * n_spines and len(cores) == n_spines * cpg
    for h in topo.hosts:
        leaf = topo.nodes[neighbours(topo, h)[0]]
        p, g = m["pod_of"][h], m["group_of"][h] % m["groups_per_pod"]
        assert leaf.name == "leaf%d_%d_%d" % (p, g, m["nic_of"][h])
        assert host_pod(topo, h) == p
    for leaf in leaves:                              # Leaf-Spine full mesh inside the pod
        p = node_pod(topo, leaf.id)
        ups = {x for x in neighbours(topo, leaf.id) if topo.nodes[x].kind == "spine"}
        assert ups == {s.id for s in spines if node_pod(topo, s.id) == p}
    for s in spines:                                 # Spine j -> every Core of core group j
        j = int(s.name.split("_")[1])
        ups = {x for x in neighbours(topo, s.id) if topo.nodes[x].kind == "core"}
        assert ups == {c.id for c in cores if c.name.startswith("core%d_" % j)}
    assert_full_reachability(topo)
    layers = assert_one_to_one(topo)
    assert set(layers) == {"host-leaf", "leaf-spine", "spine-core"}
    a, b = 0, len(topo.hosts) - 1                    # first and last pod: up to the Cores
    assert len(topo.path_links(a, b)) == (6 if m["pods"] > 1 else 4)


@pytest.mark.parametrize("build, kwargs, words", [
    (spine_leaf_rail, {"servers": 8, "spines": 3}, ["3 spines", "divide"]),
    (spine_leaf_rail, {"servers": 9, "groups": 2}, ["9 servers", "2 groups"]),
    (spine_leaf_rail, {"servers": 0}, ["servers", ">= 1"]),
    (spine_leaf_rail, {"link_gbps": 0}, ["link_gbps"]),
    (pod_fat_tree, {"servers_per_group": 4, "spines_per_pod": 3}, ["3 spines"]),
    (pod_fat_tree, {"cores_per_group": 5}, ["5 cores"]),
    (pod_fat_tree, {"pods": 1.5}, ["pods", "integer"]),
])
def test_bad_sizes_name_the_parameter(build, kwargs, words):
    with pytest.raises(TopologyError) as err:
        build(**kwargs)
    for w in words:
        assert w in str(err.value)


def _args(argv):
    p = argparse.ArgumentParser()
    add_topology_options(p)
    return p.parse_args(argv)


def test_registry_builds_and_describes_the_seed_topologies():
    assert {"fat-tree", "spine-leaf-rail", "pod-fat-tree"} <= set(TOPOLOGIES)
    a = _args(["--topology", "spine-leaf-rail", "--servers", "4", "--spines", "2"])
    topo = build_topology(a)
    assert len(topo.hosts) == 32 and topo.meta["links_per_leaf_spine"] == 2
    d = describe_topology_args(a)
    assert d["kind"] == "spine-leaf-rail" and d["servers"] == 4 and d["spines"] == 2
    a = _args(["--topology", "pod-fat-tree", "--pods", "2", "--groups", "1", "--servers", "4",
               "--nics-per-server", "4"])
    topo = build_topology(a)
    assert len(topo.hosts) == 16 and topo.meta["servers_per_group"] == 2
    a = _args(["--topology", "pod-fat-tree", "--pods", "2", "--groups", "2", "--servers", "6"])
    with pytest.raises(TopologyError, match="does not split evenly"):
        build_topology(a)
    a = _args(["--k", "4"])                          # the fat-tree entry is unchanged
    assert len(build_topology(a).hosts) == 16
    assert describe_topology_args(a)["k"] == 4


def test_help_documents_the_options(capsys):
    parser, _ = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["sim", "--help"])
    out = capsys.readouterr().out
    for opt in ("spine-leaf-rail", "pod-fat-tree", "--servers", "--nics-per-server", "--groups",
                "--spines", "--pods", "--cores-per-group"):
        assert opt in out


def test_gse_sim_runs_on_the_rail_spine_leaf(capsys):
    rc = main(["sim", "--topology", "spine-leaf-rail", "--servers", "2", "--nics-per-server",
               "4", "--traffic", "permutation", "--size", "50000", "--quiet"])
    assert rc == 0
