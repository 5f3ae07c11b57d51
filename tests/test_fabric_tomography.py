"""Fabric mode: the control plane infers the dead links from all the leaves' suspected
paths (``plan_infer_links``; ``switchmodel.fabric_maxmin.infer_links``, greedy set cover
as boolean network tomography does) and every pair plans without the paths through them."""

import random

import pytest

from gse.config import ConfigError
from gse.runtimes.sim import faults
from switchmodel.fabric import FabricConfig
from switchmodel.fabric_maxmin import infer_links
from test_fabric_maxmin import US, _run
from topologies import fat_tree


def _path(leaf, agg, core, dst_agg, up=0, agg_port=2, core_port=2, down=0):
    return ((leaf, up), (agg, agg_port), (core, core_port), (dst_agg, down))


def test_one_dead_core_link_explains_several_pairs_suspected_paths():
    """Three source leaves in three pods each suspect their path through core c0's link
    down to pod B's aggregation switch aB (toward two leaves of pod B): the one link on
    all three is inferred, and it alone explains them."""
    suspected = [_path("L1", "a1", "c0", "aB", down=0), _path("L2", "a2", "c0", "aB", down=0),
                 _path("L3", "a3", "c0", "aB", down=1)]
    assert infer_links(suspected) == [("c0", 2)]
    # a second, unrelated loss (leaf L4's path through c1 to pod C) needs a second link
    suspected.append(_path("L4", "a4", "c1", "aC"))
    assert infer_links(suspected, [_path("L4", "a4", "c2", "aC", agg_port=3)]) == [
        ("a4", 2), ("c0", 2)]


def test_a_healthy_shared_uplink_is_not_inferred():
    """One leaf suspects its paths to two leaves of pod B, both through uplink (L1, 0) and
    aggregation a1's dead link up to core c0: the uplink and that link lie on both.  Its
    path through the same uplink and a1's other core link carries, so the uplink is not
    the culprit: a1's link is.  Without what carries, the tie goes to the least link,
    here the uplink (the tie-break is what tells them apart)."""
    suspected = [_path("L1", "a1", "c0", "aB", down=0), _path("L1", "a1", "c0", "aB", down=1)]
    working = [_path("L1", "a1", "c1", "aB", agg_port=3)]
    assert infer_links(suspected, working) == [("a1", 2)]
    assert infer_links(suspected) == [("L1", 0)]


def test_a_link_inferred_before_keeps_explaining_as_the_reports_expire():
    """Down link (c0, 2) was inferred; of the paths through it two reports are left, to
    leaf 0 and leaf 1 of pod B, beside one through c1 to leaf 0: aB's downlink to leaf 0
    lies on two of the three and would win the count, but the link inferred before
    still explains two, and with c1's link it covers all."""
    suspected = [_path("L1", "a1", "c0", "aB", down=0), _path("L2", "a2", "c0", "aB", down=1),
                 _path("L3", "a3", "c1", "aB", down=0)]
    assert infer_links(suspected) == [("L2", 0), ("aB", 0)]     # (the count alone)
    assert infer_links(suspected, prior=[("c0", 2)]) == [("L3", 0), ("c0", 2)]
    assert infer_links(suspected, [_path("L3", "a3", "c2", "aB", agg_port=3)],
                       [("c0", 2)]) == [("a3", 2), ("c0", 2)]


def test_the_inference_does_not_depend_on_the_order_of_the_reports():
    rng = random.Random(7)
    suspected = [_path("L%d" % i, "a%d" % (i % 3), "c%d" % (i % 4), "a%d" % (3 + i % 2))
                 for i in range(12)]
    working = [_path("L%d" % i, "a%d" % (i % 3), "c5", "a4", agg_port=5) for i in range(12)]
    want = infer_links(suspected, working)
    for _ in range(20):
        rng.shuffle(suspected)
        rng.shuffle(working)
        assert infer_links(suspected, working) == want
    assert infer_links([]) == []


def test_a_link_must_explain_enough_reports():
    """``least``: with three reports through (c0, 2) and one stray through (c1, 2), two
    reports at least infer the dead link only, four infer nothing (the stray and the
    three are left unexplained)."""
    suspected = [_path("L1", "a1", "c0", "aB", down=0), _path("L2", "a2", "c0", "aB", down=0),
                 _path("L3", "a3", "c0", "aB", down=1), _path("L4", "a4", "c1", "aC")]
    assert infer_links(suspected, least=2) == [("c0", 2)]
    assert infer_links(suspected, least=4) == []
    assert infer_links(suspected, prior=[("c1", 2)], least=4) == [("c1", 2)]


