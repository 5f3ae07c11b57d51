"""The run summary of the UDP runtimes, in the schema of ``gse.metrics.records.summarize``.

The standard fields (messages, lost, FCT and slowdown tails, drops, trims, peak queues,
PFC pauses) mean what they mean in the simulation, measured on the runtime's real clock;
``runtime`` says which runtime, and ``udp`` adds what only a real network has: datagrams
received, malformed datagrams by reason, foreign senders, payload errors, kernel buffer
drops, send errors.  ``summarize_agent_outputs`` builds the same summary from the files
that ``gse agent`` processes wrote (the Mininet runtime and real machines).
"""

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from gse.metrics.fabric import fold_fabric_counters
from gse.metrics.records import MessageRecord, ideal_ps, summarize
from gse.wire.codec import REASONS
from gse.wire.packet import HEADER_BYTES
from switchmodel.queue import PortCounters

if TYPE_CHECKING:
    from gse.workloads.traffic import Message
    from topologies.topology import Topology

UDP_TOTALS = ("datagrams", "foreign", "sent", "send_blocked", "send_errors", "recv_errors",
              "payload_errors", "payload_bytes", "duplicate_deliveries", "agent_errors",
              "unroutable", "unreachable")


class PortStats:
    """A port's counters read back from a node's counters file (what summarize reads)."""

    __slots__ = ("queue", "wire_drops", "wire_corrupt", "kind", "faces_host", "paused_ps")

    def __init__(self, d):
        counters = PortCounters()
        for name, value in d["counters"].items():
            setattr(counters, name, value)
        self.queue = _Queue(counters)
        self.wire_drops = d["wire_drops"]
        self.wire_corrupt = d["wire_corrupt"]
        self.kind = d["kind"]
        self.faces_host = d["faces_host"]
        self.paused_ps = d.get("paused_ps", 0)


class _Queue:
    __slots__ = ("counters",)

    def __init__(self, counters):
        self.counters = counters


def message_records(topo: "Topology", messages: Iterable["Message"],
                    mtu: int) -> list[MessageRecord]:
    cache: dict[tuple[int, int], tuple[int, int]] = {}
    return [MessageRecord(m, ideal_ps(topo, m.src, m.dst, m.size, mtu, cache))
            for m in messages]


def udp_totals(node_counters: Sequence[dict[str, Any]],
               kernel_drops: int | None = None) -> dict[str, Any]:
    """Sum the nodes' runtime counters; malformed datagrams by reason."""
    out: dict[str, Any] = {key: 0 for key in UDP_TOTALS}
    malformed = {reason: 0 for reason in REASONS}
    for c in node_counters:
        for key in UDP_TOTALS:
            out[key] += c.get(key, 0)
        for reason, n in c["malformed"].items():
            malformed[reason] = malformed.get(reason, 0) + n
    out["malformed"] = malformed
    out["malformed_total"] = sum(malformed.values())
    # switches that forwarded on the compiled data plane (gse.runtimes.udp.dataplane)
    out["dataplane_switches"] = sum(1 for c in node_counters if c.get("dataplane"))
    # ... and hosts on the compiled packet path (gse.runtimes.udp.hostplane)
    out["hostplane_hosts"] = sum(1 for c in node_counters if c.get("hostplane"))
    for section, name in (("secure", "secure_counters"), ("pfc_in", "pfc_in")):
        total: dict[str, int] = {}      # authenticated packets; PFC frames received
        for c in node_counters:
            for key, n in c.get(section, {}).items():
                total[key] = total.get(key, 0) + n
        if total:
            out[name] = total
    lag = pfc_lag_summary(node_counters)
    if lag:
        out["pfc_lag_us"] = lag
    out["kernel_drops"] = kernel_drops if kernel_drops is not None else sum(
        c.get("kernel_drops", 0) for c in node_counters)
    return out


