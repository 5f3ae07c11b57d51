# Augments gse/agents/receiver.py.
import cython
from gse.agents.bitmap cimport ReceiveBitmap
from gse.wire.packet cimport Packet, new_packet
from gse.agents.scheduler cimport CreditScheduler, Demand

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


cdef class InMsg:
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


cdef class ReceiverSide:
    cdef public long long addr
    cdef public long long mtu
    cdef public long long ack_every
    cdef public long long ack_delay
    cdef public long long charge_cap
    cdef public dict messages
    cdef public dict finished
    cdef public CreditScheduler scheduler
    cdef public long long order
    cdef public list delivered
    cdef public long long duplicates
    cdef public long long acks
    cdef public long long nacks
    cdef public long long grants_sent
    cdef public long long ecn_seen
    cdef public long long payload_bytes

    @cython.locals(msg=InMsg)
    cpdef InMsg _message(self, Packet pkt, tuple key, long long now)

    @cython.locals(msg=InMsg, due="long long", d="long long", old_cum="long long")
    cpdef long long on_data(self, Packet pkt, long long now, object out) except? -2

    cpdef _finish(self, InMsg msg, long long now)

    @cython.locals(bitmap=ReceiveBitmap, base="long long", flags="long long")
    cpdef Packet _ack(self, InMsg msg, Packet pkt, long long now)

    cpdef Packet _final_ack(self, Packet pkt, long long npkts, long long now)

    @cython.locals(msg=InMsg, demand=Demand)
    cpdef long long on_request(self, Packet pkt, long long now, object out) except? -2

    @cython.locals(sched=CreditScheduler, unsched="long long", due="long long", d="long long")
    cpdef long long _announce(self, InMsg msg, long long scheduled_need,
                              long long now) except? -2

    @cython.locals(demand=Demand, amount="long long", msg=InMsg, entropy="long long")
    cpdef Packet grant(self, long long now)
