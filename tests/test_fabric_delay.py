"""Fabric mode: per-path delays from the source leaves' stamps
(``switchmodel.fabric_delay``): a hole's first NACK waits for the slowest live path
(``nack_by_delay``) and the spray weighs the paths by their delays (``delay_weights``),
step by step with the two hand-driven leaves of ``tests/test_fabric_leaf.py`` (S: node 10,
D: node 11, uplinks on ports 2 and 3, one path beyond each)."""

import pytest

from test_fabric_leaf import UP, D, S, US, take
from test_fabric_recovery import granted_burst, leaf, to_host

from gse.config import ConfigError
from gse.wire.packet import ACK, DATA, NACK
from switchmodel.fabric import FabricConfig

SLOW = 20 * US                     # the queueing delay of the slow path


def timers_until(d, t):
    """Run D's timers due up to ``t``; the (time, NACK) it sent."""
    nacks = []
    while 0 <= d.next_deadline() <= t:
        now = d.next_deadline()
        d.on_timer(now)
        nacks += [(now, p) for _, p in take(d, NACK)]
    return nacks


def least_delays_then_a_slow_packet(s, d):
    """Burst 1 (sprayed at 2 µs) arrives 1 µs later on both paths, the least delays; one
    packet sprayed at 22 µs arrives ``SLOW`` later than that on its path, which is returned."""
    for _, p in granted_burst(s, d, 8):
        d.receive(p, 2, 3 * US)
    (slow, p), = granted_burst(s, d, 1, now=20 * US)
    timers_until(d, 23 * US + SLOW)
    d.receive(p, 2, 23 * US + SLOW)
    return slow


def slow_path_story(**kw):
    """Burst 1 (sprayed at 2 µs) arrives 1 µs later on both paths (the least delays); a
    single packet sprayed at 22 µs arrives ``SLOW`` later than that on its path, P, in
    order; burst 3 (sprayed at 52 µs): the other path's packets arrive at 53 µs, opening
    a hole at P's first one.  The leaves, burst 3 and P."""
    s, d = leaf(S, **kw), leaf(D, **kw)
    slow = least_delays_then_a_slow_packet(s, d)
    assert to_host(d) == list(range(8)) + [0] and d.reorders == {}
    burst3 = granted_burst(s, d, 8, now=50 * US)
    timers_until(d, 53 * US)
    for port, p in burst3:
        if port != slow:
            d.receive(p, 2, 53 * US)
    assert len(d.reorders) == 1
    return s, d, burst3, slow


@pytest.mark.parametrize("on", [True, False])
def test_a_hole_on_a_slow_but_live_path_is_not_resent(on):
    """The test that fails without the mechanism: the slow path's packets come 20 µs late,
    after the fixed 12 µs NACK timeout; with ``nack_by_delay`` the hole waits for them
    (20 µs + the 4 µs margin) and nothing is NACKed, resent or duplicated."""
    s, d, burst3, slow = slow_path_story(nack_by_delay=on)
    nacks = timers_until(d, 53 * US + SLOW)
    for port, p in burst3:
        if port == slow:
            d.receive(p, 2, 53 * US + SLOW)
    if on:
        assert nacks == [] and d.delay_samples == 17
        assert d.delay_waits == 4            # the hole opened, then narrowed three times
    else:
        assert [t for t, _ in nacks] == [53 * US + d.cfg.leaf_nack_timeout_ps]
    assert to_host(d) == list(range(8)) and d.reorders == {} and d.hole_skips == 0
    assert d.duplicates == 0


def test_the_stamp_is_the_send_time_and_the_host_never_sees_it():
    s, d = leaf(S, nack_by_delay=True), leaf(D, nack_by_delay=True)
    sent = granted_burst(s, d, 4, now=7 * US)
    assert [p.sack_bits for _, p in sent] == [9 * US] * 4      # stamped when sprayed
    for _, p in sent:
        d.receive(p, 2, 12 * US)
    down = [p for port, p in take(d, DATA) if port not in UP]
    assert [p.sack_bits for p in down] == [0] * 4 and [p.aux for p in down] == [0] * 4
    assert {path: e[0] for path, e in d.path_delay[S].items()} == {0: 3 * US, 1: 3 * US}
    off = leaf(S)
    assert [p.sack_bits for _, p in granted_burst(off, leaf(D), 2, now=7 * US)] == [0, 0]


