"""Encoding and decoding of packets as UDP datagrams (layout in ``docs/wire-format.md``).

A datagram is the fixed 64-byte header (network byte order) followed, for an untrimmed DATA
packet only, by ``payload_len`` payload bytes.  The last four header bytes are a CRC-32
(:func:`zlib.crc32`; python-isal's, which gives the same values faster, when installed)
over header bytes 0..59 followed by the payload.

The simulator passes :class:`~gse.wire.packet.Packet` objects without encoding them; the
runtimes encode and decode through :mod:`gse.wire.fastcodec`, which is this module in the
pure-Python build and, compiled, a C codec checked against it.
:func:`decode` raises :class:`WireError` (a ``ValueError``) for anything malformed, with a
short stable ``reason`` so runtimes can count bad datagrams by category and drop them.

Plain functions over a precompiled :class:`struct.Struct`, so the module compiles unchanged
with Cython.
"""

import struct

from gse.wire.packet import (ACK, DATA, F_SEC, F_TRIMMED, HEADER_BYTES, KIND_NAMES, KNOWN_FLAGS,
                             MAX_KIND, WIRE_VERSION, new_packet)

try:        # Intel ISA-L's CRC-32 (carry-less multiplication): zlib.crc32's results, faster
    from isal.isal_zlib import crc32
except ImportError:      # python-isal is optional (pip install '.[fast]')
    from zlib import crc32

# version kind flags src dst msg_id psn entropy payload_len msg_len credit aux sack_base
# sack_bits ts prio reserved8 reserved16 checksum
HEADER = struct.Struct("!BBHIIIIHHIIIIQQBBHI")
CHECKSUM = struct.Struct("!I")
CHECKSUM_OFFSET = 60
PAYLOAD_OFFSET = HEADER_BYTES
MAX_DATAGRAM = 65535
# The security trailer of a datagram with F_SEC (gse.runtimes.udp.secure): after the
# payload, its 16-byte tag (untrimmed DATA only), then the TSC (8 bytes: epoch 16 bits,
# counter 48 bits) and a 16-byte tag over the header -- the last SEC_TRAILER bytes,
# which a trimmed packet keeps.
SEC_COUNTER = 8
SEC_TAG = 16
SEC_TRAILER = SEC_COUNTER + SEC_TAG

# Fields of Packet.fields() after kind/flags, with their wire widths (for encode's errors).
_FIELD_LIMITS = (
    ("kind", 0xFF), ("flags", 0xFFFF), ("src", 0xFFFFFFFF), ("dst", 0xFFFFFFFF),
    ("msg_id", 0xFFFFFFFF), ("psn", 0xFFFFFFFF), ("entropy", 0xFFFF),
    ("payload_len", 0xFFFF), ("msg_len", 0xFFFFFFFF), ("credit", 0xFFFFFFFF),
    ("aux", 0xFFFFFFFF), ("sack_base", 0xFFFFFFFF), ("sack_bits", 0xFFFFFFFFFFFFFFFF),
    ("ts", 0xFFFFFFFFFFFFFFFF), ("prio", 0xFF),
)

_MASK64 = 0xFFFFFFFFFFFFFFFF
_GOLDEN = 0x9E3779B97F4A7C15
_SEED = struct.Struct("!Q")

# Stable reason categories carried by WireError.reason.
R_TRUNCATED = "truncated"
R_VERSION = "version"
R_KIND = "kind"
R_LENGTH = "length"
R_CHECKSUM = "checksum"
R_FLAGS = "flags"
R_RESERVED = "reserved"
R_OVERSIZED = "oversized"
R_FIELD = "field"
REASONS = (R_TRUNCATED, R_VERSION, R_KIND, R_LENGTH, R_CHECKSUM, R_FLAGS, R_RESERVED,
           R_OVERSIZED, R_FIELD)


class WireError(ValueError):
    """A malformed datagram.  ``reason`` is one of :data:`REASONS`; the message says what."""

    def __init__(self, reason, message):
        ValueError.__init__(self, message)
        self.reason = reason


def payload_pattern(src, msg_id, psn, length):
    """Deterministic payload of ``length`` bytes for packet ``psn`` of message ``msg_id``.

    The 8-byte seed is the big-endian 64-bit value
    ``((src << 32) | msg_id) XOR (psn * 0x9E3779B97F4A7C15 mod 2**64)``
    (each input taken modulo 2**32), repeated and cut to ``length``.  A retransmission of the
    same psn carries the same bytes.
    """
    if length <= 0:
        return b""
    seed = ((((src & 0xFFFFFFFF) << 32) | (msg_id & 0xFFFFFFFF))
            ^ (((psn & 0xFFFFFFFF) * _GOLDEN) & _MASK64))
    block = _SEED.pack(seed)
    return (block * ((length >> 3) + 1))[:length]


