"""``FinishedIds``: the compact store of finished message ids behaves as the plain
dict-and-FIFO it replaced (hold time, count limit, oldest forgotten first)."""

import importlib.util
import os
import random
from collections import deque

import pytest

from hypothesis import given, settings, strategies as st

from gse.common import finished
from gse.common.finished import FinishedIds


class Reference:
    def __init__(self, hold, limit):
        self.d, self.order, self.hold, self.limit = {}, deque(), hold, limit

    def add(self, src, msg_id, npkts, now):
        key = (src, msg_id)
        self.d[key] = npkts
        self.order.append((now, key))
        while self.order and (self.order[0][0] <= now - self.hold or
                              len(self.order) > self.limit):
            self.d.pop(self.order.popleft()[1], None)


# any source the wire's 32-bit field carries (a forged one too), its edges first
SOURCES = st.one_of(st.sampled_from([0, (1 << 20) - 1, (1 << 31) - 1, 1 << 31, (1 << 32) - 1]),
                    st.integers(0, (1 << 32) - 1))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 50), st.integers(1, 40),
       st.lists(st.tuples(SOURCES, st.integers(0, 10),
                          st.integers(1, 1000), st.integers(0, 7)), max_size=300))
def test_same_as_the_dict_and_fifo_it_replaced(hold, limit, adds):
    ids, ref = FinishedIds(hold, limit), Reference(hold, limit)
    now = 0
    seen = set()
    for src, msg_id, npkts, dt in adds:
        now += dt
        msg_id = (msg_id + now * 16) & 0xFFFFFFFF   # ids are not reused within a run
        if (src, msg_id) in seen:
            continue
        seen.add((src, msg_id))
        ids.add(src, msg_id, npkts, now)
        ref.add(src, msg_id, npkts, now)
        assert len(ids) == len(ref.d)
        assert list(ids) == [k for _, k in ref.order if k in ref.d]
        for key, n in ref.d.items():
            assert key in ids and ids[key] == n
    for key in seen - set(ref.d):
        assert key not in ids


def _reference_module():
    """gse/common/finished.py itself, whichever build is active (the compiled build's
    ``gse.common.finished`` is cython/gse/common/finished.pyx)."""
    spec = importlib.util.spec_from_file_location("_finished_py", finished_py)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


finished_py = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "gse", "common", "finished.py")


@pytest.mark.parametrize("hold,limit,spread,seed", [
    (10 ** 9, 10 ** 9, 1 << 40, 1),    # nothing forgotten: tables and chunks only grow
    (3000, 10 ** 9, 1 << 40, 2),       # forgotten by age
    (10 ** 9, 700, 1 << 40, 3),        # forgotten by number
    (500, 300, 64, 4),                 # few keys: added again while known, and after
    (0, 5, 1 << 40, 5),                # held no time: every add forgets what it added
])
def test_same_answers_as_the_reference_over_many_chunks(hold, limit, spread, seed):
    """Thousands of adds (several 254-record chunks, tables doubled many times, keys
    finished twice), against gse/common/finished.py: ``len``, order, counts, ``in``."""
    ref_mod = _reference_module()
    ids, ref = FinishedIds(hold, limit), ref_mod.FinishedIds(hold, limit)
    rng = random.Random(seed)
    now = 0
    keys = []
    for i in range(6000):
        now += rng.randrange(3)
        k = rng.randrange(spread)
        src, msg_id = (k >> 20) & 0xFFFFFFFF, k & 0xFFFFFFFF
        if rng.random() < 0.01:
            src, msg_id = rng.choice([(0, 0), (0xFFFFFFFF, 0xFFFFFFFF), (1 << 31, 7)])
        npkts = rng.randrange(1, 100)
        ids.add(src, msg_id, npkts, now)
        ref.add(src, msg_id, npkts, now)
        keys.append((src, msg_id))
        if i % 97 == 0 or i > 5900:
            assert len(ids) == len(ref)
            assert list(ids) == list(ref)
            for key in keys[-400:]:
                assert (key in ids) == (key in ref) == ids.has(*key)
                if key in ref:
                    assert ids[key] == ref[key]


