"""Fabric mode (``gse-fabric``) as a whole: small Fat-Trees, random traffic, random faults.

Whatever the traffic, the leaf options and the injected loss and corruption:

* every message is delivered exactly once (the network raises on a second delivery) and
  none is lost: plain hosts recover end to end (go-back-N on NAK, RTO), the leaves repair
  their own REQUEST/GRANT exchange (cumulative totals, re-REQUEST) and skip old holes;
* no destination pacer ever hands out credit faster than its downlink: consecutive grants
  are at least the wire time of the earlier one apart, at a rate no above the port's;
* at the end every per-destination queue is freed: no VOQ, no pending demand, no reorder
  buffer, no byte held, no host paused.

The acceptance figures of issue 8 (k=8) close the file.
"""

import random

from hypothesis import given
from hypothesis import strategies as st
from strategies import workloads as shared_workloads

from gse.cli.main import main
from gse.config import GseConfig
from gse.runtimes.sim.fabric_nodes import LeafNode, leaf_agents
from gse.runtimes.sim.run import run_simulation
from gse.workloads.traffic import incast, permutation
from gse.wire.linkrate import wire_time_ps
from switchmodel.fabric import FabricConfig
from topologies import fat_tree

TOPO = fat_tree(4)
N = len(TOPO.hosts)


def workloads():
    return shared_workloads(N, perm_max=300_000, incast_max=150_000, a2a_hosts_max=6,
                            random_max=200_000)


configs = st.builds(
    lambda reorder, spray, paths, xoff: FabricConfig(
        reorder=reorder, spray=spray, paths=paths, host_xoff_bytes=xoff,
        host_xon_bytes=xoff // 2, log_grants=True),
    st.sampled_from(["leaf", "host"]), st.sampled_from(["packet", "container"]),
    st.sampled_from(["leaf", "hash"]), st.sampled_from([4 * 1024 * 1024, 40_000]))


def check_grants(net):
    """Every pacer: rate at most its port's, consecutive grants a wire time apart."""
    for sn in net.switches:
        if not isinstance(sn, LeafNode):
            continue
        for dl in sn.agent.downlinks.values():
            mbps = sn.ports[dl.port].mbps
            assert dl.mbps <= mbps
            log = dl.log
            for (t0, b0), (t1, _) in zip(log, log[1:]):
                assert t1 - t0 >= wire_time_ps(b0, mbps)
            assert sum(b for _, b in log) == dl.granted_bytes


def check_freed(net):
    for agent in leaf_agents(net):
        assert agent.idle(), agent.counters()
        assert not any(agent.pausing.values())
    assert not any(h.nic.queue.paused for h in net.hosts)


@given(workloads(), configs, st.floats(0, 0.02), st.floats(0, 0.01), st.integers(0, 1000))
def test_no_message_lost_under_loss_and_corruption(msgs, cfg, loss, corrupt, seed):
    result = run_simulation(TOPO, msgs, "gse-fabric", cfg, seed, loss, corrupt)
    s = result.summary
    assert s["lost"] == 0 and s["delivered"] == s["completed"] == len(msgs)
    for r in result.records:
        assert r.start_ps <= r.deliver_ps <= r.finish_ps
    check_grants(result.network)
    check_freed(result.network)


@given(workloads(), configs, st.integers(0, 1000))
def test_grants_never_exceed_the_downlink_and_queues_are_freed(msgs, cfg, seed):
    result = run_simulation(TOPO, msgs, "gse-fabric", cfg, seed)
    assert result.summary["lost"] == 0
    check_grants(result.network)
    check_freed(result.network)
    f = result.summary["fabric"]
    assert f["voqs_live"] == 0 and f["voq_drops"] == 0


@given(workloads(), st.floats(0, 0.02), st.integers(0, 1000))
def test_same_seed_same_results(msgs, loss, seed):
    a = run_simulation(TOPO, msgs, "gse-fabric", FabricConfig(), seed, loss)
    b = run_simulation(TOPO, msgs, "gse-fabric", FabricConfig(), seed, loss)
    assert a.per_message() == b.per_message()
    assert a.summary["events"] == b.summary["events"]


def test_an_idle_fabric_neither_drops_nor_reorders_past_the_leaf():
    msgs = permutation(N, 1_000_000, random.Random(3))
    s = run_simulation(TOPO, msgs, "gse-fabric", FabricConfig(), 1).summary
    assert s["lost"] == 0 and s["retransmits"] == 0 and s["drops"] == 0
    assert s["host_counters"]["ooo_discarded"] == 0 and s["fabric"]["hole_skips"] == 0
    assert s["slowdown"]["max"] < 1.2


def test_compare_runs_all_three_protocols(tmp_path, capsys):
    out = tmp_path / "c.json"
    rc = main(["compare", "--k", "4", "--traffic", "incast", "--senders", "6", "--size",
               "200000", "--protocols", "roce,gse,gse-fabric", "--json", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "gse-fabric" in text
    assert main(["sim", "--k", "4", "--protocol", "gse-fabric", "--size", "100000",
                 "--set", "reorder=host", "--set", "spray=container", "--quiet"]) == 0


# -- acceptance (issue 8): k=8, 100 Gb/s, 2 MB, unchanged hosts ----------------------------

K8 = fat_tree(8)


def test_acceptance_permutation_k8_tail_within_1_2_ideal():
    msgs = permutation(len(K8.hosts), 2_000_000, random.Random("1/traffic"))
    result = run_simulation(K8, msgs, "gse-fabric", FabricConfig(), 1)
    s = result.summary
    ideal = max(r.ideal_ps for r in result.records) / 1e6      # 176.5 us
    assert s["lost"] == 0
    assert s["fct_us"]["p99"] <= 1.2 * ideal


def test_acceptance_incast_32_to_1_spine_and_core_queues_within_one_bdp():
    msgs = incast(len(K8.hosts), 32, 2_000_000, random.Random("1/traffic"))
    s = run_simulation(K8, msgs, "gse-fabric", FabricConfig(), 1).summary
    assert s["lost"] == 0
    peak = s["peak_queue_bytes"]
    assert peak["agg"] <= GseConfig.BDP_BYTES and peak["core"] <= GseConfig.BDP_BYTES
