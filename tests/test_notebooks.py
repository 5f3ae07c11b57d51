"""The notebooks of examples/ (docs/notebooks.md) are documentation that runs: the suite
executes every one on the active build (compiled, or pure Python under
``GSE_PURE_PYTHON=1``, which the kernel inherits), failing on any cell's error, and
checks that git holds them without outputs.

Executed with nbclient rather than the nbmake plugin: the test chooses the kernel (this
interpreter, through a kernelspec written for the run, so a user's own ``python3``
kernel cannot stand in for the venv), its working folder and import path (this checkout),
and measures each notebook's CPU time (the kernel's, from ``RUSAGE_CHILDREN``) with no
extra pytest option for ``./dev test`` to remember.
"""

import json
import os
import resource
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("*.ipynb"))
EXPECTED = {"incast_gse_vs_roce.ipynb", "replay_trace_with_failure.ipynb",
            "sweep_dask.ipynb"}
CELL_TIMEOUT_S = 600


def _ids(path):
    return path.name


def test_the_documented_notebooks_are_there():
    assert EXPECTED <= {p.name for p in NOTEBOOKS}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids)
def test_a_committed_notebook_has_no_outputs(path):
    nb = json.loads(path.read_text())
    assert nb["nbformat"] == 4
    for i, cell in enumerate(nb["cells"]):
        where = "%s cell %d" % (path.name, i)
        assert "execution" not in cell.get("metadata", {}), where + ": execution timings"
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], where + ": outputs (strip them before committing)"
            assert cell["execution_count"] is None, where + ": an execution count"
        assert "attachments" not in cell or not cell["attachments"], where + ": attachments"


def _kernel(tmp_path, monkeypatch):
    """A kernelspec for this interpreter, found first (JUPYTER_PATH), named for the run."""
    name = "gse-test-python"
    spec = tmp_path / "jupyter" / "kernels" / name
    spec.mkdir(parents=True)
    spec.joinpath("kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "gse (%s)" % sys.executable, "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    # the kernel imports this checkout's gse, whatever the venv's install points at
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + (os.pathsep + path if path else ""))
    return name


def _cpu_of_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids)
def test_a_notebook_runs_without_error(path, tmp_path, monkeypatch):
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("ipykernel")
    nb = nbformat.read(str(path), as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name=_kernel(tmp_path, monkeypatch),
                                     timeout=CELL_TIMEOUT_S,
                                     resources={"metadata": {"path": str(EXAMPLES)}})
    before = _cpu_of_children()
    client.execute()                      # a cell's error raises CellExecutionError
    cpu = _cpu_of_children() - before
    build = "pure" if os.environ.get("GSE_PURE_PYTHON") else "compiled"
    print("\n%s: %.1f s of CPU (kernel and its children, %s build)" % (path.name, cpu, build))
    # every figure a cell returns is displayed as an image, not as "<Figure size ...>"
    images = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            images += "image/png" in data
            assert not (data.get("text/plain", "").startswith("<Figure")
                        and "image/png" not in data), "a figure shown as text: %s" % (
                            "".join(cell.source)[:80])
    assert images >= 1, "%s shows no figure" % path.name
