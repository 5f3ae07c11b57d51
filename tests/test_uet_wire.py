"""The UET wire profile: UET 1.0 PDS/SES headers (gse.wire.uet_headers) and the project's
packets on them (gse.wire.uet), checked against bytes built here from the specification's
field tables, and over real UDP.

The bytes below are written field by field, most significant bit first, from the UET 1.0
header layouts (docs/wire-format.md), with distinct values in every field (the values
xdp2's sample generator uses), so that a field at the wrong offset or width shows.  The
opt-in tests/test_third_party.py decodes xdp2's own sample captures.
"""

import random
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gse.wire import WIRE_PROFILES, uet, wire_profile
from gse.wire import uet_headers as uh
from gse.wire.codec import WireError
from gse.wire.packet import (ACK, CNP, DATA, F_ECN_CE, F_ECT, F_LAST, F_RETX,
                             F_UNSCHED, GRANT, NACK, PAUSE, PRIO_CONTROL, PRIO_DATA, REQUEST,
                             Packet)


def bits(*fields):
    """Bytes of (value, width) fields, most significant bit first."""
    acc = n = 0
    for value, width in fields:
        assert 0 <= value < 1 << width
        acc = (acc << width) | value
        n += width
    assert n % 8 == 0
    return acc.to_bytes(n // 8, "big")


COMMON = [(0, 2), (0x5, 6), (0, 2), (1, 1), (0, 1), (1, 1), (0, 1), (1, 1), (1, 1),
          (0x1234, 16), (0x77, 8), (0xabcdef, 24), (0, 4), (0x678, 12), (0, 4), (0x9ab, 12)]

# (name, bytes, expected headers, {header index: {field: value}})
VECTORS = [
    ("RUD request + standard SOM",
     bits((2, 5), (3, 4), (0, 2), (1, 1), (0, 1), (0, 1), (0, 2), (0x1234, 16),
          (0x98765432, 32), (0x3456, 16), (0x9abc, 16),
          *COMMON, (0xfedcba9876543210, 64), (0xfedcba98, 32), (0x1122334455667788, 64),
          (0xaabbddddeeff0011, 64), (0x99887766, 32)),
     ["RUD_REQ", "SES standard request (SOM)"],
     {0: {"retrans": 1, "clear_psn_offset": 0x1234, "psn": 0x98765432, "spdcid": 0x3456,
          "dpdcid": 0x9abc},
      1: {"opcode": 5, "delivery_complete": 1, "relative_addressing": 1, "end_of_msg": 1,
          "start_of_msg": 1, "message_id": 0x1234, "ri_generation": 0x77, "job_id": 0xabcdef,
          "pid_on_fep": 0x678, "resource_index": 0x9ab, "buffer_offset": 0xfedcba9876543210,
          "initiator": 0xfedcba98, "match_bits": 0x1122334455667788,
          "header_data": 0xaabbddddeeff0011, "request_length": 0x99887766}}),
    ("RUD request with CC + standard, not SOM",
     bits((13, 5), (3, 4), (0, 2), (0, 1), (1, 1), (0, 1), (0, 2), (0, 16), (7, 32),
          (1, 16), (2, 16), (0x77, 8), (0x887766, 24),
          *COMMON[:8], (0, 1), *COMMON[9:], (0, 64), (5, 32), (0, 64), (0, 16), (0, 2),
          (0x1ddd, 14), (0xfedcba98, 32), (0x99887766, 32)),
     ["RUD_CC_REQ", "SES standard request"],
     {0: {"ackreq": 1, "psn": 7, "ccc_id": 0x77, "credit_target": 0x887766},
      1: {"start_of_msg": 0, "payload_length": 0x1ddd, "message_offset": 0xfedcba98,
          "initiator": 5}}),
    ("ACK + response",
     bits((7, 5), (4, 4), (0, 1), (1, 1), (1, 1), (0, 1), (2, 2), (0, 1), (0x2468, 16),
          (0xace03456, 32), (0x789a, 16), (0xc109, 16),
          (3, 2), (0x1, 6), (0, 2), (0x1, 6), (0x1234, 16), (0x99, 8), (0x654321, 24),
          (0x09abcdef, 32)),
     ["ACK", "SES response"],
     {0: {"ecn_marked": 1, "retrans": 1, "request": 2, "ack_psn_offset": 0x2468,
          "cack_psn": 0xace03456, "spdcid": 0x789a, "dpdcid": 0xc109},
      1: {"list": 3, "opcode": 1, "return_code": 1, "message_id": 0x1234,
          "ri_generation": 0x99, "job_id": 0x654321, "modified_length": 0x09abcdef}}),
    ("ACK with NSCC state",
     bits((8, 5), (0, 4), (0, 7), (0, 16), (5, 32), (1, 16), (1, 16),
          (0, 4), (0xf, 4), (0x87, 8), (0x6789, 16), (0x123456789abcdef0, 64),
          (0x99aa, 16), (1, 1), (0x7f, 7), (0x887766, 24), (0x8765, 16)),
     ["ACK_CC"],
     {0: {"cc_type": 0, "cc_flags": 0xf, "mpr": 0x87, "sack_psn_offset": 0x6789,
          "sack_bitmap": 0x123456789abcdef0,
          "cc_state": 0x99aa << 48 | 1 << 47 | 0x7f << 40 | 0x887766 << 16 | 0x8765}}),
    ("NACK, trimmed",
     bits((10, 5), (0, 4), (0, 1), (1, 1), (0, 1), (1, 1), (0, 3), (0x01, 8), (0x87, 8),
          (0x99887766, 32), (0x3456, 16), (0x789a, 16), (0x56789abc, 32)),
     ["NACK"],
     {0: {"ecn_marked": 1, "nack_type": 1, "nack_code": 1, "vendor_code": 0x87,
          "nack_psn": 0x99887766, "payload": 0x56789abc}}),
    ("NACK with CCX",
     bits((12, 5), (0, 4), (0, 7), (0x1a, 8), (0, 8), (1, 32), (2, 16), (3, 16), (4, 32),
          (0x3, 4), (0xf, 4), (0xdcba9876543210, 56)),
     ["NACK_CCX"], {0: {"nack_code": 0x1a, "nccx_type": 3, "nccx_state1": 0xf,
                        "nack_ccx_state2": 0xdcba9876543210}}),
    ("CONTROL credit request",
     bits((11, 5), (8, 4), (0, 1), (1, 1), (1, 1), (0, 1), (0, 1), (0, 2), (0xcdef, 16),
          (0x0123cdef, 32), (0xfedc, 16), (0xc109, 16), (0x12349965, 32)),
     ["CONTROL"], {0: {"ctl_type": 8, "rsvd_isrod": 1, "retrans": 1, "probe_opaque": 0xcdef,
                       "psn": 0x0123cdef, "payload": 0x12349965}}),
    ("UUD + small atomic with compare-and-swap",
     bits((6, 5), (1, 4), (0, 7), (0, 16),
          (0, 2), (0x3, 6), (0, 2), (1, 1), (0, 1), (1, 1), (0, 1), (1, 1), (1, 1),
          *COMMON[9:], (0x9876543298765432, 64),
          (0x11, 8), (0x0c, 8), (1, 1), (1, 1), (0, 3), (5, 3), (0, 8),
          (0x98765432987654322345678923456789, 128), (0x0123456789abcdeffedcba0987654321, 128)),
     ["UUD_REQ", "SES small request", "SES atomic extension",
      "SES compare-and-swap extension"],
     {1: {"opcode": 3, "buffer_offset": 0x9876543298765432},
      2: {"atomic_code": 0x11, "atomic_datatype": 0x0c, "cacheable": 1, "cpu_coherent": 1,
          "vendor_defined": 5}}),
    ("RUDI response + response with data",
     bits((5, 5), (5, 4), (0, 1), (1, 1), (0, 1), (0, 4), (0, 16), (0x99887766, 32),
          (3, 2), (0x2, 6), (0, 2), (0x9, 6), (0x1234, 16), (0, 8), (0x654321, 24),
          (0x1234, 16), (0, 4), (0x321, 12), (0x87654321, 32), (0x09abcdef, 32)),
     ["RUDI_RESP", "SES response with data"],
     {0: {"ecn_marked": 1, "pkt_id": 0x99887766},
      1: {"read_request_message_id": 0x1234, "payload_length": 0x321,
          "modified_length": 0x87654321, "message_offset": 0x09abcdef}}),
    ("ROD request + deferrable send",
     bits((3, 5), (3, 4), (0, 7), (0, 16), (1, 32), (2, 16), (3, 16),
          (0, 2), (0x8, 6), *COMMON[2:], (0x87654321, 32), (0x12345678, 32),
          (0xfedcba98, 32), (0x1122334455667788, 64), (0xfedcba9876543210, 64),
          (0x99887766, 32)),
     ["ROD_REQ", "SES deferrable send"],
     {1: {"opcode": 8, "initiator_restart_token": 0x87654321,
          "target_restart_token": 0x12345678, "header_data": 0xfedcba9876543210}}),
]


@pytest.mark.parametrize("name, data, names, fields", VECTORS, ids=[v[0] for v in VECTORS])
def test_headers_from_the_specification_parse_and_build_byte_for_byte(name, data, names,
                                                                       fields):
    dg = uh.parse(data + b"payload")
    assert [h.name for h in dg.headers()] == names
    for i, want in fields.items():
        got = dg.headers()[i].values
        for k, v in want.items():
            assert got[k] == v, (name, i, k, hex(got[k]), hex(v))
    assert dg.payload == b"payload"
    assert uh.build(dg) == data + b"payload"
    assert dg.header_bytes() == len(data)


def test_header_sizes_and_refusals():
    sizes = {t: uh.PDS[t].size for t in uh.PDS}
    assert sizes == {2: 12, 3: 12, 13: 16, 14: 16, 4: 8, 5: 8, 6: 4, 7: 12, 8: 32, 9: 32,
                     10: 16, 12: 24, 11: 16}
    assert {k: v.size for k, v in uh.SES.items()} == {
        "std_som": 44, "std": 44, "deferrable": 44, "ready_to_restart": 44, "rendezvous": 40,
        "medium": 32, "small": 20, "response": 12, "response_data": 20, "response_small": 12}
    with pytest.raises(WireError) as e:
        uh.parse(bits((1, 5), (0, 11)))                 # TSS: the security header, cut short
    assert e.value.reason == "truncated"
    tss = bits((1, 5), (1, 1), (0, 1), (0, 1), (0xabcdef, 24), (7, 32), (3, 16), (9, 48))
    with pytest.raises(WireError) as e:
        uh.parse(tss + tss)                             # a second TSS header in place of PDS
    assert e.value.reason == "kind" and "TSS" in str(e.value)
    with pytest.raises(WireError) as e:
        uh.parse(bits((2, 5), (3, 4), (0, 7)) + bytes(10))   # a RUD request cut short
    assert e.value.reason == "truncated"
    with pytest.raises(ValueError, match="psn=.*32 bits"):
        uh.PDS[uh.RUD_REQ].pack({"psn": 1 << 32})


# -- the project's packets in the profile ---------------------------------------------------

def data_packet(psn=0, size=10000, mtu=4096, flags=F_ECT, **kw):
    n = (size + mtu - 1) // mtu
    length = mtu if psn < n - 1 else size - (n - 1) * mtu
    flags |= F_LAST if psn == n - 1 else 0
    return Packet(DATA, 3, 7, msg_id=70000, psn=psn, entropy=0x1234, payload_len=length,
                  flags=flags, msg_len=size, ts=123456789, prio=PRIO_DATA, **kw)


PACKETS = [
    data_packet(0, flags=F_ECT | F_UNSCHED, credit=65536),
    data_packet(1, flags=F_ECT | F_RETX | F_ECN_CE),
    data_packet(2),
    Packet(ACK, 7, 3, msg_id=42, psn=17, entropy=0x1234, flags=F_ECN_CE, msg_len=65536,
           sack_base=16, sack_bits=0b1101, ts=123456789000, prio=PRIO_CONTROL),
    Packet(ACK, 7, 3, msg_id=42, psn=100, msg_len=65536, sack_base=120, sack_bits=1 << 63,
           prio=PRIO_CONTROL),
    Packet(ACK, 7, 3, msg_id=42, psn=0, msg_len=65536, prio=PRIO_CONTROL),
    Packet(NACK, 7, 3, msg_id=42, psn=5, entropy=9, ts=5, prio=PRIO_CONTROL),
    Packet(REQUEST, 3, 7, msg_id=42, psn=2, msg_len=5000, credit=5000, aux=100, flags=F_RETX,
           ts=7, prio=PRIO_CONTROL),
    Packet(GRANT, 7, 3, msg_id=42, credit=4096, aux=3 * 4096, ts=9, prio=PRIO_CONTROL),
]


@pytest.mark.parametrize("pkt", PACKETS, ids=lambda p: repr(p))
def test_every_kind_round_trips_and_reads_as_uet(pkt):
    raw = uet.encode(pkt)
    back = uet.decode(raw)
    assert back.fields() == pkt.fields()
    assert uet.encode(back) == raw
    dg = uh.parse(raw[:-uet.TRAILER_BYTES])
    p = dg.pds.values
    assert p["spdcid"] == p["dpdcid"] == pkt.msg_id & 0xFFFF
    if pkt.kind == DATA:
        assert p["type"] == (uh.RUD_CC_REQ if pkt.flags & F_UNSCHED else uh.RUD_REQ)
        assert p["psn"] == pkt.psn and p["retrans"] == bool(pkt.flags & F_RETX)
        s = dg.ses.values
        assert (s["opcode"], s["start_of_msg"], s["end_of_msg"]) == (
            uh.OP_SEND, pkt.psn == 0, bool(pkt.flags & F_LAST))
        assert s["request_length"] == pkt.msg_len and s["initiator"] == pkt.src
        assert s["buffer_offset"] == pkt.psn * 4096
        assert dg.payload == back.payload and len(dg.payload) == pkt.payload_len
        if pkt.flags & F_UNSCHED:
            assert p["credit_target"] == pkt.credit
    elif pkt.kind == ACK:
        assert p["type"] == uh.ACK_CC and p["cc_type"] == uh.CC_NSCC
        assert p["cack_psn"] == (pkt.psn - 1) & 0xFFFFFFFF
        assert p["sack_bitmap"] == pkt.sack_bits and p["ecn_marked"] == bool(pkt.flags)
    elif pkt.kind == NACK:
        assert (p["type"], p["nack_code"], p["nack_psn"]) == (uh.NACK, 0x01, pkt.psn)
    else:
        assert p["type"] == uh.CONTROL and p["payload"] == pkt.credit
        assert p["ctl_type"] == (uh.CTL_CREDIT_REQ if pkt.kind == REQUEST else uh.CTL_CREDIT)
    assert len(raw) == uet.overhead(pkt.kind, bool(pkt.flags & F_UNSCHED)) + (
        pkt.payload_len if pkt.kind == DATA else 0)


def test_trimmed_and_corrupt_packets():
    p = data_packet(1)
    p.trim()
    raw = uet.encode(p)
    assert uet.decode(raw).fields() == p.fields() and uet.decode(raw).payload is None
    assert len(raw) == uet.overhead(DATA)
    c = data_packet(1)
    c.corrupt = True
    with pytest.raises(WireError) as e:
        uet.decode(uet.encode(c))
    assert e.value.reason == "checksum"


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(PACKETS), st.integers(0, 2 ** 32 - 1), st.integers(0, 2 ** 32 - 1),
       st.integers(0, 2 ** 32 - 1), st.integers(0, 2 ** 64 - 1), st.integers(0, 0xFFFF))