def test_plan_infer_links_is_a_setting():
    assert FabricConfig().plan_infer_links == 0
    assert FabricConfig(plan_infer_links=2, plan_infer_keep=True).plan_infer_keep is True
    for bad in (-1, 1.5):
        with pytest.raises(ConfigError, match="plan_infer_links"):
            FabricConfig(plan_infer_links=bad).validate()


@pytest.mark.parametrize("keep", [False, True])
def test_a_planned_run_infers_only_dead_links_and_loses_nothing(monkeypatch, keep):
    """k=4 Fat-Tree, a quarter of the aggregation-core links down, 1 ms detection: the
    links inferred from the leaves' reports while the traffic flows are all directions of
    links that are down, and nothing is lost."""
    seen = []
    inferred = faults.FaultInjector._inferred

    def spy(self, agents, live_of, now):
        dead = inferred(self, agents, live_of, now)
        down = {(pf.port.node, pf.port.port) for pfs in self.by_link.values()
                for pf in pfs if pf.down}
        seen.append((dead, down))
        return dead
    monkeypatch.setattr(faults.FaultInjector, "_inferred", spy)
    topo = fat_tree(4)
    res = _run(topo, ["tier:agg-core:25%@30us"], detect_ps=1000 * US, plan_weights="active",
               plan_pacing=0.9, plan_floor=True, plan_suspects_ps=5 * US,
               plan_infer_links=2, plan_infer_keep=keep)
    assert res.summary["lost"] == 0 and res.summary["fabric"]["plan_picks"] > 0
    assert any(dead for dead, _ in seen)
    assert all(dead <= down for dead, down in seen)


def test_a_link_that_carries_as_many_paths_as_it_lost_is_not_inferred():
    """aB's downlink to leaf 0 is on three suspected paths (two from L1, one from L2) and
    on three of L1's that carry: not dead, and c0's link, on two suspected paths and no
    carrying one, explains them.  With two of the three carrying paths gone, the
    downlink lost more than it carries and explains all three."""
    suspected = [_path("L1", "a1", "c0", "aB"), _path("L1", "a1", "c1", "aB", agg_port=3),
                 _path("L2", "a2", "c0", "aB")]
    working = [_path("L1", "a1", "c%d" % c, "aB", agg_port=2 + c) for c in (2, 3, 4)]
    assert infer_links(suspected, working, least=2) == [("c0", 2)]
    assert infer_links(suspected, working[:1], least=2) == [("aB", 0)]


@pytest.mark.parametrize("keep", [False, True])
def test_plan_suspects_keep_plans_without_a_reported_path_after_its_suspicion_expires(
        monkeypatch, keep):
    """1 ms detection, suspicions of 40 µs: with ``plan_suspects_keep`` the plan in force
    after a report expired still gives its path no weight (until the routes change);
    without it the reported paths come back into the plans."""
    told = []
    poll = faults.FaultInjector._poll_suspects
    reported = set()

    def remember(self, a, idx):
        agents = {sn.switch.node: sn.agent for sn in self.net.switches
                  if hasattr(getattr(sn, "agent", None), "set_plan")}
        now = self.net.eq.now
        if now < 1000 * US:
            reported.update(self._suspect_set(agents, now))
        poll(self, a, idx)
        for src, dst, k in sorted(reported):
            if now < 1000 * US and not agents[src]._suspected(dst, k, now):
                told.append(agents[src].plan.get(dst, {}).get(k, [0.0])[0])
    monkeypatch.setattr(faults.FaultInjector, "_poll_suspects", remember)
    topo = fat_tree(4)
    res = _run(topo, ["tier:agg-core:25%@30us"], detect_ps=1000 * US, plan_weights="active",
               plan_pacing=0.9, plan_floor=True, plan_suspects_ps=5 * US,
               path_suspect_ps=40 * US, plan_suspects_keep=keep)
    assert res.summary["lost"] == 0 and told
    assert (max(told) == 0.0) == keep
