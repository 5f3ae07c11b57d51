/* Packets on cache lines (cython/gse/wire/gse_pktalloc.c).

   A packet in flight is read at every hop long after it was last touched (at k=16 some
   46,000 events run per simulated microsecond, so the packet a switch receives or
   dequeues is cold), and pymalloc puts objects of the packet's size class anywhere in a
   line: its fields then spread over three or four lines, each a miss.  The compiled
   Packet declares the fields a switch reads first (cython/gse/wire/packet.pxd) and this
   allocator gives every packet a block that starts a cache line (blocks of the object's
   size rounded up to 64 bytes, carved out of 2 MiB regions marked for transparent huge
   pages), so a hop reads one line of the packet.  Blocks are kept for reuse, never
   returned.  Addresses change, nothing else. */
#ifndef GSE_PKTALLOC_H
#define GSE_PKTALLOC_H

#include <Python.h>

/* Make ``type`` (a non-GC extension type of fixed size) allocate and free its objects
   here: 0 on success, -1 with an exception set.  Its tp_alloc and tp_free are
   replaced; a free list in front of them (Cython's freelist) keeps working. */
int gse_pktalloc_install(PyObject *type);
/* bytes of the regions mapped so far */
size_t gse_pktalloc_mapped(void);

#endif
