"""Which build of the hot paths is active: the compiled one (Cython) or the pure-Python one.

One source, two speeds (docs/compiled-build.md).  The hot modules listed in ``MODULES`` are
plain Python and are the reference; ``setup.py`` compiles the same sources, augmented by
the ``.pxd`` files under ``cython/``, into extension modules *with the same names*
(``gse.runtimes.sim.network`` stays ``gse.runtimes.sim.network``) and puts them in a
``_compiled/`` folder of their package (``gse/runtimes/sim/_compiled/``).  At import, the
``__init__.py`` of every package in ``PACKAGES`` calls :func:`activate`, which puts that
folder at the front of the package's ``__path__`` so that ``import gse.runtimes.sim.network``
finds the extension first, unless:

* ``GSE_PURE_PYTHON=1`` is set (the pure-Python reference, as msgpack's
  ``MSGPACK_PUREPYTHON``);
* no compiled build is there (never built, or built for another Python);
* the build is stale: a hot source (``.py``, ``.pxd``, ``.pyx``, or the hand-written ``.c``
  and ``.h`` of ``C_SOURCES`` and ``C_HEADERS``) changed since it was built.
  The pure modules are used then, with a ``RuntimeWarning`` naming the file, so that an
  edit never runs against old compiled code.

Every package takes the same decision: the compiled modules cimport each other's types, so
the two builds are never mixed.  ``tests/test_compiled.py`` fails where the compiled build
was expected (``GSE_PURE_PYTHON`` unset) but a module came from its ``.py``.

``gse info`` prints the state; :func:`ensure` rebuilds in place if needed.
"""

import importlib
import importlib.machinery
import json
import os
import sys
import warnings

ENV_PURE = "GSE_PURE_PYTHON"

# Compiled modules: name -> twin source under cython/ ('' if the .py itself is compiled).
MODULES = {
    "gse.wire.packet": "",
    "gse.agents.interface": "",
    "gse.agents.events": "",
    "gse.agents.driver": "",
    "gse.runtimes.sim.eventq": "cython/gse/runtimes/sim/eventq.pyx",
    "gse.common.fifo": "cython/gse/common/fifo.pyx",
    "gse.common.bits": "cython/gse/common/bits.pyx",
    "gse.common.timers": "cython/gse/common/timers.pyx",
    "gse.common.sendlog": "cython/gse/common/sendlog.pyx",
    "gse.common.fairq": "",
    "gse.common.handler": "",
    "gse.common.finished": "cython/gse/common/finished.pyx",
    "gse.agents.bitmap": "",
    "gse.agents.phases": "",
    "gse.agents.entropy": "",
    "gse.agents.scheduler": "",
    "gse.agents.sender": "",
    "gse.agents.receiver": "",
    "gse.agents.gse_host": "",
    "gse.agents.dcqcn": "",
    "gse.agents.roce_sender": "",
    "gse.agents.roce_nic": "",
    "gse.agents.roce_receiver": "",
    "gse.agents.roce_host": "",
    "gse.wire.codec": "",
    "gse.wire.fastcodec": "cython/gse/wire/fastcodec.pyx",
    "gse.runtimes.sim.network": "",
    "gse.runtimes.sim.sampler": "",
    "gse.runtimes.sim.htsim_model": "",
    "gse.workloads.stream": "",
    "gse.runtimes.udp.io": "",
    "gse.runtimes.udp.link": "",
    "gse.runtimes.udp.node": "",
    "gse.runtimes.udp.switchplane": "cython/gse/runtimes/udp/switchplane.pyx",
    "gse.runtimes.udp.hostplane": "cython/gse/runtimes/udp/hostplane.pyx",
    "switchmodel.queue": "",
    "switchmodel.switch": "",
    "switchmodel.pfc": "",
}
# ``.pxd`` files with no module of their own that compiled modules cimport: ``cdef inline``
# bodies (C compiles them into each) or C declarations shared by several modules; a source
# of every compiled module.
INLINE_PXD = ("cython/gse/wire/linkrate.pxd", "cython/gse/runtimes/udp/slots.pxd")
# Hand-written C compiled into a module's extension (setup.py adds them to its sources),
# declared by ``cdef extern from "<header>"`` in the module's .pxd.
C_SOURCES = {
    "gse.wire.fastcodec": ("cython/gse/wire/gse_codec.c",),
    "gse.runtimes.sim.eventq": ("cython/gse/runtimes/sim/gse_arena.c",),
    "gse.wire.packet": ("cython/gse/wire/gse_pktalloc.c",),
    "gse.runtimes.udp.io": ("cython/gse/runtimes/udp/gse_udp_io.c",),
    "gse.runtimes.udp.switchplane": ("cython/gse/runtimes/udp/gse_switchplane.c",),
    "gse.runtimes.udp.hostplane": ("cython/gse/runtimes/udp/gse_switchplane.c",),
}
# Their headers: every module that cimports such a .pxd includes one, so they are sources
# of every compiled module (as INLINE_PXD), and their folders are on the include path.
C_HEADERS = ("cython/gse/wire/gse_codec.h", "cython/gse/runtimes/udp/gse_udp_io.h",
             "cython/gse/runtimes/sim/gse_eventq.h", "cython/gse/runtimes/sim/gse_prefetch.h",
             "cython/gse/runtimes/udp/gse_switchplane.h", "cython/gse/runtimes/sim/gse_arena.h",
             "cython/gse/wire/gse_pktalloc.h", "cython/switchmodel/gse_qlink.h")
