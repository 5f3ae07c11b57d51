# Augments switchmodel/queue.py.
import cython
from gse.common.handler cimport Handler
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


cdef class PortCounters(Handler):
    # the root of a simulated port (gse.runtimes.sim.network.LinkPort derives from
    # OutputQueue, which derives from this): its fields come first, after the header and
    # the vtable; in the object's first line, what a dequeue writes and a sampler reads
    # of a busy port at every bin (queued_bytes, peak_bytes, tx_bytes, tx_packets, the
    # sampler's s_tx), then in its second, the sampler's s_flag and s_index (two ints in
    # one word, read at every bin) and s_peak (read when a bin's peak may be the run's),
    # then the rarer counters (read when s_flag says so)
    cdef public long long queued_bytes
    cdef public long long peak_bytes
    cdef public long long tx_bytes
    cdef public long long tx_packets
    cdef public long long s_tx
    cdef public int s_flag
    cdef public int s_index
    cdef public long long s_peak
    cdef public long long ecn_marks
    cdef public long long drops
    cdef public long long trims


cdef class OutputQueue(PortCounters):
    # its own counters (counters is self): an enqueue and a dequeue read and write the
    # counters' first fields and these, in one run of lines after the object's header (in
    # a port, before the port's own fields); first what every enqueue and dequeue reads,
    # then the generator (an ECN draw), then what they do not (counters, read by the
    # sampler, where the port is its own; the pure build's tails).  Compiled, the tails
    # are C pointers without a reference (gse_qlink.h), where data_tail and control_tail
    # were (those stay None in that build)
    cdef public long long data_bytes
    cdef public long long control_bytes
    cdef public Packet data_head
    cdef void *data_tail_p
    cdef public Packet control_head
    cdef void *control_tail_p
    cdef public QueueConfig cfg
    cdef public int n_data
    cdef public bint paused
    cdef public long long n_control
    cdef public object draw
    cdef public object rng
    cdef public PortCounters counters
    cdef public Packet data_tail
    cdef public Packet control_tail

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
