# Augments switchmodel/queue.py.
import cython
from gse.wire.packet cimport Packet

cdef long long DATA
cdef long long F_ECN_CE
cdef long long F_ECT
cdef long long PRIO_CONTROL
cdef bint C_UNLINK


cdef class QueueConfig:
    cdef public long long queue_bytes
    cdef public long long control_queue_bytes
    cdef public bint trim
    cdef public long long trim_bytes
    cdef public bint ecn
    cdef public long long ecn_kmin
    cdef public long long ecn_kmax
    cdef public double ecn_pmax
    cdef public bint control_priority
    cdef public bint ecn_on_dequeue


cdef tuple COUNTERS


cdef class PortCounters:
    # a 128-byte block (no GC head: C fields only) starts 48 bytes into a line, after the
    # pool's 48-byte header (128 = 2 x 64), so the object's header ends that line and its
    # first eight fields are exactly the next line: everything a sampler reads of a busy
    # port's counters at every bin, and what a dequeue writes (tx_bytes, tx_packets,
    # queued_bytes)
    cdef public long long queued_bytes
    cdef public long long peak_bytes
    cdef public long long tx_bytes
    cdef public long long tx_packets
    cdef public long long s_tx
    cdef public long long s_peak
    cdef public long long s_flag
    cdef public long long ecn_marks
    # the rarer counters (the next line: read by the sampler when s_flag says so)
    cdef public long long drops
    cdef public long long trims
    cdef long long align_[4]     # padding to 128 bytes (at 96, a 96-byte block: anywhere)


cdef class OutputQueue:
    # a 176-byte object, a 192-byte pymalloc block with the GC head, so it starts on a
    # line: a packet's enqueue and dequeue read and write its first two lines (at 120
    # bytes, a 144-byte block, it started anywhere in a line and spanned three lines
    # three times in four); the generator and the padding after them.  Compiled, the tails
    # are C pointers without a reference (gse_qlink.h), where data_tail and control_tail
    # were (those stay None in that build)
    cdef public long long data_bytes
    cdef public long long control_bytes
    cdef public Packet data_head
    cdef void *data_tail_p
    cdef public PortCounters counters
    cdef public QueueConfig cfg
    cdef public int n_data
    cdef public bint paused
    cdef public Packet control_head
    cdef void *control_tail_p
    cdef public long long n_control
    cdef public object rng
    cdef public object draw
    cdef public Packet data_tail
    cdef public Packet control_tail
    cdef long long align_[5]

    cpdef long long backlog(self)

    cpdef bint has_packets(self) except -1

    @cython.locals(cfg=QueueConfig, size="long long", result="long long",
                   occupied="long long")
    cpdef long long enqueue(self, Packet pkt) except? -1

    @cython.locals(cfg=QueueConfig, p="double", rng=object, draw=object)
    cpdef _maybe_mark(self, Packet pkt, long long occupied)

    @cython.locals(total="long long")
    cpdef _peak(self)

    @cython.locals(pkt=Packet, cfg=QueueConfig)
    cpdef Packet dequeue(self)

    @cython.locals(pkt=Packet)
    cpdef list flush(self)

    cpdef count_unqueued(self, Packet pkt)


cdef extern from "gse_qlink.h":
    void gse_unlink_data(OutputQueue q, Packet pkt)
    void gse_unlink_control(OutputQueue q, Packet pkt)
    void gse_link_data(OutputQueue q, Packet pkt)
    void gse_link_control(OutputQueue q, Packet pkt)
    void gse_clear_tails(OutputQueue q)
