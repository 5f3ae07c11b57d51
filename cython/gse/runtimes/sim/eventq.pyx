# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled twin of gse/runtimes/sim/eventq.py: the same queue as a calendar ring over a C heap.

Events run in (time, seq) order, seq counting ``at`` calls: the order is total, so any
correct priority queue runs the same events in the same order as the reference's
``heapq`` of tuples.  Each event is one 16-byte key, (time << 64 | seq << 26 | slot); its
callable and arguments stay in Python lists (visible to the garbage collector) at the
slot, reused through a free list.  A :class:`Handler` scheduled as its own event
target is run through its C method ``fire``, without a Python call.

A simulator's events are dense and near: a packet delivered a link delay later, a port
free a serialisation later.  So the queue is a calendar (Brown's calendar queue, fixed
width): a ring of ``NB`` buckets of ``2^SHIFT`` ps from the current bucket on, each a
list of slots sorted by key, with a bitmap of the occupied ones; an event further ahead
waits in a 4-ary heap and moves into the ring when the ring's horizon reaches it.  Events
mostly arrive in key order (a later event is usually also a later one in its bucket), so
inserting usually appends at a bucket's tail, and popping takes the current bucket's
head.  Order is exact, not approximate: the current bucket holds the earliest events, in
the order of their whole keys.  Time only moves
forward except when ``run(until)`` stopped short of the next event; an event scheduled
before the current bucket then sends the ring back to the heap and restarts from there.
``tests/test_compiled.py`` drives both twins with the same random schedules (sparse,
dense, with stops) and compares what they run.
"""

from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from libc.stdint cimport int32_t, uintptr_t
from libc.string cimport memcpy


cdef extern from "gse_eventq.h":
    long long GSE_SEQ_LIMIT
    int GSE_SLOT_BITS
    int GSE_SHIFT
    Py_ssize_t GSE_NB
    Py_ssize_t GSE_MASK
    Py_ssize_t GSE_NW
    long long gse_time_of(gse_evkey_t key) noexcept nogil
    Py_ssize_t gse_slot_of(gse_evkey_t key) noexcept nogil
    gse_evkey_t gse_key(long long t, long long seq, Py_ssize_t slot) noexcept nogil
    void gse_heap_push(gse_evkey_t* h, Py_ssize_t n, gse_evkey_t key) noexcept nogil
    gse_evkey_t gse_heap_pop(gse_evkey_t* h, Py_ssize_t n) noexcept nogil
    int __builtin_ctzll(unsigned long long x) noexcept nogil


cdef class Handler:
    """An object the queue calls as ``fire(a, b)``, a C method, instead of a bound method."""

    cpdef fire(self, object a, object b):
        raise NotImplementedError


def event_target(handler, method):
    """What to schedule for ``handler``'s events run as ``method(a, b)``: the handler
    itself if it is a :class:`Handler` (its ``fire`` must do what ``method`` does)."""
    if isinstance(handler, Handler):
        return handler
    return method


cdef class EventQueue:

    def __cinit__(self):
        cdef Py_ssize_t i
        self._bucket = <int32_t*>PyMem_Malloc(GSE_NB * sizeof(int32_t))
        self._tail = <int32_t*>PyMem_Malloc(GSE_NB * sizeof(int32_t))
        self._occ = <unsigned long long*>PyMem_Malloc(GSE_NW * sizeof(unsigned long long))
        if self._bucket == NULL or self._tail == NULL or self._occ == NULL:
            raise MemoryError()
        for i in range(GSE_NB):
            self._bucket[i] = -1
        for i in range(GSE_NW):
            self._occ[i] = 0
        self._cb = 0
        self._nring = 0
        self._key = NULL
        self._next = NULL
        self._free = NULL
        self._nfree = 0
        self._scap = 0
        self._raw = NULL
        self._heap = NULL
        self._n = 0
        self._cap = 0
        self._fn = []
        self._a = []
        self._b = []

    def __init__(self):
        self.seq = 0
        self.now = 0
        self.events = 0

    def __dealloc__(self):
        PyMem_Free(self._bucket)
        PyMem_Free(self._tail)
        PyMem_Free(self._occ)
        PyMem_Free(self._key)
        PyMem_Free(self._next)
        PyMem_Free(self._free)
        PyMem_Free(self._raw)

    cdef int _grow_heap(self) except -1:
        cdef Py_ssize_t cap = self._cap * 2 if self._cap else 1024
        cdef void* raw = PyMem_Malloc((cap + 4) * sizeof(gse_evkey_t))
        cdef gse_evkey_t* heap
        if raw == NULL:
            raise MemoryError()
        heap = <gse_evkey_t*>raw          # keys are 16 bytes, malloc aligns to 16:
        while (<uintptr_t>(heap + 1)) & 63:   # shift so that &heap[1] % 64 == 0
            heap += 1
        if self._n:
            memcpy(heap, self._heap, self._n * sizeof(gse_evkey_t))
        PyMem_Free(self._raw)
        self._raw = raw
        self._heap = heap
        self._cap = cap
        return 0

    cdef int _grow_slots(self) except -1:
        cdef Py_ssize_t cap = self._scap * 2 if self._scap else 1024
        cdef void* p
        if cap > (1 << GSE_SLOT_BITS):
            raise OverflowError("event queue: more than %d events pending"
                                % (1 << GSE_SLOT_BITS))
        p = PyMem_Realloc(self._key, cap * sizeof(gse_evkey_t))
        if p == NULL:
            raise MemoryError()
        self._key = <gse_evkey_t*>p
        p = PyMem_Realloc(self._next, cap * sizeof(int32_t))
        if p == NULL:
            raise MemoryError()
        self._next = <int32_t*>p
        p = PyMem_Realloc(self._free, cap * sizeof(int32_t))
        if p == NULL:
            raise MemoryError()
        self._free = <int32_t*>p
        self._scap = cap
        return 0

    cdef void _ring_insert(self, Py_ssize_t slot, gse_evkey_t key) noexcept:
        """Into its bucket's list, kept sorted: events mostly arrive in key order, so the
        common case appends at the tail, and the smallest key is always at the head."""
        cdef Py_ssize_t i = (gse_time_of(key) >> GSE_SHIFT) & GSE_MASK
        cdef Py_ssize_t s, prev
        self._key[slot] = key
        self._nring += 1
        s = self._bucket[i]
        if s < 0:
            self._bucket[i] = slot
            self._tail[i] = slot
            self._next[slot] = -1
            self._occ[i >> 6] |= 1ULL << (i & 63)
            return
        if self._key[self._tail[i]] < key:
            self._next[self._tail[i]] = slot
            self._tail[i] = slot
            self._next[slot] = -1
            return
        if key < self._key[s]:
            self._next[slot] = s
            self._bucket[i] = slot
            return
        prev = s
        s = self._next[s]
        while self._key[s] < key:        # stops before the tail, which is larger
            prev = s
            s = self._next[s]
        self._next[slot] = s
        self._next[prev] = slot

    cdef void _migrate(self) noexcept:
        """Move the heap's events that the ring's horizon now reaches into the ring."""
        cdef long long limit = self._cb + GSE_NB
        cdef gse_evkey_t key
        while self._n and (gse_time_of(self._heap[0]) >> GSE_SHIFT) < limit:
            key = gse_heap_pop(self._heap, self._n)
            self._n -= 1
            self._ring_insert(gse_slot_of(key), key)

    cdef int _rewind(self, long long b) except -1:
        """An event before the current bucket (after a stop at ``until``): everything
        goes back to the heap and the ring restarts at bucket ``b``."""
        cdef Py_ssize_t i, s
        while self._cap < self._n + self._nring:
            self._grow_heap()
        for i in range(GSE_NB):
            s = self._bucket[i]
            while s >= 0:
                gse_heap_push(self._heap, self._n, self._key[s])
                self._n += 1
                s = self._next[s]
            self._bucket[i] = -1
        for i in range(GSE_NW):
            self._occ[i] = 0
        self._nring = 0
        self._cb = b
        self._migrate()
        return 0

    cdef void _settle(self) noexcept:
        """Make the current bucket the first occupied one (some event must be pending)."""
        cdef Py_ssize_t i = self._cb & GSE_MASK
        cdef Py_ssize_t j, w, k, found
        cdef unsigned long long word
        if self._bucket[i] >= 0:
            return
        if self._nring == 0:             # nothing within the horizon: jump to the heap's first
            self._cb = gse_time_of(self._heap[0]) >> GSE_SHIFT
            self._migrate()
            return
        j = (i + 1) & GSE_MASK
        w = j >> 6
        word = self._occ[w] & (~0ULL << (j & 63))
        found = -1
        for k in range(GSE_NW + 1):
            if word:
                found = (w << 6) + __builtin_ctzll(word)
                break
            w = (w + 1) & (GSE_NW - 1)
            word = self._occ[w]
        self._cb += (found - i) & GSE_MASK
        self._migrate()

    cpdef at(self, long long t, object fn, object a, object b):
        cdef Py_ssize_t slot
        cdef gse_evkey_t key
        cdef long long bucket
        if t < self.now:
            raise ValueError("event scheduled in the past: %d < now %d" % (t, self.now))
        if self.seq + 1 >= GSE_SEQ_LIMIT:
            raise OverflowError("event queue: more than %d events scheduled" % GSE_SEQ_LIMIT)
        if self._nfree:
            self._nfree -= 1
            slot = self._free[self._nfree]
            self._fn[slot] = fn
            self._a[slot] = a
            self._b[slot] = b
        else:
            slot = len(self._fn)
            if slot == self._scap:
                self._grow_slots()
            self._fn.append(fn)
            self._a.append(a)
            self._b.append(b)
        self.seq += 1
        key = gse_key(t, self.seq, slot)
        bucket = t >> GSE_SHIFT
        if bucket < self._cb:
            self._rewind(bucket)
        if bucket < self._cb + GSE_NB:
            self._ring_insert(slot, key)
        else:
            if self._n == self._cap:
                self._grow_heap()
            gse_heap_push(self._heap, self._n, key)
            self._n += 1

    cpdef bint run(self, long long until=-1) except -1:
        """Run events in order; stop when none is left or the next is past ``until``.

        Returns True if the queue drained, False if it stopped at ``until``."""
        cdef Py_ssize_t n = 0
        cdef Py_ssize_t i, s, best
        cdef long long t
        cdef object fn, a, b
        cdef list fns = self._fn, as_ = self._a, bs = self._b
        try:
            while self._nring or self._n:
                self._settle()
                i = self._cb & GSE_MASK
                best = self._bucket[i]         # the smallest key: its bucket's head
                t = gse_time_of(self._key[best])
                if until >= 0 and t > until:
                    self.now = until
                    return False
                s = self._next[best]
                self._bucket[i] = s
                if s < 0:
                    self._occ[i >> 6] &= ~(1ULL << (i & 63))
                self._nring -= 1
                fn = fns[best]
                a = as_[best]
                b = bs[best]
                fns[best] = None
                as_[best] = None
                bs[best] = None
                self._free[self._nfree] = best
                self._nfree += 1
                self.now = t
                n += 1
                if isinstance(fn, Handler):
                    (<Handler>fn).fire(a, b)
                else:
                    fn(a, b)
            return True
        finally:
            self.events += n

    cpdef Py_ssize_t pending(self):
        return self._nring + self._n
