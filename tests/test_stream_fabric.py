"""A collective streamed in fabric mode reports the leaves' figures as ``gse sim`` does:
without them a drop in a leaf's VOQ or its loss recovery would be invisible in the
summary of the 10k runs (``experiments/scale_10k.py``)."""

from gse.runtimes.sim.run import run_simulation
from gse.workloads.stream import StreamRun, hierarchical_all_reduce
from gse.workloads.traffic import Message
from topologies.spineleaf import spine_leaf_rail


def test_stream_summary_folds_the_leaves_counters():
    topo = spine_leaf_rail(servers=4, nics_per_server=4)
    r = StreamRun(topo, hierarchical_all_reduce(4, 4, 256 * 1024), "gse-fabric", seed=3).run()
    s = r.summary
    assert s["collective_done"]
    fabric = s["fabric"]
    # every cross-leaf byte went through a VOQ, asked for credit and was acknowledged
    assert fabric["requests"] > 0 and fabric["grants"] > 0 and fabric["leaf_acks"] > 0
    assert s["peak_queue_bytes"]["edge_voq"] == fabric["voq_peak_bytes"] > 0
    assert fabric["voqs_live"] == 0 and fabric["sent_buffers_live"] == 0


def test_stream_and_sim_summaries_share_the_fabric_keys():
    topo = spine_leaf_rail(servers=2, nics_per_server=2)
    sim = run_simulation(topo, [Message(0, 0, 3, 64 * 1024, 0)], "gse-fabric", seed=1).summary
    stream = StreamRun(topo, hierarchical_all_reduce(2, 2, 64 * 1024), "gse-fabric",
                       seed=1).run().summary
    assert set(sim["fabric"]) == set(stream["fabric"])
    assert set(sim["peak_queue_bytes"]) == set(stream["peak_queue_bytes"])