# Packages holding compiled modules, each with its own ``_compiled/`` folder; their
# ``__init__`` calls ``activate(__path__, __name__)``.  The manifest lives in gse's.
PACKAGES = tuple(sorted({name.rpartition(".")[0] for name in MODULES}))
COMPILED_DIR = "_compiled"
MANIFEST_PACKAGE = "gse"
MANIFEST = "BUILD.json"
# beside the manifest: {source: [sha256, size, mtime_ns, ctime_ns, inode]} of the sources
# found to hash to the manifest's digest, so that a start stats them rather than hashing
# them all (611 kB; hashlib's import alone about 3 ms); a source whose stat differs from
# its stamp in any way is hashed again.  ctime and the inode change with every write,
# rename or copy, whatever its mtime is set back to; a source written in the last
# RACY_NS before it is stamped is left out (hashed every time until older), for file
# systems whose clocks tick too coarsely to tell two writes apart.  "Now" is the file
# system's clock, the new stamp file's mtime (and ``time``, which the sans-I/O packages
# importing this module may not import, is not needed).
STAMPS = "STAMPS.json"
RACY_NS = 2 * 10**9

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pure_requested():
    return os.environ.get(ENV_PURE, "").strip().lower() not in ("", "0", "false", "no")


def sources_of(name, root=ROOT):
    """The files (relative to ``root``) the compiled ``name`` is built from."""
    path = name.replace(".", "/")
    files = ["%s.py" % path]
    pxd = "cython/%s.pxd" % path
    if os.path.exists(os.path.join(root, pxd)):
        files.append(pxd)
    twin = MODULES[name]
    if twin:
        files.append(twin)
    files.extend(C_SOURCES.get(name, ()))
    files.extend(INLINE_PXD)
    files.extend(C_HEADERS)
    return files


def digest(path):
    import hashlib      # (only when a source has no current stamp: docs/scale.md)
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def source_digests(root=ROOT):
    """{relative path: sha256} of every hot source present under ``root``."""
    out = {}
    for name in MODULES:
        for rel in sources_of(name, root):
            p = os.path.join(root, rel)
            if os.path.exists(p):
                out[rel] = digest(p)
    return out


def compiled_dir(pkg, root=ROOT):
    """The folder of ``pkg``'s compiled modules (``gse.agents`` -> gse/agents/_compiled)."""
    return os.path.join(root, *pkg.split("."), COMPILED_DIR)


