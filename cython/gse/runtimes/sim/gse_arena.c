/* See gse_arena.h. */
#define _GNU_SOURCE
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>
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

/* ---- blocks: the raw allocator's memory (what pymalloc does not keep: over 512 bytes) --

   Size classes of four steps per power of two (16 bytes to 16 MiB of capacity), each a
   free list; a block is a 16-byte header (its class) and its capacity, cut from the
   region's top in turn and never given back to the system (a simulation allocates the
   like again soon after).  Larger blocks come from the allocator that was there before,
   their whole 2 MiB pages marked for huge pages.  The raw domain may be called without
   the GIL: a spin lock (never contended in a simulation) guards the lists. */

#define GSE_CLASSES 81
#define GSE_MAX_CLASS_BYTES ((size_t)16 << 20)
#define GSE_HEADER 16

static PyMemAllocatorEx raw_previous;
static char *bregion, *bnext, *blimit;
static void *bfree[GSE_CLASSES];
static char block_lock;

static size_t class_of(size_t n) {
    size_t e;
    if (n <= 16)
        return 0;
    e = 63 - (size_t)__builtin_clzll((unsigned long long)(n - 1));   /* 2^e < n <= 2^(e+1) */
    return (e - 4) * 4 + (((n - 1) >> (e - 2)) & 3) + 1;
}

static size_t class_total(size_t c) {      /* header and capacity, a multiple of 16 */
    size_t e, cap;
    if (c == 0)
        cap = 16;
    else {
        e = (c - 1) / 4 + 4;
        cap = ((size_t)1 << e) + (((c - 1) % 4) + 1) * ((size_t)1 << (e - 2));
    }
    return (GSE_HEADER + cap + 15) & ~(size_t)15;
}

static inline void lock(void) {
    while (__atomic_test_and_set(&block_lock, __ATOMIC_ACQUIRE))
        ;
}

static inline void unlock(void) {
    __atomic_clear(&block_lock, __ATOMIC_RELEASE);
}

static inline int ours(void *p) {
    return (char *)p >= bregion && (char *)p < blimit;
}

static void mark_huge(void *p, size_t n) {   /* the whole 2 MiB pages of a large block */
    uintptr_t a = ((uintptr_t)p + GSE_HUGE - 1) & ~(uintptr_t)(GSE_HUGE - 1);
    uintptr_t b = ((uintptr_t)p + n) & ~(uintptr_t)(GSE_HUGE - 1);
    if (p && b > a)
        madvise((void *)a, b - a, MADV_HUGEPAGE);
}

static void *block_malloc(void *ctx, size_t n) {
    size_t c, total;
    char *p = NULL;
    (void)ctx;
    if (n > GSE_MAX_CLASS_BYTES) {
        p = raw_previous.malloc(raw_previous.ctx, n);
        mark_huge(p, n);
        return p;
    }
    c = class_of(n);
    lock();
    if (bfree[c]) {
        p = bfree[c];
        bfree[c] = *(void **)p;
    } else {
        total = class_total(c);
        if ((size_t)(blimit - bnext) >= total) {
            p = bnext + GSE_HEADER;
            *(size_t *)bnext = c;
            bnext += total;
        }
    }
    unlock();
    if (p == NULL)
        return raw_previous.malloc(raw_previous.ctx, n);
    return p;
}

static void *block_calloc(void *ctx, size_t nelem, size_t elsize) {
    size_t n;
    void *p;
    if (elsize && nelem > ((size_t)-1) / elsize)
        return NULL;
    n = nelem * elsize;
    if (n > GSE_MAX_CLASS_BYTES) {
        p = raw_previous.calloc(raw_previous.ctx, nelem, elsize);
        mark_huge(p, n);
        return p;
    }
    p = block_malloc(ctx, n);
    if (p)
        memset(p, 0, n);
    return p;
}

static void block_free(void *ctx, void *p) {
    size_t c;
    (void)ctx;
    if (p == NULL)
        return;
    if (!ours(p)) {
        raw_previous.free(raw_previous.ctx, p);
        return;
    }
    c = *(size_t *)((char *)p - GSE_HEADER);
    lock();
    *(void **)p = bfree[c];
    bfree[c] = p;
    unlock();
}

static void *block_realloc(void *ctx, void *p, size_t n) {
    size_t c, cap;
    void *q;
    if (p == NULL)
        return block_malloc(ctx, n);
    if (!ours(p)) {
        q = raw_previous.realloc(raw_previous.ctx, p, n);
        if (n > GSE_MAX_CLASS_BYTES)
            mark_huge(q, n);
        return q;
    }
    c = *(size_t *)((char *)p - GSE_HEADER);
    cap = class_total(c) - GSE_HEADER;
    if (n <= cap && (c < 4 || class_of(n) + 4 > c))
        return p;                  /* fits, and not shrunk below half its class */
    q = block_malloc(ctx, n);
    if (q == NULL)
        return NULL;
    memcpy(q, p, n < cap ? n : cap);
    block_free(ctx, p);
    return q;
}

/* a fork(2) while another thread holds the lock would leave it held in the child */
static void fork_prepare(void) {
    lock();
}

static void fork_done(void) {
    unlock();
}

/* ``reserve`` bytes of address space (a multiple of 2 MiB), reserved without commitment,
   2 MiB-aligned and marked for transparent huge pages; NULL if it cannot be had */
static char *reserve_huge(size_t reserve) {
    char *raw, *start;
    raw = mmap(NULL, reserve + GSE_HUGE, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    start = (char *)(((uintptr_t)raw + GSE_HUGE - 1) & ~(uintptr_t)(GSE_HUGE - 1));
    if (madvise(start, reserve, MADV_HUGEPAGE) != 0) {
        munmap(raw, reserve + GSE_HUGE);
        return NULL;
    }
    return start;
}

static int blocks_install(size_t reserve) {
    char *start;
    PyMemAllocatorEx mine = {NULL, block_malloc, block_calloc, block_realloc, block_free};
    start = reserve_huge(reserve);
    if (start == NULL)
        return -1;
    bregion = bnext = start;
    blimit = start + reserve;
    pthread_atfork(fork_prepare, fork_done, fork_done);
    PyMem_GetAllocator(PYMEM_DOMAIN_RAW, &raw_previous);
    PyMem_SetAllocator(PYMEM_DOMAIN_RAW, &mine);
    return 1;
}

int gse_arena_install(size_t reserve, int blocks) {
    char *start;
    PyObjectArenaAllocator mine = {NULL, arena_alloc, arena_free};
    if (region)
        return 0;
    reserve = (reserve + GSE_HUGE - 1) & ~(size_t)(GSE_HUGE - 1);
    start = reserve_huge(reserve);
    if (start == NULL)
        return -1;
    region = next = start;
    limit = start + reserve;
    PyObject_GetArenaAllocator(&previous);
    PyObject_SetArenaAllocator(&mine);
    if (blocks)                    /* opt-in: see gse_arena.h */
        blocks_install(reserve);   /* -1: the raw allocator stays as it was */
    return 1;
}

size_t gse_arena_used(void) {
    return (size_t)(next - region);
}

size_t gse_blocks_used(void) {
    return (size_t)(bnext - bregion);
}
