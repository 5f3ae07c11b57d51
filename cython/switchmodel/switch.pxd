# Augments switchmodel/switch.py.  The hash constants are unsigned 64-bit C globals
# (private to the compiled module), so products wrap modulo 2^64, which C defines, and
# the low 32 bits that mix32 and route keep are exactly the reference's.
import cython
from gse.wire.packet cimport Packet

cdef unsigned long long MASK32
cdef unsigned long long MIX_C1
cdef unsigned long long MIX_C2
cdef unsigned long long FLOW_K_SRC
cdef unsigned long long FLOW_K_DST


cpdef long long mix32(long long x)


cdef class Switch:
    cdef public long long node
    cdef public object name
    cdef public object table
    cdef public int[::1] group_of
    cdef public int[::1] host_port
    cdef public list rows
    cdef public list local
    cdef public dict overrides
    cdef public long long salt
    cdef public bint spray
    cdef public long long forwarded
    cdef public long long unroutable
    cdef public long long unreachable

    cpdef object hops_to(self, long long dst)

    @cython.locals(dst="long long", n="Py_ssize_t", key="unsigned long long", hops=tuple)
    cpdef long long route(self, Packet pkt) except? -2
