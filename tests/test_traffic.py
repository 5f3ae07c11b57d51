"""Tests of gse.workloads.traffic: the shape of every pattern, determinism, and argument errors."""

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gse.workloads.traffic import (MAX_SIZE, Message, SizeDist, TrafficError, all_to_all, incast,
                                   parse_size_dist, permutation, uniform_random)


def check_list(msgs):
    assert [m.msg_id for m in sorted(msgs, key=lambda m: m.msg_id)] == \
        list(range(1, len(msgs) + 1))
    assert msgs == sorted(msgs, key=lambda m: (m.start_ps, m.msg_id))
    for m in msgs:
        assert m.src != m.dst and 0 < m.size <= MAX_SIZE and m.start_ps >= 0


@given(st.integers(2, 200), st.integers(0, 2 ** 32))
def test_permutation_is_derangement(n, seed):
    msgs = permutation(n, 1000, random.Random(seed), start_ps=5)
    check_list(msgs)
    assert len(msgs) == n
    assert sorted(m.src for m in msgs) == list(range(n))
    assert sorted(m.dst for m in msgs) == list(range(n))
    assert all(m.src != m.dst and m.start_ps == 5 and m.size == 1000 for m in msgs)


def test_permutation_uniform_small():
    # n=3 has exactly two derangements; both must appear.
    seen = {tuple(m.dst for m in permutation(3, 1, random.Random(s))) for s in range(50)}
    assert seen == {(1, 2, 0), (2, 0, 1)}


@given(st.integers(2, 100), st.data())
def test_incast(n, data):
    k = data.draw(st.integers(1, n - 1))
    recv = data.draw(st.one_of(st.none(), st.integers(0, n - 1)))
    msgs = incast(n, k, 2_000_000, random.Random(data.draw(st.integers(0, 99))), receiver=recv)
    check_list(msgs)
    assert len(msgs) == k
    dsts = {m.dst for m in msgs}
    assert len(dsts) == 1
    if recv is not None:
        assert dsts == {recv}
    srcs = [m.src for m in msgs]
    assert len(set(srcs)) == k and dsts.isdisjoint(srcs)


def test_all_to_all():
    msgs = all_to_all(8, 4096, start_ps=10)
    check_list(msgs)
    assert len(msgs) == 8 * 7
    assert {(m.src, m.dst) for m in msgs} == {(s, d) for s in range(8) for d in range(8) if s != d}
    sub = all_to_all(16, 100, hosts=[3, 9, 12])
    assert len(sub) == 6 and {m.src for m in sub} == {3, 9, 12}


def test_uniform_random_load():
    n, link = 16, 100.0
    msgs = uniform_random(n, 5000, random.Random(7), "fixed:100000", 0.4, link)
    check_list(msgs)
    assert all(m.size == 100_000 for m in msgs)
    offered_gbps = sum(m.size for m in msgs) * 8 / (msgs[-1].start_ps / 1e12) / 1e9 / n
    assert 0.35 * link < offered_gbps < 0.45 * link
    srcs = {m.src for m in msgs}
    assert srcs == set(range(n))


@pytest.mark.parametrize("make", [
    lambda r: permutation(32, 100, r),
    lambda r: incast(32, 8, 100, r),
    lambda r: uniform_random(32, 200, r, "lognormal:10000:1.5", 0.5, 100.0),
    lambda r: uniform_random(32, 200, r, parse_size_dist("uniform:1:9000"), 0.5, 100.0),
])
def test_determinism(make):
    a = make(random.Random(1234))
    b = make(random.Random(1234))
    c = make(random.Random(4321))
    assert a == b
    assert a != c


def test_size_dists():
    r = random.Random(3)
    assert parse_size_dist("4096").sample(r) == 4096
    assert parse_size_dist("fixed:2000000").mean() == 2_000_000
    u = parse_size_dist("uniform:10:20")
    xs = [u.sample(r) for _ in range(500)]
    assert min(xs) == 10 and max(xs) == 20 and u.mean() == 15
    e = parse_size_dist("exp:1000")
    xs = [e.sample(r) for _ in range(5000)]
    assert min(xs) >= 1 and 900 < sum(xs) / len(xs) < 1100
    ln = parse_size_dist("lognormal:1000:1")
    xs = sorted(ln.sample(r) for _ in range(5001))
    assert 900 < xs[2500] < 1100 and abs(ln.mean() - 1648.7) < 1
    for d in (u, e, ln, parse_size_dist("7")):
        assert isinstance(d, SizeDist)
        again = parse_size_dist(d.spec)
        assert type(again) is type(d) and again.mean() == d.mean()


@pytest.mark.parametrize("spec,word", [
    ("", "unknown kind"), ("zipf:3", "unknown kind"), ("fixed", "takes 1"),
    ("fixed:0", "1..2"), ("fixed:-4", "whole number"), ("fixed:1.5", "whole number"),
    ("uniform:5", "takes 2"), ("uniform:9:3", "LO 9 is above HI 3"), ("exp:0", "MEAN"),
    ("exp:abc", "MEAN must be a number"), ("exp:nan", "MEAN"), ("lognormal:1000", "takes 2"),
    ("lognormal:1000:-1", "SIGMA"), ("lognormal:0:1", "MEDIAN"), ("99999999999", "1..2"),
])
def test_size_dist_errors(spec, word):
    with pytest.raises(TrafficError, match=word) as e:
        parse_size_dist(spec)
    assert repr(spec) in str(e.value)


@pytest.mark.parametrize("call,word", [
    (lambda r: permutation(1, 100, r), "n_hosts"),
    (lambda r: permutation(4, 0, r), "size"),
    (lambda r: permutation(4, 2 ** 32, r), "size"),
    (lambda r: permutation(4, 100, r, start_ps=-1), "start_ps"),
    (lambda r: permutation(4, 100, None), "rng"),
    (lambda r: incast(8, 8, 100, r), "n_senders"),
    (lambda r: incast(8, 0, 100, r), "n_senders"),
    (lambda r: incast(8, 3, 100, r, receiver=8), "receiver"),
    (lambda r: all_to_all(8, 100, hosts=[1, 1, 2]), "duplicates"),
    (lambda r: all_to_all(8, 100, hosts=[1, 9]), "hosts"),
    (lambda r: all_to_all(8, 100, hosts=[1]), "at least 2"),
    (lambda r: uniform_random(8, 10, r, "fixed:10", 0, 100.0), "load"),
    (lambda r: uniform_random(8, 10, r, "fixed:10", 0.5, -1), "link_gbps"),
    (lambda r: uniform_random(8, 10, r, 42, 0.5, 100.0), "size_dist"),
])
def test_argument_errors(call, word):
    with pytest.raises(TrafficError, match=word):
        call(random.Random(0))


def test_message_checks():
    m = Message(1, 0, 1, 10, 0)
    assert m == Message(1, 0, 1, 10, 0) and hash(m) == hash(Message(1, 0, 1, 10, 0))
    with pytest.raises(TrafficError, match="both host 2"):
        Message(1, 2, 2, 10)
    with pytest.raises(TrafficError, match="size"):
        Message(1, 0, 1, 0)
    with pytest.raises(TrafficError, match="start_ps must be an integer"):
        Message(1, 0, 1, 10, 1.5)
