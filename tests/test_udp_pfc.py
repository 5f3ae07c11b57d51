"""PFC in the UDP runtime: a PAUSE holds for its quanta, as in the simulator and 802.1Qbb.

Issue 19 item 3: the UDP runtime ignored the pause quanta, so one lost RESUME (``--loss``
drops PFC frames like any other) paused a port for the rest of the run.  These tests drive
one switch node with datagrams and move its clock by hand: no sockets, no waiting.
"""

import asyncio
import json

import pytest

from gse.cli.main import main
from gse.protocols import default_config
from gse.runtimes.udp.config import loopback_addresses, node_configs, udp_profile
from gse.runtimes.udp.io import Scheduler
from gse.runtimes.udp.build import build_node
from gse.wire.codec import decode, encode
from gse.wire.packet import PAUSE, PRIO_CONTROL, PRIO_DATA, RESUME, Packet
from topologies.topology import Topology
from udp_fakes import FakeEndpoint

GBPS = 0.02                      # the issue's link rate: a full pause is 1.68 s


def tiny_topology():
    topo = Topology("tiny")
    h0 = topo.add_node("h0", "host", 0)
    h1 = topo.add_node("h1", "host", 0)
    s0 = topo.add_node("s0", "edge", 1)
    topo.add_link(h0, s0, GBPS, 1_000_000)
    topo.add_link(h1, s0, GBPS, 1_000_000)
    return topo.finalize()


class Bench:
    """One RoCE switch (or host) node on a scheduler whose clock the test moves."""

    def __init__(self, nid=2):
        topo = tiny_topology()
        cfg = udp_profile(default_config("roce"))
        conf = node_configs(topo, [], "roce", cfg, address_of=loopback_addresses(topo))[nid]
        self.loop = asyncio.new_event_loop()
        self.sched = Scheduler(self.loop)
        self.endpoint = FakeEndpoint()
        self.node = build_node(conf, self.sched, self.endpoint, cfg if nid < 2 else None)
        self.conf = conf
        self.quanta = cfg.pfc_pause_quanta
        for port in self.node.ports:     # the pause mechanics of every port (which ports
            port.pfc_limit = self.quanta  # take PAUSE at all: tests/test_secure_attacks.py)

    def peer(self, port):
        return tuple(self.conf["ports"][port]["peer_addr"])

    def pfc_frame(self, kind, quanta, port=0):
        pkt = Packet(kind, 0, 2, credit=quanta, aux=PRIO_DATA, prio=PRIO_CONTROL)
        self.node.datagram(encode(pkt), self.peer(port))

    def advance_ps(self, ps):
        """Move the clock forward and run every event that fell due."""
        self.sched.t0_ns -= ps // 1000
        self.sched._fire()

    def pause_ps(self):
        return (self.quanta * 512 * 1_000_000 + int(GBPS * 1000) - 1) // int(GBPS * 1000)

    def close(self):
        self.sched.close()
        self.loop.close()


def test_a_pause_expires_after_its_quanta_without_a_resume():
    b = Bench()
    try:
        port = b.node.ports[0]
        b.pfc_frame(PAUSE, b.quanta)
        assert port.queue.paused
        b.advance_ps(b.pause_ps() // 2)
        assert port.queue.paused                       # still within its pause time
        b.advance_ps(b.pause_ps())
        assert not port.queue.paused, "a PAUSE whose RESUME was lost must expire"
        assert port.pause_expiries == 1 and port.pauses_received == 1
        assert port.stats(b.sched.now())["pause_expiries"] == 1
    finally:
        b.close()


def test_a_refreshed_pause_holds_and_a_resume_or_zero_quanta_ends_it():
    b = Bench()
    try:
        port = b.node.ports[1]
        b.pfc_frame(PAUSE, b.quanta, port=1)
        b.advance_ps(b.pause_ps() * 3 // 4)
        b.pfc_frame(PAUSE, b.quanta, port=1)           # refreshed before it lapsed
        b.advance_ps(b.pause_ps() * 3 // 4)
        assert port.queue.paused and port.pause_expiries == 0
        b.pfc_frame(RESUME, 0, port=1)
        assert not port.queue.paused
        b.pfc_frame(PAUSE, b.quanta, port=1)
        assert port.queue.paused and port.pauses_received == 2
        b.pfc_frame(PAUSE, 0, port=1)                  # 802.1Qbb: zero quanta resumes
        assert not port.queue.paused
        b.advance_ps(2 * b.pause_ps())                 # the old expiries are stale
        assert port.pause_expiries == 0 and not port.queue.paused
    finally:
        b.close()


def test_a_host_nic_pause_expires_too():
    b = Bench(nid=0)
    try:
        nic = b.node.nic
        b.pfc_frame(PAUSE, b.quanta)
        assert nic.queue.paused
        b.advance_ps(b.pause_ps() + 1_000_000)
        assert not nic.queue.paused and nic.pause_expiries == 1
    finally:
        b.close()


def test_the_switch_sends_pauses_with_quanta_and_refreshes_them_while_over_xoff():
    b = Bench()
    ms = 1_000_000_000

    def frames():
        return [decode(d) for d, addr in b.endpoint.out if addr == b.peer(0)]
    try:
        node = b.node
        node.pfc.pausing[0] = 1
        node.send_pfc(0, PAUSE, b.sched.now())
        b.advance_ps(ms)                               # serialised and on the wire
        assert [(f.kind, f.credit) for f in frames()] == [(PAUSE, b.quanta)]
        b.advance_ps(b.pause_ps() // 2)                # half the pause time: refreshed
        b.advance_ps(ms)
        assert [(f.kind, f.credit) for f in frames()] == [(PAUSE, b.quanta)] * 2
        node.pfc.pausing[0] = 0                        # below XON: the refresh stops
        node.send_pfc(0, RESUME, b.sched.now())
        b.advance_ps(b.pause_ps())
        assert [(f.kind, f.credit) for f in frames()] == [(PAUSE, b.quanta)] * 2 + [(RESUME, 0)]
    finally:
        b.close()


@pytest.mark.slow
def test_issue_reproduction_roce_incast_with_loss_delivers_everything(tmp_path):
    """The issue's run: before the fix 4 (or 7) of 8 messages in 90 s, one port paused
    for the whole run; with expiring pauses all 8 arrive within seconds."""
    out = tmp_path / "roce.json"
    code = main(["run", "--runtime", "udp", "--protocol", "roce", "--loss", "0.01",
                 "--traffic", "incast", "--senders", "8", "--size", "200000",
                 "--link-gbps", "0.02", "--timeout-s", "90", "--quiet", "--json", str(out)])
    s = json.loads(out.read_text())
    assert code == 0 and s["delivered"] == 8 and s["udp"]["end"] == "done"
