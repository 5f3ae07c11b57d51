"""What a failure cost (gse.metrics.failures) and the study that reports it."""

import json
import os
import subprocess
import sys

from gse.config import GseConfig, PS_PER_US
from gse.metrics.failures import goodput_dip, recovery
from gse.runtimes.sim.run import run_simulation
from gse.workloads.faults import build_schedule
from gse.workloads.traffic import Message
from topologies import fat_tree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
US = PS_PER_US


def test_recovery_and_dip_of_a_switch_failure():
    topo = fat_tree(4)
    msgs = [Message(i + 1, i, 12 + i, 1_000_000) for i in range(4)]     # pod 0 -> pod 3
    base = run_simulation(topo, msgs, "gse", GseConfig(), 1, sample_ps=10 * US)
    sched = build_schedule(topo, ["switch:agg0_0@30us"])
    fail = run_simulation(topo, msgs, "gse", GseConfig(), 1, sample_ps=10 * US,
                          faults=sched, detect_ps=1000 * US)
    hit = fail.network.faults.stats[0].affected
    assert hit                                        # half of pod 0's way out died
    rec = recovery(fail.records, base.records, hit)
    assert rec["affected"] == len(hit)
    assert 0 < rec["first_us"] <= rec["max_us"] and rec["last_us"] <= rec["max_us"]
    worst = max(r.fct_ps() for r in fail.records if (r.src, r.msg_id) in hit)
    assert worst > max(r.fct_ps() for r in base.records)
    dip = goodput_dip(fail.timeseries, 30 * US, 20 * US, 60 * US, base.timeseries)
    assert 0 < dip["dip"] <= 1 and dip["before_gbps"] > 0
    same = goodput_dip(base.timeseries, 30 * US, 20 * US, 60 * US, base.timeseries)
    assert same["dip"] == 0.0                         # the baseline against itself
    none = recovery(fail.records, base.records, set())
    assert none == {"affected": 0, "first_us": None, "last_us": None, "max_us": None}


def test_study_runs_and_loses_nothing(tmp_path):
    """experiments/failures.py --quick: every protocol and case, the table and rows."""
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, os.path.join(ROOT, "experiments", "failures.py"),
                          "--quick", "--no-plot", "--only", "permutation",
                          "--out-dir", str(tmp_path)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = json.loads((tmp_path / "failures.json").read_text())
    assert len(rows) == 3 * (1 + 3 * 2)               # protocols x (baseline + cases)
    assert all(r["lost"] == 0 for r in rows)
    assert any(r.get("black_holed") for r in rows)    # the failures did bite
    assert "| 25% core | 1000 us | gse |" in (tmp_path / "failures.md").read_text()
