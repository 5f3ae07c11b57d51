"""The runtimes' UDP sockets: opened here or in another network namespace, and the kernel's
counters of them.

Under Mininet every node has its own network namespace, and by default its own ``gse
agent`` process.  With a grouped placement (docs/mininet.md, "Placement") one process
runs several nodes -- every switch of a tier, or every switch -- and each node's socket
must still live in that node's namespace, bound to its own interfaces: the process
enters the namespace (``setns(2)``), opens and binds the socket, and returns to its own
namespace.  A socket keeps the namespace it was made in for its whole life, so the
process then reads and writes all of them from one event loop; datagrams between its
nodes still cross the veths between their namespaces, as they would between processes.

``netns`` in a node's configuration names the namespace by a process living in it (the
pid of the Mininet node's shell): ``/proc/<pid>/ns/net`` is entered, ``/proc/<pid>/net/udp``
read for the kernel's drop counters.  Linux only; needs CAP_SYS_ADMIN (root, as Mininet).
Python 3.12 has ``os.setns``; before that the C library's ``setns`` is called by ctypes.
"""

import ctypes
import os

import socket
import struct


CLONE_NEWNET = 0x40000000
DEFAULT_RCVBUF = 4 * 1024 * 1024   # ~1,000 datagrams of 4 KB: bursts must not overflow

__all__ = ["open_udp_socket", "open_udp_socket_in", "made_in", "ip_udp", "kernel_drops",
           "kernel_drops_in"]

_libc = None


def _setns(fd):
    if hasattr(os, "setns"):
        os.setns(fd, CLONE_NEWNET)
        return
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, "setns: %s" % os.strerror(err))


def open_udp_socket(ip, port, rcvbuf=DEFAULT_RCVBUF, what="node"):
    """A non-blocking UDP socket bound to (ip, port), with a receive buffer of ``rcvbuf``.

    As root ``SO_RCVBUFFORCE`` passes the system's rmem_max; otherwise the kernel caps the
    request silently (the achieved size is in ``sock.getsockopt(SO_RCVBUF)``).
    """
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_DGRAM)
    try:
        if rcvbuf:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUFFORCE, rcvbuf)
            except (AttributeError, OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.bind((ip, port))
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise OSError(exc.errno, "%s: cannot bind UDP %s:%d: %s"
                      % (what, ip, port, exc.strerror or exc)) from None
    return sock



def open_udp_socket_in(pid, ip, port, rcvbuf, what="node"):
    """``open_udp_socket(ip, port, rcvbuf)`` made in the network namespace of process
    ``pid`` (None: this process's own).  The calling thread is back in its own namespace
    when this returns, whatever happened."""
    return made_in(pid, lambda: open_udp_socket(ip, port, rcvbuf, what), what)


def made_in(pid, make, what="node"):
    """``make()`` (a socket's constructor) run in the network namespace of process ``pid``
    (None: this process's own); the thread returns to its own namespace whatever happened."""
    if pid is None:
        return make()
    own = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        try:
            target = os.open("/proc/%d/ns/net" % pid, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise OSError(exc.errno, "%s: no network namespace of process %d: %s"
                          % (what, pid, exc.strerror)) from None
        try:
            _setns(target)
        finally:
            os.close(target)
        try:
            return make()
        finally:
            _setns(own)
    finally:
        os.close(own)


def ip_udp(src, dst, payload):
    """An IPv4 + UDP datagram from ``src`` to ``dst`` ((ip, port) each) for a raw socket
    (the kernel fills in the IP checksum and length; UDP checksum 0 = none): what a
    forger sends with a neighbour's address (experiments/flood.py, secure_attacks_mininet)."""
    udp = struct.pack("!HHHH", src[1], dst[1], 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64,
                     socket.IPPROTO_UDP, 0, socket.inet_aton(src[0]),
                     socket.inet_aton(dst[0]))
    return ip + udp


def kernel_drops_in(pid, addrs):
    """``kernel_drops`` for sockets in the namespace of process
    ``pid`` (None: this process's own)."""
    base = "/proc/self/net" if pid is None else "/proc/%d/net" % pid
    return proc_udp_drops(addrs, base)


def kernel_drops(addrs):
    """Datagrams the kernel dropped at each bound (ip, port) in ``addrs`` (receive buffer
    overflow), read from /proc/net/udp{,6} of this network namespace; {} where unreadable."""
    return proc_udp_drops(addrs, "/proc/net")


def proc_udp_drops(addrs, base):
    """``kernel_drops`` from ``base``/udp{,6} (``/proc/PID/net``: that process's namespace)."""
    wanted = {(ip, port) for ip, port in addrs}
    found = {}
    for path, v6 in ((base + "/udp", False), (base + "/udp6", True)):
        try:
            with open(path) as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 13:
                continue
            hexip, hexport = fields[1].split(":")
            try:
                ip = _proc_ip(hexip, v6)
            except (ValueError, OSError, struct.error):
                continue
            key = (ip, int(hexport, 16))
            if key in wanted:
                found[key] = int(fields[-1])
    return found


def _proc_ip(hexip, v6):
    if not v6:
        return socket.inet_ntoa(struct.pack("<I", int(hexip, 16)))
    raw = bytes.fromhex(hexip)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, words)
