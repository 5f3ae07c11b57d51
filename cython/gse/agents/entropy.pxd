# Augments gse/agents/entropy.py.
import cython
from gse.common.fifo cimport Fifo


cdef class EntropySelector:
    cdef public long long base
    cdef public long long n
    cdef public long long cursor
    cdef public long long count
    cdef public long long penalty
    cdef public long long trim_penalty
    cdef public object penalised
    cdef public Fifo recycled
    cdef public object dead

    cpdef setup(self, long long base, long long n, long long penalty, object dead,
                long long cursor, long long trim_penalty)

    @cython.locals(recycled=Fifo, entropy="long long")
    cpdef long long next(self, long long now=*) except? -1

    @cython.locals(n="long long", idx="long long", pen=object, dead=object,
                   entropy="long long")
    cpdef long long explore(self, long long now=*) except? -1

    @cython.locals(recycled=Fifo, i="Py_ssize_t", entropy="long long")
    cpdef long long control(self, long long now=*) except? -1

    @cython.locals(pen=object, idx="long long")
    cpdef bint is_penalised(self, long long entropy) except -1

    @cython.locals(dead=object)
    cpdef bint is_dead(self, long long entropy, long long now) except -1

    cpdef recycle(self, long long entropy)

    cpdef penalise(self, long long entropy)

    cpdef penalise_trim(self, long long entropy)

    @cython.locals(idx="long long", pen=object, until="long long")
    cdef _penalise(self, long long entropy, long long penalty)

    @cython.locals(recycled=Fifo)
    cpdef suspect(self, long long entropy, long long until)

    @cython.locals(dead=object)
    cpdef alive(self, long long entropy)

