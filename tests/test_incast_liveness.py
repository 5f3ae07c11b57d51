"""Liveness of large incasts (issue 24, item 1).

A GSE receiver stopped granting on a 127:1 incast of 2 MB (96 of 127 delivered, then
nothing): a sender's turn in the receiver's round robin came less often than its
``request_timeout_ps``, so its re-REQUEST crossed the GRANT on its way; the receiver took
the crossing for a lost grant, granted the same credit again (stale at the sender, which
had nothing to send for it), held the message for want of that data, and every later
REQUEST put it back only to be held again.  The unit tests pin each step at the receiver;
the property test runs whole incasts, for every protocol, and wants every message
delivered exactly once (the simulation raises on a second delivery).  Times are virtual.
"""

import random

import pytest
from harness import Wire
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gse.agents.gse_host import GseHost
from gse.agents.receiver import ReceiverSide
from gse.config import GseConfig
from gse.metrics.records import receiver_bound_ps
from gse.protocols import default_config
from gse.runtimes.sim.run import run_simulation
from gse.wire.packet import DATA, F_RETX, GRANT, PRIO_CONTROL, PRIO_DATA, REQUEST, Packet
from gse.workloads.traffic import Message, incast
from topologies import fat_tree

MTU = 4096
KiB = 1024
MiB = 1024 * KiB
CREDIT = GseConfig().credit_bytes


def request(src, dst, msg_id, size, aux=0, retx=False):
    return Packet(REQUEST, src, dst, msg_id=msg_id, psn=1, flags=F_RETX if retx else 0,
                  msg_len=size, credit=size, aux=aux, prio=PRIO_CONTROL)


def data(src, dst, msg_id, psn, size):
    return Packet(DATA, src, dst, msg_id=msg_id, psn=psn, payload_len=MTU, msg_len=size,
                  prio=PRIO_DATA)


