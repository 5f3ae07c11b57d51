"""Tests of gse.wire.codec: round trips, and every kind of malformed datagram; and of
gse.wire.linkrate, the serialisation time every runtime uses."""

import random
import struct
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gse.wire.codec import (HEADER, MAX_DATAGRAM, REASONS, WireError, decode, encode,
                            payload_pattern, verify_payload)
from gse.wire.linkrate import wire_time_ps
from gse.wire.packet import (ACK, CNP, DATA, F_ECN_CE, F_LAST, F_RETX, F_SEC, F_TRIMMED,
                             F_UNSCHED, GRANT, HEADER_BYTES, KNOWN_FLAGS, NACK, PAUSE,
                             PRIO_CONTROL, PRIO_DATA, REQUEST, RESUME, WIRE_VERSION, Packet,
                             make_packet)
from topologies import serialisation_ps

U8 = st.integers(0, 0xFF)
U16 = st.integers(0, 0xFFFF)
U32 = st.integers(0, 0xFFFFFFFF)
U64 = st.integers(0, 0xFFFFFFFFFFFFFFFF)
FLAGS = st.integers(0, KNOWN_FLAGS)

FIELD_NAMES = ("kind", "flags", "src", "dst", "msg_id", "psn", "entropy", "payload_len",
               "msg_len", "credit", "aux", "sack_base", "sack_bits", "ts", "prio")
FIELD_WIDTH = {"kind": 8, "flags": 16, "src": 32, "dst": 32, "msg_id": 32, "psn": 32,
               "entropy": 16, "payload_len": 16, "msg_len": 32, "credit": 32, "aux": 32,
               "sack_base": 32, "sack_bits": 64, "ts": 64, "prio": 8}

# The worked example of docs/wire-format.md: pins the layout.
GOLDEN_ACK_HEX = (
    "0103000100000003000000070000002a00000011123400000001000000000000"
    "0000000000000010000000000000000d0000001cbe991a08010000006be6f561"
)


def golden_ack():
    return Packet(ACK, 3, 7, msg_id=42, psn=17, entropy=0x1234, flags=F_ECN_CE,
                  msg_len=65536, sack_base=16, sack_bits=0b1101, ts=123456789000,
                  prio=PRIO_CONTROL)


def raw(version=WIRE_VERSION, kind=GRANT, flags=0, src=1, dst=2, msg_id=3, psn=4, entropy=5,
        payload_len=0, msg_len=0, credit=0, aux=0, sack_base=0, sack_bits=0, ts=0,
        prio=PRIO_CONTROL, res8=0, res16=0, payload=b"", checksum=None):
    """A datagram built by hand, with a correct checksum unless one is given."""
    header = bytearray(HEADER.pack(version, kind, flags, src, dst, msg_id, psn, entropy,
                                   payload_len, msg_len, credit, aux, sack_base, sack_bits,
                                   ts, prio, res8, res16, 0))
    if checksum is None:
        checksum = zlib.crc32(bytes(header[:60]) + payload)
    struct.pack_into("!I", header, 60, checksum)
    return bytes(header) + payload


def reason_of(data, **kw):
    with pytest.raises(WireError) as info:
        decode(data, **kw)
    assert info.value.reason in REASONS
    assert isinstance(info.value, ValueError)
    return info.value.reason, str(info.value)


@st.composite
def packets(draw, kinds=st.integers(DATA, CNP), max_payload=0xFFFF):
    kind = draw(kinds)
    flags = draw(FLAGS)
    sack_base = draw(U32)
    if kind == ACK:
        sack_base &= ~7
    payload_len = draw(st.one_of(st.integers(0, 64), st.integers(0, max_payload)))
    pkt = Packet(kind, draw(U32), draw(U32), msg_id=draw(U32), psn=draw(U32),
                 entropy=draw(U16), payload_len=payload_len, flags=flags, msg_len=draw(U32),
                 credit=draw(U32), aux=draw(U32), sack_base=sack_base, sack_bits=draw(U64),
                 ts=draw(U64), prio=draw(U8))
    if kind == DATA and flags & F_TRIMMED:
        pkt.size = HEADER_BYTES
    elif kind == DATA and draw(st.booleans()):
        pkt.payload = random.Random(draw(U32)).randbytes(payload_len)
    return pkt


