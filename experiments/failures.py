#!/usr/bin/env python3
"""Link and switch failures mid-run on the k=8 Fat-Tree: GSE vs GSE fabric vs RoCE/PFC
(issue 13).

    python experiments/failures.py                       # the study, seed 1 (~10 min)
    python experiments/failures.py --quick               # k=4, small sizes: a smoke run
    python experiments/failures.py --only permutation --detect-us 1000 --seeds 1 2 3
    python experiments/failures.py --protocols gse-fabric --set trim=1   # one field changed

Workloads (128 hosts, 100 Gb/s, 1 us per link): a permutation of 2 MB messages, and a
ring all-reduce of 8 MiB over 32 ranks, one per leaf, in a seeded random ring order so
that most ring hops cross the core (replayed with its step dependencies,
``gse.workloads.replay``).  Failures at t = 50 us (``gse.workloads.faults`` specs):

* ``1 core link``: ``tier:agg-core:1@50us`` (one agg-core link, chosen by the seed);
* ``25% core``:    ``tier:agg-core:25%@50us`` (32 of the 128 agg-core links);
* ``agg switch``:  ``switch:agg1_0@50us`` (an aggregation switch and its 8 links);

each with the switches learning of it 10 us and 1 ms later (``--detect-us``), and a run
without failure as the baseline.  Per run: messages lost (must be 0), FCT p50/p99/max
(the ring: the collective's time), p99 over the baseline's p99, the goodput dip (10 us
bins over the 200 us after the failure: the largest shortfall against the baseline's
goodput in the same bin, leaving out bins where the baseline winds down), recovery
(extra FCT over the baseline of the first and the last message the failure hit to
complete), and what the failure cost (packets lost on the link and black-holed,
retransmissions of the messages it hit), PFC pauses and paused time.

The table goes to stdout and ``OUT/failures.md``, the rows to ``OUT/failures.json`` (in
fabric mode with the leaves' ``leaf_resends`` and ``duplicates``: repairs that were not
needed arrive twice), the
goodput-over-time plots to ``OUT/goodput-<workload>.png`` (matplotlib).  Figures are
printed, never asserted (the acceptance checks live in the tests).
"""

import argparse
import json
import math
import os
import random
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from gse.config import PS_PER_US  # noqa: E402
from gse.metrics.failures import goodput_dip, recovery  # noqa: E402
from gse.protocols import default_config  # noqa: E402
from gse.runtimes.sim.fabric_nodes import fabric_summary  # noqa: E402
from gse.runtimes.sim.run import run_simulation  # noqa: E402
from gse.workloads import traffic  # noqa: E402
from gse.workloads.collectives import Collective  # noqa: E402
from gse.workloads.faults import build_schedule  # noqa: E402
from gse.workloads.replay import replay  # noqa: E402
from topologies import fat_tree  # noqa: E402

PROTOCOLS = ("gse", "gse-fabric", "roce")
LABELS = {"roce": "RoCE/PFC", "gse": "GSE", "gse-fabric": "GSE fabric"}
WORKLOADS = ("permutation", "ring-allreduce")
FAIL_US = 50
CASES = {"1 core link": "tier:agg-core:1@%dus" % FAIL_US,
         "25% core": "tier:agg-core:25%%@%dus" % FAIL_US,
         "agg switch": "switch:agg1_0@%dus" % FAIL_US}
MiB = 1024 * 1024
BIN_PS = 10 * PS_PER_US


def sizes(quick):
    if quick:
        return dict(k=4, perm=1_000_000, ring_ranks=8, ring=MiB, agg="agg1_0")
    return dict(k=8, perm=2_000_000, ring_ranks=32, ring=8 * MiB, agg="agg1_0")


def percentile(values, q):
    v = sorted(values)
    return v[max(1, math.ceil(q / 100.0 * len(v))) - 1] if v else None


def ring_hosts(topo, n, seed):
    """``n`` ranks, one per leaf (the first host of every leaf), in a seeded random order."""
    per_leaf = len(topo.hosts) // n
    hosts = [r * per_leaf for r in range(n)]
    random.Random("%s/ring" % seed).shuffle(hosts)
    return hosts


def protocol_config(protocol, settings=()):
    """The protocol's defaults with ``NAME=VALUE`` settings applied where the protocol has
    that field (a study of one field changed, e.g. ``trim=1`` for fabric mode)."""
    cfg = default_config(protocol)
    for item in settings:
        name, _, value = item.partition("=")
        if name.strip() in cfg.__slots__:
            cfg.set(name.strip(), value.strip())
    cfg.validate()
    return cfg


