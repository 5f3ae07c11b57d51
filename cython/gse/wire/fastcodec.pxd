# Declares the compiled twin cython/gse/wire/fastcodec.pyx of gse/wire/fastcodec.py (the
# runtimes cimport its functions and call them as C functions) and the C it calls,
# cython/gse/wire/gse_codec.c (setup.py compiles it into this extension).
from gse.wire.packet cimport Packet

cdef extern from "gse_codec.h":
    ctypedef struct gse_header:
        long long kind, src, dst, msg_id, psn, entropy, payload_len, flags, msg_len
        long long credit, aux, sack_base
        unsigned long long sack_bits, ts
        long long prio
    ctypedef struct gse_wire_consts:
        int version, data, ack, max_kind, known_flags, f_trimmed, f_sec, sec_tag, sec_trailer
    void gse_codec_init(const gse_wire_consts *c)
    unsigned int gse_crc32(unsigned int crc, const unsigned char *p, size_t n)
    unsigned int gse_crc_datagram(const unsigned char *p, Py_ssize_t n)
    bint gse_crc_load_isal(const char *path)
    void gse_crc_set_fast(object fn)
    bint gse_crc_uses_isal()
    bint gse_crc_uses_fast()
    bint gse_crc_uses_zlib()
    bint gse_pattern_ok(const unsigned char *p, Py_ssize_t n, long long src, long long msg_id,
                        long long psn)
    int gse_header_parse(const unsigned char *p, Py_ssize_t n, gse_header *h)
    void gse_header_write(unsigned char *b, Py_ssize_t n, const gse_header *h)

cdef long long ACK
cdef long long DATA
cdef long long F_TRIMMED
cdef long long HEADER_BYTES
cdef long long KNOWN_FLAGS
cdef long long MAX_KIND

# The C parser and checksum for other compiled modules (the switch data plane,
# gse.runtimes.udp.switchplane): C functions of this extension, reached through its
# exported C API, since gse_codec.c is linked into this extension only.
cdef int header_parse(const unsigned char *p, Py_ssize_t n, gse_header *h) noexcept
cdef unsigned int crc_datagram(const unsigned char *p, Py_ssize_t n) noexcept
# ... and for the hosts' packet path (gse.runtimes.udp.hostplane): a packet's header
# fields (False: it needs the reference encoder), the datagram's length, the writer, the
# payload pattern's check
cdef bint packet_header(Packet pkt, gse_header *h) except -1
cdef Py_ssize_t header_datagram_len(const gse_header *h) noexcept
cdef void header_write(unsigned char *b, Py_ssize_t n, const gse_header *h) noexcept
cdef bint pattern_ok(const unsigned char *p, Py_ssize_t n, long long src, long long msg_id,
                     long long psn) noexcept

cpdef Packet decode_datagram(object data, Py_ssize_t max_datagram=*)
cpdef Packet decode_header(object data, Py_ssize_t max_datagram=*)
cpdef Packet decode_header_into(Packet pkt, object data, Py_ssize_t max_datagram=*)
cpdef object encode_packet(Packet pkt)
cpdef bint payload_intact(Packet pkt, object data) except -1
cpdef bint pattern_intact(Packet pkt, object payload) except -1

