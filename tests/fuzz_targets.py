"""Fuzz targets: the wire decoder and every agent, fed whatever bytes a fuzzer makes.

Each target is a function of one ``bytes`` argument that raises ``AssertionError`` (or any
exception other than the ones the code is specified to raise) for a defect and returns
quietly otherwise.  ``experiments/fuzz.py`` runs them under atheris (coverage-guided,
10^6 inputs and more); ``tests/test_fuzz.py`` runs them under hypothesis and replays every
input that ever found a defect (``REGRESSIONS``).

The agent targets read the bytes as a program: each step takes an opcode byte and the
bytes it needs, and either hands the agent a packet built from those bytes (every header
field at its full wire width: the agent must cope with any value a datagram can carry),
lets time pass and fires its timer, starts one of its own messages, or drains its NIC.
Afterwards the agent's state must be within its documented bounds (``docs/hardening.md``).
"""

import random
import struct

from gse.agents.events import MessageCompleted, MessageDelivered
from gse.agents.invariants import check_invariants
from gse.agents.phases import UNPROVEN
from gse.config import GseConfig, RoceConfig
from gse.protocols import host_factory
from gse.wire.fastcodec import decode_datagram, decode_header, encode_packet
from gse.wire.codec import WireError, decode, encode, reframe
from gse.wire.packet import (ACK, DATA, F_LAST, F_SEC, GRANT, MAX_KIND, PAUSE, REQUEST, RESUME,
                             Packet)
from switchmodel.fabric import FabricConfig, FabricLeaf
from switchmodel.pfc import PfcConfig, PfcState
from switchmodel.queue import OutputQueue, QueueConfig
from switchmodel.switch import Switch

FIELDS = struct.Struct("!BBHIIIIHHIIIIQQB")   # a header's fields, without reserved/CRC
N_HOSTS = 4
SMALL = dict(max_requests_per_peer=3, max_requests=6, max_inbound_per_peer=4,
             max_inbound=8, max_reassembly_bytes=300_000, max_finished=5)


class Bytes:
    """Reads a fuzzer's input front to back; past the end it reads zeros (and says so)."""

    __slots__ = ("data", "pos")

    def __init__(self, data):
        self.data = data
        self.pos = 0

    def left(self):
        return len(self.data) - self.pos

    def take(self, n):
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk + bytes(n - len(chunk))

    def byte(self):
        return self.take(1)[0]

    def u32(self):
        return struct.unpack("!I", self.take(4))[0]


RAW_SRC = 0x80        # in the header's version byte (agents never see it): src, msg_id
RAW_DST = 0x40        # as given; dst as given


def packet_from(r, n_hosts=N_HOSTS, dst=None):
    """A packet whose fields come from the input (the kind among the known ones: unknown
    kinds never leave the decoder); addresses mostly within the fabric, sometimes not.

    Every other field is used at its full wire width as it comes.  The source and the
    message id are too when the source's top bit or the ``RAW_SRC`` bit of the version
    byte is set (any 32-bit value, forged sources 4 .. 2^31 - 1 included), else they are
    folded onto a host of the fabric and an id it could be using; the destination
    likewise (``RAW_DST``)."""
    (version, kind, flags, src, pdst, msg_id, psn, entropy, payload_len, msg_len, credit, aux,
     sack_base, sack_bits, ts, prio) = FIELDS.unpack(r.take(FIELDS.size))
    kind %= MAX_KIND + 1
    if src & 0x80000000 == 0 and not version & RAW_SRC:   # usually a host of the fabric ...
        src %= n_hosts
        msg_id %= 64                          # ... and a message id it could be using
    if dst is not None and pdst & 0x80000000 == 0 and not version & RAW_DST:
        pdst = dst
    return Packet(kind, src, pdst, msg_id, psn, entropy, payload_len, flags & 0x3F,
                  msg_len, credit, aux, sack_base & ~7 if kind == 3 else sack_base,
                  sack_bits, ts, prio & 1)


def op_packet(fields, raw=0):
    """The program step that hands a host agent the packet of ``fields`` (``FIELDS``'
    order, without the version: kind, flags, src, dst, msg_id, psn, entropy, payload_len,
    msg_len, credit, aux, sack_base, sack_bits, ts, prio); ``raw``: ``RAW_SRC | RAW_DST``
    or either, addresses as given (``packet_from``)."""
    return bytes([0]) + FIELDS.pack(raw, *fields)


