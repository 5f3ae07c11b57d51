"""The compiled build's small containers are their pure-Python references.

Each twin here (``bits``, ``timers``, ``sendlog``, ``fifo``) is driven with the same random
operations as its reference, errors included; split from ``tests/test_compiled.py``, which
keeps the build's own checks and whole runs (the event queue's twins:
tests/test_compiled_eventq.py).
"""

import random

import pytest

from gse import _build
from twins import pure_module as _pure_module, twin


# -- the bit helpers' twins agree ----------------------------------------------------------

@twin
@pytest.mark.parametrize("seed", range(4))
def test_bit_helpers_agree_with_the_reference(seed):
    from gse.common import bits
    ref = _pure_module("gse.common.bits")
    rng = random.Random(seed)
    for _ in range(2000):
        buf = bytearray(rng.getrandbits(8) for _ in range(rng.randrange(0, 24)))
        start = rng.randrange(-10, 30)
        assert bits.le64(buf, start) == ref.le64(buf, start), (buf, start)
        x = rng.choice((0, 1, 1 << 63, (1 << 64) - 1, rng.getrandbits(64),
                        rng.getrandbits(64) << rng.randrange(40) & ((1 << 64) - 1)))
        assert bits.lowest_bit(x) == ref.lowest_bit(x), x


# -- the FIFO's twins behave as collections.deque -----------------------------------------

def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as exc:                      # the same error, with the same message
        return (type(exc).__name__, str(exc))


@twin
@pytest.mark.parametrize("seed", range(6))
def test_timer_heap_twins_pop_the_same_order(seed):
    """The agents' timer heap: the C twin pops what the reference's tuple heap pops
    (deadline order, ties in push order), interleaving pushes and pops."""
    from gse.common.timers import TimerHeap
    ref = _pure_module("gse.common.timers")
    rng = random.Random(seed)
    a, b = TimerHeap(), ref.TimerHeap()
    out_a, out_b = [], []
    for i in range(3000):
        if rng.random() < 0.55 or not a:
            t, kind, owner = rng.randrange(50), rng.randrange(4), ("o", i)
            a.push(t, kind, owner)
            b.push(t, kind, owner)
        else:
            out_a.append((a.first(), a.pop(), a.last_t, a.last_kind, len(a)))
            out_b.append((b.first(), b.pop(), b.last_t, b.last_kind, len(b)))
        assert a.first() == b.first() and bool(a) == bool(b)
        if i % 100 == 0:                          # what is pending, as the invariants read it
            assert sorted(a.entries()) == sorted(b.entries())
    while a:
        out_a.append((a.pop(), a.last_t))
        out_b.append((b.pop(), b.last_t))
    assert out_a == out_b and not b and a.first() == -1
    with pytest.raises(IndexError):
        a.pop()


def test_timer_heap_releases_its_owners():
    """The compiled heap holds its entries' owners as references in C entries, which its
    tp_traverse shows to the garbage collector: a popped owner is let go, and a heap in a
    cycle with a pending owner (a host's messages do not, but an owner may) is collected."""
    import gc
    import weakref
    from gse.common.timers import TimerHeap

    class Owner:
        pass

    heap, popped, pending = TimerHeap(), Owner(), Owner()
    pending.heap = heap                                     # a cycle through the heap
    heap.push(2, 0, pending)
    heap.push(1, 0, popped)
    heap.push(3, 1, None)
    refs = [weakref.ref(popped), weakref.ref(pending)]
    del popped, pending
    assert heap.first() == 1
    heap.pop()
    assert refs[0]() is None                                # popped: let go
    assert refs[1]() is not None and len(heap) == 2
    if _build.build() == "compiled":
        assert any(x is refs[1]() for x in gc.get_referents(heap))
    del heap
    gc.collect()
    assert refs[1]() is None


@twin
@pytest.mark.parametrize("seed", range(4))
def test_send_log_twins_agree(seed):
    """A message's transmissions (``gse.common.sendlog``): the C ring of pairs reads,
    drops, grows and iterates as the reference's deque of tuples, errors included."""
    from gse.common.sendlog import SendLog
    ref = _pure_module("gse.common.sendlog")
    rng = random.Random(seed)
    a, b = SendLog(), ref.SendLog()
    t = 0
    for i in range(4000):
        r = rng.random()
        if r < (0.7 if i % 1000 < 600 else 0.25):     # phases of growth and of draining
            t += rng.randrange(3)
            psn = rng.randrange(1 << rng.choice((3, 20, 40)))
            a.append(t, psn)
            b.append(t, psn)
        else:
            got = [_outcome(x.first_sent) + _outcome(x.first_psn) + _outcome(x.popleft)
                   for x in (a, b)]
            assert got[0] == got[1]
        assert len(a) == len(b) and bool(a) == bool(b)
        if i % 97 == 0:
            assert list(a) == list(b) and list(reversed(a)) == list(reversed(b))


@pytest.mark.parametrize("seed", range(8))
def test_fifo_behaves_as_deque(seed):
    from collections import deque

    from gse.common.fifo import Fifo
    rng = random.Random(seed)
    ours, ref = Fifo(), deque()
    for step in range(3000):
        op = rng.randrange(14)
        v = rng.randrange(20)
        i = rng.randrange(-25, 25)
        if op == 0:
            calls = [lambda q: q.append(v)] * 3
        elif op == 1:
            calls = [lambda q: q.appendleft(v)]
        elif op == 2:
            calls = [lambda q: q.popleft()]
        elif op == 3:
            calls = [lambda q: q.pop()]
        elif op == 4:
            calls = [lambda q: q.remove(v)]
        elif op == 5:
            calls = [lambda q: q.rotate(i)]
        elif op == 6:
            calls = [lambda q: q[i]]
        elif op == 7:
            calls = [lambda q: (len(q), bool(q), list(q), list(reversed(q)))]
        elif op == 8:
            calls = [lambda q: v in q]
        elif op == 9 and rng.random() < 0.05:
            calls = [lambda q: q.clear()]
        elif op == 10:
            calls = [lambda q: q.extend([v, v + 1])]
        elif op == 11:
            calls = [lambda q: [q.append(x) for x in q]]     # mutated during iteration
        elif op == 12:
            calls = [lambda q: q.rotate()]
        else:
            calls = [lambda q: repr(q)]
        for call in calls:
            assert _outcome(lambda: call(ours)) == _outcome(lambda: call(ref)), (step, op)
        assert list(ours) == list(ref)
    assert ours == ref and ours == Fifo(ref) and not (ours != ref)


