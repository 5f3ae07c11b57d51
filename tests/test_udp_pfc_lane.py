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
import random

import pytest

from gse.config import ConfigError
from gse.protocols import default_config
from gse.runtimes.udp.config import (check_node_config, loopback_addresses, node_configs,
                                     udp_profile)
from gse.runtimes.udp.io import Endpoint, Reactor, Scheduler, open_udp_socket
from gse.runtimes.udp.network import run_udp
from gse.workloads.traffic import incast
from topologies.fattree import fat_tree


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
    topo = fat_tree(4, link_gbps=0.1)
    cfg = udp_profile(default_config("roce"), link_gbps=0.1)
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
