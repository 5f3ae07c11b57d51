"""The linter and the type checker, run by the suite (docs/development.md).

* ``ruff check .`` with ``[tool.ruff]`` of ``pyproject.toml``: pyflakes, the pycodestyle
  errors E4/E7/E9, lines over 100 characters, whitespace warnings, mutable defaults;
* ``mypy`` with ``[tool.mypy]``: the packages ``gse``, ``switchmodel`` and ``topologies``
  at mypy's default strictness plus ``strict_equality``.

Each runs in a subprocess of this interpreter (the tools of the test extra, installed in
the venv); the test fails with the tool's report, and is skipped only when the tool is not
installed.  Each is also run once on a file with a fault planted on purpose, under the
project's own configuration, so that a configuration that silently checks nothing (an
exclude too wide, a ``files`` list that matches nothing) fails here too.
"""

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TYPED_PACKAGES = ("gse", "switchmodel", "topologies")


def _needs(module, extra="test"):
    return pytest.mark.skipif(importlib.util.find_spec(module) is None,
                              reason="%s is not installed (pip install -e '.[%s]')"
                              % (module, extra))


def _run(args, cwd=ROOT):
    env = dict(os.environ, GSE_PURE_PYTHON="1")   # mypy imports nothing; keep it that way
    proc = subprocess.run([sys.executable, "-m"] + args, cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=600)
    return proc.returncode, (proc.stdout + proc.stderr).strip()


@_needs("ruff")
def test_ruff_passes_on_the_tree():
    code, out = _run(["ruff", "check", "--no-cache", "."])
    assert code == 0, "ruff check . found problems:\n" + out


@_needs("ruff")
def test_ruff_configuration_catches_a_planted_fault(tmp_path):
    # a copy of the project's configuration, beside a module with one fault of each kind
    # the configuration selects beyond pyflakes
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        (tmp_path / "pyproject.toml").write_text(f.read())
    (tmp_path / "planted.py").write_text(textwrap.dedent("""\
        import os


        def f(x=[]):
            return x  # %s
        """ % ("x" * 100)))
    code, out = _run(["ruff", "check", "--no-cache", "."], cwd=tmp_path)
    assert code != 0
    for rule in ("F401", "B006", "E501"):
        assert rule in out, out


@_needs("mypy")
def test_mypy_passes_on_the_packages():
    code, out = _run(["mypy", "--no-error-summary"] + list(TYPED_PACKAGES))
    assert code == 0, "mypy found problems:\n" + out


@_needs("mypy")
def test_mypy_configuration_catches_a_planted_fault(tmp_path):
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        (tmp_path / "pyproject.toml").write_text(f.read())
    (tmp_path / "planted.py").write_text(textwrap.dedent("""\
        def count(n: int) -> int:
            return n + 1


        def same(a: int, b: str) -> bool:
            return a == b           # strict_equality: never equal


        count("three")
        """))
    code, out = _run(["mypy", "--no-error-summary", "--cache-dir", str(tmp_path / ".cache"),
                      "planted.py"], cwd=tmp_path)
    assert code != 0
    assert "[arg-type]" in out and "[comparison-overlap]" in out, out


@_needs("ruff")
@pytest.mark.parametrize("module", ["gse/runtimes/udp/io", "gse/runtimes/sim/sampler",
                                    "gse/wire/packet", "switchmodel/queue",
                                    "gse/runtimes/sim/network"])
def test_the_names_a_module_takes_from_c_are_the_ones_its_pxd_declares(module):
    # pyproject.toml lets ruff's F821 (undefined name) pass in gse/runtimes/udp/io.py and
    # gse/runtimes/sim/sampler.py, whose compiled builds call the C that their .pxd
    # declare: every name ruff would call undefined there must be declared in that .pxd,
    # or it is a real bug
    import json
    import re
    code, out = _run(["ruff", "check", "--no-cache", "--isolated", "--select", "F821",
                      "--output-format", "json", module + ".py"])
    names = {re.search(r"`(\w+)`", d["message"]).group(1) for d in json.loads(out or "[]")}
    assert names, "no C name found: the check checks nothing (ruff output: %s)" % out[:200]
    with open(os.path.join(ROOT, "cython", *module.split("/")) + ".pxd") as f:
        declared = set(re.findall(r"\w+", f.read()))
    assert sorted(names - declared) == []
