"""A message's transmissions in the order sent: ``(sent, psn)`` pairs, oldest first.

The GSE sender (``gse.agents.sender.OutMsg.inflight``) appends one pair per DATA packet
it sends, reads and drops them from the front (RACK loss detection, the RTO's oldest
packet), and walks them all only on a timeout or a tail probe.

This is the reference: a deque of tuples.  The compiled twin
(``cython/gse/common/sendlog.pyx``) keeps the pairs as C integers in a ring: no tuple nor
boxed integer per packet sent, and reading the front touches the ring's one line, not a
tuple and its integers as well.  ``tests/test_compiled_containers.py`` drives both with the same
random operations.
"""

from collections import deque


class SendLog:
    __slots__ = ("pairs",)

    def __init__(self):
        self.pairs = deque()

    def append(self, sent, psn):
        self.pairs.append((sent, psn))

    def first_sent(self):
        """The oldest pair's send time (IndexError if there is none)."""
        return self.pairs[0][0]

    def first_psn(self):
        return self.pairs[0][1]

    def popleft(self):
        """Drop the oldest pair."""
        self.pairs.popleft()

    def __len__(self):
        return len(self.pairs)

    def __bool__(self):
        return bool(self.pairs)

    def __iter__(self):
        return iter(self.pairs)

    def __reversed__(self):
        return reversed(self.pairs)
