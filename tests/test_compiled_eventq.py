"""The event queue's compiled twin (``cython/gse/runtimes/sim/eventq.pyx``) runs the events
its pure-Python reference runs, in the same order: random schedules (sparse, dense,
crowded, with stops), same-instant events against a reference heap of (time, seq), errors,
and what pending events hold.  Split from ``tests/test_compiled.py``.
"""

import heapq
import random

import pytest

from gse import _build
from twins import pure_module, twin


# -- the event queue's twins run the same events in the same order ------------------------

def _pure_eventq():
    return pure_module("gse.runtimes.sim.eventq").EventQueue


def _drive(eq_cls, seed):
    """A random schedule: ties, events that schedule events, stops at ``until``."""
    rng = random.Random(seed)
    eq = eq_cls()
    log = []

    def fire(tag, depth):
        log.append((eq.now, tag))
        for i in range(rng.randrange(3) if depth < 4 else 0):
            eq.at(eq.now + rng.choice((0, 0, 1, 5, 1000, 10**12)), fire,
                  "%s.%d" % (tag, i), depth + 1)

    for i in range(rng.randrange(1, 400)):
        eq.at(rng.choice((0, 7, 7, rng.randrange(10**6))), fire, str(i), 0)
    results = []
    for until in (5, 10**5, 10**5, 10**13, -1):
        results.append((eq.run(until), eq.now, eq.pending(), eq.events))
    with pytest.raises(ValueError) as info:
        eq.at(eq.now - 1, fire, "late", 0)
    return log, results, str(info.value)


@twin
@pytest.mark.parametrize("seed", range(12))
def test_event_queue_twins_run_the_same_order(seed):
    from gse.runtimes.sim.eventq import EventQueue
    assert _drive(EventQueue, seed) == _drive(_pure_eventq(), seed)


class _Dense:
    """Dense, near events (a simulator's: ps apart, within a few us, some far), events
    scheduled from outside between the stops, at ``now`` too (which may lie before the
    queue's current position)."""
    stops, depth, due_after_extras = 30, 6, False

    @staticmethod
    def children(rng):
        return rng.choice((0, 1, 1, 2))

    @staticmethod
    def delay(rng):
        return rng.choice((0, rng.randrange(2000), rng.randrange(10**6), rng.randrange(10**7),
                           rng.randrange(10**9)))

    @staticmethod
    def initial(rng):
        return rng.randrange(1, 300)

    @staticmethod
    def start(rng):
        return rng.randrange(10**5)

    @staticmethod
    def until(rng):
        return rng.choice((0, 1, rng.randrange(5000), rng.randrange(10**6),
                           rng.randrange(10**8)))

    @staticmethod
    def extras(rng):
        return rng.randrange(4)

    @staticmethod
    def extra_delay(rng):
        return rng.choice((0, 0, 1, rng.randrange(10**4), rng.randrange(10**7)))


class _Crowded:
    """Hundreds of events a bucket (1,024 ps; a large fabric running in lockstep): many
    more than a chunk of keys holds, scheduled out of order within their buckets, more
    scheduled into the bucket being run, stops inside the crowd (``due_now`` also after
    the events scheduled at the stop's time)."""
    stops, depth, due_after_extras = 25, 3, True

    @staticmethod
    def children(rng):
        return rng.choice((0, 1, 2))

    @staticmethod
    def delay(rng):
        return rng.choice((0, rng.randrange(64), rng.randrange(4096),
                           10**7 + rng.randrange(4096)))

    @staticmethod
    def initial(rng):
        return 2000

    @staticmethod
    def start(rng):
        return rng.randrange(6) * 1024 + rng.choice((0, 0, rng.randrange(16),
                                                     rng.randrange(1024)))

    @staticmethod
    def until(rng):
        return rng.choice((0, 1, rng.randrange(2048)))

    @staticmethod
    def extras(rng):
        return rng.choice((0, rng.randrange(40)))

    @staticmethod
    def extra_delay(rng):
        return rng.choice((0, rng.randrange(3000), rng.randrange(3000)))


def _drive_stops(eq_cls, seed, regime):
    """``regime``'s random schedule (``_Dense``, ``_Crowded``): events that schedule
    events, stops at ``until`` with events scheduled from outside after each, ``due_now``
    asked in every event and at every stop."""
    rng = random.Random(seed)
    eq = eq_cls()
    log = []

    def fire(tag, depth):
        log.append((eq.now, tag, eq.due_now()))
        for i in range(regime.children(rng) if depth < regime.depth else 0):
            eq.at(eq.now + regime.delay(rng), fire, "%s.%d" % (tag, i), depth + 1)

    for i in range(regime.initial(rng)):
        eq.at(regime.start(rng), fire, str(i), 0)
    results = []
    for stop in range(regime.stops):
        until = eq.now + regime.until(rng)
        results.append((eq.run(until), eq.now, eq.pending(), eq.events, eq.due_now()))
        for j in range(regime.extras(rng)):
            eq.at(eq.now + regime.extra_delay(rng), fire, "x%d.%d" % (stop, j), 0)
        if regime.due_after_extras:
            results.append(eq.due_now())
    results.append((eq.run(), eq.now, eq.pending(), eq.events))
    return log, results


