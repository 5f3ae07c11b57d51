"""Workloads as data: lists of messages, and the generators of the standard patterns.

Every generator returns messages with ids ``1 .. n`` sorted by ``(start_ps, msg_id)``, and
draws every random choice from the ``random.Random`` it is handed, in a fixed order, so a
workload is a pure function of its arguments and seed.  Sizes are bytes (``0 < size < 2**32``,
the width of the wire's ``msg_len``); times are integer picoseconds.
"""

import math
import random as _random_module  # only for isinstance checks; never the global generator
import re
from collections.abc import Sequence

MAX_SIZE = 2 ** 32 - 1
MAX_ID = 2 ** 32 - 1


class TrafficError(ValueError):
    """A workload argument or a message that cannot be used; the message says which."""


class Message:
    """One message: ``size`` bytes from host ``src`` to host ``dst``, released at ``start_ps``.

    Treated as immutable data; equality compares all fields, so workloads can be compared
    after a round trip through a file.
    """

    __slots__ = ("msg_id", "src", "dst", "size", "start_ps")

    def __init__(self, msg_id: int, src: int, dst: int, size: int, start_ps: int = 0) -> None:
        for name, value in (("msg_id", msg_id), ("src", src), ("dst", dst), ("size", size),
                            ("start_ps", start_ps)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TrafficError("message %r: %s must be an integer, got %r"
                                   % (msg_id, name, value))
        if not 0 <= msg_id <= MAX_ID:
            raise TrafficError("message %d: msg_id must be in 0..2**32-1" % msg_id)
        if src < 0 or dst < 0:
            raise TrafficError("message %d: host ids must be >= 0, got %d->%d"
                               % (msg_id, src, dst))
        if src == dst:
            raise TrafficError("message %d: source and destination are both host %d"
                               % (msg_id, src))
        if not 0 < size <= MAX_SIZE:
            raise TrafficError("message %d: size must be in 1..2**32-1 bytes, got %d"
                               % (msg_id, size))
        if start_ps < 0:
            raise TrafficError("message %d: start_ps must be >= 0, got %d" % (msg_id, start_ps))
        self.msg_id = msg_id
        self.src = src
        self.dst = dst
        self.size = size
        self.start_ps = start_ps

    @classmethod
    def trusted(cls, msg_id: int, src: int, dst: int, size: int, start_ps: int) -> "Message":
        """Build without the checks, for generators and readers that validated their inputs
        already (an all-to-all over 1,024 hosts is a million messages)."""
        m = object.__new__(cls)
        m.msg_id = msg_id
        m.src = src
        m.dst = dst
        m.size = size
        m.start_ps = start_ps
        return m

    def key(self) -> tuple[int, int, int, int, int]:
        return (self.msg_id, self.src, self.dst, self.size, self.start_ps)

    def __eq__(self, other):
        if not isinstance(other, Message):
            return NotImplemented
        return self.key() == other.key()

    def __hash__(self):
        return hash(self.key())

    def __repr__(self):
        return "Message(%d, %d->%d, %d B, start %d ps)" % (
            self.msg_id, self.src, self.dst, self.size, self.start_ps)


# -- argument checks ------------------------------------------------------------------------

def _int_arg(func, name, value, lo, hi=None):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TrafficError("%s: %s must be an integer, got %r" % (func, name, value))
    if value < lo or (hi is not None and value > hi):
        rule = ">= %d" % lo if hi is None else "in %d..%d" % (lo, hi)
        raise TrafficError("%s: %s must be %s, got %d" % (func, name, rule, value))
    return value


def _rng_arg(func, rng):
    if not isinstance(rng, _random_module.Random):
        raise TrafficError("%s: rng must be a random.Random, got %r" % (func, rng))
    return rng


def _common(func, n_hosts, size, start_ps):
    _int_arg(func, "n_hosts", n_hosts, 2)
    _int_arg(func, "size", size, 1, MAX_SIZE)
    _int_arg(func, "start_ps", start_ps, 0)


# -- patterns -------------------------------------------------------------------------------

def permutation(n_hosts: int, size: int, rng: _random_module.Random,
                start_ps: int = 0) -> list[Message]:
    """A uniformly random derangement: each host sends one message to one other host and
    receives exactly one.  Message ``i + 1`` is sent by host ``i``.

    Drawn by rejecting shuffles that have a fixed point (about e ~ 2.7 shuffles on average),
    which keeps every derangement equally likely.
    """
    _common("permutation", n_hosts, size, start_ps)
    _rng_arg("permutation", rng)
    dst = list(range(n_hosts))
    while True:
        rng.shuffle(dst)
        if all(d != i for i, d in enumerate(dst)):
            break
    return [Message.trusted(i + 1, i, d, size, start_ps) for i, d in enumerate(dst)]


def incast(n_hosts: int, n_senders: int, size: int, rng: _random_module.Random,
           receiver: int | None = None, start_ps: int = 0) -> list[Message]:
    """``n_senders`` distinct random hosts each send ``size`` bytes to one ``receiver``
    (random if None).  Messages are numbered in ascending order of sender."""
    _common("incast", n_hosts, size, start_ps)
    _rng_arg("incast", rng)
    if isinstance(n_senders, bool) or not isinstance(n_senders, int):
        raise TrafficError("incast: n_senders must be an integer, got %r" % (n_senders,))
    if not 1 <= n_senders < n_hosts:
        raise TrafficError("incast: n_senders must be in 1..n_hosts-1 = 1..%d (the receiver "
                           "does not send), got %d" % (n_hosts - 1, n_senders))
    if receiver is None:
        receiver = rng.randrange(n_hosts)
    else:
        _int_arg("incast", "receiver", receiver, 0, n_hosts - 1)
    others = [h for h in range(n_hosts) if h != receiver]
    senders = sorted(rng.sample(others, n_senders))
    return [Message.trusted(i + 1, s, receiver, size, start_ps) for i, s in enumerate(senders)]


def all_to_all(n_hosts: int, size: int, start_ps: int = 0,
               hosts: Sequence[int] | None = None) -> list[Message]:
    """Every ordered pair of distinct hosts among ``hosts`` (default: all), one message each:
    n(n-1) messages, numbered source-major in the order of ``hosts``."""
    _common("all_to_all", n_hosts, size, start_ps)
    if hosts is None:
        hosts = list(range(n_hosts))
    else:
        hosts = list(hosts)
        for h in hosts:
            _int_arg("all_to_all", "host in hosts", h, 0, n_hosts - 1)
        if len(set(hosts)) != len(hosts):
            raise TrafficError("all_to_all: hosts has duplicates: %r" % (hosts,))
        if len(hosts) < 2:
            raise TrafficError("all_to_all: needs at least 2 hosts, got %r" % (hosts,))
    out = []
    mid = 0
    for s in hosts:
        for d in hosts:
            if s != d:
                mid += 1
                out.append(Message.trusted(mid, s, d, size, start_ps))
    return out


def uniform_random(n_hosts: int, n_messages: int, rng: _random_module.Random,
                   size_dist: "SizeDist", load: float, link_gbps: float,
                   start_ps: int = 0) -> list[Message]:
    """``n_messages`` messages between uniformly random pairs (src != dst), arriving as one
    global Poisson process.

    Its rate makes the mean offered load per host ``load`` times the host link rate:
    ``rate * mean_size * 8 / n_hosts = load * link_gbps * 1e9`` b/s, i.e. a mean gap of
    ``8000 * mean_size / (load * link_gbps * n_hosts)`` ps.  ``size_dist`` is a ``SizeDist``
    or a spec string for ``parse_size_dist``.  Per message the draws are, in order: the gap,
    the source, the destination, the size.  The first message arrives one gap after
    ``start_ps``.
    """
    func = "uniform_random"
    _int_arg(func, "n_hosts", n_hosts, 2)
    _int_arg(func, "n_messages", n_messages, 0)
    _int_arg(func, "start_ps", start_ps, 0)
    _rng_arg(func, rng)
    if isinstance(size_dist, str):
        size_dist = parse_size_dist(size_dist)
    elif not isinstance(size_dist, SizeDist):
        raise TrafficError("%s: size_dist must be a SizeDist or a spec string, got %r"
                           % (func, size_dist))
    for name, value in (("load", load), ("link_gbps", link_gbps)):
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not 0 < value < math.inf):
            raise TrafficError("%s: %s must be a finite number > 0, got %r" % (func, name, value))
    mean_gap = 8000.0 * size_dist.mean() / (load * link_gbps * n_hosts)
    lambd = 1.0 / mean_gap
    t = float(start_ps)
    out = []
    for i in range(n_messages):
        t += rng.expovariate(lambd)
        src = rng.randrange(n_hosts)
        dst = rng.randrange(n_hosts - 1)
        if dst >= src:
            dst += 1
        out.append(Message.trusted(i + 1, src, dst, size_dist.sample(rng), int(t)))
    return out


