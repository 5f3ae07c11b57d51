# Augments gse/agents/bitmap.py.
import cython
from gse.common.bits cimport le64


cdef class ReceiveBitmap:
    cdef public long long npkts
    cdef public bytearray bits
    cdef public long long cum
    cdef public long long count

    cpdef setup(self, long long npkts)

    @cython.locals(byte="Py_ssize_t", bit="long long", bits=bytearray, cum="long long",
                   npkts="long long")
    cpdef bint mark(self, long long psn) except -1

    cpdef bint has(self, long long psn) except -1

    cpdef bint complete(self)

    cpdef object sack(self, long long base)

    @cython.locals(base="long long")
    cpdef long long sack_base_for(self, long long psn)


@cython.locals(bitmap=ReceiveBitmap)
cpdef ReceiveBitmap new_bitmap(long long npkts)
