# The compiled FinishedIds (cython/gse/common/finished.pyx), twin of gse/common/finished.py
# (a dict of integer keys and two growing arrays).  Flat C storage in blocks of 4 KiB (the
# first ones smaller): a table
# of (key, packet count) in pages (extendible hashing) and a FIFO of (finish time, key) in
# chunks.
cimport cython
from libc.stdint cimport int64_t, uint64_t


cdef struct fin_slot:           # one slot of a page: npkts < 0 when empty
    uint64_t key
    int64_t npkts

cdef struct fin_page:           # nslots slots (254 full), linear probing within
    int depth                   # the hash's top bits its keys share
    int count
    int nslots
    int pad
    fin_slot slots[254]         # allocated: nslots of them

cdef struct fin_rec:            # one finished message, in finish order
    int64_t t
    uint64_t key

cdef struct fin_chunk:          # nrecs records (254 full) and the next chunk
    fin_chunk* next
    int nrecs
    int pad
    fin_rec recs[254]           # allocated: nrecs of them


@cython.final
cdef class FinishedIds:
    cdef fin_page** _dir         # 2 ** _depth pages by the hash's top bits (NULL: no id yet)
    cdef int _depth
    cdef Py_ssize_t _count       # keys in the table (len)
    cdef fin_chunk* _head        # the FIFO: oldest record at _head.recs[_hi]
    cdef fin_chunk* _tail        # newest at _tail.recs[_ti - 1]
    cdef fin_chunk* _spare       # one emptied chunk kept for the next one needed
    cdef int _hi
    cdef int _ti
    cdef readonly Py_ssize_t records   # records in the FIFO (a key finished twice: twice)
    cdef readonly Py_ssize_t chunks    # chunks held, the spare too
    cdef readonly Py_ssize_t pages     # table pages held
    cdef Py_ssize_t _bytes             # C storage held (nbytes())
    cdef readonly long long hold_ps
    cdef readonly long long limit

    cdef fin_page* _page(self, uint64_t h)
    cdef fin_slot* _find(self, uint64_t key)
    cdef int _room(self, uint64_t key) except -1
    cdef int _split(self, fin_page* p) except -1
    cdef void _delete(self, uint64_t key)
    cdef void _put(self, uint64_t key, int64_t npkts)
    cdef int _push(self, int64_t t, uint64_t key) except -1
    cpdef add(self, long long src, long long msg_id, long long npkts, long long now)
    cpdef bint has(self, long long src, long long msg_id) except -1
