"""Hosts of kernel forwarding (``gse.runtimes.udp.kernel_host``) on the compiled packet
path (``HostPlane.kernel``) against the Python path (``KernelSender``, ``HostDriver``).

In kernel forwarding a host sends each datagram straight to its destination host's
address, from the send socket its entropy (and class: data or control) picks, and takes
datagrams from any host's send ports.  Two pairs of such hosts, alike in every way, exchange
one message at the same (virtual) times: one pair on the Python path, one on the plane.
The test stands for the kernel's routers: every host's address in the ``kernel`` section
is a relay socket the test reads, so it sees which send port each datagram left from and
to which host; it then forwards the datagram to that host from the same port (a socket
bound to it with SO_REUSEPORT, as the send sockets are), so the host sees the source a
router would show it.  Both pairs must send the same datagrams byte for byte, from the same
ports, to the same hosts, in the same steps (in order within each port), and end with
the same counters; bad datagrams
(a stranger's port, a broken checksum) are counted alike.  The clock is a stand-in the test
moves, so nothing depends on how fast the machine runs.
"""

import random
import socket

import pytest
from gse.runtimes.udp.stepped import SteppedScheduler as StepScheduler

from gse.config import ConfigError, GseConfig
from gse.protocols import host_factory
from gse.runtimes.udp import dataplane, kernel_host
from gse.runtimes.udp.io import Endpoint, open_udp_socket
from gse.runtimes.udp.link import HostNic
from gse.runtimes.udp.node import HostDriver
from gse.wire.fastcodec import encode_packet
from gse.wire.packet import DATA, F_ECT, PRIO_DATA, new_packet
from switchmodel.queue import OutputQueue, QueueConfig

compiled = pytest.mark.skipif(not dataplane.AVAILABLE,
                              reason="the host packet path is compiled only (pure build)")

PS_PER_US = 1_000_000
COUNT = 4                       # send ports per host (kernel_forwarding.SPRAY_PORTS: 32)


