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

A host of kernel forwarding (``kernel``, ``gse.runtimes.udp.kernel_host``) takes any host's
send ports as its link and sends each datagram to the host its header names, from the
send socket its entropy and class pick (``KernelSender.send``'s choice), a C batch and one
sendmmsg(2) per socket (``_send_kernel``).

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
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy

from gse.agents.driver cimport AgentDriver
from gse.runtimes.udp.io cimport Endpoint, Scheduler, hold_flush
from gse.runtimes.udp.link cimport HostNic
from gse.runtimes.udp.node cimport HostDriver
from gse.wire.fastcodec cimport (gse_header, header_datagram_len, header_parse, header_write,
                                 packet_header, pattern_ok)
from gse.wire.packet cimport Packet, new_packet
from gse.runtimes.udp.slots cimport (DP_BATCH, dp_flush, dp_free, dp_give, dp_got, dp_ingress,
                                     dp_inet4, dp_new, dp_out, dp_pop, dp_push, dp_recv,
                                     dp_sender, dp_set_peer, dp_slot, dp_src_ip, dp_src_port,
                                     dp_state, dp_take)

from gse.runtimes.udp.io import record_error
from gse.wire.packet import DATA, F_TRIMMED, HEADER_BYTES, PAUSE, RESUME

AVAILABLE = True     # the pure twin says False

cdef long long C_DATA = DATA
cdef long long C_F_TRIMMED = F_TRIMMED
cdef long long C_HEADER = HEADER_BYTES
cdef long long C_PAUSE = PAUSE
cdef long long C_RESUME = RESUME
DEF DRAIN = 64          # datagrams per readiness call, as Endpoint's DRAIN_BATCH
# a datagram's header fields that kernel forwarding's sends are chosen by (as
# gse.runtimes.udp.kernel_host.KernelSender.send): dst, entropy, traffic class
DEF K_DST = 8
DEF K_ENTROPY = 20
DEF K_PRIO = 56


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
    # kernel forwarding (``kernel``): a send state per send socket, data then control
    cdef dp_state **kd
    cdef int nkd              # states allocated (freed by _free) ...
    cdef int nk               # ... and in use: 0 until ``kernel`` is done
    cdef int kcount
    cdef int kctl
    cdef int kbase
    cdef unsigned int *khosts
    cdef int nhosts
    cdef public object ksender
    cdef list keps
    cdef public long long kernel_sent

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
        self.fast = self.slow = self.encoded = self.kernel_sent = 0
        self.active = self.held = False
        self.kd = NULL
        self.khosts = NULL
        self.nk = self.nkd = self.nhosts = 0
        self.keps = []
        self.ksender = None

    def __dealloc__(self):
        self._free()

    cdef _free(self):
        cdef int j
        self.nk = 0
        if self.kd != NULL:
            for j in range(self.nkd):
                dp_free(self.kd[j])         # (NULL: not made)
            free(self.kd)
            self.kd = NULL
        self.nkd = 0
        free(self.khosts)
        self.khosts = NULL
        dp_free(self.d)
        self.d = NULL

    def close(self):
        """Send what is held, then free the buffers."""
        self.flush()
        self._free()

    def kernel(self, sender, hosts, int base, int count):
        """Kernel forwarding (``gse.runtimes.udp.kernel_host``): a datagram from any
        host's send ports ``base .. base + count - 1`` is from the link (as ``port_of``
        says on the Python path), and each datagram sent goes to its ``dst`` host from
        the send socket of ``sender`` (a ``KernelSender``) its entropy and class pick,
        as ``KernelSender.send`` does, in one sendmmsg(2) per socket; a datagram too
        short or for no host is not sent, counted in ``sender.bad``."""
        cdef int j, h
        cdef Endpoint e
        eps = sender.all_endpoints()
        if count < 1 or len(eps) not in (count, 2 * count) or self.d == NULL:
            raise ValueError("kernel forwarding: %d send sockets for %d entropies"
                             % (len(eps), count))
        if self.kd != NULL:
            raise ValueError("kernel forwarding: the plane has its send sockets already")
        self.kcount = count
        self.kctl = count if len(eps) == 2 * count else 0
        self.kbase = base
        self.nhosts = len(hosts)
        self.khosts = <unsigned int *>calloc(max(1, self.nhosts), sizeof(unsigned int))
        self.kd = <dp_state **>calloc(len(eps), sizeof(dp_state *))
        if self.khosts == NULL or self.kd == NULL:
            raise MemoryError()
        self.nkd = len(eps)
        for h, (ip, _) in enumerate(hosts):
            self.khosts[h] = dp_inet4(str(ip).encode())
            if self.khosts[h] == 0:
                raise ValueError("kernel forwarding: not an IPv4 host address: %r" % (ip,))
        for j, e in enumerate(eps):
            self.kd[j] = dp_new(e.fd, self.d.bufsize, max(1, self.nhosts))
            if self.kd[j] == NULL:
                raise MemoryError()
            for h, (ip, port) in enumerate(hosts):
                dp_set_peer(self.kd[j], h, str(ip).encode(), int(port))
        self.ksender = sender
        self.keps = list(eps)
        self.nk = len(eps)

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
        if self.nk and ingress != 0:
            ingress = self._kernel_ingress(i)
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

    cdef int _kernel_ingress(self, int i):
        """0 if the i-th datagram came from one of a host's send ports, else -1."""
        cdef unsigned int ip = dp_src_ip(self.d, i)
        cdef int port = dp_src_port(self.d, i)
        cdef int h
        if ip == 0 or port < self.kbase or port >= self.kbase + self.kcount:
            return -1
        for h in range(self.nhosts):
            if self.khosts[h] == ip:
                return 0
        return -1

    cdef object _addr(self, int i, int ingress):
        cdef char ip[16]
        cdef int udp_port
        if ingress == 0 and not self.nk:
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
        if self.nk:                             # kernel forwarding: as the sender does
            self._send_held()
            self.ksender.send(data, addr)
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
        cdef dp_state *t = self.d
        cdef int port = 0, j
        cdef unsigned char *b = s.buf
        if self.nk:                    # kernel forwarding: to its dst, from its socket
            port = -1
            if s.n > K_PRIO:
                port = (b[K_DST] << 24) | (b[K_DST + 1] << 16) | (b[K_DST + 2] << 8) | b[K_DST + 3]
            if port < 0 or port >= self.nhosts:
                self.ksender.bad += 1
                dp_give(self.d, s)
                return
            j = ((b[K_ENTROPY] << 8) | b[K_ENTROPY + 1]) % self.kcount
            if b[K_PRIO]:
                j += self.kctl
            t = self.kd[j]
        if dp_out(t, s, port):         # the batch is full: send it now
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
        if self.nk:
            self._send_kernel()
            return
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

    cdef _send_kernel(self):
        """Every send socket's batch (kernel forwarding), counted in its endpoint; the
        slots back to the host's pool."""
        cdef long long out[4]
        cdef int i, j
        cdef dp_state *t
        cdef dp_slot *s
        cdef Endpoint e
        for j in range(self.nk):
            t = self.kd[j]
            if t.nout == 0:
                continue
            e = self.keps[j]
            if e.closed:
                e.send_errors += t.nout
                for i in range(t.nout):
                    dp_give(self.d, t.sslot[i])
                t.nout = 0
                continue
            out[0] = out[1] = out[2] = out[3] = 0
            dp_flush(t, out)
            e.sent += out[0]
            e.send_blocked += out[1]
            e.send_errors += out[2]
            e.batches += out[3]
            self.kernel_sent += out[0]
            while t.free != NULL:
                s = t.free
                t.free = s.next
                dp_give(self.d, s)
