"""Human-readable tables and per-message record files."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from gse.metrics.records import MessageRecord, RunResult
from gse.metrics.stall import describe_causes, time_text

TYPE_CHECKING = False   # typing's own, without importing typing (2.9 ms of a start)
if TYPE_CHECKING:
    from typing import Any


def _fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        return "%.4g" % v if abs(v) < 1000 else "%.1f" % v
    return str(v)


ENDS = {"stalled": "the no-progress watchdog", "until": "--until-us", "timeout": "--timeout-s"}


def format_summary(s: dict[str, Any]) -> str:
    """A short table of one run's summary."""
    rows = [
        ("protocol", s.get("protocol")),
        ("messages / delivered / lost", "%d / %d / %d" % (s["messages"], s["delivered"],
                                                          s["lost"])),
        ("FCT us p50 / p99 / p99.9 / max", " / ".join(_fmt(s["fct_us"][k])
                                                      for k in ("p50", "p99", "p999", "max"))),
        ("slowdown p50 / p99 / max", " / ".join(_fmt(s["slowdown"][k])
                                                for k in ("p50", "p99", "max"))),
        ("goodput Gb/s p50 / min", " / ".join(_fmt(s["goodput_gbps"][k]) for k in ("p50", "min"))),
        ("drops (queue + wire) / trims", "%d (%d + %d) / %d" % (s["drops"], s["queue_drops"],
                                                               s["wire_drops"], s["trims"])),
        ("retransmits / ECN marks", "%d / %d" % (s["retransmits"], s["ecn_marks"])),
        ("peak queue B max / ToR->host / by tier",
         "%s / %s / %s" % (_fmt(s["peak_queue_bytes"]["max"]),
                           _fmt(s["peak_queue_bytes"]["edge_down"]),
                           ", ".join("%s %s" % (k, _fmt(v)) for k, v in
                                     sorted(s["peak_queue_bytes"].items())
                                     if k not in ("max", "edge_down", "host") and v))),
    ]
    for key in ("pfc_pauses", "paused_time_us"):
        if key in s:
            rows.append((key, _fmt(s[key])))
    if "triggers" in s:
        rows.append(("triggers fired / activations (ignored)", "%d of %d / %d (%d)" % (
            s["triggers_fired"], s["triggers"], s["activations"], s["activations_ignored"])))
        rows.append(("held messages started / never started / last finish us", "%d / %d / %s"
                     % (s["started_by_triggers"], s["never_started"],
                        _fmt(s["last_finish_us"]))))
    rows += failure_rows(s.get("failures"))
    rows += [
        ("base RTT us / sim time us", "%s / %s" % (_fmt(s["base_rtt_us"]),
                                                  _fmt(s["sim_time_us"]))),
        ("events / wall s / events/s", "%d / %s / %s" % (s["events"], _fmt(s["wall_s"]),
                                                          _fmt(s["events_per_s"]))),
    ]
    if s.get("complete") is False:      # a run stopped early: partial results
        udp = s.get("udp", {})
        end = s.get("signal") or udp.get("signal") or s.get("end") or udp.get("end") or "?"
        rows.insert(1, ("complete", "NO: stopped by %s (partial results)"
                        % ENDS.get(end, end)))
    if s.get("stall"):
        st = s["stall"]
        rows.insert(2, ("stalled: no progress", "%s up to %s; %s" % (
            time_text(st["at_us"] - st["progress_seen_us"]), time_text(st["at_us"]),
            describe_causes(st))))
    width = max(len(r[0]) for r in rows)
    return "\n".join("%-*s  %s" % (width, name, value) for name, value in rows)


def failure_rows(failures: dict[str, Any] | None) -> list[tuple[str, str]]:
    """Rows of the summary table for a run with a fault schedule (gse.runtimes.sim.faults)."""
    if not failures:
        return []
    d = failures["drops"]
    rows = [("failure drops flight/queue/hole/gray",
             "%d / %d / %d / %d" % (d["in_flight"], d["queued"], d["black_holed"], d["gray"]))]
    for e in failures["entries"]:
        if "affected_messages" in e:            # the simulation attributes messages
            done = e.get("affected_done_us")
            text = ("%d links, %d msgs hit, %d retx, last done +%s us"
                    % (len(e["links"]), e["affected_messages"], e["retransmitted"],
                       _fmt(done[1]) if done else "-"))
        else:
            text = "%d links, %d lost on the link, %d black-holed" % (
                len(e["links"]), e["lost_on_link"], e["black_holed"])
        rows.append(("  %s" % e["spec"][:36], text))
    return rows


