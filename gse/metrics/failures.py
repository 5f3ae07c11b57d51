"""What a failure cost a run: recovery of the messages it hit, and the dip in goodput.

``recovery(fail, base, affected)`` compares the messages a failure *affected* (they lost
a data packet to it: ``gse.runtimes.sim.faults``) with the same messages in a run without
the failure: each one's extra delay is its completion time (FCT) in the failure run minus
its FCT in the baseline.  It reports the extra delay of the first and of the last
affected message to complete (the issue's "time to recover"), and the largest.

``goodput_dip(series, fail_ps, before_ps, after_ps)`` reads a goodput-over-time series
(``gse.metrics.timeseries.TimeSeries.total_goodput_gbps``, 10 us bins in the failure
study): the mean over ``before_ps`` before the failure, the lowest bin in ``after_ps``
after it, and the dip as a share of the mean.
"""


def recovery(fail_records, base_records, affected):
    """{"affected", "first_us", "last_us", "max_us"}: extra delays (us) of the affected
    messages; None values when no affected message completed in both runs."""
    base = {(r.src, r.msg_id): r for r in base_records}
    done = []
    for r in fail_records:
        key = (r.src, r.msg_id)
        b = base.get(key)
        if key in affected and r.completed and b is not None and b.completed:
            done.append((r.finish_ps, r.fct_ps() - b.fct_ps()))
    out = {"affected": len(affected), "first_us": None, "last_us": None, "max_us": None}
    if done:
        done.sort()
        out["first_us"] = round(done[0][1] / 1e6, 3)
        out["last_us"] = round(done[-1][1] / 1e6, 3)
        out["max_us"] = round(max(d for _, d in done) / 1e6, 3)
    return out


def goodput_dip(series, fail_ps, before_ps, after_ps):
    """{"before_gbps", "min_after_gbps", "dip"}: goodput around a failure at ``fail_ps``
    (``series`` a TimeSeries); dip = 1 - min_after / before (0 when nothing was lost)."""
    edges = series.edges
    goodput = series.total_goodput_gbps()
    before = [g for i, g in enumerate(goodput)
              if edges[i] >= fail_ps - before_ps and edges[i + 1] <= fail_ps]
    after = [g for i, g in enumerate(goodput)
             if edges[i] >= fail_ps and edges[i + 1] <= fail_ps + after_ps]
    if not before or not after:
        return {"before_gbps": None, "min_after_gbps": None, "dip": None}
    mean = sum(before) / len(before)
    low = min(after)
    return {"before_gbps": round(float(mean), 1), "min_after_gbps": round(float(low), 1),
            "dip": round(max(0.0, 1.0 - low / mean), 4) if mean > 0 else None}
