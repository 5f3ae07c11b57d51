"""The compiled build (Cython) and the pure-Python reference are one behaviour.

The whole suite runs twice in CI: as is (the compiled build, which must then really be
loaded) and with ``GSE_PURE_PYTHON=1``.  Here: the build that runs is the one asked for
(yarl's test against a silent fallback), the ``.pxd`` files still describe their sources,
the event queue's ``.pyx`` twin runs events in the reference's order, and a small
simulation gives identical results in both builds.
"""

import ast
import heapq
import importlib
import importlib.machinery
import importlib.util
import json
import os
import random
import re
import subprocess
import sys

import pytest

from gse import _build

ROOT = _build.ROOT
HAS_PXD = os.path.isdir(os.path.join(ROOT, "cython"))


def _module_file(name):
    return os.path.join(ROOT, *name.split(".")) + ".py"


# A twin test compares the compiled module with its pure reference; in the pure-Python
# pass both sides are the reference, so it would compare the module with itself.
twin = pytest.mark.skipif(_build.build() != "compiled",
                          reason="compares the compiled twin with the pure reference: in the "
                                 "pure-Python pass both sides are the reference")


# -- the build that runs is the build that was asked for -----------------------------------

def test_the_build_asked_for_is_the_build_loaded():
    loaded = _build.loaded_from()
    if _build.pure_requested():
        assert _build.build() == "pure"
        assert set(loaded.values()) == {"pure"}, loaded
    else:
        # Like yarl: unless GSE_PURE_PYTHON=1, the extensions must have been built and must
        # be the modules in use.  A missing, stale or unloadable build fails here, with why.
        assert _build.build() == "compiled", _build.STATE.reason
        fell_back = sorted(n for n, how in loaded.items() if how != "compiled")
        assert not fell_back, "compiled build expected, pure modules loaded: %s" % fell_back


def test_describe_names_the_build():
    text = _build.describe()
    assert text.startswith(_build.build() + " build")
    info = _build.info()
    assert info["consistent"] and info["build"] == _build.build()
    assert "build: %s" % _build.build() in _build.format_info(info)


