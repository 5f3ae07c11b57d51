"""The no-progress watchdog in Mininet: every link between the pods taken down for good,
the host agents whose messages cross it exit "stalled", and the run ends (rather than
waiting out its timeout) with what the hosts' messages waited for.

Needs root and Mininet (``scripts/setup-mininet.sh``), skipped elsewhere with the reason.
Asserts outcomes only, never speed."""

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


def test_a_dead_fabric_ends_stalled_with_what_waits(tmp_path):
    from gse.runtimes.mininet.run import run_mininet
    topo = fat_tree(4, link_gbps=0.05)
    msgs = permutation(16, 100_000, random.Random(3))
    cross = sum(1 for m in msgs if m.src // 4 != m.dst // 4)      # between pods
    assert cross > 0
    sched = build_schedule(topo, ["tier:agg-core:100%@10us,detect=never"])
    res = run_mininet(topo, msgs, "gse", udp_profile(default_config("gse")), seed=1,
                      timeout_s=600.0, out_dir=str(tmp_path), faults=sched,
                      placement="switches", stall_s=1.0)
    s = res.summary
    mn = s["mininet"]
    assert mn["end"] == s["end"] == "stalled" and s["complete"] is False, mn
    assert mn["exit_codes"].get("3", 0) >= 1 and mn["left_behind"] == {}
    st = s["stall"]
    assert st["agents_stalled"] >= 1 and st["span_us"] == 1_000_000
    assert st["waiting"].get("path", 0) >= 1
    assert s["lost"] >= st["agents_stalled"]
    assert s["delivered"] == len(msgs) - s["lost"]
