"""The no-progress watchdog over real UDP: in one process (``gse run --runtime udp``) and
in ``gse agent`` processes.  Delivery and outcomes are asserted, never speed: the spans
are on the run's real clock, far above what a loaded machine delays a loopback run."""

import json
import os
import socket
import subprocess
import sys
import time

from gse.cli.main import main
from gse.config import GseConfig
from gse.runtimes.udp.agent_process import EXIT_STALLED
from gse.runtimes.udp.config import node_configs, udp_profile, write_node_configs
from gse.runtimes.udp.network import run_udp
from gse.workloads.traffic import Message
from topologies.fattree import fat_tree

from test_udp_agent import tiny_topology

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEAD = "tier:agg-core:100%@10us,detect=never"


def test_gse_run_on_a_dead_fabric_ends_with_what_is_stuck(tmp_path, capsys):
    out = tmp_path / "s.json"
    rc = main(["run", "--runtime", "udp", "--k", "4", "--link-gbps", "0.2", "--traffic",
               "permutation", "--size", "100000", "--fail", DEAD, "--stall-us", "500000",
               "--timeout-s", "120", "--quiet", "--json", str(out)])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert "gse run: error: no progress for" in err and "waiting for a path" in err
    s = json.loads(out.read_text())
    assert s["end"] == s["udp"]["end"] == "stalled" and s["complete"] is False
    st = s["stall"]
    assert st["span_us"] == 500_000 and st["unfinished"] == s["lost"] > 0
    assert st["waiting"]["path"] > 0


def test_messages_that_start_late_are_not_a_stall_over_udp():
    topo = fat_tree(4, link_gbps=0.2)
    msgs = [Message(1, 0, 15, 20_000, start_ps=3_000_000_000_000)]   # at 3 s
    res = run_udp(topo, msgs, timeout_s=120.0, stall_ps=1_000_000_000_000)   # span 1 s
    s = res.summary
    assert s["end"] == "done" and s["complete"] is True and "stall" not in s
    assert s["lost"] == 0


def lone_host(tmp_path, **run):
    """Host h0 of a host-switch-host fabric, started alone: nothing it sends is
    answered."""
    topo = tiny_topology()
    opts = {"timeout_s": 120.0, "loop": "asyncio"}
    opts.update(run)
    # it binds a port free when chosen; its switch "is" at the discard port
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    mine = sock.getsockname()
    sock.close()
    confs = node_configs(topo, [Message(1, 0, 1, 30_000)], "gse", udp_profile(GseConfig()),
                         address_of=[mine, ("127.0.0.1", 9), ("127.0.0.1", 9)],
                         output_dir=str(tmp_path), run=opts)
    path = write_node_configs(confs, str(tmp_path / "conf"))[0]
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "gse", "agent", "--config", path], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    counters = json.loads(open(confs[0]["output"]["counters"]).read())
    return proc, counters


def test_an_agent_whose_messages_get_nowhere_exits_stalled(tmp_path):
    proc, c = lone_host(tmp_path, stall_s=0.5, start_delay_s=0.0)
    assert proc.returncode == EXIT_STALLED, proc.stderr
    assert "error: no progress for" in proc.stderr and "Traceback" not in proc.stderr
    assert c["exit"] == "stalled" and c["complete"] is False
    assert c["stall"]["span_us"] == 500_000 and c["stall"]["unfinished"] == 1
    assert c["waiting"] == c["stall"]["waiting"] and sum(c["waiting"].values()) == 1


def test_an_agent_started_late_says_so(tmp_path):
    proc, c = lone_host(tmp_path, stall_s=0.5, start_at_unix=time.time() - 3.0)
    assert proc.returncode == EXIT_STALLED, proc.stderr
    assert c["late_start_s"] >= 3.0
    assert "after run.start_at_unix" in proc.stderr
    from gse.runtimes.udp.results import summarize_agent_outputs
    topo = fat_tree(4)                    # (the summary only needs hosts 0 and 1)
    summary, _ = summarize_agent_outputs(
        topo, [Message(1, 0, 1, 30_000)], GseConfig(), [str(tmp_path / "h0.counters.json")],
        [str(tmp_path / "h0.records.json")])
    assert summary["udp"]["late_starts"] == 1
    assert summary["udp"]["late_start_max_s"] >= 3.0
    assert summary["stall"]["agents_stalled"] == 1