def pfc_lag_summary(node_counters: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """PAUSE and RESUME frames' lag from the switch that made them to the node that obeyed
    them (``NodeDriver.admit_pfc``), in us: frames, median, 90th and 99th percentile of the
    lags kept, the largest of all, and ``lane``: the datagrams the nodes' PFC lanes
    received (every frame, when the nodes have lanes); {} when no frame was received."""
    frames = 0
    worst = 0
    lane = 0
    kept: list[int] = []
    for c in node_counters:
        lane += c.get("pfc_lane", {}).get("datagrams", 0)
        lag = c.get("pfc_lag")
        if lag:
            frames += lag["frames"]
            worst = max(worst, lag["max_ps"])
            kept.extend(lag["kept_ps"])
    if not frames:
        return {}
    kept.sort()

    def pct(q):
        return round(kept[min(len(kept) - 1, int(q * len(kept)))] / 1e6, 1)
    return {"frames": frames, "p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99),
            "max": round(worst / 1e6, 1), "lane": lane}


def pfc_totals(node_counters: Sequence[dict[str, Any]],
               paused_ps: Sequence[int]) -> dict[str, Any]:
    """PAUSE frames sent, paused time, pauses that lapsed by their quanta (a RESUME that
    never came: lost on the wire, or a refresh that stopped), and the largest ingress
    count of any switch (past XOFF, PFC must have paused)."""
    pauses = overflows = expiries = peak = 0
    for c in node_counters:
        pfc = c.get("pfc")
        if pfc:
            pauses += pfc["pauses_sent"]
            overflows += pfc["headroom_overflows"]
            peak = max(peak, pfc.get("peak_ingress", 0))
        expiries += sum(p.get("pause_expiries", 0) for p in c.get("ports", ()))
    return {"pfc_pauses": pauses, "paused_time_us": round(sum(paused_ps) / 1e6, 3),
            "paused_time_max_port_us": round(max(paused_ps, default=0) / 1e6, 3),
            "pfc_headroom_overflows": overflows, "pfc_pause_expiries": expiries,
            "pfc_peak_ingress_bytes": peak}


def build_summary(topo, records, ports, node_counters, host_agent_counters, config,
                  elapsed_ps, wall_s, extra, udp):
    base_rtt = topo.max_base_rtt_ps(config.mtu + HEADER_BYTES, HEADER_BYTES)
    more = dict(extra)
    paused = [p.paused_ps if isinstance(p, PortStats) else p.paused_total_ps(elapsed_ps)
              for p in ports]
    more.update(pfc_totals(node_counters, paused))
    more["unroutable"] = udp["unroutable"]      # the simulation's route-drop fields
    more["unreachable"] = udp["unreachable"]
    more["udp"] = udp
    summary = summarize(records, ports, host_agent_counters, base_rtt, elapsed_ps,
                        udp["datagrams"], wall_s, more)
    summary["drops"] += summary["unroutable"]
    leaves = [c for c in node_counters if c.get("fabric")]
    if leaves:                          # fabric mode: the leaves' figures, as gse sim's
        fold_fabric_counters([c["fabric"] for c in leaves], summary)
        summary["fabric"]["leaves_idle"] = sum(1 for c in leaves if c.get("fabric_idle"))
        summary["fabric"]["leaves"] = len(leaves)
    return summary


def failure_summary(summary, topo, schedule, node_counters, detect_ps, trigger=None):
    """Add ``failures`` to a UDP run's summary: the schedule, and what its links lost
    (from the ports' ``faults`` counters; per entry, summed over its links' ports, a
    link shared by two entries counted for the first), in the simulation's schema as far
    as a real network can count it (no per-message attribution).  A schedule triggered
    by the traffic also gets ``trigger``: its packet count, when it fired (``fired_us``
    on the run's clock, None if it never did) and the most packets a node had sent
    over the schedule's links by then."""
    from gse.runtimes.udp.faults import CAUSES, fault_totals
    by_port = {}
    for c in node_counters:
        for p in c.get("ports", ()):
            if p.get("faults"):
                by_port[(c["node"], p["port"])] = p["faults"]
    seen = set()
    entries = []
    for e in schedule.entries:
        d = e.describe(topo)
        counts = dict.fromkeys(CAUSES, 0)
        for li in e.links:
            if li in seen:
                continue
            seen.add(li)
            link = topo.links[li]
            for end in ((link.a, link.a_port), (link.b, link.b_port)):
                for cause in CAUSES:
                    counts[cause] += by_port.get(end, {}).get(cause, 0)
        d.update(counts)
        d["lost_on_link"] = counts["in_flight"] + counts["queued"]
        entries.append(d)
    updates = sum(c.get("route_updates", {}).get("applied", 0) for c in node_counters)
    drops = fault_totals(node_counters)
    summary["failures"] = {"entries": entries, "drops": drops, "route_updates": updates,
                           "detect_us": None if detect_ps < 0 else detect_ps / 1e6}
    if schedule.after_packets is not None:
        fired = dict(trigger or {"fired_us": None, "packets_seen": None})
        fired["after_packets"] = schedule.after_packets
        summary["failures"]["trigger"] = fired
    summary["drops"] += sum(drops.values())
    return summary


def summarize_agent_outputs(topo, messages, config, counter_files, record_files,
                            protocol="gse", seed=1, wall_s=0.0, extra=None):
    """The run summary and per-message records from ``gse agent`` output files.

    Times of a message come from its sender's records (start, finish: one clock) and its
    receiver's (delivery); they are comparable across agents when the agents shared time 0
    (``run.start_at_unix``).  Returns (summary, records).
    """
    node_counters = [_read(path) for path in counter_files]
    records = message_records(topo, messages, config.mtu)
    by_key = {(r.src, r.msg_id): r for r in records}
    elapsed = 0
    for path in record_files:
        rec = _read(path)
        src = rec["node"]
        for s in rec["sent"]:
            r = by_key.get((src, s["msg_id"]))
            if r is not None and "finish_ps" in s:
                r.finish_ps = s["finish_ps"]
                r.retransmits = s["retransmits"]
                elapsed = max(elapsed, s["finish_ps"])
        for d in rec["received"]:
            r = by_key.get((d["src"], d["msg_id"]))
            if r is not None:
                r.deliver_ps = d["deliver_ps"]
                elapsed = max(elapsed, d["deliver_ps"])
    ports = [PortStats(p) for c in node_counters for p in c["ports"]]
    hosts = [c["agent"] for c in node_counters if c.get("role") == "host"]
    udp = udp_totals(node_counters)
    udp["agents"] = len(node_counters)
    udp["exits"] = {}
    for c in node_counters:
        udp["exits"][c.get("exit", "?")] = udp["exits"].get(c.get("exit", "?"), 0) + 1
    base = {"protocol": protocol, "seed": seed, "runtime": "agents"}
    base.update(extra or {})
    summary = build_summary(topo, records, ports, node_counters, hosts, config, elapsed,
                            wall_s, base, udp)
    late = [c["late_start_s"] for c in node_counters if c.get("late_start_s")]
    udp["late_starts"] = len(late)           # agents up after the shared time 0
    udp["late_start_max_s"] = max(late, default=0.0)
    stall = agents_stall(node_counters)
    if stall is not None:
        summary["stall"] = stall
    return summary, records


def agents_stall(node_counters: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The ``stall`` section of a run of agents of which some exited stalled (their
    watchdog, ``gse.metrics.stall``): the stalled agents' span and looks, and what every
    host's unfinished messages waited for when it exited; None if none stalled."""
    reports = [c["stall"] for c in node_counters if c.get("stall")]
    if not reports:
        return None
    waiting: dict[str, int] = {}
    hosts = 0
    for c in node_counters:
        w = c.get("waiting") or {}
        hosts += 1 if w else 0
        for cause, n in w.items():
            waiting[cause] = waiting.get(cause, 0) + n
    return {"span_us": max(r["span_us"] for r in reports),
            "progress_seen_us": min(r["progress_seen_us"] for r in reports),
            "at_us": max(r["at_us"] for r in reports),
            "unfinished": sum(waiting.values()), "hosts": hosts,
            "waiting": waiting, "agents_stalled": len(reports)}


def _read(path):
    with open(path) as f:
        return json.load(f)
