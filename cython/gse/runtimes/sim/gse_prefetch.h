/* Prefetch hints for the sampler's walk over ports (gse/runtimes/sim/sampler.py): the
 * next ports' objects are read a few iterations ahead, so their cache misses overlap
 * the work on the current one.  A hint only: no effect on results.
 *
 * They take the list and an index and read the port through a borrowed pointer: no
 * reference is taken, so a hint writes nothing (an owned reference,
 * as a Cython local or argument takes, increments the object's count: a store to the very
 * line being fetched, and a dozen instructions per hint).  They are macros, expanded in
 * sampler.c after Cython has defined the compiled classes' structs (this header is
 * included before): a renamed class or field is a compile error, not a wrong read. */
#ifndef GSE_PREFETCH_H
#define GSE_PREFETCH_H

#include <Python.h>

#define GSE_PF_PORT(list, i) \
    ((struct __pyx_obj_3gse_8runtimes_3sim_7network_LinkPort *)PyList_GET_ITEM((list), (i)))

/* The port's first cache line (its header and the counters' first fields) and its fourth
 * (busy_until, paused_since, index: network.pxd). */
#define gse_prefetch_port(list, i) do {                                          \
        __builtin_prefetch((char *)PyList_GET_ITEM((list), (i)));                \
        __builtin_prefetch(&GSE_PF_PORT((list), (i))->busy_until);               \
    } while (0)

/* Its second line: the rest of the counters' fields the sampler reads (a port is its queue
 * and its counters, whose fields come first in the object: network.pxd, queue.pxd). */
#define gse_prefetch_counters(list, i) \
    __builtin_prefetch((char *)PyList_GET_ITEM((list), (i)) + 64)

#endif
