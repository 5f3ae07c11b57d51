# Augments gse/agents/roce_sender.py.  NEVER is gse.agents.dcqcn's.
import cython
from gse.common.timers cimport TimerHeap
from gse.agents.dcqcn cimport Dcqcn
from gse.wire.packet cimport Packet, new_packet

cdef long long DATA
cdef long long F_ECT
cdef long long F_LAST
cdef long long F_RETX
cdef long long PRIO_DATA
cdef long long NEVER
# The timer kinds T_* stay Python-level constants: roce_nic, roce_receiver and roce_host
# import them (each declares the ones it uses as C integers).


cdef class RoceFlow:
    cdef public long long msg_id
    cdef public long long src
    cdef public long long dst
    cdef public long long size
    cdef public long long mtu
    cdef public long long npkts
    cdef public long long next_psn
    cdef public long long una
    cdef public long long high
    cdef public long long entropy
    cdef public Dcqcn cc
    cdef public long long next_send
    cdef public long long rto_deadline
    cdef public long long rto_armed
    cdef public long long rto_backoff
    cdef public long long retransmits
    cdef public long long retx_bytes
    cdef public bint done
    cdef public bint in_ring
    cdef public long long dcqcn_armed
    cdef public long long last_len
    cdef public long long gen
    cdef public long long gen_at
    cdef public long long last_gen
    cdef public bint paused

    cpdef long long payload_of(self, long long psn) except? -1

    cpdef bint has_data(self)


@cython.final
cdef class RoceSender:
    cdef public long long addr
    cdef public object config
    cdef public long long line_mbps
    cdef public TimerHeap timers
    cdef public long long rto_ps
    cdef public bint round_up
    cdef public long long timeouts
    cdef public long long retransmits
    cdef public long long retransmit_bytes
    cdef public long long cnps_received

    @cython.locals(cc=Dcqcn, flow=RoceFlow)
    cpdef RoceFlow start(self, msg_id, dst, size, now, dict rate_log)

    @cython.locals(psn="long long", length="long long", flags="long long", cc=Dcqcn)
    cpdef Packet send(self, RoceFlow flow, long long now)

    cpdef bint on_ack(self, RoceFlow flow, long long psn, long long now) except -1

    cpdef bint on_nak(self, RoceFlow flow, long long psn, long long now) except -1

    cpdef _progress(self, RoceFlow flow, long long now)

    cpdef _arm_rto(self, RoceFlow flow, long long t)

    cpdef on_cnp(self, RoceFlow flow, long long now)

    cpdef bint on_rto(self, RoceFlow flow, long long t, long long now) except -1

    @cython.locals(t="long long")
    cpdef arm_dcqcn(self, RoceFlow flow)

    cpdef on_dcqcn(self, RoceFlow flow, long long t, long long now)
