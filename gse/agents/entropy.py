"""Entropy values for per-packet spraying, recycling the values that came back clean.

Switches pick among equal-cost next hops by hashing a packet's entropy value with their own
salt, so the sender chooses a packet's path by choosing its entropy.  The selector follows
the idea of UET's recycled-entropy packet spraying (REPS): the entropy of every packet
acknowledged without an ECN mark goes back into a FIFO and is used again, so the set of
values in flight converges on uncongested paths; a value that came back marked, trimmed or
timed out is not recycled and is also penalised (skipped for ``penalty`` explorations).
When the FIFO is empty (start of a message, or after congestion) the selector explores:
it walks ``n`` consecutive values from a random base.
"""

from gse.common.fifo import Fifo


class EntropySelector:
    __slots__ = ("base", "n", "cursor", "count", "penalty", "penalised", "recycled")

    def __init__(self, base, n, penalty):
        self.base = base & 0xFFFF
        self.n = n
        self.cursor = 0
        self.count = 0
        self.penalty = penalty
        self.penalised = None     # dict index -> exploration count at which it may return
        self.recycled = Fifo()   # values acknowledged clean, oldest first

    def next(self):
        if self.recycled:
            return self.recycled.popleft()
        return self.explore()

    def explore(self):
        n = self.n
        for _ in range(n):
            idx = self.cursor
            self.cursor = idx + 1 if idx + 1 < n else 0
            self.count += 1
            pen = self.penalised
            if pen is not None and idx in pen:
                if pen[idx] > self.count:
                    continue
                del pen[idx]
            return (self.base + idx) & 0xFFFF
        # every value is penalised: use the next one anyway rather than stall
        return (self.base + self.cursor) & 0xFFFF

    def recycle(self, entropy):
        """A packet sent with ``entropy`` was acknowledged without congestion."""
        if len(self.recycled) < self.n:
            self.recycled.append(entropy)

    def penalise(self, entropy):
        """``entropy`` saw an ECN mark, a trim or a timeout: keep it out for a while."""
        idx = (entropy - self.base) & 0xFFFF
        if idx < self.n:
            if self.penalised is None:
                self.penalised = {}
            self.penalised[idx] = self.count + self.penalty

    def n_penalised(self):
        return 0 if self.penalised is None else len(self.penalised)
