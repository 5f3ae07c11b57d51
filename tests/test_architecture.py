"""The rules the package layout keeps (docs/architecture.md), checked on the import graph.

* the contracts in ``pyproject.toml`` (``[tool.importlinter]``): agents, the wire format
  and the switch agent import no runtime, CLI, asyncio, socket, clock or global random;
  topologies import no protocol and no Mininet; only ``gse.runtimes.mininet`` imports
  Mininet; the simulation and UDP runtimes do not import each other; the CLI sits on
  sweeps and sweeps on the Python API (``gse.api``), which nothing below imports;
* no import cycle among the project's modules (imports inside functions count);
* no module over 600 lines.

The contracts need import-linter (the test extra) and are also checked against a copy of
the tree with a rule broken on purpose, so that a checker that silently checks nothing
would fail here.  The other checks need only the standard library (the import graph is
read with ``ast``) and run without it.
"""

import ast
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("gse", "switchmodel", "topologies")
MAX_LINES = 600
SKIPPED_DIRS = ("_compiled", "__pycache__")

needs_importlinter = pytest.mark.skipif(
    importlib.util.find_spec("importlinter") is None,
    reason="pip install import-linter (test extra)")


def lint_imports(root):
    """Run import-linter on the tree at ``root`` in a fresh interpreter: (exit code, output)."""
    env = dict(os.environ, PYTHONPATH=root, GSE_PURE_PYTHON="1")
    code = ("import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    return proc.returncode, proc.stdout


@needs_importlinter
def test_import_contracts_are_kept():
    rc, out = lint_imports(ROOT)
    assert rc == 0, out
    assert "broken" in out and "0 broken" in out, out


def _copy_tree(dst):
    for pkg in PACKAGES:
        shutil.copytree(os.path.join(ROOT, pkg), os.path.join(dst, pkg),
                        ignore=shutil.ignore_patterns(*SKIPPED_DIRS, "*.so"))
    shutil.copy(os.path.join(ROOT, "pyproject.toml"), dst)


def _append(path, line):
    with open(path, "a") as f:
        f.write("\n" + line + "\n")


BROKEN = {
    "agent-opens-a-socket": ("gse/agents/sender.py", "import socket  # noqa", "sans-I/O"),
    "agent-imports-a-runtime": ("gse/agents/receiver.py",
                                "import gse.runtimes.sim.run  # noqa", "sans-I/O"),
    "topology-imports-a-protocol": ("topologies/fattree.py", "import gse.agents.sender  # noqa",
                                    "plain data"),
    "udp-runtime-imports-the-simulator": ("gse/runtimes/udp/results.py",
                                          "import gse.runtimes.sim.network  # noqa",
                                          "do not import each other"),
    "sweep-imports-the-cli": ("gse/sweep/single.py", "import gse.cli.main  # noqa",
                              "sits on sweeps"),
    "metrics-import-the-api": ("gse/metrics/records.py", "import gse.api.runner  # noqa",
                               "do not import"),
    "a-runtime-imports-the-replay-driver": ("gse/runtimes/sim/run.py",
                                            "import gse.workloads.replay  # noqa",
                                            "The layers:"),
    "metrics-import-a-runtime": ("gse/metrics/report.py", "import gse.runtimes.sim.run  # noqa",
                                 "The layers:"),
    "the-wire-imports-an-agent": ("gse/wire/packet.py", "import gse.agents.sender  # noqa",
                                  "The layers:"),
}


def test_every_workloads_module_has_its_layer():
    """The layers contract names gse.workloads' modules one by one (data below the
    runtimes, drivers above): a new module must be placed, not left out of every layer."""
    tomllib = pytest.importorskip("tomllib", reason="tomllib: Python 3.11 or newer")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        contracts = tomllib.load(f)["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["id"] == "layers")["layers"]
    placed = {m.strip() for layer in layers for m in layer.split(":")}
    pkg = os.path.join(ROOT, "gse", "workloads")
    names = {"gse.workloads." + (fn[:-3] if fn.endswith(".py") else fn)
             for fn in os.listdir(pkg)
             if (fn.endswith(".py") and fn != "__init__.py")
             or os.path.isfile(os.path.join(pkg, fn, "__init__.py"))}
    assert names and not names - placed, sorted(names - placed)


@needs_importlinter
@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_rule_is_reported(tmp_path, case):
    path, line, contract = BROKEN[case]
    _copy_tree(str(tmp_path))
    _append(os.path.join(str(tmp_path), path), line)
    rc, out = lint_imports(str(tmp_path))
    assert rc != 0, out
    assert "0 broken" not in out, out
    broken_part = out.split("Broken contracts", 1)[1]
    assert contract in broken_part.replace("\n", " "), out


# -- import cycles --------------------------------------------------------------------------

def import_cycles(edges):
    """The strongly connected components of more than one module (Tarjan, iterative):
    ``edges`` maps a module to the modules it imports."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def test_the_cycle_finder_finds_cycles():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set(), "c": {"c"}}) == []
    assert import_cycles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}) == [["a", "b"],
                                                                               ["c", "d"]]


def project_modules(root=ROOT):
    """Every module of ``PACKAGES`` under ``root``: dotted name -> (path, is a package)."""
    out = {}
    for top in PACKAGES:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
            package = os.path.relpath(dirpath, root).replace(os.sep, ".")
            for fn in filenames:
                if fn.endswith(".py"):
                    is_pkg = fn == "__init__.py"
                    name = package if is_pkg else package + "." + fn[:-3]
                    out[name] = (os.path.join(dirpath, fn), is_pkg)
    return out


def import_graph(root=ROOT):
    """Which project modules each project module imports, read with ``ast`` (imports inside
    functions count; ``from p import m`` is an import of the module ``p.m`` when there is
    one, else of ``p``; relative imports resolved): module -> set of modules."""
    modules = project_modules(root)
    edges = {}
    for name, (path, is_pkg) in modules.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        package = name if is_pkg else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[:len(parts) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                for a in node.names:
                    sub = base + "." + a.name
                    found.add(sub if sub in modules else base)
        edges[name] = {m for m in found if m in modules and m != name}
    return edges


def test_the_import_graph_reads_every_kind_of_import(tmp_path):
    pkg = tmp_path / "gse"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("import gse.b\nfrom gse.sub import c\nfrom gse import b as x\n")
    (pkg / "b.py").write_text("def f():\n    from .sub.c import g\n    import os\n")
    (pkg / "sub" / "__init__.py").write_text("from ..a import name\n")
    (pkg / "sub" / "c.py").write_text("from . import d\nfrom .. import b\n")
    (pkg / "_compiled").mkdir()
    (pkg / "_compiled" / "a.py").write_text("import gse.b\n")
    assert import_graph(str(tmp_path)) == {
        "gse": set(), "gse.a": {"gse.b", "gse.sub.c"}, "gse.b": {"gse.sub.c"},
        "gse.sub": {"gse.a"}, "gse.sub.c": {"gse.sub", "gse.b"}}


@pytest.mark.skipif(importlib.util.find_spec("grimp") is None,
                    reason="grimp comes with import-linter")
def test_the_import_graph_agrees_with_grimp():
    """The standard-library reading of the graph is the one import-linter checks."""
    import grimp
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    theirs = {m: {d for d in graph.find_modules_directly_imported_by(m) if d in graph.modules}
              for m in graph.modules}
    assert import_graph() == theirs


def test_no_import_cycles():
    assert import_cycles(import_graph()) == []


# -- module size ----------------------------------------------------------------------------

def test_no_module_over_600_lines():
    long = []
    for top in PACKAGES + ("cython",):
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
            dirnames[:] = [d for d in dirnames if d not in SKIPPED_DIRS]
            for fn in filenames:
                if fn.endswith((".py", ".pyx", ".pxd", ".c", ".h")):
                    path = os.path.join(dirpath, fn)
                    with open(path, encoding="utf-8") as f:
                        n = sum(1 for _ in f)
                    if n > MAX_LINES:
                        long.append("%s: %d lines" % (os.path.relpath(path, ROOT), n))
    assert long == [], "split by responsibility: %s" % ", ".join(long)
