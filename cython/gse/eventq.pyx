# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled twin of gse/eventq.py: the same queue over a C heap.

Events run in (time, seq) order, seq counting ``at`` calls: the order is total, so any
correct priority queue runs the same events in the same order as the reference's
``heapq`` of tuples.  Each event is one 16-byte key, (time << 64 | seq << 26 | slot), in a
4-ary heap laid out so that the four children of a node share one 64-byte cache line;
popping takes the smaller of each pair of children and then the smaller pair without
branches the processor could mispredict, sends the hole down to a leaf and lets the last
key rise from there (rarely far).  The callables and their arguments stay in Python lists
(visible to the garbage collector) at the key's slot, reused through a free list.  While
an event runs, the next one's callable and first argument are prefetched.
``tests/test_compiled.py`` drives both twins with the same random schedules and compares
what they run.
"""

from cpython.list cimport PyList_GET_ITEM
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport uintptr_t
from libc.string cimport memcpy


cdef extern from *:
    """
    #define GSE_SLOT_BITS 26
    #define GSE_SEQ_LIMIT (1LL << (64 - GSE_SLOT_BITS))

    static inline long long gse_time_of(gse_evkey_t key) { return (long long)(key >> 64); }
    static inline Py_ssize_t gse_slot_of(gse_evkey_t key) {
        return (Py_ssize_t)(key & ((1ULL << GSE_SLOT_BITS) - 1));
    }
    static inline gse_evkey_t gse_key(long long t, long long seq, Py_ssize_t slot) {
        return ((gse_evkey_t)(unsigned long long)t << 64)
             | ((gse_evkey_t)(unsigned long long)seq << GSE_SLOT_BITS)
             | (gse_evkey_t)(unsigned long long)slot;
    }

    /* Insert key at the end of a heap of n keys (capacity checked by the caller). */
    static inline void gse_heap_push(gse_evkey_t* h, Py_ssize_t n, gse_evkey_t key) {
        Py_ssize_t i = n, p;
        while (i > 0) {
            p = (i - 1) >> 2;
            if (h[p] < key) break;
            h[i] = h[p];
            i = p;
        }
        h[i] = key;
    }

    /* Remove the smallest of n > 0 keys and return it. */
    static inline gse_evkey_t gse_heap_pop(gse_evkey_t* h, Py_ssize_t n) {
        gse_evkey_t top = h[0], last;
        Py_ssize_t i = 0, c = 1, a, b, best, p, k;
        n -= 1;
        if (n == 0) return top;
        last = h[n];
        while (c + 3 < n) {                  /* four children: the common case */
            a = c + (h[c + 1] < h[c]);
            b = c + 2 + (h[c + 3] < h[c + 2]);
            best = (h[b] < h[a]) ? b : a;
            h[i] = h[best];
            i = best;
            c = 4 * i + 1;
        }
        if (c < n) {                         /* the last, partial group */
            best = c;
            for (k = c + 1; k < n; k++)
                if (h[k] < h[best]) best = k;
            h[i] = h[best];
            i = best;
        }
        while (i > 0) {                      /* the last key rises from the leaf */
            p = (i - 1) >> 2;
            if (h[p] < last) break;
            h[i] = h[p];
            i = p;
        }
        h[i] = last;
        return top;
    }
    """
    long long GSE_SEQ_LIMIT
    int GSE_SLOT_BITS
    long long gse_time_of(gse_evkey_t key) noexcept nogil
    Py_ssize_t gse_slot_of(gse_evkey_t key) noexcept nogil
    gse_evkey_t gse_key(long long t, long long seq, Py_ssize_t slot) noexcept nogil
    void gse_heap_push(gse_evkey_t* h, Py_ssize_t n, gse_evkey_t key) noexcept nogil
    gse_evkey_t gse_heap_pop(gse_evkey_t* h, Py_ssize_t n) noexcept nogil
    void __builtin_prefetch(const void* p) noexcept nogil


cdef class EventQueue:

    def __cinit__(self):
        self._raw = NULL
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
        PyMem_Free(self._raw)
        PyMem_Free(self._free)

    cdef int _grow(self) except -1:
        cdef Py_ssize_t cap = self._cap * 2 if self._cap else 1024
        cdef void* raw
        cdef gse_evkey_t* heap
        cdef Py_ssize_t* free
        if cap > (1 << GSE_SLOT_BITS):
            raise OverflowError("event queue: more than %d events pending"
                                % (1 << GSE_SLOT_BITS))
        raw = PyMem_Malloc((cap + 4) * sizeof(gse_evkey_t))
        if raw == NULL:
            raise MemoryError()
        # keys are 16 bytes and malloc aligns to 16: shift so that &heap[1] % 64 == 0
        heap = <gse_evkey_t*>raw
        while (<uintptr_t>(heap + 1)) & 63:
            heap += 1
        free = <Py_ssize_t*>PyMem_Malloc(cap * sizeof(Py_ssize_t))
        if free == NULL:
            PyMem_Free(raw)
            raise MemoryError()
        if self._n:
            memcpy(heap, self._heap, self._n * sizeof(gse_evkey_t))
        if self._nfree:
            memcpy(free, self._free, self._nfree * sizeof(Py_ssize_t))
        PyMem_Free(self._raw)
        PyMem_Free(self._free)
        self._raw = raw
        self._heap = heap
        self._free = free
        self._cap = cap
        return 0

    cpdef at(self, long long t, object fn, object a, object b):
        cdef Py_ssize_t slot
        if t < self.now:
            raise ValueError("event scheduled in the past: %d < now %d" % (t, self.now))
        if self._n == self._cap:
            self._grow()
        if self.seq + 1 >= GSE_SEQ_LIMIT:
            raise OverflowError("event queue: more than %d events scheduled" % GSE_SEQ_LIMIT)
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
        gse_heap_push(self._heap, self._n, gse_key(t, self.seq, slot))
        self._n += 1

    cpdef bint run(self, long long until=-1) except -1:
        """Run events in order; stop when none is left or the next is past ``until``.

        Returns True if the queue drained, False if it stopped at ``until``."""
        cdef Py_ssize_t n = 0
        cdef Py_ssize_t slot, nxt
        cdef long long t
        cdef gse_evkey_t key
        cdef object fn, a, b
        cdef list fns = self._fn, as_ = self._a, bs = self._b
        try:
            while self._n:
                t = gse_time_of(self._heap[0])
                if until >= 0 and t > until:
                    self.now = until
                    return False
                key = gse_heap_pop(self._heap, self._n)
                self._n -= 1
                slot = gse_slot_of(key)
                if self._n:              # the next event's objects, while this one runs
                    nxt = gse_slot_of(self._heap[0])
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
