/* The C half of gse.wire.fastcodec (compiled build): CRC-32, the payload pattern, and the
   64-byte header of gse.wire.codec parsed and written in network byte order.

   Bytes only: no Python object is made here (fastcodec.py builds the Packet and the bytes
   object).  The one Python call is the optional python-isal crc32 callable, a fallback for
   when its C function cannot be loaded.  The reference format is gse/wire/codec.py
   (docs/wire-format.md); tests/test_udp_codec.py and tests/test_fastcodec.py check that
   this agrees with it. */
#ifndef GSE_CODEC_H
#define GSE_CODEC_H

#include <Python.h>
#include <stdint.h>

/* The header fields, in gse.wire.packet.new_packet's order. */
typedef struct {
    long long kind, src, dst, msg_id, psn, entropy, payload_len, flags, msg_len, credit,
              aux, sack_base;
    unsigned long long sack_bits, ts;
    long long prio;
} gse_header;

/* CRC-32 with zlib's polynomial and conventions: gse_crc32(0, p, n) == zlib.crc32(p[:n]),
   chainable as zlib.crc32(data, value). */
uint32_t gse_crc32(uint32_t crc, const unsigned char *p, size_t n);
/* gse.wire.codec's checksum of a datagram of n >= 64 bytes: header bytes 0..59, then the
   bytes from 64 on. */
uint32_t gse_crc_datagram(const unsigned char *p, Py_ssize_t n);
/* Faster CRC-32 for long payloads: ISA-L's C function crc32_gzip_refl found in the shared
   object at ``path`` (python-isal's extension), checked before use; 1 if loaded. */
int gse_crc_load_isal(const char *path);
/* Else python-isal's crc32(data, value) as a Python callable (NULL: none). */
void gse_crc_set_fast(PyObject *fn);
int gse_crc_uses_isal(void);
int gse_crc_uses_fast(void);
int gse_crc_uses_zlib(void);

/* gse.wire.codec.payload_pattern's 8-byte seed. */
unsigned long long gse_pattern_seed(long long src, long long msg_id, long long psn);
/* 1 if the n bytes at p are the pattern of (src, msg_id, psn). */
int gse_pattern_ok(const unsigned char *p, Py_ssize_t n, long long src, long long msg_id,
                   long long psn);

/* The wire constants, given once by fastcodec.py from gse.wire.packet and gse.wire.codec
   (their one definition) before any parse or write. */
typedef struct {
    int version, data, ack, max_kind, known_flags, f_trimmed, f_sec, sec_tag, sec_trailer;
} gse_wire_consts;
void gse_codec_init(const gse_wire_consts *c);

/* Parse a datagram of n bytes (64 <= n) into h if gse.wire.codec.decode would accept it:
   returns the length of its security trailer (0 without F_SEC), or -1 if any check
   fails or is in doubt (the caller then asks the reference decoder for the verdict). */
int gse_header_parse(const unsigned char *p, Py_ssize_t n, gse_header *h);
/* Write the datagram of h into b (n bytes: 64, plus payload_len if it carries a payload:
   untrimmed DATA): the header, the payload pattern, the checksum.  The fields must
   already fit their widths (fastcodec.py checks them). */
void gse_header_write(unsigned char *b, Py_ssize_t n, const gse_header *h);

#endif
