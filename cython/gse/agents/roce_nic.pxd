# Augments gse/agents/roce_nic.py.  NEVER is gse.agents.dcqcn's.
import cython
from gse.common.fairq cimport FairQueue
from gse.common.fifo cimport Fifo
from gse.common.timers cimport TimerHeap
from gse.agents.roce_sender cimport RoceFlow
from gse.wire.packet cimport Packet

cdef long long HEADER_BYTES
cdef long long NEVER
cdef long long T_PACE
cdef long long T_GEN


@cython.final
cdef class RoceNic:
    cdef public TimerHeap timers
    cdef public dict out
    cdef public bint by_id
    cdef public Fifo ring
    cdef public Fifo control
    cdef public FairQueue acks
    cdef public long long pace_at
    cdef public list active
    cdef public list active_ids
    cdef public list all_ids
    cdef public long long cursor
    cdef public long long pacer_ps

    cpdef add(self, RoceFlow flow, long long now)

    @cython.locals(i="Py_ssize_t")
    cpdef activate(self, RoceFlow flow)

    cpdef enqueue_control(self, Packet pkt)

    cpdef bint has_work(self) except -1

    @cython.locals(acks=FairQueue)
    cpdef Packet next_control(self)

    @cython.locals(flow=RoceFlow, earliest="long long", ring=Fifo, i="Py_ssize_t")
    cpdef RoceFlow next_flow(self, long long now)

    @cython.locals(flow=RoceFlow, earliest="long long", active=list, ids=list, n="Py_ssize_t",
                   i="Py_ssize_t", j="Py_ssize_t")
    cpdef RoceFlow _next_by_id(self, long long now)

    cpdef _wake_at(self, long long earliest, long long now)

    cpdef on_pace(self, long long t)

    cpdef on_pacer(self, RoceFlow flow, long long t, long long now)

    @cython.locals(flow=RoceFlow, t="long long")
    cpdef on_pause(self, bint paused, long long now)