def test_round_trip_over_random_addresses_ids_and_times(base, src, dst, msg_id, ts, entropy):
    pkt = Packet(base.kind, src, dst, msg_id=msg_id, psn=base.psn, entropy=entropy,
                 payload_len=base.payload_len, flags=base.flags, msg_len=base.msg_len,
                 credit=base.credit, aux=base.aux, sack_base=base.sack_base,
                 sack_bits=base.sack_bits, ts=ts, prio=base.prio)
    raw = uet.encode(pkt)
    assert uet.decode(raw).fields() == pkt.fields()


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(PACKETS), st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255)),
                                          max_size=4), st.integers(-8, 8), st.binary(max_size=64))
def test_damaged_datagrams_raise_only_wire_errors(pkt, flips, cut, junk):
    """Whatever arrives, decode returns a packet or raises WireError (counted, dropped)."""
    raw = bytearray(uet.encode(pkt))
    for pos, value in flips:
        raw[pos % len(raw)] = value
    data = bytes(raw[:len(raw) + cut] if cut < 0 else raw + junk[:cut])
    resealed = data[:-4] + zlib.crc32(data[:-4]).to_bytes(4, "big")   # past the checksum
    for candidate in (data, resealed, junk):
        try:
            uet.decode(candidate)
        except WireError as exc:
            assert exc.reason in ("truncated", "oversized", "version", "kind", "length",
                                  "checksum", "flags", "reserved", "field")