def reuse_socket(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind(("0.0.0.0", port))
    return s


class KernelPair:
    """Hosts 0 and 1 of kernel forwarding on loopback; their ``kernel.hosts`` are relays."""

    def __init__(self, plane, base, gbps=1.0):
        self.sched = StepScheduler()
        cfg = GseConfig()
        make = host_factory("gse", cfg)
        qconf = QueueConfig.from_gse(cfg)
        self.relays = [open_udp_socket("127.0.0.1", 0, what="relay") for _ in (0, 1)]
        self.edge = open_udp_socket("127.0.0.1", 0, what="edge")   # the leaf: silent
        self.stranger = open_udp_socket("127.0.0.1", 0, what="stranger")
        hosts = [list(r.getsockname()) for r in self.relays]
        self.forward = {}
        self.hosts, self.eps, self.planes, self.senders = [], [], [], []
        self.delivered = []
        try:
            for nid in (0, 1):
                ep = Endpoint(open_udp_socket("127.0.0.1", 0, what="h%d" % nid), "h%d" % nid)
                self.eps.append(ep)
                agent = make(nid, random.Random("host%d" % nid), gbps)
                drv = HostDriver(nid, "h%d" % nid, self.sched, ep, agent,
                                 on_delivered=lambda *a: self.delivered.append(a))
                edge = self.edge.getsockname()
                nic = HostNic(self.sched, ep, edge, OutputQueue(qconf, random.Random(nid)),
                              gbps, 2 * PS_PER_US, 20 * PS_PER_US, nid, 0, "host", False)
                nic.peer = 2
                nic.owner = drv
                nic.agent = agent
                nic.want = False
                drv.nic = nic
                drv.ports.append(nic)
                drv.port_of[edge] = 0
                ep.know(edge)
                ep.handler = drv.datagram
                self.hosts.append(drv)
                conf = {"name": "h%d" % nid, "netns": None, "mtu_wire_bytes": 4160,
                        "kernel": {"hosts": hosts, "src_ports": [base, COUNT]}}
                sender = kernel_host.install(drv, conf)
                self.senders.append(sender)
                self.planes.append(dataplane.attach_host(
                    drv, kernel=kernel_host.plane_args(sender, conf)) if plane else None)
            for port in range(base, base + COUNT):
                self.forward[port] = reuse_socket(port)
        except BaseException:
            self.close()
            raise

    def relay(self):
        """Every datagram the relays got: (destination host, send port, bytes) by host and
        port, in order within a port; each forwarded to its host from the port it left
        from, in that order.  (Datagrams of one send socket keep their order, as on one
        path through the routers; between sockets there is no order to keep, and the two
        paths flush their sockets' batches in different orders.)"""
        got = []
        for h, r in enumerate(self.relays):
            while True:
                try:
                    data, src = r.recvfrom(65536)
                except BlockingIOError:
                    break
                got.append((h, src[1], data))
        got.sort(key=lambda x: (x[0], x[1]))
        for h, port, data in got:
            self.forward[port].sendto(data, self.eps[h].addr)
        return got

    def read(self):
        for ep in self.eps:
            ep._readable()

    def counters(self):
        out = []
        for drv, sender in zip(self.hosts, self.senders):
            c = drv.counters(self.sched.t)
            c["agent"] = drv.agent.counters()
            c["kernel_send"] = dict(sender.totals(), unsendable=sender.bad)
            c["per_socket"] = [ep.sent for ep in sender.all_endpoints()]  # data, control
            c.pop("name")
            out.append(c)
        return out

    def close(self):
        for drv in self.hosts:
            dataplane.detach_host(drv)
        for sender in self.senders:
            sender.close()
        for ep in self.eps:
            ep.sock.close()
        for s in self.relays + [self.edge, self.stranger] + list(self.forward.values()):
            s.close()


def make_pair(plane, gbps=1.0):
    """A pair on a free range of send ports (another program may hold one)."""
    for _ in range(20):
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.bind(("0.0.0.0", 0))
        base = probe.getsockname()[1]
        probe.close()
        if base + COUNT > 65535:
            continue
        try:
            return KernelPair(plane, base, gbps), base
        except (ConfigError, OSError):
            continue
    pytest.skip("no free range of %d UDP ports" % COUNT)


def run(pair, base, size=300_000, steps=4000, step_ps=20 * PS_PER_US):
    """One message h0 -> h1, the clock stepped; every datagram, in order, per step."""
    good = encode_packet(new_packet(DATA, 0, 1, 99, 0, 5, 1000, F_ECT, 1000, 0, 0, 0, 0, 0,
                                    PRIO_DATA))
    broken = bytearray(good)
    broken[100] ^= 0xFF                      # the checksum no longer holds
    trace = []
    pair.sched.t = 0
    pair.hosts[0].start(0, type("M", (), {"msg_id": 1, "dst": 1, "size": size})())
    for i in range(steps):
        if i == 5:
            pair.stranger.sendto(good, pair.eps[1].addr)             # not a send port
            pair.forward[base + 1].sendto(bytes(broken), pair.eps[1].addr)
        trace.append(pair.relay())
        pair.read()
        pair.sched.advance(pair.sched.t + step_ps)
        if pair.delivered and not any(trace[-3:]) and i > 10:
            break
    return trace


@compiled
@pytest.mark.parametrize("gbps", [1.0, 100.0])
def test_kernel_hosts_send_and_count_as_the_python_path(gbps):
    """At 1 Gb/s a datagram waits on the emulated wire, at 100 Gb/s it leaves at once."""
    py, base_py = make_pair(False, gbps)
    try:
        t_py = run(py, base_py)
        c_py = py.counters()
        delivered_py = list(py.delivered)
        assert dataplane.host_counters(py.hosts[0]) is None
    finally:
        py.close()
    c, base_c = make_pair(True, gbps)
    try:
        assert c.planes[0] is not None and c.planes[1] is not None
        t_c = run(c, base_c)
        assert delivered_py and delivered_py == c.delivered
        shift = base_c - base_py                 # the two pairs' send ports may differ
        assert [[(h, p + shift, d) for h, p, d in step] for step in t_py] == t_c
        cc = c.counters()
        assert c_py == cc
        assert cc[1]["payload_bytes"] == 300_000
        assert cc[1]["foreign"] == 1 and cc[1]["malformed_total"] == 1
        # the data went from several send ports (the entropies), control too
        assert len({p for step in t_c for h, p, _ in step if h == 1}) > 1
        # the plane carried the traffic both ways, the bad datagrams took the Python path
        h0, h1 = (dataplane.host_counters(d) for d in c.hosts)
        assert h1["fast"] > 50 and h0["encoded"] > 50 and h0["kernel_sent"] > 50
        assert h0["fast"] > 0 and h1["kernel_sent"] > 0
        assert h1["slow"] == 2
        sent = [sum(1 for step in t_c for h, _, _ in step if h == dst) for dst in (1, 0)]
        assert [x["kernel_send"]["sent"] for x in cc] == sent
        assert sum(cc[1]["per_socket"][COUNT:]) > 0         # h1's ACKs: the control set
    finally:
        c.close()


@compiled
def test_unsendable_datagram_is_counted_not_sent():
    c, _ = make_pair(True)
    try:
        plane = c.planes[0]
        plane.send_to(b"short", None)                 # the bytes path: KernelSender's
        assert c.senders[0].bad == 1
        pkt = new_packet(DATA, 0, 7, 3, 0, 0, 16, 0, 16, 0, 0, 0, 0, 0, PRIO_DATA)
        assert plane.send_packet(pkt)                 # encoded in C, for host 7: none
        plane.flush()
        assert c.senders[0].bad == 2 and c.senders[0].totals()["sent"] == 0
        assert c.relay() == []
        dataplane.detach_host(c.hosts[0])           # back to the KernelSender
        nic = c.hosts[0].nic
        assert nic.plane is None and nic.ep is None and nic.send == c.senders[0].send
    finally:
        c.close()


@compiled
def test_kernel_refuses_what_it_cannot_route():
    c, base = make_pair(True)
    try:
        plane, sender = c.planes[0], c.senders[0]
        with pytest.raises(ValueError, match="the plane has its send sockets already"):
            plane.kernel(sender, sender.hosts, base, COUNT)
        fresh = c.planes[1]
        with pytest.raises(ValueError, match="8 send sockets for 3 entropies"):
            fresh.kernel(sender, sender.hosts, base, 3)
    finally:
        c.close()
