"""Training collectives as traffic with dependencies.

A ``Collective`` is one call as a trace records it: the operation, the ranks taking part
(in ring order), the buffer size S in bytes (the nccl-tests convention: the whole
all-reduce buffer, the *output* of an all-gather, the *input* of a reduce-scatter, a
rank's whole send buffer for an all-to-all), the algorithm, and when it may start: not
before ``start_ps``, and after every collective in ``after`` is done, each plus its lag
(the compute time in between).

``expand`` turns a collective into a ``Plan``: flows between rank *positions* (indices
into ``ranks``), each with the flows it waits for.  A step starts when the data it
depends on has arrived, not at a fixed time, so the plan is a DAG that the replay driver
(``gse.workloads.replay``) walks as deliveries happen.  The algorithms, over N ranks:

================== ==================================================================
all_reduce ring    2(N-1) steps; in each, every rank sends one S/N chunk to the next
                   rank, the chunk it received in the previous step (reduce-scatter
                   then all-gather), so step k of rank i waits for step k-1 of i-1
all_reduce hd      halving-doubling (Rabenseifner): log2 N reduce-scatter steps with
                   partner i XOR 2^k sending S/2^(k+1), then the same in reverse for
                   the all-gather; 2 log2 N steps; N must be a power of two
reduce_scatter     ring, N-1 steps of S/N
all_gather         ring, N-1 steps of S/N (S is the gathered output)
all_to_all         direct: N(N-1) flows of S/N, all at once; an uneven all-to-all
                   (alltoallv) gives ``splits``, the bytes each rank sends to each
                   rank, and S is the largest rank's send buffer
broadcast ring     pipelined chain from the root along the ring order: the buffer is
                   cut into chunks of ``chunk_bytes`` (default 128 KiB, as NCCL
                   pipelines); chunk c leaves rank i once it has arrived from i-1 and
                   chunk c-1 has arrived at i+1 (one chunk in flight per hop)
broadcast tree     binomial tree: log2 N rounds of the whole buffer
reduce             the ring broadcast in reverse (the chain ends at the root)
gather / scatter   direct: S/N between the root and every other rank
send               one flow of S from ranks[0] to ranks[1] (point to point)
================== ==================================================================

Chunks of S/N are split exactly: the first S mod N chunks carry one byte more, and a
chunk of zero bytes (S < N) is a zero-size flow that completes as soon as it may start,
so dependencies still chain through it.

Bus bandwidth follows nccl-tests (``BUS_FACTORS``): algbw = S / time and busbw = algbw
times 2(n-1)/n for all-reduce, (n-1)/n for reduce-scatter, all-gather and all-to-all, 1
for broadcast, reduce and point to point.
"""

from collections.abc import Iterable, Sequence
from typing import Any

OPS = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast", "reduce",
       "gather", "scatter", "send")

ALGORITHMS = {
    "all_reduce": ("ring", "hd"),
    "reduce_scatter": ("ring",),
    "all_gather": ("ring",),
    "all_to_all": ("direct",),
    "broadcast": ("ring", "tree"),
    "reduce": ("ring",),
    "gather": ("direct",),
    "scatter": ("direct",),
    "send": ("direct",),
}

ROOTED = ("broadcast", "reduce", "gather", "scatter")

DEFAULT_CHUNK_BYTES = 128 * 1024

MAX_RANK = 1 << 20             # ranks are 0..MAX_RANK-1 (a million NICs is plenty)
MAX_FLOW_BYTES = 2 ** 32 - 1   # a flow is one message, whose length is a 32-bit wire field


def bus_factor(op: str, n: int) -> float:
    """The nccl-tests factor from algorithm bandwidth to bus bandwidth over n ranks."""
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    if op in ("reduce_scatter", "all_gather", "all_to_all", "gather", "scatter"):
        return (n - 1) / n
    return 1.0


class CollectiveError(ValueError):
    """A collective that cannot be expanded; the message names the collective."""


