# Augments gse/agents/scheduler.py.
import cython
from gse.common.fifo cimport Fifo
from gse.wire cimport linkrate

cdef long long HEADER_BYTES
cdef long long CATCHUP_GRANTS


@cython.locals(npkts="long long")
cpdef long long wire_ps(long long payload_bytes, long long mtu, long long mbps) except? -1


cdef class Demand:
    cdef public object key
    cdef public long long need_total
    cdef public long long granted_total
    cdef public bint queued
    cdef public long long order
    cdef public bint proven
    cdef public long long owed_since

    cpdef long long wanted(self)

    cpdef heard(self)


cdef class CreditScheduler:
    cdef public long long mbps
    cdef public long long mtu
    cdef public long long credit_bytes
    cdef public object policy
    cdef public Fifo active
    cdef public long long next_time
    cdef public bint armed
    cdef public long long granted_bytes
    cdef public long long grants
    cdef public long long stall_ps
    cdef public long long probation_ps
    cdef public long long holds

    cpdef long long add_need(self, Demand demand, long long nbytes, long long now) except? -2

    cpdef long long set_need(self, Demand demand, long long need_total, long long now) except? -2

    cpdef long long wake(self, long long now) except? -2

    @cython.locals(start="long long", pushed="long long", limit="long long")
    cpdef long long charge(self, long long payload_bytes, long long now,
                           long long cap_bytes) except? -2

    cpdef bint busy(self)

    cpdef remove(self, Demand demand)

    @cython.locals(demand=Demand, want="long long", amount="long long", active=Fifo,
                   owed="long long", start="long long")
    cpdef object grant(self, long long now)

    @cython.locals(limit="long long")
    cdef inline bint _overdue(self, Demand demand, long long owed_ps)
