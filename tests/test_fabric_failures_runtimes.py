"""Fabric mode (``gse-fabric``) with links failing mid-run over real sockets: the UDP
runtime in one process (loopback) and its Mininet twin (issue 28, part 2).

What the UDP leaves must share with the simulation's for a failure to mean the same:
their ``spine_fanout`` comes from the topology (so a dead aggregation-to-core link is one
path of an uplink, not the whole uplink), and a route update rewrites the leaves' rows of
an extended table (a leaf is routed as its first host) and restarts the containers of the
leaf's VOQs, as ``gse.runtimes.sim.faults`` does.  Then, with leaf recovery on (the
default, ``UDP_FABRIC``; its timers in packet times of the slow links, ``udp_profile``)
and off: every message delivered exactly once and intact, the
leaves hold nothing at the end.  Delivery and correctness only, never wall-clock speed.
"""

import random

import pytest

from harness import received_by_agents
from gse.config import PS_PER_US, ConfigError
from gse.protocols import default_config
from gse.runtimes.mininet.environment import mininet_unavailable
from gse.runtimes.udp import dataplane
from gse.runtimes.udp.config import (PACKET_TIME_FLOORS, UDP_FABRIC, UDP_TIMERS, packet_time_ps,
                                     slowest_link_gbps, check_node_config, loopback_addresses,
                                     node_configs, udp_profile)
from gse.runtimes.udp.fabric import LeafDriver
from gse.runtimes.udp.faults import RouteUpdates, leaf_rows
from gse.runtimes.udp.network import run_udp
from gse.runtimes.udp.node import SwitchDriver
from gse.workloads.faults import build_schedule
from gse.workloads.traffic import permutation
from switchmodel.fabric import FabricLeaf, FabricSpine
from switchmodel.fabric_plan import attachments, extended_routes, spine_fanout
from switchmodel.switch import Switch
from topologies import fat_tree

MS = 1000 * PS_PER_US
REASON = mininet_unavailable()


def fabric_config(recovery, gbps):
    cfg = udp_profile(default_config("gse-fabric"), link_gbps=gbps)
    cfg.set("leaf_recovery", recovery)
    cfg.validate()
    return cfg


def test_udp_profile_puts_the_leaves_timers_in_packet_times_of_a_slow_link():
    """At Mininet's calibration rate one packet takes 13 ms per hop: a leaf RTO of 20 ms
    would resend what is merely queued.  ``udp_profile`` raises fabric mode's timers to
    packet times of the slowest link, leaves fast links' and other protocols' as they are,
    and never touches what the user set."""
    fast = udp_profile(default_config("gse-fabric"), link_gbps=100.0)
    plain = udp_profile(default_config("gse-fabric"))
    assert fast.leaf_recovery and all(
        getattr(fast, n) == getattr(plain, n) == UDP_TIMERS[n] for n in PACKET_TIME_FLOORS)
    slow = udp_profile(default_config("gse-fabric"), keep={"leaf_nack_timeout_ps"},
                       link_gbps=0.0025)
    pkt = packet_time_ps(slow, 0.0025)
    assert pkt == (4096 + 64) * 8 * 400 * 1000                 # 13.3 ms
    for name, packets in PACKET_TIME_FLOORS.items():
        kept = getattr(default_config("gse-fabric"), name)        # the user's own value
        want = kept if name == "leaf_nack_timeout_ps" else packets * pkt
        assert getattr(slow, name) == want, name
    assert slow.rto_ps > slow.leaf_repair_timeout_ps > slow.leaf_rto_ps
    assert slow.rto_max_ps >= 8 * slow.rto_ps
    gse = udp_profile(default_config("gse"), link_gbps=0.0025)    # no leaves: unchanged
    assert gse.rto_ps == UDP_TIMERS["rto_ps"]
    topo = fat_tree(4, link_gbps=0.5)
    assert slowest_link_gbps(topo) == 0.5
    with pytest.raises(ConfigError, match="link rate"):
        packet_time_ps(slow, 0)


