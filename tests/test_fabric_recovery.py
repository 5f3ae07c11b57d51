"""Fabric mode's loss recovery between the leaves (``switchmodel.fabric_recovery``), step
by step, then as a property of whole runs.

The steps use the two hand-driven leaves of ``tests/test_fabric_leaf.py``: S (node 10,
hosts 0 and 1) and D (node 11, hosts 2 and 3), uplinks on ports 2 and 3, and the test
carries every packet between them itself, dropping what the story loses.  After each step
the test asserts what went where: the NACK and its bitmap, the resend's path, what the
host port received, the source leaf's sent buffer and counters.
"""

import random

import pytest

from hypothesis import assume, event, given
from hypothesis import strategies as st
from test_fabric_leaf import LEAF_OF, UP, D, S, US, data, table, take
from test_failure_properties import TOPO, deliverable

from gse.protocols import queue_config
from gse.runtimes.sim.fabric_nodes import leaf_agents
from gse.runtimes.sim.run import run_simulation
from gse.wire.codec import decode, encode
from gse.wire.linkrate import wire_time_ps
from gse.wire.packet import (ACK, DATA, GRANT, NACK, PRIO_CONTROL, PRIO_DATA, REQUEST,
                             make_packet)
from gse.workloads.faults import build_schedule
from gse.workloads.traffic import incast
from switchmodel.fabric import FabricConfig, FabricLeaf
from switchmodel.switch import Switch


def leaf(node, **kw):
    cfg = FabricConfig(**kw)
    hosts = (0, 1) if node == S else (2, 3)
    sw = Switch(node, "leaf%d" % node, table(node), 0x1234 + node, "spray")
    return FabricLeaf(node, cfg, sw, {hosts[0]: 0, hosts[1]: 1},
                      {hosts[0]: 100.0, hosts[1]: 100.0}, LEAF_OF)


def granted_burst(s, d, n, now=0):
    """Host 0 sends ``n`` packets to host 2; S asks, D grants, S sprays: the DATA sent."""
    for psn in range(n):
        s.receive(data(0, 2, psn, n=n), 0, now)
    sent = []
    for _ in range(4):                   # REQUESTs over, GRANTs back, until all is sprayed
        for _, p in take(s, REQUEST):
            d.receive(p, 2, now + 1 * US)
        while 0 <= d.next_deadline() <= now + 5 * US:
            d.on_timer(d.next_deadline())
        for _, p in take(d, GRANT):
            s.receive(p, 2, now + 2 * US)
        sent += take(s, DATA)
    assert len(sent) == n
    return sent


def to_host(d):
    """The psns D handed down to its hosts (ports 0 and 1), in order."""
    return [p.psn for port, p in take(d, DATA) if port not in UP]


def deliver(d, pkts, now):
    for _, p in pkts:
        d.receive(p, 2, now)


