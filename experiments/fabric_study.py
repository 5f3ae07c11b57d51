#!/usr/bin/env python3
"""Fabric scheduling against endpoint scheduling and RoCE/PFC on the k=8 Fat-Tree (issue 8).

    python experiments/fabric_study.py                  # four workloads, seed 1, ~1 min
    python experiments/fabric_study.py --seeds 1 2 3 --only permutation
    python experiments/fabric_study.py --quick          # k=4, small sizes: a smoke run

Three columns on the same fabric (128 hosts, 100 Gb/s, 1 us per link) and the same
messages: ``roce`` (RoCEv2 + PFC + DCQCN, per-flow ECMP), ``gse`` (endpoint scheduling:
the GSE host agent, receiver grants, spraying, trimming) and ``gse-fabric`` (fabric
scheduling: plain RoCE-like hosts without congestion control; the leaves keep a VOQ per
destination host, request/grant between leaves, spray, reorder; docs/fabric-mode.md).

Workloads: a permutation of 2 MB messages; an incast 32:1 of 2 MB; an all-to-all of
S = 2 MB per rank (S/N = 15,625 B to each of the 127 others, all at t=0); a ring
all-reduce of 8 MiB over 32 ranks, one per leaf (host 4r), replayed with its step
dependencies (``gse.workloads.replay``), so every ring hop crosses the fabric.

Per run: messages lost, FCT p50/p99 (with p99 over the ideal of the slowest message, the
acceptance figure, and the p99 of each message's own slowdown), the last completion (for
the ring: the collective's time from the first rank entering to the last delivery, and
its bus bandwidth), peak queue per tier (ToR uplinks, ToR to host, aggregation (spine),
core, and the leaves' VOQ memory in fabric mode), PFC pauses (in fabric mode: PAUSEs from
a leaf to its hosts), drops, trims and retransmissions.  The table goes to stdout, the
rows to ``--json``, bars of p99 FCT, last completion and peak agg/core queue to
``--plot`` (when matplotlib is installed).  Figures are printed, never asserted (the
acceptance checks are in tests/test_fabric_properties.py).
"""

import argparse
import json
import os
import random
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from gse.config import GseConfig  # noqa: E402
from gse.runtimes.sim.fabric_nodes import fabric_summary  # noqa: E402
from gse.runtimes.sim.run import run_simulation  # noqa: E402
from gse.workloads import traffic  # noqa: E402
from gse.workloads.collectives import Collective  # noqa: E402
from gse.workloads.replay import replay, ring_bound_ps  # noqa: E402
from topologies import fat_tree  # noqa: E402

PROTOCOLS = ("roce", "gse", "gse-fabric")
LABELS = {"roce": "RoCE/PFC", "gse": "GSE endpoint", "gse-fabric": "GSE fabric"}
WORKLOADS = ("permutation", "incast", "all-to-all", "ring-allreduce")
MiB = 1024 * 1024


def sizes(quick):
    if quick:
        return dict(k=4, perm=500_000, incast=500_000, senders=8, a2a=50_000, ring_ranks=4,
                    ring=MiB)
    return dict(k=8, perm=2_000_000, incast=2_000_000, senders=32, a2a=2_000_000,
                ring_ranks=32, ring=8 * MiB)


def tier_peaks(net):
    """Peak egress queue per tier, ToR ports split by direction."""
    peak = {"tor_up": 0, "tor_down": 0, "agg": 0, "core": 0}
    for port in net.ports:
        if port.kind == "host":
            continue
        if port.kind == "edge":
            key = "tor_down" if port.faces_host else "tor_up"
        else:
            key = port.kind
        peak[key] = max(peak.get(key, 0), port.queue.counters.peak_bytes)
    return peak


