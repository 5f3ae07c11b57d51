"""One run of a sweep: ``gse sim``'s arguments in, one row of summary columns out.

The run is exactly what ``gse sim ARGV`` does (the same options, parsed into the same
``gse.api.Scenario``, run by ``gse.run``), so a sweep's row and a single
``gse sim --json`` of the same options hold the same figures.  ``run_row`` is what the
Dask workers call; it never raises: a run that fails comes back as a row with
``status = "failed"`` and the error, so one bad point does not lose the others.
"""

import argparse
import resource
import time
import traceback

from gse.api.options import add_scenario_options, add_stall_option, scenario_from_args
from gse.api.runner import run
from gse.api.scenario import Scenario
from gse.protocols import PROTOCOLS

# (column, type, where in the summary): the figures of one run, in table order
SUMMARY_COLUMNS = (
    ("messages", "int64", ("messages",)),
    ("delivered", "int64", ("delivered",)),
    ("lost", "int64", ("lost",)),
    ("completed", "int64", ("completed",)),
    ("fct_p50_us", "float64", ("fct_us", "p50")),
    ("fct_p99_us", "float64", ("fct_us", "p99")),
    ("fct_p999_us", "float64", ("fct_us", "p999")),
    ("fct_max_us", "float64", ("fct_us", "max")),
    ("slowdown_p50", "float64", ("slowdown", "p50")),
    ("slowdown_p99", "float64", ("slowdown", "p99")),
    ("slowdown_max", "float64", ("slowdown", "max")),
    ("goodput_p50_gbps", "float64", ("goodput_gbps", "p50")),
    ("goodput_min_gbps", "float64", ("goodput_gbps", "min")),
    ("drops", "int64", ("drops",)),
    ("trims", "int64", ("trims",)),
    ("retransmits", "int64", ("retransmits",)),
    ("ecn_marks", "int64", ("ecn_marks",)),
    ("pfc_pauses", "int64", ("pfc_pauses",)),
    ("paused_time_us", "float64", ("paused_time_us",)),
    ("peak_queue_bytes", "int64", ("peak_queue_bytes", "max")),
    ("base_rtt_us", "float64", ("base_rtt_us",)),
    ("sim_time_us", "float64", ("sim_time_us",)),
    ("events", "int64", ("events",)),
    ("wall_s", "float64", ("wall_s",)),
    # how the run ended: done, until, or stalled (the no-progress watchdog; gse sim's
    # --stall-us), so a row of a stuck run says so
    ("end", "string", ("end",)),
)
# columns that measure the machine, not the simulation (left out of identity checks)
WALL_COLUMNS = ("wall_s", "run_s", "worker_rss_mib")


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise ValueError("gse sim arguments: %s" % message)


def sim_parser():
    """``gse sim``'s options (those a sweep may set), raising ValueError on a bad one."""
    p = _Parser(prog="gse sim", add_help=False)
    add_scenario_options(p, PROTOCOLS)
    p.add_argument("--until-us", type=float, default=None)
    add_stall_option(p)
    return p


def parse_args(argv):
    return sim_parser().parse_args(list(argv))


def scenario(argv):
    """The ``gse.api.Scenario`` of ``gse sim ARGV``: a sweep row's run as data."""
    args = parse_args(argv)
    return scenario_from_args(args)


def run_summary(argv):
    """Run ``gse sim ARGV`` in this process (``gse.run`` of its Scenario); its summary,
    as ``gse sim --json`` has it."""
    return run(scenario(argv)).summary.to_dict()


def summary_row(summary):
    """The summary's figures as flat columns (``SUMMARY_COLUMNS``)."""
    row = {}
    for name, _typ, where in SUMMARY_COLUMNS:
        value = summary
        for k in where:
            value = value.get(k) if isinstance(value, dict) else None
        row[name] = value
    return row


def run_row(run_id, argv):
    """A table row for one run (never raises): ``run_id``, ``status`` ("ok" or
    "failed"), ``error``, the summary columns, ``run_s`` and ``worker_rss_mib`` (the peak
    resident size of the worker process so far)."""
    return _row(run_id, run_summary, argv)


def scenario_row(run_id, scenario_json):
    """``run_row`` of a Scenario given as JSON (a grid over a Scenario,
    ``gse.sweep.scenario_grid``): ``gse.run`` of exactly that Scenario."""
    return _row(run_id, scenario_summary, scenario_json)


def scenario_summary(scenario_json):
    """``gse.run(Scenario.from_json(scenario_json)).summary.to_dict()``."""
    return run(Scenario.from_json(scenario_json), log=_quiet).summary.to_dict()


def _quiet(*_args):
    """A worker prints nothing: what a run ignored is the same for the run done alone."""


def _row(run_id, summary_of, what):
    t0 = time.perf_counter()
    row = {"run_id": run_id, "status": "ok", "error": ""}
    try:
        row.update(summary_row(summary_of(what)))
    except Exception as exc:            # reported with the run's parameters, not raised
        row["status"] = "failed"
        row["error"] = "%s: %s" % (type(exc).__name__, exc)
        row["traceback"] = traceback.format_exc(limit=6)
        row.update({name: None for name, _t, _w in SUMMARY_COLUMNS})
    row["run_s"] = round(time.perf_counter() - t0, 3)
    row["worker_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return row
