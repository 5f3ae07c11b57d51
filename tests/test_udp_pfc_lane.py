"""PFC lanes (issue 27): a node's PAUSE and RESUME arrive on a socket of their own, which
the reactor reads before the data sockets and the scheduler before it fires timers.

The reactor and the scheduler are driven by hand on real sockets (no waiting on the
loop); the configuration is checked as ``gse agent`` reads it; and a RoCE incast through
the in-process runtime must carry every PFC frame on the lanes (the nodes' lane
counters), with the lags counted, while ``GSE_PFC_LANE=0`` puts them back on the data
sockets.
"""

import asyncio
import copy
import json
import os
import random
import socket
import subprocess
import sys
import time

import pytest

from gse.config import ConfigError
from gse.protocols import default_config
from gse.runtimes.udp.config import (check_node_config, loopback_addresses, node_configs,
                                     udp_profile)
from gse.runtimes.udp.io import Endpoint, Reactor, Scheduler, open_udp_socket
from gse.runtimes.udp.config import write_node_configs
from gse.runtimes.udp.network import run_udp
from gse.runtimes.udp.results import summarize_agent_outputs
from gse.workloads.traffic import Message, incast
from test_udp_agent import ROOT, free_addresses
from topologies.fattree import fat_tree
from topologies.topology import Topology


def _endpoint(name, lane=False):
    ep = Endpoint(open_udp_socket("127.0.0.1", 0, what=name), name)
    ep.lane = lane
    return ep


def test_the_reactor_and_the_scheduler_read_the_lane_first():
    loop = asyncio.new_event_loop()
    seen = []
    data, lane = _endpoint("data"), _endpoint("lane", lane=True)
    sender = open_udp_socket("127.0.0.1", 0, what="sender")
    sched = Scheduler(loop, True)
    try:
        async def start():
            await data.start(lambda d, a: seen.append(("data", d)))
            await lane.start(lambda d, a: seen.append(("lane", d)))
        loop.run_until_complete(start())
        reactor = Reactor.ACTIVE[loop]
        assert list(reactor.lanes) == [lane.fd]
        for i in range(5):
            sender.sendto(b"d%d" % i, data.addr)
        sender.sendto(b"pause", lane.addr)
        reactor._ready()
        assert seen[0] == ("lane", b"pause")
        assert [d for who, d in seen[1:]] == [b"d%d" % i for i in range(5)]
        # a timer that falls due: the lane first
        seen.clear()
        sched.at(0, lambda t, arg: seen.append(("timer", arg)), "t")
        sender.sendto(b"resume", lane.addr)
        sched._fire()
        assert seen == [("lane", b"resume"), ("timer", "t")]
    finally:
        sched.close()
        loop.run_until_complete(data.close())
        loop.run_until_complete(lane.close())
        assert loop not in Reactor.ACTIVE
        sender.close()
        loop.close()


def test_node_configs_give_pfc_protocols_lanes():
    topo = fat_tree(4, link_gbps=0.1)
    addrs = loopback_addresses(topo)
    lanes = [(ip, port + 1) for ip, port in addrs]
    confs = node_configs(topo, [], "roce", address_of=addrs, pfc_lanes=lanes)
    for conf in confs:
        assert conf["pfc_bind"] == list(lanes[conf["node"]])
        for pc in conf["ports"]:
            assert pc["peer_pfc_addr"] == list(lanes[pc["peer"]])
    # no PFC, no lanes
    for conf in node_configs(topo, [], "gse", address_of=addrs, pfc_lanes=lanes):
        assert "pfc_bind" not in conf
        assert not any("peer_pfc_addr" in pc for pc in conf["ports"])
    bad = copy.deepcopy(confs[20])
    bad["pfc_bind"] = ["127.0.0.1", 70000]
    with pytest.raises(ConfigError, match="pfc_bind"):
        check_node_config(bad)
    bad = copy.deepcopy(confs[20])
    bad["ports"][1]["peer_pfc_addr"] = ["127.0.0.1", 0]
    with pytest.raises(ConfigError, match="port 1 field 'peer_pfc_addr'"):
        check_node_config(bad)


def _roce_incast():
    # XOFF at three packets: the 8:1 incast pauses however little CPU the run gets (with
    # the deployed 62 kB a starved process may never build the queue that far)
    topo = fat_tree(4, link_gbps=0.1)
    cfg = udp_profile(default_config("roce"), link_gbps=0.1)
    cfg.pfc_xoff_bytes, cfg.pfc_xon_bytes = 12_480, 6_240
    return topo, incast(len(topo.hosts), 8, 100_000, random.Random(1), receiver=0), cfg


