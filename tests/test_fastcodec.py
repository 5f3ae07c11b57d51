"""``gse.wire.fastcodec``: one codec for every runtime, its C in real sources, its twins alike.

Issue 26.3: the header was decoded three ways (``gse.wire.codec``, and a Python and a C
fast path in the UDP link module), the C sat in ``extern`` blocks of ``.pxd`` files and was
chosen by ``NameError``.  Now ``gse.wire.codec`` is the format, ``gse.wire.fastcodec`` what
the runtimes call (its compiled twin through ``cython/gse/wire/gse_codec.c``), and the
choice is the explicit flag ``FAST_PATH``.  The agreement of the two on datagrams is in
``tests/test_udp_codec.py``; this file checks the checksum, the flags, the sources and that
the repository's ``cython/`` folder never stands in for the Cython package.
"""

import ast
import importlib.util
import os
import random
import shutil
import subprocess
import sys
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gse import _build
from gse.runtimes.udp import io
from gse.wire import fastcodec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAS_SOURCES = os.path.isdir(os.path.join(ROOT, "cython"))
COMPILED = _build.build() == "compiled"
# around the 8-byte blocks of slicing-by-8, the 64 bytes from which ISA-L's C function is
# used and the 256 from which zlib's or python-isal's is
EDGES = (64, 65, 71, 72, 73, 127, 128, 129, 319, 320, 321, 1000, 4160, 9064)


def test_the_flags_say_which_build_runs():
    assert fastcodec.FAST_PATH == COMPILED
    sock = io.open_udp_socket("127.0.0.1", 0, rcvbuf=0)
    try:       # C_IO is a C constant in the compiled build: an IPv4 endpoint shows it
        assert io.Endpoint(sock, "probe").c4 == COMPILED
    finally:
        sock.close()
    assert _build.is_compiled(fastcodec) == COMPILED
    assert fastcodec.codec_backend().startswith("C (" if COMPILED else "Python")


@given(st.one_of(st.sampled_from(EDGES), st.integers(64, 5000)), st.randoms())
def test_checksum_is_zlib_crc32(n, rnd):
    data = bytes(rnd.getrandbits(8) for _ in range(n))
    assert fastcodec.datagram_checksum(data) == zlib.crc32(data[64:], zlib.crc32(data[:60]))


def test_checksum_of_long_uniform_and_random_payloads():
    rng = random.Random(26)
    for n in EDGES:
        for data in (bytes(n), b"\xff" * n, rng.randbytes(n)):
            want = zlib.crc32(data[64:], zlib.crc32(data[:60]))
            assert fastcodec.datagram_checksum(data) == want, n
            assert fastcodec.crc32(data[64:], zlib.crc32(data[:60])) == want, n


