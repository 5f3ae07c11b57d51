/* The event keys and the 4-ary heap of the compiled event queue
   (cython/gse/runtimes/sim/eventq.pyx, the twin of gse/runtimes/sim/eventq.py): inline
   helpers, compiled into every module that cimports eventq.pxd. */
#ifndef GSE_EVENTQ_H
#define GSE_EVENTQ_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

/* One event as one unsigned 128-bit key: time in the high 64 bits, then the sequence
   number (38 bits), then the slot holding its (fn, a, b) (26 bits).  Ordering keys
   orders events by (time, seq); the slot bits never decide, since seq is unique. */
typedef unsigned __int128 gse_evkey_t;

#define GSE_SLOT_BITS 26
#define GSE_SEQ_LIMIT (1LL << (64 - GSE_SLOT_BITS))
#define GSE_SHIFT 10                      /* bucket width: 1,024 ps */
#define GSE_NB 4096                       /* ring: 4.2 us ahead */
#define GSE_MASK (GSE_NB - 1)
#define GSE_NW (GSE_NB / 64)

/* One pending event's callable and arguments in 32 bytes, two slots a cache line (the
   slots start on a 64-byte boundary): popping an event reads its key from the current
   bucket's heap (below) and then this one line; a free slot links to the next free one
   through ``next``.  The queue owns a reference to each non-NULL object (visited by its
   tp_traverse: cython/gse/runtimes/sim/eventq.pyx). */
typedef struct {
    PyObject* fn;              /* NULL while the slot is free */
    PyObject* a;
    PyObject* b;
    int32_t next;              /* next free slot (-1: none) */
    int32_t handler;           /* GSE_EV_HANDLER | GSE_EV_HINT */
} gse_evslot_t;
/* fn is a Handler, run through its C method fire */
#define GSE_EV_HANDLER 1
/* a is a hint, not a reference (EventQueue.at_hint): an object to prefetch an event
   ahead, maybe gone by then (a prefetch does not fault); the event gets None */
#define GSE_EV_HINT 2
_Static_assert(sizeof(gse_evslot_t) == 32, "an event slot is 32 bytes");

/* The keys of the calendar ring's buckets not yet reached, in the order they were
   scheduled, in chunks of 15 keys (256 bytes) from one pool, linked per bucket: scheduling
   appends to its bucket's last chunk, touching neither the slots nor the other keys;
   when the ring reaches a bucket its keys are copied into the current bucket's array and
   its chunks go back to the pool (reused first: still in the caches).  Memory follows
   the events pending, in whatever buckets (a run in lockstep puts thousands in some
   and none in most), not the fullest bucket times the ring. */
#define GSE_CHUNK_KEYS 15
typedef struct {
    int32_t next;              /* next chunk of its bucket, or next free chunk; -1: none */
    int32_t n;                 /* keys held */
    int64_t pad_;
    gse_evkey_t keys[GSE_CHUNK_KEYS];
} gse_chunk_t;
_Static_assert(sizeof(gse_chunk_t) == 256, "a chunk of keys is 256 bytes");

typedef struct {
    int32_t head;              /* first and last chunk, -1: empty */
    int32_t tail;
    int32_t n;                 /* keys held */
    int32_t pad_;
} gse_bucket_t;

typedef struct {
    void* raw;                 /* the allocation behind c */
    gse_chunk_t* c;            /* from a 64-byte boundary */
    int32_t used;              /* chunks ever used (the rest of cap untouched) */
    int32_t cap;
    int32_t free;              /* first free chunk, -1: none */
} gse_pool_t;

/* A growable array of keys: the current bucket's, sorted (keys[i..n) still to run). */
typedef struct {
    gse_evkey_t* keys;
    Py_ssize_t i;
    Py_ssize_t n;
    Py_ssize_t cap;
} gse_keys_t;

/* Room in p for one chunk more (doubled when full: realloc, then the chunks slid to the
   first 64-byte boundary if the block moved to another offset). */
