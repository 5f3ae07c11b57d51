# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled twin of gse/common/finished.py: finished message ids in flat C storage.

The same answers as the reference (a dict of integer keys ``src << 32 | msg_id`` and two
growing arrays of finish times and keys): ``in``, ``has``, ``ids[(src, msg_id)]`` -> the
packet count of the latest ``add``, ``len``, iteration oldest first (a key added twice is
listed at each of its records while it is known, and forgotten with its older record), and
``add`` forgetting records older than ``hold_ps`` or beyond ``limit``, oldest first.

The storage holds no Python object, in blocks of 4,080 bytes (with an allocator's 16-byte
header, 4 KiB) but for a store's first few (240 bytes, doubled up to a full block: most
stores hold a few ids).  Keys and packet counts sit in a table of pages (extendible
hashing: a directory of 2 ** depth page pointers picked by the hash's top bits; in a page,
linear probing from the hash's low bits, deletion by shifting back, no tombstones; a full
page 0.63 full splits in two by the next bit, doubling the directory if needed), finish
times and keys in a FIFO of chunks.  No full-size table is ever outgrown: when every
host's store grows in step, as in a long collective where every message is held for the
whole run, no store leaves an outgrown table behind (the reference's dict and arrays left
one of every size on the allocator's free lists), and the chunks one store lets go are
those another takes.  About 16 bytes per record and 30 to 50 per key (a page 0.3 to 0.6
full), where the reference took about 90 (a boxed key, a dict entry, two array slots).
"""

cimport cython
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy, memset

DEF FIN_FULL = 254            # slots of a full page, records of a full chunk (4,080 bytes)
DEF FIN_FIRST = 14            # ... of the first page and chunk (240 bytes)
cdef uint64_t GOLDEN = 0x9E3779B97F4A7C15ULL
cdef long long MASK32 = 0xFFFFFFFF


cdef inline uint64_t _pos(uint64_t h, int n) noexcept nogil:
    # a key's home slot among n, from its hash's low half (mixed with the high)
    return (((h ^ (h >> 32)) & 0xFFFFFFFFULL) * <uint64_t>n) >> 32


cdef inline bint _full(fin_page* p) noexcept nogil:
    return 8 * p.count >= 5 * p.nslots        # 0.63 full: grow or split before the next


cdef inline int _grown(int n) noexcept nogil:
    # 14, 30, 62, 126, 254: 16 + 16 n bytes, a 16-byte header short of a power of two
    return 2 * n + 2 if n < FIN_FULL // 2 else FIN_FULL


cdef fin_page* _new_page(int depth, int nslots) noexcept:
    cdef fin_page* p = <fin_page*>PyMem_Malloc(16 + nslots * sizeof(fin_slot))
    if p != NULL:
        memset(p.slots, 0xFF, nslots * sizeof(fin_slot))      # npkts -1: empty
        p.depth = depth
        p.count = 0
        p.nslots = nslots
    return p


cdef inline void _insert(fin_page* p, uint64_t h, uint64_t key, int64_t npkts) noexcept nogil:
    cdef int i = <int>_pos(h, p.nslots)
    while p.slots[i].npkts >= 0:
        i = i + 1 if i + 1 < p.nslots else 0
    p.slots[i].key = key
    p.slots[i].npkts = npkts
    p.count += 1


@cython.final
cdef class FinishedIds:
    """``(src, msg_id) in ids``, ``ids[(src, msg_id)]`` -> packet count, ``len``, iteration
    (oldest first, as tuples); ``add`` remembers one and forgets what is too old or too
    many."""

    def __cinit__(self, long long hold_ps, long long limit):
        self.hold_ps = hold_ps
        self.limit = limit

    def __dealloc__(self):
        cdef fin_chunk* c = self._head
        cdef fin_chunk* nxt
        cdef Py_ssize_t i
        cdef fin_page* p
        while c != NULL:
            nxt = c.next
            PyMem_Free(c)
            c = nxt
        PyMem_Free(self._spare)
        if self._dir != NULL:
            for i in range(<Py_ssize_t>1 << self._depth):
                p = self._dir[i]          # a page of depth d fills 2 ** (depth - d) entries
                if i & ((<Py_ssize_t>1 << (self._depth - p.depth)) - 1) == 0:
                    PyMem_Free(p)
            PyMem_Free(self._dir)

    cdef fin_page* _page(self, uint64_t h):
        return self._dir[(h >> 1) >> (63 - self._depth)]   # the top _depth bits (none: 0)

    cdef fin_slot* _find(self, uint64_t key):
        cdef uint64_t h = key * GOLDEN
        cdef fin_page* p
        cdef int i
        cdef fin_slot* s
        if self._dir == NULL:
            return NULL
        p = self._page(h)
        i = <int>_pos(h, p.nslots)
        while True:
            s = &p.slots[i]
            if s.npkts < 0:
                return NULL
            if s.key == key:
                return s
            i = i + 1 if i + 1 < p.nslots else 0

    cdef int _room(self, uint64_t key) except -1:
        """Room for ``key`` in its page (grown or split until there is), before anything
        changes."""
        cdef fin_page* p
        cdef fin_page** d
        if self._dir == NULL:
            d = <fin_page**>PyMem_Malloc(sizeof(fin_page*))
            if d == NULL:
                raise MemoryError()
            p = _new_page(0, FIN_FIRST)
            if p == NULL:
                PyMem_Free(d)
                raise MemoryError()
            d[0] = p
            self._dir = d
            self.pages = 1
            self._bytes += 16 + FIN_FIRST * sizeof(fin_slot) + sizeof(fin_page*)
            return 0
        while True:
            p = self._page(key * GOLDEN)
            if not _full(p) or self._find(key) != NULL:
                return 0
            self._split(p)

    cdef int _split(self, fin_page* p) except -1:
        """A full page splits in two by the next bit of its keys' hashes; the first page,
        while alone and smaller than a full one, is replaced by a larger one instead."""
        cdef Py_ssize_t i, n = <Py_ssize_t>1 << self._depth
        cdef int d = p.depth, g = self._depth, m = p.nslots
        cdef fin_page** nd
        cdef fin_page* q
        cdef fin_page* t
        cdef fin_slot old[FIN_FULL]
        cdef uint64_t h
        if m < FIN_FULL:
            q = _new_page(0, _grown(m))
            if q == NULL:
                raise MemoryError()
            for i in range(m):
                if p.slots[i].npkts >= 0:
                    _insert(q, p.slots[i].key * GOLDEN, p.slots[i].key, p.slots[i].npkts)
            self._dir[0] = q
            self._bytes += (q.nslots - m) * sizeof(fin_slot)
            PyMem_Free(p)
            return 0
        if d == g:                # the directory doubles: each entry twice
            if g >= 40:
                raise MemoryError("FinishedIds: %d ids whose hashes share 40 bits" % p.count)
            nd = <fin_page**>PyMem_Malloc(2 * n * sizeof(fin_page*))
            if nd == NULL:
                raise MemoryError()
            for i in range(n):
                nd[2 * i] = nd[2 * i + 1] = self._dir[i]
            PyMem_Free(self._dir)
            self._dir = nd
            self._bytes += n * sizeof(fin_page*)
            self._depth = g = g + 1
            n *= 2
        q = _new_page(d + 1, FIN_FULL)
        if q == NULL:
            raise MemoryError()
        self.pages += 1
        self._bytes += 16 + FIN_FULL * sizeof(fin_slot)
        memcpy(old, p.slots, sizeof(old))
        memset(p.slots, 0xFF, sizeof(old))
        p.count = 0
        p.depth = d + 1
        for i in range(FIN_FULL):     # by the next bit of their hash, to p or q
            if old[i].npkts >= 0:
                h = old[i].key * GOLDEN
                t = q if (h >> (63 - d)) & 1 else p
                _insert(t, h, old[i].key, old[i].npkts)
        for i in range(n):            # p's entries whose index has that bit: q's
            if self._dir[i] == p and (i >> (g - 1 - d)) & 1:
                self._dir[i] = q
        return 0

    cdef void _delete(self, uint64_t key):
        cdef fin_slot* s = self._find(key)
        cdef fin_page* p
        cdef int i, j, k, m
        if s == NULL:
            return
        p = self._page(key * GOLDEN)
        m = p.nslots
        i = <int>(s - p.slots)
        j = i
        while True:               # shift back the entries whose probe passed through i
            j = j + 1 if j + 1 < m else 0
            if p.slots[j].npkts < 0:
                break
            k = <int>_pos(p.slots[j].key * GOLDEN, m)
            if (j - k + m) % m >= (j - i + m) % m:
                p.slots[i] = p.slots[j]
                i = j
        p.slots[i].npkts = -1
        p.count -= 1
        self._count -= 1

    cdef void _put(self, uint64_t key, int64_t npkts):
        # room made beforehand (_room): never fails
        cdef fin_slot* s = self._find(key)
        cdef uint64_t h = key * GOLDEN
        if s != NULL:
            s.npkts = npkts
            return
        _insert(self._page(h), h, key, npkts)
        self._count += 1

    cdef int _push(self, int64_t t, uint64_t key) except -1:
        cdef fin_chunk* c
        cdef int n
        if self._tail == NULL or self._ti == self._tail.nrecs:
            c = self._spare       # a full-size chunk, if any
            if c != NULL:
                self._spare = NULL
            else:
                n = FIN_FIRST if self._tail == NULL else _grown(self._tail.nrecs)
                c = <fin_chunk*>PyMem_Malloc(16 + n * sizeof(fin_rec))
                if c == NULL:
                    raise MemoryError()
                c.nrecs = n
                self.chunks += 1
                self._bytes += 16 + n * sizeof(fin_rec)
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
        self._room(key)
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
            elif self._hi == self._head.nrecs:
                old = self._head
                self._head = old.next
                self._hi = 0
                if self._spare == NULL and old.nrecs == FIN_FULL:
                    self._spare = old
                else:
                    self.chunks -= 1
                    self._bytes -= 16 + old.nrecs * sizeof(fin_rec)
                    PyMem_Free(old)

    cpdef bint has(self, long long src, long long msg_id) except -1:
        """``(src, msg_id) in ids`` without the tuple: what a receiver asks of a message's
        first packet (the key of two 32-bit fields computed in C; any other pair is asked
        as ``in`` does)."""
        if 0 <= src <= MASK32 and 0 <= msg_id <= MASK32:
            return self._find((<uint64_t>src << 32) | <uint64_t>msg_id) != NULL
        return (src, msg_id) in self

    def __len__(self):
        return self._count

    def __contains__(self, src_msg):
        key = (src_msg[0] << 32) | src_msg[1]
        if not 0 <= key <= 0xFFFFFFFFFFFFFFFF:
            return False
        return self._find(<uint64_t>key) != NULL

    def __getitem__(self, src_msg):
        cdef fin_slot* s = NULL
        key = (src_msg[0] << 32) | src_msg[1]
        if 0 <= key <= 0xFFFFFFFFFFFFFFFF:
            s = self._find(<uint64_t>key)
        if s == NULL:
            raise KeyError(key)
        return s.npkts

    def __iter__(self):
        cdef list out = []
        cdef fin_chunk* c = self._head
        cdef int i = self._hi, end
        while c != NULL:
            end = self._ti if c == self._tail else c.nrecs
            while i < end:
                if self._find(c.recs[i].key) != NULL:
                    out.append((c.recs[i].key >> 32, c.recs[i].key & 0xFFFFFFFF))
                i += 1
            if c == self._tail:
                break
            c = c.next
            i = 0
        return iter(out)

    def nbytes(self):
        """Bytes of C storage held: the table's pages and directory, the FIFO's chunks."""
        return self._bytes
