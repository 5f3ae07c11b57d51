"""Fault schedules: which links fail, when, how, and when the fabric learns of it.

A schedule is data, like traffic: the runtimes (simulation, UDP, Mininet) play it.  One
entry per ``--fail SPEC`` (repeatable) or per line of a schedule file (``--fail-file``;
``#`` starts a comment, blank lines are skipped).  An entry is ::

    KIND:TARGET@TIME[,OPTION=VALUE...]

    link:agg0_0-core0@50us                  the link(s) between two nodes, down at 50 us
    link:17@50us,restore=200us              link number 17, back up at 200 us
    switch:agg3_1@50us                      every link of a switch
    tier:agg-core:25%@50us                  a seeded 25% of the links of one layer
    tier:core:4@50us                        4 links with a core switch at one end
    link:edge0_0-agg0_1@50us,flap=10us/40us,until=1ms    down 10 us, up 40 us, repeated
    link:agg1_0-core2@0us,gray=1%           up, but silently drops 1% of its packets

Times take a unit (``ps``, ``ns``, ``us``, ``ms``, ``s``; a bare number is us) and are
exact integer picoseconds.  Options:

``restore=T``
    the links come back up at T (a gray failure stops dropping).
``flap=DOWN/UP`` with ``until=T``
    from TIME on, down for DOWN then up for UP, repeated while a cycle starts before T.
``gray=P``
    the links stay up and are never detected, but drop a fraction P of what they carry
    (``1%`` or ``0.01``), both directions.
``detect=T`` or ``detect=never``
    how long after a change the switches learn of it and recompute their routes (the
    runtime's default otherwise: ``--detect-us``).  Until then a dead link black-holes
    what is routed to it; a restored link carries nothing new until it is learnt.
``seed=S``
    the seed choosing a ``tier`` entry's links (default: the run's seed).

A ``tier`` target is a layer name as ``Topology.link_tier_name`` gives it (``host-edge``,
``edge-agg``, ``agg-core``, ``leaf-spine``, ...) or a switch kind (every link with an end
of that kind), then a share: ``25%``, ``0.25`` (a fraction, rounded to whole links, at
least one) or ``8`` (a count).  Errors name the entry (``--fail 2`` or ``FILE:LINE``) and
the offending text.

``FaultSchedule.link_events()`` lists what happens to the links (down, up, gray on and
off) and ``route_events(default_detect_ps)`` when the switches learn each change; both are
sorted by time and carry the entry that caused them, for per-failure counters.

Triggered by the traffic (``after_packets``, ``gse run --fail-after-packets N``): the
schedule's times then count not from the run's time 0 but from the moment a node at an
end of the schedule's links has sent ``N`` packets over them, so that a failure meant to
hit traffic does, however slowly a loaded machine gets the traffic going.  The UDP and
Mininet runtimes play such a schedule; the simulation needs none (its clock is the
traffic's) and refuses it.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable

from topologies.routing import Routes

TYPE_CHECKING = False   # typing's own, without importing typing (2.9 ms of a start)
if TYPE_CHECKING:
    from topologies.topology import Topology

UNITS_PS = {"ps": 1, "ns": 1_000, "us": 1_000_000, "µs": 1_000_000, "ms": 1_000_000_000,
            "s": 1_000_000_000_000}
KINDS = ("link", "switch", "tier")
OPTIONS = ("restore", "flap", "until", "gray", "detect", "seed")
NEVER = -1

# link event actions
DOWN = "down"
UP = "up"
GRAY = "gray"          # value: the drop fraction (0 ends a gray failure)

_TIME_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(ps|ns|us|µs|ms|s)?\s*$")


class FaultError(ValueError):
    """A fault entry that cannot be used: names where it came from and what is wrong."""

    def __init__(self, where, text, problem):
        self.where = where
        self.text = text
        self.problem = problem
        # the entry's text, when there is one (a file that cannot be read has none)
        super().__init__("%s: %s: %r" % (where, problem, text) if text
                         else "%s: %s" % (where, problem))


def parse_time_ps(text: str) -> int | None:
    """``50us`` -> 50_000_000; None if ``text`` is not a time of whole picoseconds."""
    from decimal import Decimal, InvalidOperation   # (here: only a schedule's text needs it)
    m = _TIME_RE.match(text)
    if not m:
        return None
    try:
        value = Decimal(m.group(1)) * UNITS_PS[m.group(2) or "us"]
    except InvalidOperation:
        return None
    if value != value.to_integral_value():
        return None
    return int(value)


class FaultEntry:
    """One entry of a schedule, resolved against a topology (see the module docstring)."""

    __slots__ = ("index", "text", "where", "kind", "target", "links", "at_ps", "restore_ps",
                 "flap_down_ps", "flap_up_ps", "until_ps", "gray", "detect_ps")

    def __init__(self, index, text, where):
        self.index = index
        self.text = text
        self.where = where
        self.kind = None
        self.target = None
        self.links = ()           # link indices, ascending
        self.at_ps = 0
        self.restore_ps = NEVER
        self.flap_down_ps = 0
        self.flap_up_ps = 0
        self.until_ps = NEVER
        self.gray = 0.0
        self.detect_ps = None     # None: the runtime's default; NEVER: not detected

    def intervals(self):
        """[(down_ps, up_ps or NEVER)]: when the entry holds its links down (or gray)."""
        if self.flap_down_ps:
            out = []
            t = self.at_ps
            while t < self.until_ps:
                out.append((t, t + self.flap_down_ps))
                t += self.flap_down_ps + self.flap_up_ps
            return out
        return [(self.at_ps, self.restore_ps)]

    def describe(self, topo):
        """A JSON-ready description (what a run summary lists under ``failures``)."""
        d = {"entry": self.index, "spec": self.text, "where": self.where, "kind": self.kind,
             "at_us": self.at_ps / 1e6, "links": [link_name(topo, li) for li in self.links]}
        if self.restore_ps != NEVER:
            d["restore_us"] = self.restore_ps / 1e6
        if self.flap_down_ps:
            d["flap_us"] = [self.flap_down_ps / 1e6, self.flap_up_ps / 1e6]
            d["until_us"] = self.until_ps / 1e6
        if self.gray:
            d["gray"] = self.gray
        if self.detect_ps is not None:
            d["detect_us"] = None if self.detect_ps == NEVER else self.detect_ps / 1e6
        return d


def link_name(topo: "Topology", li: int) -> str:
    link = topo.links[li]
    return "%s-%s" % (topo.nodes[link.a].name, topo.nodes[link.b].name)


class FaultSchedule:
    """The entries of one run, in the order given; ``after_packets``: None (times from
    the run's time 0) or the trigger, a count of packets over its ``links()``."""

    def __init__(self, entries: Iterable["FaultEntry"] = (),
                 after_packets: int | None = None) -> None:
        self.entries = list(entries)
        if after_packets is not None and (isinstance(after_packets, bool) or
                                          not isinstance(after_packets, int) or
                                          after_packets < 1):
            raise ValueError("--fail-after-packets must be a whole number >= 1, got %r"
                             % (after_packets,))
        self.after_packets = after_packets

    def __bool__(self):
        return bool(self.entries)

    def __len__(self):
        return len(self.entries)

    def links(self):
        """Every link some entry touches, ascending."""
        return sorted({li for e in self.entries for li in e.links})

    def link_events(self):
        """[(t_ps, link, action, value, entry index)], sorted by time then entry order:
        ``DOWN``/``UP`` (value 0) for failures, ``GRAY`` with the drop fraction (0 when it
        ends) for gray failures."""
        out = []
        for e in self.entries:
            for down, up in e.intervals():
                for li in e.links:
                    if e.gray:
                        out.append((down, e.index, li, GRAY, e.gray))
                        if up != NEVER:
                            out.append((up, e.index, li, GRAY, 0.0))
                    else:
                        out.append((down, e.index, li, DOWN, 0))
                        if up != NEVER:
                            out.append((up, e.index, li, UP, 0))
        out.sort(key=lambda ev: (ev[0], ev[1], ev[2], ev[3] == DOWN))
        return [(t, li, action, value, idx) for t, idx, li, action, value in out]

    def route_events(self, default_detect_ps):
        """[(t_ps, link, DOWN or UP, entry index)]: when the switches learn of each change.
        Gray failures and entries with ``detect=never`` are never learnt."""
        out = []
        for e in self.entries:
            if e.gray:
                continue
            detect = default_detect_ps if e.detect_ps is None else e.detect_ps
            if detect is None or detect < 0:
                continue
            for down, up in e.intervals():
                for li in e.links:
                    out.append((down + detect, e.index, li, DOWN))
                    if up != NEVER:
                        out.append((up + detect, e.index, li, UP))
        out.sort(key=lambda ev: (ev[0], ev[1], ev[2], ev[3] == DOWN))
        return [(t, li, action, idx) for t, idx, li, action in out]

    def down_sets(self):
        """[(t_ps, frozenset of links down from t on)] at every change of the actual
        state (gray links count as up), starting with (0, frozenset())."""
        count = {}
        out = [(0, frozenset())]
        for t, li, action, _, _ in self.link_events():
            if action == DOWN:
                count[li] = count.get(li, 0) + 1
            elif action == UP:
                count[li] -= 1
            else:
                continue
            now = frozenset(k for k, v in count.items() if v > 0)
            if out[-1][0] == t:
                out[-1] = (t, now)
            elif now != out[-1][1]:
                out.append((t, now))
        return out

    def describe(self, topo):
        return [e.describe(topo) for e in self.entries]

    def route_timeline(self, topo, default_detect_ps):
        """[(t_ps, entry index, [(switch, host, hops), ...])]: what the switches' next-hop
        tables become, and when, as each change is learnt (``route_events``); only the
        entries that change (``topologies.routing.Routes``), possibly none.  Every
        runtime replays the same timeline."""
        routes = Routes(topo)
        holders = {}
        out = []
        for t, li, action, idx in self.route_events(default_detect_ps):
            holders[li] = holders.get(li, 0) + (1 if action == DOWN else -1)
            changes = routes.set_down([k for k, v in holders.items() if v > 0])
            out.append((t, idx, changes))
        return out

    def port_timeline(self, topo):
        """{(node, port): [(t_ps, action, value, entry index)]}: what happens to each end
        of every link the schedule touches (both directions fail together)."""
        out = {}
        for t, li, action, value, idx in self.link_events():
            link = topo.links[li]
            for node, port in ((link.a, link.a_port), (link.b, link.b_port)):
                out.setdefault((node, port), []).append((t, action, value, idx))
        return out


# -- parsing ------------------------------------------------------------------------------

def parse_fault(text: str, topo: "Topology", seed: int = 1, index: int = 0,
                where: str = "--fail") -> FaultEntry:
    """One entry from its text; ``FaultError`` names ``where`` and what is wrong."""
    e = FaultEntry(index, text.strip(), where)
    spec = e.text
    if "@" not in spec:
        raise FaultError(where, text, "expected KIND:TARGET@TIME[,OPTION=VALUE...]")
    head, _, tail = spec.partition("@")
    parts = tail.split(",")
    at = parse_time_ps(parts[0])
    if at is None:
        raise FaultError(where, text, "bad time %r (a number with ps, ns, us, ms or s)"
                         % parts[0].strip())
    e.at_ps = at
    options = {}
    for part in parts[1:]:
        name, eq, value = part.partition("=")
        name = name.strip()
        if not eq or name not in OPTIONS:
            raise FaultError(where, text, "unknown option %r (known: %s)"
                             % (part.strip(), ", ".join(OPTIONS)))
        if name in options:
            raise FaultError(where, text, "option %r given twice" % name)
        options[name] = value.strip()
    kind, colon, target = head.partition(":")
    kind = kind.strip()
    if kind not in KINDS or not colon or not target.strip():
        raise FaultError(where, text, "unknown kind %r (known: %s)"
                         % (head.strip(), ", ".join(k + ":TARGET" for k in KINDS)))
    e.kind = kind
    e.target = target.strip()
    entry_seed = options.get("seed", seed)
    if kind == "link":
        e.links = _link_target(e.target, topo, where, text)
    elif kind == "switch":
        e.links = _switch_target(e.target, topo, where, text)
    else:
        e.links = _tier_target(e.target, topo, entry_seed, where, text)
    _apply_options(e, options, where, text)
    return e


def _link_target(target, topo, where, text):
    if target.isdigit():
        li = int(target)
        if li >= len(topo.links):
            raise FaultError(where, text, "no link %d (links 0..%d)" % (li, len(topo.links) - 1))
        return (li,)
    for i, ch in enumerate(target):
        if ch != "-":
            continue
        a, b = target[:i].strip(), target[i + 1:].strip()
        if a in _names(topo) and b in _names(topo):
            ia, ib = topo.node_id(a), topo.node_id(b)
            links = tuple(sorted(li for li in topo.nodes[ia].ports
                                 if ib in (topo.links[li].a, topo.links[li].b)))
            if not links:
                raise FaultError(where, text, "no link between %s and %s" % (a, b))
            return links
    raise FaultError(where, text, "link target %r is not NODE-NODE (two node names) or a "
                     "link number" % target)


def _names(topo):
    return {node.name for node in topo.nodes}


def _switch_target(target, topo, where, text):
    if target not in _names(topo):
        raise FaultError(where, text, "no node named %r" % target)
    node = topo.nodes[topo.node_id(target)]
    if node.kind == "host":
        raise FaultError(where, text, "%r is a host; fail its link (link:%s-...) instead"
                         % (target, target))
    return tuple(sorted(node.ports))


def _tier_target(target, topo, seed, where, text):
    layer, colon, share = target.rpartition(":")
    if not colon or not layer:
        raise FaultError(where, text, "tier target is LAYER:SHARE (e.g. agg-core:25%)")
    layers = {}
    for link in topo.links:
        layers.setdefault(topo.link_tier_name(link), []).append(link.index)
    kinds = {n.kind for n in topo.nodes if n.kind != "host"}
    if layer in layers:
        candidates = layers[layer]
    elif layer in kinds:
        candidates = [link.index for link in topo.links
                      if layer in (topo.nodes[link.a].kind, topo.nodes[link.b].kind)]
    else:
        raise FaultError(where, text, "no layer or switch kind %r (layers: %s; kinds: %s)"
                         % (layer, ", ".join(sorted(layers)), ", ".join(sorted(kinds))))
    count = _share(share.strip(), len(candidates))
    if count is None:
        raise FaultError(where, text, "share %r is not N%%, a fraction in (0, 1] or a count "
                         "in 1..%d" % (share, len(candidates)))
    rng = random.Random("%s/faults/%s" % (seed, target))
    return tuple(sorted(rng.sample(sorted(candidates), count)))


def _share(text, n):
    try:
        if text.endswith("%"):
            frac = float(text[:-1]) / 100.0
        elif text.isdigit():
            count = int(text)
            return count if 1 <= count <= n else None
        else:
            frac = float(text)
    except ValueError:
        return None
    if not 0.0 < frac <= 1.0:
        return None
    return max(1, min(n, int(round(frac * n))))


def _fraction(text):
    try:
        value = float(text[:-1]) / 100.0 if text.endswith("%") else float(text)
    except ValueError:
        return None
    return value if 0.0 < value <= 1.0 else None


def _apply_options(e, options, where, text):
    def time_of(name):
        t = parse_time_ps(options[name])
        if t is None:
            raise FaultError(where, text, "bad %s time %r" % (name, options[name]))
        return t
    if "restore" in options:
        e.restore_ps = time_of("restore")
        if e.restore_ps <= e.at_ps:
            raise FaultError(where, text, "restore must come after the failure time")
    if "flap" in options:
        down, slash, up = options["flap"].partition("/")
        d, u = parse_time_ps(down), parse_time_ps(up)
        if not slash or not d or u is None or u <= 0:
            raise FaultError(where, text, "flap is DOWN/UP, two positive times (e.g. "
                             "10us/40us)")
        if "until" not in options:
            raise FaultError(where, text, "flap needs until=TIME (when the flapping stops)")
        if "restore" in options:
            raise FaultError(where, text, "flap and restore exclude each other")
        e.flap_down_ps, e.flap_up_ps = d, u
        e.until_ps = time_of("until")
        if e.until_ps <= e.at_ps:
            raise FaultError(where, text, "until must come after the first failure time")
    elif "until" in options:
        raise FaultError(where, text, "until goes with flap (use restore= to end a failure)")
    if "gray" in options:
        e.gray = _fraction(options["gray"])
        if e.gray is None:
            raise FaultError(where, text, "gray is a drop fraction in (0, 1]: 1%% or 0.01, "
                             "got %r" % options["gray"])
        if "detect" in options:
            raise FaultError(where, text, "a gray failure is never detected: drop detect=")
    if "detect" in options:
        value = options["detect"]
        if value == "never":
            e.detect_ps = NEVER
        else:
            e.detect_ps = time_of("detect")


def parse_faults(specs: Iterable[str], topo: "Topology", seed: int = 1,
                 start: int = 0) -> list[FaultEntry]:
    """Entries from ``--fail`` texts (named ``--fail 1``, ``--fail 2``, ...)."""
    return [parse_fault(text, topo, seed, start + i, "--fail %d" % (i + 1))
            for i, text in enumerate(specs)]


def read_fault_file(path: str, topo: "Topology", seed: int = 1,
                    start: int = 0) -> list[FaultEntry]:
    """Entries from a schedule file, one per line (``FILE:LINE`` in errors)."""
    try:
        with open(path) as f:
            lines = f.readlines()
    except OSError as exc:
        raise FaultError(path, "", "cannot read: %s" % (exc.strerror or exc)) from None
    out: list[FaultEntry] = []
    for lineno, line in enumerate(lines, 1):
        body = line.split("#", 1)[0].strip()
        if body:
            out.append(parse_fault(body, topo, seed, start + len(out),
                                   "%s:%d" % (path, lineno)))
    return out


def build_schedule(topo: "Topology", specs: Iterable[str] = (), files: Iterable[str] = (),
                   seed: int = 1, after_packets: int | None = None) -> FaultSchedule:
    """The schedule of a run: ``--fail`` entries first, then each file's, in order;
    ``after_packets``: its times count from the trigger (see the module's docstring)."""
    entries = parse_faults(specs, topo, seed)
    for path in files:
        entries.extend(read_fault_file(path, topo, seed, len(entries)))
    return FaultSchedule(entries, after_packets)
