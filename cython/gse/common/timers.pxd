# The compiled timer heap (cython/gse/common/timers.pyx), twin of gse/common/timers.py.
cimport cython


cdef struct gse_timer:
    long long t
    long long seq
    long long kind
    Py_ssize_t slot


@cython.final
cdef class TimerHeap:
    cdef gse_timer* _h           # binary min-heap on (t, seq)
    cdef Py_ssize_t _n
    cdef long long _t0           # the first entry's deadline (-1: none), read without _h
    cdef Py_ssize_t _cap
    cdef list _owner             # owner by slot (the GC sees them)
    cdef list _free              # free slots
    cdef readonly long long seq
    cdef readonly long long last_t
    cdef readonly long long last_kind

    cdef int _grow(self) except -1
    cpdef push(self, long long t, long long kind, object owner)
    cpdef long long first(self)
    cpdef object pop(self)
