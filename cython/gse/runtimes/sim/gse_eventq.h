/* The event keys and the 4-ary heap of the compiled event queue
   (cython/gse/runtimes/sim/eventq.pyx, the twin of gse/runtimes/sim/eventq.py): inline
   helpers, compiled into every module that cimports eventq.pxd. */
#ifndef GSE_EVENTQ_H
#define GSE_EVENTQ_H

#include <Python.h>

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
