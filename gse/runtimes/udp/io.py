"""The I/O layer of the UDP runtimes: event loop, sockets, and a real-time event heap.

Everything here is protocol-free; ``gse.runtimes.udp.node`` puts agents on top of it.

* **Loops** (``gse.runtimes.udp.loops``, re-exported here): uvloop when installed, else
  asyncio's; ``run_async`` runs one coroutine on a fresh loop and leaves nothing behind.
* **Endpoints.**  A node owns one UDP socket bound to its own address (a PFC lane is a
  second one), opened by ``gse.runtimes.udp.netns.open_udp_socket``.  Receiving drains
  the socket, up to ``DRAIN_BATCH`` datagrams per wake-up, straight into the node's
  handler; on Linux every endpoint of a loop is in one epoll set (``Reactor``) watched
  as a single reader.  The compiled build calls recvmmsg(2)/sendmmsg(2) itself and holds
  what a node sends while sockets drain or timers fire (``flush_sends``); the pure build
  uses the socket module.  Same datagrams, same addresses, same counters.
* **Clock.**  Integer picoseconds since the run's start from CLOCK_MONOTONIC: uvloop's
  ``loop.time()`` is a cached millisecond clock, too coarse for serialisation times.
* **Timers.**  Both loops sleep with millisecond granularity, so ``Scheduler`` keeps every
  node's events in one heap and arms one wake-up for the earliest: ``wake="spin"`` polls
  the last millisecond (the in-process runtime, which owns a core), ``wake="timerfd"``
  arms a timerfd (agents that share cores); ``precise=False`` fires up to a millisecond
  late and the emulated ports catch up in virtual time.  docs/udp-runtime.md has the
  detail and the figures.
"""

import asyncio
import os
import select
import socket
from heapq import heappop, heappush
from time import monotonic_ns

try:
    import cython  # for cython.compiled: True in the compiled build, False in pure Python
    cython.compiled
except (ImportError, AttributeError):      # no Cython: the repository's cython/ folder,
    from gse import _no_cython as cython   # a namespace package, or nothing

from gse.runtimes.udp import timerfd
from gse.runtimes.udp.netns import DEFAULT_RCVBUF, open_udp_socket  # noqa: F401
from gse.runtimes.udp.loops import (LOOPS, loop_factory, loop_name, run_async,  # noqa: F401
                                    uvloop_available)

SPIN_PS = 1_000_000_000            # 1 ms: below it the loops cannot sleep accurately
MAX_ERRORS_KEPT = 20
DRAIN_BATCH = 64                   # datagrams read per wake-up of a socket
RECV_MAX = 65536
LANE_RCVBUF = 1 << 20              # a PFC lane's receive buffer (64-byte frames only)
# Addresses an endpoint keeps parsed (compiled build): its neighbours' (seeded by ``know``)
# and the first others that write to it; datagrams from further addresses are served
# without caching, so a flood from many source addresses costs no memory.
ADDR_CACHE_MAX = 1024

WAKES = ("spin", "timerfd")        # how precise timers wake the loop (Scheduler)

# Compiled: the C of gse_udp_io.c (io.pxd); pure: the socket, select and ctypes modules.
C_IO = cython.compiled