def format_side_by_side(summaries: Sequence[dict[str, Any]], labels: Sequence[str]) -> str:
    """Several summaries in columns (protocol comparisons)."""
    keys = [("messages", lambda s: s["messages"]), ("lost", lambda s: s["lost"]),
            ("FCT p50 us", lambda s: s["fct_us"]["p50"]),
            ("FCT p99 us", lambda s: s["fct_us"]["p99"]),
            ("FCT max us", lambda s: s["fct_us"]["max"]),
            ("slowdown p99", lambda s: s["slowdown"]["p99"]),
            ("goodput p50 Gb/s", lambda s: s["goodput_gbps"]["p50"]),
            ("drops", lambda s: s["drops"]), ("trims", lambda s: s["trims"]),
            ("retransmits", lambda s: s["retransmits"]),
            ("ECN marks", lambda s: s["ecn_marks"]),
            ("peak queue B", lambda s: s["peak_queue_bytes"]["max"]),
            ("PFC pauses", lambda s: s.get("pfc_pauses")),
            ("paused us", lambda s: s.get("paused_time_us"))]
    if any(s.get("complete") is False for s in summaries):
        keys.insert(0, ("ended by", lambda s: s.get("signal") or s.get("end")))
    if any(s.get("failures") for s in summaries):
        keys.append(("failure drops", lambda s: sum(s["failures"]["drops"].values())
                     if s.get("failures") else None))
    lines = ["%-18s" % "" + "".join("%16s" % label for label in labels)]
    for name, get in keys:
        lines.append("%-18s" % name + "".join("%16s" % _fmt(get(s)) for s in summaries))
    return "\n".join(lines)


def side_by_side(results: Mapping[str, RunResult]) -> str:
    """The side-by-side table of ``{label: RunResult}``."""
    labels = list(results)
    return format_side_by_side([results[p].summary for p in labels], labels)


# Per-message records as a table (docs/records.md): the CSV and Parquet columns, in order.
RECORD_SCHEMA = [("msg_id", "int64"), ("src", "int32"), ("dst", "int32"), ("size", "int64"),
                 ("start_us", "float64"), ("deliver_us", "float64"), ("finish_us", "float64"),
                 ("fct_us", "float64"), ("ideal_us", "float64"), ("slowdown", "float64"),
                 ("goodput_gbps", "float64"), ("retransmits", "int64"),
                 ("delivered", "bool"), ("completed", "bool")]


def write_records(path: str, records: Sequence[MessageRecord],
                  metadata: Mapping[str, str] | None = None) -> None:
    """Per-message records: Parquet if the name ends in .parquet, CSV if in .csv, else
    JSON Lines (docs/records.md).  A message not delivered (or not completed) has no
    ``deliver_us`` (or ``finish_us``, ``fct_us``, ``slowdown``, ``goodput_gbps``): empty
    in CSV, null in Parquet, absent in JSON Lines."""
    rows = [r.as_dict() for r in records]
    for row, r in zip(rows, records):
        row["completed"] = r.completed
    lower = path.lower()
    if lower.endswith(".parquet") or lower.endswith(".csv"):
        from gse.metrics.columnar import write_table
        cols = {name: [row.get(name) for row in rows] for name, _ in RECORD_SCHEMA}
        write_table(path, cols, RECORD_SCHEMA, dict(metadata or {}, gse_records="1"))
    else:
        with open(path, "w") as f:
            for row in rows:
                f.write(json.dumps(row, sort_keys=True) + "\n")


def read_records(path: str) -> list[dict[str, Any]]:
    """The records a run wrote (``--records``: .parquet, .csv or .jsonl), as dicts with
    the columns of docs/records.md (missing values None)."""
    lower = path.lower()
    if lower.endswith(".parquet") or lower.endswith(".csv"):
        from gse.metrics.columnar import read_table
        cols, _ = read_table(path)
        names = list(cols)
        n = len(cols[names[0]]) if names else 0
        return [{name: cols[name][i] for name in names} for i in range(n)]
    out = []
    with open(path) as f:
        for line_no, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise ValueError("%s line %d: not JSON: %s" % (path, line_no, exc)) from None
            if not isinstance(row, dict):
                raise ValueError("%s line %d: a record is a JSON object" % (path, line_no))
            out.append(row)
    return out
