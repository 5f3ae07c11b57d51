"""Fabric mode's path walk (``paths="leaf"``) where a leaf has parallel links to a spine:
the rail Spine-Leaf of the seed (``topologies.spineleaf.spine_leaf_rail``).  Every packet a
VOQ sent to one spine in a lap used to take the same spine downlink, 8 times its share,
and the spines dropped what collided."""

from hypothesis import given, strategies as st

from gse.workloads.stream import StreamRun, hierarchical_all_reduce
from switchmodel.fabric_plan import path_entropy
from topologies.spineleaf import spine_leaf_rail


@given(spines=st.integers(1, 16), parallel=st.sampled_from([1, 2, 4, 8, 16]),
       start=st.integers(0, 10**6))
def test_a_lap_spreads_each_spine_over_its_downlinks(spines, parallel, start):
    """Uplinks spine-major (as the builders number them): in one lap of the walk, the
    ``parallel`` uplinks to one spine carry ``parallel`` different spine choices, and over
    ``parallel`` laps each uplink takes every choice once.  (Byte 1 wraps at 256, so a
    count of parallel links that does not divide 256 loses this near the wrap.)"""
    n = spines * parallel
    lap0 = (start // n) * n
    for lap in range(parallel):
        per_spine = {}
        for rr in range(lap0 + lap * n, lap0 + (lap + 1) * n):
            e = path_entropy(rr, n)
            up = e & 0xFF
            assert up == rr % n
            per_spine.setdefault(up // parallel, []).append((e >> 8) % parallel)
        for choices in per_spine.values():
            assert sorted(choices) == list(range(parallel))
    for up in range(n):
        seen = {(path_entropy(lap0 + lap * n + up, n) >> 8) % parallel
                for lap in range(parallel)}
        assert seen == set(range(parallel))


def test_rail_reduce_scatter_keeps_spine_queues_short():
    """16 servers x 8 rails, 2 spines (8 parallel links per leaf-spine pair), the
    cross-rail reduce-scatter of 1 MiB per rank: nothing dropped, and no spine queue
    above 8 packets (5 now; 27, 112,448 bytes, when a lap used one downlink)."""
    topo = spine_leaf_rail(servers=16, nics_per_server=8, spines=2)
    phases = hierarchical_all_reduce(16, 8, 1 << 20)[:1]
    s = StreamRun(topo, phases, "gse-fabric", seed=1).run().summary
    assert s["collective_done"] and s["bytes_delivered"] == s["bytes_offered"]
    assert s["drops"] == 0 and s["fabric"]["leaf_resends"] == 0
    assert s["peak_queue_bytes"]["spine"] <= 8 * 4160
