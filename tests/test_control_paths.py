"""Control traffic is sprayed and steered like data (issue 19.1).

REQUEST and GRANT used to carry entropy 0, so all of a message's control traffic took
one fixed path: with a quarter of the core links black-holed, every message whose one
control path crossed a dead link stalled for good (41 of 128 delivered on the k=8
permutation below), although its data entropies still had live paths.  Now a REQUEST
takes the entropy of the newest ACK or GRANT (a path that just worked), a
GRANT echoes the entropy of the sender's latest packet, GRANTs carry the cumulative
credit (a lost one is made up by the next), switches of one tier hash alike (an echo
goes back along the links the data came by), and a path that lost a packet silently
is suspected dead and skipped.
"""

import random

from harness import Wire

from gse.config import GseConfig
from gse.runtimes.sim.run import build_network
from gse.wire.packet import ACK, DATA, GRANT, REQUEST, Packet
from gse.workloads import traffic
from switchmodel.switch import Switch, tier_salt
from topologies import fat_tree

MTU = 4096
US = 1_000_000


def core_links(topo):
    return [link.index for link in topo.links
            if "core" in (topo.nodes[link.a].kind, topo.nodes[link.b].kind)]


def black_hole(net, links, at_ps):
    """From ``at_ps`` on, every packet put on ``links`` (both directions) is lost, and no
    switch learns of it: the worst case, a fabric that never routes around the holes."""
    topo = net.topo
    dead = set(links)
    ports = [p for p in net.ports if topo.nodes[p.node].ports[p.port] in dead]

    def fail(_a, _b):
        for port in ports:
            port.loss = 1.0
            port.wire_rng = random.Random(0)
    net.eq.at(at_ps, fail, None, None)
    return ports


def test_quarter_of_core_black_holed_every_message_delivered():
    """The issue's case: k=8, 2 MB permutation, default config, 32 of 128 core links dead
    at 50 us and never routed around; before the fix 41 of 128 messages arrived."""
    topo = fat_tree(8)
    dead = random.Random("holes").sample(core_links(topo), 32)
    net = build_network(topo, "gse", GseConfig(), 1)
    black_hole(net, dead, 50 * US)
    msgs = traffic.permutation(len(topo.hosts), 2_000_000, random.Random(1))
    net.schedule(msgs)
    net.run(20_000 * US)
    assert len(net.records) == 128
    assert len(net.sender_done) == 128                 # every sender has its last ACK
    lost_on_holes = sum(p.wire_drops for p in net.ports)
    assert lost_on_holes > 0                           # the holes did swallow packets


def test_request_and_grant_are_not_pinned_to_one_entropy():
    w = Wire(config=GseConfig(unsched_bytes=0))
    w.start(0, 1, 1, 64 * MTU)
    w.run()
    assert (0, 1) in w.delivered
    grants = [p for p in w.sent if p.kind == GRANT]
    data = {p.entropy for p in w.sent if p.kind == DATA}
    assert len({g.entropy for g in grants}) > 1        # sprayed
    assert {g.entropy for g in grants} <= data | {w.sent[0].entropy}   # echoes


def test_grants_carry_cumulative_credit_so_a_lost_one_is_made_up():
    lost = []

    def drop_second_grant(pkt):
        if pkt.kind == GRANT and len([p for p in w.sent if p.kind == GRANT]) == 2:
            lost.append(pkt)
            return True
        return False
    cfg = GseConfig(unsched_bytes=0)
    w = Wire(config=cfg, drop=drop_second_grant)
    w.start(0, 1, 1, 32 * MTU)
    w.run()
    assert (0, 1) in w.delivered and len(lost) == 1
    assert w.hosts[0].requests_sent == 1               # no re-REQUEST was needed
    grants = [p for p in w.sent if p.kind == GRANT]
    assert [g.aux for g in grants] == [sum(x.credit for x in grants[:i + 1])
                                       for i in range(len(grants))]


def test_late_or_duplicate_grant_adds_no_credit():
    from gse.agents.sender import OutMsg
    cfg = GseConfig(unsched_bytes=0)
    msg = OutMsg(1, 0, 1, 64 * MTU, MTU, 0, 7, cfg, 0)
    assert msg.on_grant(4 * MTU) == 4 * MTU
    assert msg.on_grant(12 * MTU) == 8 * MTU           # one in between was lost
    assert msg.on_grant(8 * MTU) == 0                  # a late one: nothing new
    assert msg.credit == 12 * MTU == msg.credit_received
    msg.credit_received = 2 ** 32 - MTU                # totals wrap at 32 bits
    assert msg.on_grant(MTU) == 2 * MTU


