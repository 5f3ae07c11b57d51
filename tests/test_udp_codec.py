"""The runtimes' codec (``gse.wire.fastcodec``) agrees with the reference ``gse.wire.codec``.

``decode_datagram`` accepts only what ``decode`` accepts and builds the same packet; every
datagram it doubts goes to ``decode`` for the verdict.  Checked on valid packets of every
kind and on mutated, truncated and extended copies of them.
"""

import zlib

from hypothesis import given
from hypothesis import strategies as st

from gse.wire.fastcodec import decode_datagram
from gse.wire.codec import WireError, decode, encode
from gse.wire.packet import ACK, DATA, F_TRIMMED, KNOWN_FLAGS, MAX_KIND, PRIO_DATA, Packet


def outcome(fn, data, limit):
    try:
        pkt = fn(data, limit)
    except WireError as exc:
        return ("error", exc.reason)
    return ("ok", pkt.fields(), pkt.size, pkt.payload, pkt.corrupt)


@st.composite
def packets(draw):
    kind = draw(st.integers(0, MAX_KIND))
    flags = draw(st.integers(0, KNOWN_FLAGS))
    payload_len = draw(st.integers(0, 300)) if kind == DATA else 0
    sack_base = draw(st.integers(0, 50)) * 8 if kind == ACK else draw(st.integers(0, 2**32 - 1))
    pkt = Packet(kind, draw(st.integers(0, 2**32 - 1)), draw(st.integers(0, 2**32 - 1)),
                 msg_id=draw(st.integers(0, 2**32 - 1)), psn=draw(st.integers(0, 2**32 - 1)),
                 entropy=draw(st.integers(0, 2**16 - 1)), payload_len=payload_len,
                 flags=flags, msg_len=draw(st.integers(0, 2**32 - 1)),
                 sack_base=sack_base, sack_bits=draw(st.integers(0, 2**64 - 1)),
                 ts=draw(st.integers(0, 2**64 - 1)), prio=draw(st.integers(0, 1)))
    return pkt


@given(packets(), st.data())
def test_fast_decoder_agrees_with_reference(pkt, data):
    raw = encode(pkt)
    mutations = [raw]
    buf = bytearray(raw)
    i = data.draw(st.integers(0, len(buf) - 1))
    buf[i] ^= data.draw(st.integers(1, 255))
    mutations.append(bytes(buf))
    mutations.append(raw[:data.draw(st.integers(0, len(raw) - 1))])
    mutations.append(raw + bytes(data.draw(st.integers(1, 40))))
    for m in mutations:
        for limit in (65535, 200):
            assert outcome(decode_datagram, m, limit) == outcome(decode, m, limit)


def test_fast_decoder_on_full_size_data_and_trimmed_header():
    pkt = Packet(DATA, 3, 9, msg_id=7, psn=2, entropy=5, payload_len=4096, msg_len=9000,
                 prio=PRIO_DATA)
    raw = encode(pkt)
    assert outcome(decode_datagram, raw, 4160) == outcome(decode, raw, 4160)
    assert outcome(decode_datagram, raw, 4159) == ("error", "oversized")
    pkt.trim()
    trimmed = encode(pkt)
    got = decode_datagram(trimmed)
    assert got.flags & F_TRIMMED and got.size == 64 and got.payload is None
    assert outcome(decode_datagram, bytearray(raw), 65535) == outcome(decode, raw, 65535)


# -- the encoder, the header decoder and the payload check --------------------------------

from gse import _build  # noqa: E402
from gse.wire.fastcodec import codec_backend, decode_header, encode_packet, payload_intact  # noqa: E402
from gse.wire.codec import payload_pattern, verify_payload  # noqa: E402
from gse.wire.packet import F_TRIMMED as _TRIM  # noqa: E402

# payload lengths around the 8-byte blocks of the slicing-by-8 CRC and the 256-byte switch
# to zlib's
EDGE_LENGTHS = (0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 191, 192, 193, 255, 256, 257, 1000,
                4095, 4096, 4097, 9000)


def encoded(fn, pkt):
    try:
        return ("ok", fn(pkt))
    except ValueError as exc:
        return ("error", type(exc).__name__, str(exc))


@st.composite
def wild_packets(draw):
    """Packets that encode, and some that do not (fields past their widths, marks)."""
    pkt = draw(packets())
    field = draw(st.sampled_from((None, None, None, "src", "psn", "entropy", "payload_len",
                                  "sack_base", "sack_bits", "ts", "prio", "kind", "flags")))
    if field is not None:
        limit = {"entropy": 2**16, "payload_len": 2**16, "sack_bits": 2**64, "ts": 2**64,
                 "prio": 256, "kind": 256, "flags": 2**16}.get(field, 2**32)
        setattr(pkt, field, draw(st.sampled_from((-1, limit, limit + 5))))
    if draw(st.integers(0, 9)) == 0:
        pkt.corrupt = True
    if draw(st.integers(0, 9)) == 0 and pkt.kind == DATA and not pkt.flags & _TRIM:
        pkt.payload = payload_pattern(pkt.src, pkt.msg_id, pkt.psn, pkt.payload_len)
    return pkt


