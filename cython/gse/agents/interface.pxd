# Augments gse/agents/interface.py: the methods the simulator calls on any host agent, as C methods
# that GseHost and RoceHost override (their .pxd repeat these signatures exactly).
import cython
from gse.common.fifo cimport Fifo
from gse.wire.packet cimport Packet
from gse.common.timers cimport TimerHeap


cdef class HostAgent:
    cdef public long long addr
    cdef public TimerHeap timers
    cdef public long long malformed
    cdef public long long stray

    cdef public Fifo _events

    cpdef object next_event(self)
    cpdef start_message(self, msg_id, dst, size, now)
    cpdef bint has_work(self) except -1
    cpdef Packet poll(self, long long now, bint data_ok=*)
    cpdef long long next_deadline(self) except? -2
    cpdef receive(self, Packet pkt, long long now)
    cpdef bint on_packet(self, Packet pkt, long long now) except -1
    @cython.locals(t="long long", timers=TimerHeap)
    cpdef on_timer(self, long long now)
    cpdef on_timer_kind(self, long long kind, owner, long long t, long long now)
    cpdef on_pause(self, bint paused, long long now)