def run_case(workload, protocol, spec, detect_ps, seed, topo, sz, settings=()):
    """One run: (summary, records, network, time series)."""
    sched = build_schedule(topo, [spec] if spec else [], seed=seed)
    cfg = protocol_config(protocol, settings)
    if workload == "permutation":
        msgs = traffic.permutation(len(topo.hosts), sz["perm"], random.Random(seed))
        res = run_simulation(topo, msgs, protocol, cfg, seed, sample_ps=BIN_PS, faults=sched,
                             detect_ps=detect_ps)
        return res.summary, res.records, res.network, res.timeseries, None
    ranks = list(range(sz["ring_ranks"]))
    coll = Collective(1, "all_reduce", ranks, sz["ring"], tag="ring")
    res = replay(topo, [coll], protocol, cfg, seed, rank_hosts=ring_hosts(
        topo, sz["ring_ranks"], seed), sample_ps=BIN_PS, faults=sched, detect_ps=detect_ps)
    if protocol == "gse-fabric":
        fabric_summary(res.network, res.summary)
    c = res.collectives[0]
    return res.summary, res.records, res.network, res.timeseries, (
        c.time_ps() / 1e6 if c.done else None)


def row_of(workload, case, detect_us, protocol, seed, run, base):
    summary, records, net, ts, coll_us = run
    fcts = [r.fct_ps() / 1e6 for r in records if r.completed]
    row = {"workload": workload, "case": case, "detect_us": detect_us, "protocol": protocol,
           "seed": seed, "messages": summary["messages"], "lost": summary["lost"],
           "fct_p50_us": _r(percentile(fcts, 50)), "fct_p99_us": _r(percentile(fcts, 99)),
           "fct_max_us": _r(max(fcts) if fcts else None), "coll_us": _r(coll_us),
           "pfc_pauses": summary.get("pfc_pauses", 0),
           "paused_us": summary.get("paused_time_us", 0.0),
           "retransmits": summary["retransmits"], "wall_s": summary["wall_s"]}
    fabric = summary.get("fabric")
    if fabric:                           # fabric mode: the leaves' repairs, and the wasted
        row.update(leaf_resends=fabric.get("leaf_resends"),    # ones (arrived twice)
                   duplicates=fabric.get("duplicates"),
                   plan_picks=fabric.get("plan_picks"))      # packets sprayed by plan_weights
    if base is not None:
        b_summary, b_records, _, _, b_coll = base
        b_fcts = [r.fct_ps() / 1e6 for r in b_records if r.completed]
        bp99 = percentile(b_fcts, 99)
        row["p99_vs_base"] = _r(row["fct_p99_us"] / bp99, 3) if bp99 and fcts else None
        if coll_us and b_coll:
            row["coll_vs_base"] = _r(coll_us / b_coll, 3)
    if net.faults is not None:
        stats = net.faults.stats[0]
        f = summary["failures"]["entries"][0]
        row.update(links=len(f["links"]), lost_on_link=f["lost_on_link"],
                   black_holed=f["black_holed"], retransmitted=f["retransmitted"],
                   affected=f["affected_messages"])
        if base is not None:
            rec = recovery(records, base[1], stats.affected)
            row.update(recovery_first_us=rec["first_us"], recovery_last_us=rec["last_us"],
                       recovery_max_us=rec["max_us"])
        row.update(goodput_dip(ts, FAIL_US * PS_PER_US, 20 * PS_PER_US, 200 * PS_PER_US,
                               base[3] if base is not None else None))
    return row


def _r(x, digits=1):
    return None if x is None else round(x, digits)


COLUMNS = [("case", "case", "%s"), ("detect", "detect_us", "%s"), ("protocol", "protocol", "%s"),
           ("lost", "lost", "%d"), ("p50 us", "fct_p50_us", "%.1f"),
           ("p99 us", "fct_p99_us", "%.1f"), ("max us", "fct_max_us", "%.1f"),
           ("coll us", "coll_us", "%.1f"), ("p99/base", "p99_vs_base", "%.2f"),
           ("coll/base", "coll_vs_base", "%.2f"), ("dip", "dip", "%.2f"),
           ("rec first us", "recovery_first_us", "%.1f"),
           ("rec last us", "recovery_last_us", "%.1f"), ("hit", "affected", "%d"),
           ("lost on link", "lost_on_link", "%d"), ("black-holed", "black_holed", "%d"),
           ("retx (hit)", "retransmitted", "%d"), ("PFC pauses", "pfc_pauses", "%d"),
           ("paused us", "paused_us", "%.0f")]


