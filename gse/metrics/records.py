"""Per-message records and the run summary (the JSON schema every runtime writes).

Completion time (FCT) runs from the message's start to the moment the sender learns that
the receiver holds every byte (the last ACK), as htsim measures it; the receiver's own
delivery time is recorded too (``deliver_us``: what a collective's next step waits for).
The ideal is the path's base RTT plus the message's wire bytes (payload plus one
64-byte header per packet) over the path's bottleneck rate, so slowdown 1.0 is a message
that saw no queue, no loss and no competitor.  Percentiles use the nearest-rank method
(p99 of 128 values is the 127th smallest).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from gse.wire.linkrate import wire_time_ps
from gse.wire.packet import HEADER_BYTES

TYPE_CHECKING = False   # typing's own, without importing typing (2.9 ms of a start)
if TYPE_CHECKING:
    from typing import Any
    from gse.workloads.traffic import Message
    from topologies.topology import Topology


def percentile(sorted_values: Sequence[Any], q: float) -> Any:
    """Nearest-rank percentile of an ascending list (q in 0..100)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(q / 100.0 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def wire_bytes(size: int, mtu: int) -> int:
    return size + ((size + mtu - 1) // mtu) * HEADER_BYTES


class MessageRecord:
    __slots__ = ("msg_id", "src", "dst", "size", "start_ps", "deliver_ps", "finish_ps",
                 "ideal_ps", "retransmits")

    def __init__(self, msg: "Message", ideal_ps: int) -> None:
        self.msg_id = msg.msg_id
        self.src = msg.src
        self.dst = msg.dst
        self.size = msg.size
        self.start_ps = msg.start_ps
        self.deliver_ps = -1   # the receiver holds every byte
        self.finish_ps = -1    # the sender has the last ACK
        self.ideal_ps = ideal_ps
        self.retransmits = 0

    @property
    def delivered(self) -> bool:
        return self.deliver_ps >= 0

    @property
    def completed(self) -> bool:
        return self.finish_ps >= 0

    def fct_ps(self) -> int:
        return self.finish_ps - self.start_ps

    def as_dict(self) -> dict[str, Any]:
        d = {"msg_id": self.msg_id, "src": self.src, "dst": self.dst, "size": self.size,
             "start_us": self.start_ps / 1e6, "delivered": self.delivered,
             "ideal_us": round(self.ideal_ps / 1e6, 6), "retransmits": self.retransmits}
        if self.delivered:
            d["deliver_us"] = self.deliver_ps / 1e6
        if self.completed:
            fct = self.fct_ps()
            d["finish_us"] = self.finish_ps / 1e6
            d["fct_us"] = fct / 1e6
            d["slowdown"] = round(fct / self.ideal_ps, 6)
            d["goodput_gbps"] = round(self.size * 8 / (fct / 1e3), 6)
        return d


def ideal_ps(topo: "Topology", src: int, dst: int, size: int, mtu: int,
             cache: dict[tuple[int, int], tuple[int, int]]) -> int:
    key = (src, dst)
    path = cache.get(key)
    if path is None:
        rtt = topo.base_rtt_ps(src, dst, mtu + HEADER_BYTES, HEADER_BYTES)
        mbps = int(round(topo.bottleneck_gbps(src, dst) * 1000))
        path = cache[key] = (rtt, mbps)
    rtt, mbps = path
    return rtt + wire_time_ps(wire_bytes(size, mtu), mbps)


def receiver_bound_ps(topo: "Topology", messages: Iterable["Message"], mtu: int) -> int:
    """The soonest the last of ``messages`` can complete: the busiest receiver's downlink
    carrying every wire byte sent to it back to back, plus the largest base RTT to it.
    An incast's last FCT over this is how far from ideal the transport shares the link."""
    per_dst: dict[int, tuple[int, int, int]] = {}
    for m in messages:
        wire, rtt, mbps = per_dst.get(m.dst, (0, 0, 0))
        rtt = max(rtt, topo.base_rtt_ps(m.src, m.dst, mtu + HEADER_BYTES, HEADER_BYTES))
        rate = int(round(topo.bottleneck_gbps(m.src, m.dst) * 1000))
        per_dst[m.dst] = (wire + wire_bytes(m.size, mtu), rtt, min(mbps, rate) if mbps else rate)
    return max((rtt + wire_time_ps(wire, mbps)
                for wire, rtt, mbps in per_dst.values()), default=0)


def _us(ps):
    return None if ps is None else round(ps / 1e6, 3)


def summarize(records: Sequence[MessageRecord], ports: Iterable[Any],
              hosts_counters: Iterable[dict[str, int]], base_rtt_ps: int, sim_time_ps: int,
              events: int, wall_s: float, extra: dict[str, Any] | None = None
              ) -> dict[str, Any]:
    """The run summary: loss, completion-time and slowdown tails, goodput, switch counters."""
    delivered = sum(1 for r in records if r.delivered)
    done = [r for r in records if r.completed]
    fcts = sorted(r.fct_ps() for r in done)
    slow = sorted(r.fct_ps() / r.ideal_ps for r in done)
    goodput = sorted(r.size * 8 / (r.fct_ps() / 1e3) for r in done)
    drops = trims = marks = wire_drops = wire_corrupt = 0
    peak = {"max": 0, "host": 0, "edge": 0, "agg": 0, "core": 0, "edge_down": 0}
    for port in ports:
        c = port.queue.counters
        drops += c.drops
        trims += c.trims
        marks += c.ecn_marks
        wire_drops += port.wire_drops
        wire_corrupt += port.wire_corrupt
        # per switch kind (edge/agg/core, leaf/spine/...), and the ToR ports facing hosts
        peak[port.kind] = max(peak.get(port.kind, 0), c.peak_bytes)
        peak["max"] = max(peak["max"], c.peak_bytes)
        if port.kind != "host" and port.faces_host:
            peak["edge_down"] = max(peak["edge_down"], c.peak_bytes)
    totals: dict[str, int] = {}
    for counters in hosts_counters:
        for k, v in counters.items():
            totals[k] = totals.get(k, 0) + v
    summary = {
        "messages": len(records),
        "delivered": delivered,
        "lost": len(records) - delivered,
        "completed": len(done),
        "fct_us": {"p50": _us(percentile(fcts, 50)), "p99": _us(percentile(fcts, 99)),
                   "p999": _us(percentile(fcts, 99.9)), "max": _us(fcts[-1] if fcts else None),
                   "min": _us(fcts[0] if fcts else None)},
        "slowdown": {"p50": _round(percentile(slow, 50)), "p99": _round(percentile(slow, 99)),
                     "max": _round(slow[-1] if slow else None)},
        "goodput_gbps": {"p50": _round(percentile(goodput, 50)),
                         "min": _round(goodput[0] if goodput else None)},
        "drops": drops + wire_drops,
        "queue_drops": drops,
        "wire_drops": wire_drops,
        "corrupted": wire_corrupt,
        "trims": trims,
        "retransmits": totals.get("retransmits", 0),
        "ecn_marks": marks,
        "peak_queue_bytes": peak,
        "base_rtt_us": _us(base_rtt_ps),
        "sim_time_us": _us(sim_time_ps),
        "events": events,
        "events_per_s": round(events / wall_s) if wall_s > 0 else None,
        "wall_s": round(wall_s, 3),
        "host_counters": totals,
    }
    if extra:
        summary.update(extra)
    return summary


def _round(x):
    return None if x is None else round(x, 4)


class RunResult:
    """What a run returns in every runtime: the summary (JSON schema of ``gse sim``), the
    per-message records, the runtime's network object (for inspection) and, when the run
    was sampled (``--sample-us``), its ``gse.metrics.timeseries.TimeSeries``."""

    __slots__ = ("summary", "records", "network", "timeseries")

    def __init__(self, summary: dict[str, Any], records: list[MessageRecord], network: Any,
                 timeseries: Any = None) -> None:
        self.summary = summary
        self.records = records
        self.network = network
        self.timeseries = timeseries

    def per_message(self) -> list[tuple[int, int, int, int, int]]:
        """Comparable per-message outcome, for determinism checks and golden runs."""
        return [(r.src, r.msg_id, r.deliver_ps, r.finish_ps, r.retransmits)
                for r in self.records]
