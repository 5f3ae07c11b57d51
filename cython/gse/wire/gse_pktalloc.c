/* See gse_pktalloc.h. */
#define _GNU_SOURCE
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "gse_pktalloc.h"

#define GSE_PKT_LINE 64
#define GSE_PKT_REGION (2u << 20)

static size_t block;               /* the object's size rounded up to a line */
static char *next, *end;           /* the current region's blocks not yet handed out */
static void *free_blocks;          /* freed blocks, linked through their first word */
static size_t mapped;

static int new_region(void) {
    /* 2 MiB aligned (mapped twice that and trimmed), so the kernel can back it with one
       huge page: a packet costs no TLB entry of its own */
    char *raw = mmap(NULL, 2 * GSE_PKT_REGION, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *start;
    uintptr_t a;
    if (raw == MAP_FAILED)
        return -1;
    a = ((uintptr_t)raw + GSE_PKT_REGION - 1) & ~(uintptr_t)(GSE_PKT_REGION - 1);
    start = (char *)a;
    if (start > raw)
        munmap(raw, (size_t)(start - raw));
    if (start + GSE_PKT_REGION < raw + 2 * GSE_PKT_REGION)
        munmap(start + GSE_PKT_REGION, (size_t)(raw + 2 * GSE_PKT_REGION
                                                - (start + GSE_PKT_REGION)));
    (void)madvise(start, GSE_PKT_REGION, MADV_HUGEPAGE);   /* a hint: may fail */
    next = start;
    end = start + GSE_PKT_REGION;
    mapped += GSE_PKT_REGION;
    return 0;
}

static PyObject *pkt_alloc(PyTypeObject *type, Py_ssize_t nitems) {
    char *p;
    (void)nitems;
    if (free_blocks) {
        p = free_blocks;
        free_blocks = *(void **)p;
    } else {
        if ((size_t)(end - next) < block && new_region() != 0)
            return PyErr_NoMemory();
        p = next;
        next += block;
    }
    memset(p, 0, (size_t)type->tp_basicsize);
    return PyObject_Init((PyObject *)p, type);
}

static void pkt_free(void *p) {
    *(void **)p = free_blocks;
    free_blocks = p;
}

int gse_pktalloc_install(PyObject *obj) {
    PyTypeObject *type = (PyTypeObject *)obj;
    if (!PyType_Check(obj) || type->tp_itemsize != 0 || PyType_IS_GC(type)) {
        PyErr_SetString(PyExc_TypeError,
                        "gse_pktalloc_install: a non-GC type of fixed size is needed");
        return -1;
    }
    if (type->tp_alloc == pkt_alloc)
        return 0;
    block = ((size_t)type->tp_basicsize + GSE_PKT_LINE - 1) & ~(size_t)(GSE_PKT_LINE - 1);
    type->tp_alloc = pkt_alloc;
    type->tp_free = pkt_free;
    return 0;
}

size_t gse_pktalloc_mapped(void) {
    return mapped;
}