def test_re_request_after_silence_takes_another_path():
    """Starved of credit for a whole timeout, the sender suspects the entropy of its last
    REQUEST and asks again on a different one."""
    cfg = GseConfig(unsched_bytes=0)
    w = Wire(config=cfg, drop=lambda p: p.kind == REQUEST and p.ts == 0)
    w.start(0, 1, 1, 8 * MTU)
    w.run()
    assert (0, 1) in w.delivered
    reqs = [p for p in w.sent if p.kind == REQUEST]
    assert len(reqs) == 2 and reqs[1].entropy != reqs[0].entropy
    assert reqs[1].ts == cfg.request_timeout_ps


def test_silent_loss_suspects_the_path_and_exploration_skips_it():
    from gse.agents.entropy import EntropySelector
    sel = EntropySelector(100, 8, penalty=2)
    assert [sel.next(0) for _ in range(3)] == [100, 101, 102]
    sel.suspect(103, until=50)
    sel.recycle(103)                                   # even a stale clean copy
    assert sel.next(10) == 104 and 103 not in [sel.next(10) for _ in range(6)]
    assert sel.is_dead(103, 49) and not sel.is_dead(103, 50)
    assert 103 in [sel.next(60) for _ in range(8)]     # after the suspicion: back


def test_probe_after_timeout_goes_where_an_ack_came_from():
    from gse.agents.sender import OutMsg
    cfg = GseConfig(unsched_bytes=4 * MTU)
    msg = OutMsg(1, 0, 1, 4 * MTU, MTU, cfg.unsched_bytes, 7, cfg, 0)
    sent = [msg.next_packet(t) for t in range(4)]
    msg.on_ack(1, 0, 0)                                # psn 0 acked ...
    msg.back_entropy = sent[0].entropy                 # ... by an ACK on its path
    assert msg.on_timeout(suspect_until=10 ** 9) == 1
    probe = msg.next_packet(100)
    assert probe.psn == 1 and probe.entropy == sent[0].entropy
    assert msg.entropy.is_dead(sent[1].entropy, 100)   # the lost one is suspected


def test_switches_of_a_tier_hash_alike_so_echoes_retrace_the_path():
    """An ACK sent with a data packet's entropy crosses the same links back."""
    topo = fat_tree(4)
    switches = {nid: Switch(nid, topo.nodes[nid].name, topo.next_hops[nid],
                            tier_salt(1, topo.nodes[nid].kind), "spray")
                for nid in topo.switches}

    def links(src, dst, entropy):
        pkt = Packet(ACK, src, dst, 1, 0, entropy)
        node, out = topo.peer(src, 0)[0], {topo.nodes[src].ports[0]}
        while node != dst:
            port = switches[node].route(pkt)
            out.add(topo.nodes[node].ports[port])
            node = topo.peer(node, port)[0]
        return out
    for entropy in range(64):
        assert links(0, 15, entropy) == links(15, 0, entropy)
        assert links(2, 5, entropy) == links(5, 2, entropy)
    assert len({frozenset(links(0, 15, e)) for e in range(64)}) == 4   # still sprayed


def test_timeout_suspects_every_path_still_out_and_forgets_them_as_clean():
    """A timeout after a probe that went unanswered must not probe the same path again:
    every packet still out is overdue, and a suspected value leaves the recycled FIFO
    (a value acknowledged before a link died must not keep coming back)."""
    from gse.agents.sender import OutMsg
    cfg = GseConfig(unsched_bytes=4 * MTU)
    msg = OutMsg(1, 0, 1, 4 * MTU, MTU, cfg.unsched_bytes, 7, cfg, 0)
    sent = [msg.next_packet(t) for t in range(4)]
    msg.on_ack(2, 0, 0)                               # psn 0 and 1 acked: values recycled
    stale = sent[1].entropy
    assert stale in msg.entropy.recycled
    msg.back_entropy = stale
    assert msg.on_timeout(suspect_until=10 ** 9) == 2
    assert all(msg.entropy.is_dead(p.entropy, 50) for p in sent[2:])
    probe = msg.next_packet(100)                      # the back path: not suspected (yet)
    assert probe.entropy == stale
    assert msg.on_timeout(suspect_until=10 ** 9) == 3  # unanswered: the next timeout ...
    assert msg.entropy.is_dead(stale, 200)             # ... suspects the probe's path too
    assert stale not in msg.entropy.recycled
    assert msg.next_packet(200).entropy not in {p.entropy for p in sent[1:]}


