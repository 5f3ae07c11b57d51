# cython: language_level=3
"""The compiled twin of gse/eventq.py: the same queue over a C heap.

Events run in (time, seq) order, seq counting ``at`` calls: the order is total, so any
correct priority queue runs the same events in the same order as the reference's
``heapq`` of tuples.  The heap (4-ary: half the levels, and cache lines, of a binary
one) holds (time, seq) as one 128-bit key and a slot number; the callables and their arguments stay
in Python lists, so the garbage collector sees them, in slots reused through a free list.
While an event runs, the next one's callable and first argument are prefetched.
``tests/test_compiled.py`` drives both twins with the same random schedules and compares
what they run.
"""

from cpython.list cimport PyList_GET_ITEM
from cpython.mem cimport PyMem_Free, PyMem_Realloc


cdef extern from *:
    void __builtin_prefetch(const void* p) noexcept nogil


cdef inline long long _time_of(gse_evkey_t key) noexcept nogil:
    return <long long>(key >> 64)


cdef class EventQueue:

    def __cinit__(self):
        self._heap = NULL
        self._free = NULL
        self._n = 0
        self._cap = 0
        self._nfree = 0
        self._fn = []
        self._a = []
        self._b = []

    def __init__(self):
        self.seq = 0
        self.now = 0
        self.events = 0

    def __dealloc__(self):
        PyMem_Free(self._heap)
        PyMem_Free(self._free)

    cdef int _grow(self) except -1:
        cdef Py_ssize_t cap = self._cap * 2 if self._cap else 1024
        cdef void* p = PyMem_Realloc(self._heap, cap * sizeof(_Entry))
        if p == NULL:
            raise MemoryError()
        self._heap = <_Entry*>p
        p = PyMem_Realloc(self._free, cap * sizeof(Py_ssize_t))
        if p == NULL:
            raise MemoryError()
        self._free = <Py_ssize_t*>p
        self._cap = cap
        return 0

    cpdef at(self, long long t, object fn, object a, object b):
        cdef Py_ssize_t i, parent, slot
        cdef _Entry e
        cdef _Entry* heap
        if t < self.now:
            raise ValueError("event scheduled in the past: %d < now %d" % (t, self.now))
        if self._n == self._cap:
            self._grow()
        self.seq += 1
        if self._nfree:
            self._nfree -= 1
            slot = self._free[self._nfree]
            self._fn[slot] = fn
            self._a[slot] = a
            self._b[slot] = b
        else:
            slot = len(self._fn)
            self._fn.append(fn)
            self._a.append(a)
            self._b.append(b)
        e.key = ((<gse_evkey_t>t) << 64) | <gse_evkey_t>self.seq
        e.slot = slot
        heap = self._heap
        i = self._n
        self._n += 1
        while i > 0:                     # sift up
            parent = (i - 1) >> 2
            if heap[parent].key < e.key:
                break
            heap[i] = heap[parent]
            i = parent
        heap[i] = e

    cdef Py_ssize_t _pop(self):
        """Remove the first event from the heap; return its slot (the caller frees it).

        Bottom-up: the hole at the root goes down to a leaf along the smallest children,
        then the last entry rises from there (rarely far)."""
        cdef _Entry* heap = self._heap
        cdef Py_ssize_t top = heap[0].slot
        cdef Py_ssize_t n, i, c, p, best, e
        cdef _Entry last
        self._n -= 1
        n = self._n
        if n:
            last = heap[n]
            i = 0
            c = 1
            while c < n:
                best = c
                if c + 3 < n:            # four children: the common case, unrolled
                    if heap[c + 1].key < heap[best].key:
                        best = c + 1
                    if heap[c + 2].key < heap[best].key:
                        best = c + 2
                    if heap[c + 3].key < heap[best].key:
                        best = c + 3
                else:
                    e = n
                    c += 1
                    while c < e:
                        if heap[c].key < heap[best].key:
                            best = c
                        c += 1
                heap[i] = heap[best]
                i = best
                c = 4 * i + 1
            while i > 0:
                p = (i - 1) >> 2
                if heap[p].key < last.key:
                    break
                heap[i] = heap[p]
                i = p
            heap[i] = last
        return top

    cpdef bint run(self, long long until=-1) except -1:
        """Run events in order; stop when none is left or the next is past ``until``.

        Returns True if the queue drained, False if it stopped at ``until``."""
        cdef Py_ssize_t n = 0
        cdef Py_ssize_t slot, nxt
        cdef long long t
        cdef object fn, a, b
        cdef list fns = self._fn, as_ = self._a, bs = self._b
        try:
            while self._n:
                t = _time_of(self._heap[0].key)
                if until >= 0 and t > until:
                    self.now = until
                    return False
                slot = self._pop()
                if self._n:              # the next event's objects, while this one runs
                    nxt = self._heap[0].slot
                    __builtin_prefetch(PyList_GET_ITEM(fns, nxt))
                    __builtin_prefetch(PyList_GET_ITEM(as_, nxt))
                fn = fns[slot]
                a = as_[slot]
                b = bs[slot]
                fns[slot] = None
                as_[slot] = None
                bs[slot] = None
                self._free[self._nfree] = slot
                self._nfree += 1
                self.now = t
                n += 1
                fn(a, b)
            return True
        finally:
            self.events += n

    cpdef Py_ssize_t pending(self):
        return self._n
