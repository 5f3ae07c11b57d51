# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled twin of gse/common/timers.py: the same order, on a C heap.

Entries are ``(t, seq, kind, owner)`` structs in a binary heap ordered by (t, seq); seq
counts pushes, so the order is total and is the reference's tuple order.  The owner is
an owned reference in the entry, which the type's ``tp_traverse`` shows to the garbage
collector (before, owners sat in a Python list by slot with a free list of slots: popping
read that list's header, a cold line, and two lists changed per timer).  The first
entry's deadline is kept in the object too (``first``, asked after every event at a host,
reads no entry).
"""

from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.object cimport PyObject, PyTypeObject, inquiry, traverseproc, visitproc
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_XDECREF


cdef inline bint _less(gse_timer* a, gse_timer* b) noexcept nogil:
    return a.t < b.t or (a.t == b.t and a.seq < b.seq)


cdef class TimerHeap:

    def __cinit__(self):
        self._h = NULL
        self._n = 0
        self._t0 = -1
        self._cap = 0
        self.seq = 0
        self.last_t = -1
        self.last_kind = -1
        self._gc = None

    def __dealloc__(self):
        self._release()
        PyMem_Free(self._h)

    cdef void _release(self):
        # drop the pending entries' owners (deallocation, or the collector's tp_clear)
        cdef Py_ssize_t i, n = self._n
        cdef PyObject* owner
        self._n = 0
        self._t0 = -1
        for i in range(n):
            owner = self._h[i].owner
            self._h[i].owner = NULL
            Py_XDECREF(owner)

    cdef int _grow(self) except -1:
        cdef Py_ssize_t cap = self._cap * 2 if self._cap else 8
        cdef void* p = PyMem_Realloc(self._h, cap * sizeof(gse_timer))
        if p == NULL:
            raise MemoryError()
        self._h = <gse_timer*>p
        self._cap = cap
        return 0

    cpdef push(self, long long t, long long kind, object owner):
        cdef Py_ssize_t i, parent
        cdef gse_timer e
        if self._n == self._cap:
            self._grow()
        self.seq += 1
        e.t = t
        e.seq = self.seq
        e.kind = kind
        Py_INCREF(owner)
        e.owner = <PyObject*>owner
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
        self.last_t = top.t
        self.last_kind = top.kind
        owner = <object>top.owner          # the entry's reference, handed to the caller
        Py_DECREF(owner)
        return owner

    def entries(self):
        """The pending entries as ``(deadline, kind, owner)``, in no particular order
        (the twin of ``gse/common/timers.py``)."""
        cdef Py_ssize_t i
        return [(self._h[i].t, self._h[i].kind, <object>self._h[i].owner)
                for i in range(self._n)]

    def __len__(self):
        return self._n

    def __bool__(self):
        return self._n > 0


# The entries' owners, shown to the garbage collector (an owner may refer back to the
# agent holding the heap).  Cython generates tp_traverse and tp_clear for the object
# attributes only (``_gc``, there to make the type one the collector tracks).
cdef traverseproc _base_traverse = (<PyTypeObject*>TimerHeap).tp_traverse
cdef inquiry _base_clear = (<PyTypeObject*>TimerHeap).tp_clear


cdef int _traverse(PyObject* o, visitproc visit, void* arg) except -1:
    cdef TimerHeap h = <TimerHeap>o
    cdef Py_ssize_t i
    cdef int r
    for i in range(h._n):
        if h._h[i].owner != NULL:
            r = visit(h._h[i].owner, arg)
            if r:
                return r
    if _base_traverse != NULL:
        return _base_traverse(o, visit, arg)
    return 0


cdef int _clear(object o) except -1:
    (<TimerHeap>o)._release()
    if _base_clear != NULL:
        return _base_clear(o)
    return 0


(<PyTypeObject*>TimerHeap).tp_traverse = _traverse
(<PyTypeObject*>TimerHeap).tp_clear = _clear
