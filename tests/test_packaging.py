"""`pip install .` on a fresh machine (issue 29; docs/install.md).

Each test installs the project NON-editably into a new virtual environment, from the sdist
of a clean copy of the tree (files git tracks or would track: no build/, no `.so`, no
BUILD.json of the tree is reused), then runs the installed `gse` from a directory outside
the sources.  No network and no download: the new environment sees this interpreter's
site-packages (pip, setuptools, Cython, rich, ...) through a `.pth` line, as a plain path
and not as a site directory, so the `.pth` files there (an editable install of this very
project) stay inactive; pip runs with --no-index --no-build-isolation --no-deps.

Cost on the project's two cores, measured with `pytest --durations` (at load average
2-5, and 8): the sdist 0.6 s (6 s); the GSE_NO_EXTENSIONS=1 wheel 3 s (26 s) and the
missing-Cython fallback 2 s (17 s), in both passes; the failing compiler, twice (the
fallback, then GSE_REQUIRE_EXTENSIONS=1's error) 30 s (Cython runs before the compiler
fails), in the compiled pass only, where a compiler is expected; the compiled install
from the sdist into two environments 2.0 min (5.3 min), marked slow (`pytest -m slow
tests/test_packaging.py`).
"""

import importlib.machinery
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile

import pytest

from gse import _build

ROOT = _build.ROOT
SIM = ["sim", "--k", "4", "--size", "100000", "--seed", "3"]
WALL_KEYS = ("wall_s", "events_per_s")
# what the test's own environment must not pass on to the installed gse
DROP_ENV = ("GSE_PURE_PYTHON", "GSE_NO_EXTENSIONS", "GSE_REQUIRE_EXTENSIONS", "PYTHONPATH",
            "CC", "PYTHONWARNINGS")

compiled_pass_only = pytest.mark.skipif(
    _build.pure_requested(),
    reason="compiles the extensions: run in the compiled pass only (GSE_PURE_PYTHON unset)")


def _have(distribution):
    # installed, asked of its metadata: importing setuptools here would replace distutils in
    # this process, and even find_spec("pip") makes setuptools' distutils hook do so (with a
    # deprecation warning) once anything has imported distutils
    try:
        importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


needs_setuptools = pytest.mark.skipif(
    not _have("setuptools") or not _have("pip"),
    reason="builds with this environment's pip and setuptools (--no-build-isolation)")
needs_cython = pytest.mark.skipif(not _have("Cython"),
                                  reason="Cython is not installed in this environment")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in DROP_ENV}
    env.update(extra)
    return env


def _check(cmd, cwd, env=None, timeout=900):
    """Run ``cmd``; fail with its output if it fails."""
    p = subprocess.run(cmd, cwd=cwd, env=_env() if env is None else env, timeout=timeout,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 0, "%s failed (%d):\n%s\n%s" % (
        " ".join(map(str, cmd)), p.returncode, p.stdout[-4000:], p.stderr[-4000:])
    return p


def _clean_copy(dst):
    """The tree as a fresh clone would have it, plus new files not yet committed."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], cwd=ROOT, check=True,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
        files = [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = None                 # not a git checkout (an unpacked sdist): all but builds
    if files is None:
        shutil.copytree(ROOT, dst, ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "dist", "_compiled", "*.so", "__pycache__",
            "*.egg-info", ".*_cache", ".hypothesis", "results"))
        return dst
    for rel in files:
        src = os.path.join(ROOT, rel)
        if os.path.isfile(src):      # a file deleted but not yet committed is skipped
            os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
            shutil.copy2(src, os.path.join(dst, rel))
    return dst


@pytest.fixture(scope="module")
def sdist(tmp_path_factory):
    """The sdist of a clean copy of the tree, built as pip and `python -m build` do."""
    tmp = tmp_path_factory.mktemp("sdist")
    src = _clean_copy(str(tmp / "tree"))
    dist = str(tmp / "dist")
    code = ("import sys; from setuptools import build_meta as b; "
            "print(b.build_sdist(sys.argv[1]))")
    name = _check([sys.executable, "-c", code, dist], cwd=src).stdout.strip().splitlines()[-1]
    return os.path.join(dist, name)


def _unpack(sdist_path, dst):
    with tarfile.open(sdist_path) as t:
        t.extractall(dst, filter="data") if hasattr(tarfile, "data_filter") else t.extractall(dst)
    (top,) = os.listdir(dst)
    return os.path.join(dst, top)


def _venv(path):
    """A new environment that borrows this one's packages (see the module's docstring)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", path], check=True)
    py = os.path.join(path, "bin", "python")
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
    ours = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    with open(os.path.join(site, "borrowed-from-the-test-environment.pth"), "w") as f:
        f.write("\n".join(ours) + "\n")
    return py, site


