"""A host agent of a fabric whose switches forward in the kernel (Mininet's
``--forwarding kernel``, ``gse.runtimes.mininet.kernel_forwarding``).

No switch agent runs there: every switch namespace routes the hosts' addresses with
multipath next hops hashed on the UDP 5-tuple.  So a host addresses each datagram to the
destination host's own address (not to its leaf), and the packet's spraying entropy, which
a switch agent reads from the header, must travel where the kernel's hash sees it: in the
UDP source port.  The host opens ``count`` send sockets bound to consecutive ports
``base .. base + count - 1`` and sends a packet from socket ``entropy % count``, so the
packets of one message take as many paths as the agents would give them (one path per
entropy value, the same one every time: the agents' path avoidance still works).

A node configuration asks for this with a ``kernel`` section (``check_kernel_section``):
``hosts``, the (ip, port) of every host by host id, and ``src_ports``, [base, count].
The host's receiving side is its usual socket: datagrams now come from any host, from one
of its send ports, so every such (ip, port) is known as the host's one port (``port_of``)
and anything else is still counted as ``foreign`` and dropped; malformed datagrams and
payload errors are counted as before.  The host's emulated link (``HostNic``: rate,
bursts, loss) is unchanged but for one thing: a NIC whose timer fired late catches up
``CATCHUP_PACKETS`` packet times, not one.  Over switch agents one packet time bounds the
burst a late timer sends into the next agent's socket; here the host's egress veth has
an htb at the link's rate (``gse.runtimes.mininet.kernel_forwarding.host_commands``), which
sends such a burst on at the link's pace, so the NIC keeps its rate on a loaded machine
(a timer 1.5 ms late, as on a loaded two-core machine, is 45 packet times at 1 Gb/s,
and it no longer costs the link all but one of them).  Its sends go through
``KernelSender``, or, in the compiled build, through the host's compiled packet path
(``gse.runtimes.udp.hostplane.HostPlane.kernel``, ``plane_args``), which receives into C
buffers from any host's send ports and sends each datagram from the same socket to the
same host as ``KernelSender.send`` would, batched per socket.
"""

import socket

from gse.config import ConfigError
from gse.runtimes.udp.io import Endpoint
from gse.runtimes.udp.netns import made_in
from gse.wire.linkrate import wire_time_ps

DST_OFFSET = 8          # the header's dst field (4 bytes, docs/wire-format.md)
CATCHUP_PACKETS = 64    # how far behind its schedule a late NIC may catch up (packets)
CONTROL_TOS = 0x10       # IPTOS_LOWDELAY: every port's queue serves these first ...
CONTROL_PRIORITY = 6     # ... and the host's own (SO_PRIORITY: TC_PRIO_INTERACTIVE)
SEND_BUFFER_BYTES = 1 << 20   # per send socket: a catch-up burst from one entropy's socket
ENTROPY_OFFSET = 20     # ... and its entropy (2 bytes)
PRIO_OFFSET = 56        # ... and its traffic class (1 byte: 1 control, 0 data)


def check_kernel_section(conf, where):
    """The ``kernel`` section of a host's configuration, or a ConfigError naming what."""
    k = conf.get("kernel")
    if k is None:
        return
    if conf.get("role") != "host":
        raise ConfigError("%s: field 'kernel' is for hosts (switches do not run in kernel "
                          "forwarding)" % where)
    if not isinstance(k, dict):
        raise ConfigError("%s: field 'kernel' must be an object" % where)
    hosts = k.get("hosts")
    if not isinstance(hosts, list) or len(hosts) != conf.get("hosts", len(hosts or ())):
        raise ConfigError("%s: field 'kernel.hosts' must list every host's [ip, port]"
                          % where)
    for i, h in enumerate(hosts):
        if (not isinstance(h, list) or len(h) != 2 or not isinstance(h[0], str)
                or not isinstance(h[1], int)):
            raise ConfigError("%s: field 'kernel.hosts[%d]' must be [ip, port], got %r"
                              % (where, i, h))
    ports = k.get("src_ports")
    if (not isinstance(ports, list) or len(ports) != 2
            or not all(isinstance(x, int) for x in ports)
            or ports[1] < 1 or not 0 < ports[0] <= 65536 - ports[1]):
        raise ConfigError("%s: field 'kernel.src_ports' must be [first port, count >= 1] "
                          "within 1..65535, got %r" % (where, ports))
    if conf.get("secure") or conf.get("pcap") or conf.get("wire", "gse") != "gse":
        raise ConfigError("%s: field 'kernel': kernel forwarding carries the GSE wire "
                          "profile only, without --secure or capture" % where)


