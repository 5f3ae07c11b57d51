"""Fault schedules as data (gse.workloads.faults) and routes after failures
(topologies.routing): parsing, errors that name the entry, events in order, and routes
recomputed only where they change."""

import random

import pytest

from gse.workloads.faults import (DOWN, GRAY, NEVER, UP, FaultError, FaultSchedule,
                                  build_schedule, parse_fault, parse_time_ps, read_fault_file)
from topologies import fat_tree
from topologies.routing import Routes, hosts_connected

K4 = fat_tree(4)
K8 = fat_tree(8)
US = 1_000_000


def test_times_are_exact_picoseconds():
    assert parse_time_ps("50us") == 50 * US
    assert parse_time_ps("1.5ms") == 1_500 * US
    assert parse_time_ps("250ns") == 250_000 and parse_time_ps("7") == 7 * US
    assert parse_time_ps("0.1ps") is None and parse_time_ps("soon") is None


def test_link_switch_and_tier_entries():
    e = parse_fault("link:agg0_0-core0@50us", K4)
    (li,) = e.links
    ends = {K4.nodes[K4.links[li].a].name, K4.nodes[K4.links[li].b].name}
    assert ends == {"agg0_0", "core0"} and e.at_ps == 50 * US and e.restore_ps == NEVER
    assert parse_fault("link:%d@1us" % li, K4).links == (li,)
    sw = parse_fault("switch:agg1_0@0us,restore=2ms", K4)
    assert len(sw.links) == 4 and sw.restore_ps == 2000 * US
    tier = parse_fault("tier:agg-core:25%@50us", K8, seed=1)
    assert len(tier.links) == 32
    assert all(K8.link_tier_name(K8.links[i]) == "agg-core" for i in tier.links)
    assert tier.links == parse_fault("tier:agg-core:25%@50us", K8, seed=1).links
    assert tier.links != parse_fault("tier:agg-core:25%@50us", K8, seed=2).links
    assert len(parse_fault("tier:core:3@0us", K8).links) == 3
    assert len(parse_fault("tier:agg-core:0.5@0us", K4).links) == 8


@pytest.mark.parametrize("spec, problem", [
    ("link:agg0_0-core0", "KIND:TARGET@TIME"),
    ("lnk:agg0_0-core0@5us", "unknown kind"),
    ("link:agg0_0-core9@5us", "not NODE-NODE"),
    ("link:agg0_0-agg0_1@5us", "no link between"),
    ("link:999@5us", "no link 999"),
    ("switch:h3@5us", "is a host"),
    ("switch:nobody@5us", "no node named"),
    ("tier:spine-core:10%@5us", "no layer or switch kind"),
    ("tier:agg-core:0%@5us", "share"),
    ("link:1@5 parsecs", "bad time"),
    ("link:1@5us,restore=4us", "restore must come after"),
    ("link:1@5us,flap=1us/2us", "needs until"),
    ("link:1@5us,flap=1us,until=9us", "flap is DOWN/UP"),
    ("link:1@5us,until=9us", "until goes with flap"),
    ("link:1@5us,gray=2", "gray is a drop fraction"),
    ("link:1@5us,gray=1%,detect=1us", "never detected"),
    ("link:1@5us,colour=red", "unknown option"),
    ("link:1@5us,restore=9us,restore=10us", "given twice"),
])
def test_errors_name_the_entry_and_the_problem(spec, problem):
    with pytest.raises(FaultError) as err:
        build_schedule(K4, ["link:0@1us", spec])
    assert str(err.value).startswith("--fail 2: ") and problem in str(err.value)
    assert spec in str(err.value)


def test_schedule_file_errors_name_file_and_line(tmp_path):
    path = tmp_path / "faults.txt"
    path.write_text("# failures of the study\nlink:0@1us   # first\n\nswitch:agg0_0@oops\n")
    with pytest.raises(FaultError) as err:
        read_fault_file(str(path), K4)
    assert str(err.value).startswith("%s:4: bad time" % path)
    path.write_text("link:0@1us\n  # only comments\ntier:agg-core:2@3us,detect=never\n")
    sched = build_schedule(K4, ["switch:core1@9us"], [str(path)])
    assert [e.where for e in sched.entries] == ["--fail 1", "%s:1" % path, "%s:3" % path]
    assert [e.index for e in sched.entries] == [0, 1, 2]
    with pytest.raises(FaultError, match="cannot read"):
        read_fault_file(str(tmp_path / "missing.txt"), K4)


