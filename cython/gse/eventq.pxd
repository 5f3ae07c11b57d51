# The compiled event queue (cython/gse/eventq.pyx), twin of gse/eventq.py.

cdef extern from *:
    """
    /* (time, seq) as one unsigned 128-bit key: time in the high half, seq in the low */
    typedef unsigned __int128 gse_evkey_t;
    """
    ctypedef unsigned long long gse_evkey_t    # an integer type to Cython


cdef struct _Entry:
    gse_evkey_t key              # time << 64 | seq
    Py_ssize_t slot              # where the event's (fn, a, b) are kept


cdef class EventQueue:
    cdef _Entry* _heap           # 4-ary min-heap on key
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
    cdef Py_ssize_t _pop(self)
    cpdef at(self, long long t, object fn, object a, object b)
    cpdef bint run(self, long long until=*) except -1
    cpdef Py_ssize_t pending(self)
