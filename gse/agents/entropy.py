"""Entropy values for per-packet spraying, recycling the values that came back clean.

Switches pick among equal-cost next hops by hashing a packet's entropy value with their own
salt, so the sender chooses a packet's path by choosing its entropy.  The selector follows
the idea of UET's recycled-entropy packet spraying (REPS): the entropy of every packet
acknowledged without an ECN mark goes back into a FIFO and is used again, so the set of
values in flight converges on uncongested paths; a value that came back marked or trimmed
is not recycled and is also penalised (skipped for ``penalty`` explorations).  When the
FIFO is empty (start of a message, or after congestion) the selector explores: it walks
``n`` consecutive values from a random base.

Congestion and failure are told apart.  A loss that no switch reported (found by RACK or
the RTO, not by a trim) is what a dead link does before the fabric routes around it: the
value is *suspected* dead until a given time (``suspect``) and skipped everywhere until
then, recycled or explored, where a trim only keeps a value out of a few explorations.
Suspicions are kept by entropy value in a dict the host shares among its messages to the
same destination, which also share one range of values (from one random base; each
message starts its walk at its own place): a value takes the same path whichever message
sends it, so the next message does not pay again to learn which paths are dead.

Control packets are steered by the same selector: a REQUEST or a probe takes a value
known to work (``control``: the newest recycled one) without using it up.
"""

try:
    import cython  # for the class decorator below: a no-op in pure Python
    cython.compiled       # the real Cython (gse.wire.packet says why the check)
except (ImportError, AttributeError):
    from gse import _no_cython as cython

from gse.common.fifo import Fifo


# compiled, not tracked by the garbage collector: its dicts and FIFO hold integers (no
# cycle); one made and freed per message
@cython.no_gc
@cython.cclass
class EntropySelector:
    __slots__ = ("base", "n", "cursor", "count", "penalty", "trim_penalty", "penalised",
                 "recycled", "dead")

    def __init__(self, base, n, penalty, dead=None, cursor=0, trim_penalty=-1):
        self.setup(base, n, penalty, dead, cursor, trim_penalty)

    def setup(self, base, n, penalty, dead, cursor, trim_penalty):
        """What ``__init__`` does (compiled, with C integers: ``OutMsg.setup`` makes one
        selector per message as ``EntropySelector.__new__`` then this)."""
        self.base = base & 0xFFFF
        self.n = n
        self.cursor = cursor % n      # where exploration starts
        self.count = 0            # explorations so far
        self.penalty = penalty
        self.trim_penalty = penalty if trim_penalty < 0 else trim_penalty
        self.penalised = None     # dict index -> exploration count at which it may return
        # values acknowledged clean, oldest first (used up): None until the first
        self.recycled = None
        # entropy -> time (ps) until which it is suspected dead (shared per destination)
        self.dead = dead

    def next(self, now=0):
        """The entropy of the next data packet: a recycled value (used up: it comes back
        when its packet is acknowledged clean), else an exploration.  Values suspected
        dead are skipped either way."""
        recycled = self.recycled
        while recycled:
            entropy = recycled.popleft()
            if self.dead is None or not self.is_dead(entropy, now):
                return entropy
        return self.explore(now)

    def explore(self, now=0):
        """The next value of the walk from the base that is neither penalised nor
        suspected (the next one anyway if all are)."""
        n = self.n
        self.count += 1
        for _ in range(n):
            idx = self.cursor
            self.cursor = idx + 1 if idx + 1 < n else 0
            pen = self.penalised
            if pen is not None and idx in pen:
                if pen[idx] > self.count:
                    continue
                del pen[idx]
            entropy = (self.base + idx) & 0xFFFF
            dead = self.dead
            if dead and entropy in dead:
                if dead[entropy] > now:
                    continue
                del dead[entropy]
            return entropy
        # every value is penalised or suspected: use the next one anyway rather than stall
        return (self.base + self.cursor) & 0xFFFF

    def control(self, now=0):
        """An entropy for a control packet: the newest value acknowledged clean that is
        neither penalised nor suspected (left in place for data), else an exploration."""
        recycled = self.recycled
        i = len(recycled) - 1 if recycled is not None else -1
        while i >= 0:
            entropy = recycled[i]
            if not self.is_penalised(entropy) and not self.is_dead(entropy, now):
                return entropy
            i -= 1
        return self.explore(now)

    def is_penalised(self, entropy):
        pen = self.penalised
        if pen is None:
            return False
        idx = (entropy - self.base) & 0xFFFF
        return idx in pen and pen[idx] > self.count

    def is_dead(self, entropy, now):
        dead = self.dead
        return bool(dead) and entropy in dead and dead[entropy] > now

    def recycle(self, entropy):
        """A packet sent with ``entropy`` was acknowledged without congestion."""
        if self.recycled is None:
            self.recycled = Fifo()
        if len(self.recycled) < self.n:
            self.recycled.append(entropy)

    def penalise(self, entropy):
        """``entropy`` saw an ECN mark: keep it out for ``penalty`` explorations."""
        self._penalise(entropy, self.penalty)

    def penalise_trim(self, entropy):
        """``entropy`` was trimmed: keep it out for ``trim_penalty`` explorations."""
        self._penalise(entropy, self.trim_penalty)

    def _penalise(self, entropy, penalty):
        idx = (entropy - self.base) & 0xFFFF
        if idx < self.n:
            pen = self.penalised
            if pen is None:
                pen = self.penalised = {}
            until = self.count + penalty
            if pen.get(idx, -1) < until:
                pen[idx] = until

    def suspect(self, entropy, until):
        """A packet sent with ``entropy`` was lost silently: presume its path dead until
        ``until`` (ps), and forget that it was ever clean (its copies leave the FIFO, so
        that a stale clean value cannot come back when the suspicion ends)."""
        if self.dead is None:
            self.dead = {}
        if self.dead.get(entropy, -1) < until:
            self.dead[entropy] = until
        recycled = self.recycled
        while recycled is not None and entropy in recycled:
            recycled.remove(entropy)

    def alive(self, entropy):
        """An ACK or GRANT came back on ``entropy``: its path works, whatever a late
        packet made the sender suspect."""
        dead = self.dead
        if dead:
            dead.pop(entropy, None)

    def n_suspected(self, now):
        dead = self.dead
        if dead is None:
            return 0
        return sum(1 for until in dead.values() if until > now)