class _State:
    __slots__ = ("build", "reason", "manifest", "decided")

    def __init__(self):
        self.build = "pure"
        self.reason = "not decided yet"
        self.manifest = None
        self.decided = False


STATE = _State()


def rebuild_hint(root=ROOT):
    """How to get the compiled build: in a source tree, build in place; in an installed
    package, reinstall from the sources with a compiler (docs/install.md)."""
    if os.path.exists(os.path.join(root, "setup.py")):
        return "rebuild: python setup.py build_ext --inplace"
    return ("for the compiled build, install a C compiler and reinstall: pip install "
            "--force-reinstall --no-deps SOURCE; see docs/install.md")


def decide(root=ROOT, env=None):
    """(build, reason, manifest) for the tree at ``root`` under environment ``env``."""
    env = os.environ if env is None else env
    if env.get(ENV_PURE, "").strip().lower() not in ("", "0", "false", "no"):
        return "pure", "%s=%s" % (ENV_PURE, env.get(ENV_PURE)), None
    mpath = os.path.join(compiled_dir(MANIFEST_PACKAGE, root), MANIFEST)
    if not os.path.exists(mpath):
        return "pure", ("no compiled build (%s missing; %s)"
                        % (os.path.relpath(mpath, root), rebuild_hint(root))), None
    try:
        with open(mpath) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as exc:
        return "pure", "unreadable build manifest %s: %s" % (mpath, exc), None
    if "skipped" in manifest:   # setup.py installed pure Python (docs/install.md)
        hint = rebuild_hint(root)
        if manifest.get("deliberate"):
            hint = hint.replace("install a C compiler and reinstall",
                                "reinstall without GSE_NO_EXTENSIONS")
        return "pure", ("built without the compiled modules: %s; %s"
                        % (manifest["skipped"], hint)), manifest
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    for name in MODULES:
        pkg, _, mod = name.rpartition(".")
        if not os.path.exists(os.path.join(compiled_dir(pkg, root), mod + suffix)):
            return "pure", ("compiled module %s missing for this Python (%s; %s)"
                            % (name, suffix, rebuild_hint(root))), manifest
    stale = _stale_source(root, manifest)
    if stale:
        return "pure", ("compiled build is stale: %s changed since it was built (%s)"
                        % (stale, rebuild_hint(root))), manifest
    for name in MODULES:        # a module added to MODULES since the build
        for rel in sources_of(name, root):
            if rel not in manifest.get("sources", {}):
                return "pure", ("compiled build is stale: %s is not in it (%s)"
                                % (rel, rebuild_hint(root))), manifest
    return "compiled", "Cython %s, %d modules" % (manifest.get("cython", "?"),
                                                  len(MODULES)), manifest


