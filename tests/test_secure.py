"""Authenticated packets (``--secure``): forged, replayed and tampered packets are counted and
dropped before any agent sees them; what switches do on the way (ECN marks, trims) still
authenticates; a run over real UDP delivers everything intact (issue 15)."""

import asyncio
import random
import socket
import struct
import zlib

import pytest

pytest.importorskip("cryptography")

from gse.runtimes.udp.config import loopback_addresses, node_configs, protocol_config  # noqa: E402
from gse.runtimes.udp.io import Scheduler, run_async  # noqa: E402
from gse.runtimes.udp.network import UdpNetwork  # noqa: E402
from gse.runtimes.udp.build import build_node  # noqa: E402
from gse.runtimes.udp.secure import Tss, load_domain_key  # noqa: E402
from gse.wire.codec import decode, encode, reframe  # noqa: E402
from gse.wire.packet import (ACK, DATA, F_ECN_CE, F_SEC, GRANT, PRIO_CONTROL,  # noqa: E402
                             PRIO_DATA, Packet)
from gse.workloads import traffic  # noqa: E402
from topologies.fattree import fat_tree  # noqa: E402

KEY = bytes(range(32))


def data_pkt(src=0, dst=1, msg_id=5, psn=2, length=1000):
    return Packet(DATA, src, dst, msg_id=msg_id, psn=psn, payload_len=length, msg_len=10_000,
                  prio=PRIO_DATA)


def test_seal_and_open_round_trip_every_kind():
    a, b = Tss(KEY, 0, 4), Tss(KEY, 1, 4)
    for pkt in (data_pkt(), Packet(ACK, 0, 1, msg_id=5, psn=3, sack_base=8, sack_bits=5),
                Packet(GRANT, 0, 1, msg_id=5, credit=4096, aux=8192, prio=PRIO_CONTROL)):
        plain = encode(pkt)
        sealed = a.seal(plain)
        got = decode(sealed)
        assert got.flags & F_SEC and len(sealed) > len(plain)
        if pkt.kind == DATA:
            assert sealed[64:1064] != plain[64:]               # the payload is encrypted
        assert b.open(got, sealed) == plain and not got.flags & F_SEC
    assert b.opened == 3 and a.sealed == 3


def refresh_crc(raw):
    """``raw`` with its checksum recomputed (what a tamperer does)."""
    crc = zlib.crc32(raw[64:], zlib.crc32(raw[:60]))
    return raw[:60] + struct.pack("!I", crc) + raw[64:]


def test_forged_tampered_replayed_and_foreign_packets_are_refused_by_reason():
    a, b = Tss(KEY, 0, 4), Tss(KEY, 1, 4)
    sealed = a.seal(encode(data_pkt()))
    assert b.open(decode(sealed), sealed) is not None
    assert b.open(decode(sealed), sealed) is None and b.replayed == 1       # replay
    for i, offset in enumerate((13, 20, 40, 100, -1)):                     # tamper
        s2 = bytearray(a.seal(encode(data_pkt(psn=3 + i))))
        s2[offset] ^= 0x10
        s2 = refresh_crc(bytes(s2))
        assert b.open(decode(s2), s2) is None
    assert b.auth_failed == 5
    other = Tss(b"another domain key, not ours", 0, 4)                     # forged
    other.next_ctr[1] = 1000                 # (a counter not seen yet: not a replay)
    forged = other.seal(encode(data_pkt(psn=9)))
    assert b.open(decode(forged), forged) is None and b.auth_failed == 6
    plain = encode(data_pkt(psn=10))
    assert b.open(decode(plain), plain) is None and b.unauthenticated == 1
    stranger = Tss(KEY, 9, 16)
    stranger.next_ctr[1] = 2000
    stranger = stranger.seal(encode(data_pkt(src=9)))
    assert b.open(decode(stranger), stranger) is None and b.unknown_source == 1
    assert b.opened == 1


