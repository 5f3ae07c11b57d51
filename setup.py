"""Build of the compiled hot paths (everything else is in pyproject.toml).

The hot modules (``gse._build.MODULES``) are compiled by Cython from their own ``.py``
sources, augmented by the ``.pxd`` files under ``cython/`` (a few have a ``.pyx`` twin
there instead), with the hand-written C of ``gse._build.C_SOURCES`` (``cython/**/*.c``,
declared by ``cdef extern from "<header>"``) compiled into their extensions.  At build
time each ``.py`` is copied beside its ``.pxd`` into ``build/cython-src/`` and compiled
under its own module name (``gse.runtimes.sim.network``); the extension lands in
``gse/_compiled/`` (``switchmodel/_compiled/``), where ``gse._build`` finds it at import
unless ``GSE_PURE_PYTHON=1``.  ``gse/_compiled/BUILD.json`` records the sources' digests
so that a stale build is detected.  See docs/compiled-build.md.

    python setup.py build_ext --inplace      # what `pip install -e .` does, faster to redo
    GSE_NO_EXTENSIONS=1 pip install .        # no compiler: pure Python only
    GSE_CYTHON_ANNOTATE=1 python setup.py build_ext --inplace   # build/cython-src/*.html
    GSE_CYTHON_PROFILE=1 python setup.py build_ext --inplace    # cProfile sees compiled code
"""

import datetime
import importlib.util
import json
import os
import re
import shutil
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py
from setuptools.errors import CCompilerError, ExecError, PlatformError

ROOT = os.path.dirname(os.path.abspath(__file__))
STAGE = os.path.join("build", "cython-src")


