# The compiled event queue (cython/gse/runtimes/sim/eventq.pyx), twin of gse/runtimes/sim/eventq.py.

from libc.stdint cimport int32_t


# the key type and the inline heap: cython/gse/runtimes/sim/gse_eventq.h
cdef extern from "gse_eventq.h":
    ctypedef unsigned long long gse_evkey_t    # an integer type to Cython


cdef class Handler:
    cpdef fire(self, object a, object b)


cdef class EventQueue:
    # the ring: one bucket per 2^SHIFT ps for NB buckets from the current one, each a list
    # of slots sorted by key, linked through _next; an occupancy bitmap finds the next one
    cdef int32_t* _bucket        # head slot of each bucket, -1 if empty (slots < 2^26)
    cdef int32_t* _tail          # its last slot (valid while not empty)
    cdef unsigned long long* _occ
    cdef long long _cb           # absolute number (time >> SHIFT) of the current bucket
    cdef Py_ssize_t _nring
    # per slot: its key while in the ring, the next slot of its bucket
    cdef gse_evkey_t* _key
    cdef int32_t* _next
    cdef int32_t* _free          # unused slots
    cdef Py_ssize_t _nfree
    cdef Py_ssize_t _scap        # capacity of _key, _next, _free
    cdef list _fn
    cdef list _a
    cdef list _b
    # the overflow: events beyond the ring's horizon, in a 4-ary min-heap of keys
    cdef void* _raw              # the allocation behind _heap
    cdef gse_evkey_t* _heap      # &_heap[1] starts a 64-byte cache line
    cdef Py_ssize_t _n
    cdef Py_ssize_t _cap
    cdef public long long seq
    cdef public long long now
    cdef public long long events

    cdef int _grow_heap(self) except -1
    cdef int _grow_slots(self) except -1
    cdef void _ring_insert(self, Py_ssize_t slot, gse_evkey_t key) noexcept
    cdef void _migrate(self) noexcept
    cdef int _rewind(self, long long b) except -1
    cdef void _settle(self) noexcept
    cpdef at(self, long long t, object fn, object a, object b)
    cpdef bint run(self, long long until=*) except -1
    cpdef Py_ssize_t pending(self)
