"""Running a sweep on Dask (``dask.distributed``) and keeping its table.

The runs of a ``Spec`` are independent simulations, so they go to a Dask cluster as
independent tasks (``Client.submit`` of ``gse.sweep.single.run_row``): by default a
``LocalCluster`` of this machine's cores (one single-threaded worker process per core:
the simulation is CPU-bound Python), or any running cluster given by its scheduler's
address (``tcp://HOST:PORT``), whose workers must have this project installed.

The table has one row per run, in the grid's order: ``run_id``, ``status``, ``error``,
one column per grid key (its value or its group's label), the ``gse sim`` arguments
(``argv``), the summary columns (``gse.sweep.single.SUMMARY_COLUMNS``), and what the run
cost (``run_s``, ``worker_rss_mib``).  It is written as Parquet and as CSV
(``gse.metrics.columnar``) when the first run completes, every few seconds after, and at
the end, so an interrupted sweep keeps what it finished (``gse sweep`` ends on SIGINT or
SIGTERM by writing it: ``gse.cli.signals``); run again, it skips every run whose
``run_id`` is already in the table with status ``ok`` (failed runs are tried again).
A run that fails (an exception, or its worker died) is a row with ``status=failed``
and the error; the others go on.
"""

import os
import time

from gse.metrics.columnar import read_table, write_table
from gse.sweep.single import SUMMARY_COLUMNS, parse_args

WRITE_EVERY_S = 5.0


class SweepResult:
    """What a sweep did: the table's rows (grid order) and counts of this invocation."""

    __slots__ = ("rows", "ran", "skipped", "failed", "paths", "spec")

    def __init__(self, rows, ran, skipped, failed, paths, spec=None):
        self.rows = rows
        self.ran = ran              # runs executed now
        self.skipped = skipped      # runs already in the table (resumed)
        self.failed = failed        # runs that failed now
        self.paths = paths          # (parquet path, csv path), or None: not written
        self.spec = spec

    def columns(self):
        """The table as {column: list}, the columns and types of the files."""
        return {name: [_cell(row.get(name), typ) for row in self.rows]
                for name, typ in schema_of(self.spec)}

    def table(self):
        """The table as a pyarrow Table (needs pyarrow)."""
        from gse.metrics.columnar import pyarrow_module
        pa = pyarrow_module()
        cols = self.columns()
        return pa.table({name: pa.array(cols[name], type=pa.type_for_alias(typ))
                         for name, typ in schema_of(self.spec)})

    def frame(self):
        """The table as a pandas DataFrame (needs pandas)."""
        try:
            import pandas  # noqa: F401  (to_pandas needs it; a clear message if not)
        except ImportError:
            raise ImportError("frame() needs pandas (pip install pandas); table() gives a "
                              "pyarrow Table") from None
        return self.table().to_pandas()

    def __repr__(self):
        return "SweepResult(%s: %d rows, %d ran, %d skipped, %d failed)" % (
            getattr(self.spec, "name", "?"), len(self.rows), self.ran, self.skipped,
            self.failed)


def table_paths(out):
    """(OUT.parquet, OUT.csv) for an output stem (a .parquet or .csv suffix is dropped)."""
    stem = out
    for ext in (".parquet", ".csv"):
        if stem.lower().endswith(ext):
            stem = stem[:-len(ext)]
    return stem + ".parquet", stem + ".csv"


def _column_type(values):
    vals = [v for v in values if v is not None]
    if vals and all(isinstance(v, bool) for v in vals):
        return "bool"
    if vals and all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
        return "int64"
    if vals and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
        return "float64"
    return "string"


def schema_of(spec):
    """The table's columns, in order, with their types."""
    grid = [(key, _column_type([spec.label(v) for v in values])) for key, values in spec.grid]
    return ([("run_id", "string"), ("status", "string"), ("error", "string")] + grid
            + [("argv", "string"), ("scenario", "string")]
            + [(n, t) for n, t, _w in SUMMARY_COLUMNS]
            + [("run_s", "float64"), ("worker_rss_mib", "float64")])


def read_done(paths):
    """{run_id: row} of the runs an earlier invocation finished (status ok)."""
    for path in paths:
        if os.path.exists(path):
            try:
                cols, _meta = read_table(path)
            except (OSError, ValueError, RuntimeError):
                continue
            names = list(cols)
            n = len(cols[names[0]]) if names else 0
            out = {}
            for i in range(n):
                row = {name: cols[name][i] for name in names}
                if row.get("status") == "ok":
                    out[row["run_id"]] = row
            return out
    return {}