def test_decide_on_a_tree(tmp_path):
    """Pure when asked, when nothing was built, when a source changed after the build."""
    root = str(tmp_path)
    for name in _build.MODULES:
        for rel in _build.sources_of(name, ROOT):
            dst = os.path.join(root, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(os.path.join(ROOT, rel), "rb") as f, open(dst, "wb") as g:
                g.write(f.read())
    assert _build.decide(root, {"GSE_PURE_PYTHON": "1"})[0] == "pure"
    build, reason, _ = _build.decide(root, {})
    assert build == "pure" and "no compiled build" in reason
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    for pkg in _build.PACKAGES + (_build.MANIFEST_PACKAGE,):
        os.makedirs(_build.compiled_dir(pkg, root), exist_ok=True)
    manifest = {"cython": "test", "sources": _build.source_digests(root)}
    with open(os.path.join(_build.compiled_dir(_build.MANIFEST_PACKAGE, root), _build.MANIFEST),
              "w") as f:
        json.dump(manifest, f)
    build, reason, _ = _build.decide(root, {})
    assert build == "pure" and "missing for this Python" in reason
    for name in _build.MODULES:
        pkg, _, mod = name.rpartition(".")
        open(os.path.join(_build.compiled_dir(pkg, root), mod + suffix), "w").close()
    assert _build.decide(root, {})[0] == "compiled"
    assert _build.decide(root, {"GSE_PURE_PYTHON": "0"})[0] == "compiled"
    with open(os.path.join(root, "gse", "runtimes", "sim", "network.py"), "a") as f:
        f.write("\n# edited after the build\n")
    build, reason, _ = _build.decide(root, {})
    assert build == "pure" and "stale" in reason and "gse/runtimes/sim/network.py" in reason


def test_decide_stats_stamped_sources_and_still_sees_an_edit(tmp_path, monkeypatch):
    """A built tree's sources, once hashed right, are stamped (``STAMPS``) and only stat'ed
    at the next start; an edit is still seen: one that keeps the size and sets the mtime
    back (ctime changes), one that replaces the file (another inode), a stale stamp file."""
    root = str(tmp_path)
    for name in _build.MODULES:
        for rel in _build.sources_of(name, ROOT):
            dst = os.path.join(root, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(os.path.join(ROOT, rel), "rb") as f, open(dst, "wb") as g:
                g.write(f.read())
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    for pkg in _build.PACKAGES + (_build.MANIFEST_PACKAGE,):
        os.makedirs(_build.compiled_dir(pkg, root), exist_ok=True)
    mdir = _build.compiled_dir(_build.MANIFEST_PACKAGE, root)
    with open(os.path.join(mdir, _build.MANIFEST), "w") as f:
        json.dump({"cython": "test", "sources": _build.source_digests(root)}, f)
    for name in _build.MODULES:
        pkg, _, mod = name.rpartition(".")
        open(os.path.join(_build.compiled_dir(pkg, root), mod + suffix), "w").close()
    hashed = []
    real = _build.digest
    monkeypatch.setattr(_build, "digest", lambda p: hashed.append(p) or real(p))
    monkeypatch.setattr(_build, "RACY_NS", 0)          # the copies are seconds old
    n = len(_build.source_digests(root))
    hashed.clear()
    assert _build.decide(root, {})[0] == "compiled" and len(hashed) == n
    stamps = os.path.join(mdir, _build.STAMPS)
    assert len(json.load(open(stamps))) == n
    hashed.clear()
    assert _build.decide(root, {})[0] == "compiled" and hashed == []
    # the same size, the mtime set back: ctime tells
    path = os.path.join(root, "gse", "runtimes", "sim", "eventq.py")
    st = os.stat(path)
    with open(path, "rb") as f:
        text = f.read()
    with open(path, "wb") as f:
        f.write(text.replace(b"heappop", b"heapPOP", 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_size == st.st_size and os.stat(path).st_mtime_ns == st.st_mtime_ns
    build, reason, _ = _build.decide(root, {})
    assert build == "pure" and "stale" in reason and "gse/runtimes/sim/eventq.py" in reason
    with open(path, "wb") as f:                        # back as built: compiled again
        f.write(text)
    assert _build.decide(root, {})[0] == "compiled"
    # replaced by another file (a checkout), its stat copied over
    other = os.path.join(root, "gse", "wire", "packet.py")
    st = os.stat(other)
    with open(other, "rb") as f:
        text = f.read()
    with open(other + ".new", "wb") as f:
        f.write(text.replace(b"def ", b"def  ", 1)[:-1])
    os.utime(other + ".new", ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(other + ".new", other)
    build, reason, _ = _build.decide(root, {})
    assert build == "pure" and "gse/wire/packet.py" in reason
    with open(other, "wb") as f:
        f.write(text)
    # a stamp file that lies (the sources' stats, another digest) is not believed alone
    assert _build.decide(root, {})[0] == "compiled"
    with open(os.path.join(mdir, _build.MANIFEST), "w") as f:
        json.dump({"cython": "test", "sources": dict(
            _build.source_digests(root), **{"gse/wire/packet.py": "0" * 64})}, f)
    build, reason, _ = _build.decide(root, {})
    assert build == "pure" and "gse/wire/packet.py" in reason


# -- the .pxd files still describe their sources ------------------------------------------

_CLASS = re.compile(r"^cdef class (\w+)(?:\((\w+)\))?\s*:")
_METHOD = re.compile(r"^\s+c?p?def\s[^(]*?\b(\w+)\(")
_ATTR = re.compile(r"^\s+cdef\s+(?:public\s+|readonly\s+)?[\w .*\"\[\]:]+?\b(\w+)\s*$")


def _pxd_classes(path):
    """{class: (attributes, methods)} declared in a .pxd."""
    out, cur = {}, None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n").split("#")[0].rstrip()
            m = _CLASS.match(line)
            if m:
                cur = out[m.group(1)] = (set(), set())
                continue
            if not line.strip() or line.lstrip().startswith("@"):
                continue
            if not line.startswith(" "):
                cur = None
                continue
            if cur is None:
                continue
            m = _METHOD.match(line)
            if m:
                cur[1].add(m.group(1))
                continue
            m = _ATTR.match(line)
            if m:
                cur[0].add(m.group(1))
    return out


def _py_classes(path):
    """{class: (__slots__, methods)} of a module's source."""
    with open(path) as f:
        tree = ast.parse(f.read())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            slots, methods = set(), set()
            for item in node.body:
                if (isinstance(item, ast.Assign) and len(item.targets) == 1
                        and getattr(item.targets[0], "id", None) == "__slots__"):
                    slots = set(ast.literal_eval(item.value))
                elif isinstance(item, ast.FunctionDef):
                    methods.add(item.name)
            out[node.name] = (slots, methods)
    return out


_WITH_PXD = [n for n, twin in _build.MODULES.items() if not twin and os.path.exists(
    os.path.join(ROOT, "cython", *n.split(".")) + ".pxd")]


@pytest.mark.skipif(not HAS_PXD, reason="cython/ sources not present (installed from a wheel)")
@pytest.mark.parametrize("name", _WITH_PXD)
def test_pxd_describes_its_source(name):
    """Every attribute of a compiled class is declared, every declared method exists.

    Adding a slot to a hot class without declaring it in cython/ would break the compiled
    build only; this test says so in the pure build too."""
    path = name.replace(".", "/")
    pxd = os.path.join(ROOT, "cython", path + ".pxd")
    py = _py_classes(_module_file(name))
    for cls, (attrs, methods) in _pxd_classes(pxd).items():
        assert cls in py, "%s: class %s is in the .pxd but not in the source" % (name, cls)
        slots, defs = py[cls]
        assert attrs == slots, ("%s.%s: declare in cython/%s.pxd exactly the __slots__; "
                                "missing %s, extra %s" % (name, cls, path,
                                                          sorted(slots - attrs),
                                                          sorted(attrs - slots)))
        assert methods <= defs, ("%s.%s: methods declared but not defined: %s"
                                 % (name, cls, sorted(methods - defs)))


# -- the event queue's twins run the same events in the same order ------------------------

def _pure_eventq():
    spec = importlib.util.spec_from_file_location("_gse_eventq_reference",
                                                  _module_file("gse.runtimes.sim.eventq"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.EventQueue


def _drive(eq_cls, seed):
    """A random schedule: ties, events that schedule events, stops at ``until``."""
    rng = random.Random(seed)
    eq = eq_cls()
    log = []

    def fire(tag, depth):
        log.append((eq.now, tag))
        for i in range(rng.randrange(3) if depth < 4 else 0):
            eq.at(eq.now + rng.choice((0, 0, 1, 5, 1000, 10**12)), fire,
                  "%s.%d" % (tag, i), depth + 1)

    for i in range(rng.randrange(1, 400)):
        eq.at(rng.choice((0, 7, 7, rng.randrange(10**6))), fire, str(i), 0)
    results = []
    for until in (5, 10**5, 10**5, 10**13, -1):
        results.append((eq.run(until), eq.now, eq.pending(), eq.events))
    with pytest.raises(ValueError) as info:
        eq.at(eq.now - 1, fire, "late", 0)
    return log, results, str(info.value)


@twin
@pytest.mark.parametrize("seed", range(12))
def test_event_queue_twins_run_the_same_order(seed):
    from gse.runtimes.sim.eventq import EventQueue
    assert _drive(EventQueue, seed) == _drive(_pure_eventq(), seed)


def _drive_dense(eq_cls, seed):
    """Dense, near events (a simulator's: ps apart, within a few us, some far) with
    stops at ``until`` and events scheduled from outside between the stops, at ``now``
    too (which may lie before the queue's current position); ``due_now`` asked in every
    event and at every stop."""
    rng = random.Random(seed)
    eq = eq_cls()
    log = []

    def fire(tag, depth):
        log.append((eq.now, tag, eq.due_now()))
        for i in range(rng.choice((0, 1, 1, 2)) if depth < 6 else 0):
            eq.at(eq.now + rng.choice((0, rng.randrange(2000), rng.randrange(10**6),
                                       rng.randrange(10**7), rng.randrange(10**9))),
                  fire, "%s.%d" % (tag, i), depth + 1)

    for i in range(rng.randrange(1, 300)):
        eq.at(rng.randrange(10**5), fire, str(i), 0)
    results = []
    for stop in range(30):
        until = eq.now + rng.choice((0, 1, rng.randrange(5000), rng.randrange(10**6),
                                     rng.randrange(10**8)))
        results.append((eq.run(until), eq.now, eq.pending(), eq.events, eq.due_now()))
        for j in range(rng.randrange(4)):
            eq.at(eq.now + rng.choice((0, 0, 1, rng.randrange(10**4), rng.randrange(10**7))),
                  fire, "x%d.%d" % (stop, j), 0)
    results.append((eq.run(), eq.now, eq.pending(), eq.events))
    return log, results


@twin
@pytest.mark.parametrize("seed", range(12))
def test_event_queue_twins_run_the_same_order_dense(seed):
    from gse.runtimes.sim.eventq import EventQueue
    ours, ref = _drive_dense(EventQueue, seed), _drive_dense(_pure_eventq(), seed)
    assert len(ours[0]) > 100
    assert any(due for _, _, due in ours[0]) and not all(due for _, _, due in ours[0])
    assert ours == ref


def _drive_crowded(eq_cls, seed):
    """Hundreds of events a bucket (1,024 ps; a large fabric running in lockstep): many
    more than a chunk of keys holds, scheduled out of order within their buckets, more
    scheduled into the bucket being run, stops inside the crowd (``due_now`` at every
    stop and in every event, events scheduled at the stop's time)."""
    rng = random.Random(seed)
    eq = eq_cls()
    log = []

    def fire(tag, depth):
        log.append((eq.now, tag, eq.due_now()))
        for i in range(rng.choice((0, 1, 2)) if depth < 3 else 0):
            eq.at(eq.now + rng.choice((0, rng.randrange(64), rng.randrange(4096),
                                       10**7 + rng.randrange(4096))),
                  fire, "%s.%d" % (tag, i), depth + 1)

    for i in range(2000):
        eq.at(rng.randrange(6) * 1024 + rng.choice((0, 0, rng.randrange(16),
                                                   rng.randrange(1024))), fire, str(i), 0)
    results = []
    for stop in range(25):
        until = eq.now + rng.choice((0, 1, rng.randrange(2048)))
        results.append((eq.run(until), eq.now, eq.pending(), eq.events, eq.due_now()))
        for j in range(rng.choice((0, rng.randrange(40)))):
            eq.at(eq.now + rng.choice((0, rng.randrange(3000), rng.randrange(3000))), fire,
                  "x%d.%d" % (stop, j), 0)
        results.append(eq.due_now())
    results.append((eq.run(), eq.now, eq.pending(), eq.events))
    return log, results


@twin
@pytest.mark.parametrize("seed", range(6))
def test_event_queue_twins_run_the_same_order_crowded(seed):
    from gse.runtimes.sim.eventq import EventQueue
    ours, ref = _drive_crowded(EventQueue, seed), _drive_crowded(_pure_eventq(), seed)
    assert len(ours[0]) > 2000
    assert any(ours[1][1::2]) and not all(ours[1][1::2])      # due at some stops
    assert ours == ref


class _ReferenceQueue:
    """The order both twins keep: one heap of (time, seq), seq counting ``at`` calls."""

    def __init__(self):
        self.heap, self.seq, self.now, self.events = [], 0, 0, 0

    def at(self, t, fn, a, b):
        if t < self.now:
            raise ValueError("event scheduled in the past: %d < now %d" % (t, self.now))
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, fn, a, b))

    def hint_at(self, t, fn, hint):
        self.at(t, fn, None, None)

    def run(self, until=-1):
        while self.heap:
            if until >= 0 and self.heap[0][0] > until:
                self.now = until
                return False
            t, _, fn, a, b = heapq.heappop(self.heap)
            self.now = t
            self.events += 1
            fn(a, b)
        return True

    def pending(self):
        return len(self.heap)

    def due_now(self):
        return bool(self.heap) and self.heap[0][0] == self.now


def _drive_same_instant(eq_cls, seed):
    """Events scheduled for the current time (the same-instant FIFO), mixed with events
    filed earlier for that time, later in its bucket and far ahead, hinted ones among
    them; bursts of thousands at one instant (the FIFO grows, wrapped); stops at
    ``until`` with the FIFO full, and from outside, at the stop's time or after it."""
    rng = random.Random(seed)
    eq = eq_cls()
    log = []
    bursts = [300, 1200, 2500]

    def fire(tag, depth):
        log.append((eq.now, tag, eq.due_now(), eq.pending()))
        if depth >= 5:
            return
        k = rng.choice((0, 1, 1, 2)) if depth else rng.choice((0, 1, 2, 3))
        if bursts and depth == 0 and rng.random() < 0.02:
            k = bursts.pop()                          # a burst at this instant
        for i in range(k):
            dt = rng.choice((0, 0, 0, 0, 1, rng.randrange(1024), rng.randrange(10**6)))
            if depth >= 3 and dt == 0 and rng.random() < 0.3:
                dt = rng.randrange(1, 2048)
            sub = "%s.%d" % (tag, i)
            if rng.random() < 0.2:
                eq.hint_at(eq.now + dt, hinted(sub), object())
            else:
                eq.at(eq.now + dt, fire, sub, depth + 1 if dt == 0 else depth + 2)

    def hinted(tag):
        def run(a, b):
            log.append((eq.now, tag, a, b, eq.pending()))
        return run

    for i in range(rng.randrange(50, 400)):
        eq.at(rng.choice((0, 0, 3, rng.randrange(5000))), fire, str(i), 0)
    results = []
    for stop in range(20):
        until = eq.now + rng.choice((0, 1, rng.randrange(3000), rng.randrange(10**6)))
        results.append((eq.run(until), eq.now, eq.pending(), eq.events, eq.due_now()))
        for j in range(rng.randrange(6)):
            eq.at(eq.now + rng.choice((0, 0, 1, rng.randrange(3000))), fire,
                  "x%d.%d" % (stop, j), 3)
    results.append((eq.run(), eq.now, eq.pending(), eq.events, eq.due_now()))
    return log, results


@twin
@pytest.mark.parametrize("seed", range(8))
def test_event_queue_same_instant_events_run_in_heap_order(seed):
    """The same-instant FIFO (both twins) keeps the order of one heap of (time, seq)."""
    from gse.runtimes.sim.eventq import EventQueue
    ref = _drive_same_instant(_ReferenceQueue, seed)
    assert len(ref[0]) > 1000
    assert sum(1 for i in range(1, len(ref[0])) if ref[0][i][0] == ref[0][i - 1][0]) > 500
    assert _drive_same_instant(EventQueue, seed) == ref
    assert _drive_same_instant(_pure_eventq(), seed) == ref


def test_event_queue_same_instant_burst_grows_and_wraps():
    """Thousands of events at one instant, scheduled while the FIFO is part run (its
    ring wraps and doubles), between events filed earlier for that instant: the order of
    one heap of (time, seq), on both twins."""
    from gse.runtimes.sim.eventq import EventQueue

    def drive(cls):
        eq, log = cls(), []

        def fire(tag, n):
            log.append((eq.now, tag))
            for i in range(n):
                eq.at(eq.now, fire, "%s.%d" % (tag, i), 1 if n > 100 and i % 3 == 0 else 0)
            if n:
                eq.at(eq.now + 1, fire, tag + "+1", 0)
        for i in range(40):
            eq.at(100, fire, "a%d" % i, 0)
        eq.at(100, fire, "big", 700)
        eq.at(100, fire, "big2", 1500)
        for i in range(40):
            eq.at(100, fire, "b%d" % i, 3)
        eq.at(101, fire, "late", 0)
        assert eq.run(100) is False
        mid = (eq.now, eq.pending(), eq.due_now())
        eq.at(100, fire, "after", 0)
        return log, mid, eq.run(), eq.events, eq.now

    ref = drive(_ReferenceQueue)
    assert len(ref[0]) > 3000 and ref[1] == (100, 2 + 40 + 1 + 734, False)
    for cls in (EventQueue, _pure_eventq()):
        assert drive(cls) == ref, cls


def test_event_queue_exception_counts_events_run():
    from gse.runtimes.sim.eventq import EventQueue
    for cls in (EventQueue, _pure_eventq()):
        eq = cls()

        def boom(a, b):
            raise RuntimeError("boom")
        eq.at(1, lambda a, b: None, None, None)
        eq.at(2, boom, None, None)
        eq.at(3, lambda a, b: None, None, None)
        with pytest.raises(RuntimeError):
            eq.run()
        assert (eq.now, eq.events, eq.pending()) == (2, 2, 1)
        assert eq.run() is True and eq.events == 3


def test_event_queue_releases_what_its_events_hold():
    """A run event's callable and arguments are let go, and a queue in a cycle with what
    its pending events hold (a network's ports hold the queue) is collected: the compiled
    queue keeps them in C slots that its tp_traverse shows to the garbage collector."""
    import gc
    import weakref
    from gse.runtimes.sim.eventq import EventQueue, Handler, event_target

    class Owner:
        pass

    class Port(Handler):
        def fire(self, a, b):
            self.fired = (a, b)

    for cls in (EventQueue, _pure_eventq()):
        eq = cls()
        done, late, port = Owner(), Owner(), Port()
        done.eq = late.eq = port.eq = eq                     # cycles through the queue
        eq.at(1, event_target(port, port.fire) if cls is EventQueue else port.fire,
              done, None)
        eq.at(2, lambda a, b: None, late, None)
        refs = [weakref.ref(x) for x in (done, late, port)]
        del done, late
        assert eq.run(1) is False and port.fired[1] is None
        port.fired = None
        assert refs[0]() is None                             # ran: let go
        assert refs[1]() is not None and eq.pending() == 1   # pending: held
        if cls is EventQueue and _build.build() == "compiled":
            assert any(x is refs[1]() for x in gc.get_referents(eq))
        del eq, port
        gc.collect()
        assert [r() for r in refs] == [None, None, None], cls


def test_a_hinted_event_holds_nothing_of_its_hint_and_gets_none():
    """``hint_at`` (compiled: the event keeps its hint without a reference, to prefetch
    it): the hint may be gone before the event runs, which then gets None, as in the pure
    twin; the queue, run, stopped, or collected with hinted events pending, lets go of
    everything else as with plain events."""
    import gc
    import weakref
    from gse.runtimes.sim.eventq import EventQueue, Handler, event_target

    class Hint:
        pass

    class Port(Handler):
        def fire(self, a, b):
            self.fired.append((a, b))

    for cls in (EventQueue, _pure_eventq()):
        eq = cls()
        port = Port()
        port.fired = []
        port.eq = eq                                         # a cycle through the queue
        fn = event_target(port, port.fire) if cls is EventQueue else port.fire
        hints = [Hint() for _ in range(6)]
        refs = [weakref.ref(h) for h in hints]
        for i, h in enumerate(hints):
            eq.hint_at(10 * i, fn, h)
            eq.at(10 * i + 1, fn, i, None)
        del hints, h
        assert [r() for r in refs] == [None] * 6             # never held
        assert eq.run(25) is False
        assert port.fired == [(None, None), (0, None), (None, None), (1, None),
                              (None, None), (2, None)]
        assert eq.pending() == 6
        port_ref = weakref.ref(port)
        del eq, port, fn
        gc.collect()
        assert port_ref() is None, cls


# -- new_packet is the constructor ----------------------------------------------------------

_SLOTS = ("kind", "flags", "src", "dst", "msg_id", "psn", "entropy", "payload_len", "msg_len",
          "credit", "aux", "sack_base", "sack_bits", "ts", "prio", "size", "corrupt", "payload",
          "ingress")


@pytest.mark.parametrize("seed", range(4))
def test_new_packet_is_the_constructor(seed):
    from gse.wire.packet import DATA, F_TRIMMED, Packet, new_packet
    rng = random.Random(seed)
    for _ in range(300):
        args = [rng.choice((DATA, DATA, rng.randrange(8)))] + [
            rng.randrange(2 ** 32) for _ in range(5)] + [
            rng.randrange(70000), rng.choice((0, F_TRIMMED, rng.randrange(64))),
            rng.randrange(2 ** 32), rng.randrange(2 ** 32), rng.randrange(2 ** 32),
            rng.randrange(0, 2 ** 32, 8), rng.randrange(2 ** 64), rng.randrange(2 ** 64),
            rng.randrange(2)]
        a, b = Packet(*args), new_packet(*args)
        assert type(a) is type(b)
        assert [getattr(a, n) for n in _SLOTS] == [getattr(b, n) for n in _SLOTS]


# -- one behaviour: the same run in both builds --------------------------------------------

_CROSS = r"""
import json, random, sys
from gse import _build
from gse.workloads import traffic
from gse.config import GseConfig, RoceConfig
from gse.runtimes.sim.run import run_simulation
from topologies import fat_tree
out = {"build": _build.build()}
topo = fat_tree(4)
for proto, cfg in (("gse", GseConfig()), ("roce", RoceConfig())):
    msgs = traffic.incast(16, 6, 300_000, random.Random(3))
    r = run_simulation(topo, msgs, proto, cfg, 3, loss_rate=0.002, corrupt_rate=0.001)
    s = r.summary
    out[proto] = {"per_message": r.per_message(), "events": s["events"],
                  "drops": s["drops"], "trims": s["trims"], "ecn": s["ecn_marks"],
                  "retx": s["retransmits"], "hosts": s["host_counters"],
                  "pfc": s["pfc_pauses"], "now": s["sim_time_us"]}
print(json.dumps(out))
"""


def _cross_run(pure):
    env = dict(os.environ)
    env.pop("GSE_PURE_PYTHON", None)
    if pure:
        env["GSE_PURE_PYTHON"] = "1"
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", _CROSS], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(_build.build() != "compiled", reason="needs the compiled build")
def test_compiled_and_pure_runs_are_identical():
    compiled, pure = _cross_run(False), _cross_run(True)
    assert (compiled["build"], pure["build"]) == ("compiled", "pure")
    for proto in ("gse", "roce"):
        assert compiled[proto] == pure[proto], proto


# -- an install without Cython, run from the repository root ------------------------------

def test_without_cython_the_repository_cython_folder_is_not_taken_for_it():
    """Without Cython, ``import cython`` from the root finds the ``cython/`` folder as a
    namespace package; the stand-in decorators must be used then (issue 12, item 6)."""
    code = ("import sys; sys.path = [p for p in sys.path if 'site-packages' not in p]; "
            "import cython; assert not hasattr(cython, 'freelist'), cython; "
            "import gse.wire.packet as p, gse._no_cython as nc; "
            "assert p.cython is nc, p.cython; "
            "import gse.runtimes.sim.htsim_model as h; assert h.cython is nc, h.cython; "
            "assert nc.cast(p.Packet, None) is None; "
            "print(p.new_packet.__module__)")
    env = dict(os.environ, GSE_PURE_PYTHON="1", PYTHONPATH="")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    assert proc.returncode == 0, proc.stdout
