"""The k=4 Fat-Tree in Mininet: a ``gse agent`` per namespace, GSE and RoCE/PFC (issue 5).

Needs root and Mininet (``scripts/setup-mininet.sh``; CI runs as root): skipped elsewhere
with the reason.  Every test checks that the network leaves nothing behind -- no process,
no network namespace, no interface in the root namespace, no file descriptor of ours --
also after a run stopped by SIGTERM or killed with SIGKILL (attributed by pid start time,
so that another network on the machine reusing a pid or namespace number is not ours).
Assertions are about correctness (every message delivered exactly once and intact, no
loss, PFC lossless), never about speed: a busy two-core machine changes the times, not
these.  About a minute in all on an idle two-core machine.
"""

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from gse.protocols import default_config
from gse.runtimes.mininet.environment import mininet_unavailable
from gse.runtimes.mininet.fabric import BUFFER_SYSCTLS, MininetFabric
from gse.runtimes.mininet.system import (boot_ticks, left_behind, read_sysctl, root_interfaces,
                                         write_sysctl)
from gse.runtimes.udp.config import udp_profile
from gse.workloads.traffic import incast, permutation
from harness import received_by_agents
from mininet_calibration import GBPS, timeout_s
from topologies.fattree import fat_tree
from topologies.registry import add_topology_options, build_topology

REASON = mininet_unavailable()
pytestmark = pytest.mark.skipif(REASON is not None, reason="Mininet: %s" % REASON)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The emulated link rate and the runs' bound come from a calibration on a loaded machine
# (tests/mininet_calibration.py).  What the tests assert does not depend on the rate
# being faithful; the rate keeps the runs short and their queues those the protocols are
# meant to handle.


def snapshot():
    """What a network could leave on the machine, seen from the outside.  Not the set of
    all namespaces: another network on the machine (a test run elsewhere) may be making
    its own meanwhile; ours are checked by ``left_behind`` from the network's state."""
    return {"veths": {i for i in root_interfaces()
                      if os.path.exists("/sys/class/net/%s/veth" % i) or "-eth" in i},
            "named_netns": set(os.listdir("/var/run/netns"))
            if os.path.isdir("/var/run/netns") else set(),
            "fds": len(os.listdir("/proc/self/fd")),
            "children": _children()}


def _children():
    me = str(os.getpid())
    kids = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    if f.read().rsplit(")", 1)[1].split()[1] == me:
                        kids.add(int(entry))
            except (OSError, IndexError):
                pass
    return kids


def assert_nothing_new(before, state=None, within_s=60.0):
    """Nothing of the network remains (polling: a killed process takes a moment)."""
    end = time.monotonic() + within_s
    while True:
        after = snapshot()
        left = left_behind(state) if state is not None else {}
        new = {"veths": after["veths"] - before["veths"],
               "named_netns": after["named_netns"] - before["named_netns"],
               "children": after["children"] - before["children"]}
        new = {k: v for k, v in new.items() if v}
        if not left and not new and after["fds"] <= before["fds"]:
            return
        if time.monotonic() > end:
            raise AssertionError("left behind: %s %s (fds %d -> %d)"
                                 % (left, new, before["fds"], after["fds"]))
        time.sleep(0.2)


@pytest.mark.parametrize("name", ["fat-tree", "spine-leaf-rail"])
def test_builder_lays_out_the_topology_and_removes_it(name):
    """k=4 Fat-Tree; the seed's Spine-Leaf (80 nodes, 128 links: its /31s reach x.y.z.255,
    which a classful broadcast address would make unreachable)."""
    before = snapshot()
    p = argparse.ArgumentParser()
    add_topology_options(p)
    topo = build_topology(p.parse_args(["--topology", name, "--k", "4",
                                        "--link-gbps", str(GBPS)]))
    fab = MininetFabric(topo)
    try:
        fab.start()
        assert len(fab.nodes) == len(topo.nodes)
        assert len(fab.net.links) == len(topo.links)
        assert len(set(fab.namespaces)) == len(topo.nodes)   # a namespace per node
        assert not set(fab.state()["interfaces"]) & root_interfaces()
        top = max(range(len(topo.nodes)), key=lambda n: topo.nodes[n].tier)
        out = fab.nodes[top].cmd("ip -o -4 addr show scope global")
        assert out.count("/31") == len(topo.nodes[top].ports), out   # a /31 per link
        assert " brd " not in out, out
        for la in fab.plan:                                  # every link answers
            out = fab.nodes[la.a].cmd("ping -c1 -W2 -q %s >/dev/null; echo rc=$?" % la.ip_b)
            assert "rc=0" in out, (la.as_dict(), out)
    finally:
        fab.stop()
    assert fab.errors == []
    assert fab.left_behind() == {}
    assert_nothing_new(before, fab.state())


def _messages(workload):
    if workload == "permutation":
        return permutation(16, 40_000, random.Random(1))
    return incast(16, 6, 40_000, random.Random(1), receiver=0)


# (workload, protocol, placement, precise timers, loss per link): every protocol in both
# workloads, every placement, fabric mode also under loss.
CASES = [("permutation", "gse", "node", False, 0.0),
         ("incast", "gse", "switches", True, 0.0),
         ("permutation", "roce", "tier", True, 0.0),
         ("incast", "roce", "node", False, 0.0),
         ("permutation", "gse-fabric", "switches", True, 0.0),
         ("incast", "gse-fabric", "switches", True, 0.01)]


def _config(protocol):
    cfg = udp_profile(default_config(protocol), link_gbps=GBPS)
    if protocol == "roce":          # a low XOFF: a small backlog already pauses
        cfg.pfc_xoff_bytes = 4 * 4160
        cfg.pfc_xon_bytes = 2 * 4160
        cfg.validate()
    return cfg


