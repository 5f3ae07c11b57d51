"""Core links taken down mid-run in Mininet (issue 13): ``ip link set ... down`` on both
ends of their veth pairs, the switch agents rerouting when their configuration says the
fabric learnt of it, the hosts seeing nothing but loss; every message is still delivered
exactly once and intact.

Needs root and Mininet (``scripts/setup-mininet.sh``), skipped elsewhere with the reason.
Asserts delivery and correctness only, never speed, and holds on a loaded machine
(issue 24): the failure is triggered by the traffic's own progress (once the core
switch has sent ``AFTER_PACKETS`` packets over its links), not by a wall-clock offset
that a late start can put before any traffic; the link rate and the run's bound come from a
calibration (``tests/mininet_calibration.py``).  About 20 s per protocol on an idle
two-core machine.
"""

import json
import os
import random

import pytest

from gse.protocols import default_config
from gse.runtimes.mininet.environment import mininet_unavailable
from gse.runtimes.udp.config import udp_profile
from gse.runtimes.udp.faults import has_faults
from gse.workloads.faults import build_schedule
from gse.workloads.traffic import permutation
from harness import received_by_agents
from mininet_calibration import GBPS, timeout_s
from topologies.fattree import fat_tree

REASON = mininet_unavailable()
pytestmark = pytest.mark.skipif(REASON is not None, reason="Mininet: %s" % REASON)

MS = 1_000_000_000
AFTER_PACKETS = 20        # of the 100-odd a core switch forwards in this run
# The switches learn of the failure this long after it (on the run's clock): far longer
# than the longest stall of an agent seen on a loaded machine (0.47 s), so packets keep
# being routed into the dead links -- the failure costs packets -- whatever the load.
DETECT_MS = 2000


@pytest.mark.parametrize("protocol", ["gse", "roce"])
def test_core_link_down_mid_run_every_message_delivered(tmp_path, protocol):
    from gse.runtimes.mininet.run import run_mininet
    topo = fat_tree(4, link_gbps=GBPS)
    msgs = permutation(16, 120_000, random.Random(3))    # 30 packets, >= 0.4 s each
    # the four links of a core switch die once it has forwarded AFTER_PACKETS packets:
    # traffic is crossing the core by then, however late the machine got it going
    sched = build_schedule(topo, ["switch:core0@0ms"], after_packets=AFTER_PACKETS)
    cfg = udp_profile(default_config(protocol), link_gbps=GBPS)
    bound = timeout_s(topo, msgs, protocol, cfg, sched, DETECT_MS * MS)
    res = run_mininet(topo, msgs, protocol, cfg, seed=1, timeout_s=bound,
                      out_dir=str(tmp_path), faults=sched, detect_ps=DETECT_MS * MS)
    s = res.summary
    mn = s["mininet"]
    assert mn["end"] == "done", (bound, mn)
    assert mn["exit_codes"] == {"0": 36} and mn["missing_outputs"] == []
    assert mn["left_behind"] == {} and mn["fabric_errors"] == []
    f = s["failures"]
    trigger = f["trigger"]
    assert trigger["fired_us"] is not None and trigger["by"], trigger
    assert trigger["packets_seen"] >= AFTER_PACKETS
    assert sorted((e["link"], e["up"], e["error"]) for e in f["ip_link"]) == [
        ("agg%d_0-core0" % pod, False, "") for pod in range(4)]
    assert f["ip_link_not_done"] == 0
    if protocol == "roce":
        # per-flow ECMP: a flow (or its ACKs) pinned to the dead link completes only once
        # the switches reroute; GSE's spraying may route around it before they learn
        assert f["route_updates"] > 0
    # every agent with failures to play took them from the origin the runner wrote
    agents = tmp_path / "agents"
    for name in os.listdir(agents / "conf"):
        conf = json.loads((agents / "conf" / name).read_text())
        if has_faults(conf):
            c = json.loads((agents / (conf["name"] + ".counters.json")).read_text())
            assert c["fault_origin_ps"] is not None, conf["name"]
    # the dead link cost packets: dropped by the ports that saw their carrier go, or by
    # the kernel refusing to send on a downed veth ...
    assert sum(f["drops"].values()) + s["udp"]["send_errors"] > 0
    assert s["retransmits"] > 0                   # ... which the transports saw as loss
    assert s["messages"] == s["delivered"] == len(msgs) and s["lost"] == 0
    udp = s["udp"]
    for key in ("duplicate_deliveries", "payload_errors", "malformed_total", "agent_errors"):
        assert udp[key] == 0, (key, udp)
    assert received_by_agents(tmp_path / "agents") == sorted(
        (m.src, m.msg_id, m.size) for m in msgs)
