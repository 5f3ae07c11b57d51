"""GSE fabric mode (``gse-fabric``) over the in-process UDP runtime: the leaves schedule.

The leaf scheduler (``switchmodel.fabric.FabricLeaf``) runs behind a real socket
(``gse.runtimes.udp.fabric.LeafDriver``) and talks to the other leaves with REQUEST and
GRANT datagrams; the hosts are plain go-back-N senders.  Asserted: every message
delivered exactly once and intact, also with packets lost on every link (the leaves skip
the holes and the hosts resend), the leaves hold nothing at the end, the summary is
``gse sim``'s with its ``fabric`` section, and agreement in kind with the simulation: in
an incast the fabric's aggregation and core queues stay a small fraction of the buffer,
where endpoint scheduling fills them.  Nothing here depends on the machine's speed: a
slow machine sends later, the leaves still grant no faster than the downlink drains.  (A
process the machine holds back for a few milliseconds releases what it owed at once; the
incast whose queues are compared runs its links at 0.02 Gb/s, 1.7 ms a packet, so such a
burst is a few packets, not the 20 of half a buffer it was at 0.2 Gb/s on a loaded machine.)
"""

import random

from gse.protocols import default_config
from gse.runtimes.sim.run import run_simulation
from gse.runtimes.udp.config import node_configs, udp_profile
from gse.runtimes.udp.network import run_udp
from gse.workloads import traffic
from switchmodel.fabric_plan import attachments
from topologies.fattree import fat_tree

TIMEOUT_S = 60.0
SIZE = 48 * 1024


def fabric_config(**overrides):
    cfg = udp_profile(default_config("gse-fabric"))
    for name, value in overrides.items():
        cfg.set(name, value)
    cfg.validate()
    return cfg


def check_exactly_once(result, messages):
    s = result.summary
    u = s["udp"]
    assert u["end"] == "done", u
    assert s["lost"] == 0 and s["delivered"] == s["completed"] == len(messages)
    assert u["duplicate_deliveries"] == 0 and u["payload_errors"] == 0
    assert u["payload_bytes"] >= sum(m.size for m in messages)
    assert u["errors"] == [] and u["agent_errors"] == 0 and u["malformed_total"] == 0
    assert u["foreign"] == 0 and s["unroutable"] == 0
    got = sorted((src, mid) for h in result.network.hosts for src, mid in h.delivered)
    assert got == sorted((m.src, m.msg_id) for m in messages)
    f = s["fabric"]
    assert f["leaves"] == 8 and f["leaves_idle"] == 8, f     # every VOQ and buffer freed
    assert f["voqs_live"] == 0 and f["bad_frames"] == 0 and f["stray"] == 0
    assert f["requests"] > 0 and f["grants"] > 0             # the leaves did schedule


def test_node_configs_give_leaves_and_spines_their_roles():
    topo = fat_tree(4, link_gbps=0.2)
    msgs = traffic.permutation(16, SIZE, random.Random(1))
    confs = node_configs(topo, msgs, "gse-fabric", fabric_config())
    leaf_of, leaves = attachments(topo)
    for conf in confs:
        if conf["role"] == "host":
            assert conf["agent"]["protocol"] == "gse-fabric"
            continue
        fab = conf["fabric"]
        assert fab["role"] == ("leaf" if conf["node"] in leaves else "spine")
        assert fab["leaf_of"] == leaf_of
        routed = {leaf for leaf, _ in fab["leaf_routes"]}
        assert routed == set(leaves) - {conf["node"]}      # every other leaf, not itself
        if fab["role"] == "leaf":                           # the deep buffer
            assert conf["queue"]["queue_bytes"] == fabric_config().leaf_queue_bytes


def test_permutation_with_loss_delivers_everything_exactly_once():
    topo = fat_tree(4, link_gbps=0.2)
    msgs = traffic.permutation(16, SIZE, random.Random(4))
    result = run_udp(topo, msgs, "gse-fabric", fabric_config(), seed=4, loss_rate=0.01,
                     timeout_s=TIMEOUT_S)
    check_exactly_once(result, msgs)
    s = result.summary
    assert s["runtime"] == "udp" and s["protocol"] == "gse-fabric"
    assert s["wire_drops"] > 0                                # losses happened ...
    assert s["retransmits"] > 0                               # ... and were resent
    f = s["fabric"]
    # a loss inside the fabric is repaired by the leaves (leaf recovery, on over UDP), or
    # else skipped or re-requested: which one depends on the processes' timing
    assert f["leaf_resends"] + f["hole_skips"] + f["rerequests"] > 0, f


def test_incast_with_loss_and_corruption_delivers_everything_exactly_once():
    topo = fat_tree(4, link_gbps=0.2)
    msgs = traffic.incast(16, 8, SIZE, random.Random(2), receiver=5)
    result = run_udp(topo, msgs, "gse-fabric", fabric_config(reorder="host"), seed=2,
                     loss_rate=0.01, corrupt_rate=0.005, timeout_s=TIMEOUT_S,
                     addressing="ips")
    s = result.summary
    # corrupted datagrams are caught by the next node's checksum, counted and dropped
    assert s["corrupted"] == s["udp"]["malformed"]["checksum"] > 0
    s["udp"]["malformed_total"] = 0              # (counted above; not a failure here)
    check_exactly_once(result, msgs)


def test_incast_queues_stay_at_the_edge_as_in_the_simulation():
    """Agreement in kind: the leaves meter the incast at the receiver's downlink rate, so
    the aggregation and core queues hold a few grants' worth (bunched by the process at
    worst), far below the 1-BDP buffer endpoint scheduling fills, in the simulation and
    over UDP alike; the excess waits in the source leaves' VOQs."""
    gbps = 0.02                 # packet times long against a loaded machine's stalls
    topo = fat_tree(4, link_gbps=gbps)
    msgs = traffic.incast(16, 8, 100_000, random.Random(1), receiver=0)
    cfg = udp_profile(default_config("gse-fabric"), link_gbps=gbps)
    sim_gse = run_simulation(topo, msgs, "gse", udp_profile(default_config("gse")), 1).summary
    sim_fab = run_simulation(topo, msgs, "gse-fabric", cfg, 1).summary
    result = run_udp(topo, msgs, "gse-fabric", cfg, seed=1, timeout_s=TIMEOUT_S)
    check_exactly_once(result, msgs)
    udp = result.summary
    buffer = cfg.queue_bytes
    assert sim_gse["peak_queue_bytes"]["agg"] > buffer // 2      # endpoint: the spines fill
    for s in (sim_fab, udp):
        peak = s["peak_queue_bytes"]
        assert peak["agg"] <= buffer // 2 and peak["core"] <= buffer // 2, peak
        assert peak["edge_voq"] > buffer // 2, peak               # the queue moved to the edge
        assert s["drops"] == 0 and s["pfc_pauses"] == 0
    assert udp["fabric"]["voq_peak_bytes"] == udp["peak_queue_bytes"]["edge_voq"]