def row_of(summary, records, net):
    done = [r for r in records if r.completed]
    worst_ideal = max((r.ideal_ps for r in records), default=0) / 1e6
    row = {"messages": summary["messages"], "lost": summary["lost"],
           "fct_p50_us": summary["fct_us"]["p50"], "fct_p99_us": summary["fct_us"]["p99"],
           "fct_max_us": summary["fct_us"]["max"],
           "p99_over_ideal": (round(summary["fct_us"]["p99"] / worst_ideal, 3)
                              if done and worst_ideal else None),
           "slowdown_p99": summary["slowdown"]["p99"],
           "ideal_us": round(worst_ideal, 2),
           "pauses": summary.get("pfc_pauses", 0),
           "paused_us": summary.get("paused_time_us", 0.0),
           "drops": summary["drops"], "trims": summary["trims"],
           "retransmits": summary["retransmits"], "wall_s": summary["wall_s"],
           "events": summary["events"]}
    row.update(tier_peaks(net))
    row["leaf_voq"] = summary["peak_queue_bytes"].get("edge_voq")
    row["fabric"] = summary.get("fabric")
    return row


def messages_for(name, n, sz, seed):
    rng = random.Random("%s/traffic" % seed)
    if name == "permutation":
        return traffic.permutation(n, sz["perm"], rng)
    if name == "incast":
        return traffic.incast(n, sz["senders"], sz["incast"], rng)
    return traffic.all_to_all(n, sz["a2a"] // n)


def run_one(name, protocol, seed, topo, sz):
    if name == "ring-allreduce":
        ranks = list(range(sz["ring_ranks"]))
        per_leaf = len(topo.hosts) // sz["ring_ranks"]
        hosts = [r * per_leaf for r in ranks]
        coll = Collective(1, "all_reduce", ranks, sz["ring"], tag="ring")
        res = replay(topo, [coll], protocol, seed=seed, rank_hosts=hosts)
        if protocol == "gse-fabric":
            fabric_summary(res.network, res.summary)
        row = row_of(res.summary, res.records, res.network)
        c = res.collectives[0]
        bound, _ = ring_bound_ps(topo, hosts, sz["ring"])
        row.update(coll_us=round(c.time_ps() / 1e6, 1) if c.done else None,
                   busbw_gbps=round(c.busbw_gbps(), 2) if c.done else None,
                   bound_us=round(bound / 1e6, 1))
        return row
    msgs = messages_for(name, len(topo.hosts), sz, seed)
    res = run_simulation(topo, msgs, protocol, None, seed)
    row = row_of(res.summary, res.records, res.network)
    row["coll_us"] = round(max(r.finish_ps for r in res.records) / 1e6, 1)
    return row


ROWS = [("lost", "lost messages", "%d"), ("fct_p50_us", "FCT p50 us", "%.1f"),
        ("fct_p99_us", "FCT p99 us", "%.1f"), ("p99_over_ideal", "p99 / max ideal", "%.3f"),
        ("slowdown_p99", "slowdown p99", "%.3f"),
        ("coll_us", "last done us", "%.1f"), ("busbw_gbps", "bus bw Gb/s", "%.2f"),
        ("tor_up", "peak ToR up B", "%d"), ("tor_down", "peak ToR->host B", "%d"),
        ("agg", "peak agg B", "%d"), ("core", "peak core B", "%d"),
        ("leaf_voq", "peak leaf VOQ B", "%d"), ("pauses", "PFC pauses", "%d"),
        ("paused_us", "paused us", "%.1f"), ("drops", "drops", "%d"),
        ("trims", "trims", "%d"), ("retransmits", "retransmits", "%d"),
        ("wall_s", "wall s", "%.1f")]


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def table(results, protocols):
    lines = []
    for name, by_proto in results.items():
        n_seeds = len(next(iter(by_proto.values())))
        lines.append("%s (%s)" % (name, "seed %d" % by_proto[protocols[0]][0]["seed"]
                                  if n_seeds == 1 else "mean of %d seeds" % n_seeds))
        lines.append("  %-18s" % "" + "".join("%15s" % LABELS[p] for p in protocols))
        for key, label, fmt in ROWS:
            vals = [_mean([run.get(key) for run in by_proto[p]]) for p in protocols]
            if all(v is None for v in vals):
                continue
            cells = []
            for v in vals:
                if v is None:
                    cells.append("%15s" % "-")
                else:
                    cells.append("%15s" % (fmt % (round(v) if fmt == "%d" else v)))
            lines.append("  %-18s" % label + "".join(cells))
        lines.append("")
    return "\n".join(lines)


def plot(results, protocols, path, heading):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed, so no plot was drawn")
        return
    names = [w for w in WORKLOADS if w in results]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.0))
    width = 0.8 / len(protocols)
    panels = (("fct_p99_us", "message FCT p99 (us, log)", True),
              ("coll_us", "last completion / collective time (us, log)", True),
              ("fabric_peak", "peak agg/core queue (KB)", False))
    for ax, (key, title, log) in zip(axes, panels):
        for i, p in enumerate(protocols):
            ys = []
            for name in names:
                runs = results[name][p]
                if key == "fabric_peak":
                    ys.append(_mean([max(r["agg"], r["core"]) / 1000 for r in runs]))
                else:
                    ys.append(_mean([r.get(key) for r in runs]) or 0)
            xs = [j + (i - (len(protocols) - 1) / 2) * width for j in range(len(names))]
            ax.bar(xs, ys, width, label=LABELS[p])
        if key == "fabric_peak":
            ax.axhline(GseConfig.BDP_BYTES / 1000, color="k", lw=0.8, ls="--")
            ax.text(len(names) - 0.5, GseConfig.BDP_BYTES / 1000, "1 BDP", ha="right",
                    va="bottom", fontsize=8)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, fontsize=9)
        ax.set_title(title, fontsize=10)
        if log:
            ax.set_yscale("log")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("%s, 100 Gb/s: RoCE/PFC vs GSE endpoint vs GSE fabric scheduling" % heading)
    fig.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print("plot written to %s" % path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--protocols", default=",".join(PROTOCOLS))
    ap.add_argument("--only", action="append", choices=WORKLOADS)
    ap.add_argument("--quick", action="store_true", help="k=4 and small sizes (smoke run)")
    ap.add_argument("--json", default=os.path.join(ROOT, "results", "fabric_study.json"))
    ap.add_argument("--plot", default=os.path.join(ROOT, "results", "fabric_study.png"))
    args = ap.parse_args(argv)
    protocols = [p for p in args.protocols.split(",") if p]
    for p in protocols:
        if p not in PROTOCOLS:
            ap.error("unknown protocol %r (known: %s)" % (p, ", ".join(PROTOCOLS)))
    sz = sizes(args.quick)
    topo = fat_tree(sz["k"])
    print("fabric: %s, %d hosts, 100 Gb/s, 1 us per link" % (topo.name, len(topo.hosts)),
          flush=True)
    results = {}
    for name in args.only or WORKLOADS:
        for seed in args.seeds:
            for p in protocols:
                t0 = time.perf_counter()
                row = run_one(name, p, seed, topo, sz)
                row["seed"] = seed
                results.setdefault(name, {}).setdefault(p, []).append(row)
                print("  %-15s %-11s seed %d: lost %d, p99 %s us  (%.0f s)"
                      % (name, p, seed, row["lost"], row["fct_p99_us"],
                         time.perf_counter() - t0), flush=True)
    print()
    print(table(results, protocols))
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"topology": topo.summary(), "sizes": sz, "results": results}, f,
                      indent=2, sort_keys=True)
        print("results written to %s" % args.json)
    if args.plot:
        plot(results, protocols, args.plot, "%s (%d hosts)" % (topo.name, len(topo.hosts)))
    return 0 if all(r["lost"] == 0 for w in results.values() for rs in w.values()
                    for r in rs) else 1


if __name__ == "__main__":
    sys.exit(main())
