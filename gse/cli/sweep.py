"""``gse sweep``: a grid of simulations (protocols x parameters x seeds x workloads) on Dask.

    gse sweep grid.json                          # a local cluster of this machine's cores
    gse sweep grid.json --workers 2 --out results/grid
    gse sweep grid.json --scheduler tcp://10.0.0.5:8786
    gse sweep grid.json --dry-run                # the runs, without running them

The grid file is described in docs/sweeps.md: a grid of ``gse sim`` options
(``"base"``, ``gse.sweep.spec``) or a grid over a Scenario (``"scenario"``,
``gse.sweep.scenario_grid``, the form of ``gse.sweep(base, grid)``); the table (one row
per run, Parquet and CSV) in ``gse.sweep.runner``.  Run again, a sweep skips the runs
already in its table.
"""

import sys

from gse.cli.progress import Progress, wanted
from gse.cli.signals import Interrupted, StopSignals
from gse.sweep.runner import read_done, run_sweep, table_paths
from gse.sweep.scenario_grid import load_sweep


def add_commands(sub):
    p = sub.add_parser("sweep", help="run a grid of simulations on Dask, one table of results")
    p.add_argument("spec", metavar="SPEC.json", help="the grid (docs/sweeps.md)")
    p.add_argument("--out", metavar="STEM",
                   help="table files STEM.parquet and STEM.csv (default: the spec's name "
                        "beside it)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="an existing Dask cluster (default: a local cluster)")
    p.add_argument("--workers", type=int, default=None,
                   help="local cluster: worker processes (default: this machine's cores)")
    p.add_argument("--fresh", action="store_true",
                   help="run everything again (default: skip the runs already in the table)")
    p.add_argument("--dry-run", action="store_true", help="list the runs and stop")
    p.add_argument("--quiet", action="store_true", help="no progress bar or table")
    return {"sweep": cmd_sweep}


def _default_out(path):
    stem = path[:-5] if path.lower().endswith(".json") else path
    return stem


class _Bar:
    """Runs done out of the total, on ``gse.cli.progress``'s counter (nothing when not on a
    terminal or with ``--quiet``)."""

    def __init__(self, args, total):
        self.progress = Progress(enabled=wanted(args))
        self.total = total
        self.update = None

    def __enter__(self):
        self.progress.__enter__()
        self.update = self.progress.counter("sweep", self.total)
        return self

    def __call__(self, done, total, failed):
        self.update(done, status="%d failed" % failed if failed else "")

    def __exit__(self, *exc):
        return self.progress.__exit__(*exc)


def cmd_sweep(args):
    spec = load_sweep(args.spec)
    runs = spec.runs()
    out = args.out or _default_out(args.spec)
    if args.dry_run:
        for run in runs:
            print(run.run_id, " ".join(run.argv) or run.scenario_json())
        print("%d runs; table: %s" % (len(runs), ", ".join(table_paths(out))))
        return 0
    try:
        with StopSignals(raise_at_once=True) as stop, _Bar(args, len(runs)) as bar:
            result = run_sweep(spec, out, scheduler=args.scheduler, workers=args.workers,
                               progress=bar, resume=not args.fresh)
    except Interrupted as exc:         # run_sweep wrote the rows it had on its way out
        kept = read_done(table_paths(out))
        print("gse sweep: interrupted by %s: %d of %d runs in %s (run it again to go on)"
              % (exc.signal, len(kept), len(runs), ", ".join(table_paths(out))),
              file=sys.stderr)
        return stop.exit_code
    if not args.quiet:
        print("%s: %d runs (%d now, %d from the table), %d failed -> %s"
              % (spec.name, len(result.rows), result.ran, result.skipped, result.failed,
                 ", ".join(result.paths)))
        for row in result.rows:
            if row.get("status") != "ok":
                labels = ", ".join("%s=%s" % (k, row.get(k)) for k, _v in spec.grid)
                print("  failed: %s (%s): %s" % (row["run_id"], labels, row.get("error")))
    return 0 if result.failed == 0 else 1