def test_a_packet_dropped_on_a_spine_link_is_nacked_and_resent_on_another_path():
    s, d = leaf(S), leaf(D)
    sent = granted_burst(s, d, 8)
    assert [p.aux for _, p in sent] == list(range(1, 9))
    assert s.retx_bytes == sum(p.size for _, p in sent)      # kept until D acknowledges
    lost_port, lost = sent[2]                               # seq 3 dies on a spine link
    t = 10 * US
    deliver(d, sent[:2] + sent[3:], t)
    assert to_host(d) == [0, 1]                             # seq 4..8 held behind the hole
    ack_at = t + d.cfg.leaf_ack_delay_ps
    assert d.next_deadline() == ack_at                      # seq 1, 2: a delayed ACK
    d.on_timer(ack_at)
    (_, ack), = take(d, ACK)
    assert (ack.src, ack.dst, ack.msg_id, ack.psn) == (D, S, 2, 3)
    s.receive(ack, 2, ack_at)
    assert sorted(s.sent_bufs[2].sent) == list(range(3, 9))
    nack_at = t + d.cfg.leaf_nack_timeout_ps
    assert d.next_deadline() == nack_at                     # no skip: a NACK is due
    d.on_timer(nack_at)
    (_, nack), = take(d, NACK)
    assert (nack.src, nack.dst, nack.msg_id, nack.psn) == (D, S, 2, 3)
    assert nack.credit == 5 and nack.sack_bits == 0b00001   # seq 3 missing, 4..7 arrived
    assert d.hole_skips == 0 and d.leaf_nacks == 1

    s.receive(nack, 2, nack_at + 1 * US)
    (port, again), = take(s, DATA)
    assert again.aux == 3 and again.psn == lost.psn and again.sack_base == lost.sack_base
    assert port != lost_port                                # another path
    assert s.leaf_resends == 1 and s.nacks_received == 1
    assert s._suspected(D, lost_port * 256, nack_at + 1 * US)   # the lost path is avoided
    d.receive(again, 2, nack_at + 2 * US)
    assert to_host(d) == [2, 3, 4, 5, 6, 7]                 # no hole ever reached the host
    assert d.hole_skips == 0 and d.skipped == 0

    d.on_timer(d.next_deadline())                           # 6 more in order: ACKed soon
    (_, ack), = take(d, ACK)
    assert (ack.dst, ack.msg_id, ack.psn) == (S, 2, 9)
    s.receive(ack, 2, nack_at + 3 * US)
    assert s.sent_bufs == {} and s.retx_bytes == 0 and s.idle()
    assert s.counters()["retx_peak_bytes"] == 8 * sent[0][1].size


@pytest.mark.parametrize("priority", [True, False])
def test_a_resend_crosses_the_fabric_at_control_priority_and_reaches_the_host_as_data(
        priority):
    s, d = leaf(S, leaf_repair_priority=priority), leaf(D, leaf_repair_priority=priority)
    sent = granted_burst(s, d, 4)
    assert all(p.prio == PRIO_DATA for _, p in sent)         # first sprays: data
    t = 10 * US
    deliver(d, sent[:1] + sent[2:], t)                       # seq 2 lost
    assert to_host(d) == [0]
    d.on_timer(t + d.cfg.leaf_ack_delay_ps)                  # seq 1's delayed ACK
    for _, ack in take(d, ACK):
        s.receive(ack, 2, t + d.cfg.leaf_ack_delay_ps)
    nack_at = t + d.cfg.leaf_nack_timeout_ps
    assert d.next_deadline() == nack_at
    d.on_timer(nack_at)
    (_, nack), = take(d, NACK)
    s.receive(nack, 2, nack_at + 1 * US)
    (_, again), = take(s, DATA)
    assert again.aux == 2
    assert again.prio == (PRIO_CONTROL if priority else PRIO_DATA)
    d.receive(again, 2, nack_at + 2 * US)
    down = [p for port, p in take(d, DATA) if port not in UP]
    assert [p.psn for p in down] == [1, 2, 3]                # in order, as data: a host
    assert all(p.prio == PRIO_DATA for p in down)            # queue never reorders it


def test_path_share_pacing_spaces_a_pair_to_its_live_paths_share():
    s, d = leaf(S, path_share_pacing=True), leaf(D, path_share_pacing=True)
    assert s.full_paths == 2                                 # 2 uplinks, spine fan-out 1
    sent = granted_burst(s, d, 4)                            # no failure: not held
    assert s.share_holds == 0
    s.set_widths({3: (1, 0)})                                # toward host 3: one path of 2
    assert s._path_share(3, D, 0) == 0.5 and s._path_share(2, D, 0) == 1.0
    t = 20 * US
    for psn in range(4):
        s.receive(data(0, 3, psn, msg=2, n=4), 0, t)
    for _, p in take(s, REQUEST):
        d.receive(p, 2, t)
    while 0 <= d.next_deadline() <= t + 5 * US:             # D's pacer grants it all
        d.on_timer(d.next_deadline())
    for _, p in take(d, GRANT):                              # (S sees every GRANT at t)
        s.receive(p, 2, t)
    times = []
    now = t
    while True:
        out = take(s, DATA)
        assert all(port == UP[0] for port, _ in out)         # the live path only
        times += [now] * len(out)
        if len(times) == 4:
            break
        now = s.next_deadline()
        assert now > 0
        s.on_timer(now)
    gap = wire_time_ps(sent[0][1].size, 50_000)              # 100 Gb/s x 1/2
    assert times == [t + i * gap for i in range(4)]
    assert s.share_holds == 3 and s.counters()["share_holds"] == 3