@pytest.mark.parametrize("workload,protocol,placement,precise,loss", CASES,
                         ids=["%s-%s-%s%s" % (w, p, pl, "-loss" if loss else "")
                              for w, p, pl, _, loss in CASES])
def test_every_message_delivered_exactly_once(tmp_path, workload, protocol, placement,
                                              precise, loss):
    """Only what holds however busy the machine is: late agents make a run slower and
    its queues shorter, never lose, duplicate or corrupt a message, make PFC drop, or
    leave anything behind."""
    from gse.runtimes.mininet.run import placement_groups, run_mininet
    before = snapshot()
    topo = fat_tree(4, link_gbps=GBPS)
    msgs = _messages(workload)
    cfg = _config(protocol)
    res = run_mininet(topo, msgs, protocol, cfg, seed=1, loss_rate=loss,
                      timeout_s=timeout_s(topo, msgs, protocol, cfg),
                      out_dir=str(tmp_path), placement=placement, precise_timers=precise)
    s = res.summary
    mn = s["mininet"]
    processes = len(placement_groups(topo, placement))
    assert mn["end"] == "done", mn
    assert mn["processes"] == processes and mn["placement"] == placement
    assert mn["exit_codes"] == {"0": processes} and mn["missing_outputs"] == []
    assert mn["left_behind"] == {} and mn["fabric_errors"] == []
    assert s["runtime"] == "mininet" and s["protocol"] == protocol
    assert s["messages"] == s["delivered"] == len(msgs) and s["lost"] == 0
    assert all(r.deliver_ps >= 0 and r.finish_ps >= 0 for r in res.records)
    udp = s["udp"]
    for key in ("duplicate_deliveries", "payload_errors", "malformed_total", "foreign",
                "agent_errors", "unroutable"):
        assert udp[key] == 0, (key, udp)
    assert udp["errors"] == [] and udp["payload_bytes"] >= sum(m.size for m in msgs)
    assert udp["precise_timers"] == precise
    # exactly once, from the receivers' own files
    assert received_by_agents(tmp_path / "agents") == sorted(
        (m.src, m.msg_id, m.size) for m in msgs)
    # GSE trims, RoCE pauses, fabric mode schedules: no queue drops (losses on the wire,
    # where injected, are recovered: nothing lost above)
    assert s["queue_drops"] == 0
    assert (s["wire_drops"] > 0) == (loss > 0)
    if protocol == "roce":
        assert s["trims"] == 0
        # PFC acts whenever an ingress passes XOFF, and the PAUSEs reach the upstream
        # ports, which hold (how often depends on the machine, that it does not)
        if s["pfc_peak_ingress_bytes"] > cfg.pfc_xoff_bytes:
            assert s["pfc_pauses"] > 0
        assert (s["pfc_pauses"] > 0) == (s["paused_time_us"] > 0)
    else:
        assert s["pfc_pauses"] == 0
    if protocol == "gse-fabric":
        f = s["fabric"]
        assert f["leaves"] == f["leaves_idle"] == 8, f     # every VOQ and buffer freed
        assert f["voqs_live"] == 0 and f["requests"] > 0 and f["grants"] > 0
        assert f["bad_frames"] == f["stray"] == 0
        if workload == "incast":     # in kind as simulated: the queue waits at the edge
            peak = s["peak_queue_bytes"]
            assert peak["agg"] <= cfg.queue_bytes // 2 and peak["core"] <= cfg.queue_bytes // 2
    assert_nothing_new(before, json.loads((tmp_path / "fabric.json").read_text()))


def _start_experiment(out_dir):
    cmd = [sys.executable, os.path.join(ROOT, "experiments", "mininet_fattree.py"),
           "--workload", "permutation", "--protocol", "gse", "--no-sim",
           "--size", "20000000", "--link-gbps", "0.005", "--timeout-s", "120",
           "--out-dir", str(out_dir)]        # not --quiet: the progress line runs too
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    state_path = out_dir / "permutation-gse-mininet" / "fabric.json"
    end = time.monotonic() + 300          # a bound, generous for a loaded machine
    while time.monotonic() < end and proc.poll() is None:
        try:
            state = json.loads(state_path.read_text())
            if len(state["program_pids"]) == 36:
                return proc, state_path
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.2)
    proc.kill()
    out, err = proc.communicate()
    raise AssertionError("the experiment did not start its agents: %s %s" % (out, err))


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_an_interrupted_run_leaves_nothing_behind(tmp_path, how):
    before = snapshot()
    sysctls = {name: read_sysctl(name) for name in BUFFER_SYSCTLS}
    try:
        _interrupt(tmp_path, how, before, sysctls)
    finally:                       # a SIGKILLed run cannot put the buffer ceilings back
        for name, value in sysctls.items():
            if read_sysctl(name) != value:
                write_sysctl(name, value)


def _interrupt(tmp_path, how, before, sysctls):
    proc, state_path = _start_experiment(tmp_path)
    time.sleep(1.0)                                    # agents busy starting / running
    proc.send_signal(getattr(signal, how))
    try:
        _out, err = proc.communicate(timeout=300)     # a bound: tear-down on a busy machine
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    killed_at = boot_ticks()
    state = json.loads(state_path.read_text())
    if state["stopped_ticks"] is None:                 # SIGKILL: stop() never ran
        state["stopped_ticks"] = killed_at
    if how == "SIGTERM":                               # the handler tore the network down
        assert proc.returncode == 130, err
        assert "interrupted" in err
        assert state["stopped"] and state["teardown_s"] is not None
        assert {name: read_sysctl(name) for name in BUFFER_SYSCTLS} == sysctls
    else:                                              # PR_SET_PDEATHSIG did
        assert proc.returncode == -signal.SIGKILL
    assert_nothing_new(before, state)