class Endpoint:
    """One node's UDP socket: a reader callback drains it, ``sendto`` sends.

    ``handler(data, addr)`` is called for every datagram, in arrival order.  A handler that
    raises is a bug, not a bad datagram: the error is recorded (``errors``) and the endpoint
    keeps receiving, so one bug cannot silently stall a whole fabric.

    Receiving is the loop's readiness callback (``loop.add_reader``) reading up to
    ``DRAIN_BATCH`` datagrams with ``recvfrom`` per wake-up: no transport, queue, future or
    task per datagram.  Both loops support it (uvloop polls the descriptor with libuv).
    ``recv_size`` is the largest datagram read whole; a node sets it one byte above the
    largest datagram it accepts, so that a longer one still reads as too long (``oversized``)
    without a 64 KiB buffer per read.
    """

    __slots__ = ("sock", "fd", "addr", "name", "loop", "handler", "recv_size", "sent",
                 "send_blocked", "send_errors", "recv_errors", "errors", "closed",
                 "addr_cache", "sockaddr_cache", "c4", "reactor", "out_data", "out_sa",
                 "dirty", "batches", "drain", "lane")

    def __init__(self, sock, name, recv_size=RECV_MAX):
        self.sock = sock
        self.fd = sock.fileno()
        self.addr = sock.getsockname()[:2]
        self.name = name
        self.loop = None
        self.handler = None
        self.recv_size = recv_size
        self.sent = 0
        self.send_blocked = 0     # socket buffer full: the datagram is lost (counted)
        self.send_errors = 0
        self.recv_errors = 0
        self.errors = []
        self.closed = False
        self.addr_cache = {}      # compiled build: the sender's raw address -> (ip, port)
        self.sockaddr_cache = {}  # compiled build: (ip, port) -> its sockaddr_in bytes
        self.c4 = C_IO and sock.family == socket.AF_INET   # the C path (IPv4)
        self.reactor = None       # the loop's Reactor, once started (on Linux)
        self.out_data = []        # compiled build: datagrams held for one sendmmsg(2) ...
        self.out_sa = []          # ... and their destinations' sockaddr
        self.dirty = False        # holds datagrams (it is in the pending list)
        self.batches = 0          # sendmmsg batches flushed
        # a switch's compiled data plane (gse.runtimes.udp.dataplane): reads the socket
        # itself, in place of the handler per datagram
        self.drain = None
        # a node's PFC lane (its socket for PAUSE and RESUME): the reactor reads it before
        # the data sockets and between them, the scheduler before firing timers
        self.lane = False

    async def start(self, handler):
        if self.closed:
            raise RuntimeError("endpoint %s is closed" % self.name)
        self.handler = handler
        self.loop = asyncio.get_running_loop()
        reactor = Reactor.of(self.loop)
        if reactor is not None:
            reactor.add(self)
            self.reactor = reactor
        else:
            self.loop.add_reader(self.fd, self._readable)

    def know(self, addr):
        """Hand back this very ``(ip, port)`` tuple for datagrams from that address (a
        neighbour's, the tuple its node keys its ports by), so that the node's look-up is
        an identity match.  Only the compiled IPv4 path builds addresses itself; elsewhere
        (and for an address it cannot parse) this does nothing."""
        if self.c4:
            gse_know4(addr, self.addr_cache)

    def _readable(self):
        if self.drain is not None:
            self.drain()
            return
        if self.c4:
            self._readable_c()
            return
        recvfrom = self.sock.recvfrom
        size = self.recv_size
        handler = self.handler
        for _ in range(DRAIN_BATCH):
            try:
                data, addr = recvfrom(size)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:            # e.g. an ICMP error reported on the socket
                self.recv_errors += 1
                if self.closed:
                    return
                continue
            try:
                handler(data, addr)
            except Exception as exc:   # a bug in a driver: keep it, keep running
                record_error(self.errors, "%s: %r" % (self.name, exc))

    def _readable_c(self):
        # compiled build, IPv4: recvmmsg(2) itself, up to GSE_MMSG datagrams per call (no
        # exception when the socket is empty), the sender's (ip, port) tuple built once per
        # address (addr_cache); what the handlers send meanwhile is held and leaves in one
        # sendmmsg(2) per endpoint when the socket is drained (flush_sends)
        global _deferring
        if not GSE_HAVE_MMSG:
            self._readable_one()
            return
        handler = self.handler
        left = DRAIN_BATCH
        outer = _deferring
        _deferring = True
        try:
            while left > 0:
                want = left if left < GSE_MMSG else GSE_MMSG
                items = gse_recv4_many(self.fd, self.recv_size, want, self.addr_cache,
                                       ADDR_CACHE_MAX)
                if items is False:     # e.g. an ICMP error reported on the socket
                    self.recv_errors += 1
                    if self.closed:
                        return
                    left -= 1
                    continue
                for item in items:
                    try:
                        handler(item[0], item[1])
                    except Exception as exc:   # a bug in a driver: keep it, keep running
                        record_error(self.errors, "%s: %r" % (self.name, exc))
                if len(items) < want or self.closed:
                    return
                left -= want
        finally:
            _deferring = outer
            if not outer:
                flush_sends()

    def _readable_one(self):
        # compiled build, IPv4, without recvmmsg(2): recvfrom(2) itself
        handler = self.handler
        for i in range(DRAIN_BATCH):
            item = gse_recv4(self.fd, self.recv_size, self.addr_cache, ADDR_CACHE_MAX)
            if item is None:
                return
            if item is False:          # e.g. an ICMP error reported on the socket
                self.recv_errors += 1
                if self.closed:
                    return
                continue
            try:
                handler(item[0], item[1])
            except Exception as exc:   # a bug in a driver: keep it, keep running
                record_error(self.errors, "%s: %r" % (self.name, exc))

    def send(self, data, addr):
        if self.c4 and type(data) is bytes:
            if _deferring and not self.closed:
                sa = gse_sa4(addr, self.sockaddr_cache, ADDR_CACHE_MAX)
                if sa is not None:
                    self.out_data.append(data)
                    self.out_sa.append(sa)
                    if not self.dirty:
                        self.dirty = True
                        _pending.append(self)
                    return
            r = gse_send4(self.fd, data, addr, self.sockaddr_cache, ADDR_CACHE_MAX)
            if r == 0:
                self.sent += 1
            elif r == 1:
                self.send_blocked += 1
            elif r == 2:
                self.send_errors += 1
            else:                      # an address it does not handle: the socket module
                self._send_py(data, addr)
            return
        self._send_py(data, addr)

    def flush(self):
        """Send what ``send`` held, in order (compiled build), with sendmmsg(2): a datagram
        refused for a full socket buffer counts as ``send_blocked``, another error as
        ``send_errors``, as with sendto(2)."""
        datas = self.out_data
        sas = self.out_sa
        self.dirty = False
        n = len(datas)
        if n == 0:
            return
        if self.closed:
            self.send_errors += n
        else:
            self.batches += 1
            start = 0
            while start < n:
                r = gse_send4_many(self.fd, datas, sas, start)   # (sent << 2) | why
                done = r >> 2
                self.sent += done
                start += done
                if start < n:           # that one failed: count it, go on with the next
                    if r & 3 == 1:
                        self.send_blocked += 1
                    else:
                        self.send_errors += 1
                    start += 1
        datas.clear()
        sas.clear()

    def _send_py(self, data, addr):
        try:
            self.sock.sendto(data, addr)
        except (BlockingIOError, InterruptedError):
            self.send_blocked += 1
            return
        except OSError:
            self.send_errors += 1
            return
        self.sent += 1

    async def close(self):
        """Stop receiving and close the socket (idempotent)."""
        if self.closed:
            return
        self.closed = True
        if self.reactor is not None:
            self.reactor.remove(self)
            self.reactor = None
        elif self.loop is not None and not self.loop.is_closed():
            self.loop.remove_reader(self.fd)
        self.sock.close()


