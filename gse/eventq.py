"""The discrete-event core: integer picoseconds, ties broken by insertion order.

An event is ``(time, seq, fn, a, b)`` and runs as ``fn(a, b)``.  The sequence number makes
the order total, so a run is a pure function of its inputs (no comparison ever reaches the
callables).  Nothing here knows about packets.
"""

from heapq import heappop, heappush


class EventQueue:
    __slots__ = ("heap", "seq", "now", "events")

    def __init__(self):
        self.heap = []
        self.seq = 0
        self.now = 0
        self.events = 0

    def at(self, t, fn, a, b):
        if t < self.now:
            raise ValueError("event scheduled in the past: %d < now %d" % (t, self.now))
        self.seq += 1
        heappush(self.heap, (t, self.seq, fn, a, b))

    def run(self, until=-1):
        """Run events in order; stop when none is left or the next is past ``until``.

        Returns True if the queue drained, False if it stopped at ``until``."""
        heap = self.heap
        n = 0
        try:
            while heap:
                if until >= 0 and heap[0][0] > until:
                    self.now = until
                    return False
                t, _, fn, a, b = heappop(heap)
                self.now = t
                n += 1
                fn(a, b)
            return True
        finally:
            self.events += n

    def pending(self):
        return len(self.heap)
