"""A message whose first DATA is the whole of it is delivered without its state.

``ReceiverSide._deliver_whole`` (docs/scale.md, "One-packet messages without their
state") must do exactly what creating the message, marking its one packet and finishing
it did: the same ACK, delivery, remembered id, counters and credit scheduler (its charge
for unscheduled bytes, the pacer woken), the same due time returned.  Checked against the
same receiver made to take the general path (``_whole`` refusing every packet), on a
random mix of one-packet messages (ECN-marked, unscheduled or not, trimmed, duplicated,
psn or credit inconsistent, beyond the limits) among multi-packet ones that keep the
scheduler busy.  Times are virtual.
"""

import random

from gse.agents.receiver import ReceiverSide
from gse.config import GseConfig
from gse.wire.packet import (ACK, DATA, F_ECN_CE, F_LAST, F_TRIMMED, F_UNSCHED, PRIO_CONTROL,
                             PRIO_DATA, REQUEST, Packet)

MTU = 4096
PKT_FIELDS = ("kind", "src", "dst", "msg_id", "psn", "entropy", "payload_len", "flags",
              "msg_len", "credit", "aux", "sack_base", "sack_bits", "ts", "prio")
COUNTERS = ("duplicates", "acks", "nacks", "grants_sent", "ecn_seen", "payload_bytes",
            "order", "inbound", "reassembly", "inbound_refused", "unproven")


class General(ReceiverSide):
    """The same receiver, every message through its state."""

    __slots__ = ()

    def _whole(self, pkt):
        return False


def packets(rng, n):
    """DATA and REQUESTs from a few sources: mostly one-packet messages, some odd."""
    out = []
    msg_id = 0
    for _ in range(n):
        src = rng.randrange(2, 6)
        msg_id += 1
        r = rng.random()
        if r < 0.15:                                   # a multi-packet message's start
            size = rng.randrange(MTU + 1, 6 * MTU)
            out.append(Packet(REQUEST, src, 1, msg_id=msg_id, psn=1, msg_len=size,
                              credit=size, prio=PRIO_CONTROL))
            out.append(Packet(DATA, src, 1, msg_id=msg_id, psn=0, payload_len=MTU,
                              msg_len=size, flags=F_UNSCHED, credit=MTU, prio=PRIO_DATA))
            continue
        size = rng.choice((1, 819, MTU - 1, MTU, MTU + 1))
        flags = F_LAST
        credit = 0
        if rng.random() < 0.7:
            flags |= F_UNSCHED
            credit = rng.choice((size, size, size + 5, size - 1, 0))
        if rng.random() < 0.2:
            flags |= F_ECN_CE
        if rng.random() < 0.1:
            flags |= F_TRIMMED
        psn = 0 if rng.random() < 0.95 else 1
        pkt = Packet(DATA, src, 1, msg_id=msg_id, psn=psn, entropy=rng.randrange(1 << 16),
                     payload_len=min(size, MTU), msg_len=size, flags=flags, credit=credit,
                     ts=rng.randrange(1 << 30), prio=PRIO_DATA)
        out.append(pkt)
        if rng.random() < 0.2:                         # its duplicate, later
            out.append(Packet(DATA, src, 1, msg_id=msg_id, psn=psn, payload_len=pkt.payload_len,
                              msg_len=size, flags=flags & ~F_TRIMMED, credit=credit,
                              prio=PRIO_DATA))
    rng.shuffle(out)
    return out


def run(cls, pkts, config, grant_every):
    rx = cls(1, config, 100.0)
    trace = []
    now = 0
    for i, pkt in enumerate(pkts):
        now += 700
        out = []
        if i % 50 == 25:
            sched = rx.scheduler           # a pacer left unarmed with demands waiting:
            sched.armed = False            # the next wake-up arms it (set_need, wake)
        if pkt.kind == DATA:
            due = rx.on_data(pkt, now, out)
        else:
            due = rx.on_request(pkt, now, out)
        if i % grant_every == 0 and rx.scheduler.armed and now >= rx.scheduler.next_time:
            grant = rx.grant(now)
            if grant is not None:
                out.append(grant)
        trace.append((due, [tuple(getattr(p, f) for f in PKT_FIELDS) for p in out]))
    sched = rx.scheduler
    state = {c: getattr(rx, c) for c in COUNTERS}
    state.update(armed=sched.armed, next_time=sched.next_time, active=len(sched.active),
                 granted=sched.granted_bytes, finished=list(rx.finished),
                 messages=sorted(rx.messages), inbound_of=dict(rx.inbound_of),
                 events=[(e.src, e.msg_id, e.size, e.time_ps) for e in rx.events])
    return trace, state


def test_one_packet_messages_as_through_their_state():
    for seed in range(6):
        rng = random.Random(seed)
        pkts = packets(rng, 400)
        for config in (GseConfig(), GseConfig(max_inbound=6, max_inbound_per_peer=3)):
            for grant_every in (1, 3):
                fast = run(ReceiverSide, pkts, config, grant_every)
                assert fast == run(General, pkts, config, grant_every), (seed, grant_every)
    # the general path was not taken by every message in the fast run: some were whole
    rx = ReceiverSide(1, GseConfig(), 100.0)
    one = Packet(DATA, 2, 1, msg_id=9, psn=0, payload_len=819, msg_len=819,
                 flags=F_UNSCHED | F_LAST, credit=819, prio=PRIO_DATA)
    assert rx._whole(one) and not General(1, GseConfig(), 100.0)._whole(one)
    out = []
    assert rx.on_data(one, 5, out) == -1
    assert rx.messages == {} and rx.inbound_of == {} and rx.inbound == 0
    assert [(p.kind, p.psn, p.sack_base, p.sack_bits, p.msg_len) for p in out] == [
        (ACK, 1, 0, 1, 819)]
    assert list(rx.finished) == [(2, 9)] and len(rx.events) == 1
