# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled twin of gse/common/sendlog.py: the pairs as C integers in a ring.

No Python object per pair (the reference holds a tuple of two integers per packet sent),
and no reference to anything, so the type is not one the garbage collector tracks.  The
ring is allocated with the first pair (8 long) and doubled as needed; iteration, rare (a
timeout, a tail probe), makes the tuples then.  Errors as deque's.
"""

cimport cython
from cpython.mem cimport PyMem_Free, PyMem_Malloc


@cython.freelist(256)
cdef class SendLog:

    def __cinit__(self):
        self._ring = NULL
        self._head = 0
        self._n = 0
        self._mask = -1

    def __dealloc__(self):
        PyMem_Free(self._ring)

    cdef int _grow(self) except -1:
        cdef Py_ssize_t i, cap = 2 * (self._mask + 1) if self._ring != NULL else 8
        cdef gse_sent* ring = <gse_sent*>PyMem_Malloc(cap * sizeof(gse_sent))
        if ring == NULL:
            raise MemoryError()
        for i in range(self._n):
            ring[i] = self._ring[(self._head + i) & self._mask]
        PyMem_Free(self._ring)
        self._ring = ring
        self._head = 0
        self._mask = cap - 1
        return 0

    cpdef append(self, long long sent, long long psn):
        cdef gse_sent* e
        if self._n > self._mask:
            self._grow()
        e = &self._ring[(self._head + self._n) & self._mask]
        e.sent = sent
        e.psn = psn
        self._n += 1

    cpdef long long first_sent(self) except? -1:
        if self._n == 0:
            raise IndexError("deque index out of range")
        return self._ring[self._head].sent

    cpdef long long first_psn(self) except? -1:
        if self._n == 0:
            raise IndexError("deque index out of range")
        return self._ring[self._head].psn

    cpdef popleft(self):
        if self._n == 0:
            raise IndexError("pop from an empty deque")
        self._head = (self._head + 1) & self._mask
        self._n -= 1

    def _pairs(self):
        cdef Py_ssize_t i
        cdef gse_sent* e
        out = []
        for i in range(self._n):
            e = &self._ring[(self._head + i) & self._mask]
            out.append((e.sent, e.psn))
        return out

    def __len__(self):
        return self._n

    def __bool__(self):
        return self._n > 0

    def __iter__(self):
        return iter(self._pairs())

    def __reversed__(self):
        return reversed(self._pairs())
