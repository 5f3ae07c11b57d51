"""The discrete-event core: integer picoseconds, ties broken by insertion order.

An event is ``(time, seq, fn, a, b)`` and runs as ``fn(a, b)``.  The sequence number makes
the order total, so a run is a pure function of its inputs (no comparison ever reaches the
callables).  Nothing here knows about packets.

The objects that receive most events (ports, nodes) derive from :class:`Handler`
(``gse.common.handler``) and schedule ``event_target(self, self.method)``, where ``fire(a,
b)`` does what ``method(a, b)`` does.  Here that is the bound method itself, the cheapest
call in Python; the compiled twin returns the handler and calls its ``fire`` as a C method,
without a Python call per event (htsim's EventSource).
"""

from collections import deque
from heapq import heappop, heappush

from gse.common.handler import Handler  # noqa: F401  (named here too: gse.common.handler)


def event_target(handler, method):
    """What to schedule for ``handler``'s events run as ``method(a, b)``: ``method``."""
    return method


def huge_pages(reserve_gib=64, blocks=False):
    """Serve the interpreter's object arenas from memory backed by huge pages: whether that
    is so (now or from an earlier call).

    The compiled twin does it (``cython/gse/runtimes/sim/gse_arena.h`` says why: an event
    touches objects spread over hundreds of MiB, and each page a TLB entry); this build
    leaves memory as it is."""
    return False


def huge_pages_used():
    """Bytes of arenas handed out from the huge-page region so far (0: none)."""
    return 0


def huge_blocks_used():
    """Bytes of the raw allocator's blocks cut from the huge-page region so far (0)."""
    return 0


class EventQueue:
    """A heap of ``(time, seq, fn, a, b)``, and a FIFO of ``(seq, fn, a, b)`` for the events
    scheduled for the current time (``ft``): those run after every event of the heap at
    that time (filed before the clock reached it, with smaller sequence numbers) and in
    the order scheduled; ``run`` compares the two heads, so the order is the heap's own."""
    __slots__ = ("heap", "fifo", "ft", "seq", "now", "events")

    def __init__(self):
        self.heap = []
        self.fifo = deque()
        self.ft = 0
        self.seq = 0
        self.now = 0
        self.events = 0

    def at(self, t, fn, a, b):
        now = self.now
        if t <= now:
            if t < now:
                raise ValueError("event scheduled in the past: %d < now %d" % (t, now))
            fifo = self.fifo
            if fifo and self.ft != t:
                self._fifo_flush()
            self.ft = t
            self.seq += 1
            fifo.append((self.seq, fn, a, b))
            return
        self.seq += 1
        heappush(self.heap, (t, self.seq, fn, a, b))

    def _fifo_flush(self):
        """The FIFO's events into the heap (its time is no longer the current one: a stop
        at ``until`` before it)."""
        ft, heap, fifo = self.ft, self.heap, self.fifo
        while fifo:
            seq, fn, a, b = fifo.popleft()
            heappush(heap, (ft, seq, fn, a, b))

    def hint_at(self, t, fn, hint):
        """An event that gets None, with ``hint`` an object its compiled twin prefetches
        an event ahead without holding it (``at_hint``); here the same as ``at(t, fn,
        None, None)``: a pure build has no prefetch."""
        self.at(t, fn, None, None)

    def run(self, until=-1):
        """Run events in order; stop when none is left or the next is past ``until``.

        Returns True if the queue drained, False if it stopped at ``until``."""
        heap = self.heap
        fifo = self.fifo
        n = 0
        try:
            while True:
                if fifo:
                    ft = self.ft
                    if heap:
                        h = heap[0]
                        first = h[0] > ft or (h[0] == ft and h[1] > fifo[0][0])
                    else:
                        first = True
                    if first:
                        if until >= 0 and ft > until:
                            self.now = until
                            return False
                        _, fn, a, b = fifo.popleft()
                        self.now = ft
                        n += 1
                        fn(a, b)
                        continue
                elif not heap:
                    return True
                if until >= 0 and heap[0][0] > until:
                    self.now = until
                    return False
                t, _, fn, a, b = heappop(heap)
                self.now = t
                n += 1
                fn(a, b)
        finally:
            self.events += n

    def pending(self):
        return len(self.heap) + len(self.fifo)

    def due_now(self):
        """Whether an event is pending at the current time (it would run before any event
        scheduled now, for now: the htsim model's switch hands a packet over without an
        event of its own when not, docs/scale.md)."""
        if self.fifo and self.ft == self.now:
            return True
        heap = self.heap
        return bool(heap) and heap[0][0] == self.now
