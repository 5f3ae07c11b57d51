"""The compiled switch data plane (``gse.runtimes.udp.switchplane``) against the Python path.

Two switches, alike in every way, get the same datagrams on real sockets at the same
(virtual) times: one forwards through the Python objects (``SwitchDriver``,
``OutputQueue``, ``EmulatedPort``), the other through the C data plane.  Each neighbour
must receive the same datagrams, byte for byte and in the same order, and every counter
(queues, ports, switch, driver, endpoint) must read the same: forwarding decisions,
ECN marks (the same draws of the queue's generator), trims, drops, malformed datagrams
by reason, foreign senders, refused PAUSE frames, unroutable destinations.  A fabric-mode
spine (``FabricSpine``: the uplink named by byte 1 of the entropy, step ECN marking) and
a switch whose next-hop rows change mid-run (``RouteUpdates``) are held to the same.

The clock is a stand-in scheduler whose ``now`` the test sets and whose events the test
fires, so nothing here depends on how fast the machine runs.
"""

from contextlib import contextmanager
import random
import zlib

import pytest

from gse.runtimes.udp import dataplane
from gse.runtimes.udp.faults import RouteUpdates
from gse.runtimes.udp.io import Endpoint, open_udp_socket
from gse.runtimes.udp.stepped import SteppedScheduler as StepScheduler
from gse.runtimes.udp.link import EmulatedPort
from gse.runtimes.udp.node import SwitchDriver
from gse.wire.fastcodec import encode_packet
from gse.wire.packet import (ACK, DATA, F_ECT, PAUSE, PRIO_CONTROL, PRIO_DATA, RESUME,
                             new_packet)
from switchmodel.fabric import FabricSpine
from switchmodel.pfc import PfcConfig, PfcState
from switchmodel.queue import OutputQueue, QueueConfig
from switchmodel.switch import Switch

compiled = pytest.mark.skipif(not dataplane.AVAILABLE,
                              reason="the data plane is compiled only (pure build)")

PS_PER_US = 1_000_000


def data(src, dst, psn, entropy=0, payload=1000, flags=F_ECT, kind=DATA, prio=PRIO_DATA,
         credit=0):
    return encode_packet(new_packet(kind, src, dst, 9, psn, entropy,
                                    payload if kind == DATA else 0, flags, 1 << 20, credit,
                                    0, 0, 0, 0, prio))


class Rig:
    """One switch with three neighbours (sockets the test reads and writes)."""

    def __init__(self, qconf, gbps, plane, pfc=None, lossy=False, spine=False, updates=(),
                 lanes=False):
        self.sched = StepScheduler()
        self.sock = open_udp_socket("127.0.0.1", 0, what="switch")
        self.ep = Endpoint(self.sock, "switch")
        self.peers = [open_udp_socket("127.0.0.1", 0, what="peer") for _ in range(3)]
        # lanes: each neighbour's PFC lane, where the PAUSE and RESUME it is sent go
        self.lanes = ([open_udp_socket("127.0.0.1", 0, what="lane") for _ in range(3)]
                      if lanes else [])
        self.stranger = open_udp_socket("127.0.0.1", 0, what="stranger")
        # hosts 0..3: 0 behind port 0, 1 behind port 1, 2 and 3 sprayed over ports 1, 2
        # (spine: a fabric-mode spine, the uplink by byte 1 of the entropy)
        rows = [(0,), (1,), (1, 2), (1, 2), ()]
        sw = (FabricSpine if spine else Switch)(1, "s1", rows, 0xBEEF, "spray")
        state = None if pfc is None else PfcState(pfc, 3)
        self.drv = SwitchDriver(1, "s1", "edge", self.sched, self.ep, sw, 0, state)
        if updates:                     # (t_ps, [[host, [ports]], ...]) as faults.install
            route = self.drv.route_updates = RouteUpdates(sw)
            for t, change in updates:
                self.sched.at(t, route.apply, change)
        for pidx, peer in enumerate(self.peers):
            addr = peer.getsockname()
            port = EmulatedPort(self.sched, self.ep, addr,
                                OutputQueue(qconf, random.Random("q%d" % pidx)), gbps,
                                2 * PS_PER_US, 20 * PS_PER_US, 1, pidx, "edge", False)
            port.owner = self.drv
            if self.lanes:
                port.lane_addr = self.lanes[pidx].getsockname()
            if lossy:
                port.set_faults(0.1, 0.1, random.Random("w%d" % pidx))
            if pfc is not None:
                port.pfc = state
                port.pfc_limit = pfc.pause_quanta
            self.drv.port_of[addr] = pidx
            self.drv.ports.append(port)
            self.ep.know(addr)
        self.ep.handler = self.drv.datagram
        self.plane = dataplane.attach(self.drv) if plane else None

    def read(self):
        """Let the switch read its socket (as the loop's reactor would)."""
        self.ep._readable()

    def received(self):
        out = []
        for sock in self.peers + self.lanes:
            got = []
            while True:
                try:
                    got.append(sock.recv(65536))
                except BlockingIOError:
                    break
            out.append(got)
        return out

    def counters(self):
        c = self.drv.counters(self.sched.t)
        c["switch"] = (self.drv.switch.forwarded, self.drv.switch.unroutable,
                       self.drv.switch.unreachable)
        c["queues"] = [(p.queue.n_data, p.queue.n_control, p.queue.data_bytes,
                        p.queue.control_bytes, p.busy_until) for p in self.drv.ports]
        return c

    def close(self):
        if self.plane is not None:
            dataplane.detach(self.drv)
        for s in [self.sock, self.stranger] + self.peers + self.lanes:
            s.close()


