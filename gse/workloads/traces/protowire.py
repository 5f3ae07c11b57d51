"""The protobuf wire format, by hand: enough to read and write Chakra execution traces.

Why not the ``protobuf`` package: a Chakra trace uses five wire types and a dozen fields,
the schema is public (``et_def.proto``), and a 150-line decoder keeps the project free of
a compiled dependency and of generated code that must match a schema version.  Errors
carry the byte offset, so the caller can say which record of which file is broken.

Wire format (protobuf encoding guide): a message is a sequence of fields, each a varint
key ``(field_number << 3) | wire_type`` and a value: 0 varint, 1 fixed 64-bit little
endian, 2 length-delimited (varint length then bytes: strings, bytes, sub-messages, packed
repeated scalars), 5 fixed 32-bit.  Types 3 and 4 (groups) are deprecated and refused.
A Chakra ``.et`` file is a stream of length-delimited messages: varint length, message.
"""

import struct

VARINT, I64, LEN, I32 = 0, 1, 2, 5


class WireError(ValueError):
    """Malformed protobuf bytes; ``offset`` is where in the buffer it was noticed."""

    def __init__(self, message, offset):
        super().__init__("%s (byte %d)" % (message, offset))
        self.offset = offset


def read_varint(buf, pos, end=None):
    """(value, next position) of the varint at ``pos``; at most 10 bytes (64 bits)."""
    end = len(buf) if end is None else end
    result = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise WireError("truncated varint", start)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift >= 70:
            raise WireError("varint longer than 10 bytes", start)
    return result & 0xFFFFFFFFFFFFFFFF, pos


def to_signed64(v):
    """A varint read as int64/int32 (two's complement over 64 bits)."""
    return v - (1 << 64) if v >= 1 << 63 else v


def zigzag_decode(v):
    return (v >> 1) ^ -(v & 1)


def zigzag_encode(v):
    return (v << 1) ^ (v >> 63) if v < 0 else v << 1


def iter_fields(buf, start=0, end=None):
    """Yield ``(field_number, wire_type, value, offset)`` over one message.

    ``value`` is an int for VARINT, I64 and I32 (raw unsigned bits) and a ``bytes`` slice
    for LEN.  ``offset`` is the position of the field's key, for error messages.
    """
    end = len(buf) if end is None else end
    pos = start
    while pos < end:
        at = pos
        key, pos = read_varint(buf, pos, end)
        field, wtype = key >> 3, key & 7
        if field == 0:
            raise WireError("field number 0", at)
        if wtype == VARINT:
            value, pos = read_varint(buf, pos, end)
        elif wtype == I64:
            if pos + 8 > end:
                raise WireError("truncated 64-bit field %d" % field, at)
            value = struct.unpack_from("<Q", buf, pos)[0]
            pos += 8
        elif wtype == I32:
            if pos + 4 > end:
                raise WireError("truncated 32-bit field %d" % field, at)
            value = struct.unpack_from("<I", buf, pos)[0]
            pos += 4
        elif wtype == LEN:
            n, pos = read_varint(buf, pos, end)
            if pos + n > end:
                raise WireError("field %d claims %d bytes, only %d left" % (field, n, end - pos),
                                at)
            value = bytes(buf[pos:pos + n])
            pos += n
        else:
            raise WireError("unsupported wire type %d (field %d)" % (wtype, field), at)
        yield field, wtype, value, at


def unpack_repeated(wtype, value, kind):
    """Values of one occurrence of a repeated scalar field, packed (LEN) or not.

    ``kind`` is ``"varint"``, ``"i64"`` or ``"i32"``: how each element is stored.
    """
    if wtype != LEN:
        return [value]
    out = []
    if kind == "varint":
        pos = 0
        while pos < len(value):
            v, pos = read_varint(value, pos)
            out.append(v)
    else:
        width = 8 if kind == "i64" else 4
        if len(value) % width:
            raise WireError("packed %s list of %d bytes" % (kind, len(value)), 0)
        fmt = "<%d%s" % (len(value) // width, "Q" if width == 8 else "I")
        out.extend(struct.unpack(fmt, value))
    return out


def split_stream(data):
    """The length-delimited messages of a stream: [(offset of the length, bytes)]."""
    out = []
    pos = 0
    n = len(data)
    while pos < n:
        at = pos
        length, pos = read_varint(data, pos)
        if pos + length > n:
            raise WireError("message claims %d bytes but the file ends after %d"
                            % (length, n - pos), at)
        out.append((at, data[pos:pos + length]))
        pos += length
    return out


# -- encoding -------------------------------------------------------------------------------

def varint(v):
    if v < 0:
        v &= 0xFFFFFFFFFFFFFFFF          # int64 negatives: ten bytes, as protobuf does
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wtype):
    return varint((field << 3) | wtype)


def f_varint(field, v):
    return key(field, VARINT) + varint(v)


def f_bytes(field, data):
    return key(field, LEN) + varint(len(data)) + data


def f_string(field, text):
    return f_bytes(field, text.encode("utf-8"))


def f_packed_varints(field, values):
    return f_bytes(field, b"".join(varint(v) for v in values)) if values else b""


def delimited(message):
    """A message framed for a stream: varint length then bytes."""
    return varint(len(message)) + message