def write_rows(rows, spec, paths):
    """Write the table (both files), each through a temporary file and a rename;
    nothing when ``paths`` is None (a sweep kept in memory)."""
    if paths is None:
        return None
    schema = schema_of(spec)
    columns = {name: [_cell(row.get(name), typ) for row in rows] for name, typ in schema}
    meta = {"sweep": spec.name, "spec": os.path.abspath(spec.path) if spec.path else ""}
    for path, fmt in zip(paths, ("parquet", "csv")):
        stem = path[:-len(fmt) - 1]
        tmp = "%s.tmp.%s" % (stem, fmt)
        write_table(tmp, columns, schema, meta, fmt=fmt)
        os.replace(tmp, path)
        if fmt == "csv":                  # the CSV's types and metadata beside it
            os.replace(stem + ".tmp.meta.json", stem + ".meta.json")
    return paths


def _cell(value, typ):
    if value is None:
        return None
    if typ == "string":
        return str(value)
    if typ == "int64":
        return int(value)
    if typ == "float64":
        return float(value)
    return bool(value)


class LocalDask:
    """A Dask client: on ``scheduler`` (an address) or on a new ``LocalCluster`` of
    ``workers`` single-threaded processes (default: this machine's cores)."""

    def __init__(self, scheduler=None, workers=None):
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError as exc:
            raise RuntimeError("gse sweep needs dask.distributed: pip install "
                               "'gse-transport[sweep]'") from exc
        self.cluster = None
        if scheduler:
            self.client = Client(scheduler)
        else:
            n = workers or os.cpu_count() or 1
            self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                        dashboard_address=None)
            self.client = Client(self.cluster)

    def close(self, interrupted=False):
        """Close the client and the local cluster.  ``interrupted``: runs may still be
        going; their workers are stopped the hard way (the nanny kills a busy worker after
        a few seconds), so their logs are hushed first: a worker that loses the
        scheduler while it computes logs a traceback of no use to anyone."""
        if interrupted and self.cluster is not None:
            try:
                self.client.run(_hush_logs, on_error="ignore")
            except Exception:             # the workers may be gone already
                pass
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self.close(interrupted=exc_type is not None)
        return False


def _hush_logs():
    """(Run on a worker) only critical log records from here on."""
    import logging
    logging.getLogger("distributed").setLevel(logging.CRITICAL)


def run_sweep(spec, out, client=None, scheduler=None, workers=None, progress=None,
              resume=True):
    """Run ``spec``'s grid on Dask, writing the table at ``out`` (.parquet and .csv;
    None: rows in memory only, nothing resumed).  ``spec``: a ``gse.sweep.spec.Spec``
    (``gse sim`` options) or a ``gse.sweep.scenario_grid.ScenarioSpec``.

    ``client``: a ``dask.distributed.Client`` to use (else one is made from
    ``scheduler`` or a local cluster of ``workers``); ``progress(done, total, failed)``
    is called as runs complete.  Returns a ``SweepResult``."""
    runs = []
    seen = set()
    for run in spec.runs():
        if run.run_id in seen:
            continue                      # the same options twice: one run
        seen.add(run.run_id)
        if run.argv:
            try:
                parse_args(run.argv)
            except ValueError as exc:
                raise ValueError("%s: run %s: %s" % (spec.path, run.labels, exc)) from None
        runs.append(run)
    paths = None if out is None else table_paths(out)
    done = read_done(paths) if resume and paths else {}
    pending = [r for r in runs if r.run_id not in done]
    rows = dict(done)
    by_id = {r.run_id: r for r in runs}
    failed = 0
    total = len(runs)

    def report():
        if progress is not None:
            progress(len(rows), total, failed)

    def ordered():
        return [rows[r.run_id] for r in runs if r.run_id in rows]

    report()
    if pending:
        own = None
        finished = False
        if client is None:
            own = LocalDask(scheduler, workers)
            client = own.client
        try:
            from dask.distributed import as_completed
            futures = [client.submit(*_task(r), pure=False,
                                     key="gse-run-%s-%s" % (r.run_id, os.getpid()))
                       for r in pending]
            last = None                   # the first row is written at once
            for fut in as_completed(futures):
                run = by_id[fut.key.split("-")[2]]
                try:
                    row = fut.result()
                except Exception as exc:  # the worker died, or the task could not run
                    row = {"run_id": run.run_id, "status": "failed",
                           "error": "%s: %s" % (type(exc).__name__, exc)}
                row = dict(row)
                row.pop("traceback", None)
                row.update(run.labels)
                row["argv"] = " ".join(run.argv)
                try:
                    row["scenario"] = run.scenario_json()
                except ValueError:        # options no Scenario takes: the row says why
                    row["scenario"] = None
                if row["status"] != "ok":
                    failed += 1
                rows[run.run_id] = row
                fut.release()
                report()
                if last is None or time.monotonic() - last > WRITE_EVERY_S:
                    write_rows(ordered(), spec, paths)
                    last = time.monotonic()
            finished = True
        finally:
            write_rows(ordered(), spec, paths)      # what finished, even if interrupted
            if own is not None:
                own.close(interrupted=not finished)
    write_rows(ordered(), spec, paths)
    return SweepResult(ordered(), len(pending), len(done), failed, paths, spec)


def _task(run):
    function, args = run.task()
    return (function,) + tuple(args)
