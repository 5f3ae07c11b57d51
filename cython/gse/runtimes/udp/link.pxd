# Augments gse/runtimes/udp/link.py.  The ports become extension types that call the queue, the
# PFC state and the agent as C methods; the codec's fast paths use the C helpers below
# (headers in network byte order, the payload pattern of gse.wire.codec.payload_pattern, and
# CRC-32 of payloads through python-isal's crc32 (Intel ISA-L) when installed, else zlib's
# own crc32, found in the libz that Python's zlib module loaded, and of headers and short
# tails by slicing-by-8 tables).  GSE_UDP_C_CODEC tells the module it is compiled
# (the pure module takes the NameError branch).  The endpoint may be a stand-in in tests:
# a port calls a real Endpoint's send as a C method, a stand-in's through Python.
import cython
from gse.agents.interface cimport HostAgent
from gse.runtimes.udp.io cimport Endpoint, Scheduler
from gse.wire cimport linkrate
from gse.wire.packet cimport Packet, fill_packet, new_packet
from switchmodel.pfc cimport PfcState
from switchmodel.queue cimport OutputQueue, PortCounters

cdef extern from *:
    """
    #include <stdint.h>
    #ifndef GSE_HELPER
    #if defined(__GNUC__)
    #define GSE_HELPER static __attribute__((unused))   /* also in modules that cimport this */
    #else
    #define GSE_HELPER static
    #endif
    #endif
    #include <string.h>
    #if defined(__unix__) || defined(__APPLE__)
    #include <dlfcn.h>
    #define GSE_HAVE_DLOPEN 1
    #endif
    #define GSE_UDP_C_CODEC 1

    GSE_HELPER inline long long gse_be16(const unsigned char *p) {
        return ((long long)p[0] << 8) | (long long)p[1];
    }
    GSE_HELPER inline long long gse_be32(const unsigned char *p) {
        return ((long long)p[0] << 24) | ((long long)p[1] << 16)
             | ((long long)p[2] << 8) | (long long)p[3];
    }
    GSE_HELPER inline unsigned long long gse_be64(const unsigned char *p) {
        return ((unsigned long long)gse_be32(p) << 32) | (unsigned long long)gse_be32(p + 4);
    }
    GSE_HELPER inline void gse_put16(unsigned char *p, unsigned long long v) {
        p[0] = (unsigned char)(v >> 8); p[1] = (unsigned char)v;
    }
    GSE_HELPER inline void gse_put32(unsigned char *p, unsigned long long v) {
        p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16);
        p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v;
    }
    GSE_HELPER inline void gse_put64(unsigned char *p, unsigned long long v) {
        gse_put32(p, v >> 32); gse_put32(p + 4, v & 0xFFFFFFFFULL);
    }

    /* CRC-32 (zlib's polynomial and conventions: crc32(0, ...) as zlib.crc32). */
    typedef unsigned long (*gse_zcrc_fn)(unsigned long, const unsigned char *, unsigned int);
    GSE_HELPER gse_zcrc_fn gse_zcrc = NULL;
    GSE_HELPER int gse_crc_ready = 0;
    GSE_HELPER uint32_t gse_crc_table[8][256];     /* slicing-by-8 */

    GSE_HELPER void gse_crc_init(void) {
        uint32_t i, j, c;
        for (i = 0; i < 256; i++) {
            c = i;
            for (j = 0; j < 8; j++) c = (c & 1) ? (0xEDB88320U ^ (c >> 1)) : (c >> 1);
            gse_crc_table[0][i] = c;
        }
        for (i = 0; i < 256; i++)
            for (j = 1; j < 8; j++)
                gse_crc_table[j][i] = (gse_crc_table[j - 1][i] >> 8)
                                      ^ gse_crc_table[0][gse_crc_table[j - 1][i] & 0xFF];
    #ifdef GSE_HAVE_DLOPEN
        {
            const char *names[] = {"libz.so.1", "libz.so", "libz.1.dylib", "libz.dylib"};
            size_t k;
            for (k = 0; k < sizeof(names) / sizeof(names[0]) && gse_zcrc == NULL; k++) {
                void *h = dlopen(names[k], RTLD_NOW | RTLD_LOCAL);
                if (h != NULL) gse_zcrc = (gse_zcrc_fn)dlsym(h, "crc32");
            }
        }
    #endif
        gse_crc_ready = 1;
    }
    GSE_HELPER int gse_crc_uses_zlib(void) {
        if (!gse_crc_ready) gse_crc_init();
        return gse_zcrc != NULL;
    }
    /* zlib's crc32 is faster than slicing-by-8 on long buffers only, and a call away on
       short ones (headers). */
    GSE_HELPER uint32_t gse_crc32(uint32_t crc, const unsigned char *p, size_t n) {
        if (!gse_crc_ready) gse_crc_init();
        if (n >= 256 && gse_zcrc != NULL) return (uint32_t)gse_zcrc(crc, p, (unsigned int)n);
        crc = ~crc;
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        while (n >= 8) {
            uint32_t one, two;
            memcpy(&one, p, 4);
            memcpy(&two, p + 4, 4);
            one ^= crc;
            crc = gse_crc_table[7][one & 0xFF] ^ gse_crc_table[6][(one >> 8) & 0xFF]
                ^ gse_crc_table[5][(one >> 16) & 0xFF] ^ gse_crc_table[4][one >> 24]
                ^ gse_crc_table[3][two & 0xFF] ^ gse_crc_table[2][(two >> 8) & 0xFF]
                ^ gse_crc_table[1][(two >> 16) & 0xFF] ^ gse_crc_table[0][two >> 24];
            p += 8; n -= 8;
        }
    #endif
        while (n--) crc = gse_crc_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
        return ~crc;
    }
    /* A faster crc32(data, value) for payloads, as a Python callable: python-isal's
       isal_zlib.crc32 (Intel ISA-L, folded with carry-less multiplication) when that
       package is installed (gse.runtimes.udp.link hands it over at import). */
    GSE_HELPER PyObject *gse_crc_fast = NULL;
    GSE_HELPER void gse_crc_set_fast(PyObject *fn) {
        Py_XINCREF(fn);
        Py_XSETREF(gse_crc_fast, fn);
    }
    GSE_HELPER int gse_crc_uses_fast(void) { return gse_crc_fast != NULL; }
    /* The payload's CRC through gse_crc_fast, continuing from crc; 0 if that failed (the
       caller then computes it itself: the error is cleared, the result never differs). */
    GSE_HELPER int gse_crc_by_fast(const unsigned char *p, Py_ssize_t n, uint32_t *crc) {
        PyObject *args[2], *view, *value, *out;
        unsigned long c;
        view = PyMemoryView_FromMemory((char *)p, n, PyBUF_READ);
        if (view == NULL) { PyErr_Clear(); return 0; }
        value = PyLong_FromUnsignedLong(*crc);
        if (value == NULL) { Py_DECREF(view); PyErr_Clear(); return 0; }
        args[0] = view; args[1] = value;
        out = PyObject_Vectorcall(gse_crc_fast, args, 2, NULL);
        Py_DECREF(view); Py_DECREF(value);
        if (out == NULL) { PyErr_Clear(); return 0; }
        c = PyLong_AsUnsignedLong(out);
        Py_DECREF(out);
        if (c == (unsigned long)-1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        *crc = (uint32_t)c;
        return 1;
    }
    /* Better still, ISA-L's own C function crc32_gzip_refl (its public API: zlib's CRC-32,
       chainable), when python-isal's extension module exports it: called directly, with
       no Python call per datagram.  Checked against slicing-by-8 before it is used. */
    typedef uint32_t (*gse_isal_crc_fn)(uint32_t, const unsigned char *, uint64_t);
    GSE_HELPER gse_isal_crc_fn gse_isal_crc = NULL;
    GSE_HELPER int gse_crc_load_isal(const char *path) {
    #ifdef GSE_HAVE_DLOPEN
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        gse_isal_crc_fn fn;
        unsigned char probe[1000];
        size_t i;
        if (h == NULL) return 0;
        fn = (gse_isal_crc_fn)dlsym(h, "crc32_gzip_refl");
        if (fn == NULL) return 0;
        for (i = 0; i < sizeof(probe); i++) probe[i] = (unsigned char)(i * 131 + 7);
        if (fn(0, probe, sizeof(probe)) != gse_crc32(0, probe, sizeof(probe))
                || fn(fn(0, probe, 300), probe + 300, 700) != gse_crc32(0, probe, 1000))
            return 0;
        gse_isal_crc = fn;
        return 1;
    #else
        return 0;
    #endif
    }
    GSE_HELPER int gse_crc_uses_isal(void) { return gse_isal_crc != NULL; }
    /* gse.wire.codec's checksum: header bytes 0..59, then the payload (from byte 64). */
    GSE_HELPER long long gse_crc_datagram(const unsigned char *p, Py_ssize_t n) {
        uint32_t c;
        c = gse_crc32(0, p, 60);
        if (n > 64) {
            if (gse_isal_crc != NULL && n - 64 >= 64)
                c = gse_isal_crc(c, p + 64, (uint64_t)(n - 64));
            else if (gse_crc_fast == NULL || n - 64 < 256
                     || !gse_crc_by_fast(p + 64, n - 64, &c))
                c = gse_crc32(c, p + 64, (size_t)(n - 64));
        }
        return (long long)c;
    }

    /* gse.wire.codec.payload_pattern: the 8-byte big-endian seed, repeated. */
    GSE_HELPER inline unsigned long long gse_seed(long long src, long long msg_id, long long psn) {
        return ((((unsigned long long)src & 0xFFFFFFFFULL) << 32)
                | ((unsigned long long)msg_id & 0xFFFFFFFFULL))
               ^ (((unsigned long long)psn & 0xFFFFFFFFULL) * 0x9E3779B97F4A7C15ULL);
    }
    GSE_HELPER void gse_fill_pattern(unsigned char *p, Py_ssize_t n, unsigned long long seed) {
        unsigned char block[8];
        Py_ssize_t i = 0;
        gse_put64(block, seed);
        for (; i + 8 <= n; i += 8) memcpy(p + i, block, 8);
        for (; i < n; i++) p[i] = block[i & 7];
    }
    GSE_HELPER int gse_pattern_ok(PyObject *data, Py_ssize_t n, Py_ssize_t off, long long src,
                              long long msg_id, long long psn) {
        const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(data) + off;
        unsigned char block[8];
        Py_ssize_t i = 0, len = n - off;
        gse_put64(block, gse_seed(src, msg_id, psn));
        for (; i + 8 <= len; i += 8) if (memcmp(p + i, block, 8) != 0) return 0;
        for (; i < len; i++) if (p[i] != block[i & 7]) return 0;
        return 1;
    }

    /* gse.wire.codec.encode for fields already checked against their widths, no payload object:
       an untrimmed DATA packet (carries) gets the pattern. */
    GSE_HELPER PyObject *gse_encode(long long version, long long kind, long long flags,
                                long long src, long long dst, long long msg_id,
                                long long psn, long long entropy, long long payload_len,
                                long long msg_len, long long credit, long long aux,
                                long long sack_base, unsigned long long sack_bits,
                                unsigned long long ts, long long prio, int carries) {
        Py_ssize_t n = 64 + (carries ? (Py_ssize_t)payload_len : 0);
        PyObject *out = PyBytes_FromStringAndSize(NULL, n);
        unsigned char *b;
        if (out == NULL) return NULL;
        b = (unsigned char *)PyBytes_AS_STRING(out);
        b[0] = (unsigned char)version; b[1] = (unsigned char)kind;
        gse_put16(b + 2, flags); gse_put32(b + 4, src); gse_put32(b + 8, dst);
        gse_put32(b + 12, msg_id); gse_put32(b + 16, psn); gse_put16(b + 20, entropy);
        gse_put16(b + 22, payload_len); gse_put32(b + 24, msg_len);
        gse_put32(b + 28, credit); gse_put32(b + 32, aux); gse_put32(b + 36, sack_base);
        gse_put64(b + 40, sack_bits); gse_put64(b + 48, ts);
        b[56] = (unsigned char)prio; b[57] = 0; b[58] = 0; b[59] = 0;
        if (carries) gse_fill_pattern(b + 64, n - 64, gse_seed(src, msg_id, psn));
        gse_put32(b + 60, (unsigned long long)gse_crc_datagram(b, n));
        return out;
    }
    """
    bint GSE_UDP_C_CODEC
    long long gse_be16(const unsigned char *p)
    long long gse_be32(const unsigned char *p)
    unsigned long long gse_be64(const unsigned char *p)
    long long gse_crc_datagram(const unsigned char *p, Py_ssize_t n)
    bint gse_crc_uses_zlib()
    bint gse_crc_uses_fast()
    void gse_crc_set_fast(object fn)
    bint gse_crc_load_isal(const char *path)
    bint gse_crc_uses_isal()
    bint gse_pattern_ok(bytes data, Py_ssize_t n, Py_ssize_t off, long long src,
                        long long msg_id, long long psn)
    object gse_encode(long long version, long long kind, long long flags, long long src,
                      long long dst, long long msg_id, long long psn, long long entropy,
                      long long payload_len, long long msg_len, long long credit,
                      long long aux, long long sack_base, unsigned long long sack_bits,
                      unsigned long long ts, long long prio, bint carries)

