"""``gse plot``: figures from any run's outputs (matplotlib; docs/plots.md).

    gse plot heatmap TS_DIR -o queues.png            # queue over time per tier
    gse plot goodput TS_DIR [TS_DIR ...] -o goodput.png
    gse plot fct RECORDS [RECORDS ...] -o fct.png    # .jsonl, .csv or .parquet

``TS_DIR`` is what ``--sample-us`` wrote (``--timeseries``); ``RECORDS`` what
``--records`` wrote, from any runtime (sim, UDP, Mininet, replay).
"""

import json
import os

from gse.metrics.report import read_records
from gse.metrics.timeseries import TimeSeries


def add_commands(sub):
    p = sub.add_parser("plot", help="draw queue heat maps, goodput over time or FCT CDFs "
                       "from a run's outputs", description=__doc__.split("\n\n")[0])
    kinds = p.add_subparsers(dest="plot", required=True)
    h = kinds.add_parser("heatmap", help="queue occupancy over time, one panel per tier")
    h.add_argument("timeseries", metavar="TS_DIR", help="a --timeseries folder")
    h.add_argument("--value", choices=("queue_peak_bytes", "queue_bytes"),
                   default="queue_peak_bytes",
                   help="the queue's peak within each bin (default) or its size at the end")
    h.add_argument("--tiers", help="only these, comma-separated: a tier (edge) or tier and "
                                   "direction (edge:up)")
    g = kinds.add_parser("goodput", help="goodput over time, one line per time series")
    g.add_argument("timeseries", nargs="+", metavar="TS_DIR")
    g.add_argument("--hosts", help="per-host lines for these host ids (default: the total)")
    f = kinds.add_parser("fct", help="flow completion time CDFs, one line per records file")
    f.add_argument("records", nargs="+", metavar="RECORDS")
    f.add_argument("--log-x", action="store_true", help="logarithmic time axis")
    for q in (h, g):
        q.add_argument("--from-us", type=float, default=None, help="start of the time axis")
        q.add_argument("--to-us", type=float, default=None, help="end of the time axis")
    for q in (h, g, f):
        q.add_argument("-o", "--out", required=True, metavar="FILE.png",
                       help="the image to write (.png, .svg, .pdf)")
        q.add_argument("--title", help="the figure's title")
        q.add_argument("--label", action="append", metavar="NAME",
                       help="a legend label per input, in order (default: the protocol)")
    return {"plot": cmd_plot}


def _summary(directory):
    path = os.path.join(directory, "summary.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def _labels(args, inputs, default):
    labels = args.label or []
    if labels and len(labels) != len(inputs):
        raise ValueError("--label given %d times for %d inputs" % (len(labels), len(inputs)))
    return labels or [default(x) for x in inputs]


def cmd_plot(args):
    from gse.metrics import plots         # matplotlib: only here
    if args.plot == "heatmap":
        ts = TimeSeries.read(args.timeseries)
        tiers = [t.strip() for t in args.tiers.split(",")] if args.tiers else None
        plots.queue_heatmaps(ts, args.out, _summary(args.timeseries), args.value, tiers,
                             args.title, args.from_us, args.to_us)
    elif args.plot == "goodput":
        series = [TimeSeries.read(d) for d in args.timeseries]
        labels = _labels(args, series, lambda ts: ts.meta.get("protocol", "run"))
        hosts = [int(h) for h in args.hosts.split(",")] if args.hosts else None
        plots.goodput_over_time(list(zip(labels, series)), args.out, hosts, args.title,
                                args.from_us, args.to_us)
    else:
        rows = [read_records(path) for path in args.records]
        labels = _labels(args, args.records, _record_label)
        plots.fct_cdf(list(zip(labels, rows)), args.out, args.log_x, args.title)
    print("plot written to %s" % args.out)
    return 0


def _record_label(path):
    name = os.path.basename(path)
    stem = name.rsplit(".", 1)[0]
    return stem.rsplit(".", 1)[-1] if "." in stem else stem