def expected_payload(pkt):
    if pkt.kind != DATA or pkt.flags & F_TRIMMED:
        return None
    if pkt.payload is not None:
        return pkt.payload
    return payload_pattern(pkt.src, pkt.msg_id, pkt.psn, pkt.payload_len)


# ---------------------------------------------------------------- the keyword form

HEADER_FIELDS = ("kind", "src", "dst", "msg_id", "psn", "entropy", "payload_len", "flags",
                 "msg_len", "credit", "aux", "sack_base", "sack_bits", "ts", "prio")


@given(packets())
def test_make_packet_is_the_constructor_with_every_field_named(pkt):
    named = make_packet(**{name: getattr(pkt, name) for name in HEADER_FIELDS})
    positional = Packet(*(getattr(pkt, name) for name in HEADER_FIELDS))
    assert type(named) is Packet
    assert named.fields() == positional.fields() == pkt.fields()
    assert (named.size, named.corrupt, named.payload, named.ingress, named.qnext) == \
        (positional.size, False, None, -1, None)


def test_make_packet_defaults_are_the_constructors_and_it_takes_no_position():
    assert make_packet(kind=GRANT, src=1, dst=2).fields() == Packet(GRANT, 1, 2).fields()
    assert make_packet(kind=DATA, src=1, dst=2).prio == PRIO_CONTROL
    with pytest.raises(TypeError):
        make_packet(DATA, 1, 2)                       # every field by name
    with pytest.raises(TypeError):
        make_packet(kind=DATA, src=1)                 # kind, src and dst are required


# ---------------------------------------------------------------- round trips

@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(packets(max_payload=MAX_DATAGRAM - HEADER_BYTES))
def test_round_trip_every_kind(pkt):
    data = encode(pkt)
    assert isinstance(data, bytes)
    payload = expected_payload(pkt)
    assert len(data) == HEADER_BYTES + (len(payload) if payload is not None else 0)
    assert len(data) == pkt.size
    back = decode(data)
    assert back.fields() == pkt.fields()
    assert back.payload == payload
    assert back.size == pkt.size
    assert back.corrupt is False
    assert encode(back) == data
    if pkt.kind == DATA and pkt.payload is None:
        assert verify_payload(back)


@pytest.mark.parametrize("kind", range(DATA, CNP + 1))
def test_round_trip_extremes(kind):
    for value in (0, 1):
        top = {n: (1 << FIELD_WIDTH[n]) - 1 for n in FIELD_NAMES if n not in ("kind", "flags")}
        if value == 0:
            top = {n: 0 for n in top}
        if kind == ACK:
            top["sack_base"] &= ~7
        if kind == DATA:
            top["payload_len"] = 1000
        pkt = Packet(kind, top.pop("src"), top.pop("dst"), flags=KNOWN_FLAGS & ~F_TRIMMED,
                     **top)
        back = decode(encode(pkt))
        assert back.fields() == pkt.fields()


def test_trimmed_data_is_header_only():
    pkt = Packet(DATA, 1, 2, msg_id=9, psn=4, payload_len=4096, prio=PRIO_DATA,
                 flags=F_LAST)
    pkt.payload = payload_pattern(1, 9, 4, 4096)
    assert len(encode(pkt)) == HEADER_BYTES + 4096
    pkt.trim()
    data = encode(pkt)
    assert len(data) == HEADER_BYTES
    back = decode(data)
    assert back.payload_len == 4096
    assert back.flags == F_LAST | F_TRIMMED
    assert back.size == HEADER_BYTES
    assert back.payload is None
    assert back.prio == PRIO_CONTROL


def test_decode_accepts_buffers():
    data = encode(Packet(DATA, 1, 2, psn=3, payload_len=50))
    for buf in (bytearray(data), memoryview(data), memoryview(bytearray(data))):
        back = decode(buf)
        assert back.fields() == decode(data).fields()
        assert isinstance(back.payload, bytes)


