"""The attack suite of issue 25 over real UDP (``experiments/secure_attacks.py`` is the
harness): forgeries of every packet kind from a neighbour's real address, replays within a
run, an earlier run's capture replayed with the same key file, forged PAUSE frames.  Each
run asserts that every honest message arrives exactly once, intact and at its size, that
every injected datagram is counted where it arrived, and that none was accepted (every
switch port is tapped: a host opened exactly the genuine datagrams sent to it).  Then: no
(key, nonce) pair repeats across two runs with one key file, and what a forged PAUSE does
to a node, PFC on and off, on the node itself with its clock moved by hand."""

import asyncio
import os
import random
import sys

import pytest

pytest.importorskip("cryptography")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "experiments"))

import secure_attacks  # noqa: E402
import secure_nonces  # noqa: E402

from gse.protocols import default_config  # noqa: E402
from gse.runtimes.udp.build import build_node  # noqa: E402
from gse.runtimes.udp.config import loopback_addresses, node_configs, udp_profile  # noqa: E402
from gse.runtimes.udp.io import Scheduler  # noqa: E402
from gse.runtimes.udp.network import run_udp  # noqa: E402
from gse.wire.codec import encode  # noqa: E402
from gse.wire.packet import PAUSE, PRIO_CONTROL, PRIO_DATA, Packet  # noqa: E402
from gse.workloads import traffic  # noqa: E402
from topologies.fattree import fat_tree  # noqa: E402
from udp_fakes import FakeEndpoint  # noqa: E402

SIZE = 64 * 1024
GBPS = 0.05


@pytest.fixture
def key_file(tmp_path):
    path = tmp_path / "domain.key"
    path.write_text(bytes(random.Random(25).getrandbits(8) for _ in range(32)).hex() + "\n")
    return str(path)


def check(r, **counts):
    assert secure_attacks.honest(r), r
    assert r["kernel_drops"] == 0 and r["malformed"] == 0
    assert r["accepted"] == 0, r
    assert r["counted"] == r["injected"]["total"], r      # every injected datagram counted
    assert r["opened"] == r["genuine_to_hosts"]
    for name, n in counts.items():
        where = r["refused_pfc"] if name.startswith("pfc_") else r["refused_e2e"]
        assert where.get(name[4:] if name.startswith("pfc_") else name, 0) == n, (name, r)


@pytest.mark.parametrize("protocol,wire", [("gse", "gse"), ("roce", "gse"), ("gse", "uet")])
def test_forgeries_of_every_kind_from_a_neighbour_are_counted_and_none_accepted(
        key_file, protocol, wire):
    r = secure_attacks.suite(key_file, protocol, wire, ("forge", "pause"), SIZE, GBPS, 3)
    kinds = 7 if wire == "gse" else 6              # DATA, trimmed, REQUEST .. NACK (, CNP)
    check(r, unauthenticated=16 * kinds, auth_failed=16 * kinds)
    if wire == "uet":                              # (PFC has no UET form)
        return
    pauses = 16 * 2 * 2 + 80                       # to hosts (PAUSE, RESUME; clear,
    if protocol == "gse":                          # sealed), to all 80 switch ports
        assert r["refused_pfc"] == {"pfc_off": pauses} and r["pfc_taken"] == 0
    else:                                          # PFC on: the links' keys decide
        assert r["refused_pfc"] == {"pfc_off": 16, "unauthenticated": 32 + 64,
                                    "auth_failed": 32}
        assert r["pfc_taken"] == r["genuine_pfc"]


def test_replays_within_a_run_are_refused(key_file):
    r = secure_attacks.suite(key_file, "gse", "gse", ("replay",), SIZE, GBPS, 4)
    assert r["injected"]["replayed"] > 50
    check(r, replayed=r["injected"]["replayed"])


@pytest.mark.parametrize("wire", ["gse", "uet"])
def test_an_earlier_runs_capture_replayed_with_the_same_key_file_is_refused(key_file, wire):
    """Before issue 25 the counters restarted under the same key: the earlier run's
    datagrams authenticated, and 994 replays were accepted."""
    r = secure_attacks.suite(key_file, "gse", wire, ("earlier",), SIZE, GBPS, 5)
    assert r["injected"]["earlier_run"] > 200
    check(r, stale_epoch=r["injected"]["earlier_run"])