@pytest.mark.parametrize("cap", [None, 15 * US])
def test_a_packet_on_a_dead_path_is_still_nacked_once_every_live_path_had_time(cap):
    """The slow path dies: its packets never come.  The hole is NACKed when the slowest
    live path would have delivered (20 µs + 4 µs margin), or at ``delay_nack_max_ps``;
    the source resends exactly the dead path's packets."""
    kw = dict(nack_by_delay=True)
    if cap is not None:
        kw["delay_nack_max_ps"] = cap
    s, d, burst3, slow = slow_path_story(**kw)
    (t, nack), = timers_until(d, 53 * US + 30 * US)
    assert t == 53 * US + (SLOW + d.cfg.delay_margin_ps if cap is None else cap)
    s.receive(nack, 2, t + 1 * US)
    again = [p for _, p in take(s, DATA)]
    assert [p.aux for p in again] == [p.aux for port, p in burst3 if port == slow]
    assert all(p.sack_bits == t + 1 * US for p in again)       # restamped when resent


def test_a_path_silent_for_longer_than_delay_live_ps_does_not_hold_holes():
    """A dead path's last sample must not keep holes waiting: beyond ``delay_live_ps``
    only the fixed timeout remains."""
    s, d, burst3, slow = slow_path_story(nack_by_delay=True, delay_live_ps=5 * US)
    assert timers_until(d, 100 * US)[0][0] == 53 * US + d.cfg.leaf_nack_timeout_ps
    assert d.delay_waits == 0


def test_delay_parameters_are_checked():
    for kw in (dict(delay_margin_ps=-1), dict(delay_live_ps=0), dict(delay_nack_max_ps=0),
               dict(delay_weights=-1), dict(delay_weights=1, path_weights=1),
               dict(delay_weights=1, path_hot_skips=2), dict(delay_weight_unit_ps=0),
               dict(delay_weight_floor_ps=-1)):
        with pytest.raises(ConfigError):
            FabricConfig(**kw).validate()
    FabricConfig(nack_by_delay=True, delay_margin_ps=0).validate()
    assert not leaf(D, nack_by_delay=True, paths="hash").delay_on
    assert not leaf(D, nack_by_delay=True, leaf_recovery=False).delay_on


@pytest.mark.parametrize("k", [0, 4])
def test_delay_weights_echo_the_paths_delays_and_move_new_sprays_off_the_slow_path(k):
    """D's leaf ACK carries each path's queueing delay above the 8 µs floor in 2 µs units
    (4 bits a path); S then sprays less on the slow path (a weight, not a ban); evenly
    without ``delay_weights``."""
    kw = dict(delay_weights=k, delay_live_ps=100 * US)
    s, d = leaf(S, **kw), leaf(D, **kw)
    slow = least_delays_then_a_slow_packet(s, d)
    take(d, ACK)
    timers_until(d, 50 * US)                           # the delayed ACK of that packet
    (_, ack), = take(d, ACK)
    level = (SLOW - d.cfg.delay_weight_floor_ps) // d.cfg.delay_weight_unit_ps   # 6
    assert ack.sack_bits == (level << (4 * UP.index(slow)) if k else 0)
    s.receive(ack, 2, 50 * US)
    again = []
    for i in range(4):
        again += granted_burst(s, d, 8, now=(60 + 20 * i) * US)
    on = {port: sum(1 for q, _ in again if q == port) for port in UP}
    if k:
        w = 1 / (1 + k * level / 15)
        assert on[slow] == pytest.approx(32 * w / (1 + w), abs=1)
        assert 0 < on[slow] < 32 - on[slow] and s.weight_skips > 0
    else:
        assert on == {UP[0]: 16, UP[1]: 16} and s.scores == {}


def test_a_clock_offset_between_the_leaves_changes_no_queueing_delay():
    """Over UDP the leaves' clocks differ: with S's clock 50 µs ahead of D's the one-way
    delays are negative, and the queueing delays the same (each path's least is
    subtracted)."""
    for ahead in (0, 50 * US, -7 * US):
        s, d = leaf(S, nack_by_delay=True), leaf(D, nack_by_delay=True)
        for i, (_, p) in enumerate(granted_burst(s, d, 4, now=20 * US)):   # at 22 µs
            p.sack_bits += ahead
            d.receive(p, 2, 23 * US + (i // 2) * 3 * US)      # the second lap 3 µs later
        assert sorted(e[1] for e in d.path_delay[S].values()) == [3 * US, 3 * US]
        for _, p in granted_burst(s, d, 2, now=40 * US):      # at 42 µs
            p.sack_bits += ahead
            d.receive(p, 2, 43 * US + 6 * US)
        assert sorted(e[1] for e in d.path_delay[S].values()) == [6 * US, 6 * US]
        assert sorted(e[0] for e in d.path_delay[S].values()) == [1 * US - ahead] * 2
