"""Authenticated packets (``--secure``): the sublayer on its own -- forged, replayed, tampered
and other runs' packets are counted and dropped before any agent sees them; what switches do
on the way (ECN marks, trims) still authenticates, in both wire profiles; keys change with
the session and the counter's high bits; a run's epoch is handed out once and a
configuration runs once (issues 15 and 25).  The attacks on whole runs are in
tests/test_secure_attacks.py."""

import asyncio
import multiprocessing
import random
import struct
import zlib

import pytest

pytest.importorskip("cryptography")

from gse.config import ConfigError  # noqa: E402
from gse.runtimes.udp.build import build_node  # noqa: E402
from gse.runtimes.udp.config import loopback_addresses, node_configs, protocol_config  # noqa: E402
from gse.runtimes.udp.io import Scheduler, run_async  # noqa: E402
from gse.runtimes.udp.network import UdpNetwork  # noqa: E402
from gse.runtimes.udp.secure import LinkAuth, Tss  # noqa: E402
from gse.runtimes.udp.secure_keys import (CLAIM_WINDOW, MAX_COUNTER, EpochStore,  # noqa: E402
                                          KeySchedule, load_domain_key, new_session)
from gse.wire import uet  # noqa: E402
from gse.wire import uet_headers as uh  # noqa: E402
from gse.wire.codec import decode, encode, reframe  # noqa: E402
from gse.wire.packet import (ACK, CNP, DATA, F_ECN_CE, F_LAST, F_RETX, F_SEC,  # noqa: E402
                             F_TRIMMED, F_UNSCHED, GRANT, NACK, PAUSE, PRIO_CONTROL, PRIO_DATA,
                             REQUEST, RESUME, Packet)
from gse.workloads import traffic  # noqa: E402
from topologies.fattree import fat_tree  # noqa: E402
from udp_fakes import FakeEndpoint  # noqa: E402

KEY = bytes(range(32))
SALT = bytes(range(16, 32))
PROFILES = {"gse": (encode, decode, reframe), "uet": (uet.encode, uet.decode, uet.reframe)}


def schedule(epoch=1, salt=SALT, key=KEY):
    return KeySchedule(key, salt, epoch)


def pair(wire="gse", epoch=1, n_hosts=4):
    return Tss(schedule(epoch), 0, n_hosts, wire), Tss(schedule(epoch), 1, n_hosts, wire)


def data_pkt(src=0, dst=1, msg_id=5, psn=2, length=1000, flags=0):
    return Packet(DATA, src, dst, msg_id=msg_id, psn=psn, payload_len=length, msg_len=10_000,
                  prio=PRIO_DATA, flags=flags, credit=4096 if flags & F_UNSCHED else 0)


def every_kind(wire):
    pkts = [data_pkt(), data_pkt(psn=0, flags=F_UNSCHED), data_pkt(psn=9, flags=F_LAST | F_RETX),
            Packet(ACK, 0, 1, msg_id=5, psn=3, sack_base=8, sack_bits=5),
            Packet(ACK, 0, 1, msg_id=5, psn=3, sack_base=8),     # an empty bitmap's base
            Packet(NACK, 0, 1, msg_id=5, psn=4),
            Packet(REQUEST, 0, 1, msg_id=5, psn=1, credit=20_000, aux=4096),
            Packet(GRANT, 0, 1, msg_id=5, credit=4096, aux=8192, prio=PRIO_CONTROL)]
    if wire == "gse":
        pkts.append(Packet(CNP, 0, 1, msg_id=5))
    return pkts


@pytest.mark.parametrize("wire", sorted(PROFILES))
def test_seal_and_open_round_trip_every_kind(wire):
    enc, dec, _ = PROFILES[wire]
    a, b = pair(wire)
    kinds = every_kind(wire)
    for pkt in kinds:
        plain = enc(pkt)
        sealed = a.seal(pkt, plain)
        got = dec(sealed)
        assert got.flags & F_SEC and len(sealed) > len(plain)
        if pkt.kind == DATA:
            assert plain[-1040:-40] not in sealed          # the payload is encrypted
        assert b.open(got, sealed) and not got.flags & F_SEC
        assert got.fields()[:12] == pkt.fields()[:12] or pkt.sack_bits == 0
        if pkt.kind == DATA:
            assert got.payload == (plain[64:] if wire == "gse" else plain[-1040:-40])
    assert b.opened == len(kinds) and a.sealed == len(kinds)