@pytest.mark.parametrize("lanes", [True, False])
def test_roce_incast_carries_pfc_frames_on_the_lanes(lanes, monkeypatch):
    if not lanes:
        monkeypatch.setenv("GSE_PFC_LANE", "0")
    topo, msgs, cfg = _roce_incast()
    s = run_udp(topo, msgs, "roce", cfg, timeout_s=60).summary
    udp = s["udp"]
    assert s["delivered"] == 8 and udp["end"] == "done" and not udp["errors"]
    assert udp["kernel_drops"] == 0 and udp["duplicate_deliveries"] == 0
    accepted = udp["pfc_in"]["accepted"]
    assert s["pfc_pauses"] > 0 and accepted > 0
    lag = udp["pfc_lag_us"]
    assert lag["frames"] == accepted
    assert 0 <= lag["p50"] <= lag["p90"] <= lag["p99"] <= lag["max"]
    assert lag["lane"] == (accepted if lanes else 0)


def _star(n_hosts, gbps):
    topo = Topology("star")
    hosts = [topo.add_node("h%d" % i, "host", 0) for i in range(n_hosts)]
    s0 = topo.add_node("s0", "edge", 1)
    for h in hosts:
        topo.add_link(h, s0, gbps, 1_000_000)
    return topo.finalize()


def test_agent_processes_carry_pfc_frames_on_their_lanes(tmp_path):
    """``gse agent``: a 2:1 RoCE incast through one switch, the three nodes in one agent
    process on loopback addresses, each with its PFC lane: the switch pauses the senders,
    every frame the hosts admit came by their lanes, and nothing else did."""
    # 0.02 Gb/s (600 packets a second per sender) and XOFF at two packets: the 2:1 incast
    # pauses even when the agents get little CPU (the pure build beside other work), where
    # at 0.1 Gb/s and the deployed 62 kB XOFF a slow process never built the queue
    topo = _star(3, 0.02)
    msgs = [Message(1, 1, 0, 300_000), Message(2, 2, 0, 300_000)]
    cfg = udp_profile(default_config("roce"), link_gbps=0.02)
    cfg.pfc_xoff_bytes, cfg.pfc_xon_bytes = 8_320, 4_160
    addrs = free_addresses(4)
    lanes = [_free_port(ip) for ip, _ in addrs]   # a second free port at each address
    run = {"start_at_unix": time.time() + 2.0, "timeout_s": 40.0, "linger_s": 0.3,
           "loop": "asyncio", "precise_timers": True}
    confs = node_configs(topo, msgs, "roce", cfg, seed=3, address_of=addrs,
                         output_dir=str(tmp_path), run=run, pfc_lanes=lanes)
    paths = write_node_configs(confs, str(tmp_path / "conf"))
    proc = subprocess.Popen([sys.executable, "-m", "gse", "agent", "--config", paths[0],
                             "--config", paths[1], "--config", paths[2], "--config", paths[3]],
                            env=dict(os.environ, PYTHONPATH=ROOT + os.pathsep
                                     + os.environ.get("PYTHONPATH", "")),
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == 0, proc.stderr.read()
    counters = {c["name"]: json.loads(open(c["output"]["counters"]).read()) for c in confs}
    assert counters["s0"]["pfc"]["pauses_sent"] > 0
    for c in counters.values():
        assert c["errors"] == [] and c["malformed_total"] == 0 and c["foreign"] == 0
        assert c["pfc_lane"]["datagrams"] == c["pfc_in"]["accepted"]
        assert c.get("pfc_lag", {}).get("frames", 0) == c["pfc_in"]["accepted"]
    assert sum(c["pfc_in"]["accepted"] for c in counters.values()) > 0
    summary, _ = summarize_agent_outputs(
        topo, msgs, cfg, [c["output"]["counters"] for c in confs],
        [c["output"]["records"] for c in confs[:3]])
    assert summary["lost"] == 0 and summary["completed"] == 2
    assert summary["udp"]["pfc_lag_us"]["lane"] == summary["udp"]["pfc_in"]["accepted"]


def _free_port(ip):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((ip, 0))
    addr = s.getsockname()
    s.close()
    return addr
