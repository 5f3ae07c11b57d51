# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled twin of gse/runtimes/udp/hostplane.py: a UDP host's packet path in C.

Why: on the Python-object path a host pays, per datagram received, a bytes object of the
whole datagram (read by recvmmsg(2), copied out), an ``(ip, port)`` look-up and a decode
into a packet; and per datagram sent, a bytes object the encoder writes, a list entry
and a ``sockaddr`` look-up until the endpoint's sendmmsg(2).  Here the buffers are C
slots reused from a pool (``gse_switchplane.c``'s, one port: the host's link):

* **receive** (``drain``, the endpoint's readiness callback): recvmmsg(2) of up to 32
  datagrams into slots, the sender matched against the link's neighbour in C, the header
  parsed in C (``gse.wire.fastcodec.header_parse``: every check of the decoder), a DATA
  payload checked against the pattern in the slot (``pattern_ok``), then the one object
  made: the ``Packet`` the agent is handed (``HostAgentDriver.receive``), exactly what
  ``HostDriver.datagram`` hands it, with the same counters (``datagrams``,
  ``payload_errors``, ``payload_bytes``);
* **send** (``send_packet``, called by ``EmulatedPort._transmit`` for a packet the NIC
  sends at once): the header and payload pattern written straight into a slot
  (``header_write``, the encoder's C), held with the others and sent with sendmmsg(2)
  when the drain, or the timers firing, are done (``gse.runtimes.udp.io.hold_flush``),
  as the endpoint batches its sends; counted in the endpoint's ``sent``,
  ``send_blocked``, ``send_errors``.

Whatever is not the plain case takes the Python path, one datagram at a time, in order:
a datagram the C parser doubts or refuses (the reference decoder gives the verdict and
the reason it is counted under), one from another address, with a security trailer,
PAUSE and RESUME (``HostDriver.datagram`` on a bytes copy); a packet the C encoder may
not write (``packet_header`` says: a corrupt mark, a payload object, a field past its
width) or that waits on the emulated wire is encoded to bytes by the port as before and
its bytes join the same batch (``send_to``), so datagrams leave in the order the port
sent them.  The agent logic, the link's schedule and its loss and corruption draws are
the Python objects' (``HostNic``, ``AgentDriver``), unchanged.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.string cimport memcpy

from gse.agents.driver cimport AgentDriver
from gse.runtimes.udp.io cimport Endpoint, Scheduler, hold_flush
from gse.runtimes.udp.link cimport HostNic
from gse.runtimes.udp.node cimport HostDriver
from gse.wire.fastcodec cimport (gse_header, header_datagram_len, header_parse, header_write,
                                 packet_header, pattern_ok)
from gse.wire.packet cimport Packet, new_packet
from gse.runtimes.udp.slots cimport (DP_BATCH, dp_flush, dp_free, dp_give, dp_got, dp_ingress,
                                     dp_new, dp_out, dp_pop, dp_push, dp_recv, dp_sender,
                                     dp_set_peer, dp_slot, dp_state, dp_take)

from gse.runtimes.udp.io import record_error
from gse.wire.packet import DATA, F_TRIMMED, HEADER_BYTES, PAUSE, RESUME

AVAILABLE = True     # the pure twin says False

cdef long long C_DATA = DATA
cdef long long C_F_TRIMMED = F_TRIMMED
cdef long long C_HEADER = HEADER_BYTES
cdef long long C_PAUSE = PAUSE
cdef long long C_RESUME = RESUME
DEF DRAIN = 64          # datagrams per readiness call, as Endpoint's DRAIN_BATCH


cdef class HostPlane:
    """One host's packet path: ``drain()`` is its endpoint's readiness callback,
    ``send_packet`` and ``send_to`` its NIC's sends."""

    cdef dp_state *d
    cdef HostDriver drv
    cdef HostNic nic
    cdef Endpoint ep
    cdef Scheduler sched
    cdef AgentDriver driver
    cdef object peer_addr
    cdef public object on_receive
    cdef public long long fast
    cdef public long long slow
    cdef public long long encoded
    cdef Py_ssize_t max_datagram
    cdef bint active
    cdef bint held

    def __init__(self, HostDriver drv):
        self.drv = drv
        self.nic = drv.nic
        self.ep = drv.endpoint
        self.sched = drv.sched
        self.driver = drv.driver
        self.peer_addr = self.nic.peer_addr
        self.max_datagram = drv.max_datagram
        self.d = dp_new(self.ep.fd, drv.max_datagram + 1, 1)
        if self.d == NULL:
            raise MemoryError()
        if not dp_set_peer(self.d, 0, str(self.peer_addr[0]).encode(),
                           int(self.peer_addr[1])):
            raise ValueError("not an IPv4 neighbour: %r" % (self.peer_addr,))
        self.on_receive = None
        self.fast = self.slow = self.encoded = 0
        self.active = self.held = False

    def __dealloc__(self):
        dp_free(self.d)
        self.d = NULL

    def close(self):
        """Send what is held, then free the buffers."""
        self.flush()
        dp_free(self.d)
        self.d = NULL

    # -- receive ------------------------------------------------------------------------

    def drain(self):
        """Read up to DRAIN datagrams, hand each to the agent, send what they made."""
        cdef int left = DRAIN, want, m, i
        if self.d == NULL:
            return
        if self.on_receive is not None:
            self.on_receive()
        self.active = True
        try:
            while left > 0:
                want = DP_BATCH if left > DP_BATCH else left
                m = dp_recv(self.d, want)
                if m == -1:                # e.g. an ICMP error reported on the socket
                    self.ep.recv_errors += 1
                    if self.ep.closed:
                        return
                    left -= 1
                    continue
                if m <= 0:
                    break
                for i in range(m):
                    self._datagram(i)
                if m < want or self.ep.closed or self.d == NULL:
                    break
                left -= want
        finally:
            self.active = False
            self._send_held()

    cdef _datagram(self, int i):
        """``HostDriver.datagram`` on the i-th slot received (errors kept, as the endpoint
        keeps a handler's)."""
        cdef dp_slot *s = dp_got(self.d, i)
        cdef int ingress = dp_ingress(self.d, i)
        cdef int trailer = -1
        cdef gse_header h
        cdef Packet pkt
        cdef HostDriver drv = self.drv
        cdef long long now
        try:
            if s.n >= C_HEADER and s.n <= self.max_datagram and ingress == 0:
                trailer = header_parse(s.buf, s.n, &h)
            if trailer != 0 or h.kind == C_PAUSE or h.kind == C_RESUME:
                # the Python path: the decoder's verdict, other senders, a security
                # trailer, PFC frames
                self.slow += 1
                data = PyBytes_FromStringAndSize(<char *>s.buf, s.n)
                addr = self._addr(i, ingress)
                dp_give(self.d, s)
                s = NULL
                drv.datagram(data, addr)
                return
            self.fast += 1
            drv.datagrams += 1
            pkt = new_packet(h.kind, h.src, h.dst, h.msg_id, h.psn, h.entropy,
                             h.payload_len, h.flags, h.msg_len, h.credit, h.aux,
                             h.sack_base, h.sack_bits, h.ts, h.prio)
            pkt.ingress = 0
            now = self.sched.now()
            if h.kind == C_DATA and not h.flags & C_F_TRIMMED:
                if not pattern_ok(s.buf + C_HEADER, s.n - C_HEADER, h.src, h.msg_id,
                                  h.psn):
                    drv.payload_errors += 1   # checksum passed but the bytes are not ours
                    return
                drv.payload_bytes += h.payload_len
            dp_give(self.d, s)
            s = NULL
            self.driver.receive(pkt, now)
        except Exception as exc:   # a bug in a driver: keep it, keep running
            record_error(self.ep.errors, "%s: %r" % (self.ep.name, exc))
        finally:
            if s != NULL:
                dp_give(self.d, s)

    cdef object _addr(self, int i, int ingress):
        cdef char ip[16]
        cdef int udp_port
        if ingress == 0:
            return self.peer_addr               # the very tuple port_of is keyed by
        dp_sender(self.d, i, ip, &udp_port)
        return (ip.decode(), udp_port)

    # -- send -----------------------------------------------------------------------------

    cpdef bint send_packet(self, Packet pkt) except -1:
        """Encode ``pkt`` into the send batch: True; False if the C encoder may not write
        it (the port then encodes it to bytes as before, and ``send_to`` takes those)."""
        cdef dp_slot *s = self._encode(pkt)
        if s == NULL:
            return False
        self._hold(s)
        return True

    cpdef bint wire_packet(self, Packet pkt) except -1:
        """Encode ``pkt`` into a buffer that waits on the emulated wire (the port keeps
        its departure time and a None in its ``wire``; ``send_to(None, ...)`` sends the
        oldest): True; False as ``send_packet``."""
        cdef dp_slot *s = self._encode(pkt)
        if s == NULL:
            return False
        dp_push(&self.d.wire[0], s)
        return True

    cdef dp_slot *_encode(self, Packet pkt) except? NULL:
        cdef gse_header h
        cdef Py_ssize_t n
        cdef dp_slot *s
        if self.d == NULL or self.ep.closed or not packet_header(pkt, &h):
            return NULL
        n = header_datagram_len(&h)
        if n > self.d.bufsize:
            return NULL
        s = dp_take(self.d)
        if s == NULL:
            raise MemoryError()
        header_write(s.buf, n, &h)
        s.n = <int>n
        self.encoded += 1
        return s

    def send_to(self, data, addr):
        """The NIC's send: ``None``, the oldest datagram waiting on the emulated wire
        (``wire_packet``); bytes, into the same batch, so that the datagrams leave in
        order; elsewhere than the link's neighbour, or closed, through the endpoint
        (after what is held)."""
        cdef dp_slot *s
        cdef Py_ssize_t n
        if data is None:
            s = dp_pop(&self.d.wire[0]) if self.d != NULL else NULL
            if s == NULL:
                return
            if self.ep.closed:
                self.ep.send_errors += 1
                dp_give(self.d, s)
                return
            self._hold(s)
            return
        if (self.d == NULL or self.ep.closed or type(data) is not bytes
                or len(<bytes>data) > self.d.bufsize
                or not (addr is self.peer_addr or addr == self.peer_addr)):
            self._send_held()
            self.ep.send(data, addr)
            return
        n = len(<bytes>data)
        s = dp_take(self.d)
        if s == NULL:
            raise MemoryError()
        memcpy(s.buf, PyBytes_AS_STRING(data), n)
        s.n = <int>n
        self._hold(s)

    cdef _hold(self, dp_slot *s):
        if dp_out(self.d, s, 0):       # the batch is full: send it now
            self._send_held()
            return
        if self.active or self.held:
            return
        if hold_flush(self):           # the endpoints' flush calls ours
            self.held = True
            return
        self._send_held()              # nothing deferred: at once, as sendto would

    cpdef flush(self):
        """Send what is held (``gse.runtimes.udp.io.flush_sends`` calls it)."""
        self.held = False
        self._send_held()

    cdef _send_held(self):
        cdef long long out[4]
        cdef int i
        if self.d == NULL or self.d.nout == 0:
            return
        if self.ep.closed:
            self.ep.send_errors += self.d.nout
            for i in range(self.d.nout):
                dp_give(self.d, self.d.sslot[i])
            self.d.nout = 0
            return
        out[0] = out[1] = out[2] = out[3] = 0
        dp_flush(self.d, out)
        self.ep.sent += out[0]
        self.ep.send_blocked += out[1]
        self.ep.send_errors += out[2]
        self.ep.batches += out[3]
