"""The compiled build (Cython) and the pure-Python reference are one behaviour.

The whole suite runs twice in CI: as is (the compiled build, which must then really be
loaded) and with ``GSE_PURE_PYTHON=1``.  Here: the build that runs is the one asked for
(yarl's test against a silent fallback), the ``.pxd`` files still describe their sources,
and a small simulation gives identical results in both builds (the event queue's
twins: tests/test_compiled_eventq.py; the small containers': test_compiled_containers.py).
"""

import ast
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
from twins import module_file as _module_file

ROOT = _build.ROOT
HAS_PXD = os.path.isdir(os.path.join(ROOT, "cython"))




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


def _copy_sources(root):
    """The build's sources (``_build.sources_of``) copied into a tree at ``root``."""
    for name in _build.MODULES:
        for rel in _build.sources_of(name, ROOT):
            dst = os.path.join(root, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(os.path.join(ROOT, rel), "rb") as f, open(dst, "wb") as g:
                g.write(f.read())


def test_decide_on_a_tree(tmp_path):
    """Pure when asked, when nothing was built, when a source changed after the build."""
    root = str(tmp_path)
    _copy_sources(root)
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
    _copy_sources(root)
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
    # the copies were just written: count them as settled (a negative margin)
    monkeypatch.setattr(_build, "RACY_NS", -10**9)
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