def test_udp_leaves_take_spine_fanout_from_the_topology():
    topo = fat_tree(4)
    confs = node_configs(topo, [], "gse-fabric", fabric_config(False, 100.0),
                         address_of=loopback_addresses(topo))
    leaf_of, leaves = attachments(topo)
    tables = extended_routes(topo, leaf_of, leaves)
    for leaf in leaves:
        fab = confs[leaf]["fabric"]
        assert fab["spine_fanout"] == spine_fanout(topo, leaf, tables) == 2   # k/2


def test_udp_leaves_learn_the_live_paths_beyond_their_uplinks_as_the_simulation():
    """A dead aggregation-to-core link: the leaves learn (``width_updates``, at the
    detection time) that one uplink's switch keeps one of its two paths toward the far
    pods, as ``gse.runtimes.sim.faults`` tells the simulation's leaves."""
    topo = fat_tree(4)
    sched = build_schedule(topo, ["link:agg0_0-core0@5ms"])
    confs = node_configs(topo, [], "gse-fabric", fabric_config(True, 100.0),
                         address_of=loopback_addresses(topo), faults=sched,
                         detect_ps=10 * MS)
    leaf_of, leaves = attachments(topo)
    told = {leaf: confs[leaf]["fabric"].get("width_updates") for leaf in leaves}
    assert all(told.values())                      # every leaf has a path through it
    for leaf, updates in told.items():
        assert [t for t, _ in updates] == [15 * MS]
        for host, widths in updates[0][1]:         # toward the other pods only
            assert (leaf_of[host] - 16) // 2 != (leaf - 16) // 2 and sorted(widths) == [1, 2]
    for c in confs:
        check_node_config(c, "%s.json" % c["name"])


def test_udp_route_update_rewrites_leaf_rows_and_restarts_containers():
    """``RouteUpdates.apply`` as ``_route_event``: the first host's row is its leaf's too
    (except at that leaf itself), and every VOQ starts a new container."""
    topo = fat_tree(4)
    confs = node_configs(topo, [], "gse-fabric", fabric_config(True, 100.0),
                         address_of=loopback_addresses(topo))
    leaf_of, leaves = attachments(topo)
    me = leaves[0]
    rows = leaf_rows(confs[me])
    assert rows == {h: [leaf] for h, leaf in enumerate(leaf_of) if h % 2 == 0}
    tables = extended_routes(topo, leaf_of, leaves)

    sw = Switch(me, "edge0_0", tables[me], 7, "spray")
    host_ports = {h: p for p, h in enumerate(h for h in range(len(leaf_of))
                                               if leaf_of[h] == me)}
    agent = FabricLeaf(me, default_config("gse-fabric"), sw, host_ports,
                       {h: 100 for h in host_ports}, leaf_of, 2)

    class Voq:
        cont_left = 3

    agent.voqs = {5: Voq()}
    ru = RouteUpdates(sw, rows, agent)
    far = 4                                   # the first host of another leaf
    ru.apply(0, [[far, [2]], [0, [0]]])       # host 0 hangs off this very leaf
    assert tuple(sw.next_hops[far]) == (2,) and tuple(sw.next_hops[leaf_of[far]]) == (2,)
    assert tuple(sw.next_hops[me]) == tuple(tables[me][me])   # no row to itself
    assert agent.voqs[5].cont_left == 0
    assert (ru.applied, ru.entries) == (1, 2)


