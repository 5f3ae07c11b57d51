"""``plot_*``: figures of ``Result`` objects (docs/api.md, "Plots").

Each helper returns a matplotlib ``Figure`` (never shows it: a notebook displays a
returned Figure, a script calls ``fig.savefig(path)``), drawn by the code behind ``gse
plot`` (``gse.metrics.plots``), so a figure from the API and one from the command line's
files are the same picture.  matplotlib loads on the first call, not with ``import gse``.
They are also ``Result`` methods (``result.plot_goodput()``) and ``gse.plot_*``.

* ``plot_fct_cdf(results)``: completion-time CDFs of one Result, a list of them or the
  ``{protocol: Result}`` that ``gse.compare`` returns, one line each;
* ``plot_queue_heatmap(result)``: queue occupancy per port over time, a panel per tier
  and direction (needs a time series: ``sample_us`` in the Scenario);
* ``plot_timeseries(result, metric)``: one column of the time series over time, a line
  per tier and direction (``goodput_gbps``: the hosts' goodput);
* ``plot_goodput(results)``: the hosts' total goodput over time, one line per Result,
  with the scenario's failures, their detection and restoration marked.
"""

from gse.metrics import plots as draw

HOST_METRICS = ("goodput_gbps",)


def _labelled(results):
    """{label: Result} from a Result, an iterable of them or a mapping (kept as is)."""
    if hasattr(results, "records") and hasattr(results, "protocol"):
        return {results.protocol: results}
    if isinstance(results, dict):
        return results
    out = {}
    for r in results:
        label = r.protocol
        n = 2
        while label in out:
            label = "%s (%d)" % (r.protocol, n)
            n += 1
        out[label] = r
    if not out:
        raise ValueError("no result to plot")
    return out


def _series(result, what):
    ts = result.timeseries
    if ts is None:
        raise ValueError("%s needs a time series: set sample_us in the Scenario (e.g. "
                         "gse.run(scenario.replace(sample_us=5)))" % what)
    return ts


def failure_marks(summary):
    """[(t_us, kind, label)] of a summary's failures: each entry's time of failure, the
    first detection of it and its restoration (what ``plot_goodput`` marks)."""
    failures = (summary or {}).get("failures") or {}
    marks = []
    for e in failures.get("entries", ()):
        marks.append((e["at_us"], "failure", "%s fails" % e["spec"]))
        detected = [t for t in e.get("detected_us") or () if t is not None]
        if detected:
            marks.append((min(detected), "detected", "detected"))
        if e.get("restore_us") is not None:
            marks.append((e["restore_us"], "restored", "restored"))
    return marks


def plot_fct_cdf(results, log_x=False, title=None):
    """The FCT CDF of each Result (a Result, a list, or ``gse.compare``'s dict)."""
    return draw.draw_fct_cdf(draw.fct_curves(_labelled(results)), log_x, title)


def plot_queue_heatmap(result, value="queue_peak_bytes", tiers=None, start_us=None,
                       end_us=None, title=None):
    """Queue occupancy over time, a row per port and a panel per tier and direction;
    ``value``: ``queue_peak_bytes`` (the peak within each bin) or ``queue_bytes`` (the
    queue at each bin's end); ``tiers``: e.g. ``["edge:up", "agg"]``."""
    ts = _series(result, "plot_queue_heatmap")
    return draw.draw_queue_heatmaps(ts, result.summary.to_dict(), value, tiers, title,
                                    start_us, end_us)


def plot_timeseries(result, metric, aggregate=None, tiers=None, start_us=None, end_us=None,
                    title=None):
    """``metric`` over time: a port column of docs/timeseries.md (``queue_bytes``,
    ``utilisation``, ``paused_frac``, ``trims``, ...), one line per tier and direction,
    its ports combined by ``aggregate`` (max, mean or sum), or ``goodput_gbps`` (the
    hosts' total goodput); the scenario's failures are marked."""
    ts = _series(result, "plot_timeseries")
    marks = failure_marks(result.summary.to_dict())
    if metric in HOST_METRICS:
        return draw.draw_goodput_over_time([(result.protocol, ts)], None, title, start_us,
                                           end_us, marks)
    if metric not in draw.PORT_COLUMNS:
        raise ValueError("plot_timeseries: metric %r is not one of %s"
                         % (metric, ", ".join(draw.PORT_COLUMNS + HOST_METRICS)))
    return draw.draw_port_metric_over_time(ts, metric, aggregate, tiers, title, start_us,
                                           end_us, marks)


def plot_goodput(results, hosts=None, start_us=None, end_us=None, failures=True,
                 title=None):
    """The hosts' total goodput (or ``hosts``' own) over time, one line per Result; with
    ``failures``, dashed lines where the scenario fails links, is detected, restores."""
    labelled = _labelled(results)
    series = [(label, _series(r, "plot_goodput")) for label, r in labelled.items()]
    marks = []
    if failures:
        for r in labelled.values():
            for m in failure_marks(r.summary.to_dict()):
                if m not in marks:
                    marks.append(m)
    return draw.draw_goodput_over_time(series, hosts, title, start_us, end_us, marks)
