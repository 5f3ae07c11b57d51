/* CRC-32, payload pattern and header codec of the compiled gse.wire.fastcodec
   (declarations and contracts in gse_codec.h; the reference is gse/wire/codec.py). */
#include "gse_codec.h"

#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <dlfcn.h>
#define GSE_HAVE_DLOPEN 1
#endif

#define GSE_HEADER_BYTES 64
#define GSE_CHECKSUM_OFFSET 60

static gse_wire_consts W;

void gse_codec_init(const gse_wire_consts *c) { W = *c; }

/* -- big-endian fields --------------------------------------------------------------- */

static inline long long be16(const unsigned char *p) {
    return ((long long)p[0] << 8) | (long long)p[1];
}
static inline long long be32(const unsigned char *p) {
    return ((long long)p[0] << 24) | ((long long)p[1] << 16) | ((long long)p[2] << 8)
           | (long long)p[3];
}
static inline unsigned long long be64(const unsigned char *p) {
    return ((unsigned long long)be32(p) << 32) | (unsigned long long)be32(p + 4);
}
static inline void put16(unsigned char *p, unsigned long long v) {
    p[0] = (unsigned char)(v >> 8); p[1] = (unsigned char)v;
}
static inline void put32(unsigned char *p, unsigned long long v) {
    p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v;
}
static inline void put64(unsigned char *p, unsigned long long v) {
    put32(p, v >> 32); put32(p + 4, v & 0xFFFFFFFFULL);
}

/* -- CRC-32 ------------------------------------------------------------------------------
   Headers and short tails by slicing-by-8 tables; payloads of 256 bytes and more by
   zlib's own crc32 (found in the libz that Python's zlib module loaded), or faster by
   ISA-L's when python-isal is installed (gse.wire.fastcodec hands it over at import). */

typedef unsigned long (*zcrc_fn)(unsigned long, const unsigned char *, unsigned int);
typedef uint32_t (*isal_crc_fn)(uint32_t, const unsigned char *, uint64_t);

static zcrc_fn zcrc = NULL;
static int crc_ready = 0;
static uint32_t crc_table[8][256];
static PyObject *crc_fast = NULL;        /* python-isal's crc32, a Python callable */
static isal_crc_fn isal_crc = NULL;      /* ISA-L's crc32_gzip_refl, a C function */

static void crc_init(void) {
    uint32_t i, j, c;
    for (i = 0; i < 256; i++) {
        c = i;
        for (j = 0; j < 8; j++) c = (c & 1) ? (0xEDB88320U ^ (c >> 1)) : (c >> 1);
        crc_table[0][i] = c;
    }
    for (i = 0; i < 256; i++)
        for (j = 1; j < 8; j++)
            crc_table[j][i] = (crc_table[j - 1][i] >> 8) ^ crc_table[0][crc_table[j - 1][i] & 0xFF];
#ifdef GSE_HAVE_DLOPEN
    {
        const char *names[] = {"libz.so.1", "libz.so", "libz.1.dylib", "libz.dylib"};
        size_t k;
        for (k = 0; k < sizeof(names) / sizeof(names[0]) && zcrc == NULL; k++) {
            void *h = dlopen(names[k], RTLD_NOW | RTLD_LOCAL);
            if (h != NULL) zcrc = (zcrc_fn)dlsym(h, "crc32");
        }
    }
#endif
    crc_ready = 1;
}

int gse_crc_uses_zlib(void) {
    if (!crc_ready) crc_init();
    return zcrc != NULL;
}

/* zlib's crc32 is faster than slicing-by-8 on long buffers only, and a call away on short
   ones (headers). */