def proven_receiver(size=100 * MTU):
    """Receiver 1 of a message (2, 7) of ``size`` bytes, all scheduled, granted once and
    its data arrived; returns (receiver, out, time, demand)."""
    cfg = GseConfig(unsched_bytes=0)
    rx = ReceiverSide(1, cfg, 100.0)
    out = []
    rx.on_request(request(2, 1, 7, size), 0, out)
    g = rx.grant(0)
    assert g.aux == CREDIT
    for psn in range(CREDIT // MTU):
        rx.on_data(data(2, 1, 7, psn, size), 5_000_000, out)
    return rx, out, 5_000_000, rx.messages[(2, 7)].demand


def test_a_re_request_crossing_its_grant_gets_no_stale_credit():
    """The grant in flight is not taken back: the next GRANT carries new credit."""
    rx, out, now, demand = proven_receiver()
    now = rx.scheduler.next_time
    g = rx.grant(now)                       # on its way to the sender ...
    assert g.aux == 2 * CREDIT
    out.clear()
    # ... which, starved for a request timeout, asks with what it has
    rx.on_request(request(2, 1, 7, 100 * MTU, aux=CREDIT, retx=True), now + 1000, out)
    assert demand.granted_total == 2 * CREDIT       # (it was rolled back to CREDIT)
    repeat = [p for p in out if p.kind == GRANT]
    assert len(repeat) == 1 and repeat[0].aux == 2 * CREDIT and repeat[0].credit == 0
    for psn in range(CREDIT // MTU, 2 * CREDIT // MTU):  # the data of the crossed grant
        rx.on_data(data(2, 1, 7, psn, 100 * MTU), now + 10_000_000, out)
    g = rx.grant(max(rx.scheduler.next_time, now + 10_000_000))
    assert g is not None and g.aux == 3 * CREDIT      # new credit, not the same total again


def test_a_held_message_gets_its_turn_back_from_its_senders_re_request():
    """Held for want of data, a message whose sender asks again is granted again."""
    rx, out, now, demand = proven_receiver()
    sched = rx.scheduler
    now = sched.next_time
    assert rx.grant(now).aux == 2 * CREDIT          # granted, and its data never comes
    stall = rx.expire_ps
    later = now + stall
    assert rx.grant(later) is None and sched.holds == 1 and not demand.queued
    # the sender holds all it was granted, has spent it, and asks
    rx.on_request(request(2, 1, 7, 100 * MTU, aux=2 * CREDIT, retx=True), later + 1, out)
    assert demand.queued
    g = rx.grant(max(sched.next_time, later + 1))
    assert g is not None and g.aux == 3 * CREDIT and sched.holds == 1


def test_a_flood_of_re_requests_takes_no_credit_back_and_draws_few_grants():
    """A lying sender (it holds nothing, it says) cannot make the receiver grant its
    message more than the message needs, and a REQUEST per microsecond draws at most one
    repeated GRANT per half a request timeout."""
    cfg = GseConfig(unsched_bytes=0)
    host = GseHost(1, cfg, random.Random(1), 100.0)
    size = 64 * MTU
    host.receive(request(2, 1, 7, size), 0)
    host.receive(data(2, 1, 7, 0, size), 1_000_000)      # proven; no more data ever
    demand = host.receiver.messages[(2, 7)].demand
    grants, most = [], 0
    end = 10 * cfg.request_timeout_ps
    for now in range(2_000_000, end, 1_000_000):
        host.receive(request(2, 1, 7, size, aux=0, retx=True), now)
        t = host.next_deadline()
        if 0 <= t <= now:
            host.on_timer(now)
        while (pkt := host.poll(now)) is not None:
            grants.append(pkt)
        most = max(most, demand.granted_total)
        assert demand.granted_total == most           # never taken back
    assert most <= size
    assert sum(p.credit for p in grants) == most
    repeats = [p for p in grants if p.credit == 0]
    assert 0 < len(repeats) <= 1 + end // (cfg.request_timeout_ps // 2)
    assert host.counters()["regrants"] == len(repeats)


def test_senders_whose_turn_comes_after_their_request_timeout_all_finish():
    """8:1 on a direct wire with a 5 us request timeout: each sender's turn comes every
    8 x 1.35 us of grants.  Before the fix one message never finished."""
    for unsched in (0, GseConfig().unsched_bytes):
        cfg = GseConfig(request_timeout_ps=5_000_000, unsched_bytes=unsched)
        w = Wire(n_hosts=9, config=cfg)
        for s in range(1, 9):
            w.start(s, s, 0, 400_000)
        w.run(2_000_000_000)
        assert len(w.delivered) == 8, (unsched, sorted(w.delivered))
        assert w.hosts[0].receiver.scheduler.holds == 0


# -- whole incasts ----------------------------------------------------------------------

K8 = fat_tree(8)
PROTOCOLS = ("gse", "gse-fabric", "roce")
# 4 KiB .. 4 MiB, log-uniform: a run's bytes stay modest while every scale is drawn
SIZES = st.integers(12, 21).flatmap(lambda e: st.integers(2 ** e, 2 ** (e + 1)))


def assert_all_delivered(topo, senders, sizes, seed, protocols=PROTOCOLS):
    msgs = incast(len(topo.hosts), senders, sizes[0], random.Random(seed))
    msgs = [Message(m.msg_id, m.src, m.dst, sizes[i % len(sizes)], m.start_ps)
            for i, m in enumerate(msgs)]
    for protocol in protocols:
        cfg = default_config(protocol)
        # bounded run: a stalled incast would otherwise probe for ever
        until = 3 * receiver_bound_ps(topo, msgs, cfg.mtu) + 1_000_000_000
        r = run_simulation(topo, msgs, protocol, cfg, seed, until_ps=until)
        s = r.summary
        assert s["lost"] == 0 and s["delivered"] == s["completed"] == len(msgs), (
            protocol, senders, sizes, s["delivered"])
        for rec in r.records:
            assert rec.start_ps <= rec.deliver_ps <= rec.finish_ps


@settings(max_examples=4)
@given(st.integers(1, len(K8.hosts) - 1), st.lists(SIZES, min_size=1, max_size=4),
       st.integers(0, 1000))
@example(127, [256 * KiB], 1)        # the widest fan-in: stalled at 96 of 127 before
def test_every_message_of_an_incast_is_delivered(senders, sizes, seed):
    assert_all_delivered(K8, senders, sizes, seed)


@pytest.mark.slow
def test_every_message_of_the_issues_incasts_is_delivered():
    """127:1 x 2 MB and x 4 MiB on k=8, and 1,023:1 x 256 KiB on k=16."""
    assert_all_delivered(K8, 127, [2_000_000], 1)
    assert_all_delivered(K8, 127, [4 * MiB], 2)
    assert_all_delivered(fat_tree(16), 1023, [256 * KiB], 1)
