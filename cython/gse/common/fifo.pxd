# The compiled FIFO (cython/gse/common/fifo.pyx), twin of gse/common/fifo.py (collections.deque).
cimport cython
from cpython.object cimport PyObject


@cython.final
cdef class Fifo:
    cdef list _buf               # ring storage, a power of two long (the GC sees it); None
    cdef PyObject** _items       # until the first item; its item array (empty slots NULL)
    cdef Py_ssize_t _head
    cdef Py_ssize_t _n
    cdef Py_ssize_t _mask
    cdef readonly Py_ssize_t _state   # changes with every mutation (for iterators)

    cdef int _grow(self) except -1
    cpdef append(self, x)
    cpdef appendleft(self, x)
    cpdef object popleft(self)
    cpdef object pop(self)
    cpdef remove(self, value)
    cpdef rotate(self, Py_ssize_t n=*)
    cpdef clear(self)
