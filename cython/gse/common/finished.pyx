# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled twin of gse/common/finished.py: finished message ids in flat C storage.

The same answers as the reference (a dict of integer keys ``src << 32 | msg_id`` and two
growing arrays of finish times and keys): ``in``, ``has``, ``ids[(src, msg_id)]`` -> the
packet count of the latest ``add``, ``len``, iteration oldest first (a key added twice is
listed at each of its records while it is known, and forgotten with its older record), and
``add`` forgetting records older than ``hold_ps`` or beyond ``limit``, oldest first.

The storage holds no Python object.  Keys and packet counts sit in an open-addressing table
(linear probing, at most half full, deletion by shifting back: no tombstones), finish times
and keys in a FIFO of fixed-size chunks (4,080 bytes: with an allocator's 16-byte header,
one 4 KiB block).  A store grows its table by doubling (the outgrown ones together are
smaller than the last) and its FIFO by chunks that every store allocates alike, so when
all hosts' stores grow in step, as in a long collective where every message is held for the
whole run, the chunks one store lets go are the chunks another takes; the reference's dict
and arrays outgrew size after size in every host.  About 16 bytes per record and 16 to 32
per key, where the reference took about 90 (a boxed key, a dict entry, two array slots).
"""

cimport cython
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memset

DEF FIN_CHUNK = 254
DEF FIRST_SLOTS = 8
DEF FIRST_SHIFT = 61          # 64 - log2(FIRST_SLOTS)
cdef uint64_t GOLDEN = 0x9E3779B97F4A7C15ULL
cdef long long MASK32 = 0xFFFFFFFF


cdef inline uint64_t _home(uint64_t key, int shift) nogil:
    return (key * GOLDEN) >> shift


@cython.final
cdef class FinishedIds:
    """``(src, msg_id) in ids``, ``ids[(src, msg_id)]`` -> packet count, ``len``, iteration
    (oldest first, as tuples); ``add`` remembers one and forgets what is too old or too
    many."""

    def __cinit__(self, long long hold_ps, long long limit):
        self._slots = <fin_slot*>PyMem_Malloc(FIRST_SLOTS * sizeof(fin_slot))
        if self._slots == NULL:
            raise MemoryError()
        memset(self._slots, 0xFF, FIRST_SLOTS * sizeof(fin_slot))   # npkts -1: empty
        self._mask = FIRST_SLOTS - 1
        self._shift = FIRST_SHIFT
        self.hold_ps = hold_ps
        self.limit = limit

    def __dealloc__(self):
        cdef fin_chunk* c = self._head
        cdef fin_chunk* nxt
        while c != NULL:
            nxt = c.next
            PyMem_Free(c)
            c = nxt
        PyMem_Free(self._spare)
        PyMem_Free(self._slots)

    cdef Py_ssize_t _find(self, uint64_t key):
        cdef uint64_t i = _home(key, self._shift)
        cdef fin_slot* s
        while True:
            s = &self._slots[i]
            if s.npkts < 0:
                return -1
            if s.key == key:
                return <Py_ssize_t>i
            i = (i + 1) & self._mask

    cdef int _grow(self) except -1:
        cdef uint64_t n = self._mask + 1, j, i, mask = 2 * n - 1
        cdef int shift = self._shift - 1
        cdef fin_slot* old = self._slots
        cdef fin_slot* slots = <fin_slot*>PyMem_Malloc(2 * n * sizeof(fin_slot))
        if slots == NULL:
            raise MemoryError()
        memset(slots, 0xFF, 2 * n * sizeof(fin_slot))
        for j in range(n):
            if old[j].npkts >= 0:
                i = _home(old[j].key, shift)
                while slots[i].npkts >= 0:
                    i = (i + 1) & mask
                slots[i] = old[j]
        self._slots = slots
        self._mask = mask
        self._shift = shift
        PyMem_Free(old)
        return 0

    cdef void _delete(self, uint64_t key):
        cdef Py_ssize_t found = self._find(key)
        cdef uint64_t i, j, k, mask = self._mask
        cdef fin_slot* slots = self._slots
        if found < 0:
            return
        i = <uint64_t>found
        j = i
        while True:               # shift back the entries whose probe passed through i
            j = (j + 1) & mask
            if slots[j].npkts < 0:
                break
            k = _home(slots[j].key, self._shift)
            if ((j - k) & mask) >= ((j - i) & mask):
                slots[i] = slots[j]
                i = j
        slots[i].npkts = -1
        self._count -= 1

    cdef int _put(self, uint64_t key, int64_t npkts) except -1:
        # room made beforehand (add): never fails
        cdef uint64_t i = _home(key, self._shift)
        cdef fin_slot* s
        while True:
            s = &self._slots[i]
            if s.npkts < 0:
                s.key = key
                s.npkts = npkts
                self._count += 1
                return 0
            if s.key == key:
                s.npkts = npkts
                return 0
            i = (i + 1) & self._mask

    cdef int _push(self, int64_t t, uint64_t key) except -1:
        cdef fin_chunk* c
        if self._tail == NULL or self._ti == FIN_CHUNK:
            c = self._spare
            if c != NULL:
                self._spare = NULL
            else:
                c = <fin_chunk*>PyMem_Malloc(sizeof(fin_chunk))
                if c == NULL:
                    raise MemoryError()
                self.chunks += 1
            c.next = NULL
            if self._tail == NULL:
                self._head = c
                self._hi = 0
            else:
                self._tail.next = c
            self._tail = c
            self._ti = 0
        self._tail.recs[self._ti].t = t
        self._tail.recs[self._ti].key = key
        self._ti += 1
        self.records += 1
        return 0

    cpdef add(self, long long src, long long msg_id, long long npkts, long long now):
        cdef uint64_t key
        cdef long long oldest
        cdef fin_rec* rec
        cdef fin_chunk* old
        if npkts < 0:
            raise ValueError("FinishedIds.add: packet count %d of (%d, %d) is negative"
                             % (npkts, src, msg_id))
        if 0 <= src <= MASK32 and 0 <= msg_id <= MASK32:
            key = (<uint64_t>src << 32) | <uint64_t>msg_id
        else:                     # as the reference: a key beyond 64 bits fails here
            key = (<object>src << 32) | msg_id
        if 2 * (self._count + 1) > <Py_ssize_t>(self._mask + 1):
            self._grow()
        self._push(now, key)      # the last step that can fail: nothing changed if it did
        self._put(key, npkts)
        oldest = now - self.hold_ps
        while self.records > 0:
            rec = &self._head.recs[self._hi]
            if not (rec.t <= oldest or self.records > self.limit):
                break
            self._delete(rec.key)
            self._hi += 1
            self.records -= 1
            if self._head == self._tail:
                if self._hi == self._ti:      # empty: the chunk is reused from its start
                    self._hi = 0
                    self._ti = 0
            elif self._hi == FIN_CHUNK:
                old = self._head
                self._head = old.next
                self._hi = 0
                if self._spare == NULL:
                    self._spare = old
                else:
                    PyMem_Free(old)
                    self.chunks -= 1

    cpdef bint has(self, long long src, long long msg_id) except -1:
        """``(src, msg_id) in ids`` without the tuple: what a receiver asks of a message's
        first packet (the key of two 32-bit fields computed in C; any other pair is asked
        as ``in`` does)."""
        if 0 <= src <= MASK32 and 0 <= msg_id <= MASK32:
            return self._find((<uint64_t>src << 32) | <uint64_t>msg_id) >= 0
        return (src, msg_id) in self

    def __len__(self):
        return self._count

    def __contains__(self, src_msg):
        key = (src_msg[0] << 32) | src_msg[1]
        if not 0 <= key <= 0xFFFFFFFFFFFFFFFF:
            return False
        return self._find(<uint64_t>key) >= 0

    def __getitem__(self, src_msg):
        key = (src_msg[0] << 32) | src_msg[1]
        cdef Py_ssize_t i = self._find(<uint64_t>key) if 0 <= key <= 0xFFFFFFFFFFFFFFFF else -1
        if i < 0:
            raise KeyError(key)
        return self._slots[i].npkts

    def __iter__(self):
        cdef list out = []
        cdef fin_chunk* c = self._head
        cdef int i = self._hi, end
        while c != NULL:
            end = self._ti if c == self._tail else FIN_CHUNK
            while i < end:
                if self._find(c.recs[i].key) >= 0:
                    out.append((c.recs[i].key >> 32, c.recs[i].key & 0xFFFFFFFF))
                i += 1
            if c == self._tail:
                break
            c = c.next
            i = 0
        return iter(out)

    def nbytes(self):
        """Bytes of C storage held: the table and the chunks."""
        return (self._mask + 1) * sizeof(fin_slot) + self.chunks * sizeof(fin_chunk)