def script(rig, step):
    """The inputs of step ``step``: what each neighbour (or the stranger) sends."""
    rng = random.Random(step)
    sends = []
    for i in range(rng.randrange(1, 12)):
        dst = rng.choice((1, 2, 3, 2, 3))
        sends.append((0, data(0, dst, step * 100 + i, entropy=rng.randrange(1 << 16),
                              payload=rng.choice((1000, 4096)))))
    if step % 3 == 0:
        sends.append((1, data(1, 0, step, kind=ACK, prio=PRIO_CONTROL)))
    if step % 5 == 1:
        bad = bytearray(data(0, 2, step))
        bad[70] ^= 0xFF                          # checksum fails
        sends.append((0, bytes(bad)))
        sends.append((0, b"\x01" * 20))          # too short
    if step % 9 == 4:                            # the neighbour behind port 1 pauses
        sends.append((1, data(1, 1, step, kind=PAUSE, prio=PRIO_CONTROL, credit=200)))
    if step % 9 == 7:
        sends.append((1, data(1, 1, step, kind=RESUME, prio=PRIO_CONTROL)))
    if step % 7 == 2:
        sends.append((2, data(3, 0, step, kind=PAUSE, prio=PRIO_CONTROL, credit=100)))
        sends.append(("stranger", data(0, 2, step)))
        sends.append((0, data(0, 4, step)))      # unreachable (no next hop)
        sends.append((0, data(0, 77, step)))     # unroutable (not in the table)
    return sends


def run(rig, steps=40, step_ps=3 * PS_PER_US):
    seen = []
    for step in range(steps):
        rig.sched.advance(step * step_ps)
        for who, dgram in script(rig, step):
            sock = rig.stranger if who == "stranger" else rig.peers[who]
            sock.sendto(dgram, rig.sock.getsockname())
        rig.read()
        seen.append(rig.received())
    for k in range(1, 200):                      # let every queue drain
        rig.sched.advance(steps * step_ps + k * 10 * PS_PER_US)
        seen.append(rig.received())
    rig.seen = seen
    return seen