def test_what_has_no_uet_form_is_refused_by_name():
    for kind in (PAUSE, CNP):
        with pytest.raises(ValueError, match="no UET form"):
            uet.encode(Packet(kind, 1, 2))
    with pytest.raises(ValueError, match="16-bit sack_psn_offset"):
        uet.encode(Packet(ACK, 1, 2, msg_id=1, psn=1, sack_base=40000, sack_bits=1))
    with pytest.raises(ValueError, match="24-bit credit_target"):
        uet.encode(data_packet(0, flags=F_UNSCHED, credit=1 << 24))
    with pytest.raises(ValueError, match="SACK fields on a GRANT"):
        uet.encode(Packet(GRANT, 1, 2, sack_base=8))
    with pytest.raises(ValueError, match="14-bit payload_length"):
        uet.encode(data_packet(1, size=40000, mtu=20000))


def test_malformed_datagrams_by_reason():
    good = uet.encode(PACKETS[2])
    cases = {
        "truncated": good[:20],
        "oversized": good + bytes(70000),
        "version": uet.encode(PACKETS[3])[:-6] + b"XX" + good[-4:],
        "checksum": good[:30] + bytes([good[30] ^ 1]) + good[31:],
    }
    for reason, data in cases.items():
        with pytest.raises(WireError) as e:
            uet.decode(data)
        assert e.value.reason == reason, (reason, e.value)
    # a valid UET packet of a kind the profile does not use, with a valid trailer
    import struct
    head = uh.PDS[uh.ROD_REQ].pack({"type": uh.ROD_REQ})
    trailer = uet.TRAILER.pack(1, 2, 0, 0, 0, 0, 0, 0, 0, 0, uet.MAGIC, 0)[:-4]
    body = head + trailer
    with pytest.raises(WireError) as e:
        uet.decode(body + struct.pack("!I", zlib.crc32(body)))
    assert e.value.reason == "kind"
    # the trailer and the SES header must agree
    p = PACKETS[2]
    raw = bytearray(uet.encode(p))
    hdr = uh.PDS[uh.RUD_REQ].size
    raw[hdr + 40:hdr + 44] = (p.msg_len + 1).to_bytes(4, "big")       # request_length
    raw[-4:] = zlib.crc32(bytes(raw[:-4])).to_bytes(4, "big")
    with pytest.raises(WireError) as e:
        uet.decode(bytes(raw))
    assert e.value.reason == "field"


