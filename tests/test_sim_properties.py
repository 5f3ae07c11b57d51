"""Property tests of the whole simulation: small Fat-Trees, random traffic, random faults.

Whatever the traffic and the injected loss and corruption, every message is delivered
exactly once (the network raises on a second delivery) and intact (a corrupt packet is
never accepted), none is lost, and the same seed gives the same per-message results.
"""

import random

from hypothesis import given
from hypothesis import strategies as st
from strategies import workloads as shared_workloads

from gse.config import GseConfig
from gse.runtimes.sim.run import run_simulation
from gse.workloads.traffic import incast, permutation
from topologies import fat_tree

TOPO = fat_tree(4)
N = len(TOPO.hosts)


def workloads():
    return shared_workloads(N)


configs = st.builds(
    lambda unsched, policy, trim: GseConfig(unsched_bytes=unsched, policy=policy, trim=trim),
    st.sampled_from([0, 4096 * 4, GseConfig.BDP_BYTES]), st.sampled_from(["rr", "srpt"]),
    st.booleans())


@given(workloads(), configs, st.floats(0, 0.02), st.floats(0, 0.01), st.integers(0, 1000))
def test_every_message_delivered_exactly_once_under_loss_and_corruption(
        msgs, cfg, loss, corrupt, seed):
    result = run_simulation(TOPO, msgs, "gse", cfg, seed, loss, corrupt)
    s = result.summary
    assert s["lost"] == 0 and s["delivered"] == s["completed"] == len(msgs)
    # every corrupted packet that reached a host was refused by its checksum
    malformed = s["host_counters"]["malformed"]
    assert malformed <= s["corrupted"]
    for r in result.records:
        assert r.start_ps <= r.deliver_ps <= r.finish_ps


@given(workloads(), st.floats(0, 0.02), st.integers(0, 1000))
def test_same_seed_same_results(msgs, loss, seed):
    a = run_simulation(TOPO, msgs, "gse", GseConfig(), seed, loss)
    b = run_simulation(TOPO, msgs, "gse", GseConfig(), seed, loss)
    assert a.per_message() == b.per_message()
    assert a.summary["events"] == b.summary["events"]


def test_no_loss_no_retransmission_on_an_idle_fabric():
    msgs = permutation(N, 1_000_000, random.Random(3))
    s = run_simulation(TOPO, msgs, "gse", GseConfig(), 1).summary
    assert s["lost"] == 0 and s["retransmits"] == 0 and s["drops"] == 0
    assert s["slowdown"]["max"] < 1.15


def test_unscheduled_window_off_keeps_incast_queue_small():
    cfg = GseConfig(unsched_bytes=0)
    msgs = incast(N, 12, 500_000, random.Random(5))
    s = run_simulation(TOPO, msgs, "gse", cfg, 1).summary
    assert s["lost"] == 0 and s["trims"] == 0 and s["drops"] == 0
    assert s["peak_queue_bytes"]["edge_down"] <= 2 * GseConfig.BDP_BYTES
