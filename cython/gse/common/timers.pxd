# The compiled timer heap (cython/gse/common/timers.pyx), twin of gse/common/timers.py.
cimport cython
from cpython.object cimport PyObject


cdef struct gse_timer:
    long long t
    long long seq
    long long kind
    PyObject* owner              # an owned reference (the type's tp_traverse visits it)


@cython.final
cdef class TimerHeap:
    cdef gse_timer* _h           # binary min-heap on (t, seq)
    cdef Py_ssize_t _n
    cdef long long _t0           # the first entry's deadline (-1: none), read without _h
    cdef Py_ssize_t _cap
    cdef readonly long long seq
    cdef readonly long long last_t
    cdef readonly long long last_kind
    cdef object _gc              # None: an object field, so the type is one the garbage
                                 # collector tracks (its tp_traverse shows the owners)

    cdef int _grow(self) except -1
    cdef void _release(self)
    cpdef push(self, long long t, long long kind, object owner)
    cpdef long long first(self)
    cpdef object pop(self)
