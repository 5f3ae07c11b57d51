"""Failures in the simulation (gse.runtimes.sim.faults): what a dead link does to the
packets on it, when the switches route around it, PFC pauses across it, gray failures,
and how each protocol recovers.  Timing is asserted on the virtual clock only."""

import random

import pytest

from gse.config import GseConfig, RoceConfig
from gse.runtimes.sim.run import build_network, run_simulation
from gse.workloads.faults import build_schedule
from gse.workloads.traffic import Message, incast, permutation
from switchmodel.fabric import FabricConfig
from topologies import fat_tree

US = 1_000_000
K4 = fat_tree(4)
CONFIGS = {"gse": GseConfig, "roce": RoceConfig, "gse-fabric": FabricConfig}


def run(protocol, msgs, specs, detect_ps, seed=1, topo=K4, **cfg):
    sched = build_schedule(topo, specs, seed=seed)
    return run_simulation(topo, msgs, protocol, CONFIGS[protocol](**cfg), seed,
                          faults=sched, detect_ps=detect_ps, until_ps=200_000 * US)


def cross_pod(size=2_000_000):
    """Every host of pod 0 sends to pod 3: all of it crosses the core."""
    return [Message(i + 1, i, 12 + i, size) for i in range(4)]


def test_dead_link_loses_what_is_on_it_and_black_holes_until_detected():
    msgs = cross_pod()
    slow = run("gse", msgs, ["link:agg0_0-core0@50us"], 500 * US).summary["failures"]
    fast = run("gse", msgs, ["link:agg0_0-core0@50us"], 5 * US).summary["failures"]
    for f in (slow, fast):
        e = f["entries"][0]
        assert e["in_flight"] + e["queued"] > 0 and e["lost_on_link"] == (
            e["in_flight"] + e["queued"])
        assert e["affected_messages"] > 0 and e["affected_unfinished"] == 0
        assert e["retransmitted"] >= e["data_packets_lost"] > 0
    assert slow["entries"][0]["black_holed"] > fast["entries"][0]["black_holed"]
    assert fast["entries"][0]["detected_us"] == [55.0]
    assert slow["entries"][0]["route_changes"] == fast["entries"][0]["route_changes"] > 0


def test_switches_route_around_after_detection_and_back_after_restore():
    sched = build_schedule(K4, ["link:agg0_0-core0@10us,restore=60us"])
    from gse.runtimes.sim.faults import FaultInjector
    net = build_network(K4, "gse", GseConfig(), 1)
    FaultInjector(net, sched, 20 * US, 1)
    agg = K4.node_id("agg0_0")
    (li,) = sched.entries[0].links
    port = K4.nodes[agg].ports.index(li)
    switch = next(sn.switch for sn in net.switches if sn.switch.node == agg)
    assert port in switch.next_hops[15]
    net.run(29 * US)
    assert port in switch.next_hops[15]                 # down, not yet learnt
    net.run(31 * US)
    assert port not in switch.next_hops[15] and switch.next_hops[15]
    net.run(79 * US)
    assert port not in switch.next_hops[15]             # up, not yet learnt
    net.run(81 * US)
    assert [list(r) for r in switch.next_hops] == [list(r) for r in K4.next_hops[agg]]


def test_gray_failure_drops_a_share_and_is_never_routed_around():
    msgs = cross_pod(500_000)
    r = run("gse", msgs, ["tier:agg-core:8@0us,gray=5%"], 10 * US)
    e = r.summary["failures"]["entries"][0]
    assert r.summary["lost"] == 0
    assert e["gray"] > 0 and e["black_holed"] == e["in_flight"] == e["queued"] == 0
    assert e["route_changes"] == 0 and e["detected_us"] == []


@pytest.mark.parametrize("protocol", ["gse", "roce", "gse-fabric"])
def test_switch_failure_and_flapping_links_lose_no_message(protocol):
    msgs = permutation(16, 300_000, random.Random(4))
    r = run(protocol, msgs, ["switch:agg1_0@20us,restore=400us",
                             "link:agg2_1-core3@10us,flap=20us/30us,until=300us"], 10 * US)
    s = r.summary
    assert s["lost"] == 0 and s["completed"] == len(msgs)
    entries = s["failures"]["entries"]
    assert len(entries[0]["links"]) == 4 and len(entries[1]["detected_us"]) == 12


def test_roce_flow_on_a_dead_path_waits_for_the_reroute_and_goes_back_n():
    """RoCE's per-flow ECMP keeps a flow on its path: black-holed until the switches learn
    (1 ms), then go-back-N from the first lost packet.  GSE steers around at once."""
    msgs = cross_pod(1_000_000)
    specs = ["switch:agg0_0@50us"]                  # half of pod 0's way out
    roce = run("roce", msgs, specs, 1000 * US)
    s = roce.summary
    assert s["lost"] == 0
    e = s["failures"]["entries"][0]
    assert e["black_holed"] > 0 and e["retransmitted"] > 0
    # a flow hashed through agg0_0 ends only after the switches learnt (50 + 1000 us)
    assert max(r.finish_ps for r in roce.records) > 1050 * US
    gse = run("gse", msgs, specs, 1000 * US)
    assert gse.summary["lost"] == 0
    assert max(r.finish_ps for r in gse.records) < 1050 * US   # before anyone rerouted


def test_pfc_pause_across_a_dead_link_is_released():
    """An incast fills the receiver's edge switch, which pauses its aggregation switches;
    when a paused link dies its pause is released instead of waiting for a RESUME."""
    msgs = incast(16, 12, 400_000, random.Random(2), receiver=0)
    clean = run("roce", msgs, [], 10 * US).summary
    assert clean["pfc_pauses"] > 0
    r = run("roce", msgs, ["link:edge0_0-agg0_0@30us,restore=200us"], 10 * US)
    e = r.summary["failures"]["entries"][0]
    assert r.summary["lost"] == 0
    assert e["pauses_released"] > 0


def test_gse_sender_suspects_paths_that_drop_silently():
    """No detection at all: the sender learns from its own losses which entropies die."""
    msgs = cross_pod(1_000_000)
    sched = build_schedule(K4, ["link:agg0_0-core0@20us", "link:agg0_1-core2@20us"])
    from gse.runtimes.sim.faults import FaultInjector
    net = build_network(K4, "gse", GseConfig(), 1)
    FaultInjector(net, sched, -1, 1)
    net.schedule(msgs)
    net.run(120 * US)
    suspected = [m.entropy.n_suspected(net.eq.now) for h in net.hosts[:4]
                 for m in h.agent.out.values()]
    assert suspected and all(n > 0 for n in suspected)
    net.run(100_000 * US)
    assert len(net.records) == len(msgs)


def test_failure_free_schedule_changes_nothing():
    msgs = permutation(16, 300_000, random.Random(6))
    plain = run_simulation(K4, msgs, "gse", GseConfig(), 1)
    sched = build_schedule(K4, ["link:agg0_0-core0@900ms"])    # after the run
    with_faults = run_simulation(K4, msgs, "gse", GseConfig(), 1, faults=sched,
                                 until_ps=800_000 * US)
    assert [r[:5] for r in plain.per_message()] == [r[:5] for r in with_faults.per_message()]
