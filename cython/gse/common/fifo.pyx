# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled twin of gse/common/fifo.py: a ring buffer with deque's behaviour.

Only what the hot modules use, with collections.deque's results and errors: append,
appendleft, pop, popleft, remove, rotate, clear, extend, len, truth, indexing (negative
too), iteration both ways (RuntimeError if mutated meanwhile), ``in``, ==, repr.  Items
live in a Python list used as the ring, so the garbage collector sees them.
"""

cimport cython
import sys
from collections import deque as _deque

_OLD_MESSAGES = sys.version_info < (3, 11)     # deque's error texts changed in 3.11


@cython.freelist(256)
cdef class Fifo:

    def __cinit__(self, iterable=()):
        # made and filled here, with no __init__: one argument parse per Fifo (three
        # are made per message sent); anything but () is iterated, as deque does
        self._buf = [None] * 8
        self._mask = 7
        self._head = 0
        self._n = 0
        self._state = 0
        if type(iterable) is not tuple or iterable:
            for x in iterable:
                self.append(x)

    cdef int _grow(self) except -1:
        cdef Py_ssize_t i, cap = self._mask + 1
        cdef list buf = [None] * (2 * cap)
        for i in range(self._n):
            buf[i] = self._buf[(self._head + i) & self._mask]
        self._buf = buf
        self._head = 0
        self._mask = 2 * cap - 1
        return 0

    cpdef append(self, x):
        if self._n > self._mask:
            self._grow()
        self._buf[(self._head + self._n) & self._mask] = x
        self._n += 1
        self._state += 1

    cpdef appendleft(self, x):
        if self._n > self._mask:
            self._grow()
        self._head = (self._head - 1) & self._mask
        self._buf[self._head] = x
        self._n += 1
        self._state += 1

    cpdef object popleft(self):
        cdef object x
        if self._n == 0:
            raise IndexError("pop from an empty deque")
        x = self._buf[self._head]
        self._buf[self._head] = None
        self._head = (self._head + 1) & self._mask
        self._n -= 1
        self._state += 1
        return x

    cpdef object pop(self):
        cdef object x
        cdef Py_ssize_t i
        if self._n == 0:
            raise IndexError("pop from an empty deque")
        self._n -= 1
        i = (self._head + self._n) & self._mask
        x = self._buf[i]
        self._buf[i] = None
        self._state += 1
        return x

    cpdef remove(self, value):
        cdef Py_ssize_t i, j, n = self._n
        cdef Py_ssize_t state = self._state
        cdef object item
        for i in range(n):
            item = self._buf[(self._head + i) & self._mask]
            equal = item is value or item == value
            if self._state != state:
                raise IndexError("deque mutated during remove().")
            if equal:
                for j in range(i, n - 1):
                    self._buf[(self._head + j) & self._mask] = \
                        self._buf[(self._head + j + 1) & self._mask]
                self._buf[(self._head + n - 1) & self._mask] = None
                self._n -= 1
                self._state += 1
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
        for i in range(self._mask + 1):
            self._buf[i] = None
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
        return self._buf[(self._head + i) & self._mask]

    def __iter__(self):
        cdef Py_ssize_t i, state = self._state, n = self._n
        for i in range(n):
            if self._state != state:
                raise RuntimeError("deque mutated during iteration")
            yield self._buf[(self._head + i) & self._mask]
        if self._state != state:
            raise RuntimeError("deque mutated during iteration")

    def __reversed__(self):
        cdef Py_ssize_t i, state = self._state, n = self._n
        for i in range(n - 1, -1, -1):
            if self._state != state:
                raise RuntimeError("deque mutated during iteration")
            yield self._buf[(self._head + i) & self._mask]
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
