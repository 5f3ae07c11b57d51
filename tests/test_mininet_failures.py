"""A core link taken down mid-run in Mininet (issue 13): ``ip link set ... down`` on both
ends of its veth pair, the switch agents rerouting when their configuration says the
fabric learnt of it, the hosts seeing nothing but loss; every message is still delivered
exactly once and intact.

Needs root and Mininet (``scripts/setup-mininet.sh``), skipped elsewhere with the reason.
Asserts delivery and correctness only, never speed.  About 20 s per protocol on an idle
two-core machine.
"""

import json
import os
import random

import pytest

from gse.protocols import default_config
from gse.runtimes.mininet.environment import mininet_unavailable
from gse.runtimes.udp.config import udp_profile
from gse.workloads.faults import build_schedule
from gse.workloads.traffic import permutation
from topologies.fattree import fat_tree

REASON = mininet_unavailable()
pytestmark = pytest.mark.skipif(REASON is not None, reason="Mininet: %s" % REASON)

GBPS = 0.01                          # a 4,160-byte packet is 3.3 ms on the wire
MS = 1_000_000_000


@pytest.mark.parametrize("protocol", ["gse", "roce"])
def test_core_link_down_mid_run_every_message_delivered(tmp_path, protocol):
    from gse.runtimes.mininet.run import run_mininet
    topo = fat_tree(4, link_gbps=GBPS)
    msgs = permutation(16, 400_000, random.Random(3))     # >= 330 ms of sending each
    # two core links die 150 ms into the run, while every host is sending; the
    # switches learn of it 150 ms later
    sched = build_schedule(topo, ["link:agg0_0-core0@150ms", "link:agg2_1-core3@150ms"])
    cfg = udp_profile(default_config(protocol))
    res = run_mininet(topo, msgs, protocol, cfg, seed=1, timeout_s=120.0,
                      out_dir=str(tmp_path), faults=sched, detect_ps=150 * MS)
    s = res.summary
    mn = s["mininet"]
    assert mn["end"] == "done", mn
    assert mn["exit_codes"] == {"0": 36} and mn["missing_outputs"] == []
    assert mn["left_behind"] == {} and mn["fabric_errors"] == []
    f = s["failures"]
    assert [(e["link"], e["up"], e["error"]) for e in f["ip_link"]] == [
        ("agg0_0-core0", False, ""), ("agg2_1-core3", False, "")]
    assert f["ip_link_not_done"] == 0
    assert f["route_updates"] > 0                 # the switches rerouted
    # the dead link cost packets: dropped by the ports that saw their carrier go, or by
    # the kernel refusing to send on a downed veth ...
    assert sum(f["drops"].values()) + s["udp"]["send_errors"] > 0
    assert s["retransmits"] > 0                   # ... which the transports saw as loss
    assert s["messages"] == s["delivered"] == len(msgs) and s["lost"] == 0
    udp = s["udp"]
    for key in ("duplicate_deliveries", "payload_errors", "malformed_total", "agent_errors"):
        assert udp[key] == 0, (key, udp)
    got = []
    for name in os.listdir(tmp_path / "agents"):
        if name.endswith(".records.json"):
            rec = json.loads((tmp_path / "agents" / name).read_text())
            got += [(d["src"], d["msg_id"], d["size"]) for d in rec["received"]]
    assert sorted(got) == sorted((m.src, m.msg_id, m.size) for m in msgs)