@pytest.mark.parametrize("start", [True, False])
def test_path_share_start_lowers_a_busy_pacer_to_its_pairs_live_share(start):
    s, d = leaf(S), leaf(D, path_share_start=start)
    for psn in range(40):                                    # a demand D cannot grant
        s.receive(data(0, 2, psn, n=40), 0, 0)               # at once: its pacer is busy
    for _, p in take(s, REQUEST):
        d.receive(p, 2, 0)
    assert d.downlinks[2].active and d.downlinks[2].scale == 1.0
    d.set_widths({0: (1, 0), 1: (1, 0)})                     # toward S's hosts: 1 path of 2
    dl = d.downlinks[2]
    assert dl.scale == (0.5 if start else 1.0)
    assert dl.rate == (dl.mbps // 2 if start else dl.mbps)
    assert d.downlinks[3].scale == 1.0                       # idle: left alone


def test_a_packet_a_spine_trimmed_is_nacked_at_once_and_never_reaches_the_host():
    """``trim``: a spine queue trims fabric DATA instead of dropping it.  The destination
    leaf then knows the packet is lost when its header arrives, and NACKs it at once (not
    a NACK timeout later), naming only it: seq 4 below it is not held yet, but may still
    be on its way, so it is left to the hole's timer."""
    s, d = leaf(S, trim=True), leaf(D, trim=True)
    sent = granted_burst(s, d, 8)
    t = 10 * US
    deliver(d, sent[:2], t)                                  # seq 1, 2 in order
    _, cut = sent[4]                                         # seq 5 trimmed on a spine
    header = decode(encode(cut))
    header.trim()
    d.receive(header, 2, t + 1 * US)
    (_, nack), = take(d, NACK)
    assert (nack.src, nack.dst, nack.msg_id, nack.psn) == (D, S, 2, 3)
    assert nack.credit == 3 and nack.sack_bits == 0b100      # only seq 5 named missing
    assert to_host(d) == [0, 1] and d.trimmed_nacks == 1    # the header went nowhere
    assert d.counters()["trimmed_nacks"] == 1
    s.receive(nack, 2, t + 2 * US)
    (_, again), = take(s, DATA)
    assert again.aux == 5 and again.psn == cut.psn and s.leaf_resends == 1
    deliver(d, sent[2:4] + [(0, again)] + sent[5:], t + 3 * US)
    assert to_host(d) == [2, 3, 4, 5, 6, 7] and d.hole_skips == 0
    d.receive(header, 2, t + 4 * US)      # the header again, behind the cumulative point
    assert take(d, NACK) == [] and d.trimmed_stale == 1


def test_spines_trim_only_where_the_leaves_repair():
    """A trimmed header is the destination leaf's to repair: without leaf recovery (or
    with the hosts reordering) the spines drop instead, as a plain host could not use it."""
    assert queue_config("gse-fabric", FabricConfig()).trim            # the default
    for kw in (dict(trim=False), dict(leaf_recovery=False), dict(reorder="host")):
        assert not queue_config("gse-fabric", FabricConfig(**kw)).trim, kw


def test_the_buffer_is_freed_by_a_delayed_ack_and_new_sprays_avoid_the_suspected_path():
    s, d = leaf(S), leaf(D)
    sent = granted_burst(s, d, 3)
    deliver(d, sent, 10 * US)
    assert to_host(d) == [0, 1, 2] and take(d, ACK) == []   # fewer than leaf_ack_packets
    ack_at = 10 * US + d.cfg.leaf_ack_delay_ps
    assert d.next_deadline() == ack_at
    d.on_timer(ack_at)
    (_, ack), = take(d, ACK)
    assert ack.psn == 4
    s.receive(ack, 2, ack_at)
    assert s.idle() and s.retx_bytes == 0

    s._suspect(D, UP[0] * 256, 0, ack_at)                   # port 2 lost a packet
    sent = granted_burst(s, d, 4, now=ack_at)
    assert [port for port, _ in sent] == [UP[1]] * 4        # every new container avoids it


def test_with_every_path_suspected_the_spray_still_walks_every_path():
    s, d = leaf(S), leaf(D)
    for port in UP:
        s._suspect(D, port * 256, 0, 0)
    sent = granted_burst(s, d, 8)
    assert sorted(port for port, _ in sent) == [2] * 4 + [3] * 4
    assert s.all_suspected >= len(sent)             # (REQUESTs walk the same paths)


def test_lying_duplicate_and_stale_acks_change_nothing_they_should_not():
    s, d = leaf(S), leaf(D)
    sent = granted_burst(s, d, 4)
    held = s.retx_bytes
    lie = make_packet(kind=ACK, src=D, dst=S, msg_id=2, psn=1000)
    s.receive(lie, 2, 5 * US)                               # beyond anything sent
    assert s.bad_acks == 1 and s.retx_bytes == held
    ack = make_packet(kind=ACK, src=D, dst=S, msg_id=2, psn=3)
    s.receive(ack, 2, 6 * US)
    assert s.retx_bytes == held - 2 * sent[0][1].size and s.sent_bufs[2].lo == 3
    s.receive(make_packet(kind=ACK, src=D, dst=S, msg_id=2, psn=3), 2, 7 * US)
    s.receive(make_packet(kind=ACK, src=D, dst=S, msg_id=2, psn=2), 2, 7 * US)
    assert s.retx_bytes == held - 2 * sent[0][1].size and s.sent_bufs[2].lo == 3
    s.receive(make_packet(kind=ACK, src=12, dst=S, msg_id=2, psn=5), 2, 7 * US)
    s.receive(make_packet(kind=ACK, src=D, dst=S, msg_id=3, psn=5), 2, 7 * US)
    assert s.stale_acks == 2                                # not D's pair, or no such pair
    s.receive(make_packet(kind=NACK, src=D, dst=S, msg_id=2, psn=7, sack_bits=1,
                          credit=1), 2, 8 * US)
    assert s.bad_acks == 2 and take(s, DATA) == []          # a NACK past the end: ignored
    s.receive(make_packet(kind=ACK, src=D, dst=S, msg_id=2, psn=5), 2, 9 * US)
    assert s.idle() and s.bad_acks == 2


def test_a_lost_tail_is_resent_by_the_source_timer_and_a_duplicate_is_dropped():
    s, d = leaf(S), leaf(D)
    sent = granted_burst(s, d, 4)
    deliver(d, sent[:3], 5 * US)                            # the last packet dies
    assert to_host(d) == [0, 1, 2]
    assert s.sent_bufs[2].deadline == 2 * US + s.cfg.leaf_rto_ps   # from the first spray
    d.on_timer(d.next_deadline())                           # D's delayed ACK (seq 1..3)
    for _, a in take(d, ACK):
        s.receive(a, 2, 10 * US)
    assert sorted(s.sent_bufs[2].sent) == [4]
    rto = s.sent_bufs[2].deadline
    assert rto == 10 * US + s.cfg.leaf_rto_ps               # restarted by the progress
    while take(s, DATA) == [] and s.next_deadline() < rto:
        s.on_timer(s.next_deadline())                       # (an older entry re-arms)
    assert s.next_deadline() == rto
    s.on_timer(rto)
    (_, again), = take(s, DATA)
    assert again.aux == 4 and s.leaf_timeouts == 1 and s.leaf_resends == 1
    assert again.prio == PRIO_DATA       # a timeout's resend stays data (only NACKed holes
                                         # cross at control priority)
    d.receive(again, 2, rto + 1 * US)
    assert to_host(d) == [3]
    d.receive(sent[3][1], 2, rto + 2 * US)                  # the original, very late
    assert to_host(d) == [] and d.duplicates == 1           # dropped, not handed down
    (_, ack), = take(d, ACK)                                # and acknowledged again at once
    assert ack.psn == 5
    s.receive(ack, 2, rto + 3 * US)
    assert s.idle()


def test_a_hole_no_repair_fills_is_skipped_only_at_the_repair_timeout():
    s, d = leaf(S), leaf(D)
    sent = granted_burst(s, d, 4)
    t = 5 * US
    deliver(d, sent[:1] + sent[2:], t)                      # seq 2 lost; S has failed
    assert to_host(d) == [0]
    cfg = d.cfg
    nacks = []
    while d.hole_skips == 0:
        now = d.next_deadline()
        d.on_timer(now)
        nacks += [now for _, p in take(d, NACK)]
    assert nacks[0] == t + cfg.leaf_nack_timeout_ps
    gaps = [b - a for a, b in zip(nacks, nacks[1:])]
    assert gaps == sorted(gaps) and gaps[0] == 2 * cfg.leaf_nack_timeout_ps   # backoff
    assert now == t + cfg.leaf_repair_timeout_ps < cfg.rto_ps
    assert to_host(d) == [2, 3] and d.skipped == 1          # the host's go-back-N resends


def test_leaf_ack_and_nack_round_trip_through_the_codec():
    nack = make_packet(kind=NACK, src=D, dst=S, msg_id=2, psn=0xFFFFFFFF,
                       sack_bits=(1 << 63) | 5, credit=64, entropy=0x0301)
    ack = make_packet(kind=ACK, src=D, dst=S, msg_id=3, psn=12345)
    for p in (nack, ack):
        assert decode(encode(p)).fields() == p.fields()


def test_recovery_is_off_with_host_reordering():
    assert not leaf(D, reorder="host").recovery
    assert not leaf(D, leaf_recovery=False).recovery
    assert leaf(D).recovery


# -- whole runs: fan-ins up to every other host, loss and failures ------------------------

N = len(TOPO.hosts)
US_PS = 1_000_000


@given(st.integers(1, N - 1), st.integers(20_000, 200_000), st.floats(0, 0.01),
       st.sampled_from([None, "tier:agg-core:1@20us", "tier:agg-core:25%@20us",
                        "tier:edge-agg:1@10us"]),
       st.sampled_from([10 * US_PS, 1000 * US_PS]), st.integers(0, 1000),
       st.sampled_from([{}, {"path_weights": 4.0}, {"nack_by_delay": True},
                        {"delay_weights": 4.0}, {"delay_weights": 4.0, "nack_by_delay": True}]))
def test_any_fan_in_under_loss_and_failures_is_delivered_once_and_leaves_are_freed(
        fan_in, size, loss, spec, detect, seed, paths):
    msgs = incast(N, fan_in, size, random.Random(seed))
    sched = build_schedule(TOPO, [spec] if spec else [], seed=seed)
    assume(deliverable(sched, detect))
    result = run_simulation(TOPO, msgs, "gse-fabric", FabricConfig(**paths),
                            seed, loss, faults=sched, detect_ps=detect,
                            until_ps=2_000_000 * US_PS)
    s = result.summary
    assert s["lost"] == 0 and s["delivered"] == s["completed"] == len(msgs)
    accepted = sum(h.agent.receiver.payload_bytes for h in result.network.hosts)
    assert accepted == sum(m.size for m in msgs)
    for agent in leaf_agents(result.network):
        assert agent.idle(), agent.counters()
        assert agent.retx_bytes == 0 and not agent.sent_bufs and not agent.marked_seqs
    event("leaf resends: %s" % ("yes" if s["fabric"]["leaf_resends"] else "no"))
    if paths.get("nack_by_delay"):
        event("delay waits used: %s" % ("yes" if s["fabric"]["delay_waits"] else "no"))
    if paths.get("path_weights") or paths.get("delay_weights"):
        event("path weights used: %s" % ("yes" if s["fabric"]["weight_skips"] else "no"))
    event("hosts retransmitted: %s" % ("yes" if s["retransmits"] else "no"))
    if loss == 0 and spec is None:
        assert s["fabric"]["leaf_resends"] == 0 and s["retransmits"] == 0
