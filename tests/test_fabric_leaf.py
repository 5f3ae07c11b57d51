"""The leaf scheduler of fabric mode alone (``switchmodel.fabric.FabricLeaf``), by hand.

Two leaves, S (node 10: hosts 0 and 1 on ports 0 and 1) and D (node 11: hosts 2 and 3),
each with uplinks on ports 2 and 3; the tests carry packets between them themselves, so
that every REQUEST, GRANT, shim field, timer and freed queue can be asserted exactly.
"""

import pytest

from gse.agents.events import MessageDelivered
from gse.agents.plain_host import PlainHost
from gse.config import ConfigError
from gse.wire.codec import decode, encode
from gse.wire.linkrate import wire_time_ps
from gse.wire.packet import (DATA, F_LAST, F_RETX, GRANT, HEADER_BYTES, PAUSE, PRIO_CONTROL,
                             PRIO_DATA, REQUEST, RESUME, Packet, make_packet)
from switchmodel.fabric import FabricConfig, FabricLeaf, unwrap32
from switchmodel.switch import Switch

S, D = 10, 11
LEAF_OF = [S, S, D, D]
UP = (2, 3)
PKT = 4096 + HEADER_BYTES          # 4160 wire bytes
US = 1_000_000


def table(local):
    """Next hops by node id: local hosts on their port, other hosts and leaves up."""
    rows = [UP] * 24                                 # any other leaf (ids 12..23): up
    for h, leaf in enumerate(LEAF_OF):
        rows[h] = ((h % 2),) if leaf == local else UP
    rows[local] = ()
    return rows


def leaf(node, **kw):
    """A leaf without the leaf-to-leaf loss recovery unless asked (these tests follow the
    scheduling alone; tests/test_fabric_recovery.py follows the recovery)."""
    kw.setdefault("leaf_recovery", False)
    cfg = FabricConfig(**kw)
    hosts = (0, 1) if node == S else (2, 3)
    sw = Switch(node, "leaf%d" % node, table(node), 0x1234 + node, "spray")
    return FabricLeaf(node, cfg, sw, {hosts[0]: 0, hosts[1]: 1},
                      {hosts[0]: 100.0, hosts[1]: 100.0}, LEAF_OF)


def data(src, dst, psn, msg=1, n=100, entropy=77):
    flags = F_LAST if psn == n - 1 else 0
    return make_packet(kind=DATA, src=src, dst=dst, msg_id=msg, psn=psn, entropy=entropy,
                       payload_len=4096, flags=flags, msg_len=n * 4096, prio=PRIO_DATA)


def take(agent, kind=None):
    out = [(port, p) for port, p in agent.out if kind is None or p.kind == kind]
    agent.out[:] = [x for x in agent.out if x not in out]
    return out


def carry(frm, to, now, kind=None):
    """Move what ``frm`` sent up into ``to`` (arriving on port 2)."""
    moved = [p for port, p in take(frm, kind) if port in UP]
    for p in moved:
        to.receive(p, 2, now)
    return moved


def run_timers(agent, until):
    while 0 <= agent.next_deadline() <= until:
        agent.on_timer(agent.next_deadline())


def test_first_packet_asks_at_once_and_later_ones_are_coalesced():
    s = leaf(S)
    s.receive(data(0, 2, 0), 0, 0)
    reqs = [p for _, p in take(s, REQUEST)]
    assert len(reqs) == 1
    r = reqs[0]
    assert (r.src, r.dst, r.msg_id, r.credit, r.aux) == (S, D, 2, PKT, 0)
    for psn in range(1, 4):
        s.receive(data(0, 2, psn), 0, 0)
    assert take(s, REQUEST) == []                    # 3 x 4160 < request_bytes
    s.receive(data(0, 2, 4), 0, 0)
    (_, r), = take(s, REQUEST)
    assert r.credit == 5 * PKT                       # absolute total, not a delta
    s.receive(data(0, 2, 5, n=6), 0, 0)              # F_LAST: ask now
    (_, r), = take(s, REQUEST)
    assert r.credit == 6 * PKT


