# Augments switchmodel/queue.py.
import cython
from gse.wire.packet cimport Packet

cdef long long DATA
cdef long long F_ECN_CE
cdef long long F_ECT
cdef long long PRIO_CONTROL


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
    cdef public long long tx_bytes
    cdef public long long tx_packets
    cdef public long long drops
    cdef public long long trims
    cdef public long long ecn_marks
    cdef public long long peak_bytes
    cdef public long long queued_bytes
    # padding to 128 bytes (at 72, an 80-byte pymalloc block, the counters would start
    # anywhere in a line): every 128-byte block starts 48 bytes into a line (after the
    # pool's 48-byte header), so the object's header ends that line and its seven fields
    # are the next line, the one the sampler reads
    cdef long long align_[7]


cdef class OutputQueue:
    cdef public long long data_bytes
    cdef public long long control_bytes
    cdef public PortCounters counters
    cdef public bint paused
    cdef public QueueConfig cfg
    cdef public object rng
    cdef public Packet data_head
    cdef public Packet data_tail
    cdef public Packet control_head
    cdef public Packet control_tail
    cdef public long long n_data
    cdef public long long n_control

    cpdef long long backlog(self)

    cpdef bint has_packets(self) except -1

    @cython.locals(cfg=QueueConfig, size="long long", result="long long",
                   occupied="long long")
    cpdef long long enqueue(self, Packet pkt) except? -1

    @cython.locals(cfg=QueueConfig, p="double", rng=object)
    cpdef _maybe_mark(self, Packet pkt, long long occupied)

    @cython.locals(total="long long")
    cpdef _peak(self)

    @cython.locals(pkt=Packet, c=PortCounters, cfg=QueueConfig)
    cpdef Packet dequeue(self)

    @cython.locals(pkt=Packet)
    cpdef list flush(self)

    cpdef count_unqueued(self, Packet pkt)
