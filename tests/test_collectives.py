"""Collectives as flows with dependencies, and their replay on the simulated network."""

import pytest

from gse.protocols import PROTOCOLS
from gse.workloads.collectives import (Collective, CollectiveError, bus_factor, chunks, expand,
                                       halving_doubling_all_reduce, ring_all_reduce)
from gse.workloads.replay import replay, ring_bound_ps
from topologies.fattree import fat_tree
from topologies.spineleaf import spine_leaf_rail

MiB = 1 << 20


def coll(op, n, size, **kw):
    return Collective(kw.pop("id", 1), op, kw.pop("ranks", range(n)), size, **kw)


# -- plans ----------------------------------------------------------------------------------

def test_ring_all_reduce_plan():
    n, s = 8, MiB
    plan = expand(coll("all_reduce", n, s))
    assert len(plan) == n * 2 * (n - 1)
    assert plan.steps() == 2 * (n - 1)
    assert set(plan.size) == {s // n}
    assert all(plan.dst[f] == (plan.src[f] + 1) % n for f in range(len(plan)))
    for f, deps in enumerate(plan.deps):             # step k of i waits for step k-1 into i
        if f >= n:
            assert len(deps) == 1 and plan.dst[deps[0]] == plan.src[f]
        else:
            assert deps == ()
    assert plan.bytes_sent() == 2 * (n - 1) * s


@pytest.mark.parametrize("op, steps", [("reduce_scatter", 7), ("all_gather", 7)])
def test_ring_half_collectives(op, steps):
    plan = expand(coll(op, 8, MiB))
    assert plan.steps() == steps and len(plan) == 8 * steps
    assert plan.bytes_sent() == 7 * MiB


def test_all_to_all_plan():
    plan = expand(coll("all_to_all", 16, MiB))
    assert len(plan) == 16 * 15 and plan.steps() == 1
    assert set(plan.size) == {MiB // 16}
    assert len({(plan.src[f], plan.dst[f]) for f in range(len(plan))}) == 240


def test_halving_doubling_partners_and_sizes():
    n, s = 8, MiB
    plan = halving_doubling_all_reduce(n, s)
    assert plan.steps() == 2 * 3
    for step, k in enumerate([0, 1, 2, 2, 1, 0]):
        flows = range(step * n, (step + 1) * n)
        assert all(plan.dst[f] == plan.src[f] ^ (1 << k) for f in flows)
        assert {plan.size[f] for f in flows} == {s >> (k + 1)}
    assert plan.bytes_sent() == ring_all_reduce(n, s).bytes_sent()
    with pytest.raises(CollectiveError, match="power-of-two"):
        expand(coll("all_reduce", 6, s, algo="hd"))


@pytest.mark.parametrize("algo", ["ring", "tree"])
def test_broadcast_reaches_every_rank_once(algo):
    n = 7
    plan = expand(coll("broadcast", n, 3 * MiB, algo=algo, root=3))
    assert {plan.dst[f] for f in range(len(plan))} == set(range(n)) - {3}
    got = {}
    for f in range(len(plan)):
        got[plan.dst[f]] = got.get(plan.dst[f], 0) + plan.size[f]
    assert set(got.values()) == {3 * MiB}
    for f, deps in enumerate(plan.deps):             # a rank forwards what it has received
        if plan.src[f] != 3:
            assert any(plan.dst[d] == plan.src[f] for d in deps)


def test_rooted_and_point_to_point():
    plan = expand(coll("gather", 4, 4000, root=2))
    assert sorted(zip(plan.src, plan.dst)) == [(0, 2), (1, 2), (3, 2)]
    plan = expand(coll("scatter", 4, 4000, root=0))
    assert set(plan.src) == {0} and sum(plan.size) == 3000
    plan = expand(coll("reduce", 4, 4000, root=0))
    assert plan.dst[-1] == 0
    plan = expand(Collective(1, "send", [5, 2], 100))
    assert (plan.src, plan.dst, plan.size) == ([0], [1], [100])


def test_uneven_and_tiny_sizes():
    assert chunks(10, 4) == [3, 3, 2, 2]
    plan = expand(coll("all_reduce", 8, 5))          # S < N: zero-byte chunks keep the chain
    assert plan.steps() == 14 and sum(1 for s in plan.size if s == 0) > 0
    assert len(expand(coll("all_reduce", 1, MiB))) == 0


def test_bus_factors_follow_nccl_tests():
    assert bus_factor("all_reduce", 8) == pytest.approx(2 * 7 / 8)
    for op in ("reduce_scatter", "all_gather", "all_to_all"):
        assert bus_factor(op, 8) == pytest.approx(7 / 8)
    assert bus_factor("broadcast", 8) == 1.0


@pytest.mark.parametrize("kwargs, words", [
    ({"op": "allreduce"}, ["unknown op"]),
    ({"algo": "tree"}, ["no algorithm 'tree'"]),
    ({"ranks": [0, 1, 1]}, ["twice"]),
    ({"size": -1}, ["size"]),
    ({"op": "broadcast", "root": 9}, ["root 9"]),
])
def test_bad_collectives_say_what(kwargs, words):
    args = {"id": 1, "op": "all_reduce", "ranks": [0, 1, 2], "size": 10}
    args.update(kwargs)
    with pytest.raises(CollectiveError) as err:
        Collective(**args)
    for w in words:
        assert w in str(err.value)


# -- replay ---------------------------------------------------------------------------------

@pytest.mark.parametrize("topo_name, n, size", [
    ("rail", 8, MiB), ("rail", 16, MiB), ("rail", 8, 4 * MiB), ("fat4", 8, MiB),
])
def test_ring_all_reduce_within_10_percent_of_the_bound(topo_name, n, size):
    """Acceptance: 2(N-1)/N x S / rate + 2(N-1) x one-way latency, GSE, idle fabric."""
    topo = spine_leaf_rail(servers=8) if topo_name == "rail" else fat_tree(4)
    result = replay(topo, [coll("all_reduce", n, size)], "gse", seed=1)
    res = result.collectives[0]
    assert res.done and result.summary["lost"] == 0
    bound, one_way = ring_bound_ps(topo, list(range(n)), size)
    assert abs(res.time_ps() / bound - 1) <= 0.10, (res.time_ps(), bound, one_way)
    assert res.busbw_gbps() == pytest.approx(res.algbw_gbps() * 2 * (n - 1) / n)


def test_steps_wait_for_data_not_for_a_clock():
    """Step k from rank i starts once step k-1 into rank i is delivered, not before."""
    topo = spine_leaf_rail(servers=2, nics_per_server=4)
    n = 8
    rp = replay(topo, [coll("all_reduce", n, 64 * 1024)], "gse")
    by_pair = {}
    for r in sorted(rp.records, key=lambda r: r.start_ps):
        by_pair.setdefault((r.src, r.dst), []).append(r)
    assert sorted(by_pair) == [(i, (i + 1) % n) for i in range(n)]
    for i in range(n):
        out, into = by_pair[(i, (i + 1) % n)], by_pair[((i - 1) % n, i)]
        assert len(out) == 2 * (n - 1) and out[0].start_ps == 0
        for k in range(1, 2 * (n - 1)):
            assert out[k].start_ps == into[k - 1].deliver_ps
    assert rp.collectives[0].end_ps == max(r.deliver_ps for r in rp.records)


def test_dependencies_lags_and_start_times():
    topo = spine_leaf_rail(servers=2, nics_per_server=4)
    a = Collective(1, "all_reduce", range(8), 256 * 1024)
    b = Collective(2, "all_gather", range(8), 256 * 1024, after=[(1, 5_000_000)])
    c = Collective(3, "all_to_all", range(4), 64 * 1024, start_ps=1_000_000_000)
    d = Collective(4, "send", [6, 1], 10_000, after=[(3, 0)])      # 6 is not in 3: waits for all
    rp = replay(topo, [a, b, c, d], "gse")
    ra, rb, rc, rd = rp.collectives
    assert all(r.done for r in rp.collectives)
    assert rb.start_ps >= ra.start_ps + 5_000_000
    first_done = min(r.deliver_ps for r in rp.records if r.src in (0, 7) or r.dst in (0, 7))
    assert rb.start_ps > first_done
    assert rc.start_ps == 1_000_000_000
    send = [r for r in rp.records if (r.src, r.dst, r.size) == (6, 1, 10_000)]
    assert len(send) == 1 and send[0].start_ps == rc.end_ps     # both ends must have entered
    # rank 1 entered when its part of 3 was done (the end of 3 if its flows came last)
    part = max(r.deliver_ps for r in rp.records
               if 1 in (r.src, r.dst) and rc.start_ps <= r.start_ps < rc.end_ps)
    assert rd.start_ps <= rc.end_ps and rd.start_ps >= part


def test_rank_local_dependency_lets_fast_ranks_go_first():
    """A rank enters the next collective when *its* part of the previous one is done."""
    topo = spine_leaf_rail(servers=2, nics_per_server=4)
    a = Collective(1, "gather", range(8), 8 * 64 * 1024, root=0)
    b = Collective(2, "all_to_all", range(1, 8), 7 * 1024, after=[(1, 0)])
    rp = replay(topo, [a, b], "gse")
    ra, rb = rp.collectives
    assert rb.start_ps < ra.end_ps                  # ranks 1..7 finished sending early


def test_replay_is_deterministic_and_maps_ranks_to_hosts():
    topo = spine_leaf_rail(servers=4, nics_per_server=4)
    cs = [Collective(1, "all_reduce", [0, 1, 2, 3], MiB, algo="hd"),
          Collective(2, "broadcast", [0, 1, 2, 3], MiB, root=2, after=[(1, 0)])]
    hosts = {0: 3, 1: 7, 2: 11, 3: 15}              # one rail: Leaf-local traffic
    r1 = replay(topo, cs, "gse", seed=3, rank_hosts=hosts)
    r2 = replay(topo, cs, "gse", seed=3, rank_hosts=hosts)
    assert [(r.src, r.dst) for r in r1.records][:2] in ([(3, 7), (7, 3)], [(7, 3), (3, 7)])
    assert {r.src for r in r1.records} == {3, 7, 11, 15}
    assert [x.end_ps for x in r1.collectives] == [x.end_ps for x in r2.collectives]
    with pytest.raises(ValueError, match="rank 3 maps to host 99"):
        replay(topo, cs, "gse", rank_hosts={0: 0, 1: 1, 2: 2, 3: 99})
    with pytest.raises(ValueError, match="hosts 0..15"):
        replay(topo, [Collective(1, "all_reduce", range(20), 100)], "gse")


@pytest.mark.skipif("roce" not in PROTOCOLS, reason="RoCE baseline not available yet")
def test_replay_on_roce_completes():
    topo = spine_leaf_rail(servers=2, nics_per_server=4)
    rp = replay(topo, [coll("all_reduce", 8, MiB)], "roce")
    assert rp.collectives[0].done and rp.summary["lost"] == 0
    assert rp.summary["protocol"] == "roce"
