# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled twin of gse/common/fifo.py: a ring buffer with deque's behaviour.

Only what the hot modules use, with collections.deque's results and errors: append,
appendleft, pop, popleft, remove, rotate, clear, extend, len, truth, indexing (negative
too), iteration both ways (RuntimeError if mutated meanwhile), ``in``, ==, repr.  Items
live in a Python list used as the ring, so the garbage collector sees them; the ring reads
and writes the list's item array through a pointer kept here (``_items``), not through the
list object, whose header would be one more cache line per operation (the host agents'
FIFOs are many and mostly cold: that line was over half of ``popleft``'s cost at k=16).
The list is private, made with the first item (many FIFOs, a message's retransmissions
for one, stay empty all their life) and never resized (``_grow`` replaces it); an empty
slot is NULL, which the list's traversal and deallocation skip.
"""

cimport cython
from cpython.list cimport PyList_New
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_XDECREF
import sys
from collections import deque as _deque

_OLD_MESSAGES = sys.version_info < (3, 11)     # deque's error texts changed in 3.11


cdef extern from "Python.h":
    ctypedef struct PyListObject:
        PyObject** ob_item


cdef inline object _take(PyObject* p):
    # the ring's reference to p, handed to the caller
    r = <object>p
    Py_DECREF(r)
    return r


@cython.freelist(256)
@cython.no_gc_clear
cdef class Fifo:

    def __cinit__(self, iterable=()):
        # made and filled here, with no __init__: one argument parse per Fifo (three
        # are made per message sent); anything but () is iterated, as deque does
        self._buf = None                  # no list until the first item (_grow)
        self._items = NULL
        self._mask = -1
        self._head = 0
        self._n = 0
        self._state = 0
        if type(iterable) is not tuple or iterable:
            for x in iterable:
                self.append(x)

    cdef int _grow(self) except -1:
        cdef Py_ssize_t i, cap = self._mask + 1
        cdef list buf = PyList_New(2 * cap if cap else 8)
        cdef PyObject** items = (<PyListObject*>buf).ob_item
        for i in range(self._n):          # the references move to the new list
            items[i] = self._items[(self._head + i) & self._mask]
            self._items[(self._head + i) & self._mask] = NULL
        self._buf = buf
        self._items = items
        self._head = 0
        self._mask = 2 * cap - 1 if cap else 7
        return 0

    cpdef append(self, x):
        if self._n > self._mask:
            self._grow()
        Py_INCREF(x)
        self._items[(self._head + self._n) & self._mask] = <PyObject*>x
        self._n += 1
        self._state += 1

    cpdef appendleft(self, x):
        if self._n > self._mask:
            self._grow()
        self._head = (self._head - 1) & self._mask
        Py_INCREF(x)
        self._items[self._head] = <PyObject*>x
        self._n += 1
        self._state += 1

    cpdef object popleft(self):
        cdef PyObject* p
        if self._n == 0:
            raise IndexError("pop from an empty deque")
        p = self._items[self._head]
        self._items[self._head] = NULL
        self._head = (self._head + 1) & self._mask
        self._n -= 1
        self._state += 1
        return _take(p)

    cpdef object pop(self):
        cdef PyObject* p
        cdef Py_ssize_t i
        if self._n == 0:
            raise IndexError("pop from an empty deque")
        self._n -= 1
        i = (self._head + self._n) & self._mask
        p = self._items[i]
        self._items[i] = NULL
        self._state += 1
        return _take(p)

    cpdef remove(self, value):
        cdef Py_ssize_t i, j, n = self._n
        cdef Py_ssize_t state = self._state
        cdef PyObject* p
        cdef object item
        for i in range(n):
            item = <object>self._items[(self._head + i) & self._mask]
            equal = item is value or item == value
            if self._state != state:
                raise IndexError("deque mutated during remove().")
            if equal:
                p = self._items[(self._head + i) & self._mask]
                for j in range(i, n - 1):
                    self._items[(self._head + j) & self._mask] = \
                        self._items[(self._head + j + 1) & self._mask]
                self._items[(self._head + n - 1) & self._mask] = NULL
                self._n -= 1
                self._state += 1
                Py_XDECREF(p)     # (item still holds it)
                return
        if _OLD_MESSAGES:
            raise ValueError("deque.remove(x): x not in deque")
        raise ValueError("%r is not in deque" % (value,))

    cpdef rotate(self, Py_ssize_t n=1):
        cdef Py_ssize_t k
        if self._n <= 1:
            return
        k = n % self._n                  # right by k == left by n - k
        for _ in range(k):
            self.appendleft(self.pop())

    cpdef clear(self):
        cdef Py_ssize_t i
        cdef PyObject* p
        cdef list held = []               # dropped last: their deallocation sees a clear ring
        for i in range(self._mask + 1):
            p = self._items[i]
            if p != NULL:
                self._items[i] = NULL
                held.append(_take(p))
        self._head = 0
        self._n = 0
        self._state += 1

    def extend(self, iterable):
        for x in list(iterable) if iterable is self else iterable:
            self.append(x)

    def __len__(self):
        return self._n

    def __bool__(self):
        return self._n != 0

    def __getitem__(self, Py_ssize_t i):
        if i < 0:
            i += self._n
        if i < 0 or i >= self._n:
            raise IndexError("deque index out of range")
        return <object>self._items[(self._head + i) & self._mask]

    def __iter__(self):
        cdef Py_ssize_t i, state = self._state, n = self._n
        for i in range(n):
            if self._state != state:
                raise RuntimeError("deque mutated during iteration")
            yield <object>self._items[(self._head + i) & self._mask]
        if self._state != state:
            raise RuntimeError("deque mutated during iteration")

    def __reversed__(self):
        cdef Py_ssize_t i, state = self._state, n = self._n
        for i in range(n - 1, -1, -1):
            if self._state != state:
                raise RuntimeError("deque mutated during iteration")
            yield <object>self._items[(self._head + i) & self._mask]
        if self._state != state:
            raise RuntimeError("deque mutated during iteration")

    def __contains__(self, value):
        for x in self:
            if x is value or x == value:
                return True
        return False

    def __eq__(self, other):
        if isinstance(other, (Fifo, _deque)):
            return list(self) == list(other)
        return NotImplemented

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    __hash__ = None

    def __repr__(self):
        return "deque(%r)" % (list(self),)