QUEUES = {
    "trim+ecn": QueueConfig(20_000, 8_000, trim=True, trim_bytes=12_000, ecn=True,
                            ecn_kmin=3_000, ecn_kmax=10_000, ecn_pmax=0.5),
    "drop-tail+ecn-on-dequeue": QueueConfig(15_000, 4_000, ecn=True, ecn_kmin=2_000,
                                            ecn_kmax=9_000, ecn_pmax=0.3,
                                            ecn_on_dequeue=True),
    "one-fifo": QueueConfig(15_000, ecn=True, ecn_kmin=2_000, ecn_kmax=6_000,
                            control_priority=False),
}
# fabric mode's spines and cores (gse.protocols.queue_config("gse-fabric")): drop-tail,
# no trimming, the fabric's DATA marked CE above ecn_bytes (step marking: kmin == kmax)
FABRIC_QUEUE = QueueConfig(15_000, 8_000, False, None, True, 4_000, 4_000)
STEP_PS = 3 * PS_PER_US     # run()'s step


@contextmanager
def same_as_python(queue, **kw):
    """A Python switch and a data-plane switch fed the same datagrams at the same times:
    the same datagrams out, in order, and the same counters (``send*`` aside: the
    plane's batches differ).  Yields both rigs and the Python side's counters."""
    py = Rig(queue, 2.0, plane=False, **kw)
    c = Rig(queue, 2.0, plane=True, **kw)
    try:
        assert py.plane is None and c.plane is not None
        got_py, got_c = run(py), run(c)
        assert got_c == got_py
        cp, cc = py.counters(), c.counters()
        for key in ("sent", "send_blocked", "send_errors"):
            assert cc.pop(key) == cp.pop(key), key
        assert cc == cp
        yield py, c, cp
    finally:
        py.close()
        c.close()


@compiled
@pytest.mark.parametrize("name", sorted(QUEUES))
def test_data_plane_forwards_as_the_python_path(name):
    with same_as_python(QUEUES[name]) as (py, c, cp):
        queues = [p.queue.counters for p in py.drv.ports]
        assert sum(q.drops for q in queues) > 0 or name == "trim+ecn"
        assert sum(q.ecn_marks for q in queues) > 0
        if name == "trim+ecn":
            assert sum(q.trims for q in queues) > 0
        assert cp["malformed_total"] > 0 and cp["foreign"] > 0 and cp["unroutable"] > 0
        assert cp["pfc_in"]["pfc_off"] > 0
        assert c.plane.fast > 0 and c.plane.slow > 0


@compiled
@pytest.mark.parametrize("name", ["drop-tail+ecn-on-dequeue", "one-fifo"])
def test_data_plane_pfc_as_the_python_path(name):
    """RoCE's lossless class: ingress accounting, PAUSE and RESUME sent (and refreshed)
    through the data plane's queues, PAUSE and RESUME received holding its port."""
    pfc = PfcConfig(xoff_bytes=6_000, xon_gap_bytes=3_000, headroom_bytes=20_000,
                    pause_quanta=300)
    with same_as_python(QUEUES[name], pfc=pfc) as (_py, _c, cp):
        assert cp["pfc"]["pauses_sent"] > 0 and cp["pfc"]["resumes_sent"] > 0
        assert cp["pfc_in"]["accepted"] > 0
        assert sum(p["pauses_received"] for p in cp["ports"]) > 0


@compiled
def test_data_plane_sends_pfc_frames_to_the_lanes_as_the_python_path():
    """With PFC lanes the PAUSE and RESUME a switch makes go to each neighbour's lane,
    everything else to its data socket, on the data plane as on the Python path."""
    pfc = PfcConfig(xoff_bytes=6_000, xon_gap_bytes=3_000, headroom_bytes=20_000,
                    pause_quanta=300)
    with same_as_python(QUEUES["drop-tail+ecn-on-dequeue"], pfc=pfc, lanes=True) as (
            py, _c, cp):
        assert cp["pfc"]["pauses_sent"] > 0 and cp["pfc"]["resumes_sent"] > 0
        got = run_kinds(py)
        assert got["lane"] and got["lane"] <= {PAUSE, RESUME}
        assert got["data"] and not got["data"] & {PAUSE, RESUME}