cdef bint COMPILED
cdef long long ACK
cdef long long DATA
cdef long long F_TRIMMED
cdef long long HEADER_BYTES
cdef long long KNOWN_FLAGS
cdef long long F_SEC
cdef long long SEC_TAG
cdef long long SEC_TRAILER
cdef long long MAX_KIND
cdef long long PAUSE
cdef long long PRIO_CONTROL
cdef long long PRIO_DATA
cdef long long RESUME
cdef long long WIRE_VERSION
cdef long long CHECKSUM_OFFSET
cdef long long DROPPED
cdef long long ENQUEUED
cdef long long MASK16
cdef long long MASK32
cdef object MASK64


cpdef Packet decode_datagram(object data, Py_ssize_t max_datagram=*)

cpdef Packet decode_header(object data, Py_ssize_t max_datagram=*)

cpdef Packet decode_header_into(Packet pkt, object data, Py_ssize_t max_datagram=*)

@cython.locals(n="Py_ssize_t", pkt=Packet)
cpdef Packet _decode(object data, Py_ssize_t max_datagram, bint with_payload, Packet into)

@cython.locals(p="const unsigned char *", kind="long long", flags="long long",
               payload_len="long long", carries=bint, trailer="long long", pkt=Packet)
cdef Packet _decode_c(bytes data, Py_ssize_t n, bint with_payload, Packet into)