def test_the_storage_is_given_back_as_ids_are_forgotten():
    """The store holds what its remembered ids need, whichever build: the reference cuts
    its arrays' forgotten head, the compiled store frees its emptied chunks."""
    ids = FinishedIds(hold_ps=10, limit=10 ** 9)
    for t in range(100000):
        ids.add(1, t, 1, t)
    assert len(ids) == 10 and list(ids) == [(1, t) for t in range(99990, 100000)]
    if hasattr(ids, "chunks"):       # compiled: one page, a chunk in use and a spare
        assert ids.chunks <= 2 and ids.pages == 1 and ids.records == 10
        assert ids.nbytes() < 3 * 4096
    else:
        assert len(ids.keys) < 2 * finished.COMPACT_AT + 20


def test_a_negative_packet_count_is_refused():
    ids = FinishedIds(hold_ps=100, limit=10)
    ids.add(1, 2, 3, 0)
    with pytest.raises(ValueError, match="packet count -1 of \\(4, 5\\)"):
        ids.add(4, 5, -1, 1)
    assert list(ids) == [(1, 2)] and (4, 5) not in ids


@pytest.mark.skipif(not hasattr(finished, "COMPACT_AT"), reason="the reference's arrays")
def test_the_arrays_are_cut_when_their_head_is_forgotten(monkeypatch):
    monkeypatch.setattr(finished, "COMPACT_AT", 8)
    ids = FinishedIds(hold_ps=10, limit=1000)
    for t in range(100):
        ids.add(1, t, 1, t)
    assert len(ids) == 10 and len(ids.keys) < 30
    assert (1, 99) in ids and (1, 89) not in ids and ids[(1, 95)] == 1
    assert ((1 << 20) - 1, 0xFFFFFFFF) not in ids
    ids.add((1 << 20) - 1, 0xFFFFFFFF, 7, 100)
    assert ids[((1 << 20) - 1, 0xFFFFFFFF)] == 7


def test_every_id_the_wire_carries_is_kept():
    """A forged packet's source is any 32-bit value: a message it finished once crashed
    the RoCE and plain hosts (OverflowError: its key did not fit a signed 64-bit array)."""
    ids = FinishedIds(hold_ps=100, limit=10)
    edges = [(0, 0), ((1 << 31) - 1, 0xFFFFFFFF), (1 << 31, 0), (0xFFFFFFFF, 0xFFFFFFFF)]
    for i, (src, msg_id) in enumerate(edges):
        ids.add(src, msg_id, i + 1, i)
    assert list(ids) == edges
    assert [ids[k] for k in edges] == [1, 2, 3, 4]


def test_an_id_that_cannot_be_stored_changes_nothing():
    """No wire carries a source beyond 32 bits, but if one came, the store would refuse it
    before any change (it once kept the count of a key it had failed to store)."""
    ids = FinishedIds(hold_ps=100, limit=10)
    ids.add(1, 2, 3, 0)
    for src in (1 << 32, -1):
        try:
            ids.add(src, 0, 9, 1)
        except OverflowError:
            pass
        assert len(ids) == 1 and list(ids) == [(1, 2)] and ids[(1, 2)] == 3
        assert (src, 0) not in ids
        if hasattr(ids, "records"):
            assert ids.records == 1
        else:
            assert len(ids.times) == len(ids.keys) == 1


def test_has_answers_as_in():
    """``has(src, msg_id)`` (the receiver's question, C integers compiled) is ``in``,
    for every pair: 32-bit fields, and pairs whose key is computed otherwise."""
    ids = FinishedIds(hold_ps=100, limit=10)
    edges = [(0, 0), ((1 << 31) - 1, 0xFFFFFFFF), (1 << 31, 0), (0xFFFFFFFF, 0xFFFFFFFF),
             (1, 5)]
    for i, (src, msg_id) in enumerate(edges):
        ids.add(src, msg_id, 1, i)
    probes = edges + [(0, (1 << 32) + 5), (-1, 5), (0xFFFFFFFF, 0), (2, 5), (1 << 32, 0),
                      (5, -1)]
    for src, msg_id in probes:
        assert ids.has(src, msg_id) == ((src, msg_id) in ids), (src, msg_id)
    assert ids.has(0, (1 << 32) + 5)          # the key of (1, 5), as ``in`` computes it