class Reactor:
    """Every endpoint on one loop behind a single reader: an epoll set of their sockets.

    The loop wakes one callback per iteration for all of them, which asks the set which
    sockets are readable (without blocking) and drains each, instead of dispatching one
    loop callback per socket: on the plain asyncio loop that dispatch (selector events,
    handles, contexts) costs more than reading a few datagrams, and a fabric's 36 sockets
    each hold only a few datagrams per iteration.  Linux only (``select.epoll``); without
    it endpoints register with the loop one by one.  The last endpoint to close closes it.
    """

    __slots__ = ("loop", "ep", "epfd", "endpoints", "closed", "lane_ep", "lane_epfd",
                 "lanes")

    ACTIVE = {}  # type: dict  # loop -> its reactor while it has endpoints

    def __init__(self, loop):
        self.loop = loop
        self.ep = select.epoll()
        self.epfd = self.ep.fileno()
        self.endpoints = {}    # socket fd -> Endpoint
        self.closed = False
        # PFC lanes (endpoints with ``lane``): in the set above too (they wake the loop),
        # and in a set of their own, asked before the data sockets and after each
        self.lane_ep = None
        self.lane_epfd = -1
        self.lanes = {}        # socket fd -> Endpoint
        loop.add_reader(self.epfd, self._ready)

    @staticmethod
    def of(loop):
        """The reactor of ``loop`` (made on first use), or None where epoll is missing."""
        reactor = Reactor.ACTIVE.get(loop)
        if reactor is None:
            if not hasattr(select, "epoll"):
                return None
            reactor = Reactor.ACTIVE[loop] = Reactor(loop)
        return reactor

    def add(self, endpoint):
        self.ep.register(endpoint.fd, select.EPOLLIN)
        self.endpoints[endpoint.fd] = endpoint
        if endpoint.lane:
            if self.lane_ep is None:
                self.lane_ep = select.epoll()
                self.lane_epfd = self.lane_ep.fileno()
            self.lane_ep.register(endpoint.fd, select.EPOLLIN)
            self.lanes[endpoint.fd] = endpoint

    def remove(self, endpoint):
        if self.endpoints.pop(endpoint.fd, None) is not None:
            try:
                self.ep.unregister(endpoint.fd)
            except (OSError, ValueError):
                pass
        if self.lanes.pop(endpoint.fd, None) is not None:
            try:
                self.lane_ep.unregister(endpoint.fd)
            except (OSError, ValueError):
                pass
        if not self.endpoints:
            self.close()

    def poll_lanes(self):
        """Drain every PFC lane that holds a datagram (PAUSE and RESUME before data)."""
        lanes = self.lanes
        if C_IO:        # compiled build: epoll_wait(2) on the lanes' set, its own events
            n = gse_epoll_lanes(self.lane_epfd)
            for i in range(n):
                endpoint = lanes.get(gse_epoll_lane_fd(i))
                if endpoint is not None:
                    endpoint._readable()
            return
        for fd, _ in self.lane_ep.poll(0):
            endpoint = lanes.get(fd)
            if endpoint is not None:
                endpoint._readable()

    def _ready(self):
        if C_IO:
            self._ready_c()
            return
        endpoints = self.endpoints
        lanes = bool(self.lanes)
        if lanes:
            self.poll_lanes()
        for fd, _ in self.ep.poll(0, DRAIN_BATCH):
            endpoint = endpoints.get(fd)
            if endpoint is not None and not endpoint.lane:
                endpoint._readable()
                if lanes:
                    self.poll_lanes()

    def _ready_c(self):
        # compiled build: epoll_wait(2) on the set, the ready sockets drained in C (the
        # lanes' own set has events of its own: gse_epoll_lanes)
        endpoints = self.endpoints
        lanes = len(self.lanes) > 0
        if lanes:
            self.poll_lanes()
        n = gse_epoll_ready(self.epfd)
        for i in range(n):
            endpoint = endpoints.get(gse_epoll_fd(i))
            if endpoint is not None and not endpoint.lane:
                endpoint._readable()
                if lanes:
                    self.poll_lanes()

    def close(self):
        if self.closed:
            return
        self.closed = True
        if Reactor.ACTIVE.get(self.loop) is self:
            del Reactor.ACTIVE[self.loop]
        if not self.loop.is_closed():
            self.loop.remove_reader(self.epfd)
        self.ep.close()
        if self.lane_ep is not None:
            self.lane_ep.close()