def op_time(ns):
    """Time passes (``ns`` x 1000 ps, at most 2^20 - 1 ns) and the timer fires if due."""
    return bytes([4]) + struct.pack("!I", ns)


def op_start(msg_id, dst, size):
    """The application starts message ``msg_id`` (0..255) to host ``dst`` % N_HOSTS, of
    (``size`` & 0x3FFFF) + 1 bytes."""
    return bytes([5, msg_id, dst]) + struct.pack("!I", size)


def op_poll(count, data_ok=True):
    """The NIC is free ``count`` (0..15) times."""
    return bytes([6 if data_ok else 7, count])


# -- the wire decoder -------------------------------------------------------------------------

def wire(data):
    """Every decoder accepts exactly what the reference accepts, and agrees with it; what
    it accepts re-encodes to the same bytes."""
    try:
        ref = decode(data)
    except WireError as exc:
        ref, reason = None, exc.reason
    for fast in (decode_datagram, decode_header):
        try:
            got = fast(data)
        except WireError as exc:
            assert ref is None and exc.reason == reason, (fast.__name__, exc.reason)
            continue
        assert ref is not None, fast.__name__
        assert got.fields() == ref.fields(), fast.__name__
    if ref is not None and ref.flags & F_SEC:   # a secured datagram: the trailer is kept
        assert reframe(data, ref) == data
    elif ref is not None:
        assert encode(ref) == data
        assert encode_packet(ref) == data


# -- host agents ----------------------------------------------------------------------------

def _host(protocol, small, addr=1):
    if protocol == "gse":
        cfg = GseConfig(**SMALL) if small else GseConfig()
    elif protocol == "roce":
        keep = ("max_inbound_per_peer", "max_inbound", "max_finished")
        cfg = RoceConfig(**{k: v for k, v in SMALL.items() if k in keep}) if small \
            else RoceConfig()
    else:
        keep = ("max_inbound_per_peer", "max_inbound", "max_finished")
        cfg = FabricConfig(reorder="host", **{k: v for k, v in SMALL.items() if k in keep}) \
            if small else FabricConfig(reorder="host")
    return host_factory(protocol, cfg)(addr, random.Random(7), 100.0), cfg


def _drive_host(agent, r):
    now = 0
    started = set()
    sent = 0
    while r.left() > 0 and sent < 400:
        op = r.byte() % 8
        if op <= 3:                               # a packet arrives
            agent.receive(packet_from(r, dst=agent.addr), now)
        elif op == 4:                             # time passes, the timer fires
            now += (r.u32() & 0xFFFFF) * 1000
            t = agent.next_deadline()
            if 0 <= t <= now:
                agent.on_timer(now)
        elif op == 5:                             # the application starts a message
            msg_id = r.byte()
            dst = r.byte() % N_HOSTS
            size = (r.u32() & 0x3FFFF) + 1
            if msg_id not in started and dst != agent.addr:
                started.add(msg_id)
                agent.start_message(msg_id, dst, size, now)
        else:                                     # the NIC is free
            for _ in range(r.byte() % 16):
                pkt = agent.poll(now, op == 6)
                if pkt is None:
                    break
                sent += 1
                encode_packet(pkt)                # whatever it sends must encode
        check_invariants(agent)                   # gse.agents.invariants
        t = agent.next_deadline()
        assert t >= -1
    event = agent.next_event()
    while event is not None:                      # what it announced: typed, and so far
        assert isinstance(event, (MessageDelivered, MessageCompleted)), event
        assert 0 <= event.time_ps <= now, event
        event = agent.next_event()
    return now


def _gse_bounds(agent, cfg):
    rx = agent.receiver
    assert rx.unproven <= cfg.max_requests and rx.inbound <= cfg.max_inbound
    assert all(n <= cfg.max_requests_per_peer for n in rx.unproven_of.values())
    assert all(n <= cfg.max_inbound_per_peer for n in rx.inbound_of.values())
    assert rx.reassembly <= cfg.max_reassembly_bytes
    assert len(rx.messages) == rx.unproven + rx.inbound
    assert len(rx.finished) <= cfg.max_finished
    assert sum(1 for m in rx.messages.values() if m.phase == UNPROVEN) == rx.unproven


