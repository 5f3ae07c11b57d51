"""Fabric mode: the leaves plan among themselves before the routes change
(``plan_gossip_ps``, ``switchmodel.fabric_gossip``): each leaf tells the others its demand
and suspected paths, and each computes the max-min plan from what it heard."""

import pytest

from gse.config import ConfigError
from gse.runtimes.sim import faults
from switchmodel.fabric import FabricConfig
from test_fabric_maxmin import US, _run
from topologies import fat_tree

PLAN = dict(plan_weights="active", plan_pacing=0.9, plan_floor=True)


def test_without_failures_the_leaves_report_nothing():
    """No suspected path, no report, no plan: the run is the one without the option, to
    the picosecond."""
    topo = fat_tree(4)
    a = _run(topo, [], plan_gossip_ps=0, **PLAN)
    b = _run(topo, [], plan_gossip_ps=5 * US, **PLAN)
    assert [r.fct_ps() for r in a.records] == [r.fct_ps() for r in b.records]
    assert b.summary["fabric"]["gossip_bytes"] == 0
    assert b.summary["fabric"]["gossip_plans"] == 0


@pytest.mark.parametrize("flood", [True, False])
def test_the_leaves_plan_before_slow_detection_and_never_overfill_a_link(monkeypatch, flood):
    """k=4 Fat-Tree, a quarter of the aggregation-core links down at 10 us, 1 ms
    detection (after the traffic): without reports no plan is used before the routes
    change; with them the leaves plan from what they heard, every plan keeps each link
    within its capacity over the reported live paths, and nothing is lost."""
    topo = fat_tree(4)
    off = _run(topo, ["tier:agg-core:25%@10us"], detect_ps=1000 * US, plan_gossip_ps=0,
               **PLAN)
    assert off.summary["lost"] == 0 and off.summary["fabric"]["plan_picks"] == 0
    loads = []
    plan = faults.FaultInjector.plan

    def spy(self, reports):
        got = plan(self, reports)
        if got is not None:
            weights, rates = got
            demand = {(a, b): n for a, rep in reports for b, n, _ in rep}
            load = {}
            for (a, b), n in demand.items():
                paths = self.gossip_live.get((a, b), {})
                lost = dict((b2, k) for b2, _, k in dict(reports)[a])[b]
                live = {k: v for k, v in paths.items() if k not in lost}
                rate = rates.get(a, {}).get(b, 1.0)
                table = weights.get(a, {}).get(b) or ({next(iter(live)): 1.0} if live else {})
                for key, w in table.items():
                    assert key in live, "a suspected path got weight"
                    for link in live[key]:
                        load[link] = load.get(link, 0.0) + n * rate * w
            loads.append(max(load.values(), default=0.0))
        return got
    monkeypatch.setattr(faults.FaultInjector, "plan", spy)
    on = _run(topo, ["tier:agg-core:25%@10us"], detect_ps=1000 * US, plan_gossip_ps=5 * US,
              plan_gossip_flood=flood, **PLAN)
    fab = on.summary["fabric"]
    assert on.summary["lost"] == 0 and on.summary["completed"] == len(on.records)
    assert fab["gossip_plans"] > 0 and fab["plan_picks"] > 0 and fab["gossip_bytes"] > 0
    assert loads and max(loads) <= 1.0 + 1e-6


def test_plan_gossip_settings_are_checked():
    with pytest.raises(ConfigError):
        FabricConfig(plan_gossip_ps=-1).validate()
    with pytest.raises(ConfigError):
        FabricConfig(plan_gossip_lag_ps=-1).validate()
    with pytest.raises(ConfigError):
        FabricConfig(gossip_suspect_ps=0).validate()


class _Planner:
    plan_routed_once = False

    def plan(self, reports):
        return None


@pytest.mark.parametrize("gossip", [False, True])
def test_while_reporting_a_trimmed_packets_nack_clears_no_suspicion(gossip):
    """A trimmed packet's NACK names it alone; the packets below it that it does not name
    may be lost on a dead path.  Without the reports the source leaf reads them as
    delivered and clears their paths' suspicion; while it reports (the reports feed every
    leaf's plan) it keeps the suspicion."""
    from test_fabric_recovery import granted_burst, leaf
    from test_fabric_leaf import D, S, take
    from gse.wire.codec import decode, encode
    from gse.wire.packet import NACK
    kw = dict(trim=True, plan_gossip_ps=5 * US if gossip else 0)
    s, d = leaf(S, **kw), leaf(D, **kw)
    if gossip:
        s.set_gossip(_Planner())
        d.set_gossip(_Planner())
    sent = granted_burst(s, d, 8)
    t = 10 * US
    key = s.sent_bufs[2].sent[2].path                       # seq 2's path, suspected
    s._suspect(D, key, -1, t)                               # since before anything sent
    header = decode(encode(sent[4][1]))                     # seq 5 trimmed on a spine
    header.trim()
    d.receive(header, 2, t + 1 * US)
    (_, nack), = take(d, NACK)
    assert nack.sack_bits == 1 << 4 and nack.credit == 5   # seq 1-4 not named
    s.receive(nack, 2, t + 2 * US)
    assert s._suspected(D, key, t + 3 * US) == gossip


@pytest.mark.parametrize("routed", [False, True])
def test_while_reporting_a_suspicion_lasts_gossip_suspect_ps(routed):
    """Without a planner (no fault injector: incasts, the UDP and Mininet runtimes) and
    once the routes changed, a path is suspected for ``path_suspect_ps``; while the leaves
    report, for ``gossip_suspect_ps`` (past the routing's detection)."""
    from test_fabric_leaf import D, S
    from test_fabric_recovery import leaf
    kw = dict(path_suspect_ps=500 * US, gossip_suspect_ps=2000 * US)
    plain, reporting = leaf(S, **kw), leaf(S, **kw)
    planner = _Planner()
    planner.plan_routed_once = routed
    reporting.set_gossip(planner)
    assert plain.gossip is None and reporting.gossip is planner
    t = 10 * US
    for s in (plain, reporting):
        s._suspect(D, 7, -1, t)
    assert plain._suspected(D, 7, t + 499 * US) and not plain._suspected(D, 7, t + 500 * US)
    assert reporting._suspected(D, 7, t + 499 * US)
    assert reporting._suspected(D, 7, t + 1999 * US) != routed


def test_an_incast_that_trims_is_unchanged_by_the_leaves_plan():
    """No failure, no fault injector: the trims of an incast (4 KiB fabric queues, no ECN)
    give the leaves suspicions, but no planner, so no report, and suspicions last
    ``path_suspect_ps``: the run is the one with the option off, to the picosecond."""
    import random

    from gse.runtimes.sim.run import run_simulation
    from gse.workloads.traffic import incast
    topo = fat_tree(4)
    msgs = incast(len(topo.hosts), 12, 300_000, random.Random(3))
    kw = dict(queue_bytes=4096, ecn_bytes=0)
    runs = [run_simulation(topo, msgs, "gse-fabric", FabricConfig(plan_gossip_ps=g, **kw), 3)
            for g in (0, 5 * US)]
    off, on = runs
    assert on.summary["trims"] > 0 and on.summary["fabric"]["paths_suspected"] > 0
    assert [r.fct_ps() for r in off.records] == [r.fct_ps() for r in on.records]
    assert on.summary["fabric"]["gossip_bytes"] == 0 == on.summary["fabric"]["gossip_plans"]
