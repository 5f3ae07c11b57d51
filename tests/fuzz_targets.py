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

from gse.config import GseConfig, RoceConfig
from gse.protocols import host_factory
from gse.runtimes.udp.link import decode_datagram, decode_header, encode_packet
from gse.wire.codec import WireError, decode, encode, reframe
from gse.wire.packet import F_SEC, MAX_KIND, PAUSE, RESUME, Packet
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


def packet_from(r, n_hosts=N_HOSTS, dst=None):
    """A packet whose fields come from the input (the kind among the known ones: unknown
    kinds never leave the decoder); addresses mostly within the fabric, sometimes not."""
    (_, kind, flags, src, pdst, msg_id, psn, entropy, payload_len, msg_len, credit, aux,
     sack_base, sack_bits, ts, prio) = FIELDS.unpack(r.take(FIELDS.size))
    kind %= MAX_KIND + 1
    if src & 0x80000000 == 0:                 # usually a host of the fabric ...
        src %= n_hosts
        msg_id %= 64                          # ... and a message id it could be using
    if dst is not None and pdst & 0x80000000 == 0:
        pdst = dst
    return Packet(kind, src, pdst, msg_id, psn, entropy, payload_len, flags & 0x3F,
                  msg_len, credit, aux, sack_base & ~7 if kind == 3 else sack_base,
                  sack_bits, ts, prio & 1)


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
        t = agent.next_deadline()
        assert t >= -1
    agent.receiver.delivered.clear()
    agent.sent_done.clear()
    return now


def _gse_bounds(agent, cfg):
    rx = agent.receiver
    assert rx.unproven <= cfg.max_requests and rx.inbound <= cfg.max_inbound
    assert all(n <= cfg.max_requests_per_peer for n in rx.unproven_of.values())
    assert all(n <= cfg.max_inbound_per_peer for n in rx.inbound_of.values())
    assert rx.reassembly <= cfg.max_reassembly_bytes
    assert len(rx.messages) == rx.unproven + rx.inbound
    assert len(rx.finished) <= cfg.max_finished
    assert sum(1 for m in rx.messages.values() if m.bitmap is None) == rx.unproven


def gse_host(data, small=True):
    agent, cfg = _host("gse", small)
    _drive_host(agent, Bytes(data))
    _gse_bounds(agent, cfg)


def roce_host(data, small=True):
    agent, cfg = _host("roce", small)
    _drive_host(agent, Bytes(data))
    assert len(agent.incoming) <= cfg.max_inbound
    assert len(agent.finished) <= cfg.max_finished


def plain_host(data, small=True):
    agent, cfg = _host("gse-fabric", small)
    _drive_host(agent, Bytes(data))
    assert len(agent.incoming) <= cfg.max_inbound


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
    # a fabric packet from a source that is no host of the fabric (0x80000010) reaching a
    # destination leaf: FabricLeaf._arrive indexed leaf_of with it (IndexError)
    ("fabric_leaf", bytes.fromhex(
        "0100010000008000001000000000000000010000000000001000000"
        "0a000000000000000000500000000000000000000000000000000000000000002")),
]
