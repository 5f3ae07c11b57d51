# The compiled send log (cython/gse/common/sendlog.pyx), twin of gse/common/sendlog.py.
cimport cython


cdef struct gse_sent:
    long long sent
    long long psn


@cython.final
cdef class SendLog:
    cdef gse_sent* _ring         # a power of two long; NULL until the first pair
    cdef Py_ssize_t _head
    cdef Py_ssize_t _n
    cdef Py_ssize_t _mask

    cdef int _grow(self) except -1
    cpdef append(self, long long sent, long long psn)
    cpdef long long first_sent(self) except? -1
    cpdef long long first_psn(self) except? -1
    cpdef popleft(self)