def test_profiles_are_selected_by_name():
    assert WIRE_PROFILES == ("gse", "uet")
    assert wire_profile("uet") is uet and wire_profile("gse").encode is not uet.encode
    with pytest.raises(ValueError, match="unknown wire profile"):
        wire_profile("roce")


# -- over real UDP --------------------------------------------------------------------------

def test_udp_runtime_runs_gse_on_the_uet_profile():
    """An incast with small queues, a small unscheduled window and corruption: DATA,
    trimmed DATA, NACKs, ACKs, REQUESTs and GRANTs all cross the fabric as UET datagrams
    (a project-format datagram would fail the UET decoder by reason 'version'); every
    message arrives once and intact, and nothing failed to encode."""
    from test_udp_runtime import TIMEOUT_S, check_intact

    from gse.protocols import default_config
    from gse.runtimes.udp.config import udp_profile
    from gse.runtimes.udp.network import run_udp
    from gse.workloads import traffic
    from topologies.fattree import fat_tree
    cfg = udp_profile(default_config("gse"))
    cfg.unsched_bytes = 16384                     # most data is scheduled: REQUEST, GRANT
    cfg.queue_bytes = cfg.trim_bytes = 20000      # small queues: trims, NACKs
    topo = fat_tree(4, link_gbps=0.05, switch_latency_ns=2000)
    msgs = traffic.incast(16, 6, 96 * 1024, random.Random(3), receiver=0)
    result = run_udp(topo, msgs, "gse", cfg, corrupt_rate=0.003, seed=3,
                     timeout_s=TIMEOUT_S, wire="uet")
    check_intact(result, msgs)
    s = result.summary
    assert s["udp"]["wire"] == "uet"
    assert s["trims"] > 0 and s["udp"]["errors"] == []      # nothing failed to encode
    malformed = s["udp"]["malformed"]
    assert malformed["version"] == 0 and s["corrupted"] == malformed["checksum"]


def test_uet_profile_refuses_roce_and_jumbo_mtu():
    from gse.config import ConfigError
    from gse.protocols import default_config
    from gse.runtimes.udp.config import node_configs
    from topologies.fattree import fat_tree
    with pytest.raises(ConfigError, match="carries the GSE protocol"):
        node_configs(fat_tree(4), [], "roce", wire="uet")
    cfg = default_config("gse")
    cfg.mtu = 20000
    with pytest.raises(ConfigError, match="mtu <= 16383"):
        node_configs(fat_tree(4), [], "gse", cfg, wire="uet")
    conf = node_configs(fat_tree(4), [], "gse", wire="uet")[0]
    assert conf["wire"] == "uet" and conf["max_datagram"] == 4096 + uet.MAX_OVERHEAD
