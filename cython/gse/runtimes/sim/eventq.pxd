# The compiled event queue (cython/gse/runtimes/sim/eventq.pyx), twin of gse/runtimes/sim/eventq.py.

from cpython.ref cimport PyObject
from libc.stdint cimport int32_t


# the key type and the inline heap: cython/gse/runtimes/sim/gse_eventq.h
cdef extern from "gse_eventq.h":
    ctypedef unsigned long long gse_evkey_t    # an integer type to Cython
    ctypedef struct gse_evslot_t:
        PyObject* fn                           # owned (see eventq.pyx), NULL if free
        PyObject* a
        PyObject* b
        int32_t next
        int32_t handler
    ctypedef struct gse_chunk_t:
        int32_t next
        int32_t n
        gse_evkey_t keys[15]
    ctypedef struct gse_bucket_t:
        int32_t head
        int32_t tail
        int32_t n
    ctypedef struct gse_pool_t:
        void* raw
        gse_chunk_t* c
        int32_t used
        int32_t cap
        int32_t free
    int GSE_EV_HANDLER
    int GSE_EV_HINT
    ctypedef struct gse_fifo_ev_t:
        PyObject* fn
        PyObject* a
        PyObject* b
        long long sf
    ctypedef struct gse_keys_t:
        gse_evkey_t* keys
        Py_ssize_t i
        Py_ssize_t n
        Py_ssize_t cap


# the base of the objects the queue calls as fire(a, b) (gse/common/handler.py; here, so
# that the modules that cimport it from here find it)
from gse.common.handler cimport Handler


cdef class EventQueue:
    # the ring: one bucket per 2^SHIFT ps for NB buckets from the current one, each the
    # keys of its events in the order scheduled (chunks from _pool); an occupancy bitmap
    # finds the next non-empty one; the current bucket's keys are in _cur, sorted (its
    # ring entry is empty)
    cdef gse_bucket_t* _bk
    cdef gse_pool_t _pool
    cdef gse_keys_t _cur
    cdef gse_keys_t _tmp         # room for sorting the current bucket's keys
    cdef unsigned long long* _occ
    cdef long long _cb           # absolute number (time >> SHIFT) of the current bucket
    cdef Py_ssize_t _nring
    # the slots: 32 bytes per pending event (gse_eventq.h), reused through a free list;
    # as many as events were ever pending at once (doubling), never per time span
    cdef void* _sraw             # the allocation behind _slot
    cdef gse_evslot_t* _slot     # from a 64-byte boundary
    cdef Py_ssize_t _nslots      # slots ever used (the rest of the capacity is untouched)
    cdef Py_ssize_t _scap
    cdef int32_t _free           # first free slot, -1 if none
    cdef object _handler_type    # Handler (keeps the GC support Cython generates for it)
    # the overflow: events beyond the ring's horizon, in a 4-ary min-heap of keys
    cdef void* _raw              # the allocation behind _heap
    cdef gse_evkey_t* _heap      # &_heap[1] starts a 64-byte cache line
    cdef Py_ssize_t _n
    cdef Py_ssize_t _cap
    # the same-instant FIFO: events scheduled for the current time (``_ft``), in the order
    # scheduled, after every event of the ring or heap filed for that time (gse_eventq.h)
    cdef gse_fifo_ev_t* _fq
    cdef Py_ssize_t _fh          # its first entry
    cdef Py_ssize_t _fn          # entries held
    cdef Py_ssize_t _fcap        # a power of two (0: none allocated)
    cdef long long _ft           # the time of its entries
    cdef public long long seq
    cdef public long long now
    cdef public long long events

    cdef int _grow_heap(self) except -1
    cdef int _grow_slots(self) except -1
    cdef int _room(self, long long bucket) except -1
    cdef void _ring_insert(self, long long bucket, gse_evkey_t key) noexcept
    cdef int _migrate(self) except -1
    cdef int _rewind(self, long long b) except -1
    cdef int _settle(self) except -1
    cdef void _release(self) noexcept
    cdef int _refuse(self, long long t) except -1
    cdef inline Py_ssize_t _take_slot(self) except -1
    cdef inline void _file(self, long long bucket, gse_evkey_t key) noexcept
    cdef int _fifo_flush(self) except -1
    cdef int _fifo_push(self, long long t, object fn, object a, object b,
                        PyObject* hint, int32_t handler) except -1
    cdef inline int _schedule(self, long long t, object fn, object a, object b,
                              PyObject* hint, int32_t handler) except -1
    cpdef at(self, long long t, object fn, object a, object b)
    cdef int at_hint(self, long long t, object fn, PyObject* hint) except -1
    cdef int at_fire(self, long long t, Handler fn, PyObject* hint) except -1
    cpdef bint run(self, long long until=*) except -1
    cpdef Py_ssize_t pending(self)
    cpdef bint due_now(self) noexcept