# -- size distributions ---------------------------------------------------------------------

def _clamp(x):
    """A drawn size as an integer byte count within 1..MAX_SIZE."""
    if x >= MAX_SIZE:
        return MAX_SIZE
    n = int(round(x))
    return n if n >= 1 else 1


class SizeDist:
    """A message-size distribution: ``sample(rng)`` an int of bytes, ``mean()`` its mean.

    ``spec`` is the string ``parse_size_dist`` accepts for it, so a run can record it.
    """

    __slots__ = ("spec",)

    def sample(self, rng: _random_module.Random) -> int:
        raise NotImplementedError

    def mean(self) -> float:
        raise NotImplementedError

    def __repr__(self):
        return "SizeDist(%r)" % self.spec

    def __str__(self):
        return self.spec


class FixedSize(SizeDist):
    __slots__ = ("size",)

    def __init__(self, size):
        self.size = size
        self.spec = "fixed:%d" % size

    def sample(self, rng):
        return self.size

    def mean(self):
        return float(self.size)


class UniformSize(SizeDist):
    """Integers ``lo .. hi`` inclusive, equally likely."""

    __slots__ = ("lo", "hi")

    def __init__(self, lo, hi):
        self.lo = lo
        self.hi = hi
        self.spec = "uniform:%d:%d" % (lo, hi)

    def sample(self, rng):
        return rng.randint(self.lo, self.hi)

    def mean(self):
        return (self.lo + self.hi) / 2.0


