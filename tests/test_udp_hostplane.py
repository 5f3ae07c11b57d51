"""The compiled host packet path (``gse.runtimes.udp.hostplane``) against the Python path.

Two pairs of hosts, alike in every way (GSE agents, emulated links, seeds), exchange one
message over real sockets at the same (virtual) times: one pair runs through the Python
objects (``HostDriver.datagram``, ``HostNic`` encoding to bytes, the endpoint's batch),
the other through the C packet path (decoding into the agent's packet in C buffers,
encoding into a C send batch).  The test stands for the switch between the hosts: it
reads what each NIC sent and hands it to the other host, so the datagrams of both pairs
can be compared byte for byte and in order, and so can every counter (agents, ports,
drivers, endpoints).  It also feeds both pairs the same bad datagrams: a broken checksum,
a payload that is not the pattern, a foreign sender, a PAUSE on a link without PFC, a
truncated datagram.  The clock is a stand-in the test moves, so nothing here depends on
how fast the machine runs.
"""

import random

import pytest
from gse.runtimes.udp.stepped import SteppedScheduler as StepScheduler

from gse.config import GseConfig
from gse.protocols import host_factory
from gse.runtimes.udp import dataplane
from gse.runtimes.udp.io import Endpoint, open_udp_socket
from gse.runtimes.udp.link import HostNic
from gse.runtimes.udp.node import HostDriver
from gse.wire.fastcodec import encode_packet
from gse.wire.linkrate import wire_time_ps
from gse.wire.packet import DATA, F_ECT, PAUSE, PRIO_CONTROL, PRIO_DATA, new_packet
from switchmodel.queue import OutputQueue, QueueConfig

compiled = pytest.mark.skipif(not dataplane.AVAILABLE,
                              reason="the host packet path is compiled only (pure build)")

PS_PER_US = 1_000_000


class Pair:
    """Hosts 0 and 1, each on its own socket, with a socket standing for the switch."""

    def __init__(self, plane, lossy=False, gbps=1.0):
        self.sched = StepScheduler()
        cfg = GseConfig()
        make = host_factory("gse", cfg)
        qconf = QueueConfig.from_gse(cfg)
        self.switch = open_udp_socket("127.0.0.1", 0, what="switch")
        self.stranger = open_udp_socket("127.0.0.1", 0, what="stranger")
        sw_addr = self.switch.getsockname()
        self.hosts, self.eps, self.planes = [], [], []
        self.delivered = []
        for nid in (0, 1):
            ep = Endpoint(open_udp_socket("127.0.0.1", 0, what="h%d" % nid), "h%d" % nid)
            agent = make(nid, random.Random("host%d" % nid), gbps)
            drv = HostDriver(nid, "h%d" % nid, self.sched, ep, agent,
                             on_delivered=lambda *a: self.delivered.append(a))
            nic = HostNic(self.sched, ep, sw_addr, OutputQueue(qconf, random.Random(nid)),
                          gbps, 2 * PS_PER_US, 20 * PS_PER_US, nid, 0, "host", False)
            nic.peer = 2
            nic.owner = drv
            nic.agent = agent
            nic.catchup = wire_time_ps(4160, nic.mbps)
            nic.want = False
            if lossy:
                nic.set_faults(0.05, 0.05, random.Random("w%d" % nid))
            drv.nic = nic
            drv.ports.append(nic)
            drv.port_of[sw_addr] = 0
            ep.know(sw_addr)
            ep.handler = drv.datagram
            self.hosts.append(drv)
            self.eps.append(ep)
            self.planes.append(dataplane.attach_host(drv) if plane else None)

    def addr(self, nid):
        return self.eps[nid].addr

    def relay(self):
        """Hand every datagram the switch socket got to its destination host (by the
        header's dst), and return them in order."""
        got = []
        while True:
            try:
                data, src = self.switch.recvfrom(65536)
            except BlockingIOError:
                break
            got.append((src, data))
            dst = int.from_bytes(data[8:12], "big") if len(data) >= 12 else 0
            self.switch.sendto(data, self.addr(dst if dst in (0, 1) else 0))
        return got

    def read(self):
        for ep in self.eps:
            ep._readable()

    def counters(self):
        out = []
        for drv in self.hosts:
            c = drv.counters(self.sched.t)
            c["agent"] = drv.agent.counters()
            out.append(c)
        return out

    def close(self):
        for drv in self.hosts:
            dataplane.detach_host(drv)
        for ep in self.eps:
            ep.sock.close()
        self.switch.close()
        self.stranger.close()


