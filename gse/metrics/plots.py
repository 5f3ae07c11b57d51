"""Plots of a run's outputs (matplotlib, optional: ``pip install 'gse-transport[plot]'``).

Each figure is drawn by a ``draw_*`` function that returns a matplotlib ``Figure``; what
``gse plot`` writes (docs/plots.md) and what the Python API's ``plot_*`` helpers return
(``gse.api.plots``, docs/api.md) are the same drawings, saved or handed back:

* ``draw_queue_heatmaps`` (``queue_heatmaps`` saves it): queue occupancy over time per
  tier, one panel per tier and direction (ToR uplinks apart from ToR downlinks), a row
  per port, from a time series (``--sample-us``); each panel's title gives its peak
  beside the summary's peak for the tier, so the picture and the table can be checked
  against each other;
* ``draw_goodput_over_time`` (``goodput_over_time``): the hosts' total goodput (or chosen
  hosts') over time, one line per run, with optional marks (a failure, its detection);
* ``draw_port_metric_over_time``: any port column of a time series over time, one line
  per tier and direction;
* ``draw_fct_cdf`` (``fct_cdf``): completion-time CDFs, one line per set of records
  (``--records``: JSON Lines, CSV or Parquet);
* ``plot_fct_cdfs``: the CDFs of ``gse compare --plot`` from results in memory;
* ``plot_goodput``: the failure study's panels (experiments/failures.py).

Figures are made outside pyplot (``matplotlib.figure.Figure``): no backend is chosen or
switched, nothing is shown and nothing stays registered, so they are safe headless, in a
loop and in a notebook (which displays a returned Figure).  Every axis is labelled with
its unit.
"""

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gse.metrics.records import RunResult
    from gse.metrics.timeseries import TimeSeries

TIER_ORDER = ("host", "leaf", "edge", "spine", "agg", "core")
# how the ports of one panel combine into one line, by default, per port column
PORT_AGGREGATE = {"queue_bytes": "max", "queue_peak_bytes": "max", "utilisation": "mean",
                  "paused_frac": "mean", "paused": "sum"}
# the per-bin port columns of docs/timeseries.md (what a heat map or a line can show)
PORT_COLUMNS = ("queue_bytes", "queue_peak_bytes", "tx_bytes", "utilisation", "paused",
                "paused_frac", "paused_ps", "trims", "drops", "ecn_marks")
MARK_STYLE = {"failure": ("tab:red", "--"), "detected": ("tab:orange", ":"),
              "restored": ("tab:green", "-.")}