uint32_t gse_crc32(uint32_t crc, const unsigned char *p, size_t n) {
    if (!crc_ready) crc_init();
    if (n >= 256 && zcrc != NULL) return (uint32_t)zcrc(crc, p, (unsigned int)n);
    crc = ~crc;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (n >= 8) {
        uint32_t one, two;
        memcpy(&one, p, 4);
        memcpy(&two, p + 4, 4);
        one ^= crc;
        crc = crc_table[7][one & 0xFF] ^ crc_table[6][(one >> 8) & 0xFF]
            ^ crc_table[5][(one >> 16) & 0xFF] ^ crc_table[4][one >> 24]
            ^ crc_table[3][two & 0xFF] ^ crc_table[2][(two >> 8) & 0xFF]
            ^ crc_table[1][(two >> 16) & 0xFF] ^ crc_table[0][two >> 24];
        p += 8; n -= 8;
    }
#endif
    while (n--) crc = crc_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

void gse_crc_set_fast(PyObject *fn) {
    Py_XINCREF(fn);
    Py_XSETREF(crc_fast, fn);
}

int gse_crc_uses_fast(void) { return crc_fast != NULL; }

/* The CRC of n bytes through crc_fast, continuing from *crc; 0 if that failed (the caller
   then computes it itself: the error is cleared, the result never differs). */
static int crc_by_fast(const unsigned char *p, Py_ssize_t n, uint32_t *crc) {
    PyObject *args[2], *view, *value, *out;
    unsigned long c;
    view = PyMemoryView_FromMemory((char *)p, n, PyBUF_READ);
    if (view == NULL) { PyErr_Clear(); return 0; }
    value = PyLong_FromUnsignedLong(*crc);
    if (value == NULL) { Py_DECREF(view); PyErr_Clear(); return 0; }
    args[0] = view; args[1] = value;
    out = PyObject_Vectorcall(crc_fast, args, 2, NULL);
    Py_DECREF(view); Py_DECREF(value);
    if (out == NULL) { PyErr_Clear(); return 0; }
    c = PyLong_AsUnsignedLong(out);
    Py_DECREF(out);
    if (c == (unsigned long)-1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
    *crc = (uint32_t)c;
    return 1;
}

/* ISA-L's public crc32_gzip_refl is zlib's CRC-32, chainable; python-isal's extension
   module exports it on some builds.  Checked against slicing-by-8 before it is used. */
int gse_crc_load_isal(const char *path) {
#ifdef GSE_HAVE_DLOPEN
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    isal_crc_fn fn;
    unsigned char probe[1000];
    size_t i;
    if (h == NULL) return 0;
    fn = (isal_crc_fn)dlsym(h, "crc32_gzip_refl");
    if (fn == NULL) return 0;
    for (i = 0; i < sizeof(probe); i++) probe[i] = (unsigned char)(i * 131 + 7);
    if (fn(0, probe, sizeof(probe)) != gse_crc32(0, probe, sizeof(probe))
            || fn(fn(0, probe, 300), probe + 300, 700) != gse_crc32(0, probe, 1000))
        return 0;
    isal_crc = fn;
    return 1;
#else
    (void)path;
    return 0;
#endif
}

int gse_crc_uses_isal(void) { return isal_crc != NULL; }

uint32_t gse_crc_datagram(const unsigned char *p, Py_ssize_t n) {
    uint32_t c = gse_crc32(0, p, GSE_CHECKSUM_OFFSET);
    if (n > GSE_HEADER_BYTES) {
        const unsigned char *body = p + GSE_HEADER_BYTES;
        Py_ssize_t len = n - GSE_HEADER_BYTES;
        if (isal_crc != NULL && len >= 64)
            c = isal_crc(c, body, (uint64_t)len);
        else if (crc_fast == NULL || len < 256 || !crc_by_fast(body, len, &c))
            c = gse_crc32(c, body, (size_t)len);
    }
    return c;
}

/* -- the payload pattern (gse.wire.codec.payload_pattern) -------------------------------- */

unsigned long long gse_pattern_seed(long long src, long long msg_id, long long psn) {
    return ((((unsigned long long)src & 0xFFFFFFFFULL) << 32)
            | ((unsigned long long)msg_id & 0xFFFFFFFFULL))
           ^ (((unsigned long long)psn & 0xFFFFFFFFULL) * 0x9E3779B97F4A7C15ULL);
}

static void fill_pattern(unsigned char *p, Py_ssize_t n, unsigned long long seed) {
    unsigned char block[8];
    Py_ssize_t i = 0;
    put64(block, seed);
    for (; i + 8 <= n; i += 8) memcpy(p + i, block, 8);
    for (; i < n; i++) p[i] = block[i & 7];
}

int gse_pattern_ok(const unsigned char *p, Py_ssize_t n, long long src, long long msg_id,
                   long long psn) {
    unsigned char block[8];
    Py_ssize_t i = 0;
    put64(block, gse_pattern_seed(src, msg_id, psn));
    for (; i + 8 <= n; i += 8) if (memcmp(p + i, block, 8) != 0) return 0;
    for (; i < n; i++) if (p[i] != block[i & 7]) return 0;
    return 1;
}

/* -- the header ---------------------------------------------------------------------------- */

int gse_header_parse(const unsigned char *p, Py_ssize_t n, gse_header *h) {
    long long kind = p[1], flags = be16(p + 2), payload_len = be16(p + 22);
    int carries, trailer = 0;
    if (n < GSE_HEADER_BYTES || p[0] != W.version || kind > W.max_kind
            || (flags & ~(long long)(W.known_flags | W.f_sec)) || p[57] || p[58] || p[59])
        return -1;
    carries = kind == W.data && !(flags & W.f_trimmed);
    if (flags & W.f_sec)                  /* the security trailer after the payload */
        trailer = carries ? W.sec_trailer + W.sec_tag : W.sec_trailer;
    if (carries) {
        if (n - GSE_HEADER_BYTES - trailer != payload_len) return -1;
    } else if (n != GSE_HEADER_BYTES + trailer || (kind == W.ack && (be32(p + 36) & 7))) {
        return -1;
    }
    if ((long long)gse_crc_datagram(p, n) != be32(p + GSE_CHECKSUM_OFFSET)) return -1;
    h->kind = kind;
    h->src = be32(p + 4);
    h->dst = be32(p + 8);
    h->msg_id = be32(p + 12);
    h->psn = be32(p + 16);
    h->entropy = be16(p + 20);
    h->payload_len = payload_len;
    h->flags = flags;
    h->msg_len = be32(p + 24);
    h->credit = be32(p + 28);
    h->aux = be32(p + 32);
    h->sack_base = be32(p + 36);
    h->sack_bits = be64(p + 40);
    h->ts = be64(p + 48);
    h->prio = p[56];
    return trailer;
}

void gse_header_write(unsigned char *b, Py_ssize_t n, const gse_header *h) {
    b[0] = (unsigned char)W.version; b[1] = (unsigned char)h->kind;
    put16(b + 2, h->flags); put32(b + 4, h->src); put32(b + 8, h->dst);
    put32(b + 12, h->msg_id); put32(b + 16, h->psn); put16(b + 20, h->entropy);
    put16(b + 22, h->payload_len); put32(b + 24, h->msg_len);
    put32(b + 28, h->credit); put32(b + 32, h->aux); put32(b + 36, h->sack_base);
    put64(b + 40, h->sack_bits); put64(b + 48, h->ts);
    b[56] = (unsigned char)h->prio; b[57] = 0; b[58] = 0; b[59] = 0;
    if (n > GSE_HEADER_BYTES)
        fill_pattern(b + GSE_HEADER_BYTES, n - GSE_HEADER_BYTES,
                     gse_pattern_seed(h->src, h->msg_id, h->psn));
    put32(b + GSE_CHECKSUM_OFFSET, gse_crc_datagram(b, n));
}
