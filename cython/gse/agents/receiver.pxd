# Augments gse/agents/receiver.py.
import cython
from gse.agents.bitmap cimport ReceiveBitmap, new_bitmap
from gse.agents.events cimport delivered
from gse.agents.phases cimport Phased, enter
from gse.wire.packet cimport Packet, new_packet
from gse.agents.scheduler cimport CreditScheduler, Demand
from gse.common.fifo cimport Fifo
from gse.common.finished cimport FinishedIds

cdef long long ACK
cdef long long F_ECN_CE
cdef long long F_LAST
cdef long long F_RETX
cdef long long F_TRIMMED
cdef long long F_UNSCHED
cdef long long GRANT
cdef long long NACK
cdef long long PRIO_CONTROL
cdef long long MASK32
cdef long long INMSG_BYTES
cdef long long REQUEST
cdef long long UNPROVEN
cdef long long RECEIVING
cdef long long DELIVERED
cdef long long DROPPED


cpdef long long reassembly_cost(long long npkts)


cdef class InMsg(Phased):
    cdef public long long src
    cdef public long long msg_id
    cdef public long long size
    cdef public long long npkts
    cdef public ReceiveBitmap bitmap
    cdef public Demand demand
    cdef public long long unacked
    cdef public bint ecn
    cdef public long long first_ps
    cdef public bint charged
    cdef public long long last_ack
    cdef public long long entropy
    cdef public long long heard
    cdef public long long requested
    cdef public long long trimmed
    cdef public long long regrant_ps

    cpdef setup(self, long long src, long long msg_id, long long size, long long mtu,
                long long order, long long now, bint proven)


cdef class ReceiverSide:
    cdef public long long addr
    cdef public long long mtu
    cdef public long long ack_every
    cdef public long long ack_delay
    cdef public long long charge_cap
    cdef public dict messages
    cdef public FinishedIds finished
    cdef public CreditScheduler scheduler
    cdef public long long order
    cdef public Fifo events
    cdef public long long duplicates
    cdef public long long acks
    cdef public long long nacks
    cdef public long long grants_sent
    cdef public long long regrants
    cdef public long long ecn_seen
    cdef public long long payload_bytes
    cdef public long long max_per_peer
    cdef public long long max_unproven
    cdef public dict unproven_of
    cdef public long long unproven
    cdef public Fifo granted_unproven
    cdef public long long expire_ps
    cdef public long long requests_refused
    cdef public long long requests_expired
    cdef public long long finished_hold
    cdef public long long max_finished
    cdef public long long max_inbound_per_peer
    cdef public long long max_inbound
    cdef public long long max_reassembly
    cdef public dict inbound_of
    cdef public long long inbound
    cdef public long long reassembly
    cdef public long long idle_ps
    cdef public long long next_idle_sweep
    cdef public long long inbound_refused
    cdef public long long inbound_expired
    cdef public InMsg last

    @cython.locals(msg=InMsg)
    cpdef InMsg _message(self, Packet pkt, tuple key, long long now)

    @cython.locals(msg=InMsg, proven=bint)
    cpdef InMsg _create(self, Packet pkt, tuple key, long long now)

    @cython.locals(cost="long long", n="long long")
    cpdef bint _admit(self, src, long long npkts, long long now) except -1

    @cython.locals(n="long long")
    cpdef _inbound_gone(self, InMsg msg)

    @cython.locals(limit="long long", msg=InMsg)
    cpdef _forget_idle(self, long long now)

    @cython.locals(n="long long")
    cpdef _unproven_gone(self, src)

    cpdef long long _prove(self, InMsg msg, long long now) except? -2

    @cython.locals(demand=Demand)
    cpdef long long _heard(self, InMsg msg, long long now) except? -2

    @cython.locals(pending=Fifo, t="long long", msg=InMsg)
    cpdef long long oldest_unproven_grant(self) except? -2

    @cython.locals(pending=Fifo, limit="long long", t="long long", msg=InMsg)
    cpdef expire(self, long long now)

    @cython.locals(msg=InMsg, due="long long", d="long long", old_cum="long long")
    cpdef long long on_data(self, Packet pkt, long long now, object out) except? -2

    cpdef bint _whole(self, Packet pkt) except -1

    @cython.locals(sched=CreditScheduler, due="long long", d="long long", flags="long long")
    cpdef long long _deliver_whole(self, Packet pkt, long long now, object out) except? -2

    @cython.locals(order=Fifo, limit="long long")
    cpdef _finish(self, InMsg msg, long long now)

    @cython.locals(bitmap=ReceiveBitmap, base="long long", flags="long long")
    cpdef Packet _ack(self, InMsg msg, Packet pkt, long long now)

    cpdef Packet _final_ack(self, Packet pkt, long long npkts, long long now)

    @cython.locals(msg=InMsg, demand=Demand)
    cpdef long long on_request(self, Packet pkt, long long now, object out) except? -2

    @cython.locals(demand=Demand)
    cpdef _starved(self, InMsg msg, long long seen, long long now, object out)

    @cython.locals(sched=CreditScheduler, unsched="long long", due="long long", d="long long")
    cpdef long long _announce(self, InMsg msg, long long scheduled_need,
                              long long now) except? -2

    @cython.locals(demand=Demand, amount="long long")
    cpdef Packet grant(self, long long now)

    @cython.locals(msg=InMsg, entropy="long long")
    cpdef Packet _grant_packet(self, Demand demand, long long amount, long long now)
