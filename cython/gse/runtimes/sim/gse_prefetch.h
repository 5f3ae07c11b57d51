/* Prefetch hints for the sampler's walk over ports (gse/runtimes/sim/sampler.py): the
 * next ports' objects are read a few iterations ahead, so their cache misses overlap
 * the work on the current one.  A hint only: no effect on results. */
#ifndef GSE_PREFETCH_H
#define GSE_PREFETCH_H

#include <Python.h>

/* The first cache line of an object. */
static inline void gse_prefetch(PyObject *o) { __builtin_prefetch(o); }

/* Its first two cache lines (a port's sampled fields span them). */
static inline void gse_prefetch2(PyObject *o) {
    __builtin_prefetch(o);
    __builtin_prefetch((char *)o + 64);
}

#endif
