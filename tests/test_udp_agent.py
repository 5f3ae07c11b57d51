"""``gse agent``: one node per process from its configuration, and that configuration.

The end-to-end test starts a switch and two hosts as separate processes on loopback
addresses, lets the hosts exchange a message each way, stops the switch with SIGTERM and
reads what every agent wrote.  Bounds are generous (a loaded two-core machine takes a
second or more just to start three Python processes).
"""

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time

import pytest

from gse.config import ConfigError, GseConfig
from gse.runtimes.udp.config import (FORMAT, check_node_config, load_node_config,
                                     loopback_addresses, node_configs, protocol_config, udp_profile,
                                     write_node_configs)
from gse.runtimes.udp.io import Scheduler
from gse.runtimes.udp.netns import kernel_drops
from gse.runtimes.udp.build import build_node
from gse.runtimes.udp.results import summarize_agent_outputs
from gse.wire.codec import encode, payload_pattern
from gse.wire.packet import ACK, DATA, PRIO_DATA, Packet
from gse.workloads.traffic import Message
from topologies.fattree import fat_tree
from topologies.topology import Topology
from udp_fakes import FakeEndpoint

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tiny_topology(gbps=0.2):
    topo = Topology("tiny")
    h0 = topo.add_node("h0", "host", 0)
    h1 = topo.add_node("h1", "host", 0)
    s0 = topo.add_node("s0", "edge", 1)
    topo.add_link(h0, s0, gbps, 1_000_000)
    topo.add_link(h1, s0, gbps, 1_000_000)
    return topo.finalize()


def free_addresses(n):
    """n (ip, port) pairs on a loopback /24 of this test run, each port free when chosen."""
    rnd = random.Random(os.getpid() ^ int(time.time()))
    base = "127.%d.%d." % (rnd.randrange(100, 250), rnd.randrange(1, 250))
    out = []
    for i in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((base + str(i + 1), 0))
        out.append(s.getsockname())
        s.close()
    return out


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    return e


