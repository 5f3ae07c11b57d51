/* Prefetch hints for the sampler's walk over ports (gse/runtimes/sim/sampler.py): the
 * next ports' objects are read a few iterations ahead, so their cache misses overlap
 * the work on the current one.  A hint only: no effect on results.
 *
 * They take the list and an index and read the port, its queue and its counters through
 * borrowed pointers: no reference is taken, so a hint writes nothing (an owned reference,
 * as a Cython local or argument takes, increments the object's count: a store to the very
 * line being fetched, and a dozen instructions per hint).  They are macros, expanded in
 * sampler.c after Cython has defined the compiled classes' structs (this header is
 * included before): a renamed class or field is a compile error, not a wrong read. */
#ifndef GSE_PREFETCH_H
#define GSE_PREFETCH_H

#include <Python.h>

#define GSE_PF_PORT(list, i) \
    ((struct __pyx_obj_3gse_8runtimes_3sim_7network_LinkPort *)PyList_GET_ITEM((list), (i)))

/* The port's first cache line (all its fields read at every bin). */
#define gse_prefetch_port(list, i) \
    __builtin_prefetch((char *)PyList_GET_ITEM((list), (i)))

/* Its counters' fields (the object's second line: its header ends the first, as a
 * 128-byte block starts 48 bytes into a line; the port's line holding the pointer was
 * asked for two ports before). */
#define gse_prefetch_counters(list, i) \
    __builtin_prefetch((char *)GSE_PF_PORT((list), (i))->counters + 16)

#endif
