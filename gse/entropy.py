"""Entropy values for per-packet spraying, steering away from values that saw trouble.

A message sprays over ``n`` consecutive entropy values from a random base (switches hash
the value with their own salt, so consecutive values land on unrelated paths).  A value
reported with an ECN mark, a trim or a timeout sits out the next ``penalty`` selections:
cheap, deterministic and close in spirit to UET's recycled-entropy spraying.
"""


class EntropySelector:
    __slots__ = ("base", "n", "cursor", "count", "penalty", "penalised")

    def __init__(self, base, n, penalty):
        self.base = base & 0xFFFF
        self.n = n
        self.cursor = 0
        self.count = 0
        self.penalty = penalty
        self.penalised = None   # dict index -> selection count at which it may return

    def next(self):
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

    def penalise(self, entropy):
        idx = (entropy - self.base) & 0xFFFF
        if idx < self.n:
            if self.penalised is None:
                self.penalised = {}
            self.penalised[idx] = self.count + self.penalty

    def n_penalised(self):
        return 0 if self.penalised is None else len(self.penalised)
