# Augments gse/agents/roce_receiver.py.  NEVER is gse.agents.dcqcn's.
import cython
from gse.common.timers cimport TimerHeap
from gse.common.fifo cimport Fifo
from gse.agents.events cimport MessageDelivered
from gse.agents.roce_nic cimport RoceNic
from gse.wire.packet cimport Packet, new_packet

cdef long long ACK
cdef long long CNP
cdef long long F_ECN_CE
cdef long long NACK
cdef long long PRIO_CONTROL
cdef long long NEVER
cdef long long T_CNP


cdef class RoceRecvFlow:
    cdef public long long expected
    cdef public long long npkts
    cdef public long long size
    cdef public long long unacked
    cdef public long long nak_for
    cdef public long long last_cnp
    cdef public long long src
    cdef public long long msg_id
    cdef public long long entropy
    cdef public bint marked
    cdef public bint done
    cdef public long long cnp_at


cdef class RoceReceiver:
    cdef public long long addr
    cdef public object config
    cdef public RoceNic nic
    cdef public TimerHeap timers
    cdef public dict incoming
    cdef public dict incoming_of
    cdef public object finished
    cdef public long long finished_hold
    cdef public long long max_finished
    cdef public long long max_inbound_per_peer
    cdef public long long max_inbound
    cdef public Fifo events
    cdef public long long ack_every
    cdef public long long cnp_interval
    cdef public bint cnp_grid
    cdef public long long payload_bytes
    cdef public long long acks_sent
    cdef public long long naks_sent
    cdef public long long cnps_sent
    cdef public long long duplicates
    cdef public long long ooo_discarded
    cdef public long long inbound_refused
    cdef public long long last_src
    cdef public long long last_msg
    cdef public RoceRecvFlow last_flow

    @cython.locals(flow=RoceRecvFlow, psn="long long")
    cpdef on_data(self, Packet pkt, long long now)

    cpdef bint _admit(self, Packet pkt) except -1

    @cython.locals(n="long long")
    cpdef _deliver(self, tuple key, RoceRecvFlow flow, long long now)

    cpdef _ack(self, Packet pkt, long long cum)

    cpdef _nak(self, Packet pkt, RoceRecvFlow flow)

    cpdef on_cnp_tick(self, RoceRecvFlow flow, long long t)