# Sends held for sendmmsg(2) (compiled build): while ``_deferring`` (a socket being
# drained, timers firing) an IPv4 endpoint's ``send`` queues the datagram and the endpoint
# joins ``_pending``; ``flush_sends`` sends them all once that work is done.
_deferring = False
_pending: list = []


def flush_sends():
    """Send every datagram held by ``Endpoint.send`` while sends were deferred."""
    while _pending:
        ep = _pending.pop()
        ep.flush()


def hold_flush(holder):
    """While sends are deferred (a socket being drained, timers firing), have
    ``holder.flush()`` called with the endpoints' when that work is done: True.  False:
    nothing is deferred now, the caller sends at once.  (A host's compiled packet path,
    ``gse.runtimes.udp.hostplane``, holds its datagrams this way, as an endpoint does.)"""
    if _deferring:
        _pending.append(holder)
        return True
    return False


def record_error(errors, text):
    if len(errors) < MAX_ERRORS_KEPT:
        errors.append(text)


class Scheduler:
    """Timed events of every node on one loop, in integer picoseconds since ``t0``.

    ``at(t, fn, arg)`` calls ``fn(t, arg)`` once the clock has reached ``t``; events fire in
    (time, insertion) order.  One loop timer is armed for the earliest event.  An ``fn``
    that raises is recorded in ``errors`` and the others still run.
    """

    __slots__ = ("loop", "t0_ns", "heap", "seq", "handle", "armed_at", "precise", "fired",
                 "late_ps", "late_max_ps", "late_1ms", "errors", "closed", "tfd")

    def __init__(self, loop, precise=True, wake="spin"):
        self.loop = loop
        self.t0_ns = monotonic_ns()
        self.heap = []
        self.seq = 0
        self.handle = None
        self.armed_at = -1
        self.precise = precise
        self.fired = 0
        self.late_ps = 0          # summed lateness of fired events: how far behind the
        self.late_max_ps = 0      # loop ran; large values mean the offered load exceeds
        self.late_1ms = 0         # what the process carries (events > 1 ms late)
        self.errors = []
        self.closed = False
        # precise, wake="timerfd": a timerfd the loop watches wakes it at the event's
        # microsecond (Linux); wake="spin" (or no timerfd): the loop sleeps to within a
        # millisecond and polls the rest of the way (see the module docstring)
        if wake not in WAKES:
            raise ValueError("unknown timer wake-up %r (known: %s)" % (wake, ", ".join(WAKES)))
        self.tfd = timerfd_open() if precise and wake == "timerfd" else -1
        if self.tfd >= 0:
            try:
                loop.add_reader(self.tfd, self._on_tfd)
            except (NotImplementedError, RuntimeError, ValueError, OSError):
                os.close(self.tfd)
                self.tfd = -1

    def start_clock(self, delay_ns=0):
        """Time 0 is now (plus ``delay_ns``); before it ``now()`` reads 0."""
        self.t0_ns = monotonic_ns() + delay_ns

    def now(self):
        t = self._clock()
        return t if t > 0 else 0

    def at(self, t, fn, arg):
        if self.closed:
            return                      # shutting down: nothing new may start
        self.seq += 1
        heappush(self.heap, (t, self.seq, fn, arg))
        if self.armed_at < 0 or t < self.armed_at:
            self._arm(t)

    def _arm(self, t):
        if self.closed:
            return
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None
        self.armed_at = t
        wait_ps = t - self._clock()
        if self.tfd >= 0 and wait_ps > 0:
            # the timerfd at the event's time (rounded up to the ns), absolute on the clock
            timerfd_at(self.tfd, self.t0_ns + (t + 999) // 1000)
            return
        if wait_ps <= 0 or (self.precise and wait_ps < SPIN_PS):
            self.handle = self.loop.call_soon(self._fire)
        elif self.precise:
            # sleep to within a millisecond of the event, poll the rest of the way
            self.handle = self.loop.call_later((wait_ps - SPIN_PS) / 1e12, self._fire)
        else:
            delay = wait_ps / 1e12
            if delay < 0.001:
                delay = 0.001           # uvloop would round it to 0 and spin
            self.handle = self.loop.call_later(delay, self._fire)

    def _on_tfd(self):
        timerfd_drain(self.tfd)
        self._fire()

    def _fire(self):
        global _deferring
        outer = _deferring
        _deferring = C_IO and GSE_HAVE_MMSG      # sends of all the events: batched
        try:
            reactor = Reactor.ACTIVE.get(self.loop)
            if reactor is not None and reactor.lanes:
                reactor.poll_lanes()    # a PAUSE waiting in a lane stops a port first
            self._fire_due()
        finally:
            _deferring = outer
            if not outer:
                flush_sends()

    def _fire_due(self):
        self.handle = None
        self.armed_at = -1
        heap = self.heap
        now = self._clock()
        while heap and heap[0][0] <= now:
            t, _, fn, arg = heappop(heap)
            self.fired += 1
            late = now - t
            self.late_ps += late
            if late > self.late_max_ps:
                self.late_max_ps = late
            if late > SPIN_PS:
                self.late_1ms += 1
            try:
                fn(t, arg)
            except Exception as exc:
                record_error(self.errors, "event at %d ps: %r" % (t, exc))
        if heap and (self.armed_at < 0 or heap[0][0] < self.armed_at):
            self._arm(heap[0][0])

    def _clock(self):
        """Picoseconds since time 0 (negative before it)."""
        if C_IO:
            return (gse_monotonic_ns() - self.t0_ns) * 1000
        return (monotonic_ns() - self.t0_ns) * 1000

    def lateness(self):
        """How late events fired: mean and max in us, and how many were over 1 ms late."""
        n = self.fired
        return {"mean_us": round(self.late_ps / n / 1e6, 1) if n else 0.0,
                "max_us": round(self.late_max_ps / 1e6, 1), "over_1ms": self.late_1ms}

    def close(self):
        self.closed = True
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None
        self.heap.clear()
        if self.tfd >= 0:
            if not self.loop.is_closed():
                self.loop.remove_reader(self.tfd)
            os.close(self.tfd)
            self.tfd = -1


# -- timerfd (Linux): C in the compiled build, ctypes (gse.runtimes.udp.timerfd) in the pure
# one.  Timer slack 1 ns on first use: the kernel would defer a wake-up by 50 us to batch it.

def timerfd_open():
    """A non-blocking CLOCK_MONOTONIC timerfd, or -1 where there is none (not Linux)."""
    if C_IO:
        fd = gse_timerfd_open()
        if fd >= 0:
            gse_timer_slack(1)
        return fd
    return timerfd.open_timerfd()


def timerfd_at(fd, abs_ns):
    """Arm ``fd`` to expire once at ``abs_ns`` on CLOCK_MONOTONIC (a past time: at once)."""
    if C_IO:
        gse_timerfd_at(fd, abs_ns)
        return
    timerfd.arm(fd, abs_ns)


def timerfd_drain(fd):
    """Consume the expiry count of ``fd`` (nothing if it has not expired)."""
    if C_IO:
        gse_timerfd_drain(fd)
        return
    timerfd.drain(fd)