def test_golden_ack():
    data = encode(golden_ack())
    assert data.hex() == GOLDEN_ACK_HEX
    assert decode(bytes.fromhex(GOLDEN_ACK_HEX)).fields() == golden_ack().fields()


# ---------------------------------------------------------------- malformed datagrams

@pytest.mark.parametrize("length", range(HEADER_BYTES))
def test_truncated_header(length):
    data = encode(golden_ack())
    reason, msg = reason_of(data[:length])
    assert reason == "truncated"
    assert msg == "truncated datagram: %d bytes, header needs 64" % length


@pytest.mark.parametrize("version", [0, 2, 7, 255])
def test_wrong_version(version):
    reason, msg = reason_of(raw(version=version))
    assert reason == "version"
    assert msg == "unsupported wire version %d (expected 1)" % version


@given(st.integers(CNP + 1, 255))
def test_unknown_kind(kind):
    reason, msg = reason_of(raw(kind=kind))
    assert reason == "kind"
    assert msg == "unknown packet kind %d" % kind


@given(st.integers(0, 0xFFFF).filter(lambda f: f & ~(KNOWN_FLAGS | F_SEC)))
def test_unknown_flags(flags):
    reason, msg = reason_of(raw(kind=GRANT, flags=flags & ~F_SEC))
    assert reason == "flags"
    assert msg == "unknown flags 0x%x" % (flags & ~(KNOWN_FLAGS | F_SEC))


def test_a_secured_datagram_without_its_trailer_is_malformed():
    reason, msg = reason_of(raw(kind=GRANT, flags=F_SEC))
    assert reason == "length" and "trailer" in msg


@pytest.mark.parametrize("res8,res16", [(1, 0), (0, 1), (0xFF, 0xFFFF)])
def test_reserved_bytes(res8, res16):
    reason, msg = reason_of(raw(res8=res8, res16=res16))
    assert reason == "reserved"
    assert msg == "non-zero reserved bytes"


def test_bad_checksum():
    good = raw()
    reason, msg = reason_of(good[:60] + bytes(4))
    assert reason == "checksum"
    assert msg.startswith("checksum mismatch")


@st.composite
def encoded_with_bit(draw):
    pkt = draw(packets(max_payload=300))
    data = encode(pkt)
    return data, draw(st.integers(0, len(data) * 8 - 1))


@settings(max_examples=500)
@given(encoded_with_bit())
def test_any_single_bit_flip_rejected(case):
    data, bit = case
    flipped = bytearray(data)
    flipped[bit >> 3] ^= 0x80 >> (bit & 7)
    with pytest.raises(WireError) as info:
        decode(bytes(flipped))
    assert info.value.reason in REASONS


@pytest.mark.parametrize("offset", [4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 48, 56, 61, 70])
def test_flip_in_plain_field_is_checksum(offset):
    pkt = Packet(DATA, 1, 2, msg_id=5, psn=6, payload_len=10, prio=PRIO_DATA)
    flipped = bytearray(encode(pkt))
    flipped[offset] ^= 0x01
    assert reason_of(bytes(flipped))[0] == "checksum"


@pytest.mark.parametrize("carried", [0, 1, 99, 101, 200])
def test_payload_disagrees_with_payload_len(carried):
    data = raw(kind=DATA, payload_len=100, payload=bytes(range(256))[:carried],
               prio=PRIO_DATA)
    reason, msg = reason_of(data)
    assert reason == "length"
    assert msg == "payload length 100 but datagram carries %d payload bytes" % carried


def test_cut_payload_of_encoded_data():
    data = encode(Packet(DATA, 1, 2, payload_len=4096))
    reason, msg = reason_of(data[:HEADER_BYTES + 100])
    assert (reason, msg) == ("length", "payload length 4096 but datagram carries 100 payload bytes")