def _stale_source(root, manifest):
    """The first source (relative path) whose digest is not the manifest's, or None.  A
    source is hashed only if its stat is not the one stamped (``STAMPS``) when it last
    hashed right; the stamps are rewritten when they change, if the folder is writable."""
    spath = os.path.join(compiled_dir(MANIFEST_PACKAGE, root), STAMPS)
    try:
        with open(spath) as f:
            known = json.load(f)
    except (OSError, ValueError):
        known = {}
    if not isinstance(known, dict):
        known = {}
    stamps = {}
    for rel, sha in sorted(manifest.get("sources", {}).items()):
        p = os.path.join(root, rel)
        try:
            st = os.stat(p)
        except FileNotFoundError:
            continue            # installed from a wheel: the build-time .pxd are not shipped
        stamp = [sha, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        if known.get(rel) != stamp and digest(p) != sha:
            return rel
        stamps[rel] = stamp
    if stamps != known:
        _write_stamps(spath, stamps, known)
    return None


def _write_stamps(spath, stamps, known):
    """``stamps`` less those of sources written within ``RACY_NS`` of now, as the new stamp
    file is dated by the file system, into ``spath`` if that changes it."""
    tmp = "%s.%d.tmp" % (spath, os.getpid())
    try:
        with open(tmp, "w") as f:
            settled = os.fstat(f.fileno()).st_mtime_ns - RACY_NS
            stamps = {rel: stamp for rel, stamp in stamps.items()
                      if max(stamp[2], stamp[3]) < settled}
            if stamps != known:
                json.dump(stamps, f)
        if stamps != known:
            os.replace(tmp, spath)
            return
    except OSError:             # (an installed package's folder may be read-only)
        pass
    try:
        os.unlink(tmp)
    except OSError:
        pass


def _decide():
    st = STATE
    st.decided = True
    st.build, st.reason, st.manifest = decide()
    if st.reason.startswith("compiled build is stale"):
        warnings.warn("gse: %s; running the pure-Python modules" % st.reason,
                      RuntimeWarning, stacklevel=4)
    elif st.manifest and st.manifest.get("skipped") and not st.manifest.get("deliberate"):
        # the compiler or Cython failed at install: say it until fixed, or until pure
        # Python is asked for (GSE_PURE_PYTHON=1, which does not read the manifest)
        warnings.warn("gse: the compiled modules were not built at install (%s): running "
                      "pure Python, about 10x slower; `gse info` says how to get them "
                      "(GSE_PURE_PYTHON=1 silences this)" % st.manifest["skipped"],
                      RuntimeWarning, stacklevel=4)


def activate(path, pkg="gse"):
    """Called by a package's ``__init__`` with its ``__path__``: prefer compiled modules."""
    if not STATE.decided:
        _decide()
    if STATE.build == "compiled":
        d = compiled_dir(pkg)
        if d not in path:
            path.insert(0, d)


def build():
    """'compiled' or 'pure': what :func:`activate` chose for this process."""
    if not STATE.decided:
        _decide()
    return STATE.build


def is_compiled(module):
    """True if ``module`` was loaded from an extension module (not from its .py)."""
    return isinstance(getattr(module, "__loader__", None),
                      importlib.machinery.ExtensionFileLoader)


def loaded_from():
    """{module name: 'compiled' | 'pure'} for every hot module (imports them)."""
    out = {}
    for name in MODULES:
        out[name] = "compiled" if is_compiled(importlib.import_module(name)) else "pure"
    return out


def describe():
    """One line for ``gse --version`` / ``gse info``."""
    b = build()
    return "%s build (%s)" % (b, STATE.reason)


def info():
    """The state as a dict (``gse info --json``)."""
    b = build()
    mods = loaded_from()
    return {"build": b, "reason": STATE.reason, "pure_requested": pure_requested(),
            "python": sys.version.split()[0],
            "built_with": None if not STATE.manifest or "skipped" in STATE.manifest else {
                k: STATE.manifest.get(k) for k in ("cython", "python", "built")},
            "modules": mods,
            "consistent": all(v == b for v in mods.values())}


def format_info(d):
    lines = ["build: %s (%s)" % (d["build"], d["reason"]),
             "python: %s" % d["python"]]
    if d["built_with"]:
        w = d["built_with"]
        lines.append("compiled with: Cython %s for Python %s at %s"
                     % (w["cython"], w["python"], w["built"]))
    for name, how in d["modules"].items():
        lines.append("  %-26s %s" % (name, how))
    if not d["consistent"]:
        lines.append("WARNING: modules of both builds are loaded")
    return "\n".join(lines)


def ensure():
    """Build the extensions in place unless they are current, or pure Python was asked for
    (``GSE_PURE_PYTHON=1``), or no compiled build is wanted (``GSE_NO_EXTENSIONS=1``).

    For ``./dev``: ``python -c 'import sys, gse._build as b; sys.exit(b.ensure())'``."""
    import subprocess
    if pure_requested() or build() == "compiled" or os.environ.get("GSE_NO_EXTENSIONS"):
        return 0
    print("gse: building the compiled modules in place (%s)" % STATE.reason, file=sys.stderr)
    # a failed build is an error here, not setup.py's pure-Python fallback
    return subprocess.call([sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
                           cwd=ROOT, env=dict(os.environ, GSE_REQUIRE_EXTENSIONS="1"))
