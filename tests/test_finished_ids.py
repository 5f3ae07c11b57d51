"""``FinishedIds``: the compact store of finished message ids behaves as the plain
dict-and-FIFO it replaced (hold time, count limit, oldest forgotten first)."""

from collections import deque

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
        assert len(ids) == 1 and list(ids) == [(1, 2)] and len(ids.times) == len(ids.keys)


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