def test_pacer_grants_round_robin_at_the_downlink_rate():
    d = leaf(D, log_grants=True)
    for src_leaf in (12, 13):                        # two source leaves want 10 packets
        d.receive(make_packet(kind=REQUEST, src=src_leaf, dst=D, msg_id=2, psn=1,
                              credit=10 * PKT), 2, 0)
    grants = [(0, p.dst, p.credit) for _, p in take(d, GRANT)]
    assert len(grants) == 1                          # an idle pacer grants at once
    while d.next_deadline() >= 0:
        t = d.next_deadline()
        d.on_timer(t)
        grants += [(t, p.dst, p.credit) for _, p in take(d, GRANT)]
    assert [g[1] for g in grants[1:5]] == [12, 13, 12, 13]
    assert grants[0][0] == 0
    log = d.downlinks[2].log
    assert [t for t, _ in log] == [t for t, _, _ in grants]
    for (t0, b0), (t1, _) in zip(log, log[1:]):      # never faster than the downlink
        assert t1 - t0 == wire_time_ps(b0, 100_000)
    finals = {dst: credit for _, dst, credit in grants}
    assert finals == {12: 10 * PKT, 13: 10 * PKT}    # cumulative, never above the need
    assert sum(b for _, b in log) == 20 * PKT
    assert d.idle() and d.dtails == {(12, 2): 10 * PKT, (13, 2): 10 * PKT}


def test_granted_packets_carry_the_shim_and_spray_over_every_uplink():
    s, d = leaf(S), leaf(D)
    for psn in range(8):
        s.receive(data(0, 2, psn, n=8), 0, 0)
    carry(s, d, 1 * US, REQUEST)
    run_timers(d, 5 * US)
    carry(d, s, 5 * US, GRANT)
    sent = take(s, DATA)
    assert len(sent) == 8
    assert sorted(port for port, _ in sent) == [2] * 4 + [3] * 4
    assert [p.aux for _, p in sent] == list(range(1, 9))     # VOQ sequence numbers
    assert all(p.sack_base == 77 for _, p in sent)           # the host's entropy, kept
    assert len({p.entropy for _, p in sent}) == 8            # a path per packet
    assert s.idle()                                          # the VOQ is freed


def test_containers_keep_a_path_for_container_packets():
    s, d = leaf(S, spray="container", container_packets=4), leaf(D)
    for psn in range(8):
        s.receive(data(0, 2, psn, n=8), 0, 0)
    carry(s, d, 1 * US, REQUEST)
    run_timers(d, 5 * US)
    carry(d, s, 5 * US, GRANT)
    sent = take(s, DATA)
    assert len(sent) == 8
    first, second = sent[:4], sent[4:]
    assert len({(port, p.entropy) for port, p in first}) == 1
    assert len({(port, p.entropy) for port, p in second}) == 1
    assert first[0][0] != second[0][0]


def test_destination_leaf_restores_order_and_skips_an_old_hole():
    s, d = leaf(S), leaf(D, reorder_timeout_ps=30 * US)
    for psn in range(4):
        s.receive(data(0, 2, psn, n=4), 0, 0)
    carry(s, d, 1 * US, REQUEST)
    run_timers(d, 2 * US)
    carry(d, s, 2 * US, GRANT)
    pkts = [p for _, p in take(s, DATA)]
    d.receive(pkts[2], 2, 3 * US)
    d.receive(pkts[1], 3, 3 * US)
    assert take(d, DATA) == [] and d.reorder_bytes == 2 * PKT
    d.receive(pkts[0], 2, 4 * US)
    out = take(d, DATA)
    assert [p.psn for _, p in out] == [0, 1, 2] and {port for port, _ in out} == {0}
    assert all(p.entropy == 77 and p.aux == 0 and p.sack_base == 0 for _, p in out)
    d.receive(pkts[3], 3, 4 * US)
    assert [p.psn for _, p in take(d, DATA)] == [3]
    assert not d.reorders                             # nothing held: the buffer is freed
    # the last packet is lost in the fabric; a later one waits 30 us, then goes
    for psn in range(4, 6):
        s.receive(data(0, 2, psn, n=6), 0, 5 * US)
    carry(s, d, 5 * US, REQUEST)
    run_timers(d, 6 * US)
    carry(d, s, 6 * US, GRANT)
    lost, late = [p for _, p in take(s, DATA)]
    d.receive(late, 2, 7 * US)
    run_timers(d, 37 * US - 1)
    assert take(d, DATA) == []
    run_timers(d, 37 * US)
    assert [p.psn for _, p in take(d, DATA)] == [5]
    assert d.hole_skips == 1 and d.skipped == 1 and not d.reorders
    d.receive(lost, 2, 40 * US)                      # after its skip: forwarded anyway
    assert [p.psn for _, p in take(d, DATA)] == [4] and d.late == 1