def test_the_uet_profile_puts_the_tss_header_of_uet_1_0_1_in_front():
    a, _ = pair("uet", epoch=0x1_2345)                 # (the wire carries 16 bits of it)
    pkt = data_pkt()
    sealed = a.seal(pkt, uet.encode(pkt))
    expected = bytes([(1 << 3) | 0x04]) + a.sdi.to_bytes(3, "big") + (0).to_bytes(4, "big") \
        + (0x2345 << 48 | 1).to_bytes(8, "big")       # type 1, sp, an 0, sdi, ssi, epoch|ctr
    assert sealed[:16] == expected
    dg = uh.parse(sealed[:-uet.TRAILER_BYTES])
    assert dg.tss.name == "TSS" and dg.tss["sdi"] == a.sdi and dg.tss["epoch"] == 0x2345
    assert dg.tss["tsc"] == 1 and dg.pds.name == "RUD_REQ" and dg.ses is not None
    assert uh.build(dg) == sealed[:-uet.TRAILER_BYTES]       # round trip, bit for bit


def refresh_crc(raw):
    """``raw`` with its checksum recomputed (what a tamperer does)."""
    crc = zlib.crc32(raw[64:], zlib.crc32(raw[:60]))
    return raw[:60] + struct.pack("!I", crc) + raw[64:]


def test_forged_tampered_replayed_and_foreign_packets_are_refused_by_reason():
    a, b = pair()
    pkt = data_pkt()
    sealed = a.seal(pkt, encode(pkt))
    assert b.open(decode(sealed), sealed)
    assert not b.open(decode(sealed), sealed) and b.refused["replayed"] == 1
    # tamper: header fields, payload, payload tag, counter, header tag; the TSC's epoch
    for i, offset in enumerate((13, 20, 40, 100, -30, -20, -1, -24)):
        p = data_pkt(psn=3 + i)
        s2 = bytearray(a.seal(p, encode(p)))
        s2[offset] ^= 0x10
        s2 = refresh_crc(bytes(s2))
        assert not b.open(decode(s2), s2)
    assert b.refused["auth_failed"] == 7 and b.refused["stale_epoch"] == 1
    other = Tss(schedule(key=b"another domain key, not ours"), 0, 4)         # forged
    other.next_ctr[1] = 1000                 # (a counter not seen yet: not a replay)
    p = data_pkt(psn=9)
    forged = other.seal(p, encode(p))
    assert not b.open(decode(forged), forged) and b.refused["auth_failed"] == 8
    plain = encode(data_pkt(psn=10))
    assert not b.open(decode(plain), plain) and b.refused["unauthenticated"] == 1
    stranger = Tss(schedule(), 9, 16)
    p = data_pkt(src=9)
    forged = stranger.seal(p, encode(p))
    assert not b.open(decode(forged), forged) and b.refused["unknown_source"] == 1
    assert b.opened == 1


def test_a_datagram_of_another_run_is_refused_even_under_the_same_key_and_epoch():
    """Another session: another epoch on the wire (refused before any cryptography), or
    the same epoch number with another salt (the keys differ: refused by its tags)."""
    a_old = Tss(schedule(epoch=7), 0, 4)
    b = Tss(schedule(epoch=8), 1, 4)
    a_twin = Tss(schedule(epoch=8, salt=bytes(16)), 0, 4)
    p = data_pkt()
    for sender, reason in ((a_old, "stale_epoch"), (a_twin, "auth_failed")):
        s = sender.seal(p, encode(p))
        assert not b.open(decode(s), s) and b.refused[reason] == 1
    assert b.opened == 0