def verify_payload(pkt):
    """True if ``pkt`` carries the payload :func:`payload_pattern` prescribes.

    An untrimmed DATA packet passes if its payload equals the pattern for its (src, msg_id,
    psn, payload_len), or if it has no payload bytes at all (a simulated packet: nothing to
    check).  Trimmed DATA and the other kinds pass only if they carry no payload bytes.
    """
    payload = pkt.payload
    if pkt.kind != DATA or pkt.flags & F_TRIMMED:
        return payload is None or len(payload) == 0
    if payload is None:
        return True
    return (len(payload) == pkt.payload_len
            and payload == payload_pattern(pkt.src, pkt.msg_id, pkt.psn, pkt.payload_len))


def _kind_name(kind):
    if 0 <= kind <= MAX_KIND:
        return KIND_NAMES[kind]
    return "kind %d" % kind


def _field_error(pkt):
    """Name the first field of ``pkt`` that does not fit its wire width."""
    values = pkt.fields()
    for i in range(len(_FIELD_LIMITS)):
        name, limit = _FIELD_LIMITS[i]
        value = values[i]
        if not isinstance(value, int):
            return ValueError("field %s=%r is not an integer" % (name, value))
        if value < 0 or value > limit:
            return ValueError("field %s=%d does not fit its wire width (0..%d)"
                              % (name, value, limit))
    return ValueError("packet fields do not fit the header: %r" % (values,))


def encode(pkt):
    """The datagram for ``pkt``: header plus, for untrimmed DATA, the payload.

    An untrimmed DATA packet without payload bytes gets :func:`payload_pattern`.  Raises
    ``ValueError`` if a field does not fit its width, the kind or flags are unknown, an ACK's
    sack_base is not a multiple of 8, or the payload disagrees with ``payload_len`` (or is
    present on a packet that carries none).  Anything ``encode`` accepts, ``decode`` accepts.
    A packet marked ``corrupt`` (emulated bit flip) is encoded with an inverted checksum.
    """
    kind = pkt.kind
    flags = pkt.flags
    payload_len = pkt.payload_len
    payload = pkt.payload
    if not isinstance(kind, int) or kind < 0 or kind > MAX_KIND:
        raise ValueError("unknown packet kind %r" % (kind,))
    if not isinstance(flags, int) or flags < 0 or flags > 0xFFFF:
        raise _field_error(pkt)
    if flags & ~KNOWN_FLAGS:
        raise ValueError("unknown flags 0x%x" % (flags & ~KNOWN_FLAGS,))
    if kind == ACK and isinstance(pkt.sack_base, int) and pkt.sack_base & 7:
        raise ValueError("sack_base %d not a multiple of 8" % (pkt.sack_base,))
    carries = kind == DATA and not (flags & F_TRIMMED)
    if carries:
        if payload is None:
            if not isinstance(payload_len, int) or payload_len < 0 or payload_len > 0xFFFF:
                raise _field_error(pkt)
            payload = payload_pattern(pkt.src, pkt.msg_id, pkt.psn, payload_len)
        elif len(payload) != payload_len:
            raise ValueError("payload length %d disagrees with payload_len %r"
                             % (len(payload), payload_len))
        n = len(payload)
    else:
        if payload is not None and len(payload) != 0:
            if kind == DATA:
                raise ValueError("payload of %d bytes on a trimmed DATA packet"
                                 % (len(payload),))
            raise ValueError("payload of %d bytes on a %s packet"
                             % (len(payload), _kind_name(kind)))
        n = 0
    buf = bytearray(HEADER_BYTES + n)
    try:
        HEADER.pack_into(buf, 0, WIRE_VERSION, kind, flags, pkt.src, pkt.dst, pkt.msg_id,
                         pkt.psn, pkt.entropy, payload_len, pkt.msg_len, pkt.credit, pkt.aux,
                         pkt.sack_base, pkt.sack_bits, pkt.ts, pkt.prio, 0, 0, 0)
    except struct.error:
        raise _field_error(pkt) from None
    view = memoryview(buf)
    if n:
        view[PAYLOAD_OFFSET:] = payload
    crc = crc32(view[:CHECKSUM_OFFSET])
    if n:
        crc = crc32(view[PAYLOAD_OFFSET:], crc)
    if pkt.corrupt:
        crc ^= 0xFFFFFFFF
    CHECKSUM.pack_into(buf, CHECKSUM_OFFSET, crc)
    view.release()
    return bytes(buf)