def run_kinds(rig):
    """The kinds of what ``rig`` sent in its run, by socket: data or lane."""
    kinds = {"data": set(), "lane": set()}
    for snapshot in rig.seen:
        for i, got in enumerate(snapshot):
            for dgram in got:
                kinds["data" if i < len(rig.peers) else "lane"].add(dgram[1])
    return kinds


@compiled
def test_data_plane_loss_and_corruption_as_the_python_path():
    """Emulated loss and corruption: the same draws of each port's generator drop or
    corrupt the same datagrams (a corrupt one carries an inverted checksum)."""
    with same_as_python(QUEUES["trim+ecn"], lossy=True) as (_py, _c, cp):
        assert sum(p["wire_drops"] for p in cp["ports"]) > 0
        assert sum(p["wire_corrupt"] for p in cp["ports"]) > 0


@compiled
def test_data_plane_fabric_spine_as_the_python_path():
    """A fabric-mode spine (``FabricSpine``, ``paths="leaf"``): byte 1 of the entropy
    names the uplink, the queues mark the fabric's DATA CE above ``ecn_bytes``."""
    with same_as_python(FABRIC_QUEUE, spine=True) as (py, c, cp):
        assert type(c.drv.switch) is FabricSpine
        queues = [p.queue.counters for p in py.drv.ports]
        assert queues[1].tx_packets > 0 and queues[2].tx_packets > 0   # both uplinks
        assert sum(q.ecn_marks for q in queues) > 0 and sum(q.drops for q in queues) > 0
        assert sum(q.trims for q in queues) == 0
        assert cp["unroutable"] > 0 and cp["unreachable"] > 0
        assert c.plane.fast > 0
    # the spine's choice is not the plain switch's hash: the two send differently
    plain, spine = Rig(FABRIC_QUEUE, 2.0, plane=True), Rig(FABRIC_QUEUE, 2.0, plane=True,
                                                           spine=True)
    try:
        assert run(plain) != run(spine)
    finally:
        plain.close()
        spine.close()


# two updates of the next-hop rows mid-run: host 2 moves to port 2 alone and host 3 is
# cut off, then host 3 comes back on both ports and host 1 is sprayed over ports 2 and 1
UPDATES = [(10 * STEP_PS, [[2, [2]], [3, []]]),
           (25 * STEP_PS + 1, [[3, [1, 2]], [1, [2, 1]]])]


@compiled
@pytest.mark.parametrize("spine", [False, True])
def test_data_plane_route_updates_as_the_python_path(spine):
    """``RouteUpdates`` rewrite the switch's next-hop rows mid-run: the plane reads the
    rows at every datagram, so it routes by the new rows from the next one on."""
    queue = FABRIC_QUEUE if spine else QUEUES["trim+ecn"]
    with same_as_python(queue, spine=spine, updates=UPDATES) as (py, c, cp):
        assert c.drv.route_updates is not None
        assert cp["route_updates"] == {"applied": 2, "entries": 4}
        assert cp["unreachable"] > 0 and c.plane.fast > 0
        assert tuple(c.drv.switch.next_hops[1]) == (2, 1)
    # without the updates the same inputs leave differently
    plain, moved = Rig(queue, 2.0, plane=True, spine=spine), Rig(queue, 2.0, plane=True,
                                                                 spine=spine, updates=UPDATES)
    try:
        assert run(plain) != run(moved)
    finally:
        plain.close()
        moved.close()


@compiled
def test_data_plane_fast_path_needs_no_python_packet():
    """A clean datagram to an idle port goes through C alone (the ``fast`` count)."""
    rig = Rig(QUEUES["trim+ecn"], 100.0, plane=True)
    try:
        for i in range(10):
            rig.peers[0].sendto(data(0, 1, i), rig.sock.getsockname())
            rig.sched.advance((i + 1) * PS_PER_US)
            rig.read()
        got = rig.received()
        assert len(got[1]) == 10 and rig.plane.fast == 10 and rig.plane.slow == 0
        assert rig.drv.datagrams == 10 and rig.ep.sent == 10
        assert [zlib.crc32(d) for d in got[1]] == [zlib.crc32(data(0, 1, i))
                                                   for i in range(10)]
    finally:
        rig.close()


