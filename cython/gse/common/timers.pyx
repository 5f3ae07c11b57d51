# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled twin of gse/common/timers.py: the same order, on a C heap.

Entries are ``(t, seq, kind, slot)`` structs in a binary heap ordered by (t, seq); seq
counts pushes, so the order is total and is the reference's tuple order.  The first
entry's deadline is kept in the object too (``first``, asked after every event at a host).  Owners live
in a Python list at their slot (reused through a free list), so the garbage collector
sees them.
"""

from cpython.mem cimport PyMem_Free, PyMem_Realloc


cdef inline bint _less(gse_timer* a, gse_timer* b) noexcept nogil:
    return a.t < b.t or (a.t == b.t and a.seq < b.seq)


cdef class TimerHeap:

    def __cinit__(self):
        self._h = NULL
        self._n = 0
        self._t0 = -1
        self._cap = 0
        self._owner = []
        self._free = []
        self.seq = 0
        self.last_t = -1
        self.last_kind = -1

    def __dealloc__(self):
        PyMem_Free(self._h)

    cdef int _grow(self) except -1:
        cdef Py_ssize_t cap = self._cap * 2 if self._cap else 8
        cdef void* p = PyMem_Realloc(self._h, cap * sizeof(gse_timer))
        if p == NULL:
            raise MemoryError()
        self._h = <gse_timer*>p
        self._cap = cap
        return 0

    cpdef push(self, long long t, long long kind, object owner):
        cdef Py_ssize_t slot, i, parent
        cdef gse_timer e
        if self._free:
            slot = self._free.pop()
            self._owner[slot] = owner
        else:
            slot = len(self._owner)
            self._owner.append(owner)
        if self._n == self._cap:
            self._grow()
        self.seq += 1
        e.t = t
        e.seq = self.seq
        e.kind = kind
        e.slot = slot
        i = self._n
        self._n += 1
        while i > 0:
            parent = (i - 1) >> 1
            if not _less(&e, &self._h[parent]):
                break
            self._h[i] = self._h[parent]
            i = parent
        self._h[i] = e
        if i == 0:
            self._t0 = t

    cpdef long long first(self):
        # kept in the heap's object (pop and push write it): called after every event at
        # the host, where the heap's first line, a cache line of its own, was mostly cold
        return self._t0

    cpdef object pop(self):
        cdef gse_timer top, last
        cdef Py_ssize_t i, c, n
        cdef object owner
        if self._n == 0:
            raise IndexError("index out of range")
        top = self._h[0]
        self._n -= 1
        n = self._n
        if n:
            last = self._h[n]
            i = 0
            while True:
                c = 2 * i + 1
                if c >= n:
                    break
                if c + 1 < n and _less(&self._h[c + 1], &self._h[c]):
                    c += 1
                if not _less(&self._h[c], &last):
                    break
                self._h[i] = self._h[c]
                i = c
            self._h[i] = last
            self._t0 = self._h[0].t
        else:
            self._t0 = -1
        owner = self._owner[top.slot]
        self._owner[top.slot] = None
        self._free.append(top.slot)
        self.last_t = top.t
        self.last_kind = top.kind
        return owner

    def entries(self):
        """The pending entries as ``(deadline, kind, owner)``, in no particular order
        (the twin of ``gse/common/timers.py``)."""
        cdef Py_ssize_t i
        return [(self._h[i].t, self._h[i].kind, self._owner[self._h[i].slot])
                for i in range(self._n)]

    def __len__(self):
        return self._n

    def __bool__(self):
        return self._n > 0