@given(wild_packets())
def test_fast_encoder_agrees_with_reference(pkt):
    assert encoded(encode_packet, pkt) == encoded(encode, pkt)


@given(packets(), st.data())
def test_header_decoder_is_the_decoder_without_the_payload(pkt, data):
    raw = encode(pkt)
    buf = bytearray(raw)
    i = data.draw(st.integers(0, len(buf) - 1))
    buf[i] ^= data.draw(st.integers(1, 255))
    for m in (raw, bytes(buf), raw[:data.draw(st.integers(0, len(raw) - 1))]):
        ref = outcome(decode, m, 65535)
        got = outcome(decode_header, m, 65535)
        if ref[0] == "ok":
            assert got == ref[:3] + (None, False)
        else:
            assert got == ref


@given(st.sampled_from(EDGE_LENGTHS), st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1),
       st.integers(0, 2**32 - 1), st.data())
def test_payload_check_and_checksum_at_block_edges(n, src, msg_id, psn, data):
    pkt = Packet(DATA, src, 9, msg_id=msg_id, psn=psn, payload_len=n, msg_len=9000,
                 prio=PRIO_DATA)
    raw = encode_packet(pkt)
    assert raw == encode(pkt)
    assert outcome(decode_datagram, raw, 65535) == outcome(decode, raw, 65535)
    got = decode_header(raw)
    assert payload_intact(got, raw) and verify_payload(decode(raw))
    if n:
        i = data.draw(st.integers(64, len(raw) - 1))
        bad = bytearray(raw)
        bad[i] ^= 0x40
        bad = bytes(bad)
        assert outcome(decode_datagram, bad, 65535) == ("error", "checksum")
        # the same foreign bytes under a valid checksum: decoded, but not our payload
        reenc = Packet(DATA, src, 9, msg_id=msg_id, psn=psn, payload_len=n, msg_len=9000,
                       prio=PRIO_DATA)
        reenc.payload = bad[64:]
        forged = encode(reenc)
        assert not payload_intact(decode_header(forged), forged)
        assert not verify_payload(decode(forged))


def test_codec_backend_names_the_build():
    expected = "Python" if _build.build() == "pure" else "C ("
    assert codec_backend().startswith(expected)


# -- secured datagrams (--secure): the fast paths take them too -------------------------------

from gse.wire.fastcodec import FAST_PATH, decode_header_into  # noqa: E402
from gse.wire.codec import SEC_TAG, SEC_TRAILER  # noqa: E402
from gse.wire.packet import F_SEC, new_packet  # noqa: E402


def secured(raw, trailer_bytes):
    """``raw`` with F_SEC, ``trailer_bytes`` appended and the checksum recomputed: the
    shape of a datagram of the security sublayer (its tags are not checked here)."""
    flags = int.from_bytes(raw[2:4], "big") | F_SEC
    body = raw[64:] + trailer_bytes
    head = raw[:2] + flags.to_bytes(2, "big") + raw[4:60]
    return head + zlib.crc32(body, zlib.crc32(head)).to_bytes(4, "big") + body


@given(packets(), st.data())
def test_fast_decoders_agree_with_reference_on_secured_datagrams(pkt, data):
    """Issue 25: every switch decoded a secured datagram with the reference decoder, a
    tenth of the fast path's speed; the fast paths take them now, with the same packet
    (the trailer counted in ``size``, not in the payload) and the same refusals."""
    carries = pkt.kind == DATA and not pkt.flags & F_TRIMMED
    need = SEC_TRAILER + (SEC_TAG if carries else 0)
    raw = secured(encode(pkt), data.draw(st.binary(min_size=need, max_size=need)))
    buf = bytearray(raw)
    buf[data.draw(st.integers(0, len(buf) - 1))] ^= data.draw(st.integers(1, 255))
    for m in (raw, bytes(buf), raw[:data.draw(st.integers(0, len(raw) - 1))],
              secured(encode(pkt), bytes(need - 1)), secured(encode(pkt), bytes(need + 1))):
        ref = outcome(decode, m, 65535)
        assert outcome(decode_datagram, m, 65535) == ref
        got = outcome(decode_header, m, 65535)
        assert got == (ref[:3] + (None, False) if ref[0] == "ok" else ref)
    scratch = new_packet(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    got = decode_header_into(scratch, raw)
    # the compiled fast path writes over the caller's packet; the pure twin is the reference
    assert (got is scratch) == FAST_PATH
    assert got.size == (64 + pkt.payload_len if carries else 64) + need
