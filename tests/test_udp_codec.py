"""The UDP runtime's fast decoder agrees with the reference ``gse.wire.decode``.

``decode_datagram`` accepts only what ``decode`` accepts and builds the same packet; every
datagram it doubts goes to ``decode`` for the verdict.  Checked on valid packets of every
kind and on mutated, truncated and extended copies of them.
"""

from hypothesis import given, strategies as st

from gse.packet import ACK, DATA, F_TRIMMED, KNOWN_FLAGS, MAX_KIND, PRIO_DATA, Packet
from gse.udp_link import decode_datagram
from gse.wire import WireError, decode, encode


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