def _load_build_module():
    # gse/_build.py without importing the gse package (nothing is built yet)
    spec = importlib.util.spec_from_file_location(
        "_gse_build_for_setup", os.path.join(ROOT, "gse", "_build.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


B = _load_build_module()


def _flag(name):
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


def _stage():
    """Copy each hot source beside its .pxd into build/cython-src; return {module: file}."""
    stage = os.path.join(ROOT, STAGE)
    wanted = {}                  # staged path -> source path
    for pkg in B.PACKAGES:
        pxd_dir = os.path.join(ROOT, "cython", *pkg.split("."))
        for fn in sorted(os.listdir(pxd_dir)):
            if fn.endswith(".pxd"):
                wanted[os.path.join(stage, *pkg.split("."), fn)] = os.path.join(pxd_dir, fn)
    sources = {}
    for name, twin in B.MODULES.items():
        path = name.split(".")
        src = os.path.join(ROOT, twin) if twin else os.path.join(ROOT, *path) + ".py"
        dst = os.path.join(stage, *path) + os.path.splitext(src)[1]
        wanted[dst] = src
        sources[name] = os.path.relpath(dst, ROOT)
    for pkg in _with_parents(B.PACKAGES):     # Cython finds cimported .pxd by package
        d = os.path.join(stage, *pkg.split("."))
        os.makedirs(d, exist_ok=True)
        init = os.path.join(d, "__init__.py")
        if not os.path.exists(init):
            open(init, "w").close()
        for fn in os.listdir(d):         # sources no longer compiled, and their C files
            p = os.path.join(d, fn)
            if fn.endswith((".py", ".pyx", ".pxd")) and fn != "__init__.py" and p not in wanted:
                os.remove(p)
    for dst, src in wanted.items():      # copy what changed, so that cythonize and the
        if not _same(src, dst):          # C compiler redo only what depends on it
            shutil.copyfile(src, dst)
    return sources


def _with_parents(packages):
    """``gse.runtimes.sim`` -> also ``gse`` and ``gse.runtimes``."""
    out = set()
    for pkg in packages:
        parts = pkg.split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return sorted(out)


def _drop_removed_extensions():
    """Delete the extensions in the tree's ``_compiled/`` folders of modules no longer in
    ``MODULES``: a module dropped from the hot set (or from the tree) would otherwise
    still import from its old build."""
    for top in sorted({name.split(".")[0] for name in B.MODULES}):
        for dirpath, _, filenames in os.walk(os.path.join(ROOT, top)):
            if os.path.basename(dirpath) != B.COMPILED_DIR:
                continue
            pkg = os.path.relpath(os.path.dirname(dirpath), ROOT).replace(os.sep, ".")
            for fn in filenames:
                if fn.endswith((".so", ".pyd")) and pkg + "." + fn.split(".")[0] not in B.MODULES:
                    os.remove(os.path.join(dirpath, fn))


def _short_reason(exc):
    """One line for the manifest and `gse info`: a compiler's failure as the command and its
    status (its errors are above it in the build log), anything else as type: message."""
    text = str(exc).strip() or "(no message)"
    # setuptools' wording: "Command '['gcc', ...]' returned non-zero exit status 1." or
    # "command 'gcc' failed with exit code 1" or "command 'gcc' failed: No such file ..."
    m = re.match(r"""[Cc]ommand '\[?'?([^',\]]+)'?.*?"""
                 r"""(?:(?:exit status|exit code)\s*(-?\d+)|failed:\s*([^\n]*))""", text, re.S)
    if m and isinstance(exc, (CCompilerError, ExecError, PlatformError, OSError)):
        what = "exit status %s" % m.group(2) if m.group(2) else m.group(3).rstrip(".")
        return "the C compiler failed (%s: %s)" % (m.group(1), what)
    if isinstance(exc, RuntimeError):
        return text.splitlines()[0]
    line = "%s: %s" % (type(exc).__name__, text.splitlines()[0])
    return line if len(line) <= 200 else line[:197] + "..."


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


FALLBACK_MESSAGE = """
======================================================================
setup.py: WARNING: the compiled modules were NOT built:
    %(why)s
gse is installed as pure Python: the same results, about 10x slower.
`gse info` says which build runs and why.  For the compiled build,
install a C compiler and the Python headers (Debian/Ubuntu: apt-get
install gcc python3-dev) and reinstall: pip install --force-reinstall
--no-deps . (pip install -v shows this build's log; docs/install.md).
======================================================================
"""


def _same(a, b):
    if not os.path.exists(b):
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


class BuildExt(build_ext):
    """Cythonize at build time (not at egg_info), then build, then write the manifest."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1

    def run(self):
        if not self.extensions:
            super().run()
            return
        try:
            self._cythonize()
            super().run()
        except Exception as exc:     # noqa: BLE001 -- any failure: compiler, Cython, headers
            # `pip install .` must not fail for want of a compiler: install pure Python,
            # loudly, and record why (gse info says it).  ./dev and gse._build.ensure() set
            # GSE_REQUIRE_EXTENSIONS=1: there a failed build is an error.
            if _flag("GSE_REQUIRE_EXTENSIONS"):
                raise
            self._fall_back(_short_reason(exc))
            return
        self._write_manifest()

    def _fall_back(self, why):
        """Install without the compiled modules: drop what was built, write a manifest
        that says why (``gse._build.decide`` reads it), print how to get the compiled
        build."""
        print(FALLBACK_MESSAGE % {"why": why}, file=sys.stderr)
        for d in self._manifest_roots():
            for pkg in B.PACKAGES:
                cdir = B.compiled_dir(pkg, d)
                if d == self.build_lib and os.path.isdir(cdir):
                    for fn in os.listdir(cdir):        # a partial build: none of it
                        if fn.endswith((".so", ".pyd")):
                            os.remove(os.path.join(cdir, fn))
            self._write_json(d, {"skipped": why, "python": sys.version.split()[0],
                                 "built": _now()})
        self.extensions = []
        self.distribution.ext_modules = []

    def _manifest_roots(self):
        """Where the manifest goes: the build (then the wheel), and the tree in place."""
        return [self.build_lib] + ([ROOT] if self.inplace else [])

    def _write_json(self, root, manifest):
        d = B.compiled_dir(B.MANIFEST_PACKAGE, root)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, B.MANIFEST), "w") as f:
            f.write(json.dumps(manifest, indent=2, sort_keys=True) + "\n")

    def _cythonize(self):
        try:
            from Cython import __version__ as cython_version
            from Cython.Build import cythonize
        except ImportError:
            raise RuntimeError("Cython is not installed (pip install 'cython>=3.0')") from None
        if int(cython_version.split(".")[0]) < 3:
            raise RuntimeError("Cython %s is too old: 3.0 or newer is needed" % cython_version)
        self._cython_version = cython_version
        sources = _stage()
        directives = {
            "language_level": 3,
            "binding": False,            # methods as C descriptors: cheaper bound calls
            "embedsignature": True,
            # Type hints are for readers and mypy, not for Cython: with annotation typing
            # on, `x: int` in a compiled .py would become a C integer (overflow, other
            # semantics than the pure build).  C types come only from the .pxd files.
            "annotation_typing": False,
        }
        if _flag("GSE_CYTHON_PROFILE"):
            directives.update(profile=True, linetrace=True)
        include_dirs = sorted({os.path.dirname(h) for h in B.C_HEADERS})
        exts = []
        for ext in self.extensions:
            name = ext.name.replace("." + B.COMPILED_DIR + ".", ".")
            c_sources = list(B.C_SOURCES.get(name, ()))
            exts.append(Extension(name, [sources[name]] + c_sources,
                                  include_dirs=include_dirs,
                                  depends=list(B.C_HEADERS) + c_sources,
                                  extra_compile_args=["-fwrapv"],
                                  define_macros=ext.define_macros))
        done = cythonize(exts, compiler_directives=directives,
                         include_path=[os.path.join(ROOT, STAGE)],
                         annotate=_flag("GSE_CYTHON_ANNOTATE"), quiet=True,
                         force=_flag("GSE_CYTHON_ANNOTATE") or _flag("GSE_CYTHON_PROFILE"),
                         nthreads=self.parallel if self.parallel > 1 else 0)
        by_name = {e.name: e for e in done}
        for ext in self.extensions:
            c = by_name[ext.name.replace("." + B.COMPILED_DIR + ".", ".")]
            ext.sources = c.sources
            ext.include_dirs = c.include_dirs
            ext.depends = c.depends
            ext.extra_compile_args = c.extra_compile_args

    def _write_manifest(self):
        manifest = {
            "cython": getattr(self, "_cython_version", "?"),
            "python": sys.version.split()[0],
            "built": _now(),
            "modules": sorted(B.MODULES),
            "sources": B.source_digests(ROOT),
        }
        for root in self._manifest_roots():
            self._write_json(root, manifest)

    def copy_extensions_to_source(self):
        for pkg in B.PACKAGES:
            os.makedirs(B.compiled_dir(pkg, ROOT), exist_ok=True)
        _drop_removed_extensions()
        super().copy_extensions_to_source()


class BuildPy(build_py):
    """With ``GSE_NO_EXTENSIONS=1`` no extension is built (nor build_ext run): the manifest
    says so, for ``gse info``."""

    def run(self):
        super().run()
        if _flag("GSE_NO_EXTENSIONS") and not getattr(self, "editable_mode", False):
            d = B.compiled_dir(B.MANIFEST_PACKAGE, self.build_lib)
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, B.MANIFEST), "w") as f:
                f.write(json.dumps({"skipped": "GSE_NO_EXTENSIONS=1 at build time",
                                    "deliberate": True, "python": sys.version.split()[0],
                                    "built": _now()}, indent=2, sort_keys=True) + "\n")


def extensions():
    if _flag("GSE_NO_EXTENSIONS"):
        return []
    # Placeholders named after where the .so goes; sources are set by BuildExt._cythonize.
    exts = []
    for name in B.MODULES:
        pkg, _, mod = name.rpartition(".")
        exts.append(Extension("%s.%s.%s" % (pkg, B.COMPILED_DIR, mod),
                              [os.path.join(*name.split(".")) + ".py"]))
    return exts


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExt, "build_py": BuildPy})
