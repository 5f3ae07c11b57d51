"""What a failure cost a run: recovery of the messages it hit, and the dip in goodput.

``recovery(fail, base, affected)`` compares the messages a failure *affected* (they lost
a data packet to it: ``gse.runtimes.sim.faults``) with the same messages in a run without
the failure: each one's extra delay is its completion time (FCT) in the failure run minus
its FCT in the baseline.  It reports the extra delay of the first and of the last
affected message to complete (the issue's "time to recover"), and the largest.

``goodput_dip(series, fail_ps, before_ps, after_ps, base)`` reads goodput-over-time
series (``gse.metrics.timeseries.TimeSeries.total_goodput_gbps``, 10 us bins in the
failure study): the mean over ``before_ps`` before the failure, the lowest bin in
``after_ps`` after it, and the dip: the largest shortfall against the run without the
failure (``base``) in the same bins, as a share of the baseline's goodput (bins where the
baseline itself is winding down, below half its level before the failure, are left out:
a workload that ends is not a dip).
"""

from collections.abc import Collection, Iterable
from typing import Any

from gse.metrics.records import MessageRecord


def recovery(fail_records: Iterable[MessageRecord], base_records: Iterable[MessageRecord],
             affected: Collection[tuple[int, int]]) -> dict[str, Any]:
    """{"affected", "first_us", "last_us", "max_us"}: extra delays (us) of the affected
    messages; None values when no affected message completed in both runs."""
    base = {(r.src, r.msg_id): r for r in base_records}
    done = []
    for r in fail_records:
        key = (r.src, r.msg_id)
        b = base.get(key)
        if key in affected and r.completed and b is not None and b.completed:
            done.append((r.finish_ps, r.fct_ps() - b.fct_ps()))
    out: dict[str, Any] = {"affected": len(affected), "first_us": None, "last_us": None,
                           "max_us": None}
    if done:
        done.sort()
        out["first_us"] = round(done[0][1] / 1e6, 3)
        out["last_us"] = round(done[-1][1] / 1e6, 3)
        out["max_us"] = round(max(d for _, d in done) / 1e6, 3)
    return out


def _window(series, lo_ps, hi_ps):
    edges = series.edges
    goodput = series.total_goodput_gbps()
    return {int(edges[i]): float(g) for i, g in enumerate(goodput)
            if edges[i] >= lo_ps and edges[i + 1] <= hi_ps}


def goodput_dip(series: Any, fail_ps: int, before_ps: int, after_ps: int,
                base: Any = None) -> dict[str, float | None]:
    """{"before_gbps", "min_after_gbps", "dip"}: goodput around a failure at ``fail_ps``
    (``series`` a TimeSeries; ``base`` the same run without the failure, or None to
    measure against the level before the failure)."""
    before = list(_window(series, fail_ps - before_ps, fail_ps).values())
    after = _window(series, fail_ps, fail_ps + after_ps)
    if not before or not after:
        return {"before_gbps": None, "min_after_gbps": None, "dip": None}
    mean = sum(before) / len(before)
    out: dict[str, float | None] = {"before_gbps": round(mean, 1),
                                    "min_after_gbps": round(min(after.values()), 1),
                                    "dip": None}
    if base is None:
        if mean > 0:
            out["dip"] = round(max(0.0, 1.0 - min(after.values()) / mean), 4)
        return out
    level = list(_window(base, fail_ps - before_ps, fail_ps).values())
    ref = _window(base, fail_ps, fail_ps + after_ps)
    floor = 0.5 * sum(level) / len(level) if level else 0.0
    short = [1.0 - g / ref[t] for t, g in after.items() if ref.get(t, 0.0) > floor > 0]
    if short:
        out["dip"] = round(max(0.0, max(short)), 4)
    return out