@cython.locals(c=Packet)
cpdef Packet copy_packet(Packet pkt)

cpdef bint payload_intact(Packet pkt, object data) except -1

cdef bint _payload_intact_c(Packet pkt, bytes data) except -1

cpdef bint pattern_intact(Packet pkt, object payload) except -1

cdef bint _pattern_ok_c(Packet pkt, bytes payload) except -1

cpdef object encode_packet(Packet pkt)

@cython.locals(kind="long long", flags="long long")
cdef object _encode_c(Packet pkt)

cdef _attach_payload(Packet pkt, object raw)


cdef class EmulatedPort:
    cdef public Scheduler sched
    cdef public object endpoint
    cdef public Endpoint ep
    cdef public object send
    cdef public object peer_addr
    cdef public OutputQueue queue
    cdef public long long mbps
    cdef public long long delay
    cdef public long long slack
    cdef public long long busy_until
    cdef public long long wake_at
    cdef public object wake_fn
    cdef public object wire
    cdef public dict raw
    cdef public double loss
    cdef public double corrupt
    cdef public object rng
    cdef public long long wire_drops
    cdef public long long wire_corrupt
    cdef public long long encode_errors
    cdef public object codec
    cdef public long long node
    cdef public long long port
    cdef public long long peer
    cdef public long long peer_port
    cdef public object kind
    cdef public bint faces_host
    cdef public PfcState pfc
    cdef public object owner
    cdef public long long paused_since
    cdef public long long paused_ps
    cdef public long long pauses_received
    cdef public long long pause_until
    cdef public object pause_fn
    cdef public long long pause_expiries
    cdef public object seal
    cdef public object fault
    cdef public long long pfc_limit

    @cython.locals(queue=OutputQueue, c=PortCounters, flags="long long",
                   result="long long", pfc=PfcState)
    cpdef offer(self, Packet pkt, object raw, long long now, bint transient=*)

    @cython.locals(queue=OutputQueue)
    cpdef bint _sendable(self) except -1

    @cython.locals(queue=OutputQueue, raws=dict, pfc=PfcState, pkt=Packet, changed=bint)
    cpdef _drain(self, long long now)

    @cython.locals(done="long long", r="double", depart="long long")
    cpdef _transmit(self, Packet pkt, object raw, bint changed, long long start,
                    long long now)

    @cython.locals(limit="long long")
    cpdef _flush(self, long long now)

    cpdef _arm(self, long long t)

    @cython.locals(now="long long", nxt="long long", w="long long")
    cpdef _wake(self, long long t, _arg)

    @cython.locals(queue=OutputQueue, until="long long")
    cpdef on_pfc(self, bint pause, long long quanta, long long now)

    cpdef _pause_expired(self, long long t, _arg)

    @cython.locals(queue=OutputQueue)
    cpdef resume(self, long long now)

    cpdef restart(self, long long now)

    cpdef long long paused_total_ps(self, long long now) except? -1


cdef class HostNic(EmulatedPort):
    cdef public HostAgent agent
    cdef public long long catchup
    cdef public bint want

    @cython.locals(agent=HostAgent, queue=OutputQueue, start="long long",
                   floor="long long", limit="long long", pkt=Packet, burst="long long",
                   i="long long")
    cpdef kick(self, long long now)

    cpdef _drain(self, long long now)

    cpdef bint _sendable(self) except -1

    cpdef restart(self, long long now)