def test_no_key_nonce_pair_repeats_across_two_runs_with_one_key_file(key_file):
    topo = fat_tree(4, link_gbps=GBPS)
    msgs = traffic.permutation(16, SIZE, random.Random(6))
    recorder = secure_nonces.NonceRecorder().install()
    try:
        runs = []
        for _ in range(2):
            s = run_udp(topo, msgs, seed=6, timeout_s=90, secure_key_file=key_file).summary
            assert s["delivered"] == 16 and s["lost"] == 0
            runs.append(recorder.take())
    finally:
        recorder.uninstall()
    rows = secure_nonces.count(runs)
    assert all(row["encryptions"] > 200 for row in rows)
    assert [row["repeated_within_run"] + row["used_by_an_earlier_run"] for row in rows] == [0, 0]


# -- a forged PAUSE on the node itself ------------------------------------------------------

class Node:
    """Node ``nid`` of the k=4 Fat-Tree, driven by datagrams; its clock moved by hand."""

    def __init__(self, protocol, nid, key_file=None):
        topo = fat_tree(4, link_gbps=GBPS)
        cfg = udp_profile(default_config(protocol))
        self.conf = node_configs(topo, [], protocol, cfg, address_of=loopback_addresses(topo),
                                 secure_key_file=key_file)[nid]
        self.loop = asyncio.new_event_loop()
        self.sched = Scheduler(self.loop)
        self.node = build_node(self.conf, self.sched, FakeEndpoint(), cfg)

    def pause(self, port, quanta):
        pkt = Packet(PAUSE, self.conf["ports"][port]["peer"], self.conf["node"], credit=quanta,
                     aux=PRIO_DATA, prio=PRIO_CONTROL)
        self.node.datagram(encode(pkt), tuple(self.conf["ports"][port]["peer_addr"]))

    def close(self):
        self.sched.close()
        self.loop.close()


@pytest.mark.parametrize("nid", [0, 16, 24])          # a host, an edge, an aggregation switch
def test_a_forged_pause_at_its_32_bit_maximum_does_nothing_where_pfc_is_off(nid):
    """Issue 25: one such PAUSE paused a GSE host for 37 s (its run's timeout)."""
    n = Node("gse", nid)
    try:
        for port in range(len(n.node.ports)):
            n.pause(port, 0xFFFFFFFF)
        assert not any(p.queue.paused for p in n.node.ports)
        assert n.node.pfc_in == {"accepted": 0, "clamped": 0, "pfc_off": len(n.node.ports)}
    finally:
        n.close()


def test_a_pause_holds_at_most_the_quanta_its_link_sends():
    """RoCE, PFC on, no --secure: a host takes PAUSE from its edge switch, for at most the
    configured quanta; an edge switch takes none from a host (hosts never pause)."""
    host = Node("roce", 0)
    edge = Node("roce", 16)
    try:
        nic = host.node.nic
        limit = host.conf["ports"][0]["pfc_quanta"]
        assert limit == default_config("roce").pfc_pause_quanta
        host.pause(0, 0xFFFFFFFF)
        assert nic.queue.paused                        # (the clock runs: read it after)
        held = nic.pause_until - host.sched.now()
        assert 0 < held <= (limit * 512 * 1_000_000 + nic.mbps - 1) // nic.mbps
        assert host.node.pfc_in == {"accepted": 1, "clamped": 1, "pfc_off": 0}
        edge.pause(0, 100)                             # port 0 faces host 0
        assert not edge.node.ports[0].queue.paused and edge.node.pfc_in["pfc_off"] == 1
        edge.pause(2, 100)                             # port 2 faces an aggregation switch
        assert edge.node.ports[2].queue.paused and edge.node.pfc_in["clamped"] == 0
    finally:
        host.close()
        edge.close()


def test_under_secure_a_pause_must_authenticate_under_its_links_key(key_file):
    host = Node("roce", 0, key_file)
    try:
        host.pause(0, 100)
        assert not host.node.nic.queue.paused
        c = host.node.counters(0)["pfc_in"]
        assert c["unauthenticated"] == 1 and c["accepted"] == 0
    finally:
        host.close()
