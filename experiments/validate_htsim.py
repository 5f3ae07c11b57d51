#!/usr/bin/env python3
"""Validation of the RoCE/PFC baseline (and GSE) against htsim's published figures.

    python experiments/validate_htsim.py [--seeds 1 2 3] [--json out.json]

Runs the k=8 Fat-Tree (100 Gb/s, 1 us links) permutation of 2 MB flows and the 32:1
incast of 2 MB with the ``htsim`` baseline profile (htsim's RoCE model: no DCQCN, no ECN,
its framing, NIC, single-FIFO queues and PFC), then the ``deployed`` one (DCQCN on), and
GSE beside them; prints each figure next to htsim's (experiments/data/htsim_anchors.json, with
the htsim build, machine and date as far as they were recorded) and the relative gap.
The placement and ECMP paths are the project's own (seeded), so per-flow figures move with
the seed as htsim's do; experiments/validate_htsim_roce.py compares flow by flow on htsim's
own paths.
"""

import argparse
import json
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from gse.config import GseConfig, roce_baseline  # noqa: E402
from gse.runtimes.sim.run import run_simulation  # noqa: E402
from gse.workloads import traffic  # noqa: E402
from topologies import fat_tree  # noqa: E402

ANCHORS = os.path.join(ROOT, "experiments", "data", "htsim_anchors.json")
# (variant, workload) -> the htsim run of ANCHORS' "fct_k8" it is held against, and which
# of its figures
COMPARED = {
    ("roce-htsim", "permutation"): ("roce-pfc/permutation", ("fct_p50_us", "fct_p99_us",
                                                             "fct_max_us", "goodput_p50_gbps")),
    ("roce-htsim", "incast"): ("roce-pfc/incast-32", ("fct_min_us", "fct_p50_us", "fct_max_us")),
    ("gse", "permutation"): ("uet/permutation", ("fct_p50_us", "fct_p99_us", "fct_max_us",
                                                 "goodput_p50_gbps")),
    ("gse", "incast"): ("uet/incast-32", ("fct_p50_us", "fct_max_us")),
}


def htsim_figures(path=ANCHORS):
    """{(variant, workload): {figure: htsim's value}} from the data file at ``path``."""
    with open(path, encoding="utf-8") as f:
        runs = json.load(f)["fct_k8"]["runs"]
    return {key: {fig: runs[name][fig] for fig in figs}
            for key, (name, figs) in COMPARED.items()}


HTSIM = htsim_figures()

VARIANTS = {
    "roce-htsim": ("roce", lambda: roce_baseline("htsim")),
    "roce-dcqcn": ("roce", lambda: roce_baseline("deployed")),
    "gse": ("gse", lambda: GseConfig()),
}


def run(variant, workload, seed):
    topo = fat_tree(8)
    rng = random.Random("%s/traffic" % seed)
    if workload == "permutation":
        msgs = traffic.permutation(len(topo.hosts), 2_000_000, rng)
    else:
        msgs = traffic.incast(len(topo.hosts), 32, 2_000_000, rng)
    protocol, make = VARIANTS[variant]
    s = run_simulation(topo, msgs, protocol, make(), seed).summary
    return {"variant": variant, "workload": workload, "seed": seed,
            "fct_min_us": s["fct_us"]["min"], "fct_p50_us": s["fct_us"]["p50"],
            "fct_p99_us": s["fct_us"]["p99"], "fct_max_us": s["fct_us"]["max"],
            "goodput_p50_gbps": s["goodput_gbps"]["p50"], "lost": s["lost"],
            "drops": s["drops"], "pfc_pauses": s["pfc_pauses"],
            "paused_time_us": s["paused_time_us"], "wall_s": s["wall_s"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    print("%-11s %-11s %4s %9s %9s %9s %9s %8s %5s %6s %7s" % (
        "variant", "workload", "seed", "min us", "p50 us", "p99 us", "max us", "Gb/s p50",
        "drops", "pauses", "wall s"))
    for variant in args.variants:
        for workload in ("permutation", "incast"):
            for seed in args.seeds:
                r = run(variant, workload, seed)
                rows.append(r)
                print("%-11s %-11s %4d %9.1f %9.1f %9.1f %9.1f %8.2f %5d %6d %7.2f" % (
                    variant, workload, seed, r["fct_min_us"], r["fct_p50_us"],
                    r["fct_p99_us"], r["fct_max_us"], r["goodput_p50_gbps"], r["drops"],
                    r["pfc_pauses"], r["wall_s"]), flush=True)
    print("\nmean over seeds beside htsim (%s):" % os.path.relpath(ANCHORS, ROOT))
    print("%-11s %-11s %-17s %10s %10s %8s" % ("variant", "workload", "figure", "here",
                                              "htsim", "gap"))
    for (variant, workload), ref in HTSIM.items():
        mine = [r for r in rows if r["variant"] == variant and r["workload"] == workload]
        if not mine:
            continue
        for key, value in ref.items():
            here = sum(r[key] for r in mine) / len(mine)
            print("%-11s %-11s %-17s %10.1f %10.1f %+7.0f%%" % (
                variant, workload, key, here, value, 100.0 * (here - value) / value))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
