"""Fabric mode: the control plane's per-pair path weights and rates (``plan_weights``,
``plan_pacing``; ``switchmodel.fabric_maxmin``): the greedy max-min split, the paths it
is computed over, the leaf's weighted spray, and a run through failures."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_fabric_leaf import UP, D, S, US
from test_fabric_recovery import granted_burst, leaf

from gse.config import ConfigError
from gse.runtimes.sim.fabric_nodes import fabric_summary
from gse.runtimes.sim.run import run_simulation
from gse.workloads.faults import build_schedule
from gse.workloads.traffic import permutation
from switchmodel.fabric import Demand, FabricConfig
from switchmodel.fabric_maxmin import pair_paths, split_maxmin
from test_failure_properties import check, schedules, workloads
from topologies import fat_tree


def test_a_pair_with_a_choice_keeps_off_the_link_another_pair_must_use():
    """A has one path, over link x; B may take x or y.  Even spraying would give A and B
    half of x each (A at 0.5+); the split puts B on y and both reach their line rate."""
    (wa,), (wb_x, wb_y) = split_maxmin([(1, [("x",)]), (1, [("x",), ("y",)])])[0]
    assert wa == 1.0 and wb_x == pytest.approx(0.0) and wb_y == pytest.approx(1.0)
    _, rates = split_maxmin([(1, [("x",)]), (1, [("x",), ("y",)])])
    assert rates == [pytest.approx(1.0), pytest.approx(1.0)]


def test_max_min_rates_share_a_bottleneck_and_weights_follow_spare_capacity():
    """Three flows of one host each on link x (the only path of two of them), the third
    also on y: x is shared by the two at 1/2 each, the third goes to y at 1."""
    weights, rates = split_maxmin([(1, [("x",)]), (1, [("x",)]), (1, [("x",), ("y",)])])
    assert rates == [pytest.approx(0.5), pytest.approx(0.5), pytest.approx(1.0)]
    assert weights[2] == [pytest.approx(0.0), pytest.approx(1.0)]
    # a count of 2 (two hosts' flows between the same leaves) takes twice the capacity
    _, rates = split_maxmin([(2, [("x",)]), (1, [("x",)])])
    assert rates == [pytest.approx(1 / 3, abs=1 / 64), pytest.approx(1 / 3, abs=1 / 64)]


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2 ** 32), st.integers(2, 12))
def test_the_split_never_overfills_a_link(seed, n):
    rng = random.Random(seed)
    links = ["l%d" % i for i in range(6)]
    flows = [(rng.randint(1, 3), [tuple(rng.sample(links, rng.randint(1, 3)))
                                  for _ in range(rng.randint(1, 4))]) for _ in range(n)]
    weights, rates = split_maxmin(flows)
    load = {}
    for (count, paths), ws, r in zip(flows, weights, rates):
        assert sum(ws) == pytest.approx(1.0) and 0 <= r <= 1
        for path, w in zip(paths, ws):
            for link in path:
                load[link] = load.get(link, 0.0) + count * r * w
    assert max(load.values()) <= 1.0 + 1e-6


def test_split_rejects_a_bad_step():
    with pytest.raises(ValueError, match="step"):
        split_maxmin([], step=0)


def test_pair_paths_follow_the_switches_routes_around_a_dead_core_link():
    """k=8 Fat-Tree: 16 paths between pods, (uplink, choice) each through one core; with
    one aggregation-to-core link gone from the tables, 15 remain, none through it."""
    topo = fat_tree(8)
    tables = {s: [list(r) for r in topo.next_hops[s]] for s in topo.switches}
    edge = {h: topo.peer(h, 0)[0] for h in topo.hosts}
    src, dst = edge[0], edge[len(topo.hosts) - 1]

    def hops_of(node, host):
        return tables[node][host]

    def peer(node, port):
        return topo.peer(node, port)[0]

    paths = pair_paths(src, dst, len(topo.hosts) - 1, hops_of, peer, 4)
    assert len(paths) == 16 and len({links[2] for links in paths.values()}) == 16
    far = len(topo.hosts) - 1
    agg = peer(src, tables[src][far][0])
    dead = tables[agg][far][0]                        # agg's first link up, toward dst
    for h in topo.hosts:
        if dead in tables[agg][h] and len(tables[agg][h]) > 1:
            tables[agg][h].remove(dead)
    paths = pair_paths(src, dst, len(topo.hosts) - 1, hops_of, peer, 4)
    assert len(paths) == 15 and all((agg, dead) not in links for links in paths.values())


@pytest.mark.parametrize("planned", [False, True])
def test_the_leaf_sprays_by_the_told_weights_and_skips_suspected_paths(planned):
    """The test that fails without the mechanism: told 3:1 for UP[0]:UP[1], S's 32 packets
    to D go 24 and 8 (smooth weighted round robin); a suspected UP[0] takes nothing; a
    leaf told nothing sprays 16 and 16."""
    s, d = leaf(S, plan_weights="active"), leaf(D)
    if planned:
        s.set_plan({D: {UP[0] * 256: 0.75, UP[1] * 256: 0.25}})
    sent = []
    for i in range(4):
        sent += granted_burst(s, d, 8, now=(20 * i) * US)
    on = {port: sum(1 for p, _ in sent if p == port) for port in UP}
    assert on == ({UP[0]: 24, UP[1]: 8} if planned else {UP[0]: 16, UP[1]: 16})
    assert (s.plan_picks >= 32) if planned else s.plan_picks == 0   # (+ control packets)
    if planned:
        s.suspects[D] = {UP[0] * 256: (10_000 * US, 0)}
        again = granted_burst(s, d, 8, now=100 * US)
        assert all(p == UP[1] for p, _ in again)


def test_plan_pacing_paces_a_pair_at_its_rate():
    """Told a rate of 0.5 (``plan_pacing`` 1), S paces its VOQ toward D at half the line
    rate (share pacing's hold: the burst is not all sent at once); with ``plan_pacing``
    0 the rate is not taken."""
    s, d = leaf(S, plan_weights="active", plan_pacing=1.0), leaf(D)
    s.set_plan({D: {UP[0] * 256: 0.5, UP[1] * 256: 0.5}}, {D: 0.5})
    assert s.plan_rates == {D: 0.5} and s._path_share(2, D, 0) == 0.5
    s.widths = {2: (4, 4)}                    # (share pacing applies after a route change)
    with pytest.raises(AssertionError):       # held: fewer than 8 sprayed at once
        granted_burst(s, d, 8)
    assert s.share_holds > 0
    off = leaf(S, plan_weights="active", plan_pacing=0)
    off.set_plan({D: {UP[0] * 256: 0.5, UP[1] * 256: 0.5}}, {D: 0.5})
    assert off.plan_rates is None and not off.share_pacing


def test_plan_settings_are_checked():
    for kw in (dict(plan_weights="some"), dict(plan_step=0), dict(plan_step=2),
               dict(plan_pacing=-1)):
        with pytest.raises(ConfigError):
            FabricConfig(**kw).validate()
    FabricConfig(plan_weights="all", plan_step=0.5, plan_pacing=0.9).validate()


def _run(topo, specs, seed=1, detect_ps=10 * US, **kw):
    msgs = permutation(len(topo.hosts), 500_000, random.Random(seed))
    res = run_simulation(topo, msgs, "gse-fabric", FabricConfig(**kw), seed,
                         faults=build_schedule(topo, specs, seed=seed), detect_ps=detect_ps)
    fabric_summary(res.network, res.summary)
    return res


@pytest.mark.parametrize("mode", ["active", "all"])
def test_a_run_through_failures_is_planned_and_loses_nothing(mode):
    topo = fat_tree(4)
    res = _run(topo, ["tier:agg-core:25%@30us"], plan_weights=mode, plan_pacing=0.9,
               plan_floor=True)
    s = res.summary
    assert s["lost"] == 0 and s["completed"] == len(res.records)
    assert s["fabric"]["plan_sets"] > 0 and s["fabric"]["plan_picks"] > 0


def test_without_failures_the_plan_changes_nothing():
    """No route change, no plan: the run is the default's, to the picosecond."""
    topo = fat_tree(4)
    a = _run(topo, [], plan_weights="", plan_pacing=0, plan_floor=False, plan_suspects_ps=0)
    b = _run(topo, [], plan_weights="active", plan_pacing=0.9, plan_suspects_ps=5 * US)
    assert [r.fct_ps() for r in a.records] == [r.fct_ps() for r in b.records]
    assert b.summary["fabric"]["plan_sets"] == 0


@settings(max_examples=15, deadline=None)
@given(workloads(), schedules(), st.sampled_from([0, 10 * US, 100 * US]), st.integers(0, 1000))
def test_planned_fabric_mode_delivers_everything_through_any_connected_schedule(
        msgs, specs, detect, seed):
    check("gse-fabric", FabricConfig(plan_weights="active", plan_pacing=0.9, plan_floor=True),
          msgs, specs, detect, seed)


@pytest.mark.parametrize("floor", [False, True])
def test_plan_floor_keeps_the_ecn_response_at_the_planned_rate(floor):
    """Every window marked: the downlink's pacer falls to ``pacer_min_fraction`` (0.4),
    or with ``plan_floor`` stops at the planned rate of the flow it serves (0.7 times
    ``plan_pacing`` 0.9); a downlink serving nobody keeps the configured floor."""
    d = leaf(D, plan_weights="active", plan_pacing=0.9, plan_floor=floor)
    d.set_plan({}, {}, {S: 0.7})
    dl = d.downlinks[2]
    dl.active.append(Demand(S, 0, 0))
    for i in range(20):
        dl.rx = dl.ce = 8
        d._pacer_window(dl, (i + 1) * d.cfg.pacer_window_ps)
    assert dl.scale == pytest.approx(0.63 if floor else 0.4)
    dl.active.clear()
    assert d._plan_floor(dl) == 0.0 if floor else d.plan_inbound is None


@pytest.mark.parametrize("every", [True, False])
def test_plan_pace_all_decides_whether_a_pair_at_line_rate_is_paced(every):
    s = leaf(S, plan_weights="active", plan_pacing=0.9, plan_pace_all=every)
    s.set_plan({}, {D: 1.0, 12: 0.5})
    assert s.plan_rates == {D: pytest.approx(0.9 if every else 1.0), 12: pytest.approx(0.45)}


def test_after_a_restore_the_plan_paces_nothing():
    """Links fail and come back: the plan told at the restore has no bottleneck, so no
    leaf keeps pacing its pairs (``plan_pace_all`` would otherwise pace every pair at 0.9
    for good) nor a floor."""
    topo = fat_tree(4)
    res = _run(topo, ["tier:agg-core:25%@30us,restore=60us"], plan_weights="active",
               plan_pacing=0.9, plan_floor=True)
    assert res.summary["lost"] == 0 and res.summary["fabric"]["plan_sets"] >= 2 * 8
    leaves = [sn.agent for sn in res.network.switches
              if hasattr(getattr(sn, "agent", None), "set_plan")]
    assert len(leaves) == 8
    assert all(not a.plan_rates and not a.plan_inbound for a in leaves)


@pytest.mark.parametrize("poll", [0, 5 * US])
def test_plan_suspects_ps_plans_before_the_routes_change(poll):
    """1 ms detection: the route change (and its plan) comes after the traffic, so
    without polling (and without the leaves' own plan, ``plan_gossip_ps``, on by default)
    no packet is sprayed by a plan; polling the leaves' suspected paths plans while the
    traffic flows, and nothing is lost."""
    topo = fat_tree(4)
    res = _run(topo, ["tier:agg-core:25%@30us"], detect_ps=1000 * US, plan_weights="active",
               plan_pacing=0.9, plan_floor=True, plan_suspects_ps=poll, plan_gossip_ps=0)
    assert res.summary["lost"] == 0
    assert max(r.finish_ps for r in res.records) < 1000 * US
    assert (res.summary["fabric"]["plan_picks"] > 0) == bool(poll)


@settings(max_examples=15, deadline=None)
@given(workloads(), schedules(), st.sampled_from([10 * US, 1000 * US]), st.integers(0, 1000))
def test_plan_from_suspects_delivers_everything_through_any_connected_schedule(
        msgs, specs, detect, seed):
    check("gse-fabric", FabricConfig(plan_weights="active", plan_pacing=0.9, plan_floor=True,
                                     plan_suspects_ps=5 * US), msgs, specs, detect, seed)