def gse_host(data, small=True):
    agent, cfg = _host("gse", small)
    _drive_host(agent, Bytes(data))
    _gse_bounds(agent, cfg)


def roce_host(data, small=True):
    agent, cfg = _host("roce", small)
    _drive_host(agent, Bytes(data))
    assert len(agent.receiver.incoming) <= cfg.max_inbound
    assert len(agent.receiver.finished) <= cfg.max_finished


def plain_host(data, small=True):
    agent, cfg = _host("gse-fabric", small)
    _drive_host(agent, Bytes(data))
    assert len(agent.receiver.incoming) <= cfg.max_inbound


# -- switch agents --------------------------------------------------------------------------

def switch(data):
    """Routing, egress queues and PFC accounting of one switch with 4 ports."""
    r = Bytes(data)
    hops = [(0,), (1,), (2, 3), (2, 3)]
    sw = Switch(4, "s", hops, 0x5EED, "spray" if r.byte() & 1 else "ecmp")
    qcfg = QueueConfig(20_000, 5_000, True, 10_000, True, 2_000, 8_000, 1.0)
    queues = [OutputQueue(qcfg, random.Random(i)) for i in range(4)]
    pfc = PfcState(PfcConfig(8_000, 2_000, 4_000), 4)
    held = [0] * 4
    while r.left() > 0:
        op = r.byte() % 4
        if op <= 1:
            pkt = packet_from(r)
            pkt.ingress = r.byte() % 4
            if pkt.kind in (PAUSE, RESUME):
                continue
            port = sw.route(pkt)
            assert -1 <= port < 4
            if port >= 0 and queues[port].enqueue(pkt) == 0 and pkt.prio == 0:
                pfc.on_enqueue(pkt.ingress, pkt.size)
                held[pkt.ingress] += pkt.size
        else:
            q = queues[r.byte() % 4]
            pkt = q.dequeue()
            if pkt is not None and pkt.prio == 0 and held[pkt.ingress] >= pkt.size:
                pfc.on_dequeue(pkt.ingress, pkt.size)
                held[pkt.ingress] -= pkt.size
    for q in queues:
        assert q.data_bytes <= qcfg.queue_bytes and q.control_bytes <= qcfg.control_queue_bytes


def fabric_leaf(data):
    """A fabric-mode leaf (node 10, hosts 0 and 1) fed packets from its hosts and the
    fabric, and its timers."""
    r = Bytes(data)
    cfg = FabricConfig(voq_buffer_bytes=200_000, reorder_buffer_bytes=100_000,
                       reorder="leaf" if r.byte() & 1 else "host")
    rows = [(2, 3)] * 12
    rows[0], rows[1], rows[10] = (0,), (1,), ()
    lf = FabricLeaf(10, cfg, Switch(10, "leaf10", rows, 0x1234, "spray"), {0: 0, 1: 1},
                    {0: 100.0, 1: 100.0}, [10, 10, 11, 11])
    now = 0
    while r.left() > 0:
        op = r.byte() % 4
        if op <= 2:
            lf.receive(packet_from(r), r.byte() % 4, now)
        else:
            now += (r.u32() & 0xFFFFF) * 1000
            t = lf.next_deadline()
            if 0 <= t <= now:
                lf.on_timer(now)
        lf.out.clear()
        lf.pfc_out.clear()
    assert lf.voq_bytes <= cfg.voq_buffer_bytes
    assert lf.reorder_bytes <= cfg.reorder_buffer_bytes
    assert len(lf.demands) <= len(rows) * 2


TARGETS = {"wire": wire, "gse_host": gse_host, "roce_host": roce_host,
           "plain_host": plain_host, "switch": switch, "fabric_leaf": fabric_leaf}