class Collective:
    """One collective call (see the module docstring).  Plain data, compared by value.

    ``after`` is a tuple of ``(collective id, lag_ps)`` (a plain id means lag 0); ``dtype``
    and ``tag`` are carried for reports only.  Times are integer picoseconds.  ``where``
    is the file and record it was read from (None when made in code): every error about
    it, here or when it is replayed, names that place.  ``splits`` (uneven all-to-all
    only): ``splits[i][j]`` bytes from position i to position j, diagonal included (a
    rank's share for itself, which crosses no link); ``size`` is then the largest row.
    """

    __slots__ = ("id", "op", "ranks", "size", "algo", "root", "after", "start_ps", "dtype",
                 "tag", "chunk_bytes", "where", "splits")

    def __init__(self, id: int, op: str, ranks: Iterable[int], size: int,
                 algo: str | None = None, root: int = 0,
                 after: Iterable[int | tuple[int, int]] = (), start_ps: int = 0,
                 dtype: str | None = None, tag: Any = None, chunk_bytes: int | None = None,
                 where: str | None = None,
                 splits: Iterable[Iterable[int]] | None = None) -> None:
        self.id = id
        self.op = op
        self.ranks = tuple(ranks)
        self.size = size
        self.algo = algo or ALGORITHMS.get(op, ("",))[0]
        self.root = root
        self.after = tuple((d, 0) if isinstance(d, int) else (int(d[0]), int(d[1]))
                           for d in after)
        self.start_ps = start_ps
        self.dtype = dtype
        self.tag = tag
        self.chunk_bytes = chunk_bytes
        self.where = where
        self.splits = None if splits is None else tuple(tuple(row) for row in splits)
        self.check()

    def describe(self) -> str:
        """"collective ID" and, if known, the file and record it came from."""
        what = "collective %r" % (self.id,)
        return what if self.where is None else "%s: %s" % (self.where, what)

    def check(self):
        what = self.describe()
        if isinstance(self.id, bool) or not isinstance(self.id, int) or self.id < 0:
            raise CollectiveError("%s: id must be an integer >= 0" % what)
        if self.op not in OPS:
            raise CollectiveError("%s: unknown op %r (known: %s)" % (what, self.op, ", ".join(OPS)))
        if self.algo not in ALGORITHMS[self.op]:
            raise CollectiveError("%s: %s has no algorithm %r (known: %s)"
                                  % (what, self.op, self.algo, ", ".join(ALGORITHMS[self.op])))
        for r in self.ranks:
            if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r < MAX_RANK:
                raise CollectiveError("%s: ranks must be integers in 0..%d, got %r"
                                      % (what, MAX_RANK - 1, r))
        if len(set(self.ranks)) != len(self.ranks):
            raise CollectiveError("%s: a rank appears twice in %r" % (what, list(self.ranks)))
        if not self.ranks:
            raise CollectiveError("%s: no ranks" % what)
        if self.op == "send" and len(self.ranks) != 2:
            raise CollectiveError("%s: send takes ranks [src, dst], got %r"
                                  % (what, list(self.ranks)))
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 0:
            raise CollectiveError("%s: size must be an integer >= 0 bytes, got %r"
                                  % (what, self.size))
        if self.op in ROOTED and self.root not in self.ranks:
            raise CollectiveError("%s: root %r is not one of the ranks" % (what, self.root))
        if isinstance(self.start_ps, bool) or not isinstance(self.start_ps, int) \
                or self.start_ps < 0:
            raise CollectiveError("%s: start must be >= 0" % what)
        for d, lag in self.after:
            if lag < 0:
                raise CollectiveError("%s: lag after %d must be >= 0" % (what, d))
            if d == self.id:
                raise CollectiveError("%s: depends on itself" % what)
        if self.chunk_bytes is not None and (not isinstance(self.chunk_bytes, int)
                                             or self.chunk_bytes <= 0):
            raise CollectiveError("%s: chunk_bytes must be a positive integer" % what)
        n = len(self.ranks)
        if self.splits is not None:
            self._check_splits(what, n)
        if self.op == "all_reduce" and self.algo == "hd" and n & (n - 1):
            raise CollectiveError("%s: halving-doubling needs a power-of-two number of ranks, "
                                  "got %d (use the ring)" % (what, n))
        flow = self.largest_flow()
        if flow > MAX_FLOW_BYTES:
            raise CollectiveError("%s: %s of %d bytes over %d ranks makes a flow of %d bytes, "
                                  "above a message's %d" % (what, self.op, self.size, n, flow,
                                                            MAX_FLOW_BYTES))

    def _check_splits(self, what, n):
        if self.op != "all_to_all":
            raise CollectiveError("%s: splits are for all_to_all, not %s" % (what, self.op))
        if len(self.splits) != n or any(len(row) != n for row in self.splits):
            raise CollectiveError("%s: splits must be %d rows of %d byte counts (one per "
                                  "rank), got %r" % (what, n, n, [list(r) for r in self.splits]))
        for row in self.splits:
            for v in row:
                if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                    raise CollectiveError("%s: splits must be integers >= 0 bytes, got %r"
                                          % (what, v))
        big = max(sum(row) for row in self.splits)
        if self.size != big:
            raise CollectiveError("%s: an uneven all_to_all's size is its largest send buffer "
                                  "(the largest row of splits), %d bytes, not %d"
                                  % (what, big, self.size))

    def largest_flow(self) -> int:
        """Bytes of the largest flow ``expand`` makes of this collective (without making
        them: an all-to-all over thousands of ranks has millions)."""
        n, size, op = len(self.ranks), self.size, self.op
        if n == 1:
            return 0
        if self.splits is not None:
            return max(v for i, row in enumerate(self.splits) for j, v in enumerate(row)
                       if i != j)
        if op == "send" or (op == "broadcast" and self.algo == "tree"):
            return size
        if op == "all_reduce" and self.algo == "hd":
            return -(-size // 2)
        if op in ("broadcast", "reduce"):
            chunk = self.chunk_bytes or DEFAULT_CHUNK_BYTES
            pieces = max(1, -(-size // chunk))
            return -(-size // pieces)
        return -(-size // n)

    def key(self):
        """What makes two collectives the same call (ids included, dtype and tag not)."""
        return (self.id, self.op, self.ranks, self.size, self.algo,
                self.root if self.op in ROOTED else None, tuple(sorted(self.after)),
                self.start_ps, self.splits)

    def __eq__(self, other):
        if not isinstance(other, Collective):
            return NotImplemented
        return self.key() == other.key()

    def __hash__(self):
        return hash(self.key())

    def __repr__(self):
        return "Collective(%d %s/%s %d ranks %d B%s%s%s)" % (
            self.id, self.op, self.algo, len(self.ranks), self.size,
            " uneven" if self.splits is not None else "",
            " after %s" % (list(self.after),) if self.after else "",
            " start %d ps" % self.start_ps if self.start_ps else "")

    def as_dict(self) -> dict[str, Any]:
        d = {"id": self.id, "op": self.op, "ranks": list(self.ranks), "bytes": self.size,
             "algo": self.algo}
        if self.op in ROOTED:
            d["root"] = self.root
        if self.after:
            d["after"] = [[i, lag / 1e6] if lag else i for i, lag in self.after]
        if self.start_ps:
            d["start_us"] = self.start_ps / 1e6
        if self.dtype:
            d["dtype"] = self.dtype
        if self.tag:
            d["tag"] = self.tag
        if self.chunk_bytes:
            d["chunk_bytes"] = self.chunk_bytes
        if self.splits is not None:
            d["splits"] = [list(row) for row in self.splits]
        return d


class Plan:
    """Flows between rank positions: ``src[f]``, ``dst[f]``, ``size[f]`` and the flows
    ``deps[f]`` that must be delivered before flow ``f`` may start."""

    __slots__ = ("n", "src", "dst", "size", "deps")

    def __init__(self, n: int) -> None:
        self.n = n
        self.src: list[int] = []
        self.dst: list[int] = []
        self.size: list[int] = []
        self.deps: list[tuple[int, ...]] = []

    def add(self, src: int, dst: int, size: int, deps: Iterable[int] = ()) -> int:
        self.src.append(src)
        self.dst.append(dst)
        self.size.append(size)
        self.deps.append(tuple(deps))
        return len(self.src) - 1

    def __len__(self):
        return len(self.src)

    def bytes_sent(self) -> int:
        return sum(self.size)

    def steps(self) -> int:
        """The longest dependency chain, in flows (a ring all-reduce: 2(N-1))."""
        depth = [0] * len(self.src)
        for f, deps in enumerate(self.deps):         # deps always point backwards
            depth[f] = 1 + max((depth[d] for d in deps), default=0)
        return max(depth, default=0)


def chunks(size: int, n: int) -> list[int]:
    """``size`` bytes cut into n chunks differing by at most one byte."""
    q, r = divmod(size, n)
    return [q + 1 if c < r else q for c in range(n)]


def _ring_phase(plan, n, sizes, chunk_of, steps, prev):
    """``steps`` ring steps; ``chunk_of(i, s)`` is the chunk rank i sends in step s;
    ``prev[i]`` the flow that last delivered to rank i (or None)."""
    for s in range(steps):
        cur = [None] * n
        for i in range(n):
            j = (i + 1) % n
            dep = prev[i]
            cur[j] = plan.add(i, j, sizes[chunk_of(i, s)], () if dep is None else (dep,))
        prev = cur
    return prev


def ring_all_reduce(n, size):
    plan = Plan(n)
    sizes = chunks(size, n)
    prev = _ring_phase(plan, n, sizes, lambda i, s: (i - s) % n, n - 1, [None] * n)
    _ring_phase(plan, n, sizes, lambda i, s: (i + 1 - s) % n, n - 1, prev)
    return plan


def ring_reduce_scatter(n, size):
    plan = Plan(n)
    _ring_phase(plan, n, chunks(size, n), lambda i, s: (i - s - 1) % n, n - 1, [None] * n)
    return plan


def ring_all_gather(n, size):
    plan = Plan(n)
    _ring_phase(plan, n, chunks(size, n), lambda i, s: (i - s) % n, n - 1, [None] * n)
    return plan


def halving_doubling_all_reduce(n, size):
    if n & (n - 1):
        raise CollectiveError("halving-doubling needs a power-of-two number of ranks, got %d "
                              "(use the ring)" % n)
    plan = Plan(n)
    levels = n.bit_length() - 1
    prev = [None] * n
    order = list(range(levels)) + list(reversed(range(levels)))
    for k in order:
        part = chunks(size, 2 ** (k + 1))[0]      # the larger half at this level
        cur = [None] * n
        for i in range(n):
            p = i ^ (1 << k)
            dep = prev[i]
            cur[p] = plan.add(i, p, part, () if dep is None else (dep,))
        prev = cur
    return plan


def all_to_all(n, size, splits=None):
    """Every rank to every other at once: S/N each, or ``splits[i][j]`` bytes."""
    plan = Plan(n)
    sizes = chunks(size, n)
    for i in range(n):
        for j in range(n):
            if i != j:
                plan.add(i, j, sizes[j] if splits is None else splits[i][j])
    return plan


def ring_broadcast(n, size, root_pos, chunk_bytes, reverse=False):
    """The pipelined chain root -> root+1 -> ... (``reverse``: ... -> root, a reduce)."""
    plan = Plan(n)
    order = [(root_pos + k) % n for k in range(n)]
    if reverse:
        order = [(root_pos - k) % n for k in range(n)][::-1]
    nchunks = max(1, -(-size // chunk_bytes))
    last = [None] * (n - 1)              # per hop: the previous chunk's flow on it
    for part in chunks(size, nchunks):
        dep = None
        for h, (a, b) in enumerate(zip(order, order[1:])):
            deps = tuple(x for x in (dep, last[h]) if x is not None)
            dep = last[h] = plan.add(a, b, part, deps)
    return plan


def tree_broadcast(n, size, root_pos):
    """Binomial tree: in round k every rank holding the data sends it 2^k places on."""
    plan = Plan(n)
    got = {0: None}                      # relative position -> flow that delivered it
    k = 1
    while k < n:
        for rel in sorted(got):
            if rel < k and rel + k < n:
                dep = got[rel]
                got[rel + k] = plan.add((root_pos + rel) % n, (root_pos + rel + k) % n, size,
                                        () if dep is None else (dep,))
        k *= 2
    return plan


def direct_rooted(n, size, root_pos, to_root):
    plan = Plan(n)
    sizes = chunks(size, n)
    for i in range(n):
        if i != root_pos:
            plan.add(i, root_pos, sizes[i]) if to_root else plan.add(root_pos, i, sizes[i])
    return plan


def expand(coll: Collective) -> Plan:
    """The ``Plan`` of a ``Collective``; positions index ``coll.ranks``."""
    n = len(coll.ranks)
    if n == 1:
        return Plan(1)                   # nothing to move: done as soon as it may start
    op, algo, size = coll.op, coll.algo, coll.size
    if op == "all_reduce":
        return ring_all_reduce(n, size) if algo == "ring" else halving_doubling_all_reduce(n, size)
    if op == "reduce_scatter":
        return ring_reduce_scatter(n, size)
    if op == "all_gather":
        return ring_all_gather(n, size)
    if op == "all_to_all":
        return all_to_all(n, size, coll.splits)
    if op == "send":
        plan = Plan(2)
        plan.add(0, 1, size)
        return plan
    root = coll.ranks.index(coll.root)
    chunk = coll.chunk_bytes or DEFAULT_CHUNK_BYTES
    if op == "broadcast":
        return ring_broadcast(n, size, root, chunk) if algo == "ring" else \
            tree_broadcast(n, size, root)
    if op == "reduce":
        return ring_broadcast(n, size, root, chunk, reverse=True)
    return direct_rooted(n, size, root, to_root=(op == "gather"))


def check_trace(collectives: Sequence[Collective]) -> None:
    """Ids unique, every ``after`` names an earlier collective (so no cycles)."""
    seen = set()
    for c in collectives:
        if c.id in seen:
            raise CollectiveError("collective id %d appears twice" % c.id)
        for d, _ in c.after:
            if d not in seen:
                raise CollectiveError("collective %d: depends on %d, which is not an earlier "
                                      "collective of the trace" % (c.id, d))
        seen.add(c.id)