def _pip(py, *args, env=None, cwd=None):
    return _check([py, "-m", "pip", "--disable-pip-version-check", *args, "--no-index",
                   "--no-build-isolation", "--no-deps", "--no-cache-dir"],
                  cwd=cwd or os.path.dirname(py), env=env)


def _wheel(src, out, env=None):
    os.makedirs(out)
    _pip(sys.executable, "wheel", "-w", out, src, env=env, cwd=out)
    (whl,) = [f for f in os.listdir(out) if f.endswith(".whl")]
    return os.path.join(out, whl)


def _gse(py, *args, cwd, env=None):
    """The installed `gse` script (beside the environment's python)."""
    return _check([os.path.join(os.path.dirname(py), "gse"), *args], cwd=cwd, env=env)


def _info(py, cwd, env=None):
    return json.loads(_check([py, "-m", "gse", "info", "--json"], cwd=cwd, env=env).stdout)


def _assert_installed_gse(py, site, cwd):
    p = _check([py, "-c", "import gse, switchmodel, topologies; print(gse.__file__); "
                "print(switchmodel.__file__); print(topologies.__file__)"], cwd=cwd)
    for f in p.stdout.split():
        assert f.startswith(site), "imported %s, not the installed package in %s" % (f, site)


def _summary(py, cwd):
    out = os.path.join(str(cwd), "sim.json")
    _gse(py, *SIM, "--json", out, cwd=cwd)
    with open(out) as f:
        d = json.load(f)
    return {k: v for k, v in d.items() if k not in WALL_KEYS}


def _reference_summary(tmp_path):
    """The same run in this process's tree (either build: they are bit-identical)."""
    out = str(tmp_path / "reference.json")
    _check([sys.executable, "-m", "gse", *SIM, "--json", out], cwd=ROOT, env=dict(os.environ))
    with open(out) as f:
        d = json.load(f)
    return {k: v for k, v in d.items() if k not in WALL_KEYS}


# -- what gse info says of an install without the compiled modules -------------------------

def test_a_manifest_of_a_skipped_build_says_why_and_how_to_get_the_compiled_one(tmp_path):
    root = str(tmp_path)
    d = _build.compiled_dir(_build.MANIFEST_PACKAGE, root)
    os.makedirs(d)
    with open(os.path.join(d, _build.MANIFEST), "w") as f:
        json.dump({"skipped": "the C compiler failed (gcc: exit status 1)"}, f)
    build, reason, manifest = _build.decide(root, {})
    assert build == "pure" and manifest["skipped"] in reason, reason
    assert "pip install --force-reinstall" in reason     # an installed package: reinstall
    open(os.path.join(root, "setup.py"), "w").close()
    assert "build_ext --inplace" in _build.decide(root, {})[1]   # a source tree: rebuild
    assert _build.decide(root, {"GSE_PURE_PYTHON": "1"})[1] == "GSE_PURE_PYTHON=1"


# -- the sdist ---------------------------------------------------------------------------