# Inputs that once found a defect: (target, input).  tests/test_fuzz.py replays them all.
REGRESSIONS = [
    # a NACK for a packet never sent (psn beyond next_new) queued a "retransmission" of it,
    # which would then go out twice; found by the invariants (gse.agents.invariants) under
    # tests/test_fuzz.py's short run (compiled build)
    ("gse_host", bytes.fromhex(
        "000000000000000002000000010000000500000000000710000000138800001388000000"
        "000000000000000000000000000000000000000000000500000000000000000008000000"
        "020100000000000000000000010000000500000001000703880000138800001388000000"
        "00000000000000000000000000ffffffffffffffff000604")),
    # a fabric packet from a source that is no host of the fabric (0x80000010) reaching a
    # destination leaf: FabricLeaf._arrive indexed leaf_of with it (IndexError)
    ("fabric_leaf", bytes.fromhex(
        "0100010000008000001000000000000000010000000000001000000"
        "0a000000000000000000500000000000000000000000000000000000000000002")),
    # a message finished by a forged source (>= 2^31): its id (src << 32 | msg_id) did not
    # fit the finished-id store's signed 64-bit array (OverflowError in FinishedIds.add,
    # after the receiver had already forgotten the message); found by experiments/fuzz.py
    # (pure build, seeds 2 and 3) in every host agent
    ("roce_host", bytes.fromhex("00000000ffffff00000000000000000000000000000000003200"
                                "00003000001c")),
    ("roce_host", bytes.fromhex("0000000000800000000000000000000000000000000000000000"
                                "0000b27474747474747474747474747474")),
    ("plain_host", bytes.fromhex("000000fefefe015d0000007a00120000000000000000000000000000"
                                 "fff7ffff000000fefefa01af")),
    ("plain_host", bytes.fromhex("00000000ffffffff000000000000000000000000000000000000000a0a2f")),
    ("gse_host", bytes.fromhex("a6d5002d000079a500000008007f2500000000000000000000000000"
                               "000208f5f5d8")),
]


def seeds(target):
    """Inputs a fuzzing run starts from (``experiments/fuzz.py`` hands them to libFuzzer
    beside its corpus): every regression of ``target`` and a few coherent programs -- a
    message sent and granted, one received whole from a host and from a forged source
    at the fields' full width, a REQUEST -- that random bytes take long to stumble on."""
    out = [data for t, data in REGRESSIONS if t == target]
    edge = 0xFFFFFFFF
    if target in ("gse_host", "roce_host", "plain_host"):
        def message(src, msg_id, raw=0):
            return (op_packet((DATA, 0, src, 1, msg_id, 0, 7, 4096, 5000, 5000, 0, 0, 0, 0, 0),
                              raw)
                    + op_packet((DATA, F_LAST, src, 1, msg_id, 1, 7, 904, 5000, 5000, 0, 0, 0,
                                 edge << 32 | edge, 0), raw) + op_poll(4))
        out += [op_start(9, 2, 9999) + op_poll(8)
                + op_packet((GRANT, 0, 2, 1, 9, 0, 3, 0, 10000, 8192, 8192, 0, 0, 0, 1))
                + op_poll(8) + op_packet((ACK, 0, 2, 1, 9, 2, 3, 0, 10000, 0, 0, 0, 3, 0, 1))
                + op_time(200_000) + op_poll(8),
                message(2, 5), message(edge, edge, RAW_SRC), message(0x7FFFFFFF, 1, RAW_SRC),
                op_packet((REQUEST, 0, 3, 1, 1, 0, 9, 0, 100000, 100000, 0, 0, 0, 0, 1))
                + op_time(100_000) + op_poll(15)]
    elif target in ("switch", "fabric_leaf"):
        pkts = [FIELDS.pack(0, DATA, 0, 0, 3, 1, 0, 5, 4096, 8192, 0, 0, 0, 0, 0, 0),
                FIELDS.pack(0, ACK, 0, 3, 0, 1, 1, 5, 0, 8192, 0, 0, 0, edge, 0, 1),
                FIELDS.pack(RAW_SRC, DATA, 0, 0x7FFFFFFF, edge, edge, edge, 0xFFFF, 0xFFFF,
                            edge, edge, edge, edge, (1 << 64) - 1, (1 << 64) - 1, 0)]
        if target == "switch":
            out.append(b"\x01" + b"".join(b"\x00" + p + b"\x02" for p in pkts)
                       + b"\x02\x02\x03\x02")
        else:
            out.append(b"\x01" + b"".join(b"\x00" + p + b"\x00" for p in pkts)
                       + b"\x03" + struct.pack("!I", 100_000))
    else:
        out += [encode(Packet(DATA, 2, 3, 4, 0, 5, 0, F_LAST, 0, 0, 0, 0, 0, 0, 0)),
                encode(Packet(ACK, edge, edge, edge, edge, 0xFFFF, 0, 0, edge, edge, edge,
                              edge & ~7, (1 << 64) - 1, (1 << 64) - 1, 1))]
    return out