def new_figure(**kwargs: Any) -> Any:
    """A matplotlib Figure outside pyplot (see the module docstring)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise RuntimeError("plotting needs matplotlib: pip install 'gse-transport[plot]'"
                           ) from exc
    return Figure(**kwargs)


def save(fig: Any, path: str) -> str:
    """Write ``fig`` to ``path`` (its format from the name: .png, .svg, .pdf)."""
    fig.savefig(path, dpi=120)
    return path


def panel_name(tier: str, direction: str) -> str:
    if tier == "host":
        return "host NICs (up)"
    return "%s %slinks" % (tier, direction)


def queue_panels(ts: "TimeSeries",
                 column: str = "queue_peak_bytes") -> list[tuple[str, str, list[int], Any]]:
    """[(tier, direction, [port index], matrix rows = ports x bins)] of a TimeSeries."""
    import numpy as np
    if column not in PORT_COLUMNS:
        raise ValueError("no per-bin port column %r in a time series (expected one of %s)"
                         % (column, ", ".join(PORT_COLUMNS)))
    values = np.asarray(ts.port_values[column] if column in ts.port_values else
                        ts.port_table()[column], dtype=float)
    grid = values.reshape(ts.nbins, ts.nports).T if ts.nbins else np.zeros((ts.nports, 0))
    groups: dict[tuple[str, str], list[int]] = {}
    for i, (tier, direction) in enumerate(zip(ts.ports["tier"], ts.ports["direction"])):
        groups.setdefault((tier, direction), []).append(i)
    rank = {t: k for k, t in enumerate(TIER_ORDER)}
    out = []
    for (tier, direction), idx in sorted(groups.items(),
                                         key=lambda kv: (rank.get(kv[0][0], 99),
                                                         kv[0][1] != "up")):
        out.append((tier, direction, idx, grid[idx]))
    return out


def window(ts: "TimeSeries", start_us: float | None = None,
           end_us: float | None = None) -> tuple[int, int]:
    """(first bin, last bin + 1) of the bins within [start_us, end_us]."""
    times = ts.times_us()
    lo = 0
    hi = ts.nbins
    if start_us is not None:
        while lo < hi and times[lo] < start_us:
            lo += 1
    if end_us is not None:
        while hi > lo and ts.edges[hi] / 1e6 > end_us:
            hi -= 1
    if lo >= hi:
        raise ValueError("no bin between %s and %s us (the series covers 0..%g us)"
                         % (start_us, end_us, ts.edges[-1] / 1e6))
    return lo, hi


def draw_queue_heatmaps(ts: "TimeSeries", summary: Mapping[str, Any] | None = None,
                        column: str = "queue_peak_bytes", tiers: Sequence[str] | None = None,
                        title: str | None = None, start_us: float | None = None,
                        end_us: float | None = None) -> Any:
    """One heat map per tier and direction: ports (rows) x time (columns), colour = KB."""
    lo, hi = window(ts, start_us, end_us)
    panels = [(tier, d, idx, grid[:, lo:hi]) for tier, d, idx, grid in queue_panels(ts, column)
              if tiers is None or tier in tiers or "%s:%s" % (tier, d) in tiers]
    if not panels:
        raise ValueError("no port of the tiers %s in the time series" % (tiers,))
    t0 = ts.edges[lo] / 1e6
    t1 = ts.edges[hi] / 1e6
    peaks = (summary or {}).get("peak_queue_bytes", {})
    fig = new_figure(figsize=(9, 1.2 + 1.6 * len(panels)), layout="constrained")
    axes = fig.subplots(len(panels), 1, squeeze=False, sharex=True)
    vmax = max(float(p[3].max()) if p[3].size else 0.0 for p in panels) / 1000.0 or 1.0
    image = None
    for ax, (tier, direction, idx, grid) in zip(axes[:, 0], panels):
        image = ax.imshow(grid / 1000.0, aspect="auto", interpolation="nearest",
                          origin="lower", extent=(t0, t1, 0, len(idx)), cmap="viridis",
                          vmin=0, vmax=vmax)
        peak = int(grid.max()) if grid.size else 0
        text = "%s: %d ports, peak %s B" % (panel_name(tier, direction), len(idx),
                                            format(peak, ","))
        if tier in peaks:
            text += " (summary's %s peak: %s B)" % (tier, format(peaks[tier], ","))
        ax.set_title(text, fontsize=9, loc="left")
        ax.set_ylabel("port")
    axes[-1, 0].set_xlabel("virtual time (us)")
    what = {"queue_peak_bytes": "queue peak in bin (KB)",
            "queue_bytes": "queue at bin end (KB)"}.get(column, column + " (x1000)")
    fig.colorbar(image, ax=axes[:, 0].tolist(), label=what, fraction=0.03, pad=0.01)
    fig.suptitle(title or "Queue occupancy over time by tier (%s, %g us bins)"
                 % (ts.meta.get("protocol", "run"), ts.bin_ps / 1e6), fontsize=10)
    return fig


def queue_heatmaps(ts: "TimeSeries", path: str, summary: Mapping[str, Any] | None = None,
                   column: str = "queue_peak_bytes", tiers: Sequence[str] | None = None,
                   title: str | None = None, start_us: float | None = None,
                   end_us: float | None = None) -> str:
    """``draw_queue_heatmaps`` written to ``path``."""
    return save(draw_queue_heatmaps(ts, summary, column, tiers, title, start_us, end_us),
                path)


def _draw_marks(ax: Any, marks: Sequence[tuple[float, str, str]]) -> None:
    """Vertical lines at ``marks``: [(t_us, kind, label)], ``kind`` a key of MARK_STYLE."""
    for t_us, kind, label in marks:
        colour, style = MARK_STYLE.get(kind, ("k", "--"))
        ax.axvline(t_us, color=colour, linestyle=style, linewidth=1.0, label=label)


def draw_goodput_over_time(series: Sequence[tuple[str, "TimeSeries"]],
                           hosts: Sequence[int] | None = None, title: str | None = None,
                           start_us: float | None = None, end_us: float | None = None,
                           marks: Sequence[tuple[float, str, str]] = ()) -> Any:
    """``series``: [(label, TimeSeries)]; total goodput of all hosts (or of ``hosts``),
    with vertical ``marks`` ([(t_us, kind, label)]: a failure, its detection)."""
    fig = new_figure(figsize=(7.5, 4.0), layout="tight")
    ax = fig.subplots()
    for label, ts in series:
        lo, hi = window(ts, start_us, end_us)
        times = ts.times_us()[lo:hi]
        if hosts is None:
            ax.step(times, ts.total_goodput_gbps()[lo:hi], where="post", label=label)
        else:
            for h in hosts:
                ax.step(times, ts.host_goodput_gbps(h)[lo:hi], where="post",
                        label="%s host %d" % (label, h))
    _draw_marks(ax, marks)
    ax.set_xlabel("virtual time (us)")
    ax.set_ylabel("goodput, %s (Gb/s)" % ("all hosts" if hosts is None else "per host"))
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    ax.set_title(title or "Goodput over time", fontsize=10)
    return fig


def goodput_over_time(series: Sequence[tuple[str, "TimeSeries"]], path: str,
                      hosts: Sequence[int] | None = None, title: str | None = None,
                      start_us: float | None = None, end_us: float | None = None) -> str:
    """``draw_goodput_over_time`` written to ``path``."""
    return save(draw_goodput_over_time(series, hosts, title, start_us, end_us), path)


def draw_port_metric_over_time(ts: "TimeSeries", column: str, aggregate: str | None = None,
                               tiers: Sequence[str] | None = None, title: str | None = None,
                               start_us: float | None = None, end_us: float | None = None,
                               marks: Sequence[tuple[float, str, str]] = ()) -> Any:
    """A port column of docs/timeseries.md over time: one line per tier and direction
    (the panels of the heat map), its ports combined by ``aggregate`` (``max``, ``mean``
    or ``sum``; default: ``PORT_AGGREGATE``, else ``sum``)."""
    aggregate = aggregate or PORT_AGGREGATE.get(column, "sum")
    if aggregate not in ("max", "mean", "sum"):
        raise ValueError("aggregate: expected max, mean or sum, got %r" % (aggregate,))
    lo, hi = window(ts, start_us, end_us)
    times = ts.times_us()[lo:hi]
    fig = new_figure(figsize=(7.5, 4.0), layout="tight")
    ax = fig.subplots()
    drawn = 0
    for tier, direction, _, grid in queue_panels(ts, column):
        if tiers is not None and tier not in tiers and "%s:%s" % (tier, direction) not in tiers:
            continue
        line = getattr(grid[:, lo:hi], aggregate)(axis=0)
        ax.step(times, line, where="post", label=panel_name(tier, direction))
        drawn += 1
    if not drawn:
        raise ValueError("no port of the tiers %s in the time series" % (tiers,))
    _draw_marks(ax, marks)
    ax.set_xlabel("virtual time (us)")
    ax.set_ylabel("%s of %s per tier" % (aggregate, column))
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    ax.set_title(title or "%s over time (%s, %g us bins)"
                 % (column, ts.meta.get("protocol", "run"), ts.bin_ps / 1e6), fontsize=10)
    return fig


def draw_fct_cdf(curves: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
                 log_x: bool = False, title: str | None = None) -> Any:
    """``curves``: [(label, [record dicts])]; the CDF of ``fct_us`` of completed ones."""
    fig = new_figure(figsize=(6.4, 4.0), layout="tight")
    ax = fig.subplots()
    drawn = 0
    for label, rows in curves:
        fcts = sorted(r["fct_us"] for r in rows if r.get("fct_us") is not None)
        if not fcts:
            continue
        ys = [(i + 1) / len(fcts) for i in range(len(fcts))]
        p99 = fcts[min(len(fcts), max(1, -(-99 * len(fcts) // 100))) - 1]
        ax.step(fcts, ys, where="post", label="%s (%d msgs, p99 %.0f us)"
                % (label, len(fcts), p99))
        drawn += 1
    if not drawn:
        raise ValueError("no completed message in the records: nothing to plot")
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel("flow completion time (us)")
    ax.set_ylabel("fraction of messages")
    ax.set_ylim(0, 1.01)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(title or "Flow completion times", fontsize=10)
    return fig


def fct_cdf(curves: Sequence[tuple[str, Sequence[Mapping[str, Any]]]], path: str,
            log_x: bool = False, title: str | None = None) -> str:
    """``draw_fct_cdf`` written to ``path``."""
    return save(draw_fct_cdf(curves, log_x, title), path)


def plot_fct_cdfs(results: Mapping[str, "RunResult"], path: str,
                  title: str | None = None) -> str:
    """FCT CDFs of every protocol of ``{protocol: RunResult}`` in one figure."""
    return fct_cdf(fct_curves(results), path, title=title)


def fct_curves(results: Mapping[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """[(label, [record dicts])] of ``{label: anything with .records}`` (a ``RunResult``
    or the API's ``Result``): what ``draw_fct_cdf`` takes."""
    return [(label, [r.as_dict() for r in result.records])
            for label, result in results.items()]


def plot_goodput(panels: Sequence[tuple[str, Mapping[str, tuple[Any, Any]]]], path: str,
                 fail_us: float | None = None, title: str | None = None,
                 xmax_us: float | None = None) -> str:
    """Goodput over time in panels (the failure study): one per ``(panel title, {label:
    (times_us, gbps)})`` of ``panels``, a dashed line at ``fail_us``, time axes cut at
    ``xmax_us`` if given."""
    n = len(panels)
    cols = 2 if n > 1 else 1
    rows = (n + cols - 1) // cols
    fig = new_figure(figsize=(6.4 * cols, 3.2 * rows), layout="tight")
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, (name, lines) in zip([a for row in axes for a in row], panels):
        for label, (times, gbps) in lines.items():
            ax.step(times, [g / 1000.0 for g in gbps], where="post", label=label)
        if fail_us is not None:
            ax.axvline(fail_us, color="k", linestyle="--", linewidth=0.8)
        if xmax_us is not None:
            ax.set_xlim(0, xmax_us)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("virtual time (us)")
        ax.set_ylabel("goodput, all hosts (Tb/s)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper right")
    for ax in [a for row in axes for a in row][n:]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    return save(fig, path)
