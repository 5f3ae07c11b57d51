"""Options that watch a simulated run: time series (``--sample-us``) and the progress bar.

Shared by ``gse sim``, ``gse compare`` and ``gse replay`` (and the place a future
``gse sweep`` takes them from): ``add_observe_options`` adds the options,
``observers_for(args, label)`` builds what ``run_simulation(..., observers=...)`` takes,
``write_observed(args, result, label, multi)`` writes what they collected.  pcap
captures have their own options (``gse.cli.capture``).
"""

import os

from gse.config import PS_PER_US


def add_observe_options(p, sampling=True):
    g = p.add_argument_group("observation")
    if sampling:
        g.add_argument("--sample-us", type=float, default=None, metavar="N",
                       help="sample queues, link utilisation, host goodput, PFC pauses and "
                            "trims every N us of virtual time (docs/timeseries.md)")
        g.add_argument("--timeseries", metavar="DIR", default=None,
                       help="where --sample-us writes ports.parquet and hosts.parquet "
                            "(default: ./timeseries; per protocol in DIR/PROTOCOL when "
                            "several run)")
        g.add_argument("--timeseries-format", choices=("parquet", "csv"), default="parquet",
                       help="file format of the time series (parquet needs pyarrow)")
    return g


def sample_ps(args):
    """``--sample-us`` in picoseconds, 0 when not sampling."""
    us = getattr(args, "sample_us", None)
    if us is None:
        return 0
    if us <= 0:
        raise ValueError("--sample-us must be positive, got %r" % us)
    ps = int(round(us * PS_PER_US))
    if ps <= 0:
        raise ValueError("--sample-us %r is below a picosecond" % us)
    return ps


def check_outputs(args):
    """Fail before a long run, not after it: the format's library must be importable."""
    if sample_ps(args) and args.timeseries_format == "parquet":
        from gse.metrics.columnar import pyarrow_module
        pyarrow_module()


def timeseries_dir(args, label, multi):
    base = args.timeseries or "timeseries"
    return os.path.join(base, label) if multi else base


def write_observed(args, result, label, multi=False):
    """Write the time series a run collected; returns the paths written."""
    ts = getattr(result, "timeseries", None)
    if ts is None:
        return []
    from gse.cli.common import write_json
    d = timeseries_dir(args, label, multi)
    paths = ts.write(d, args.timeseries_format)
    write_json(os.path.join(d, "summary.json"), result.summary)
    paths.append(os.path.join(d, "summary.json"))
    if not getattr(args, "quiet", False):
        print("time series (%d bins of %g us, %d ports, %d hosts) written to %s"
              % (ts.nbins, ts.bin_ps / PS_PER_US, ts.nports, ts.nhosts, d))
    return paths