static inline int gse_pool_room(gse_pool_t* p) {
    int32_t cap;
    size_t old, off;
    void* raw;
    if (p->free >= 0 || p->used < p->cap) return 0;
    if (p->cap >= (1 << 26)) {
        PyErr_SetString(PyExc_OverflowError, "event queue: too many events pending");
        return -1;
    }
    cap = p->cap ? p->cap * 2 : 64;
    old = p->raw ? (size_t)((char*)p->c - (char*)p->raw) : 0;
    raw = PyMem_Realloc(p->raw, (size_t)cap * sizeof(gse_chunk_t) + 64);
    if (raw == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    off = (64 - ((uintptr_t)raw & 63)) & 63;
    if (p->used && off != old)
        memmove((char*)raw + off, (char*)raw + old, (size_t)p->used * sizeof(gse_chunk_t));
    p->raw = raw;
    p->c = (gse_chunk_t*)((char*)raw + off);
    p->cap = cap;
    return 0;
}

/* A chunk from the pool (room made by gse_pool_room), empty. */
static inline int32_t gse_pool_take(gse_pool_t* p) {
    int32_t k = p->free;
    if (k >= 0)
        p->free = p->c[k].next;
    else
        k = p->used++;
    p->c[k].next = -1;
    p->c[k].n = 0;
    return k;
}

/* Append key to bucket b (room for a chunk made if its last one may be full). */
static inline void gse_bucket_append(gse_pool_t* p, gse_bucket_t* b, gse_evkey_t key) {
    gse_chunk_t* t;
    int32_t k;
    if (b->tail < 0) {
        k = gse_pool_take(p);
        b->head = b->tail = k;
    } else if (p->c[b->tail].n == GSE_CHUNK_KEYS) {
        k = gse_pool_take(p);
        p->c[b->tail].next = k;
        b->tail = k;
    }
    t = &p->c[b->tail];
    t->keys[t->n++] = key;
    b->n++;
}

/* Copy bucket b's keys to dst (room for b->n of them), its chunks back to the pool. */
static inline void gse_bucket_drain(gse_pool_t* p, gse_bucket_t* b, gse_evkey_t* dst) {
    int32_t k = b->head, nx, j;
    gse_chunk_t* c;
    while (k >= 0) {
        c = &p->c[k];
        for (j = 0; j < c->n; j++)
            dst[j] = c->keys[j];
        dst += c->n;
        nx = c->next;
        c->next = p->free;
        p->free = k;
        k = nx;
    }
    b->head = b->tail = -1;
    b->n = 0;
}

/* Merge the sorted a[0..na) and b[0..nb) into out. */
static inline void gse_keys_merge(const gse_evkey_t* a, Py_ssize_t na, const gse_evkey_t* b,
                                  Py_ssize_t nb, gse_evkey_t* out) {
    Py_ssize_t i = 0, j = 0;
    while (i < na && j < nb)
        *out++ = (b[j] < a[i]) ? b[j++] : a[i++];
    while (i < na)
        *out++ = a[i++];
    while (j < nb)
        *out++ = b[j++];
}

/* Sort the m keys of k, tmp holding room for m: returns k or tmp, whichever holds them
   sorted.  A bucket's keys are a few runs in order (the streams that scheduled them: a
   delivery a link delay ahead, a port's wake-up a serialisation ahead), so a natural
   merge sort: a pass merges pairs of neighbouring runs; keys already in order (k=8: three
   buckets in four) cost one comparison each. */
static inline gse_evkey_t* gse_keys_sort(gse_evkey_t* k, Py_ssize_t m, gse_evkey_t* tmp) {
    gse_evkey_t *src = k, *dst = tmp, *sw;
    Py_ssize_t i, mid, end;
    for (;;) {
        i = 0;
        while (i < m) {
            mid = i + 1;
            while (mid < m && !(src[mid] < src[mid - 1]))
                mid++;
            if (mid >= m) {
                if (i == 0)
                    return src;                  /* one run: sorted */
                memcpy(dst + i, src + i, (size_t)(m - i) * sizeof(gse_evkey_t));
                break;
            }
            end = mid + 1;
            while (end < m && !(src[end] < src[end - 1]))
                end++;
            gse_keys_merge(src + i, mid - i, src + mid, end - mid, dst + i);
            i = end;
        }
        sw = src;
        src = dst;
        dst = sw;
    }
}

/* Into the sorted keys k[lo..n) (room for one more): from the end, as a later-scheduled
   event mostly comes after the others. */
static inline void gse_keys_insert(gse_evkey_t* k, Py_ssize_t lo, Py_ssize_t n, gse_evkey_t key) {
    Py_ssize_t j = n;
    while (j > lo && key < k[j - 1]) {
        k[j] = k[j - 1];
        j--;
    }
    k[j] = key;
}

/* Room for need keys in a (doubled, at least 64). */
static inline int gse_keys_reserve(gse_keys_t* a, Py_ssize_t need) {
    Py_ssize_t cap;
    void* q;
    if (need <= a->cap) return 0;
    cap = a->cap ? a->cap : 64;
    while (cap < need) cap *= 2;
    q = PyMem_Realloc(a->keys, (size_t)cap * sizeof(gse_evkey_t));
    if (q == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    a->keys = (gse_evkey_t*)q;
    a->cap = cap;
    return 0;
}

/* Hand the slot's reference to the caller (a Cython ``object`` result owns it). */
static inline PyObject* gse_take(PyObject** p) {
    PyObject* o = *p;
    *p = NULL;
    return o;
}

/* Store a new reference to ``o`` in the slot field ``p`` (empty before). */
static inline void gse_put(PyObject** p, PyObject* o) {
    Py_INCREF(o);
    *p = o;
}

/* Drop the references of slots [0, n). */
static inline void gse_slots_clear(gse_evslot_t* s, Py_ssize_t n) {
    Py_ssize_t i;
    for (i = 0; i < n; i++) {
        Py_CLEAR(s[i].fn);
        if (s[i].handler & GSE_EV_HINT)
            s[i].a = NULL;
        else
            Py_CLEAR(s[i].a);
        Py_CLEAR(s[i].b);
    }
}

/* Visit the objects the slots [0, n) hold, for the garbage collector. */
static inline int gse_slots_visit(gse_evslot_t* s, Py_ssize_t n, visitproc visit, void* arg) {
    Py_ssize_t i;
    for (i = 0; i < n; i++) {
        Py_VISIT(s[i].fn);
        if (!(s[i].handler & GSE_EV_HINT))
            Py_VISIT(s[i].a);
        Py_VISIT(s[i].b);
    }
    return 0;
}

/* The same-instant FIFO (EventQueue._fq): events scheduled for the current time, in the
   order scheduled, each its callable and arguments (references owned as a slot's) and
   its sequence number, shifted left by 2 over the slot's GSE_EV_ flags; no slot, no key
   in a bucket.  A power-of-two ring: entry (head + i) & (cap - 1) is the i-th. */
typedef struct {
    PyObject* fn;
    PyObject* a;
    PyObject* b;
    long long sf;              /* seq << 2 | GSE_EV_HANDLER | GSE_EV_HINT */
} gse_fifo_ev_t;
_Static_assert(sizeof(gse_fifo_ev_t) == 32, "a FIFO entry is 32 bytes");

/* Room for one more entry in the FIFO q[cap] holding n from head (doubled, at least
   256, its entries unwrapped to start at 0: *head becomes 0). */
static inline int gse_fifo_grow(gse_fifo_ev_t** q, Py_ssize_t* head, Py_ssize_t n,
                                Py_ssize_t* cap) {
    Py_ssize_t c = *cap ? *cap * 2 : 256, i;
    gse_fifo_ev_t* nq = (gse_fifo_ev_t*)PyMem_Malloc((size_t)c * sizeof(gse_fifo_ev_t));
    if (nq == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (i = 0; i < n; i++)
        nq[i] = (*q)[(*head + i) & (*cap - 1)];
    PyMem_Free(*q);
    *q = nq;
    *head = 0;
    *cap = c;
    return 0;
}

/* Drop the references of the n entries from head (the FIFO emptied). */
static inline void gse_fifo_clear(gse_fifo_ev_t* q, Py_ssize_t head, Py_ssize_t n,
                                  Py_ssize_t cap) {
    Py_ssize_t i;
    gse_fifo_ev_t* e;
    for (i = 0; i < n; i++) {
        e = &q[(head + i) & (cap - 1)];
        Py_CLEAR(e->fn);
        if (e->sf & GSE_EV_HINT)
            e->a = NULL;
        else
            Py_CLEAR(e->a);
        Py_CLEAR(e->b);
    }
}

/* Visit the objects the n entries from head hold, for the garbage collector. */
static inline int gse_fifo_visit(gse_fifo_ev_t* q, Py_ssize_t head, Py_ssize_t n,
                                 Py_ssize_t cap, visitproc visit, void* arg) {
    Py_ssize_t i;
    gse_fifo_ev_t* e;
    for (i = 0; i < n; i++) {
        e = &q[(head + i) & (cap - 1)];
        Py_VISIT(e->fn);
        if (!(e->sf & GSE_EV_HINT))
            Py_VISIT(e->a);
        Py_VISIT(e->b);
    }
    return 0;
}

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

/* Remove the smallest of n > 0 keys and return it: the hole goes down to a leaf
   along the smaller children (chosen without branches), the last key rises. */
static inline gse_evkey_t gse_heap_pop(gse_evkey_t* h, Py_ssize_t n) {
    gse_evkey_t top = h[0], last;
    Py_ssize_t i = 0, c = 1, a, b, best, p, k;
    n -= 1;
    if (n == 0) return top;
    last = h[n];
    while (c + 3 < n) {
        a = c + (h[c + 1] < h[c]);
        b = c + 2 + (h[c + 3] < h[c + 2]);
        best = (h[b] < h[a]) ? b : a;
        h[i] = h[best];
        i = best;
        c = 4 * i + 1;
    }
    if (c < n) {
        best = c;
        for (k = c + 1; k < n; k++)
            if (h[k] < h[best]) best = k;
        h[i] = h[best];
        i = best;
    }
    while (i > 0) {
        p = (i - 1) >> 2;
        if (h[p] < last) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = last;
    return top;
}

#endif