@pytest.mark.parametrize("wire", sorted(PROFILES))
def test_what_switches_change_still_authenticates(wire):
    enc, dec, refr = PROFILES[wire]
    a, b = pair(wire)
    pkt = data_pkt()
    sealed = a.seal(pkt, enc(pkt))
    got = dec(sealed)
    got.flags |= F_ECN_CE                                   # a switch marks it ...
    marked = refr(sealed, got)
    assert b.open(dec(marked), marked)
    pkt = data_pkt(psn=7)
    sealed = a.seal(pkt, enc(pkt))
    got = dec(sealed)
    got.trim()                                              # ... or trims it
    trimmed = refr(sealed, got)
    assert len(trimmed) == len(enc(pkt)) - 1000 + (24 if wire == "gse" else 32)
    got = dec(trimmed)
    assert b.open(got, trimmed) and got.flags & F_TRIMMED and b.refused["auth_failed"] == 0
    ack = Packet(ACK, 0, 1, msg_id=5, psn=3, sack_base=8, sack_bits=5)
    sealed = a.seal(ack, enc(ack))
    got = dec(sealed)
    got.flags |= F_ECN_CE
    marked = refr(sealed, got)
    assert b.open(dec(marked), marked)


def test_keys_change_with_the_counters_high_bits_and_every_nonce_is_new():
    a, b = pair()
    a.rekey_shift = b.rekey_shift = 2                       # a new key every 4 packets
    sent = []
    for psn in range(13):
        p = data_pkt(psn=psn)
        sent.append(a.seal(p, encode(p)))
    assert a.send_keys[1][0] == 3 and a.schedule.derived == 4   # indexes 0 (1..3), 1, 2, 3
    random.Random(1).shuffle(sent)                          # reordered on the way
    for s in sent:
        assert b.open(decode(s), s)
    assert b.opened == 13 and len(b.recv_keys[0]) <= 2


def test_a_counter_never_wraps_the_sender_stops_instead():
    a, b = pair()
    a.next_ctr[1] = MAX_COUNTER - 1
    p = data_pkt()
    last = a.seal(p, encode(p))
    assert last is not None and b.open(decode(last), last)
    assert a.seal(p, encode(p)) is None and a.exhausted == 1 and a.next_ctr[1] == MAX_COUNTER


def test_pfc_frames_authenticate_per_link_and_direction():
    switch = LinkAuth(schedule(), 20, [0, 21])              # port 0: host 0, port 1: s21
    host = LinkAuth(schedule(), 0, [20])
    other = LinkAuth(schedule(), 21, [20])
    pause = Packet(PAUSE, 20, 0, credit=100, prio=PRIO_CONTROL)
    data = encode(data_pkt(src=3, dst=0))
    assert switch.seal(data_pkt(), data) is data            # what it forwards: unchanged
    sealed = switch.seal(pause, encode(pause))
    got = decode(sealed)
    got.ingress = 0
    assert host.open(got, sealed) and host.opened == 1
    got = decode(sealed)
    got.ingress = 0
    assert not host.open(got, sealed) and host.refused["replayed"] == 1
    got = decode(sealed)                                    # s21 is not the link's peer
    got.ingress = 0
    assert not other.open(got, sealed) and other.refused["auth_failed"] == 1
    plain = encode(Packet(RESUME, 20, 0, prio=PRIO_CONTROL))
    got = decode(plain)
    got.ingress = 0
    assert not host.open(got, plain) and host.refused["unauthenticated"] == 1


# -- sessions: epochs handed out once, configurations run once -----------------------------

def keyfile(tmp_path):
    path = tmp_path / "domain.key"
    path.write_text(KEY.hex() + "\n")
    return str(path)


def test_every_session_has_a_new_epoch_and_salt(tmp_path):
    path = keyfile(tmp_path)
    sessions = [new_session(path) for _ in range(5)]
    assert [s["epoch"] for s in sessions] == [1, 2, 3, 4, 5]
    assert len({s["salt"] for s in sessions}) == 5
    assert EpochStore(path).allocate() == 6                  # kept in the file, not the object


def _allocate(path, n, out):
    store = EpochStore(path)
    out.put([store.allocate() for _ in range(n)])


def test_processes_allocating_at_once_never_get_the_same_epoch(tmp_path):
    path = keyfile(tmp_path)
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_allocate, args=(path, 20, out)) for _ in range(4)]
    for p in procs:
        p.start()
    got = sorted(e for _ in procs for e in out.get(timeout=60))
    for p in procs:
        p.join(60)
    assert got == list(range(1, 81))