@pytest.mark.parametrize("recovery", [False, True])
def test_udp_fabric_links_fail_mid_run_every_message_once_and_intact(recovery):
    topo = fat_tree(4, link_gbps=0.1)
    msgs = permutation(16, 200_000, random.Random(2))     # ~17 ms of sending each
    # a core link, a whole aggregation switch (the leaves' own uplinks: their rows
    # change), and a gray core link
    specs = ["link:agg0_0-core0@5ms", "switch:agg2_1@6ms,restore=60ms",
             "link:agg3_0-core1@2ms,gray=5%"]
    sched = build_schedule(topo, specs)
    result = run_udp(topo, msgs, "gse-fabric", fabric_config(recovery, 0.1), seed=1,
                     timeout_s=90.0, faults=sched, detect_ps=10 * MS)
    s = result.summary
    u = s["udp"]
    assert u["end"] == "done" and s["lost"] == 0, u
    assert s["delivered"] == s["completed"] == len(msgs)
    assert u["duplicate_deliveries"] == 0 and u["payload_errors"] == 0
    assert u["errors"] == [] and u["agent_errors"] == 0 and u["malformed_total"] == 0
    got = sorted((src, mid) for h in result.network.hosts for src, mid in h.delivered)
    assert got == sorted((m.src, m.msg_id) for m in msgs)
    f = s["fabric"]
    assert f["leaves"] == 8 and f["leaves_idle"] == 8, f     # nothing held at the end
    assert f["voqs_live"] == 0 and f["bad_frames"] == 0 and f["sent_buffers_live"] == 0
    fails = s["failures"]
    assert fails["route_updates"] > 0
    leaves = [n for n in result.network.nodes if isinstance(n, LeafDriver)]
    assert {n.agent.spine_fanout for n in leaves} == {2}
    # the leaves under agg2_1 learnt of it: their rows (and the leaf rows) changed
    assert any(n.route_updates is not None and n.route_updates.applied for n in leaves)
    if recovery:                                  # ... and the paths left beyond uplinks
        assert any(n.agent.widths for n in leaves)
    # the spines and cores whose own links did not fail forward on the compiled data
    # plane, route updates and all; those of the failing links stay on Python
    spines = [n for n in result.network.nodes if isinstance(n, SwitchDriver)]
    assert len(spines) == 12 and all(type(n.switch) is FabricSpine for n in spines)
    for n in spines:
        plain = dataplane.enabled() and all(p.fault is None for p in n.ports)
        assert (n.plane is not None) == plain, n.name
    moved = [n for n in spines if n.plane is not None and n.route_updates is not None
             and n.route_updates.applied]
    assert bool(moved) == dataplane.enabled()
    assert u["dataplane_switches"] == sum(1 for n in spines if n.plane is not None)


@pytest.mark.skipif(REASON is not None, reason="Mininet: %s" % REASON)
@pytest.mark.parametrize("recovery", [UDP_FABRIC["leaf_recovery"],
                                      not UDP_FABRIC["leaf_recovery"]])
def test_mininet_fabric_core_switch_down_every_message_once_and_intact(tmp_path, recovery):
    """The twin of ``tests/test_mininet_failures.py`` in fabric mode: a core switch's
    links go down (``ip link set``) once it has forwarded some traffic; the switches
    learn of it later."""
    from gse.runtimes.mininet.run import run_mininet
    from mininet_calibration import GBPS, timeout_s
    topo = fat_tree(4, link_gbps=GBPS)
    msgs = permutation(16, 120_000, random.Random(3))
    sched = build_schedule(topo, ["switch:core0@0ms"], after_packets=20)
    cfg = fabric_config(recovery, GBPS)     # the leaves' timers in packet times of GBPS
    detect = 2000 * MS
    bound = timeout_s(topo, msgs, "gse-fabric", cfg, sched, detect)
    res = run_mininet(topo, msgs, "gse-fabric", cfg, seed=1, timeout_s=bound,
                      out_dir=str(tmp_path), faults=sched, detect_ps=detect)
    s = res.summary
    mn = s["mininet"]
    assert mn["end"] == "done", (bound, mn)
    assert mn["exit_codes"] == {"0": 36} and mn["missing_outputs"] == []
    assert mn["left_behind"] == {} and mn["fabric_errors"] == []
    assert s["failures"]["trigger"]["fired_us"] is not None
    assert s["messages"] == s["delivered"] == len(msgs) and s["lost"] == 0
    udp = s["udp"]
    for key in ("duplicate_deliveries", "payload_errors", "malformed_total", "agent_errors"):
        assert udp[key] == 0, (key, udp)
    # the spines and cores forward in C in their agents (GSE_DATAPLANE is inherited),
    # but for core0 and the four aggregation switches of its links: 12 - 5
    assert udp["dataplane_switches"] == (7 if dataplane.enabled() else 0), udp
    assert received_by_agents(tmp_path / "agents") == sorted(
        (m.src, m.msg_id, m.size) for m in msgs)