def _pure_twin():
    spec = importlib.util.spec_from_file_location(
        "_fastcodec_pure_twin", os.path.join(ROOT, "gse", "wire", "fastcodec.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_twins_offer_the_same_functions():
    pure = _pure_twin()
    assert pure.FAST_PATH is False
    public = {n for n in dir(pure) if not n.startswith("_") and callable(getattr(pure, n))
              and getattr(getattr(pure, n), "__module__", None) == pure.__name__}
    assert public >= {"decode_datagram", "decode_header", "decode_header_into",
                      "encode_packet", "payload_intact", "pattern_intact", "codec_backend",
                      "datagram_checksum"}
    assert all(callable(getattr(fastcodec, n, None)) for n in public), public


# -- one decoder: the reference, and the fast codec the runtimes call -----------------------

def _py_files(top):
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
        dirnames[:] = [d for d in dirnames if not d.startswith((".", "_"))]
        for fn in filenames:
            if fn.endswith(".py"):
                yield os.path.join(dirpath, fn)


def _imports_from(path, module):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return {a.name for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == module
            for a in node.names}


def test_runtimes_encode_and_decode_through_the_fast_codec():
    """No runtime calls the reference codec per datagram, and no module but the codec
    parses the header (``HEADER``): the third decoder is gone."""
    offenders = []
    for path in _py_files("gse"):
        rel = os.path.relpath(path, ROOT)
        names = _imports_from(path, "gse.wire.codec")
        if rel.startswith(os.path.join("gse", "runtimes")) and names & {"decode", "encode"}:
            offenders.append("%s imports %s" % (rel, sorted(names & {"decode", "encode"})))
        if "HEADER" in names:
            offenders.append("%s parses the header itself" % rel)
    assert offenders == []


def test_no_build_is_chosen_by_a_name_error():
    hits = []
    for path in _py_files("gse"):
        with open(path, encoding="utf-8") as f:
            if "except NameError" in f.read():
                hits.append(os.path.relpath(path, ROOT))
    assert hits == []


# -- the C in real sources ------------------------------------------------------------------

@pytest.mark.skipif(not HAS_SOURCES, reason="cython/ sources not present (installed from a wheel)")
def test_the_c_sources_are_sources_of_the_build():
    for name, files in _build.C_SOURCES.items():
        assert name in _build.MODULES
        for rel in files:
            assert os.path.exists(os.path.join(ROOT, rel)), rel
            assert rel in _build.sources_of(name)
    for rel in _build.C_HEADERS:
        assert os.path.exists(os.path.join(ROOT, rel)), rel
        assert all(rel in _build.sources_of(name) for name in _build.MODULES)
    assert set(_build.C_HEADERS) <= set(_build.source_digests())


@pytest.mark.skipif(not HAS_SOURCES, reason="cython/ sources not present (installed from a wheel)")
def test_no_c_in_pxd_verbatim_blocks():
    """The C is in .c/.h files, declared by ``cdef extern from "<header>"``."""
    verbatim = []
    for dirpath, _, filenames in os.walk(os.path.join(ROOT, "cython")):
        for fn in filenames:
            if fn.endswith((".pxd", ".pyx")):
                with open(os.path.join(dirpath, fn), encoding="utf-8") as f:
                    if 'cdef extern from *:\n    """' in f.read():
                        verbatim.append(fn)
    assert verbatim == []


@pytest.mark.skipif(not HAS_SOURCES or shutil.which("git") is None
                    or not os.path.exists(os.path.join(ROOT, ".git")),
                    reason="needs the git checkout")
def test_git_does_not_ignore_the_hand_written_c():
    files = [f for fs in _build.C_SOURCES.values() for f in fs] + list(_build.C_HEADERS)
    proc = subprocess.run(["git", "check-ignore", "--no-index", "-v", "-n"] + files, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    patterns = [line.split("\t")[0].split(":", 2)[-1] for line in proc.stdout.splitlines()]
    ignored = [p for p in patterns if p and not p.startswith("!")]
    assert ignored == []


# -- the cython/ folder never stands in for the Cython package ------------------------------

@pytest.mark.skipif(not HAS_SOURCES, reason="cython/ sources not present (installed from a wheel)")
def test_the_cython_folder_is_no_package():
    """A folder without ``__init__.py`` is at most a namespace package, which any regular
    module or package of the same name on the path takes precedence over."""
    inits = [os.path.relpath(os.path.join(d, "__init__.py"), ROOT)
             for d, _, fns in os.walk(os.path.join(ROOT, "cython")) if "__init__.py" in fns]
    assert inits == []


@pytest.mark.skipif(importlib.util.find_spec("Cython") is None, reason="Cython not installed")
def test_cython_imports_from_the_root_resolve_to_the_installed_package():
    code = ("import Cython, cython, os; "
            "print(os.path.realpath(Cython.__file__)); print(os.path.realpath(cython.__file__)); "
            "print(cython.compiled)")
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    big, small, compiled = proc.stdout.split()
    root = os.path.realpath(ROOT) + os.sep
    cython_dir = root + "cython" + os.sep
    assert not big.startswith(cython_dir) and not small.startswith(cython_dir)
    assert compiled == "False"