@pytest.mark.parametrize("kind", [REQUEST, GRANT, ACK, NACK, PAUSE, RESUME, CNP])
def test_payload_on_control_packet(kind):
    reason, msg = reason_of(raw(kind=kind, payload=b"xyz"))
    assert reason == "length"
    assert msg.startswith("payload on a %s packet" % ("DATA REQUEST GRANT ACK NACK PAUSE "
                                                      "RESUME CNP".split()[kind]))


def test_payload_on_trimmed_data():
    reason, msg = reason_of(raw(kind=DATA, flags=F_TRIMMED, payload_len=3, payload=b"xyz"))
    assert reason == "length"
    assert msg.startswith("payload on a trimmed DATA packet")


def test_sack_base_alignment():
    reason, msg = reason_of(raw(kind=ACK, sack_base=13))
    assert (reason, msg) == ("field", "sack_base 13 not a multiple of 8")
    decode(raw(kind=ACK, sack_base=16))
    decode(raw(kind=GRANT, sack_base=13))   # only meaningful (and checked) on an ACK


def test_oversized():
    data = encode(Packet(DATA, 1, 2, payload_len=200))
    reason, msg = reason_of(data, max_datagram=100)
    assert (reason, msg) == ("oversized", "datagram of 264 bytes exceeds the maximum 100")
    assert decode(data, max_datagram=264).payload_len == 200
    big = encode(Packet(DATA, 1, 2, payload_len=0xFFFF))
    assert len(big) == HEADER_BYTES + 0xFFFF > MAX_DATAGRAM
    assert reason_of(big)[0] == "oversized"
    assert decode(big, max_datagram=len(big)).payload_len == 0xFFFF


@settings(max_examples=500)
@given(st.binary(max_size=300))
def test_garbage_only_raises_wire_error(data):
    try:
        pkt = decode(data)
    except WireError as exc:
        assert exc.reason in REASONS
    else:
        assert encode(pkt) == data


@st.composite
def plausible_headers(draw):
    """Random header words with version 1 and a valid checksum: exercises the later checks."""
    kind = draw(st.integers(0, 10))
    payload = draw(st.binary(max_size=40))
    payload_len = draw(st.one_of(st.just(len(payload)), U16))
    return raw(kind=kind, flags=draw(st.one_of(FLAGS, U16)), payload_len=payload_len,
               sack_base=draw(U32), prio=draw(U8), res8=draw(st.sampled_from([0, 0, 1])),
               res16=draw(st.sampled_from([0, 0, 2])), payload=payload)


@settings(max_examples=500)
@given(plausible_headers())
def test_plausible_garbage_only_raises_wire_error(data):
    try:
        pkt = decode(data)
    except WireError as exc:
        assert exc.reason in REASONS
    else:
        assert encode(pkt) == data


def test_decode_rejects_non_buffer():
    with pytest.raises(TypeError):
        decode("not bytes")


# ---------------------------------------------------------------- encode refuses

@pytest.mark.parametrize("name", [n for n in FIELD_NAMES if n != "kind"])
@pytest.mark.parametrize("bad", ["negative", "too_big"])
def test_encode_refuses_out_of_range(name, bad):
    pkt = Packet(REQUEST, 1, 2)
    value = -1 if bad == "negative" else 1 << FIELD_WIDTH[name]
    setattr(pkt, name, value)
    with pytest.raises(ValueError) as info:
        encode(pkt)
    assert "field %s=" % name in str(info.value)


@pytest.mark.parametrize("kind", [-1, 8, 255, 256])
def test_encode_refuses_unknown_kind(kind):
    pkt = Packet(GRANT, 1, 2)
    pkt.kind = kind
    with pytest.raises(ValueError, match="unknown packet kind"):
        encode(pkt)


def test_encode_refuses_unknown_flags():
    with pytest.raises(ValueError, match="unknown flags 0x4000"):
        encode(Packet(GRANT, 1, 2, flags=0x4000 | F_RETX))


def test_encode_refuses_non_integer():
    with pytest.raises(ValueError, match="ts"):
        encode(Packet(DATA, 1, 2, payload_len=4, ts=1.5))


