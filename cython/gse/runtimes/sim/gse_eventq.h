/* The event keys and the 4-ary heap of the compiled event queue
   (cython/gse/runtimes/sim/eventq.pyx, the twin of gse/runtimes/sim/eventq.py): inline
   helpers, compiled into every module that cimports eventq.pxd. */
#ifndef GSE_EVENTQ_H
#define GSE_EVENTQ_H

#include <Python.h>
#include <stdint.h>

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

/* One pending event's whole state in 48 bytes: popping an event reads its key, its
   callable and arguments and the next slot of its bucket from one place (one cache line,
   or two adjacent ones for half the slots), and a free slot links to the next free one
   through the same field.  48 bytes, not a padded 64, so the slots take no more memory
   than the separate arrays and lists they replace.  The queue owns a reference to each
   non-NULL object (visited by its tp_traverse: cython/gse/runtimes/sim/eventq.pyx). */
typedef struct {
    gse_evkey_t key;           /* while in the ring: (time, seq, this slot) */
    PyObject* fn;              /* NULL while the slot is free */
    PyObject* a;
    PyObject* b;
    int32_t next;              /* next slot of its bucket (-1: none), or next free slot */
    int32_t handler;           /* 1: fn is a Handler, run through its C method fire */
} gse_evslot_t;
_Static_assert(sizeof(gse_evslot_t) == 48, "an event slot is 48 bytes");

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
        Py_CLEAR(s[i].a);
        Py_CLEAR(s[i].b);
    }
}

/* Visit the objects the slots [0, n) hold, for the garbage collector. */
static inline int gse_slots_visit(gse_evslot_t* s, Py_ssize_t n, visitproc visit, void* arg) {
    Py_ssize_t i;
    for (i = 0; i < n; i++) {
        Py_VISIT(s[i].fn);
        Py_VISIT(s[i].a);
        Py_VISIT(s[i].b);
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
