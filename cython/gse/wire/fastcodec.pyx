# cython: language_level=3
"""The compiled twin of gse/wire/fastcodec.py: the same functions, through the C of
gse_codec.c (header parsed and written in network byte order, payload pattern, CRC-32).

Each function accepts only what ``gse.wire.codec`` accepts and produces the same packet or
bytes; a datagram that is not ``bytes`` or fails any check, and a packet with a payload
object, a corrupt mark or a field past its width, goes to the reference, which gives the
same result or raises the same error.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize

from gse.wire.codec import (MAX_DATAGRAM, SEC_TAG, SEC_TRAILER, crc32, decode, encode,
                            payload_pattern)
from gse.wire.packet import (ACK, DATA, F_SEC, F_TRIMMED, HEADER_BYTES, KNOWN_FLAGS,
                             MAX_KIND, WIRE_VERSION)
from gse.wire.packet cimport Packet, fill_packet, new_packet

FAST_PATH = True         # the pure twin says False

try:        # Intel ISA-L's CRC-32: its C function when exported, else its Python callable
    from isal import isal_zlib as _isal
except ImportError:
    _isal = None

cdef gse_wire_consts _consts
_consts.version = WIRE_VERSION
_consts.data = DATA
_consts.ack = ACK
_consts.max_kind = MAX_KIND
_consts.known_flags = KNOWN_FLAGS
_consts.f_trimmed = F_TRIMMED
_consts.f_sec = F_SEC
_consts.sec_tag = SEC_TAG
_consts.sec_trailer = SEC_TRAILER
gse_codec_init(&_consts)
if _isal is not None:
    gse_crc_set_fast(_isal.crc32)
    gse_crc_load_isal(_isal.__file__.encode())

cdef long long MASK16 = 0xFFFF
cdef long long MASK32 = 0xFFFFFFFF
MASK64 = 0xFFFFFFFFFFFFFFFF


def codec_backend():
    """Which implementation the runtimes' codec is: 'Python', or 'C (...)' naming how the
    CRC-32 is computed."""
    if gse_crc_uses_isal():
        return "C (CRC-32 of payloads by ISA-L's crc32_gzip_refl, of headers by slicing-by-8)"
    if gse_crc_uses_fast():
        return "C (CRC-32 of payloads by python-isal, of headers by slicing-by-8)"
    if gse_crc_uses_zlib():
        return "C (CRC-32 of payloads by zlib, of headers by slicing-by-8)"
    return "C (CRC-32 by slicing-by-8)"


def datagram_checksum(data):
    """The checksum ``gse.wire.codec`` writes in a datagram of 64 bytes or more: the CRC-32
    of header bytes 0..59, then of the bytes from 64 on."""
    cdef bytes b = bytes(data)
    if len(b) < HEADER_BYTES:
        raise ValueError("a datagram has at least %d bytes" % HEADER_BYTES)
    return gse_crc_datagram(<const unsigned char *>PyBytes_AS_STRING(b), len(b))


cdef int header_parse(const unsigned char *p, Py_ssize_t n, gse_header *h) noexcept:
    return gse_header_parse(p, n, h)


cdef unsigned int crc_datagram(const unsigned char *p, Py_ssize_t n) noexcept:
    return gse_crc_datagram(p, n)


cpdef Packet decode_datagram(object data, Py_ssize_t max_datagram=MAX_DATAGRAM):
    return _decode(data, max_datagram, True, None)


cpdef Packet decode_header(object data, Py_ssize_t max_datagram=MAX_DATAGRAM):
    return _decode(data, max_datagram, False, None)


cpdef Packet decode_header_into(Packet pkt, object data, Py_ssize_t max_datagram=MAX_DATAGRAM):
    return _decode(data, max_datagram, False, pkt)


cdef Packet _decode(object data, Py_ssize_t max_datagram, bint with_payload, Packet into):
    cdef Py_ssize_t n
    cdef int trailer
    cdef gse_header h
    cdef Packet pkt
    if type(data) is bytes:
        n = len(<bytes>data)
        if n >= HEADER_BYTES and n <= max_datagram:
            trailer = gse_header_parse(<const unsigned char *>PyBytes_AS_STRING(data), n, &h)
            if trailer >= 0:
                if into is None:
                    pkt = new_packet(h.kind, h.src, h.dst, h.msg_id, h.psn, h.entropy,
                                     h.payload_len, h.flags, h.msg_len, h.credit, h.aux,
                                     h.sack_base, h.sack_bits, h.ts, h.prio)
                else:
                    pkt = fill_packet(into, h.kind, h.src, h.dst, h.msg_id, h.psn,
                                      h.entropy, h.payload_len, h.flags, h.msg_len,
                                      h.credit, h.aux, h.sack_base, h.sack_bits, h.ts,
                                      h.prio)
                if with_payload and h.kind == DATA and not h.flags & F_TRIMMED:
                    pkt.payload = (<bytes>data)[HEADER_BYTES:HEADER_BYTES + h.payload_len]
                pkt.size += trailer
                return pkt
    return decode(data, max_datagram, with_payload)    # the verdict, or the same packet


cdef bint packet_header(Packet pkt, gse_header *h) except -1:
    """Fill ``h`` from ``pkt`` if the C writer may encode it: True; False when the packet
    needs the reference (a payload object, a corrupt mark, a field past its width), which
    then gives the same bytes or the same error."""
    cdef long long kind = pkt.kind
    cdef long long flags = pkt.flags
    if (kind < 0 or kind > MAX_KIND or flags < 0 or flags & ~KNOWN_FLAGS or pkt.corrupt
            or pkt.payload is not None):
        return False
    if (pkt.src < 0 or pkt.src > MASK32 or pkt.dst < 0 or pkt.dst > MASK32
            or pkt.msg_id < 0 or pkt.msg_id > MASK32 or pkt.psn < 0 or pkt.psn > MASK32
            or pkt.entropy < 0 or pkt.entropy > MASK16 or pkt.payload_len < 0
            or pkt.payload_len > MASK16 or pkt.msg_len < 0 or pkt.msg_len > MASK32
            or pkt.credit < 0 or pkt.credit > MASK32 or pkt.aux < 0 or pkt.aux > MASK32
            or pkt.sack_base < 0 or pkt.sack_base > MASK32 or pkt.prio < 0
            or pkt.prio > 255 or (kind == ACK and pkt.sack_base & 7)):
        return False
    sack_bits = pkt.sack_bits
    ts = pkt.ts
    if (type(sack_bits) is not int or type(ts) is not int or sack_bits < 0
            or sack_bits > MASK64 or ts < 0 or ts > MASK64):
        return False
    h.kind = kind
    h.src = pkt.src
    h.dst = pkt.dst
    h.msg_id = pkt.msg_id
    h.psn = pkt.psn
    h.entropy = pkt.entropy
    h.payload_len = pkt.payload_len
    h.flags = flags
    h.msg_len = pkt.msg_len
    h.credit = pkt.credit
    h.aux = pkt.aux
    h.sack_base = pkt.sack_base
    h.sack_bits = sack_bits
    h.ts = ts
    h.prio = pkt.prio
    return True


cdef Py_ssize_t header_datagram_len(const gse_header *h) noexcept:
    return HEADER_BYTES + (h.payload_len if h.kind == DATA and not h.flags & F_TRIMMED
                           else 0)


cdef void header_write(unsigned char *b, Py_ssize_t n, const gse_header *h) noexcept:
    gse_header_write(b, n, h)


cdef bint pattern_ok(const unsigned char *p, Py_ssize_t n, long long src, long long msg_id,
                     long long psn) noexcept:
    return gse_pattern_ok(p, n, src, msg_id, psn)


cpdef object encode_packet(Packet pkt):
    cdef gse_header h
    cdef Py_ssize_t n
    cdef bytes out
    if not packet_header(pkt, &h):
        return encode(pkt)
    n = header_datagram_len(&h)
    out = PyBytes_FromStringAndSize(NULL, n)
    gse_header_write(<unsigned char *>PyBytes_AS_STRING(out), n, &h)
    return out


cpdef bint payload_intact(Packet pkt, object data) except -1:
    if type(data) is bytes:
        return gse_pattern_ok(<const unsigned char *>PyBytes_AS_STRING(data) + HEADER_BYTES,
                              len(<bytes>data) - HEADER_BYTES, pkt.src, pkt.msg_id, pkt.psn)
    return data[HEADER_BYTES:] == payload_pattern(pkt.src, pkt.msg_id, pkt.psn,
                                                  pkt.payload_len)


cpdef bint pattern_intact(Packet pkt, object payload) except -1:
    if len(payload) != pkt.payload_len:
        return False
    if type(payload) is bytes:
        return gse_pattern_ok(<const unsigned char *>PyBytes_AS_STRING(payload),
                              len(<bytes>payload), pkt.src, pkt.msg_id, pkt.psn)
    return payload == payload_pattern(pkt.src, pkt.msg_id, pkt.psn, pkt.payload_len)
