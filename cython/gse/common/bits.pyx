# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled twin of gse/common/bits.py: the same results on C integers."""

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE


cdef extern from *:
    int __builtin_ctzll(unsigned long long x) noexcept nogil


cpdef unsigned long long le64(bytearray buf, Py_ssize_t start) except? 0:
    cdef Py_ssize_t n, i
    cdef unsigned long long v = 0
    cdef const unsigned char* p
    if buf is None:
        raise TypeError("le64() needs a bytearray, not None")
    if start < 0:                    # a negative start means what it means to a slice
        return int.from_bytes(buf[start:start + 8], "little")
    n = PyByteArray_GET_SIZE(buf) - start
    if n > 8:
        n = 8
    p = <const unsigned char*>PyByteArray_AS_STRING(buf) + start
    i = n - 1
    while i >= 0:
        v = (v << 8) | p[i]
        i -= 1
    return v


cpdef int lowest_bit(unsigned long long x) noexcept:
    if x == 0:
        return -1
    return __builtin_ctzll(x)