def test_events_in_time_order_with_flapping_gray_and_detection():
    sched = build_schedule(K4, ["link:5@10us,flap=2us/3us,until=20us",
                                "link:6@4us,gray=1%,restore=8us",
                                "link:7@1us,restore=30us,detect=never"])
    events = sched.link_events()
    assert [t for t, *_ in events] == sorted(t for t, *_ in events)
    flaps = [(t // US, action) for t, li, action, _, _ in events if li == 5]
    assert flaps == [(10, DOWN), (12, UP), (15, DOWN), (17, UP)]   # cycles start < 20 us
    gray = [(t // US, action, v) for t, li, action, v, _ in events if li == 6]
    assert gray == [(4, GRAY, 0.01), (8, GRAY, 0.0)]
    learnt = sched.route_events(5 * US)
    assert [(t // US, li, a) for t, li, a, _ in learnt] == [
        (15, 5, DOWN), (17, 5, UP), (20, 5, DOWN), (22, 5, UP)]    # gray, never: not learnt
    assert sched.down_sets()[:3] == [(0, frozenset()), (1 * US, frozenset({7})),
                                     (10 * US, frozenset({5, 7}))]


def test_overlapping_entries_hold_a_link_down_until_both_end():
    sched = build_schedule(K4, ["link:3@10us,restore=50us", "switch:%s@20us,restore=30us"
                                % K4.nodes[K4.links[3].b].name])
    states = dict(sched.down_sets())
    assert 3 in states[20 * US] and 3 in states[30 * US] and 3 not in states[50 * US]


def test_routes_incremental_equal_full_recomputation():
    for topo in (K4, K8):
        routes = Routes(topo)
        assert routes.table == topo.next_hops
        rng = random.Random(len(topo.links))
        down = set()
        for _ in range(40):
            li = rng.randrange(len(topo.links))
            down.symmetric_difference_update({li})
            before = [list(row) if row is not None else None for row in routes.table]
            changes = routes.set_down(down)
            full = topo.compute_next_hops(down)
            assert routes.table == full
            diff = {(u, h) for u in topo.switches for h in topo.hosts
                    if before[u][h] != full[u][h]}
            assert {(u, h) for u, h, _ in changes} == diff       # exactly what changed


def test_one_core_link_touches_only_the_routes_through_it():
    routes = Routes(K8)
    li = parse_fault("link:agg0_0-core0@0us", K8).links[0]
    changes = routes.set_down([li])
    agg = K8.node_id("agg0_0")
    port = K8.nodes[agg].ports.index(li)
    # agg0_0 stops using its port to core0 toward the other pods, and core0 reaches pod 0
    # another way; no edge switch, and no other pod's entries, change
    touched = {K8.nodes[u].name for u, _, _ in changes}
    assert touched >= {"agg0_0", "core0"}
    assert all(not name.startswith("edge") for name in touched)
    assert all(port not in hops for u, _, hops in changes if u == agg)
    assert routes.set_down([li]) == []                          # nothing new
    back = routes.set_down([])
    assert routes.table == K8.next_hops and len(back) == len(changes)


def test_hosts_connected():
    assert hosts_connected(K4, [])
    edge = K4.node_id("edge0_0")
    ups = [li for li in K4.nodes[edge].ports if K4.links[li].other(edge)[0] >= 16]
    assert not hosts_connected(K4, ups)                           # its hosts cut off
    assert hosts_connected(K4, ups[:1])
    assert not hosts_connected(K4, [K4.nodes[3].ports[0]])        # a host's own link


def test_schedule_describes_itself():
    sched = build_schedule(K4, ["link:agg0_0-core0@50us,restore=1ms,detect=10us"])
    d = sched.describe(K4)[0]
    assert d["links"] == ["agg0_0-core0"] or d["links"] == ["core0-agg0_0"]
    assert d["at_us"] == 50 and d["restore_us"] == 1000 and d["detect_us"] == 10
    assert bool(sched) and not FaultSchedule()