@twin
@pytest.mark.parametrize("seed", range(12))
def test_event_queue_twins_run_the_same_order_dense(seed):
    from gse.runtimes.sim.eventq import EventQueue
    ours = _drive_stops(EventQueue, seed, _Dense)
    ref = _drive_stops(_pure_eventq(), seed, _Dense)
    assert len(ours[0]) > 100
    assert any(due for _, _, due in ours[0]) and not all(due for _, _, due in ours[0])
    assert ours == ref


@twin
@pytest.mark.parametrize("seed", range(6))
def test_event_queue_twins_run_the_same_order_crowded(seed):
    from gse.runtimes.sim.eventq import EventQueue
    ours = _drive_stops(EventQueue, seed, _Crowded)
    ref = _drive_stops(_pure_eventq(), seed, _Crowded)
    assert len(ours[0]) > 2000
    assert any(ours[1][1::2]) and not all(ours[1][1::2])      # due at some stops
    assert ours == ref


class _ReferenceQueue:
    """The order both twins keep: one heap of (time, seq), seq counting ``at`` calls."""

    def __init__(self):
        self.heap, self.seq, self.now, self.events = [], 0, 0, 0

    def at(self, t, fn, a, b):
        if t < self.now:
            raise ValueError("event scheduled in the past: %d < now %d" % (t, self.now))
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, fn, a, b))

    def hint_at(self, t, fn, hint):
        self.at(t, fn, None, None)

    def run(self, until=-1):
        while self.heap:
            if until >= 0 and self.heap[0][0] > until:
                self.now = until
                return False
            t, _, fn, a, b = heapq.heappop(self.heap)
            self.now = t
            self.events += 1
            fn(a, b)
        return True

    def pending(self):
        return len(self.heap)

    def due_now(self):
        return bool(self.heap) and self.heap[0][0] == self.now


def _drive_same_instant(eq_cls, seed):
    """Events scheduled for the current time (the same-instant FIFO), mixed with events
    filed earlier for that time, later in its bucket and far ahead, hinted ones among
    them; bursts of thousands at one instant (the FIFO grows, wrapped); stops at
    ``until`` with the FIFO full, and from outside, at the stop's time or after it."""
    rng = random.Random(seed)
    eq = eq_cls()
    log = []
    bursts = [300, 1200, 2500]

    def fire(tag, depth):
        log.append((eq.now, tag, eq.due_now(), eq.pending()))
        if depth >= 5:
            return
        k = rng.choice((0, 1, 1, 2)) if depth else rng.choice((0, 1, 2, 3))
        if bursts and depth == 0 and rng.random() < 0.02:
            k = bursts.pop()                          # a burst at this instant
        for i in range(k):
            dt = rng.choice((0, 0, 0, 0, 1, rng.randrange(1024), rng.randrange(10**6)))
            if depth >= 3 and dt == 0 and rng.random() < 0.3:
                dt = rng.randrange(1, 2048)
            sub = "%s.%d" % (tag, i)
            if rng.random() < 0.2:
                eq.hint_at(eq.now + dt, hinted(sub), object())
            else:
                eq.at(eq.now + dt, fire, sub, depth + 1 if dt == 0 else depth + 2)

    def hinted(tag):
        def run(a, b):
            log.append((eq.now, tag, a, b, eq.pending()))
        return run

    for i in range(rng.randrange(50, 400)):
        eq.at(rng.choice((0, 0, 3, rng.randrange(5000))), fire, str(i), 0)
    results = []
    for stop in range(20):
        until = eq.now + rng.choice((0, 1, rng.randrange(3000), rng.randrange(10**6)))
        results.append((eq.run(until), eq.now, eq.pending(), eq.events, eq.due_now()))
        for j in range(rng.randrange(6)):
            eq.at(eq.now + rng.choice((0, 0, 1, rng.randrange(3000))), fire,
                  "x%d.%d" % (stop, j), 3)
    results.append((eq.run(), eq.now, eq.pending(), eq.events, eq.due_now()))
    return log, results


@twin
@pytest.mark.parametrize("seed", range(8))
def test_event_queue_same_instant_events_run_in_heap_order(seed):
    """The same-instant FIFO (both twins) keeps the order of one heap of (time, seq)."""
    from gse.runtimes.sim.eventq import EventQueue
    ref = _drive_same_instant(_ReferenceQueue, seed)
    assert len(ref[0]) > 1000
    assert sum(1 for i in range(1, len(ref[0])) if ref[0][i][0] == ref[0][i - 1][0]) > 500
    assert _drive_same_instant(EventQueue, seed) == ref
    assert _drive_same_instant(_pure_eventq(), seed) == ref