@needs_setuptools
def test_the_sdist_holds_every_file_the_build_needs(sdist):
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    needed = {"setup.py", "pyproject.toml", "MANIFEST.in", "README.md", "gse/_build.py"}
    for name in _build.MODULES:
        needed.update(_build.sources_of(name, ROOT))
    for pkg in _build.PACKAGES:                 # setup.py stages every .pxd of a package
        d = os.path.join(ROOT, "cython", *pkg.split("."))
        needed.update(os.path.relpath(os.path.join(d, f), ROOT) for f in os.listdir(d)
                      if f.endswith(".pxd"))
    missing = sorted(needed - names)
    assert not missing, "the sdist lacks files the compiled build needs: %s" % missing
    built = sorted(n for n in names if n.endswith((".so", ".pyd")) or "/_compiled/" in n
                   or n.startswith("build/"))
    assert not built, "the sdist carries build outputs: %s" % built


# -- pure Python: asked for, or because the build could not run ----------------------------

@needs_setuptools
def test_a_wheel_built_without_extensions_installs_and_runs(sdist, tmp_path):
    """GSE_NO_EXTENSIONS=1: a pure wheel (any platform) that says so, without a warning."""
    src = _unpack(sdist, str(tmp_path / "src"))
    whl = _wheel(src, str(tmp_path / "wheels"), env=_env(GSE_NO_EXTENSIONS="1"))
    assert os.path.basename(whl).endswith("-py3-none-any.whl"), whl
    py, site = _venv(str(tmp_path / "venv"))
    _pip(py, "install", whl)
    away = tmp_path / "elsewhere"
    away.mkdir()
    _assert_installed_gse(py, site, away)
    version = _gse(py, "--version", cwd=away)
    assert "pure build (built without the compiled modules: GSE_NO_EXTENSIONS=1" in \
        version.stdout, version.stdout
    assert "reinstall without GSE_NO_EXTENSIONS" in version.stdout
    assert "RuntimeWarning" not in version.stderr, version.stderr
    assert _check([py, "-m", "gse", "--version"], cwd=away).stdout == version.stdout
    info = _info(py, away)
    assert info["build"] == "pure" and info["consistent"], info
    assert set(info["modules"].values()) == {"pure"}
    assert _summary(py, away) == _reference_summary(tmp_path)


@needs_setuptools
def test_without_cython_pip_install_falls_back_to_pure_python_and_says_why(sdist, tmp_path):
    """A build that cannot run (Cython missing here; the compiler in the test below) still
    installs, prints why and how to get the compiled build, and `gse info` says it."""
    src = _unpack(sdist, str(tmp_path / "src"))
    py, site = _venv(str(tmp_path / "venv"))
    # the environment's site-packages comes before the borrowed ones: a Cython that fails
    # to import there is a Cython that is not installed
    os.makedirs(os.path.join(site, "Cython"))
    with open(os.path.join(site, "Cython", "__init__.py"), "w") as f:
        f.write("raise ImportError('no Cython in this test environment')\n")
    p = _pip(py, "install", "-v", src)
    log = p.stdout + p.stderr
    assert "the compiled modules were NOT built" in log, log[-3000:]
    assert "Cython is not installed" in log
    assert "pip install --force-reinstall" in log      # how to get the compiled build
    shutil.rmtree(os.path.join(site, "Cython"))
    away = tmp_path / "elsewhere"
    away.mkdir()
    _assert_installed_gse(py, site, away)
    info = _info(py, away)
    assert info["build"] == "pure" and set(info["modules"].values()) == {"pure"}, info
    assert "Cython is not installed" in info["reason"], info["reason"]
    assert "docs/install.md" in info["reason"]
    version = _gse(py, "--version", cwd=away)
    assert "pure build" in version.stdout
    # not asked for: every run says so on stderr, until GSE_PURE_PYTHON=1 asks for it
    assert "the compiled modules were not built at install" in version.stderr
    quiet = _gse(py, "--version", cwd=away, env=_env(GSE_PURE_PYTHON="1"))
    assert "pure build (GSE_PURE_PYTHON=1)" in quiet.stdout and not quiet.stderr