def bad_datagrams(pair):
    """(sender socket, destination host, datagram) the hosts must refuse and count."""
    good = encode_packet(new_packet(DATA, 1, 0, 99, 0, 5, 1000, F_ECT, 1000, 0, 0, 0, 0, 0,
                                    PRIO_DATA))
    broken = bytearray(good)
    broken[100] ^= 0xFF                      # the checksum no longer holds
    pause = encode_packet(new_packet(PAUSE, 2, 0, 0, 0, 0, 0, 0, 0, 100, PRIO_DATA, 0, 0, 0,
                                     PRIO_CONTROL))
    return [(pair.switch, 0, bytes(broken)), (pair.stranger, 0, good),
            (pair.switch, 0, pause), (pair.switch, 1, good[:40]),
            (pair.switch, 0, good[:-1])]


def run(pair, size=300_000, steps=4000, step_ps=20 * PS_PER_US, bad=True):
    """Start one message h0 -> h1 and step the clock; every datagram in order."""
    trace = []
    pair.sched.t = 0
    pair.hosts[0].start(0, type("M", (), {"msg_id": 1, "dst": 1, "size": size})())
    for i in range(steps):
        if bad and i == 5:
            for sock, dst, data in bad_datagrams(pair):
                sock.sendto(data, pair.addr(dst))
        trace.append(pair.relay())
        pair.read()
        pair.sched.advance(pair.sched.t + step_ps)
        if pair.delivered and not any(trace[-3:]) and i > 10:
            break
    return trace


def strip(trace):
    """The datagrams of a trace without the (kernel-chosen) source ports."""
    return [[data for _src, data in step] for step in trace]


@compiled
@pytest.mark.parametrize("lossy,gbps", [(False, 1.0), (True, 1.0), (False, 100.0),
                                        (True, 100.0)])
def test_same_datagrams_and_counters_as_python_path(lossy, gbps):
    """At 1 Gb/s a datagram waits on the emulated wire (serialisation beyond the slack),
    at 100 Gb/s it leaves at once: both ways of the C send path."""
    py, c = Pair(False, lossy, gbps), Pair(True, lossy, gbps)
    try:
        assert c.planes[0] is not None and c.planes[1] is not None
        t_py, t_c = run(py), run(c)
        assert py.delivered and py.delivered == c.delivered
        assert strip(t_py) == strip(t_c)
        cp, cc = py.counters(), c.counters()
        for a, b in zip(cp, cc):
            a.pop("name"), b.pop("name")
        assert cp == cc
        assert cc[1]["malformed_total"] > 0 and cc[0]["foreign"] == 1
        assert cc[0]["pfc_in"]["pfc_off"] == 1
        assert cc[1]["payload_bytes"] == 300_000
        # the C path carried the traffic; the bad datagrams took the Python path
        assert c.planes[1].fast > 50 and c.planes[0].encoded > 50
        assert c.planes[0].slow + c.planes[1].slow >= 4
        if lossy:
            assert sum(p.wire_corrupt for h in c.hosts for p in h.ports) > 0
    finally:
        py.close()
        c.close()


@compiled
def test_payload_not_the_pattern_is_counted():
    c = Pair(True)
    try:
        wrong = bytearray(encode_packet(new_packet(DATA, 0, 1, 7, 0, 5, 1000, F_ECT, 1000, 0,
                                                   0, 0, 0, 0, PRIO_DATA)))
        wrong[200] ^= 1
        from gse.wire.codec import CHECKSUM_OFFSET
        from gse.wire.fastcodec import datagram_checksum
        crc = datagram_checksum(bytes(wrong))
        wrong[CHECKSUM_OFFSET:CHECKSUM_OFFSET + 4] = crc.to_bytes(4, "big")
        c.switch.sendto(bytes(wrong), c.addr(1))
        c.read()
        assert c.hosts[1].payload_errors == 1 and c.hosts[1].datagrams == 1
        assert c.planes[1].fast == 1
    finally:
        c.close()


def test_why_not_host():
    c = Pair(False)
    try:
        why = dataplane.why_not_host(c.hosts[0])
        if not dataplane.AVAILABLE:
            assert why == "no compiled packet path"
        else:
            assert why is None
            c.hosts[0].tss = object()
            assert "authenticated" in dataplane.why_not_host(c.hosts[0])
            c.hosts[0].tss = None
        conf = {"role": "host", "ports": [{"port": 0}]}
        assert dataplane.conf_allows_host(conf)
        assert not dataplane.conf_allows_host(dict(conf, secure={"x": 1}))
        assert not dataplane.conf_allows_host(dict(conf, ports=[{"faults": [1]}]))
        assert not dataplane.conf_allows_host(dict(conf, role="switch"))
    finally:
        c.close()
