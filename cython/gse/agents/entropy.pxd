# Augments gse/agents/entropy.py.
import cython
from gse.common.fifo cimport Fifo


cdef class EntropySelector:
    cdef public long long base
    cdef public long long n
    cdef public long long cursor
    cdef public long long count
    cdef public long long penalty
    cdef public object penalised
    cdef public Fifo recycled

    cpdef long long next(self) except? -1

    @cython.locals(n="long long", idx="long long", pen=object)
    cpdef long long explore(self) except? -1

    cpdef recycle(self, long long entropy)

    @cython.locals(idx="long long")
    cpdef penalise(self, long long entropy)

    cpdef Py_ssize_t n_penalised(self)