def decode(data, max_datagram=MAX_DATAGRAM, payload=True):
    """The :class:`Packet` carried by datagram ``data`` (bytes, bytearray or memoryview).

    Raises :class:`WireError` for a malformed datagram.  Checks run in this order: oversized,
    truncated, version, kind, length (payload vs. kind, trim flag and payload_len), checksum,
    flags, reserved, field (ACK sack_base alignment).  ``payload=False``: the same checks
    (the checksum covers the payload), but the payload is not copied out of ``data``
    (``pkt.payload`` stays None): what a switch or a host that checks it in place needs.
    """
    view = memoryview(data)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    n = len(view)
    if n > max_datagram:
        raise WireError(R_OVERSIZED, "datagram of %d bytes exceeds the maximum %d"
                        % (n, max_datagram))
    if n < HEADER_BYTES:
        raise WireError(R_TRUNCATED, "truncated datagram: %d bytes, header needs %d"
                        % (n, HEADER_BYTES))
    (version, kind, flags, src, dst, msg_id, psn, entropy, payload_len, msg_len, credit,
     aux, sack_base, sack_bits, ts, prio, res8, res16, checksum) = HEADER.unpack_from(view, 0)
    if version != WIRE_VERSION:
        raise WireError(R_VERSION, "unsupported wire version %d (expected %d)"
                        % (version, WIRE_VERSION))
    if kind > MAX_KIND:
        raise WireError(R_KIND, "unknown packet kind %d" % kind)
    carries = kind == DATA and not (flags & F_TRIMMED)
    trailer = 0
    if flags & F_SEC:
        trailer = SEC_TRAILER + (SEC_TAG if carries else 0)
        if n < HEADER_BYTES + trailer:
            raise WireError(R_LENGTH, "secured datagram of %d bytes has no room for its "
                            "%d-byte trailer" % (n, trailer))
    carried = n - HEADER_BYTES - trailer
    if carries:
        if carried != payload_len:
            raise WireError(R_LENGTH, "payload length %d but datagram carries %d payload bytes"
                            % (payload_len, carried))
    elif carried:
        if kind == DATA:
            raise WireError(R_LENGTH, "payload on a trimmed DATA packet (%d bytes)" % carried)
        raise WireError(R_LENGTH, "payload on a %s packet (%d bytes)"
                        % (KIND_NAMES[kind], carried))
    crc = crc32(view[:CHECKSUM_OFFSET])
    if n > HEADER_BYTES:
        crc = crc32(view[PAYLOAD_OFFSET:], crc)
    if crc != checksum:
        raise WireError(R_CHECKSUM, "checksum mismatch: header says 0x%08x, computed 0x%08x"
                        % (checksum, crc))
    if flags & ~(KNOWN_FLAGS | F_SEC):
        raise WireError(R_FLAGS, "unknown flags 0x%x" % (flags & ~(KNOWN_FLAGS | F_SEC)))
    if res8 or res16:
        raise WireError(R_RESERVED, "non-zero reserved bytes")
    if kind == ACK and sack_base & 7:
        raise WireError(R_FIELD, "sack_base %d not a multiple of 8" % sack_base)
    pkt = new_packet(kind, src, dst, msg_id, psn, entropy, payload_len, flags, msg_len, credit,
                     aux, sack_base, sack_bits, ts, prio)   # Packet(...), positionally
    if carries:
        if payload:
            pkt.payload = view[PAYLOAD_OFFSET:PAYLOAD_OFFSET + carried].tobytes()
    elif kind == DATA:
        pkt.size = HEADER_BYTES
    if trailer:
        pkt.size += trailer               # the emulated links carry the whole datagram
    return pkt


def reframe(raw, pkt):
    """The secured datagram ``raw`` (F_SEC) after a switch changed ``pkt`` (decoded from
    it): an ECN mark (a flag), a trim (the payload and its tag go, the TSC and the
    header's tag stay) or an emulated corruption.  The trailer is kept byte for byte: the
    tags exclude the bits a switch may change (docs/wire-format.md), so the destination
    still authenticates the packet."""
    kind = pkt.kind
    flags = pkt.flags
    payload_len = pkt.payload_len
    was_trimmed = raw[2] << 8 | raw[3]
    was_trimmed &= F_TRIMMED
    if kind == DATA and not was_trimmed and flags & F_TRIMMED:
        body = raw[len(raw) - SEC_TRAILER:]     # trimmed here: TSC and header tag stay
    else:
        body = raw[HEADER_BYTES:]
    buf = bytearray(HEADER_BYTES)
    HEADER.pack_into(buf, 0, WIRE_VERSION, kind, flags, pkt.src, pkt.dst, pkt.msg_id,
                     pkt.psn, pkt.entropy, payload_len, pkt.msg_len, pkt.credit, pkt.aux,
                     pkt.sack_base, pkt.sack_bits, pkt.ts, pkt.prio, 0, 0, 0)
    crc = crc32(body, crc32(memoryview(buf)[:CHECKSUM_OFFSET]))
    if pkt.corrupt:
        crc ^= 0xFFFFFFFF
    CHECKSUM.pack_into(buf, CHECKSUM_OFFSET, crc)
    return bytes(buf) + bytes(body)
