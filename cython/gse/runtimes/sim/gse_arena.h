/* Huge pages for the simulation's Python objects (cython/gse/runtimes/sim/gse_arena.c).

   A simulated fabric is millions of small objects (ports, queues, agents, packets in
   flight) that pymalloc carves out of 1 MiB arenas, each its own mmap(2) of 4 KiB pages.
   An event touches a handful of them scattered over hundreds of MiB at k=32, so besides
   the cache misses each access risks a TLB miss and a page walk.  Arenas served from one
   reserved, 2 MiB-aligned region marked MADV_HUGEPAGE are backed by transparent huge
   pages: 512 times fewer TLB entries for the same objects.  The layout of memory changes,
   nothing else: objects, their order and the results are the same. */
#ifndef GSE_ARENA_H
#define GSE_ARENA_H

#include <stddef.h>

/* Serve pymalloc's arenas from a region of ``reserve`` bytes (virtual, MAP_NORESERVE)
   marked for huge pages.  1: installed now; 0: installed before; -1: the region could
   not be mapped or marked (nothing changed).  Arenas of another size, or once the region
   is used up, come from the allocator that was there before, which also frees the
   arenas it gave. */
int gse_arena_install(size_t reserve, int blocks);
/* bytes of the region handed out so far (arenas in use or kept for reuse) */
size_t gse_arena_used(void);
/* bytes of blocks handed out so far from the second region (the raw allocator's, which
   ``gse_arena_install`` also puts there when asked (``blocks``, off by default: their size
   classes never give memory back; see gse_arena.c and huge_pages in eventq.pyx) */
size_t gse_blocks_used(void);

#endif