def test_encode_refuses_payload_length_mismatch():
    pkt = Packet(DATA, 1, 2, payload_len=100)
    pkt.payload = bytes(99)
    with pytest.raises(ValueError, match="payload length 99"):
        encode(pkt)
    pkt = Packet(DATA, 1, 2, payload_len=70000)
    with pytest.raises(ValueError, match="payload_len"):
        encode(pkt)


def test_encode_refuses_payload_where_none_belongs():
    pkt = Packet(GRANT, 1, 2)
    pkt.payload = b"abc"
    with pytest.raises(ValueError, match="GRANT"):
        encode(pkt)
    pkt = Packet(DATA, 1, 2, payload_len=3, flags=F_TRIMMED)
    pkt.payload = b"abc"
    with pytest.raises(ValueError, match="trimmed"):
        encode(pkt)


def test_encode_refuses_unaligned_sack_base():
    with pytest.raises(ValueError, match="sack_base 13 not a multiple of 8"):
        encode(Packet(ACK, 1, 2, sack_base=13))


def test_corrupt_packet_fails_checksum():
    pkt = Packet(DATA, 1, 2, payload_len=10, flags=F_UNSCHED)
    pkt.corrupt = True
    assert reason_of(encode(pkt))[0] == "checksum"


# ---------------------------------------------------------------- payload pattern

def test_payload_pattern():
    assert payload_pattern(1, 2, 3, 0) == b""
    for n in (1, 7, 8, 9, 100, 4096):
        p = payload_pattern(1, 2, 3, n)
        assert len(p) == n
        assert p == payload_pattern(1, 2, 3, n)
        assert p == payload_pattern(1, 2, 3, 4096)[:n]
    block = payload_pattern(1, 2, 3, 8)
    assert block == struct.pack("!Q", ((1 << 32) | 2) ^ ((3 * 0x9E3779B97F4A7C15) % 2**64))
    assert payload_pattern(1, 2, 3, 64) == block * 8
    others = {payload_pattern(*k, 16) for k in [(1, 2, 3), (1, 2, 4), (1, 3, 3), (2, 2, 3),
                                                (0, 0, 0), (2, 1, 3)]}
    assert len(others) == 6


@given(U32, U32, U32, st.integers(0, 2000))
def test_verify_payload(src, msg_id, psn, n):
    pkt = Packet(DATA, src, 9, msg_id=msg_id, psn=psn, payload_len=n)
    assert verify_payload(pkt)            # no payload bytes (simulation): nothing to check
    back = decode(encode(pkt))
    assert verify_payload(back)
    if n:
        wrong = bytearray(back.payload)
        wrong[n // 2] ^= 0xFF
        back.payload = bytes(wrong)
        assert not verify_payload(back)
        back.payload = payload_pattern(src, msg_id, psn + 1, n)
        if back.payload != payload_pattern(src, msg_id, psn, n):
            assert not verify_payload(back)
        back.payload = payload_pattern(src, msg_id, psn, n - 1)
        assert not verify_payload(back)


def test_verify_payload_other_kinds():
    assert verify_payload(Packet(GRANT, 1, 2))
    pkt = Packet(GRANT, 1, 2)
    pkt.payload = b"x"
    assert not verify_payload(pkt)
    pkt = Packet(DATA, 1, 2, payload_len=10)
    pkt.trim()
    assert verify_payload(pkt)


def test_wire_time_is_exact_and_rounded_up():
    assert wire_time_ps(4160, 100_000) == 332_800        # a 4,096 B packet at 100 Gb/s
    assert wire_time_ps(64, 800_000) == 640
    assert wire_time_ps(1, 3) == 2_666_667               # ceil(8,000,000 / 3)
    assert wire_time_ps(0, 100_000) == 0


@given(st.integers(0, 1 << 20), st.integers(1, 1_600_000))
def test_wire_time_is_the_topologys_serialisation_time(nbytes, mbps):
    """One formula: the runtimes' (rate in Mb/s) and the topology's (rate in Gb/s)."""
    assert wire_time_ps(nbytes, mbps) == serialisation_ps(nbytes, mbps / 1000)