def test_host_reordering_mode_forwards_as_it_comes():
    s, d = leaf(S), leaf(D, reorder="host")
    for psn in range(4):
        s.receive(data(0, 2, psn, n=4), 0, 0)
    carry(s, d, 1 * US, REQUEST)
    run_timers(d, 2 * US)
    carry(d, s, 2 * US, GRANT)
    pkts = [p for _, p in take(s, DATA)]
    for p in reversed(pkts):
        d.receive(p, 2, 3 * US)
    assert [p.psn for _, p in take(d, DATA)] == [3, 2, 1, 0]
    assert d.reorder_peak == 0


def test_lost_grant_is_repaired_by_the_next_and_by_a_re_request():
    s, d = leaf(S, request_timeout_ps=50 * US), leaf(D)
    for psn in range(8):
        s.receive(data(0, 2, psn, n=8), 0, 0)
    carry(s, d, 1 * US, REQUEST)
    run_timers(d, 1 * US)
    take(d, GRANT)                                   # the first GRANT is lost
    run_timers(d, 10 * US)                           # the second covers both
    carry(d, s, 11 * US, GRANT)
    assert len(take(s, DATA)) == 8
    # a source that lost its last GRANT asks again; the destination repeats the total
    s2, d2 = leaf(S, request_timeout_ps=50 * US), leaf(D)
    for psn in range(2):
        s2.receive(data(1, 3, psn, n=2), 1, 0)
    carry(s2, d2, 1 * US, REQUEST)
    run_timers(d2, 3 * US)
    assert len(take(d2, GRANT)) == 2                 # both lost
    assert d2.idle()                                 # granted in full: demand freed
    run_timers(s2, 51 * US)
    (_, rr), = take(s2, REQUEST)
    assert rr.flags & F_RETX and rr.aux == 0 and rr.credit == 2 * PKT
    d2.receive(rr, 2, 52 * US)
    (_, g), = take(d2, GRANT)
    assert g.credit == 2 * PKT and d2.regrants == 1
    s2.receive(g, 2, 53 * US)
    assert len(take(s2, DATA)) == 2 and s2.idle()
    s2.receive(g, 3, 54 * US)                        # a duplicate is harmless
    assert take(s2) == [] and s2.stale_grants == 1


def test_queues_are_freed_and_totals_carry_over():
    s, d = leaf(S), leaf(D)
    for round_ in range(2):
        for psn in range(2):
            s.receive(data(0, 2, psn, msg=round_, n=2), 0, 0)
        carry(s, d, 1 * US, REQUEST)
        run_timers(d, 2 * US)
        carry(d, s, 2 * US, GRANT)
        for _, p in take(s, DATA):
            d.receive(p, 2, 3 * US)
        assert len(take(d, DATA)) == 2
        assert s.idle() and d.idle()
        assert s.tails[2] == (2 * PKT * (round_ + 1), 2 * (round_ + 1))
        assert d.rtails[(S, 2)] == 2 * (round_ + 1) + 1
    assert s.voqs_created == 2


