"""Fabric mode's figures in a run summary, whatever runtime ran the leaves.

``fold_fabric_counters(leaf_counters, summary)`` takes every leaf's
``switchmodel.fabric.FabricLeaf.counters()`` (read from the agent in the simulation and
the in-process UDP runtime, or from the counters files ``gse agent`` processes write)
and adds to the summary what ``gse sim`` reports for ``gse-fabric``: VOQ and
reorder-buffer peaks and the peak of the sent-but-unacknowledged buffer of the leaves' loss
recovery as tiers ``edge_voq``, ``edge_reorder`` and ``edge_retx`` of
``peak_queue_bytes`` (the largest of one leaf), VOQ overflow drops and the leaves' own
unroutable packets into ``drops``, PAUSEs sent to hosts into ``pfc_pauses``, and the
summed counters under ``fabric`` (among them the leaves' recovery: ``leaf_resends``,
``leaf_nacks``, ``leaf_acks``, ``leaf_timeouts``, ``retx_peak_bytes``; and their
congestion response: ``ce_received``, ``pacer_cuts``, ``repair_charges``, and
``pacer_low_pct``, the lowest rate any pacer fell to, in % of its line rate).
"""

from collections.abc import Iterable
from typing import Any

__all__ = ["fold_fabric_counters"]


def fold_fabric_counters(leaf_counters: Iterable[dict[str, int]],
                         summary: dict[str, Any]) -> dict[str, Any]:
    totals: dict[str, int] = {}
    voq_peak = reorder_peak = retx_peak = 0
    pacer_low = 100
    for counters in leaf_counters:
        for k, v in counters.items():
            totals[k] = totals.get(k, 0) + v
        voq_peak = max(voq_peak, counters.get("voq_peak_bytes", 0))
        reorder_peak = max(reorder_peak, counters.get("reorder_peak_bytes", 0))
        retx_peak = max(retx_peak, counters.get("retx_peak_bytes", 0))
        pacer_low = min(pacer_low, counters.get("pacer_low_pct", 100))
    totals["voq_peak_bytes"] = voq_peak            # the largest of one leaf, not the sum
    totals["reorder_peak_bytes"] = reorder_peak
    totals["retx_peak_bytes"] = retx_peak
    totals["pacer_low_pct"] = pacer_low            # the slowest any pacer went, not a sum
    peak = summary.setdefault("peak_queue_bytes", {})
    peak["edge_voq"] = voq_peak
    peak["edge_reorder"] = reorder_peak
    peak["edge_retx"] = retx_peak
    drops = totals.get("voq_drops", 0)
    unroutable = totals.get("unroutable", 0)     # (the leaves count their own)
    summary["unroutable"] = summary.get("unroutable", 0) + unroutable
    summary["drops"] = summary.get("drops", 0) + drops + unroutable
    summary["queue_drops"] = summary.get("queue_drops", 0) + drops
    summary["pfc_pauses"] = summary.get("pfc_pauses", 0) + totals.get("host_pauses", 0)
    summary["fabric"] = totals
    return summary