def table(rows, workload):
    rows = [r for r in rows if r["workload"] == workload]
    head = "| " + " | ".join(name for name, _, _ in COLUMNS) + " |"
    lines = ["### %s" % workload, "", head, "|" + "---|" * len(COLUMNS)]
    for r in rows:
        cells = []
        for _, key, fmt in COLUMNS:
            v = r.get(key)
            cells.append("-" if v is None else (fmt % v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="k=4, small sizes: a smoke run")
    p.add_argument("--seeds", type=int, nargs="+", default=[1])
    p.add_argument("--only", choices=WORKLOADS, action="append")
    p.add_argument("--protocols", default=",".join(PROTOCOLS))
    p.add_argument("--cases", default=",".join(CASES), help="comma-separated cases")
    p.add_argument("--detect-us", type=float, nargs="+", default=[10, 1000])
    p.add_argument("--out-dir", default=os.path.join(ROOT, "results", "failures"),
                   help="where the table, JSON rows and plots go (default results/failures)")
    p.add_argument("--no-plot", action="store_true")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="a protocol parameter, for the protocols that have it (repeatable)")
    args = p.parse_args(argv)
    for item in args.set:
        if "=" not in item:
            p.error("--set takes NAME=VALUE, got %r" % item)
        if not any(item.split("=", 1)[0].strip() in default_config(x).__slots__
                   for x in PROTOCOLS):
            p.error("--set %s: no protocol has that parameter" % item)
    sz = sizes(args.quick)
    topo = fat_tree(sz["k"])
    cases = dict(CASES)
    cases["agg switch"] = "switch:%s@%dus" % (sz["agg"], FAIL_US)
    chosen = [c.strip() for c in args.cases.split(",") if c.strip()]
    for c in chosen:
        if c not in cases:
            p.error("unknown case %r (known: %s)" % (c, ", ".join(cases)))
    protocols = [x.strip() for x in args.protocols.split(",") if x.strip()]
    os.makedirs(args.out_dir, exist_ok=True)
    rows, series = [], {}
    t0 = time.time()
    for workload in args.only or WORKLOADS:
        for seed in args.seeds:
            for protocol in protocols:
                base = run_case(workload, protocol, None, -1, seed, topo, sz, args.set)
                rows.append(row_of(workload, "none", "-", protocol, seed, base, None))
                series[(workload, seed, "none", "-", protocol)] = base[3]
                for case in chosen:
                    for det in args.detect_us:
                        run = run_case(workload, protocol, cases[case],
                                       int(det * PS_PER_US), seed, topo, sz, args.set)
                        row = row_of(workload, case, "%g us" % det, protocol, seed, run, base)
                        rows.append(row)
                        series[(workload, seed, case, row["detect_us"], protocol)] = run[3]
                        print("%-15s %-12s %-8s %-10s seed %d: lost %d, p99 %s us%s (%.0f s)"
                              % (workload, case, row["detect_us"], protocol, seed, row["lost"],
                                 row["fct_p99_us"], "" if row.get("coll_us") is None else
                                 ", collective %s us" % row["coll_us"], time.time() - t0),
                              file=sys.stderr)
    text = ["# Failures mid-run (experiments/failures.py)", "",
            "k=%d Fat-Tree, failures at %d us; seeds %s.  p99/base: p99 FCT over the "
            "same protocol's p99 without failure; dip: in the 200 us after the failure, the "
            "largest shortfall of a 10 us bin's goodput against the same bin without "
            "failure; rec first/last: extra FCT "
            "of the first and last message the failure hit to complete." % (
                sz["k"], FAIL_US, ", ".join(map(str, args.seeds))),
            "Settings: %s." % (", ".join(args.set) or "the protocols' defaults"), ""]
    for workload in args.only or WORKLOADS:
        text += [table(rows, workload), ""]
    report = "\n".join(text)
    print(report)
    with open(os.path.join(args.out_dir, "failures.md"), "w") as f:
        f.write(report + "\n")
    with open(os.path.join(args.out_dir, "failures.json"), "w") as f:
        json.dump(rows, f, indent=1)
    if not args.no_plot:
        plot(series, args, chosen, protocols)
    lost = sum(r["lost"] for r in rows)
    print("messages lost over every run: %d" % lost)
    return 0 if lost == 0 else 1


def plot(series, args, cases, protocols):
    from gse.metrics.plots import plot_goodput
    for workload in args.only or WORKLOADS:
        seed = args.seeds[0]
        panels = []
        base = {LABELS[p]: _line(series.get((workload, seed, "none", "-", p)))
                for p in protocols}
        panels.append(("%s, no failure" % workload, base))
        for case in cases:
            for det in args.detect_us:
                key = "%g us" % det
                lines = {LABELS[p]: _line(series.get((workload, seed, case, key, p)))
                         for p in protocols}
                panels.append(("%s, %s failed at %d us, detected after %s"
                               % (workload, case, FAIL_US, key), lines))
        path = os.path.join(args.out_dir, "goodput-%s.png" % workload)
        ends = [times[-1] for times, _ in base.values() if times]
        xmax = max(1.2 * max(ends, default=0), FAIL_US + 400)
        try:
            plot_goodput(panels, path, FAIL_US, xmax_us=xmax)
            print("plot written to %s" % path)
        except RuntimeError as exc:
            print("no plot: %s" % exc, file=sys.stderr)


def _line(ts):
    if ts is None:
        return ([], [])
    return (list(ts.times_us()), list(ts.total_goodput_gbps()))


if __name__ == "__main__":
    sys.exit(main())