def test_traffic_within_a_leaf_is_paced_by_the_same_pacer_without_messages():
    s = leaf(S, log_grants=True)
    for psn in range(8):
        s.receive(data(0, 1, psn, n=8), 0, 0)
    assert take(s, REQUEST) == []                    # asked by a function call
    run_timers(s, 10 * US)
    out = take(s)
    assert [port for port, _ in out] == [1] * 8 and [p.psn for _, p in out] == list(range(8))
    assert all(p.aux == 0 for _, p in out)          # no shim: it never enters the fabric
    assert s.idle()
    log = s.downlinks[1].log
    assert sum(b for _, b in log) == 8 * PKT
    for (t0, b0), (t1, _) in zip(log, log[1:]):
        assert t1 - t0 == wire_time_ps(b0, 100_000)


def test_host_is_paused_above_xoff_and_resumed_below_xon():
    s = leaf(S, host_xoff_bytes=3 * PKT, host_xon_bytes=PKT, voq_buffer_bytes=6 * PKT)
    for psn in range(4):
        s.receive(data(0, 2, psn, n=10), 0, 0)
    assert s.pfc_out == [(0, PAUSE)] and s.pausing[0]
    for psn in range(4, 8):
        s.receive(data(0, 2, psn, n=10), 0, 0)
    assert s.voq_drops == 2 and s.voq_bytes == 6 * PKT
    s.pfc_out.clear()
    take(s)
    s.receive(make_packet(kind=GRANT, src=D, dst=S, msg_id=2, credit=6 * PKT), 2, 1 * US)
    assert s.pfc_out == [(0, RESUME)] and not s.pausing[0]


def test_serial_numbers_widen_across_the_32_bit_wrap():
    assert unwrap32(5, 2 ** 32 - 3) == 2 ** 32 + 5
    assert unwrap32(2 ** 32 - 3, 2 ** 32 + 5) == 2 ** 32 - 3
    assert unwrap32(7, 7) == 7 and unwrap32(100, 0) == 100


def test_config_is_validated():
    with pytest.raises(ConfigError, match="reorder"):
        FabricConfig(reorder="spine")
    with pytest.raises(ConfigError, match="spray"):
        FabricConfig(spray="flow")
    with pytest.raises(ConfigError, match="grant_bytes"):
        FabricConfig(grant_bytes=100)
    with pytest.raises(ConfigError, match="host_xon_bytes"):
        FabricConfig(host_xoff_bytes=10, host_xon_bytes=20)
    cfg = FabricConfig()
    cfg.set("spray", "container")
    cfg.set("grant_rate_fraction", "0.5")
    assert cfg.spray == "container" and cfg.grant_rate_fraction == 0.5


def test_plain_host_reorders_itself_and_naks_only_an_old_hole():
    host = PlainHost(2, FabricConfig(reorder="host", reorder_timeout_ps=30 * US), None, 100.0)
    for psn in (1, 2):
        host.receive(data(0, 2, psn, n=4), 1 * US)
    assert host.receiver.naks_sent == 0 and host.receiver.ooo_held == 2
    host.receive(data(0, 2, 3, n=4), 40 * US)        # the hole at psn 0 is 39 us old
    assert host.receiver.naks_sent == 1 and host.nic.control[-1].psn == 0
    host.receive(data(0, 2, 0, n=4), 41 * US)
    assert host.next_event() == MessageDelivered(0, 1, 4 * 4096, 41 * US)
    assert host.next_event() is None
    assert host.nic.control[-1].psn == 4                 # the final ACK
    plain = PlainHost(2, FabricConfig(), None, 100.0)  # leaf mode: RoCE's receiver
    plain.receive(data(0, 2, 1, n=4), 0)
    assert plain.receiver.ooo_discarded == 1 and plain.receiver.naks_sent == 1


def test_the_wire_format_example_request_encodes_as_documented():
    pkt = Packet(REQUEST, 128, 145, msg_id=70, psn=3, entropy=0x0102, credit=49920,
                 aux=16640, ts=2_000_000, prio=PRIO_CONTROL)
    data_ = encode(pkt)
    assert data_.hex() == ("010100000000008000000091000000460000000301020000000000000000c300"
                           "0000410000000000000000000000000000000000001e848001000000cbe92028")
    assert decode(data_).fields() == pkt.fields()
