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
    # first what a hop reads (route and _route_flat), on the object's first lines
    cdef public bint flat
    cdef public bint spray
    cdef public dict overrides
    cdef public long long n_dst
    cdef public long long stride
    cdef int *group_p
    cdef int *host_port_p
    cdef short *hop_of_p
    cdef int *hop_sets_p
    cdef public long long salt
    cdef public long long forwarded
    cdef public long long unroutable
    cdef public long long unreachable
    cdef public short[::1] hop_of
    cdef public int[::1] hop_sets
    cdef public long long node
    cdef public object name
    cdef public object table
    cdef public int[::1] group_of
    cdef public int[::1] host_port
    cdef public list rows
    cdef public list local

    cpdef object hops_to(self, long long dst)

    @cython.locals(hop="long long", base="long long", n="long long",
                   key="unsigned long long", i="long long")
    cdef long long _route_flat(self, Packet pkt, long long dst)

    @cython.locals(dst="long long", n="Py_ssize_t", key="unsigned long long", hops=tuple)
    cpdef long long route(self, Packet pkt) except? -2