def start_agent(path, *extra):
    return subprocess.Popen([sys.executable, "-m", "gse", "agent", "--config", path] +
                            list(extra), env=env(), cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_agents_in_separate_processes_exchange_messages(tmp_path):
    topo = tiny_topology()
    msgs = [Message(1, 0, 1, 60_000), Message(2, 1, 0, 20_000, start_ps=1_000_000_000)]
    cfg = udp_profile(GseConfig())
    run = {"start_at_unix": time.time() + 2.0, "timeout_s": 40.0, "linger_s": 0.3,
           "loop": "asyncio"}
    confs = node_configs(topo, msgs, "gse", cfg, seed=3, address_of=free_addresses(3),
                         loss_rate=0.01, output_dir=str(tmp_path), run=run)
    paths = write_node_configs(confs, str(tmp_path / "conf"))
    procs = [start_agent(p) for p in paths]
    try:
        rc_hosts = [procs[i].wait(timeout=60) for i in (0, 1)]
        sw = procs[2]
        time.sleep(0.2)
        assert sw.poll() is None, sw.stderr.read()           # a switch runs until told
        sw.send_signal(signal.SIGTERM)
        rc_switch = sw.wait(timeout=30)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    errs = [p.stderr.read() for p in procs]
    assert rc_hosts == [0, 0], errs
    assert rc_switch == 0, errs
    counters = {c["name"]: json.loads(open(c["output"]["counters"]).read()) for c in confs}
    assert counters["h0"]["exit"] == counters["h1"]["exit"] == "done"
    assert counters["s0"]["exit"] == "signal" and counters["s0"]["forwarded"] > 0
    for c in counters.values():
        assert c["malformed_total"] == 0 and c["errors"] == [] and c["foreign"] == 0
    recs = [json.loads(open(c["output"]["records"]).read()) for c in confs[:2]]
    assert recs[0]["sent"][0]["msg_id"] == 1 and "finish_ps" in recs[0]["sent"][0]
    assert recs[1]["received"] == [{"src": 0, "msg_id": 1, "size": 60_000,
                                    "deliver_ps": recs[1]["received"][0]["deliver_ps"]}]
    summary, records = summarize_agent_outputs(
        topo, msgs, cfg, [c["output"]["counters"] for c in confs],
        [c["output"]["records"] for c in confs[:2]])
    assert summary["lost"] == 0 and summary["completed"] == 2
    assert summary["udp"]["payload_bytes"] >= 80_000
    assert summary["runtime"] == "agents" and summary["udp"]["exits"]["done"] == 2


def test_several_nodes_in_one_agent_process(tmp_path):
    """``gse agent --config A --config B``: the switch and one host share a process (and,
    as root, open their sockets in a named namespace -- here the test's own -- as a
    grouped Mininet placement does); each node writes its own files."""
    topo = tiny_topology()
    msgs = [Message(1, 0, 1, 60_000), Message(2, 1, 0, 20_000)]
    cfg = udp_profile(GseConfig())
    run = {"start_at_unix": time.time() + 2.0, "timeout_s": 40.0, "linger_s": 0.3,
           "loop": "asyncio", "precise_timers": True}
    confs = node_configs(topo, msgs, "gse", cfg, seed=3, address_of=free_addresses(3),
                         output_dir=str(tmp_path), run=run)
    if os.geteuid() == 0:
        for c in confs[1:]:
            c["netns"] = os.getpid()
    paths = write_node_configs(confs, str(tmp_path / "conf"))
    alone = start_agent(paths[0])
    shared = start_agent(paths[1], "--config", paths[2])
    try:
        rcs = [alone.wait(timeout=60), shared.wait(timeout=60)]
    finally:
        for p in (alone, shared):
            if p.poll() is None:
                p.kill()
                p.wait()
    errs = [p.stderr.read() for p in (alone, shared)]
    assert rcs == [0, 0], errs
    counters = {c["name"]: json.loads(open(c["output"]["counters"]).read()) for c in confs}
    assert counters["h1"]["exit"] == counters["s0"]["exit"] == "done"
    assert counters["s0"]["forwarded"] > 0 and counters["s0"]["process_nodes"] == 2
    assert counters["h1"]["timer_events"] > 0 and counters["s0"]["timer_events"] == 0
    summary, _ = summarize_agent_outputs(
        topo, msgs, cfg, [c["output"]["counters"] for c in confs],
        [c["output"]["records"] for c in confs[:2]])
    assert summary["lost"] == 0 and summary["completed"] == 2


def test_agent_writes_its_counters_on_sigint(tmp_path):
    topo = tiny_topology()
    confs = node_configs(topo, [Message(1, 0, 1, 10_000)], address_of=free_addresses(3),
                         output_dir=str(tmp_path), run={"start_delay_s": 0.0,
                                                        "timeout_s": 60.0,
                                                        # nobody answers it: no watchdog
                                                        "stall_s": 0})
    path = write_node_configs(confs, str(tmp_path / "conf"))[0]
    proc = start_agent(path)
    addr = tuple(confs[0]["bind"])
    try:
        deadline = time.time() + 30      # bound (and so its signal handlers installed)
        while not kernel_drops([addr]) and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)                  # the host is sending, its peer is not there
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == 1, proc.stderr.read()   # interrupted before its message was acknowledged
    c = json.loads(open(confs[0]["output"]["counters"]).read())
    assert c["exit"] == "signal" and c["complete"] is False
    assert c["agent"]["requests"] >= 0 and c["sent"] > 0
    rec = json.loads(open(confs[0]["output"]["records"]).read())
    assert rec["sent"][0]["msg_id"] == 1 and "finish_ps" not in rec["sent"][0]


