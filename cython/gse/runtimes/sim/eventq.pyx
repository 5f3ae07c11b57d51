# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled twin of gse/runtimes/sim/eventq.py: the same queue as a calendar ring over a C heap.

Events run in (time, seq) order, seq counting ``at`` calls: the order is total, so any
correct priority queue runs the same events in the same order as the reference's
``heapq`` of tuples.  Each event is one 16-byte key, (time << 64 | seq << 26 | slot),
and one slot: a 32-byte C struct (two a cache line) holding the callable and its two
arguments (as owned references, which the type's ``tp_traverse`` shows to the garbage
collector) and whether the callable is a :class:`Handler` (run through its C method
``fire``, without a Python call).  Popping an event reads its key from the current
bucket's sorted array and that one line, and asks for the next event's slot while the
current one runs (not its target and arguments too: reaching them through the slot's
pointers made k=32 runs 3.5-5% slower, docs/scale.md).  Slots are reused through a free list, so their number is
the most events ever pending at once, not a function of the time span.

A simulator's events are dense and near: a packet delivered a link delay later, a port
free a serialisation later.  So the queue is a calendar (Brown's calendar queue, fixed
width): a ring of ``NB`` buckets of ``2^SHIFT`` ps from the current bucket on, each an
array of its events' keys in the order they were scheduled, with a bitmap of the
occupied ones; an event further ahead waits in a 4-ary heap and moves into the ring when
the ring's horizon reaches it.  Scheduling appends a key to its bucket's array, however
many events the bucket holds (a large fabric puts tens to hundreds in each: k=16 about
50); when the ring reaches a bucket, its keys become the current bucket's array, sorted
(a natural merge sort: they come as a few runs in order), which the few events scheduled
into the current bucket join in their place.  Order is exact: the current bucket holds
the earliest events, popped in the order of their whole keys.  Time only moves forward except when ``run(until)`` stopped short of the next event; an event scheduled
before the current bucket then sends the ring back to the heap and restarts from there.
An event scheduled for the current time (a switch's zero-latency pipe, a handover at
once) goes to a same-instant FIFO instead: no slot, no key, no bucket; it runs after the
ring's events of that time (filed before the clock reached it: smaller sequence numbers)
and after the FIFO's earlier ones: ``run`` drains the FIFO once the ring's next event is
later (a FIFO left from outside a run joins the ring first), so the order is the ring's own.
``tests/test_compiled_eventq.py`` drives both twins with the same random schedules (sparse,
dense, with stops) and compares what they run.
"""

from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.object cimport PyTypeObject, inquiry, traverseproc, visitproc
from cpython.ref cimport PyObject
from libc.stdint cimport int32_t, uintptr_t
from libc.string cimport memcpy, memmove


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
    int gse_pool_room(gse_pool_t* p) except -1
    void gse_bucket_append(gse_pool_t* p, gse_bucket_t* b, gse_evkey_t key) noexcept nogil
    void gse_bucket_drain(gse_pool_t* p, gse_bucket_t* b, gse_evkey_t* dst) noexcept nogil
    int gse_keys_reserve(gse_keys_t* a, Py_ssize_t need) except -1
    gse_evkey_t* gse_keys_sort(gse_evkey_t* k, Py_ssize_t m, gse_evkey_t* tmp) noexcept nogil
    void gse_keys_insert(gse_evkey_t* k, Py_ssize_t lo, Py_ssize_t n,
                         gse_evkey_t key) noexcept nogil
    void gse_heap_push(gse_evkey_t* h, Py_ssize_t n, gse_evkey_t key) noexcept nogil
    gse_evkey_t gse_heap_pop(gse_evkey_t* h, Py_ssize_t n) noexcept nogil
    int __builtin_ctzll(unsigned long long x) noexcept nogil
    void __builtin_prefetch(const void* p) noexcept nogil
    object gse_take(PyObject** p)
    void gse_put(PyObject** p, object o) noexcept
    void gse_slots_clear(gse_evslot_t* s, Py_ssize_t n) noexcept
    int gse_slots_visit(gse_evslot_t* s, Py_ssize_t n, visitproc visit, void* arg) noexcept
    int gse_fifo_grow(gse_fifo_ev_t** q, Py_ssize_t* head, Py_ssize_t n,
                      Py_ssize_t* cap) except -1
    void gse_fifo_clear(gse_fifo_ev_t* q, Py_ssize_t head, Py_ssize_t n,
                        Py_ssize_t cap) noexcept
    int gse_fifo_visit(gse_fifo_ev_t* q, Py_ssize_t head, Py_ssize_t n, Py_ssize_t cap,
                       visitproc visit, void* arg) noexcept


cdef extern from "gse_arena.h":
    int gse_arena_install(size_t reserve, int blocks)
    size_t gse_arena_used()
    size_t gse_blocks_used()


# Handler (the objects the queue calls as ``fire(a, b)``, a C method, instead of a bound
# method) is gse.common.handler's, cimported by eventq.pxd; named here too, as before
globals()["Handler"] = Handler


def event_target(handler, method):
    """What to schedule for ``handler``'s events run as ``method(a, b)``: the handler
    itself if it is a :class:`Handler` (its ``fire`` must do what ``method`` does)."""
    if isinstance(handler, Handler):
        return handler
    return method


def huge_pages(reserve_gib=64, blocks=False):
    """Serve pymalloc's arenas from a region of ``reserve_gib`` GiB (virtual, reserved
    without commitment) marked for transparent huge pages, and with ``blocks`` the raw
    allocator's blocks (dict tables, lists, arrays: over 512 bytes) from a second one
    (gse_arena.c): whether that is so, now or from an earlier call.  False when the
    region cannot be mapped (a limit on the address space, strict overcommit): memory
    stays as it was.  ``blocks`` is off unless asked for (``GSE_HUGE_BLOCKS=1``): its
    size classes never give memory back, and tables that grow on every host all run
    long (the 10k all-reduce: 7,977 MiB against 5,931) leave each size they outgrow
    behind them (docs/scale.md, "What grows with the fabric")."""
    return gse_arena_install(<size_t>reserve_gib << 30, 1 if blocks else 0) >= 0


def huge_pages_used():
    """Bytes of arenas handed out from the huge-page region so far (0: none)."""
    return gse_arena_used()


def huge_blocks_used():
    """Bytes of the raw allocator's blocks (what pymalloc hands on: over 512 bytes) cut
    from the second huge-page region so far (0: none)."""
    return gse_blocks_used()


cdef class EventQueue:

    def __cinit__(self):
        cdef Py_ssize_t i
        self._bk = <gse_bucket_t*>PyMem_Malloc(GSE_NB * sizeof(gse_bucket_t))
        self._occ = <unsigned long long*>PyMem_Malloc(GSE_NW * sizeof(unsigned long long))
        if self._bk == NULL or self._occ == NULL:
            raise MemoryError()
        for i in range(GSE_NB):
            self._bk[i].head = -1
            self._bk[i].tail = -1
            self._bk[i].n = 0
        self._pool.raw = NULL
        self._pool.c = NULL
        self._pool.used = 0
        self._pool.cap = 0
        self._pool.free = -1
        self._cur.keys = NULL
        self._cur.i = 0
        self._cur.n = 0
        self._cur.cap = 0
        self._tmp.keys = NULL
        self._tmp.i = 0
        self._tmp.n = 0
        self._tmp.cap = 0
        for i in range(GSE_NW):
            self._occ[i] = 0
        self._cb = 0
        self._nring = 0
        self._sraw = NULL
        self._slot = NULL
        self._nslots = 0
        self._scap = 0
        self._free = -1
        self._handler_type = Handler
        self._raw = NULL
        self._heap = NULL
        self._n = 0
        self._cap = 0
        self._fq = NULL
        self._fh = 0
        self._fn = 0
        self._fcap = 0
        self._ft = 0

    def __init__(self):
        self.seq = 0
        self.now = 0
        self.events = 0

    def __dealloc__(self):
        self._release()
        PyMem_Free(self._bk)
        PyMem_Free(self._pool.raw)
        PyMem_Free(self._cur.keys)
        PyMem_Free(self._tmp.keys)
        PyMem_Free(self._occ)
        PyMem_Free(self._sraw)
        PyMem_Free(self._raw)
        PyMem_Free(self._fq)

    cdef void _release(self) noexcept:
        """Drop every pending event (the garbage collector breaking a cycle, or the end)."""
        cdef Py_ssize_t i, n = self._nslots
        if self._bk == NULL:
            return
        for i in range(GSE_NB):
            self._bk[i].head = -1
            self._bk[i].tail = -1
            self._bk[i].n = 0
        self._pool.used = 0
        self._pool.free = -1
        self._cur.i = 0
        self._cur.n = 0
        for i in range(GSE_NW):
            self._occ[i] = 0
        self._nring = 0
        self._n = 0
        self._nslots = 0
        self._free = -1
        gse_slots_clear(self._slot, n)
        gse_fifo_clear(self._fq, self._fh, self._fn, self._fcap)
        self._fh = 0
        self._fn = 0

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
        """Double the slots (slot numbers stay, pointers into them do not).  Grown in place
        by realloc, which moves a large block's pages (mremap) rather than copying them,
        so growing never holds the old and the new array at once."""
        cdef Py_ssize_t cap = self._scap * 2 if self._scap else 1024
        cdef Py_ssize_t old = <char*>self._slot - <char*>self._sraw
        cdef Py_ssize_t off
        cdef void* raw
        if cap > (1 << GSE_SLOT_BITS):
            raise OverflowError("event queue: more than %d events pending"
                                % (1 << GSE_SLOT_BITS))
        raw = PyMem_Realloc(self._sraw, cap * sizeof(gse_evslot_t) + 64)
        if raw == NULL:
            raise MemoryError()
        off = ((64 - (<uintptr_t>raw & 63)) & 63)      # the first 64-byte boundary
        if self._nslots and off != old:                # a new offset: slide the slots
            memmove(<char*>raw + off, <char*>raw + old,
                    self._nslots * sizeof(gse_evslot_t))
        self._sraw = raw
        self._slot = <gse_evslot_t*>(<char*>raw + off)
        self._scap = cap
        return 0

    cdef int _room(self, long long bucket) except -1:
        """Room for one more key where an event of ``bucket`` (not before the current
        one) goes: so that inserting it cannot fail."""
        if bucket == self._cb:
            return gse_keys_reserve(&self._cur, self._cur.n + 1)
        if bucket < self._cb + GSE_NB:
            return gse_pool_room(&self._pool)
        if self._n == self._cap:
            self._grow_heap()
        return 0

    cdef void _ring_insert(self, long long bucket, gse_evkey_t key) noexcept:
        """Into the current bucket's sorted keys, or appended to its bucket's (room made
        by ``_room``): neither reads a slot nor another event's key, however many
        events share the bucket (a sorted list of slots, before, was walked through
        cold slots for about half the events at k=16: a tenth of the run)."""
        cdef Py_ssize_t i
        self._nring += 1
        if bucket == self._cb:           # (rare: k=8, 263 of 1.1 M)
            gse_keys_insert(self._cur.keys, self._cur.i, self._cur.n, key)
            self._cur.n += 1
            return
        i = bucket & GSE_MASK
        gse_bucket_append(&self._pool, &self._bk[i], key)
        self._occ[i >> 6] |= 1ULL << (i & 63)

    cdef int _migrate(self) except -1:
        """Move the heap's events that the ring's horizon now reaches into the ring."""
        cdef long long limit = self._cb + GSE_NB
        cdef long long b
        cdef gse_evkey_t key
        while self._n:
            b = gse_time_of(self._heap[0]) >> GSE_SHIFT
            if b >= limit:
                break
            self._room(b)
            key = gse_heap_pop(self._heap, self._n)
            self._n -= 1
            self._ring_insert(b, key)
        return 0

    cdef int _rewind(self, long long b) except -1:
        """An event before the current bucket (after a stop at ``until``): everything
        goes back to the heap and the ring restarts at bucket ``b``."""
        cdef Py_ssize_t i, k, m
        while self._cap < self._n + self._nring:
            self._grow_heap()
        for i in range(GSE_NB):          # each bucket's keys copied after the heap's, then
            m = self._bk[i].n            # pushed where they are
            gse_bucket_drain(&self._pool, &self._bk[i], self._heap + self._n)
            for k in range(m):
                gse_heap_push(self._heap, self._n, self._heap[self._n])
                self._n += 1
        for k in range(self._cur.i, self._cur.n):
            gse_heap_push(self._heap, self._n, self._cur.keys[k])
            self._n += 1
        self._cur.i = self._cur.n = 0
        for i in range(GSE_NW):
            self._occ[i] = 0
        self._nring = 0
        self._cb = b
        return self._migrate()

    cdef int _settle(self) except -1:
        """Make the current bucket the first occupied one (its keys all run and some
        event is pending): that bucket's keys become the current ones, sorted."""
        cdef Py_ssize_t i = self._cb & GSE_MASK
        cdef Py_ssize_t j, w, k, found
        cdef unsigned long long word
        cdef gse_bucket_t* bk
        cdef gse_keys_t swap
        self._cur.i = self._cur.n = 0
        if self._nring == 0:             # nothing within the horizon: jump to the heap's first
            self._cb = gse_time_of(self._heap[0]) >> GSE_SHIFT
            return self._migrate()
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
        bk = &self._bk[found]            # its keys become the current ones
        gse_keys_reserve(&self._cur, bk.n)
        gse_keys_reserve(&self._tmp, bk.n)
        self._cb += (found - i) & GSE_MASK
        self._occ[found >> 6] &= ~(1ULL << (found & 63))
        self._cur.n = bk.n
        gse_bucket_drain(&self._pool, bk, self._cur.keys)
        if gse_keys_sort(self._cur.keys, self._cur.n, self._tmp.keys) != self._cur.keys:
            swap = self._cur             # sorted into the other array: it becomes _cur
            self._cur = self._tmp
            self._tmp = swap
            self._cur.i = swap.i
            self._cur.n = swap.n
        return self._migrate()

    cdef int _refuse(self, long long t) except -1:
        """An event that cannot be filed: before now, or past the sequence numbers."""
        if t < self.now:
            raise ValueError("event scheduled in the past: %d < now %d" % (t, self.now))
        raise OverflowError("event queue: more than %d events scheduled" % GSE_SEQ_LIMIT)

    cdef inline Py_ssize_t _take_slot(self) except -1:
        """A slot for an event: the free list's first, or a new one (grown if full)."""
        cdef Py_ssize_t slot = self._free
        if slot >= 0:
            self._free = self._slot[slot].next
            return slot
        if self._nslots == self._scap:
            self._grow_slots()
        self._nslots += 1
        return self._nslots - 1

    cdef inline void _file(self, long long bucket, gse_evkey_t key) noexcept:
        """A key into its bucket of the ring, or the heap if beyond the ring."""
        if bucket < self._cb + GSE_NB:
            self._ring_insert(bucket, key)
        else:
            gse_heap_push(self._heap, self._n, key)
            self._n += 1

    cdef int _fifo_flush(self) except -1:
        """The same-instant FIFO's events into the ring or the heap, each with its sequence
        number and a slot: its time is no longer the current one (a stop at ``until``
        before it) or the ring does not reach it (the run asked for its first event while
        the ring lags behind, after a stop).  Rare: a stop."""
        cdef long long bucket = self._ft >> GSE_SHIFT
        cdef Py_ssize_t slot
        cdef gse_evslot_t* sl
        cdef gse_fifo_ev_t* e
        while self._fn:
            if bucket < self._cb:
                self._rewind(bucket)
            self._room(bucket)
            slot = self._take_slot()
            e = &self._fq[self._fh]            # (nothing below raises)
            sl = &self._slot[slot]
            sl.fn = e.fn                       # the references, moved
            sl.a = e.a
            sl.b = e.b
            sl.handler = <int32_t>(e.sf & 3)
            e.fn = e.a = e.b = NULL
            self._file(bucket, gse_key(self._ft, e.sf >> 2, slot))
            self._fh = (self._fh + 1) & (self._fcap - 1)
            self._fn -= 1
        return 0

    cdef int _fifo_push(self, long long t, object fn, object a, object b,
                        PyObject* hint, int32_t handler) except -1:
        """``_schedule``'s event for the current time, into the same-instant FIFO (apart,
        so that ``_schedule`` stays small enough to be inlined)."""
        cdef gse_fifo_ev_t* e
        cdef int32_t flags
        if self._fn and self._ft != t:
            self._fifo_flush()
        if self._fn == self._fcap:
            gse_fifo_grow(&self._fq, &self._fh, self._fn, &self._fcap)
        self._ft = t                           # (nothing below raises)
        e = &self._fq[(self._fh + self._fn) & (self._fcap - 1)]
        gse_put(&e.fn, fn)
        flags = handler if handler >= 0 else GSE_EV_HANDLER if isinstance(fn, Handler) else 0
        if hint != NULL:
            e.a = hint
            flags |= GSE_EV_HINT
        else:
            gse_put(&e.a, a)
        gse_put(&e.b, b)
        self.seq += 1
        e.sf = (self.seq << 2) | flags
        self._fn += 1
        return 0

    cdef inline int _schedule(self, long long t, object fn, object a, object b,
                              PyObject* hint, int32_t handler) except -1:
        """File an event at ``t``: the checks, the ring's room, a slot from the free list,
        the key in its bucket or the heap.  ``at`` and ``at_hint`` differ only in how the
        first argument is kept: a reference to ``a``, or (``hint`` not NULL) the hint's
        pointer without one.  An event for the current time goes to the same-instant FIFO
        (the module's docstring says why the order is the same).  ``handler``: the flag,
        known (``at_fire``) or -1: ``isinstance`` (a walk of ``fn``'s type's MRO)."""
        cdef Py_ssize_t slot
        cdef gse_evslot_t* sl
        cdef long long bucket
        if t < self.now or self.seq + 1 >= GSE_SEQ_LIMIT:
            self._refuse(t)
        if t == self.now:
            return self._fifo_push(t, fn, a, b, hint, handler)
        bucket = t >> GSE_SHIFT
        if bucket < self._cb:
            self._rewind(bucket)
        if (bucket == self._cb or bucket >= self._cb + GSE_NB
                or (self._pool.free < 0 and self._pool.used == self._pool.cap)):
            self._room(bucket)           # (a chunk to take: the usual case, inline)
        slot = self._take_slot()               # (nothing below raises)
        sl = &self._slot[slot]
        gse_put(&sl.fn, fn)
        sl.handler = (handler if handler >= 0
                      else GSE_EV_HANDLER if isinstance(fn, Handler) else 0)
        if hint != NULL:
            sl.a = hint
            sl.handler |= GSE_EV_HINT
        else:
            gse_put(&sl.a, a)
        gse_put(&sl.b, b)
        self.seq += 1
        self._file(bucket, gse_key(t, self.seq, slot))
        return 0

    cpdef at(self, long long t, object fn, object a, object b):
        self._schedule(t, fn, a, b, NULL, -1)

    cdef int at_hint(self, long long t, object fn, PyObject* hint) except -1:
        """``at(t, fn, None, None)``, ``hint`` kept in the first argument without a
        reference (a write that would wait for a cold line): the run loop prefetches it an
        event ahead and hands the event None; it may be gone by then (never read).  NULL:
        None.  The pure build has no hints (``at(t, fn, None, None)``)."""
        return self._schedule(t, fn, None, None, hint, -1)

    cdef int at_fire(self, long long t, Handler fn, PyObject* hint) except -1:
        """``at_hint`` for a ``Handler`` typed by its caller: no ``isinstance`` per event
        (the pure build's callers schedule ``at(t, fn, None, None)``)."""
        return self._schedule(t, fn, None, None, hint, GSE_EV_HANDLER)

    def hint_at(self, long long t, fn, hint):
        """``at_hint`` from Python (the pure build's twin: ``at(t, fn, None, None)``)."""
        self.at_hint(t, fn, <PyObject*>hint)

    cpdef bint run(self, long long until=-1) except -1:
        """Run events in order; stop when none is left or the next is past ``until``.

        Returns True if the queue drained, False if it stopped at ``until``."""
        cdef Py_ssize_t n = 0
        cdef Py_ssize_t best
        cdef long long t
        cdef gse_evkey_t key
        cdef gse_evslot_t* sl
        cdef bint handler
        cdef gse_fifo_ev_t* e
        cdef object fn, a, b
        try:
            if self._fn:                       # scheduled for now from outside the run (or
                self._fifo_flush()             # left by an exception): into the ring, in order
            while self._nring or self._n:
                if self._cur.i == self._cur.n:
                    self._settle()
                key = self._cur.keys[self._cur.i]     # the smallest key
                t = gse_time_of(key)
                if until >= 0 and t > until:
                    self.now = until
                    return False
                self._cur.i += 1
                if self._cur.i < self._cur.n:
                    # the next event's first argument (mostly a packet arriving, whose
                    # first line, all that a hop reads of it, the event reads at once:
                    # gse_pktalloc.h), read from its slot, asked for an event ago; and
                    # the slot of the event after it
                    __builtin_prefetch(
                        self._slot[gse_slot_of(self._cur.keys[self._cur.i])].a)
                    if self._cur.i + 1 < self._cur.n:
                        __builtin_prefetch(
                            &self._slot[gse_slot_of(self._cur.keys[self._cur.i + 1])])
                best = gse_slot_of(key)
                sl = &self._slot[best]
                self._nring -= 1
                fn = gse_take(&sl.fn)          # the slot's references, moved
                if sl.handler & GSE_EV_HINT:
                    sl.a = NULL                # a hint (at_hint), not a reference
                    a = None
                else:
                    a = gse_take(&sl.a)
                b = gse_take(&sl.b)
                handler = sl.handler & GSE_EV_HANDLER
                sl.next = self._free           # free before the event may reuse it
                self._free = best
                self.now = t
                n += 1
                if handler:
                    (<Handler>fn).fire(a, b)
                else:
                    fn(a, b)
                if self._fn and not (self._cur.i < self._cur.n
                                     and gse_time_of(self._cur.keys[self._cur.i]) == self.now):
                    # the same-instant FIFO after the ring's last event at t (its events'
                    # events for t join it here, never the ring)
                    while self._fn:
                        e = &self._fq[self._fh]
                        self._fh = (self._fh + 1) & (self._fcap - 1)
                        self._fn -= 1
                        fn = gse_take(&e.fn)
                        if e.sf & GSE_EV_HINT:
                            e.a = NULL
                            a = None
                        else:
                            a = gse_take(&e.a)
                        b = gse_take(&e.b)
                        n += 1
                        if e.sf & GSE_EV_HANDLER:
                            (<Handler>fn).fire(a, b)
                        else:
                            fn(a, b)
            return True
        finally:
            self.events += n

    cpdef Py_ssize_t pending(self):
        return self._nring + self._n + self._fn

    cpdef bint due_now(self) noexcept:
        """Whether an event is pending at the current time: the head of the current
        time's bucket if the ring covers it (each bucket is sorted, and none holds an
        earlier event), else the heap's first."""
        cdef long long d = (self.now >> GSE_SHIFT) - self._cb
        cdef int32_t c
        cdef Py_ssize_t k
        if self._fn and self._ft == self.now:
            return True
        if d < 0:                        # the ring starts later (after a stop)
            return False
        if d == 0:                       # (while running, always)
            return (self._cur.i < self._cur.n
                    and gse_time_of(self._cur.keys[self._cur.i]) == self.now)
        if d < GSE_NB:                   # after a stop: a bucket not yet sorted
            c = self._bk[(self.now >> GSE_SHIFT) & GSE_MASK].head
            while c >= 0:
                for k in range(self._pool.c[c].n):
                    if gse_time_of(self._pool.c[c].keys[k]) == self.now:
                        return True
                c = self._pool.c[c].next
            return False
        return self._n > 0 and gse_time_of(self._heap[0]) == self.now


# The slots' references, shown to the garbage collector: a network holds its queue and
# the queue holds the network's ports (pending events), a cycle to collect once both are
# unreachable.  Cython generates tp_traverse and tp_clear for the object attributes only.
cdef traverseproc _base_traverse = (<PyTypeObject*>EventQueue).tp_traverse
cdef inquiry _base_clear = (<PyTypeObject*>EventQueue).tp_clear


cdef int _traverse(PyObject* o, visitproc visit, void* arg) except -1:
    cdef EventQueue q = <EventQueue><object>o
    return (gse_slots_visit(q._slot, q._nslots, visit, arg)
            or gse_fifo_visit(q._fq, q._fh, q._fn, q._fcap, visit, arg)
            or _base_traverse(o, visit, arg))

cdef int _clear(object o) except -1:
    (<EventQueue>o)._release()
    return _base_clear(o)


(<PyTypeObject*>EventQueue).tp_traverse = _traverse
(<PyTypeObject*>EventQueue).tp_clear = _clear