def test_a_configuration_runs_once(tmp_path):
    path = keyfile(tmp_path)
    store = EpochStore(path)
    e1, e2 = store.allocate(), store.allocate()
    store.claim(3, "h3", e2)
    store.claim(3, "h3", e1)                 # two runs with one key file may overlap
    store.claim(4, "h4", e2)                 # (each node claims for itself)
    with pytest.raises(ConfigError, match="h3: epoch 2 .* already used"):
        store.claim(3, "h3", e2)
    with pytest.raises(ConfigError, match="never handed out"):
        store.claim(3, "h3", e2 + 1)
    for _ in range(CLAIM_WINDOW):
        store.claim(5, "h5", store.allocate())
    with pytest.raises(ConfigError, match=r"already used .* \(or is 64 or more epochs old\)"):
        store.claim(5, "h5", e1)


def host_node(tmp_path, secure=True, conf=None):
    topo = fat_tree(4)
    path = keyfile(tmp_path)
    if conf is None:
        conf = node_configs(topo, [], address_of=loopback_addresses(topo),
                            secure_key_file=path if secure else None)[1]
    loop = asyncio.new_event_loop()
    sched = Scheduler(loop)
    try:
        node = build_node(conf, sched, FakeEndpoint(), protocol_config(conf))
    except BaseException:
        sched.close()
        loop.close()
        raise
    return node, tuple(conf["ports"][0]["peer_addr"]), loop, path, conf


def test_the_same_node_configuration_is_refused_a_second_time(tmp_path):
    node, _, loop, _, conf = host_node(tmp_path)
    node.sched.close()
    loop.close()
    with pytest.raises(ConfigError, match="already used by a run of this node"):
        host_node(tmp_path, conf=conf)


@pytest.mark.parametrize("secure", [False, True])
def test_a_forged_data_packet_from_the_neighbours_address_never_reaches_a_message(
        tmp_path, secure):
    """The datagram arrives from the edge switch's own address (what a forger on the host
    can send with a raw socket) with the right payload pattern: without --secure it
    becomes part of a message, with it it is counted and dropped."""
    node, edge, loop, path, conf = host_node(tmp_path, secure)
    try:
        p = data_pkt(src=0, dst=1, msg_id=5, psn=0)
        forged = encode(p)
        node.datagram(forged, edge)
        rx = node.agent.receiver
        if not secure:
            assert (0, 5) in rx.messages                   # the forgery is in a message
            return
        assert (0, 5) not in rx.messages and node.tss.refused["unauthenticated"] == 1
        wrong = Tss(schedule(key=b"a forger's guess at the domain key"), 0, 16).seal(p, forged)
        node.datagram(wrong, edge)
        assert (0, 5) not in rx.messages and node.tss.refused["auth_failed"] == 1
        session = conf["secure"]
        real_sender = Tss(KeySchedule(load_domain_key(path), bytes.fromhex(session["salt"]),
                                      session["epoch"]), 0, 16)
        real = real_sender.seal(p, forged)
        node.datagram(real, edge)                           # the real sender's packet
        assert (0, 5) in rx.messages and node.payload_errors == 0
        node.datagram(real, edge)                           # ... replayed
        assert node.tss.refused["replayed"] == 1 and rx.duplicates == 0
        assert node.counters(0)["secure"]["auth_failed"] == 1
    finally:
        node.sched.close()
        loop.close()


@pytest.mark.parametrize("wire", sorted(PROFILES))
def test_a_secure_run_over_udp_delivers_everything_in_both_wire_profiles(tmp_path, wire):
    path = tmp_path / "domain.key"
    path.write_bytes(bytes(random.Random(3).getrandbits(8) for _ in range(32)))
    topo = fat_tree(4, link_gbps=0.05)
    msgs = traffic.incast(16, 6, 48 * 1024, random.Random(3), receiver=0)

    async def scenario():
        async with UdpNetwork(topo, msgs, seed=3, loss_rate=0.005, wire=wire,
                              secure_key_file=str(path)) as net:
            await net.run(timeout_s=60)
        return net.result()

    s = run_async(scenario, "auto").summary
    assert s["udp"]["end"] == "done" and s["lost"] == 0 and s["delivered"] == 6
    assert s["udp"]["payload_errors"] == 0 and s["udp"]["duplicate_deliveries"] == 0
    sc = s["udp"]["secure_counters"]
    assert sc["opened"] > 0 and s["udp"]["errors"] == []
    assert sum(sc[k] for k in ("unauthenticated", "unknown_source", "wrong_domain",
                               "stale_epoch", "replayed", "auth_failed")) == 0