@compiled_pass_only
@needs_setuptools
@needs_cython
def test_a_failing_compiler_installs_pure_python_and_says_why(sdist, tmp_path):
    src = _unpack(sdist, str(tmp_path / "src"))
    py, site = _venv(str(tmp_path / "venv"))
    p = _pip(py, "install", "-v", src, env=_env(CC="/bin/false"))
    log = p.stdout + p.stderr
    assert "the compiled modules were NOT built" in log, log[-3000:]
    assert "the C compiler failed (/bin/false: exit status 1)" in log
    installed = [os.path.join(d, f) for d, _, fs in os.walk(site) for f in fs
                 if f.endswith((".so", ".pyd")) and os.path.join(site, "gse") in d]
    assert not installed, installed
    away = tmp_path / "elsewhere"
    away.mkdir()
    info = _info(py, away)
    assert info["build"] == "pure", info
    assert "the C compiler failed" in info["reason"], info["reason"]
    # ./dev and gse._build.ensure() ask for the compiled build: there a failure is an error
    strict = subprocess.run([py, "-m", "pip", "install", "--no-index", "--no-build-isolation",
                             "--no-deps", "--no-cache-dir", "--force-reinstall", src],
                            cwd=str(away), env=_env(CC="/bin/false", GSE_REQUIRE_EXTENSIONS="1"),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=900)
    assert strict.returncode != 0, strict.stdout[-3000:]
    assert "the compiled modules were NOT built" not in strict.stdout


# -- the compiled build --------------------------------------------------------------------

@pytest.mark.slow          # 2.0 min on two cores at load average 3, 5.3 min at 8
@compiled_pass_only
@needs_setuptools
@needs_cython
def test_pip_install_builds_the_compiled_modules_and_the_wheel_installs_elsewhere(
        sdist, tmp_path):
    src = _unpack(sdist, str(tmp_path / "src"))
    whl = _wheel(src, str(tmp_path / "wheels"))
    assert not whl.endswith("-none-any.whl"), whl
    shutil.rmtree(src)                 # nothing of the build tree is left to find
    away = tmp_path / "elsewhere"
    away.mkdir()
    reference = _reference_summary(tmp_path)
    for n in (1, 2):                   # one wheel, two environments
        py, site = _venv(str(tmp_path / ("venv%d" % n)))
        _pip(py, "install", whl)
        _assert_installed_gse(py, site, away)
        version = _gse(py, "--version", cwd=away)
        assert "compiled build (Cython" in version.stdout, version.stdout + version.stderr
        assert _check([py, "-m", "gse", "--version"], cwd=away).stdout == version.stdout
        info = _info(py, away)
        assert info["build"] == "compiled" and info["consistent"], info
        assert set(info["modules"].values()) == {"compiled"}, info["modules"]
        assert "build: compiled" in _gse(py, "info", cwd=away).stdout
        _assert_manifest_matches_installed_sources(site)
        assert _summary(py, away) == reference
    api = _check([py, "-c", "import gse, json; r = gse.run(gse.Scenario(topology="
                  "{'name': 'fat-tree', 'k': 4})); print(json.dumps(r.summary.to_dict()))"],
                 cwd=away)
    assert json.loads(api.stdout)["complete"] is True


def _assert_manifest_matches_installed_sources(site):
    """BUILD.json's digests hold for the installed .py files (so a stale install is seen);
    the .pxd/.pyx/.c/.h stay in the sources and are not installed."""
    with open(os.path.join(_build.compiled_dir(_build.MANIFEST_PACKAGE, site),
                           _build.MANIFEST)) as f:
        manifest = json.load(f)
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    checked = []
    for name in _build.MODULES:
        pkg, _, mod = name.rpartition(".")
        assert os.path.exists(os.path.join(_build.compiled_dir(pkg, site), mod + suffix)), name
        rel = name.replace(".", "/") + ".py"
        assert _build.digest(os.path.join(site, rel)) == manifest["sources"][rel], rel
        checked.append(rel)
    assert len(checked) == len(_build.MODULES)
    assert not os.path.exists(os.path.join(site, "cython"))
