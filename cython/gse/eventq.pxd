# The compiled event queue (cython/gse/eventq.pyx), twin of gse/eventq.py.

cdef extern from *:
    """
    /* One event as one unsigned 128-bit key: time in the high 64 bits, then the sequence
       number (38 bits), then the slot holding its (fn, a, b) (26 bits).  Ordering keys
       orders events by (time, seq); the slot bits never decide, since seq is unique. */
    typedef unsigned __int128 gse_evkey_t;
    """
    ctypedef unsigned long long gse_evkey_t    # an integer type to Cython


cdef class EventQueue:
    cdef void* _raw              # the allocation behind _heap
    cdef gse_evkey_t* _heap      # 4-ary min-heap; &_heap[1] starts a 64-byte cache line
    cdef Py_ssize_t _n
    cdef Py_ssize_t _cap
    cdef list _fn
    cdef list _a
    cdef list _b
    cdef Py_ssize_t* _free       # unused slots
    cdef Py_ssize_t _nfree
    cdef public long long seq
    cdef public long long now
    cdef public long long events

    cdef int _grow(self) except -1
    cpdef at(self, long long t, object fn, object a, object b)
    cpdef bint run(self, long long until=*) except -1
    cpdef Py_ssize_t pending(self)