def test_event_queue_same_instant_burst_grows_and_wraps():
    """Thousands of events at one instant, scheduled while the FIFO is part run (its
    ring wraps and doubles), between events filed earlier for that instant: the order of
    one heap of (time, seq), on both twins."""
    from gse.runtimes.sim.eventq import EventQueue

    def drive(cls):
        eq, log = cls(), []

        def fire(tag, n):
            log.append((eq.now, tag))
            for i in range(n):
                eq.at(eq.now, fire, "%s.%d" % (tag, i), 1 if n > 100 and i % 3 == 0 else 0)
            if n:
                eq.at(eq.now + 1, fire, tag + "+1", 0)
        for i in range(40):
            eq.at(100, fire, "a%d" % i, 0)
        eq.at(100, fire, "big", 700)
        eq.at(100, fire, "big2", 1500)
        for i in range(40):
            eq.at(100, fire, "b%d" % i, 3)
        eq.at(101, fire, "late", 0)
        assert eq.run(100) is False
        mid = (eq.now, eq.pending(), eq.due_now())
        eq.at(100, fire, "after", 0)
        return log, mid, eq.run(), eq.events, eq.now

    ref = drive(_ReferenceQueue)
    assert len(ref[0]) > 3000 and ref[1] == (100, 2 + 40 + 1 + 734, False)
    for cls in (EventQueue, _pure_eventq()):
        assert drive(cls) == ref, cls


def test_event_queue_exception_counts_events_run():
    from gse.runtimes.sim.eventq import EventQueue
    for cls in (EventQueue, _pure_eventq()):
        eq = cls()

        def boom(a, b):
            raise RuntimeError("boom")
        eq.at(1, lambda a, b: None, None, None)
        eq.at(2, boom, None, None)
        eq.at(3, lambda a, b: None, None, None)
        with pytest.raises(RuntimeError):
            eq.run()
        assert (eq.now, eq.events, eq.pending()) == (2, 2, 1)
        assert eq.run() is True and eq.events == 3


def test_event_queue_releases_what_its_events_hold():
    """A run event's callable and arguments are let go, and a queue in a cycle with what
    its pending events hold (a network's ports hold the queue) is collected: the compiled
    queue keeps them in C slots that its tp_traverse shows to the garbage collector."""
    import gc
    import weakref
    from gse.runtimes.sim.eventq import EventQueue, Handler, event_target

    class Owner:
        pass

    class Port(Handler):
        def fire(self, a, b):
            self.fired = (a, b)

    for cls in (EventQueue, _pure_eventq()):
        eq = cls()
        done, late, port = Owner(), Owner(), Port()
        done.eq = late.eq = port.eq = eq                     # cycles through the queue
        eq.at(1, event_target(port, port.fire) if cls is EventQueue else port.fire,
              done, None)
        eq.at(2, lambda a, b: None, late, None)
        refs = [weakref.ref(x) for x in (done, late, port)]
        del done, late
        assert eq.run(1) is False and port.fired[1] is None
        port.fired = None
        assert refs[0]() is None                             # ran: let go
        assert refs[1]() is not None and eq.pending() == 1   # pending: held
        if cls is EventQueue and _build.build() == "compiled":
            assert any(x is refs[1]() for x in gc.get_referents(eq))
        del eq, port
        gc.collect()
        assert [r() for r in refs] == [None, None, None], cls


def test_a_hinted_event_holds_nothing_of_its_hint_and_gets_none():
    """``hint_at`` (compiled: the event keeps its hint without a reference, to prefetch
    it): the hint may be gone before the event runs, which then gets None, as in the pure
    twin; the queue, run, stopped, or collected with hinted events pending, lets go of
    everything else as with plain events."""
    import gc
    import weakref
    from gse.runtimes.sim.eventq import EventQueue, Handler, event_target

    class Hint:
        pass

    class Port(Handler):
        def fire(self, a, b):
            self.fired.append((a, b))

    for cls in (EventQueue, _pure_eventq()):
        eq = cls()
        port = Port()
        port.fired = []
        port.eq = eq                                         # a cycle through the queue
        fn = event_target(port, port.fire) if cls is EventQueue else port.fire
        hints = [Hint() for _ in range(6)]
        refs = [weakref.ref(h) for h in hints]
        for i, h in enumerate(hints):
            eq.hint_at(10 * i, fn, h)
            eq.at(10 * i + 1, fn, i, None)
        del hints, h
        assert [r() for r in refs] == [None] * 6             # never held
        assert eq.run(25) is False
        assert port.fired == [(None, None), (0, None), (None, None), (1, None),
                              (None, None), (2, None)]
        assert eq.pending() == 6
        port_ref = weakref.ref(port)
        del eq, port, fn
        gc.collect()
        assert port_ref() is None, cls
