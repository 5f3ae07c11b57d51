# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled twin of gse/runtimes/udp/switchplane.py: a UDP switch's per-packet path in C.

Why: a UDP switch built of Python objects (``SwitchDriver.datagram`` -> decoded packet ->
``Switch.route`` -> ``OutputQueue`` -> ``EmulatedPort``) costs a bytes object, an address
tuple, a packet and a dozen method calls per datagram per hop, and one Python process
forwards at a fraction of what the kernel carries.  Here the same model runs on C
buffers: recvmmsg(2) into a pool of slots, the header parsed in C
(``gse.wire.fastcodec.header_parse``, every check of the decoder), the egress port chosen
as ``Switch.route`` chooses it (the switch's own next-hop row, read in place), the
output queue as two C FIFOs of slots per port (control and data: ECN, trimming,
drop-tail, exactly ``switchmodel.queue.OutputQueue.enqueue`` and ``dequeue``), the link's
virtual schedule as ``EmulatedPort``'s (``busy_until``, serialisation, delay, the slack
within which a datagram leaves at once, a FIFO of slots on the wire; emulated loss and
corruption drawn from the port's own generator), and sendmmsg(2) of every datagram a
batch or a wake-up releases.  The Python objects stay the control plane
and the counters: the queue's byte and packet counts, ``PortCounters``, the switch's
``forwarded``/``unroutable``/``unreachable``, the driver's ``datagrams``, the endpoint's
``sent`` are the very fields the Python path updates, so every summary reads the same.

Whatever is not the plain case goes through the Python objects, one datagram at a time:
a datagram the C parser doubts or refuses (the reference decoder gives the verdict and
the reason it is counted under), one from an address that is not a neighbour, PAUSE and
RESUME.  An ECN mark or a trim rewrites the header in place and its checksum (a secured
datagram, F_SEC, through ``gse.wire.codec.reframe``, as the Python port does); an ECN
draw asks the queue's own generator, so marks match the Python path draw for draw.  The
timers are the node's ``Scheduler``: one wake-up per switch (the earliest of its ports),
not one per packet.  ``gse.runtimes.udp.dataplane`` decides when a switch may use this.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.string cimport memcpy

from gse.runtimes.udp.io cimport Endpoint, Reactor, Scheduler
from gse.runtimes.udp.link cimport EmulatedPort
from gse.runtimes.udp.node cimport SwitchDriver
from gse.wire cimport linkrate
from gse.wire.fastcodec cimport crc_datagram, gse_header, header_parse
from gse.wire.packet cimport Packet, trim_packet
from switchmodel.pfc cimport PfcState
from switchmodel.queue cimport OutputQueue, PortCounters, QueueConfig
from switchmodel.switch cimport Switch, mix32
from gse.runtimes.udp.slots cimport (DP_BATCH, dp_flush, dp_free, dp_give, dp_got, dp_ingress,
                                     dp_new, dp_out, dp_pop, dp_push, dp_put16, dp_put32, dp_recv,
                                     dp_sender, dp_set_lane, dp_set_peer, dp_slot, dp_state,
                                     dp_take)

from gse.runtimes.udp.io import record_error
from switchmodel.fabric import FabricSpine
from gse.wire.codec import reframe
from gse.wire.fastcodec import decode_header, encode_packet
from gse.wire.packet import (DATA, F_ECN_CE, F_ECT, F_SEC, F_TRIMMED, HEADER_BYTES, PAUSE,
                             PRIO_CONTROL, PRIO_DATA, RESUME)

AVAILABLE = True     # the pure twin says False

cdef long long C_DATA = DATA
cdef long long C_F_ECN_CE = F_ECN_CE
cdef long long C_F_ECT = F_ECT
cdef long long C_F_SEC = F_SEC
cdef long long C_F_TRIMMED = F_TRIMMED
cdef long long C_HEADER = HEADER_BYTES
cdef long long C_PAUSE = PAUSE
cdef long long C_RESUME = RESUME
cdef long long C_PRIO_CONTROL = PRIO_CONTROL
cdef long long C_PRIO_DATA = PRIO_DATA
cdef unsigned long long K_SRC = 0x9E3779B1
cdef unsigned long long K_DST = 0x7FEB352D
DEF DRAIN = 64          # datagrams per readiness call, as Endpoint's DRAIN_BATCH


cdef class SwitchPlane:
    """One switch's data plane: ``drain()`` is its endpoint's readiness callback."""

    cdef dp_state *d
    cdef SwitchDriver drv
    cdef Switch sw
    cdef Endpoint ep
    cdef Scheduler sched
    cdef list ports
    cdef object wake_fn
    cdef public object on_receive
    cdef public long long wake_at
    cdef public long long fast
    cdef public long long slow
    cdef long long out[4]
    cdef Py_ssize_t max_datagram
    cdef PfcState pfc
    cdef bint active
    cdef bint leaf_paths

    def __init__(self, SwitchDriver drv):
        cdef EmulatedPort port
        cdef int i
        self.drv = drv
        self.sw = drv.switch
        self.ep = drv.endpoint
        self.sched = drv.sched
        self.ports = list(drv.ports)
        self.max_datagram = drv.max_datagram
        self.pfc = drv.pfc
        self.active = False
        # a fabric-mode spine with paths="leaf" (FabricSpine.route): byte 1 of the entropy
        # names the uplink
        self.leaf_paths = isinstance(self.sw, FabricSpine)
        self.d = dp_new(self.ep.fd, drv.max_datagram + 1, len(self.ports))
        if self.d == NULL:
            raise MemoryError()
        for i in range(len(self.ports)):
            port = self.ports[i]
            if not dp_set_peer(self.d, i, str(port.peer_addr[0]).encode(),
                               int(port.peer_addr[1])):
                raise ValueError("not an IPv4 neighbour: %r" % (port.peer_addr,))
            if port.lane_addr is not None and not dp_set_lane(
                    self.d, i, str(port.lane_addr[0]).encode(), int(port.lane_addr[1]),
                    <int>C_PAUSE, <int>C_RESUME):
                raise ValueError("not an IPv4 PFC lane: %r" % (port.lane_addr,))
        self.wake_fn = self._wake
        for i in range(len(self.ports)):
            port = self.ports[i]
            port.restart_fn = self._restart     # a RESUME (or an expired PAUSE) restarts
        self.on_receive = None
        self.wake_at = -1
        self.fast = 0
        self.slow = 0
        self.out[0] = self.out[1] = self.out[2] = self.out[3] = 0

    def __dealloc__(self):
        dp_free(self.d)
        self.d = NULL

    def close(self):
        """Drop what is held (the run is over) and clear the queues' counts."""
        cdef EmulatedPort port
        self._flush()
        for port in self.ports:
            q = port.queue
            q.n_data = q.n_control = q.data_bytes = q.control_bytes = 0
        dp_free(self.d)
        self.d = NULL

    def slots(self):
        """Buffers allocated so far (a bound: queues and wires hold at most this many)."""
        return self.d.nslots if self.d != NULL else 0

    # -- receive ------------------------------------------------------------------------

    def drain(self):
        """Read up to DRAIN datagrams, forward them, send what left, re-arm the wake-up."""
        cdef int left = DRAIN, want, m, i
        cdef long long now
        cdef Reactor reactor
        if self.d == NULL:
            return
        if self.on_receive is not None:
            self.on_receive()
        self.active = True
        while left > 0:
            want = DP_BATCH if left > DP_BATCH else left
            m = dp_recv(self.d, want)
            if m == -1:
                self.ep.recv_errors += 1
                left -= 1
                continue
            if m <= 0:
                break
            for i in range(m):
                now = self.sched.now()
                self._datagram(i, now)
            if m < want:
                break
            left -= want
            reactor = self.ep.reactor
            if reactor is not None and reactor.lanes:
                reactor.poll_lanes()    # PAUSE and RESUME between batches, not after all
        self.active = False
        self._flush()
        self._rearm(self.sched.now())

    cdef _due(self, long long now):
        """Start every queued packet whose turn came by ``now`` and put on the wire what
        is due within the slack (``EmulatedPort._wake`` for every port).  Only the
        switch's timer calls it, as the Python ports' timers do: draining at the end of
        each batch too would send the same datagrams at the same virtual times, but a
        loop iteration earlier in real time than the Python path (measured: no gain)."""
        cdef int p
        cdef EmulatedPort port
        cdef OutputQueue q
        cdef dp_slot *s
        cdef long long limit
        for p in range(self.d.nports):
            port = self.ports[p]
            q = port.queue
            if (q.control_bytes or q.data_bytes) and port.busy_until <= now:
                self._drain_port(p, port, now)
            limit = now + port.slack
            while self.d.wire[p].head != NULL and self.d.wire[p].head.depart <= limit:
                s = dp_pop(&self.d.wire[p])
                if dp_out(self.d, s, p) or s.kind == C_PAUSE or s.kind == C_RESUME:
                    self._flush()       # (a PFC frame leaves at once, what is held with it)

    cdef _datagram(self, int i, long long now):
        cdef dp_slot *s = dp_got(self.d, i)
        cdef gse_header h
        cdef int ingress = dp_ingress(self.d, i)
        cdef int trailer = -1
        cdef long long eg
        cdef Packet pkt
        if s.n >= C_HEADER and s.n <= self.max_datagram and ingress >= 0:
            trailer = header_parse(s.buf, s.n, &h)
        if trailer < 0 or h.kind == C_PAUSE or h.kind == C_RESUME:
            # the Python path: the decoder's verdict (and reason), foreign senders, PFC
            self.slow += 1
            data = PyBytes_FromStringAndSize(<char *>s.buf, s.n)
            addr = self._addr(i, ingress)
            pkt = self.drv._decode(data, addr, self.drv.scratch)
            if pkt is None or pkt.kind == C_PAUSE or pkt.kind == C_RESUME:
                dp_give(self.d, s)
                if pkt is not None:
                    self.drv._route(pkt, data, now)    # admit_pfc: refused, counted
                return
            h.kind = pkt.kind
            h.src = pkt.src
            h.dst = pkt.dst
            h.msg_id = pkt.msg_id
            h.entropy = pkt.entropy
            h.flags = pkt.flags
            h.prio = pkt.prio
            s.size = pkt.size
        else:
            self.fast += 1
            self.drv.datagrams += 1
            s.size = s.n if (h.kind == C_DATA and not h.flags & C_F_TRIMMED) else C_HEADER
        s.kind = <int>h.kind
        s.flags = h.flags
        s.prio = <int>h.prio
        s.ingress = ingress
        eg = self._route(h.src, h.dst, h.msg_id, h.entropy)
        if eg < 0:
            self.drv.unroutable += 1
            dp_give(self.d, s)
            return
        self._offer(<int>eg, s, now)

    cdef object _addr(self, int i, int ingress):
        cdef char ip[16]
        cdef int udp_port
        cdef EmulatedPort port
        if ingress >= 0:
            port = self.ports[ingress]
            return port.peer_addr               # the very tuple port_of is keyed by
        dp_sender(self.d, i, ip, &udp_port)
        return (ip.decode(), udp_port)

    cdef long long _route(self, long long src, long long dst, long long msg_id,
                          long long entropy) except? -2:
        """``Switch.route`` (or ``FabricSpine.route``) on the header's fields, its
        counters too.  The next-hop row is the switch's own, read at every datagram
        (``hops_to``), so a route update (``gse.runtimes.udp.faults.RouteUpdates``, which
        writes the row's overrides) takes effect at the next datagram, as on the Python
        path."""
        cdef Switch sw = self.sw
        cdef Py_ssize_t n
        cdef unsigned long long key
        hops = sw.hops_to(dst)
        if hops is None:
            sw.unroutable += 1
            return -1
        n = len(<tuple>hops)
        if self.leaf_paths:
            if n == 0:
                sw.unreachable += 1
                return -1
            sw.forwarded += 1
            if n == 1:
                return <long long>(<tuple>hops)[0]
            return <long long>(<tuple>hops)[((entropy >> 8) & 0xFF) % n]
        if n == 1:
            sw.forwarded += 1
            return <long long>(<tuple>hops)[0]
        if n == 0:
            sw.unreachable += 1
            return -1
        sw.forwarded += 1
        if sw.spray:
            key = <unsigned long long>entropy ^ <unsigned long long>sw.salt
        else:
            key = (<unsigned long long>src * K_SRC + <unsigned long long>dst * K_DST
                   + <unsigned long long>msg_id) ^ <unsigned long long>sw.salt
        return <long long>(<tuple>hops)[mix32(<long long>(key & 0xFFFFFFFF)) % n]

    # -- the output queue and the link (EmulatedPort.offer, _drain, _transmit) ------------

    cdef _offer(self, int p, dp_slot *s, long long now):
        cdef EmulatedPort port = self.ports[p]
        cdef OutputQueue q = port.queue
        cdef PortCounters c
        cdef long long size
        cdef int ingress
        if q.data_bytes or q.control_bytes:
            self._drain_port(p, port, now)
        if port.busy_until <= now and (not q.paused or s.prio == C_PRIO_CONTROL):
            c = q.counters
            c.tx_bytes += s.size
            c.tx_packets += 1
            self._transmit(p, port, s, now, now)
            return
        ingress = s.ingress
        size = s.size
        if (self._enqueue(p, q, s) == 0 and self.pfc is not None and s.prio == C_PRIO_DATA
                and self.pfc.on_enqueue(ingress, size)):
            self.drv.send_pfc(ingress, C_PAUSE, now)

    cdef int _enqueue(self, int p, OutputQueue q, dp_slot *s) except -1:
        """``OutputQueue.enqueue`` on the slot: 0 queued, 1 trimmed, 2 dropped (and
        freed: ``s`` is not to be read after 2)."""
        cdef QueueConfig cfg = q.cfg
        cdef long long size = s.size, occupied
        cdef bint trimmed = False
        if not cfg.control_priority:
            if q.data_bytes + size > cfg.queue_bytes:
                q.counters.drops += 1
                dp_give(self.d, s)
                return 2
            if (cfg.ecn and not cfg.ecn_on_dequeue and s.kind == C_DATA and s.flags & C_F_ECT
                    and q.data_bytes + size > cfg.ecn_kmin):
                self._maybe_mark(q, s, q.data_bytes + size)
            dp_push(&self.d.data[p], s)
            q.n_data += 1
            q.data_bytes += size
            self._peak(q)
            return 0
        if s.prio != C_PRIO_CONTROL and s.kind == C_DATA:
            occupied = q.data_bytes + size
            if cfg.trim and occupied > cfg.trim_bytes:
                self._rewrite(s, C_F_TRIMMED)
                size = s.size
                trimmed = True
            elif occupied > cfg.queue_bytes:
                q.counters.drops += 1
                dp_give(self.d, s)
                return 2
            else:
                if (cfg.ecn and occupied > cfg.ecn_kmin and s.flags & C_F_ECT
                        and not cfg.ecn_on_dequeue):
                    self._maybe_mark(q, s, occupied)
                dp_push(&self.d.data[p], s)
                q.n_data += 1
                q.data_bytes += size
                self._peak(q)
                return 0
        if q.control_bytes + size > cfg.control_queue_bytes:
            q.counters.drops += 1
            dp_give(self.d, s)
            return 2
        dp_push(&self.d.ctl[p], s)
        q.n_control += 1
        q.control_bytes += size
        if trimmed:
            q.counters.trims += 1
        self._peak(q)
        return 1 if trimmed else 0

    cdef _maybe_mark(self, OutputQueue q, dp_slot *s, long long occupied):
        cdef QueueConfig cfg = q.cfg
        cdef double prob
        if occupied > cfg.ecn_kmax:
            prob = 1.0
        else:
            prob = cfg.ecn_pmax * (occupied - cfg.ecn_kmin) / <double>(cfg.ecn_kmax - cfg.ecn_kmin)
        if prob < 1.0:
            rng = q.rng
            if callable(rng):             # made on the first draw, as OutputQueue does
                rng = q.rng = rng()
            if rng.random() >= prob:
                return
        self._rewrite(s, C_F_ECN_CE)
        q.counters.ecn_marks += 1

    cdef _rewrite(self, dp_slot *s, long long flag):
        """Set ``flag`` (F_ECN_CE, or F_TRIMMED: the payload goes, control priority) in
        the datagram's header and its checksum, the bytes the Python port would send."""
        cdef Packet pkt
        cdef bytes raw
        s.flags |= flag
        if flag == C_F_TRIMMED:
            s.prio = <int>C_PRIO_CONTROL
            s.size = C_HEADER
        if s.flags & C_F_SEC:          # secured: the trailer stays (gse.wire.codec.reframe)
            data = PyBytes_FromStringAndSize(<char *>s.buf, s.n)
            pkt = decode_header(data, self.max_datagram)
            if flag == C_F_TRIMMED:
                trim_packet(pkt)
            else:
                pkt.flags |= flag
            raw = reframe(data, pkt)
            if len(raw) <= s.n:
                memcpy(s.buf, PyBytes_AS_STRING(raw), len(raw))
                s.n = len(raw)
            return
        dp_put16(s.buf + 2, s.flags)
        if flag == C_F_TRIMMED:
            s.buf[56] = <unsigned char>C_PRIO_CONTROL
            s.n = <int>C_HEADER
        dp_put32(s.buf + 60, crc_datagram(s.buf, s.n))

    cdef inline void _peak(self, OutputQueue q):
        cdef long long total = q.data_bytes + q.control_bytes
        if total > q.counters.peak_bytes:
            q.counters.peak_bytes = total

    cdef dp_slot *_dequeue(self, int p, OutputQueue q):
        cdef dp_slot *s
        cdef QueueConfig cfg
        if q.control_bytes:
            s = dp_pop(&self.d.ctl[p])
            q.n_control -= 1
            q.control_bytes -= s.size
        elif q.data_bytes and not q.paused:
            s = dp_pop(&self.d.data[p])
            q.n_data -= 1
            q.data_bytes -= s.size
            cfg = q.cfg
            if (cfg.ecn_on_dequeue and cfg.ecn and q.data_bytes > cfg.ecn_kmin
                    and s.kind == C_DATA and s.flags & C_F_ECT):
                self._maybe_mark(q, s, q.data_bytes)
        else:
            return NULL
        q.counters.tx_bytes += s.size
        q.counters.tx_packets += 1
        return s

    cdef _drain_port(self, int p, EmulatedPort port, long long now):
        cdef dp_slot *s
        while port.busy_until <= now:
            s = self._dequeue(p, port.queue)
            if s == NULL:
                return
            if (self.pfc is not None and s.prio == C_PRIO_DATA
                    and self.pfc.on_dequeue(s.ingress, s.size)):
                self.drv.send_pfc(s.ingress, C_RESUME, now)
            self._transmit(p, port, s, port.busy_until, now)

    cdef _transmit(self, int p, EmulatedPort port, dp_slot *s, long long start, long long now):
        cdef long long done = start + linkrate.wire_time_ps(s.size, port.mbps)
        cdef long long depart = done + port.delay
        cdef double r
        port.busy_until = done
        if port.rng is not None:        # emulated loss and corruption: the port's draws
            r = port.rng.random()
            if r < port.loss:
                port.wire_drops += 1
                dp_give(self.d, s)
                return
            if r < port.loss + port.corrupt:
                # a bit flip: the checksum inverted (gse.wire.codec's encode and reframe
                # of a corrupt packet), the rest of the datagram as it was
                port.wire_corrupt += 1
                s.buf[60] ^= 0xFF
                s.buf[61] ^= 0xFF
                s.buf[62] ^= 0xFF
                s.buf[63] ^= 0xFF
        if self.d.wire[p].head == NULL and depart <= now + port.slack:
            if dp_out(self.d, s, p) or s.kind == C_PAUSE or s.kind == C_RESUME:
                self._flush()       # (a PFC frame leaves at once, what is held with it)
        else:
            s.depart = depart
            dp_push(&self.d.wire[p], s)

    cdef _flush(self):
        cdef Endpoint ep = self.ep
        if self.d == NULL or self.d.nout == 0:
            return
        self.out[0] = self.out[1] = self.out[2] = self.out[3] = 0
        dp_flush(self.d, self.out)
        ep.sent += self.out[0]
        ep.send_blocked += self.out[1]
        ep.send_errors += self.out[2]
        ep.batches += self.out[3]

    # -- wake-ups ---------------------------------------------------------------------------

    cdef _rearm(self, long long now):
        """One timer for the switch: the earliest port that has a packet to start or a
        datagram to put on the wire (``EmulatedPort._arm``'s times, taken together)."""
        cdef long long nxt = -1, t
        cdef int p
        cdef EmulatedPort port
        cdef OutputQueue q
        for p in range(self.d.nports):
            port = self.ports[p]
            q = port.queue
            if q.control_bytes > 0 or (q.data_bytes > 0 and not q.paused):
                t = port.busy_until if port.busy_until > now else now
                if nxt < 0 or t < nxt:
                    nxt = t
            if self.d.wire[p].head != NULL:
                t = self.d.wire[p].head.depart - port.slack
                if nxt < 0 or t < nxt:
                    nxt = t
        if nxt >= 0 and (self.wake_at < 0 or nxt < self.wake_at):
            self.wake_at = nxt
            self.sched.at(nxt, self.wake_fn, None)

    def inject(self, int p, Packet pkt, long long now):
        """A packet this switch makes (a PAUSE or RESUME: ``SwitchDriver.send_pfc``),
        offered to port ``p`` as the Python port's ``offer(pkt, None, now)``."""
        cdef bytes raw = encode_packet(pkt)
        cdef dp_slot *s
        if self.d == NULL:
            return
        s = dp_take(self.d)
        if s == NULL:
            raise MemoryError()
        memcpy(s.buf, PyBytes_AS_STRING(raw), len(raw))
        s.n = <int>len(raw)
        s.size = pkt.size
        s.kind = <int>pkt.kind
        s.flags = pkt.flags
        s.prio = <int>pkt.prio
        s.ingress = -1
        self._offer(p, s, now)
        if not self.active:
            self._flush()
            self._rearm(now)

    def _restart(self, long long now):
        if self.d != NULL:
            self._rearm(now)

    def _wake(self, long long t, _arg):
        cdef long long now
        if t != self.wake_at or self.d == NULL:
            return                      # superseded by an earlier wake-up
        self.wake_at = -1
        now = self.sched.now()
        self.active = True
        self._due(now)
        self.active = False
        self._flush()
        self._rearm(now)
