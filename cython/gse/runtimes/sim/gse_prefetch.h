/* Prefetch hints for the sampler's walk over ports (gse/runtimes/sim/sampler.py): the
 * next ports' objects are read a few iterations ahead, so their cache misses overlap
 * the work on the current one.  A hint only: no effect on results.
 *
 * They take the list and an index and read the port through a borrowed pointer: no
 * reference is taken, so a hint writes nothing (an owned reference,
 * as a Cython local or argument takes, increments the object's count: a store to the very
 * line being fetched, and a dozen instructions per hint).  They are macros, expanded in
 * sampler.c after Cython has defined the compiled classes' structs (this header is
 * included before). */
#ifndef GSE_PREFETCH_H
#define GSE_PREFETCH_H

#include <Python.h>

/* The port's first two cache lines: its header, then the counters' fields, all that a
 * bin reads of a busy port that is neither paused nor flagged, and holds packets or sent
 * some (network.pxd, queue.pxd). */
#define gse_prefetch_port(list, i) do {                                      \
        __builtin_prefetch((char *)PyList_GET_ITEM((list), (i)));            \
        __builtin_prefetch((char *)PyList_GET_ITEM((list), (i)) + 64);       \
    } while (0)

#endif