def test_trim_seen_while_a_loss_is_requested_does_not_hide_the_loss():
    """A REQUEST's total once counted the resends of trimmed packets, which the receiver
    also counts itself as it sees the trims: a loss found by RACK, requested while the NACK
    of a trim was still on its way back, was hidden behind the receiver's own count, and
    the message starved for a whole request timeout at its end.  Now REQUEST totals
    leave trims out, and no placement of the trim starves the message."""
    from gse.wire.packet import F_RETX
    cfg = GseConfig(unsched_bytes=0)
    starved = []
    for trimmed_psn in range(80, 110):          # around the packet whose ACK exposes psn 5
        def fault(pkt, trimmed_psn=trimmed_psn):
            if pkt.kind == DATA and not pkt.flags & F_RETX:
                if pkt.psn == trimmed_psn:
                    pkt.trim()
                return pkt.psn == 5                 # lost silently: found by RACK
            return False
        w = Wire(config=cfg, drop=fault)
        w.start(0, 1, 1, 160 * MTU)
        w.run()
        assert (0, 1) in w.delivered
        rereq = [p for p in w.sent if p.kind == REQUEST and p.flags & F_RETX]
        if rereq or w.hosts[0].timeouts:
            starved.append(trimmed_psn)
    assert starved == []


def test_silent_loss_is_resent_on_its_own_credit():
    """A packet the fabric lost never used the receiver's downlink: its resend needs
    neither a REQUEST nor a new GRANT (a trimmed one is granted again, test_host)."""
    from gse.wire.packet import F_RETX
    cfg = GseConfig(unsched_bytes=0)
    w = Wire(config=cfg, drop=lambda p: p.kind == DATA and p.psn == 5
             and not p.flags & F_RETX)
    w.start(0, 1, 1, 400 * MTU)
    w.run()
    assert (0, 1) in w.delivered and w.hosts[0].fast_retx_bytes == MTU
    assert w.hosts[0].requests_sent == 1 and w.hosts[0].timeouts == 0
    assert sum(p.credit for p in w.sent if p.kind == GRANT) == 400 * MTU


def test_an_answer_on_a_suspected_path_clears_it():
    from gse.agents.entropy import EntropySelector
    sel = EntropySelector(100, 8, penalty=2)
    sel.suspect(101, until=10 ** 9)
    assert sel.is_dead(101, 5)
    sel.alive(101)                  # an ACK came back on it: the packet was only late
    assert not sel.is_dead(101, 5) and sel.n_suspected(5) == 0


def test_a_trimmed_entropy_sits_out_longer_than_a_marked_one():
    """A trim says a queue on the path was full, an ECN mark only that it was filling:
    on a fabric that lost a quarter of its core the survivors stay overloaded, and a
    value trimmed there sits out ``trim_penalty`` explorations (one walk of the range by
    default), an ECN-marked one ``penalty``.  A later mark never shortens a trim's
    penalty."""
    from gse.agents.entropy import EntropySelector
    sel = EntropySelector(100, 8, penalty=2, trim_penalty=6)
    sel.penalise(101)                           # ECN: out for 2 explorations
    sel.penalise_trim(102)                      # trim: out for 6
    walk = [sel.explore() for _ in range(10)]
    assert walk == [100, 101, 103, 104, 105, 106, 107, 100, 101, 102]
    same = EntropySelector(100, 8, penalty=2)   # trim_penalty defaults to penalty
    same.penalise_trim(102)
    assert [same.explore() for _ in range(3)] == [100, 101, 102]
    sel = EntropySelector(100, 8, penalty=2, trim_penalty=6)
    sel.penalise_trim(102)
    sel.penalise(102)                           # marked too, later: still out for 6
    assert 102 not in [sel.explore() for _ in range(7)]


def test_nack_penalises_with_the_trim_penalty_and_ecn_with_the_other():
    from gse.agents.gse_host import GseHost
    from gse.wire.packet import F_ECN_CE, NACK
    cfg = GseConfig(entropy_penalty=3, entropy_trim_penalty=50)
    host = GseHost(0, cfg, random.Random(1), 100.0)
    host.start_message(1, 5, 40 * MTU, 0)
    data = []
    while len(data) < 6:
        pkt = host.poll(0)
        if pkt.kind == DATA:
            data.append(pkt)
    sel = host.out[1].entropy
    trimmed, marked = data[2], data[4]
    host.receive(Packet(NACK, 5, 0, 1, trimmed.psn, trimmed.entropy), 10 * US)
    host.receive(Packet(ACK, 5, 0, 1, 0, marked.entropy, flags=F_ECN_CE, ts=0), 11 * US)
    pen = sel.penalised
    assert pen[(trimmed.entropy - sel.base) & 0xFFFF] == sel.count + 50
    assert pen[(marked.entropy - sel.base) & 0xFFFF] == sel.count + 3


def test_entropy_penalties_must_not_be_negative():
    import pytest
    from gse.config import ConfigError
    for name in ("entropy_penalty", "entropy_trim_penalty"):
        with pytest.raises(ConfigError, match=name):
            GseConfig(**{name: -1})