def test_conf_allows_only_the_plain_case():
    conf = {"role": "switch", "ports": [{"port": 0}], "pfc": None, "switch_latency_ps": 0,
            "wire": "gse"}
    assert dataplane.conf_allows(conf)
    assert dataplane.conf_allows(dict(conf, pfc={"xoff_bytes": 1},
                                      ports=[{"port": 0, "pfc_quanta": 10}]))
    for change in ({"fabric": {"role": "spine"}}, {"route_updates": [[1, [[2, [0]]]]]}):
        assert dataplane.conf_allows(dict(conf, **change)), change
    for change in ({"switch_latency_ps": 5}, {"wire": "uet"},
                   {"fabric": {"role": "leaf"}}, {"pcap": {"ports": [0]}},
                   {"role": "host"}, {"secure": {"key_file": "k"}}):
        assert not dataplane.conf_allows(dict(conf, **change)), change
    assert dataplane.conf_allows(dict(conf, ports=[{"port": 0, "loss": 0.1, "corrupt": 0.1}]))
    for port_change in ({"faults": [[0, "down"]]}, {"trigger_packets": 10}):
        assert not dataplane.conf_allows(dict(conf, ports=[dict(port_change, port=0)]))


def test_pure_build_keeps_the_python_path():
    if dataplane.AVAILABLE:
        pytest.skip("the compiled build has the data plane")
    rig = Rig(QUEUES["trim+ecn"], 100.0, plane=True)
    try:
        assert rig.plane is None and dataplane.why_not(rig.drv) == "no compiled data plane"
        rig.peers[0].sendto(data(0, 1, 1), rig.sock.getsockname())
        rig.read()
        assert len(rig.received()[1]) == 1
    finally:
        rig.close()


def test_env_turns_the_data_plane_off(monkeypatch):
    monkeypatch.setenv(dataplane.ENV, "0")
    assert not dataplane.enabled()
    rig = Rig(QUEUES["trim+ecn"], 100.0, plane=True)
    try:
        assert rig.plane is None
    finally:
        rig.close()


@pytest.mark.parametrize("protocol", ["gse", "roce", "gse-fabric"])
def test_runtime_puts_plain_switches_on_the_data_plane(protocol):
    """``UdpNetwork`` attaches every switch of a plain run (RoCE's PFC included), and
    every spine and core of a fabric-mode run (not its leaves), in the compiled build, none
    in the pure one; the run delivers everything either way."""
    import asyncio

    from gse.protocols import default_config
    from gse.runtimes.udp.config import udp_profile
    from gse.runtimes.udp.io import run_async
    from gse.runtimes.udp.network import UdpNetwork
    from gse.workloads.traffic import incast
    from topologies.fattree import fat_tree

    topo = fat_tree(4, link_gbps=0.2)
    msgs = incast(16, 4, 100_000, random.Random(3), receiver=0)

    async def go():
        cfg = udp_profile(default_config(protocol))
        async with UdpNetwork(topo, msgs, protocol=protocol, config=cfg, seed=3) as net:
            end = await net.run(timeout_s=60)
            planes = [n.plane for n in net.nodes if getattr(n, "plane", None) is not None]
            fast = sum(p.fast for p in planes)
            spines = sum(1 for conf in net.confs if conf["role"] == "switch"
                         and (conf.get("fabric") or {"role": "spine"})["role"] == "spine")
        await asyncio.sleep(0)
        return end, len(planes), fast, spines, net.result().summary

    end, n_planes, fast, spines, summary = run_async(go, "asyncio")
    assert end == "done" and summary["lost"] == 0 and summary["delivered"] == len(msgs)
    assert summary["udp"]["errors"] == []
    assert summary["udp"]["dataplane_switches"] == n_planes
    assert spines == (len(topo.switches) - 8 if protocol == "gse-fabric"
                      else len(topo.switches))
    if dataplane.AVAILABLE:
        assert n_planes == spines and fast > 0
    else:
        assert n_planes == 0
