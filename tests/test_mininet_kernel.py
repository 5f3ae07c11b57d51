"""Kernel forwarding on the k=4 Fat-Tree in Mininet (``--forwarding kernel``): no switch
agent, the switch namespaces route the hosts' addresses over the topology's next hops,
hashing on the UDP source port the hosts' entropy picks; htb links.

Needs root and Mininet (``scripts/setup-mininet.sh``; CI runs as root): skipped elsewhere
with the reason.  Only what holds on a busy machine is asserted: every message delivered
exactly once and intact, nothing malformed, foreign or duplicated, the kernel's switches
dropped nothing for want of a route, the summary says what the mode does not model, and
nothing is left behind.  The plan itself is tested everywhere in
tests/test_mininet_kernel_plan.py.
"""

import json

import pytest

from gse.runtimes.mininet.environment import mininet_unavailable
from harness import received_by_agents
from mininet_calibration import GBPS, timeout_s
from test_mininet_fattree import _config, _messages, assert_nothing_new, snapshot
from topologies.fattree import fat_tree

REASON = mininet_unavailable()
pytestmark = pytest.mark.skipif(REASON is not None, reason="Mininet: %s" % REASON)


@pytest.mark.parametrize("workload,placement", [("permutation", "node"),
                                                ("incast", "switches")])
def test_kernel_forwarding_delivers_every_message_exactly_once(tmp_path, workload,
                                                               placement):
    from gse.runtimes.mininet.kernel_forwarding import NOT_MODELLED
    from gse.runtimes.mininet.run import run_mininet
    before = snapshot()
    topo = fat_tree(4, link_gbps=GBPS)
    msgs = _messages(workload)
    cfg = _config("gse")
    res = run_mininet(topo, msgs, "gse", cfg, seed=1,
                      timeout_s=timeout_s(topo, msgs, "gse", cfg), out_dir=str(tmp_path),
                      placement=placement, precise_timers=True, forwarding="kernel")
    s = res.summary
    mn = s["mininet"]
    assert mn["end"] == "done", mn
    assert mn["forwarding"] == "kernel"
    assert mn["processes"] == len(topo.hosts)        # hosts only: no switch agent
    assert mn["exit_codes"] == {"0": len(topo.hosts)} and mn["missing_outputs"] == []
    assert mn["left_behind"] == {} and mn["fabric_errors"] == []
    assert s["messages"] == s["delivered"] == len(msgs) and s["lost"] == 0
    udp = s["udp"]
    for key in ("duplicate_deliveries", "payload_errors", "malformed_total", "foreign",
                "agent_errors", "send_errors"):
        assert udp[key] == 0, (key, udp)
    assert udp["errors"] == [] and udp["payload_bytes"] >= sum(m.size for m in msgs)
    assert udp["dataplane_switches"] == 0
    # the hosts took the compiled packet path where the build has it (HostPlane.kernel)
    from gse.runtimes.udp import dataplane
    assert udp["hostplane_hosts"] == (len(topo.hosts) if dataplane.enabled() else 0)
    assert received_by_agents(tmp_path / "agents") == sorted(
        (m.src, m.msg_id, m.size) for m in msgs)
    # labelled with what it does not model; the kernel's switches forwarded everything
    # they did not queue-drop (htb drops are the summary's queue drops)
    assert s["forwarding"].startswith("kernel (no ")
    kf = s["kernel_forwarding"]
    assert kf["not_modelled"] == list(NOT_MODELLED)
    assert kf["forwarded_packets"] > 0 and kf["ip_drops"] == 0
    assert s["queue_drops"] == kf["queue_drops"]
    assert len(kf["by_switch"]) == len(topo.switches)
    for name, sw in kf["by_switch"].items():       # every egress veth has its queues
        assert len(sw["ports"]) == len(topo.nodes[topo.switches[0]].ports), name
    # ACKs, REQUESTs and GRANTs crossed the switches in their control class
    assert sum(p.get("control_packets", 0) for sw in kf["by_switch"].values()
               for p in sw["ports"].values()) > 0
    assert s["pfc_pauses"] == 0 and s["trims"] == 0
    assert_nothing_new(before, json.loads((tmp_path / "fabric.json").read_text()))
