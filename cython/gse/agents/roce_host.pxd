# Augments gse/agents/roce_host.py.  NEVER is gse.agents.dcqcn's.
import cython
from gse.common.fifo cimport Fifo
from gse.common.timers cimport TimerHeap
from gse.agents.events cimport MessageCompleted, MessageDelivered
from gse.agents.interface cimport HostAgent
from gse.agents.dcqcn cimport Dcqcn
from gse.wire.packet cimport Packet, new_packet

cdef long long ACK
cdef long long CNP
cdef long long DATA
cdef long long F_ECN_CE
cdef long long F_ECT
cdef long long F_LAST
cdef long long F_RETX
cdef long long HEADER_BYTES
cdef long long NACK
cdef long long PRIO_CONTROL
cdef long long PRIO_DATA
cdef long long NEVER


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


cdef class RoceHost(HostAgent):
    cdef public long long addr
    cdef public object config
    cdef public object rng
    cdef public long long line_mbps
    cdef public dict out
    cdef public Fifo ring
    cdef public Fifo control
    cdef public TimerHeap timers
    cdef public dict incoming
    cdef public object finished
    cdef public long long malformed
    cdef public long long stray
    cdef public long long timeouts
    cdef public long long naks_sent
    cdef public long long acks_sent
    cdef public long long cnps_sent
    cdef public long long cnps_received
    cdef public long long retransmits
    cdef public long long retransmit_bytes
    cdef public long long duplicates
    cdef public long long ooo_discarded
    cdef public object receiver
    cdef public long long pace_at
    cdef public long long rto_ps
    cdef public long long ack_every
    cdef public long long cnp_interval
    cdef public long long payload_bytes
    cdef public bint by_id
    cdef public list active
    cdef public list active_ids
    cdef public list all_ids
    cdef public long long cursor
    cdef public long long pacer_ps
    cdef public object acks
    cdef public dict rate_log
    cdef public bint round_up
    cdef public bint cnp_grid
    cdef public long long acked_done
    cdef public long long finished_hold
    cdef public long long max_finished
    cdef public dict incoming_of
    cdef public long long max_inbound_per_peer
    cdef public long long max_inbound
    cdef public long long inbound_refused

    cpdef start_message(self, msg_id, dst, size, now)

    cpdef bint _admit(self, Packet pkt) except -1

    @cython.locals(n="long long", order=Fifo, limit="long long")
    cpdef _done_in(self, tuple key, long long npkts, long long now)

    cpdef bint has_work(self) except -1

    @cython.locals(flow=RoceFlow, earliest="long long", ring=Fifo, i="Py_ssize_t")
    cpdef Packet poll(self, long long now, bint data_ok=*)

    @cython.locals(flow=RoceFlow, earliest="long long", active=list, ids=list, n="Py_ssize_t",
                   i="Py_ssize_t", j="Py_ssize_t")
    cpdef Packet _poll_by_id(self, long long now)

    @cython.locals(psn="long long", length="long long", flags="long long", cc=Dcqcn)
    cpdef Packet _send(self, RoceFlow flow, long long now)

    cpdef long long next_deadline(self) except? -2

    @cython.locals(kind="long long")
    cpdef receive(self, Packet pkt, long long now)

    @cython.locals(t="long long", kind="long long")
    cpdef on_timer(self, long long now)

    @cython.locals(flow=RoceRecvFlow, psn="long long")
    cpdef _on_data(self, Packet pkt, long long now)

    cpdef _ack(self, Packet pkt, long long cum)

    cpdef _control(self, Packet pkt)

    @cython.locals(flow=RoceFlow)
    cpdef RoceFlow _flow(self, Packet pkt)

    @cython.locals(flow=RoceFlow)
    cpdef _on_ack(self, Packet pkt, long long now)

    @cython.locals(flow=RoceFlow, psn="long long")
    cpdef _on_nak(self, Packet pkt, long long now)

    @cython.locals(flow=RoceFlow)
    cpdef _on_cnp(self, Packet pkt, long long now)

    cpdef _finish(self, RoceFlow flow, long long now)

    cpdef _on_rto(self, RoceFlow flow, long long now)

    @cython.locals(t="long long")
    cpdef _arm_dcqcn(self, RoceFlow flow)

    cpdef _on_dcqcn(self, RoceFlow flow, t, long long now)

    @cython.locals(i="Py_ssize_t")
    cpdef _activate(self, RoceFlow flow)

    cpdef _on_pacer(self, RoceFlow flow, long long t, long long now)

    cpdef _on_cnp_tick(self, RoceRecvFlow flow, long long t)

    @cython.locals(flow=RoceFlow, t="long long")
    cpdef on_pause(self, bint paused, long long now)

    cpdef _push(self, long long t, long long kind, flow)