def test_what_switches_change_still_authenticates():
    a, b = Tss(KEY, 0, 4), Tss(KEY, 1, 4)
    sealed = a.seal(encode(data_pkt()))
    pkt = decode(sealed)
    pkt.flags |= F_ECN_CE                                   # a switch marks it ...
    marked = reframe(sealed, pkt)
    assert b.open(decode(marked), marked) is not None
    sealed = a.seal(encode(data_pkt(psn=7)))
    pkt = decode(sealed)
    pkt.trim()                                              # ... or trims it
    trimmed = reframe(sealed, pkt)
    assert len(trimmed) == 64 + 24
    got = decode(trimmed)
    opened = b.open(got, trimmed)
    assert len(opened) == 64 and decode(opened).flags & 0x02 and b.auth_failed == 0


def host_node(tmp_path, secure=True):
    topo = fat_tree(4)
    keyfile = tmp_path / "domain.key"
    keyfile.write_text(KEY.hex() + "\n")
    confs = node_configs(topo, [], address_of=loopback_addresses(topo),
                         secure_key_file=str(keyfile) if secure else None)
    conf = confs[1]
    loop = asyncio.new_event_loop()
    sched = Scheduler(loop)

    class Ep:
        sent = send_blocked = send_errors = recv_errors = 0

        def send(self, data, addr):
            pass
    node = build_node(conf, sched, Ep(), protocol_config(conf))
    return node, tuple(conf["ports"][0]["peer_addr"]), loop, keyfile


@pytest.mark.parametrize("secure", [False, True])
def test_a_forged_data_packet_from_the_neighbours_address_never_reaches_a_message(
        tmp_path, secure):
    """The datagram arrives from the edge switch's own address (what a forger on the host
    can send with a raw socket) with the right payload pattern: without --secure it
    becomes part of a message, with it it is counted and dropped."""
    node, edge, loop, keyfile = host_node(tmp_path, secure)
    try:
        forged = encode(data_pkt(src=0, dst=1, msg_id=5, psn=0))
        node.datagram(forged, edge)
        rx = node.agent.receiver
        if not secure:
            assert (0, 5) in rx.messages                   # the forgery is in a message
            return
        assert (0, 5) not in rx.messages and node.tss.unauthenticated == 1
        wrong = Tss(b"a forger's guess at the domain key", 0, 16).seal(forged)
        node.datagram(wrong, edge)
        assert (0, 5) not in rx.messages and node.tss.auth_failed == 1
        real = Tss(load_domain_key(str(keyfile)), 0, 16).seal(forged)
        node.datagram(real, edge)                           # the real sender's packet
        assert (0, 5) in rx.messages and node.payload_errors == 0
        node.datagram(real, edge)                           # ... replayed
        assert node.tss.replayed == 1 and rx.duplicates == 0
        assert node.counters(0)["secure"]["auth_failed"] == 1
    finally:
        node.sched.close()
        loop.close()


def test_a_secure_run_over_udp_delivers_everything_and_refuses_forgeries(tmp_path):
    keyfile = tmp_path / "domain.key"
    keyfile.write_bytes(bytes(random.Random(3).getrandbits(8) for _ in range(32)))
    topo = fat_tree(4, link_gbps=0.05)
    msgs = traffic.incast(16, 6, 48 * 1024, random.Random(3), receiver=0)

    async def scenario():
        async with UdpNetwork(topo, msgs, seed=3, loss_rate=0.005,
                              secure_key_file=str(keyfile)) as net:
            task = asyncio.ensure_future(net.run(timeout_s=30))
            edge = topo.peer(topo.hosts[0], 0)[0]
            forged = encode(data_pkt(src=msgs[0].src, dst=0, msg_id=msgs[0].msg_id, psn=0,
                                     length=4096))
            for _ in range(5):                           # from the neighbour's address
                net.endpoints[edge].send(forged, net.addresses[0])
                await asyncio.sleep(0)
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.sendto(forged, net.addresses[0])       # from elsewhere: foreign
            sock.close()
            await task
        return net.result()

    result = run_async(scenario, "auto")
    s = result.summary
    assert s["udp"]["end"] == "done" and s["lost"] == 0 and s["delivered"] == 6
    assert s["udp"]["payload_errors"] == 0 and s["udp"]["duplicate_deliveries"] == 0
    sc = s["udp"]["secure_counters"]
    assert sc["unauthenticated"] == 5 and sc["auth_failed"] == 0
    assert s["udp"]["foreign"] >= 1 and s["udp"]["errors"] == []