class ExpSize(SizeDist):
    """Exponential with the given mean, rounded to whole bytes, at least 1 byte.

    ``mean()`` reports the nominal mean; rounding and the 1-byte floor move the true mean by
    well under a byte for any mean worth simulating.
    """

    __slots__ = ("mean_bytes",)

    def __init__(self, mean_bytes):
        self.mean_bytes = mean_bytes
        self.spec = "exp:%r" % mean_bytes

    def sample(self, rng):
        return _clamp(rng.expovariate(1.0 / self.mean_bytes))

    def mean(self):
        return float(self.mean_bytes)


class LognormalSize(SizeDist):
    """Lognormal with the given median and sigma (of the underlying normal), rounded to whole
    bytes within 1..2**32-1; mean = median * exp(sigma^2 / 2)."""

    __slots__ = ("median", "sigma")

    def __init__(self, median, sigma):
        self.median = median
        self.sigma = sigma
        self.spec = "lognormal:%r:%r" % (median, sigma)

    def sample(self, rng):
        return _clamp(rng.lognormvariate(math.log(self.median), self.sigma))

    def mean(self):
        return self.median * math.exp(self.sigma * self.sigma / 2.0)


_INT_RE = re.compile(r"^[0-9][0-9_]*$")


def _size_field(spec, field, text):
    text = text.strip()
    if not _INT_RE.match(text):
        raise TrafficError("size distribution %r: %s must be a whole number of bytes, got %r"
                           % (spec, field, text))
    value = int(text)
    if not 1 <= value <= MAX_SIZE:
        raise TrafficError("size distribution %r: %s must be in 1..2**32-1 bytes, got %d"
                           % (spec, field, value))
    return value


def _real_field(spec, field, text, lo_exclusive=0.0):
    try:
        value = float(text)
    except ValueError:
        raise TrafficError("size distribution %r: %s must be a number, got %r"
                           % (spec, field, text)) from None
    if not lo_exclusive < value < math.inf:
        raise TrafficError("size distribution %r: %s must be a finite number > %g, got %r"
                           % (spec, field, lo_exclusive, text))
    return value


def parse_size_dist(spec: str) -> SizeDist:
    """A ``SizeDist`` from a spec: ``N`` or ``fixed:N``, ``uniform:LO:HI``, ``exp:MEAN``,
    ``lognormal:MEDIAN:SIGMA`` (sizes in bytes)."""
    if not isinstance(spec, str):
        raise TrafficError("size distribution must be a string, got %r" % (spec,))
    parts = [p.strip() for p in spec.strip().split(":")]
    kind = parts[0].lower()
    args = parts[1:]
    forms = "N, fixed:N, uniform:LO:HI, exp:MEAN or lognormal:MEDIAN:SIGMA"
    if len(parts) == 1 and _INT_RE.match(kind):
        return FixedSize(_size_field(spec, "size", kind))
    arity = {"fixed": 1, "uniform": 2, "exp": 1, "lognormal": 2}
    if kind not in arity:
        raise TrafficError("size distribution %r: unknown kind %r (expected %s)"
                           % (spec, kind, forms))
    if len(args) != arity[kind]:
        raise TrafficError("size distribution %r: %s takes %d parameter(s), got %d (expected %s)"
                           % (spec, kind, arity[kind], len(args), forms))
    if kind == "fixed":
        return FixedSize(_size_field(spec, "size", args[0]))
    if kind == "uniform":
        lo = _size_field(spec, "LO", args[0])
        hi = _size_field(spec, "HI", args[1])
        if lo > hi:
            raise TrafficError("size distribution %r: LO %d is above HI %d" % (spec, lo, hi))
        return UniformSize(lo, hi)
    if kind == "exp":
        mean = _real_field(spec, "MEAN", args[0])
        if mean < 1:
            raise TrafficError("size distribution %r: MEAN must be at least 1 byte, got %r"
                               % (spec, args[0]))
        return ExpSize(mean)
    median = _real_field(spec, "MEDIAN", args[0])
    if median < 1:
        raise TrafficError("size distribution %r: MEDIAN must be at least 1 byte, got %r"
                           % (spec, args[0]))
    sigma = _real_field(spec, "SIGMA", args[1], lo_exclusive=-1.0)
    if sigma < 0:
        raise TrafficError("size distribution %r: SIGMA must be >= 0, got %r" % (spec, args[1]))
    return LognormalSize(median, sigma)
