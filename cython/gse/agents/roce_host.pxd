# Augments gse/agents/roce_host.py.  NEVER is gse.agents.dcqcn's.
import cython
from gse.common.timers cimport TimerHeap
from gse.agents.events cimport MessageCompleted
from gse.agents.interface cimport HostAgent
from gse.agents.roce_sender cimport RoceFlow, RoceSender
from gse.agents.roce_receiver cimport RoceReceiver
from gse.agents.roce_nic cimport RoceNic
from gse.wire.packet cimport Packet

cdef long long ACK
cdef long long CNP
cdef long long DATA
cdef long long NACK
cdef long long NEVER
cdef long long T_PACE
cdef long long T_RTO
cdef long long T_DCQCN
cdef long long T_GEN
cdef long long T_CNP


cdef class RoceHost(HostAgent):
    cdef public object config
    cdef public object rng
    cdef public long long line_mbps
    cdef public dict out
    cdef public long long acked_done
    cdef public dict rate_log
    cdef public RoceSender sender
    cdef public RoceReceiver receiver
    cdef public RoceNic nic

    cpdef start_message(self, msg_id, dst, size, now)

    cpdef bint has_work(self) except -1

    @cython.locals(nic=RoceNic, pkt=Packet, flow=RoceFlow)
    cpdef Packet poll(self, long long now, bint data_ok=*)

    cpdef long long next_deadline(self) except? -2

    @cython.locals(kind="long long")
    cpdef bint on_packet(self, Packet pkt, long long now) except -1

    cpdef on_timer_kind(self, long long kind, owner, long long t, long long now)

    cpdef on_pause(self, bint paused, long long now)

    @cython.locals(flow=RoceFlow)
    cpdef RoceFlow _flow(self, Packet pkt)

    @cython.locals(flow=RoceFlow)
    cpdef _on_ack(self, Packet pkt, long long now)

    @cython.locals(flow=RoceFlow)
    cpdef _on_nak(self, Packet pkt, long long now)

    @cython.locals(flow=RoceFlow)
    cpdef _on_cnp(self, Packet pkt, long long now)

    cpdef _finish(self, RoceFlow flow, long long now)