class KernelSender:
    """The NIC's ``send(data, addr)`` of a host in kernel forwarding: to the datagram's
    destination host (its header's ``dst``), from the send socket its ``entropy`` picks.
    A control-class packet (header byte 56) goes from the control set's socket of its
    entropy, whose TOS puts it in every port's control class.  ``addr`` (the NIC's
    neighbour) is not used.  The sockets are ``Endpoint``s that are
    never started (they only send: batched with sendmmsg in the compiled build, counted in
    ``sent``, ``send_blocked``, ``send_errors``)."""

    __slots__ = ("endpoints", "control", "hosts", "count", "bad")

    def __init__(self, endpoints, hosts, control=None):
        self.endpoints = endpoints
        self.control = endpoints if control is None else control
        self.hosts = hosts
        self.count = len(endpoints)
        self.bad = 0            # datagrams too short or for no host: not sent (counted)

    def send(self, data, _addr):
        if len(data) < PRIO_OFFSET + 1:
            self.bad += 1
            return
        dst = int.from_bytes(data[DST_OFFSET:DST_OFFSET + 4], "big")
        if dst >= len(self.hosts):
            self.bad += 1
            return
        entropy = (data[ENTROPY_OFFSET] << 8) | data[ENTROPY_OFFSET + 1]
        socks = self.control if data[PRIO_OFFSET] else self.endpoints
        socks[entropy % self.count].send(data, self.hosts[dst])

    def all_endpoints(self):
        if self.control is self.endpoints:
            return list(self.endpoints)
        return list(self.endpoints) + list(self.control)

    def totals(self):
        """The send sockets' counters, summed."""
        out = {"sent": 0, "send_blocked": 0, "send_errors": 0}
        for ep in self.all_endpoints():
            out["sent"] += ep.sent
            out["send_blocked"] += ep.send_blocked
            out["send_errors"] += ep.send_errors
        return out

    def close(self):
        for ep in self.all_endpoints():
            ep.flush()
            ep.closed = True
            ep.sock.close()


def open_send_sockets(netns, base, count, name, control=False):
    """``count`` UDP sockets bound to 0.0.0.0:base.. in the namespace of ``netns`` (a
    pid; None: this process's own), as ``Endpoint``s.  The data and the ``control`` set
    (``CONTROL_TOS``, ``CONTROL_PRIORITY``) share the ports (SO_REUSEPORT: they only
    send), so a packet's entropy picks the same source port whatever its class."""
    def make():
        out = []
        try:
            for i in range(count):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                out.append(s)
                s.setblocking(False)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                _send_buffer(s, SEND_BUFFER_BYTES)
                if control:
                    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, CONTROL_TOS)
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, CONTROL_PRIORITY)
                s.bind(("0.0.0.0", base + i))
        except OSError:
            for s in out:
                s.close()
            raise
        return out
    try:
        socks = made_in(netns, make, "node %r" % name)
    except OSError as exc:
        raise ConfigError("node %r: kernel forwarding's send ports %d..%d: %s"
                          % (name, base, base + count - 1, exc)) from None
    return [Endpoint(s, "%s:%d%s" % (name, base + i, "c" if control else ""))
            for i, s in enumerate(socks)]


def _send_buffer(sock, nbytes):
    """A send buffer that holds what the host's egress queue (its htb) may hold of this
    socket's datagrams: a datagram stays charged to its socket until it leaves the
    host's veth, and the default (~208 KiB) refused sends (``send_blocked``) when a NIC
    caught up 64 packets of one entropy.  ``SO_SNDBUFFORCE`` as root, else what
    ``net.core.wmem_max`` allows."""
    force = getattr(socket, "SO_SNDBUFFORCE", None)
    if force is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, force, nbytes)
            return
        except OSError:
            pass
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, nbytes)


def install(driver, conf):
    """Send ``driver``'s (a ``HostDriver``) datagrams through a ``KernelSender`` and know
    every host's send ports as its one port.  Returns the sender (close it at the end)."""
    k = conf["kernel"]
    base, count = k["src_ports"]
    hosts = [(ip, port) for ip, port in k["hosts"]]
    netns = conf.get("netns")
    data = open_send_sockets(netns, base, count, conf["name"])
    try:
        control = open_send_sockets(netns, base, count, conf["name"], control=True)
    except BaseException:
        for ep in data:
            ep.sock.close()
        raise
    sender = KernelSender(data, hosts, control)
    nic = driver.nic
    nic.ep = None                   # every send through the sender
    if conf.get("mtu_wire_bytes"):
        nic.catchup = CATCHUP_PACKETS * wire_time_ps(conf["mtu_wire_bytes"], nic.mbps)
    nic.send = sender.send
    know = getattr(driver.endpoint, "know", None)
    for ip, _ in hosts:
        for port in range(base, base + count):
            addr = (ip, port)
            driver.port_of[addr] = 0
            if know is not None:
                know(addr)
    return sender


def plane_args(sender, conf):
    """What ``gse.runtimes.udp.dataplane.attach_host`` needs (``kernel=``) to put a host of
    this mode on the compiled packet path: (sender, hosts, first port, count); None for a
    host of another mode (``sender`` None)."""
    if sender is None:
        return None
    base, count = conf["kernel"]["src_ports"]
    return sender, sender.hosts, base, count
