/* See gse_arena.h. */
#define _GNU_SOURCE
#include <Python.h>
#include <stdint.h>
#include <sys/mman.h>

#include "gse_arena.h"

#define GSE_HUGE (2u << 20)

static PyObjectArenaAllocator previous;
static char *region, *next, *limit;
static size_t arena_size;          /* the first size asked for: pymalloc's arena size */
static void *free_arenas;          /* freed arenas, linked through their first word */

static void *arena_alloc(void *ctx, size_t size) {
    (void)ctx;
    if (arena_size == 0 && size <= GSE_HUGE && (GSE_HUGE % size) == 0)
        arena_size = size;
    if (size == arena_size) {
        if (free_arenas) {
            void *p = free_arenas;
            free_arenas = *(void **)p;
            return p;
        }
        if ((size_t)(limit - next) >= size) {
            void *p = next;
            next += size;
            return p;
        }
    }
    return previous.alloc(previous.ctx, size);
}

static void arena_free(void *ctx, void *ptr, size_t size) {
    (void)ctx;
    if ((char *)ptr >= region && (char *)ptr < limit) {
        /* kept for the next arena: pymalloc frees an arena when its last object goes,
           and a simulation allocates the like again soon after */
        *(void **)ptr = free_arenas;
        free_arenas = ptr;
        return;
    }
    previous.free(previous.ctx, ptr, size);
}

int gse_arena_install(size_t reserve) {
    char *raw, *start;
    PyObjectArenaAllocator mine = {NULL, arena_alloc, arena_free};
    if (region)
        return 0;
    reserve = (reserve + GSE_HUGE - 1) & ~(size_t)(GSE_HUGE - 1);
    raw = mmap(NULL, reserve + GSE_HUGE, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED)
        return -1;
    start = (char *)(((uintptr_t)raw + GSE_HUGE - 1) & ~(uintptr_t)(GSE_HUGE - 1));
    if (madvise(start, reserve, MADV_HUGEPAGE) != 0) {
        munmap(raw, reserve + GSE_HUGE);
        return -1;
    }
    region = next = start;
    limit = start + reserve;
    PyObject_GetArenaAllocator(&previous);
    PyObject_SetArenaAllocator(&mine);
    return 1;
}

size_t gse_arena_used(void) {
    return (size_t)(next - region);
}