def test_agent_reports_a_bad_configuration(tmp_path, capsys):
    from gse.cli.main import main
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": FORMAT, "node": 0, "name": "h0"}))
    assert main(["agent", "--config", str(bad)]) == 2
    assert "missing field 'role'" in capsys.readouterr().err
    assert main(["agent", "--config", str(tmp_path / "none.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_node_configs_describe_a_fat_tree():
    topo = fat_tree(4, link_gbps=0.5)
    msgs = [Message(1, 0, 15, 1000), Message(2, 3, 0, 2000)]
    confs = node_configs(topo, msgs, address_of=lambda n: ("10.0.%d.1" % n, 5000 + n))
    assert len(confs) == 36
    h0 = confs[0]
    assert h0["role"] == "host" and h0["bind"] == ["10.0.0.1", 5000]
    assert [m["msg_id"] for m in h0["messages"]] == [1]
    assert h0["expect"] == [{"src": 3, "msg_id": 2, "size": 2000}]
    edge = confs[16]
    assert edge["role"] == "switch" and len(edge["ports"]) == 4
    assert edge["ports"][0]["peer_addr"] == ["10.0.0.1", 5000]
    assert edge["ports"][0]["faces_host"] and edge["next_hops"][0] == [0]
    assert all(check_node_config(json.loads(json.dumps(c))) for c in confs)
    # addresses must agree with what the neighbour binds
    for c in confs:
        for p in c["ports"]:
            assert p["peer_addr"] == confs[p["peer"]]["bind"]
    assert loopback_addresses(topo)[35] == ("127.77.0.36", 47000)


@pytest.mark.parametrize("mutate, message", [
    (lambda c: c.pop("bind"), "missing field 'bind'"),
    (lambda c: c.update(role="router"), "'role' must be"),
    (lambda c: c["ports"][0].update(gbps=0), "'gbps' must be a finite number >= 0.001"),
    (lambda c: c["ports"][0].update(peer_addr=["1.2.3.4"]), "address must be [ip, port]"),
    (lambda c: c["run"].update(speed=3), "unknown run option 'speed'"),
    (lambda c: c["next_hops"].__setitem__(0, [9]), "next_hops[0]"),
    (lambda c: c.update(max_datagram=10), "'max_datagram'"),
])
def test_config_errors_name_the_field(mutate, message):
    conf = node_configs(fat_tree(4), [], address_of=loopback_addresses(fat_tree(4)))[16]
    mutate(conf)
    with pytest.raises(ConfigError) as err:
        check_node_config(conf, "edge.json")
    assert message in str(err.value) and "edge.json" in str(err.value)


def test_load_node_config_errors(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{not json")
    with pytest.raises(ConfigError, match="not JSON"):
        load_node_config(str(p))


def test_host_drops_data_whose_payload_is_not_the_pattern():
    """A datagram with a valid checksum but foreign bytes never reaches the agent."""
    import asyncio
    topo = tiny_topology()
    conf = node_configs(topo, [], address_of=loopback_addresses(topo))[1]
    loop = asyncio.new_event_loop()
    try:
        sched = Scheduler(loop)
        node = build_node(conf, sched, FakeEndpoint(), protocol_config(conf))
        peer = tuple(conf["ports"][0]["peer_addr"])
        pkt = Packet(DATA, 0, 1, msg_id=1, psn=0, payload_len=100, msg_len=100,
                     prio=PRIO_DATA)
        pkt.payload = bytes(100)               # not payload_pattern(0, 1, 0, 100)
        node.datagram(encode(pkt), peer)
        assert node.payload_errors == 1 and not node.delivered
        pkt.payload = payload_pattern(0, 1, 0, 100)
        node.datagram(encode(pkt), peer)
        assert node.payload_bytes == 100 and (0, 1) in node.delivered
        node.datagram(encode(Packet(ACK, 0, 1, msg_id=5)), ("127.9.9.9", 1))
        assert node.foreign == 1
        sched.close()
    finally:
        loop.close()


def test_cli_writes_agent_configs(tmp_path, capsys):
    from gse.cli.main import main
    out = tmp_path / "nodes"
    assert main(["agent-configs", "--k", "4", "--traffic", "permutation", "--size", "10000",
                 "--out-dir", str(out), "--base-ip", "127.79.0.0", "--port", "46000"]) == 0
    assert "wrote 36 node configurations" in capsys.readouterr().out
    h0 = load_node_config(str(out / "h0.json"))
    assert h0["bind"] == ["127.79.0.1", 46000] and len(h0["messages"]) == 1
    assert h0["output"]["counters"] == str(out / "h0.counters.json")
    assert h0["agent"]["params"]["rto_ps"] == 30_000_000_000


def _hosts_then_switch(procs, meanwhile=None):
    """Hosts h0, h1 and switch s0 (in that order): ``meanwhile()``, wait for the hosts,
    stop the switch with SIGTERM, reap whatever is left; the hosts' exit codes."""
    try:
        if meanwhile is not None:
            meanwhile()
        rcs = [procs[i].wait(timeout=100) for i in (0, 1)]
        procs[2].send_signal(signal.SIGTERM)
        procs[2].wait(timeout=100)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return rcs


def test_a_host_waits_for_every_host_before_it_leaves(tmp_path):
    """With a runner's ``done_dir`` a host that has finished marks it and stays -- its
    peers may still need its final ACKs (a sender whose last ACK a failed link took
    retransmits into a receiver that had left: a Mininet run that never ended) -- until
    the runner writes ALL."""
    topo = tiny_topology()
    msgs = [Message(1, 0, 1, 30_000), Message(2, 1, 0, 30_000)]
    done = tmp_path / "done"
    done.mkdir()
    run = {"start_at_unix": time.time() + 2.0, "timeout_s": 120.0, "linger_s": 0.1,
           "loop": "asyncio", "done_dir": str(done)}
    confs = node_configs(topo, msgs, "gse", udp_profile(GseConfig()), seed=3,
                         address_of=free_addresses(3), output_dir=str(tmp_path), run=run)
    paths = write_node_configs(confs, str(tmp_path / "conf"))
    procs = [start_agent(p) for p in paths]

    def all_done():
        end = time.monotonic() + 100                  # a bound, not a measure
        while not {"h0", "h1"} <= set(os.listdir(done)) and time.monotonic() < end:
            time.sleep(0.05)
        assert {"h0", "h1"} <= set(os.listdir(done)), [p.poll() for p in procs]
        time.sleep(1.0)                               # ten lingers: still there
        assert [p.poll() for p in procs] == [None, None, None]
        (done / "ALL").write_text("")
    rcs = _hosts_then_switch(procs, all_done)
    assert rcs == [0, 0], [p.stderr.read() for p in procs]
    for name in ("h0", "h1"):
        c = json.loads((tmp_path / (name + ".counters.json")).read_text())
        assert c["exit"] == "done" and c["complete"]


def test_agents_start_a_triggered_failure_schedule_from_one_origin(tmp_path):
    """A schedule triggered by the traffic among agent processes: the node whose packets
    over the schedule's links reach the count writes the origin (a wall-clock instant),
    every agent with failures to play takes them from it on its own clock."""
    from gse.workloads.faults import build_schedule
    topo = tiny_topology()
    msgs = [Message(1, 0, 1, 200_000), Message(2, 1, 0, 200_000)]
    sched = build_schedule(topo, ["link:h0-s0@0ms,restore=30ms"], after_packets=8)
    origin = tmp_path / "origin.json"
    run = {"start_at_unix": time.time() + 2.0, "timeout_s": 120.0, "linger_s": 0.3,
           "loop": "asyncio", "fault_origin_file": str(origin)}
    confs = node_configs(topo, msgs, "gse", udp_profile(GseConfig()), seed=3,
                         address_of=free_addresses(3), output_dir=str(tmp_path), run=run,
                         faults=sched, detect_ps=-1)
    assert [p.get("trigger_packets") for c in confs for p in c["ports"]] == [8, None, 8, None]
    paths = write_node_configs(confs, str(tmp_path / "conf"))
    procs = [start_agent(p) for p in paths]
    rcs = _hosts_then_switch(procs)
    assert rcs == [0, 0], [p.stderr.read() for p in procs]
    written = json.loads(origin.read_text())
    assert written["by"] in ("h0", "s0") and written["origin_unix"] > run["start_at_unix"]
    counters = {n: json.loads((tmp_path / (n + ".counters.json")).read_text())
                for n in ("h0", "h1", "s0")}
    fired = counters[written["by"]]["fault_trigger"]
    assert fired["fired_us"] is not None and fired["packets_seen"] >= 8
    assert counters["h1"]["fault_origin_ps"] is None        # nothing to play
    for n in ("h0", "s0"):                                  # down and up, from the origin
        assert counters[n]["fault_origin_ps"] is not None
        (port,) = [p for p in counters[n]["ports"] if p.get("faults")]
        assert port["faults"]["events"] == 2


def test_under_secure_an_agent_runs_its_configuration_once(tmp_path, capsys):
    """Issue 25: a second start of one configuration would repeat its run's salt and
    epoch, so every (key, nonce) pair: it is refused, naming what to do."""
    pytest.importorskip("cryptography")
    from gse.cli.main import main
    key = tmp_path / "domain.key"
    key.write_text("cd" * 32 + "\n")
    out = tmp_path / "nodes"
    assert main(["agent-configs", "--k", "4", "--traffic", "permutation", "--size", "10000",
                 "--out-dir", str(out), "--base-ip", "127.79.0.0", "--port", "46100",
                 "--secure", str(key), "--timeout-s", "2"]) == 0
    assert "--secure: epoch 1 of" in capsys.readouterr().out
    h0 = load_node_config(str(out / "h0.json"))
    assert h0["secure"]["epoch"] == 1 and len(h0["secure"]["salt"]) == 32
    assert main(["agent", "--config", str(out / "h0.json"), "--timeout-s", "0.5"]) in (0, 1)
    capsys.readouterr()
    assert main(["agent", "--config", str(out / "h0.json")]) == 2
    assert "already used by a run of this node" in capsys.readouterr().err
