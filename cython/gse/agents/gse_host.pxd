# Augments gse/agents/gse_host.py.
import cython
from gse.common.fifo cimport Fifo
from gse.common.timers cimport TimerHeap
from gse.agents.events cimport completed
from gse.agents.interface cimport HostAgent
from gse.agents.phases cimport enter
from gse.wire.packet cimport Packet
from gse.agents.receiver cimport ReceiverSide
from gse.agents.scheduler cimport CreditScheduler
from gse.agents.sender cimport OutMsg

cdef long long ACK
cdef long long DATA
cdef long long F_ECN_CE
cdef long long F_RETX
cdef long long GRANT
cdef long long NACK
cdef long long REQUEST
cdef long long NEVER
cdef long long SENDING
cdef long long DRAINING
cdef long long DONE


cpdef bint plain_random(rng) except -1

cpdef randbelow(rng, n)


cdef class GseHost(HostAgent):
    cdef public object config
    cdef public object rng
    cdef public dict out
    cdef public Fifo ring
    cdef public Fifo control
    cdef public ReceiverSide receiver
    cdef public long long timeouts
    cdef public long long fast_retx_bytes
    cdef public long long nack_retx
    cdef public long long requests_sent
    cdef public long long retransmits
    cdef public long long retransmit_bytes
    cdef public long long srtt
    cdef public long long tail_probes
    cdef public long long rto_ps
    cdef public long long reorder_window_ps
    cdef public long long unknown_grants
    cdef public long long expiry_at
    cdef public dict paths
    cdef public long long acked_done
    cdef public long long n_entropies
    cdef public long long cursor_bits
    cdef public object getrandbits
    cdef public OutMsg last_out

    cpdef start_message(self, msg_id, dst, size, now)

    @cython.locals(k="long long", n="long long", r="long long")
    cpdef long long draw_cursor(self) except? -1

    cpdef bint has_work(self) except -1

    @cython.locals(msg=OutMsg, pkt=Packet, ring=Fifo)
    cpdef Packet poll(self, long long now, bint data_ok=*)

    cpdef long long next_deadline(self) except? -2

    @cython.locals(kind="long long", due="long long")
    cpdef bint on_packet(self, Packet pkt, long long now) except -1

    cpdef on_timer_kind(self, long long kind, msg, long long t, long long now)

    @cython.locals(msg=OutMsg)
    cdef OutMsg _outgoing(self, long long msg_id)

    @cython.locals(msg=OutMsg, marked="long long", lost="long long")
    cpdef _on_ack(self, Packet pkt, long long now)

    @cython.locals(msg=OutMsg)
    cpdef _on_nack(self, Packet pkt, long long now)

    @cython.locals(msg=OutMsg)
    cpdef _on_grant(self, Packet pkt, long long now)

    cpdef _finish(self, OutMsg msg, long long now)

    @cython.locals(sched=CreditScheduler, grant=Packet)
    cpdef _on_pacer(self, long long now)

    cpdef _on_rto(self, t, OutMsg msg, long long now)

    cpdef _on_tlp(self, OutMsg msg, long long now)

    cpdef _on_request_timer(self, t, OutMsg msg, long long now)

    @cython.locals(rx=ReceiverSide, t="long long")
    cpdef _arm_expiry(self)

    @cython.locals(rx=ReceiverSide)
    cpdef _on_expiry(self, long long t, long long now)

    cpdef _send_request(self, OutMsg msg, long long now, bint retx)

    cpdef long long _suspect_until(self, long long now, long long at_least) except? -1

    cpdef _activate(self, OutMsg msg)

    cpdef _move(self, OutMsg msg, long long kind, long long old, long long t)

    cpdef _push(self, long long t, long long kind, msg)
