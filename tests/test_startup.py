"""Start-up (issue 30): a run imports what it uses, ``gse <command>`` that command alone.

``gse.runtimes.sim.run`` imports the time series, failures, triggers, pinned routes, the
htsim-PFC fabric and the gse-fabric switches only when a run asks for them, and
``gse.cli.main`` imports only the module of the command it is given.  These tests check
the table that maps commands to modules, and which modules a plain run and ``gse sim``
leave unloaded (in fresh interpreters).  Timings: experiments/bench_startup.py.
"""

import argparse
import importlib
import json
import os
import subprocess
import sys

import pytest

from gse.cli import main as cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONLY_WHEN_ASKED = ("gse.runtimes.sim.sampler", "gse.metrics.timeseries",
                   "gse.runtimes.sim.faults", "gse.workloads.faults",
                   "gse.runtimes.sim.triggers", "gse.runtimes.sim.routes",
                   "gse.runtimes.sim.htsim_model", "gse.runtimes.sim.fabric_nodes")


def loaded_after(code, packages=("gse", "switchmodel", "topologies")):
    """The modules of ``packages`` (the project's) loaded in a fresh interpreter after
    running ``code``."""
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json\nprint(json.dumps("
                          "sorted(m for m in sys.modules if m.split('.')[0] in "
                          "%r)))" % (tuple(packages),)],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_every_command_is_mapped_to_the_module_that_adds_it():
    seen = {}
    for module in cli.COMMANDS:
        sub = argparse.ArgumentParser().add_subparsers()
        for name in importlib.import_module(module).add_commands(sub):
            seen[name] = module
    assert seen == cli.COMMAND_MODULES


@pytest.mark.parametrize("argv,command", [
    (["sim", "--k", "4"], "sim"), (["agent-configs", "x"], "agent-configs"),
    (["--version"], None), (["-h", "sim"], None), (["--help"], None), ([], None),
    (["simulate"], None), (["sim", "--help"], "sim")])
def test_the_command_is_read_from_the_command_line(argv, command):
    assert cli.command_of(argv) == command


def test_an_unknown_command_is_still_refused_with_the_list_of_commands(capsys):
    with pytest.raises(SystemExit):
        cli.main(["simulate"])
    err = capsys.readouterr().err
    assert "invalid choice: 'simulate'" in err and "replay" in err and "sweep" in err


def test_a_plain_run_loads_none_of_what_only_some_runs_use():
    loaded = loaded_after(
        "import random\n"
        "from gse.runtimes.sim.run import run_simulation\n"
        "from gse.workloads.traffic import permutation\n"
        "from topologies import fat_tree\n"
        "t = fat_tree(4)\n"
        "r = run_simulation(t, permutation(16, 20000, random.Random(1)), 'gse')\n"
        "assert r.summary['lost'] == 0\n")
    assert "gse.runtimes.sim.network" in loaded
    assert loaded.isdisjoint(ONLY_WHEN_ASKED), sorted(loaded & set(ONLY_WHEN_ASKED))


def test_a_sampled_run_loads_the_sampler():
    loaded = loaded_after(
        "import random\n"
        "from gse.runtimes.sim.run import run_simulation\n"
        "from gse.workloads.traffic import permutation\n"
        "from topologies import fat_tree\n"
        "r = run_simulation(fat_tree(4), permutation(16, 20000, random.Random(1)), 'roce',\n"
        "                   sample_ps=10**6)\n"
        "assert r.timeseries.nbins > 0\n")
    assert {"gse.runtimes.sim.sampler", "gse.metrics.timeseries"} <= loaded


def test_gse_sim_loads_no_other_command():
    loaded = loaded_after("from gse.cli.main import main\n"
                          "assert main(['sim', '--k', '4', '--size', '20000']) == 0\n")
    others = {m for m in cli.COMMANDS if m != "gse.cli.sim"}
    assert "gse.cli.sim" in loaded and loaded.isdisjoint(others)
    assert not any(m.startswith(("gse.runtimes.udp", "gse.workloads.traces"))
                   for m in loaded)


def test_a_roce_run_loads_neither_gse_agents_nor_what_only_parsing_needs():
    """``gse sim --protocol roce``: the host agent module is imported by the protocol that
    runs (gse.protocols.host_factory); the scenario is no dataclass (``dataclasses`` brings
    ``inspect``, ``ast`` and ``dis``); ``decimal`` only parses a failure schedule;
    ``typing`` is for the type checker (``TYPE_CHECKING = False``: 2.9 ms to import) and
    ``shutil`` (with ``bz2`` and ``lzma``: 2.5 ms) only told argparse the terminal's
    width (gse.cli.main.terminal_columns); ``threading`` only told the signal handlers
    the main thread (``signal.signal`` refuses any other: gse.cli.signals)."""
    code = ("from gse.cli.main import main\n"
            "assert main(['sim', '--k', '4', '--size', '20000', '--protocol', 'roce']) == 0\n")
    loaded = loaded_after(code)
    assert "gse.agents.roce_host" in loaded
    assert loaded.isdisjoint({"gse.agents.gse_host", "gse.agents.plain_host",
                              "switchmodel.fabric"}), sorted(loaded)
    stdlib = loaded_after(code, ("dataclasses", "inspect", "decimal", "typing", "shutil",
                                  "threading", "cython"))
    top = {m.split(".")[0] for m in stdlib}
    if "cython" in top:         # the pure build's Cython shadow module imports typing itself
        top -= {"cython", "typing"}
    assert not top, sorted(stdlib)


def test_a_closed_pipe_ends_the_command_quietly():
    """`gse traffic ... | head -1`: the reader leaves early; no 'gse: error: Broken pipe'
    (the .cm is some 500 kB, far more than a pipe holds, so the writer does meet the
    closed pipe)."""
    import subprocess
    import sys
    code = ("import sys\nfrom gse.cli.main import main\n"
            "r = main(['traffic', '--k', '8', '--traffic', 'all-to-all',"
            " '--out', '/dev/stdout'])\nsys.exit(r)")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdout.read(1)                     # one byte, then the reader goes away
    p.stdout.close()
    err = p.stderr.read().decode()
    rc = p.wait()
    assert "Broken pipe" not in err and "Traceback" not in err, err
    assert rc in (0, 141), (rc, err)
