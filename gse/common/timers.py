"""A heap of timers: ``(deadline, kind, owner)`` entries popped in deadline order, ties in
the order they were pushed.  An agent keeps its timers here (pacer, RTO, tail probe,
re-REQUEST) with lazy deletion: a timer that no longer matters is checked and skipped
when it pops.

This is the reference: a ``heapq`` of ``(deadline, seq, kind, owner)`` tuples, as the
agents kept before. The compiled twin (``cython/gse/common/timers.pyx``) keeps
deadlines, sequence numbers, kinds and a reference to the owner in a C heap (its first
deadline kept apart, for ``first``): no tuple per timer and C comparisons, the same
order (``tests/test_compiled_containers.py`` drives both with the same random schedules). ``pop()``
returns the owner and leaves the entry's deadline and kind in ``last_t`` and
``last_kind`` (no tuple for that either).
"""

from heapq import heappop, heappush


class TimerHeap:
    __slots__ = ("heap", "seq", "last_t", "last_kind")

    def __init__(self):
        self.heap = []
        self.seq = 0
        self.last_t = -1
        self.last_kind = -1

    def push(self, t, kind, owner):
        self.seq += 1
        heappush(self.heap, (t, self.seq, kind, owner))

    def first(self):
        """The earliest deadline, -1 if there is none."""
        return self.heap[0][0] if self.heap else -1

    def pop(self):
        """Remove the earliest entry; its owner (its deadline and kind: ``last_t``,
        ``last_kind``)."""
        t, _, kind, owner = heappop(self.heap)
        self.last_t = t
        self.last_kind = kind
        return owner

    def entries(self):
        """The pending entries as ``(deadline, kind, owner)``, in no particular order:
        for tests and invariant checks, which ask which timers are armed."""
        return [(t, kind, owner) for t, _, kind, owner in self.heap]

    def __len__(self):
        return len(self.heap)

    def __bool__(self):
        return bool(self.heap)
