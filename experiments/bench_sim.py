#!/usr/bin/env python3
"""Benchmark of the simulator: wall time, events, events/s and peak memory per scenario.

    python experiments/bench_sim.py                 # k=8 permutation and 32:1 incast
    python experiments/bench_sim.py --scenario perm-k8 --seeds 1 2 3
    python experiments/bench_sim.py --protocol roce --baseline htsim --scenario perm-k8

Each scenario runs in its own process so that peak RSS is that run's alone; CPU time is
printed beside wall time (on a loaded machine the two part).  The figures are printed,
never asserted: the machines are shared and noisy.
"""

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

SCENARIOS = {
    "perm-k8": dict(k=8, traffic="permutation", size=2_000_000),
    "incast32-k8": dict(k=8, traffic="incast", size=2_000_000, senders=32),
    "incast32-k8-nounsched": dict(k=8, traffic="incast", size=2_000_000, senders=32,
                                  unsched=0),
    "perm-k16": dict(k=16, traffic="permutation", size=2_000_000),
    "perm-k32": dict(k=32, traffic="permutation", size=2_000_000),
}


def run_one(name, seed, protocol, baseline=None):
    from gse.config import roce_baseline
    from gse.protocols import default_config
    from gse.runtimes.sim.run import run_simulation
    from gse.workloads import traffic
    from topologies import fat_tree
    sc = SCENARIOS[name]
    t0 = time.perf_counter()
    topo = fat_tree(sc["k"])
    rng = random.Random("%s/traffic" % seed)
    n = len(topo.hosts)
    if sc["traffic"] == "permutation":
        msgs = traffic.permutation(n, sc["size"], rng)
    else:
        msgs = traffic.incast(n, sc["senders"], sc["size"], rng)
    cfg = default_config(protocol)     # (--protocol roce: RoceConfig, DCQCN and PFC on)
    if baseline:                       # a RoCE profile (gse.config.BASELINES): htsim's PFC
        cfg = roce_baseline(baseline)
    if "unsched" in sc and protocol == "gse":
        cfg.unsched_bytes = sc["unsched"]
    setup = time.perf_counter() - t0
    cpu0 = time.process_time()
    s = run_simulation(topo, msgs, protocol, cfg, seed).summary
    cpu = time.process_time() - cpu0
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    from gse import _build
    return {"scenario": name, "protocol": protocol, "baseline": baseline, "seed": seed,
            "setup_s": round(setup, 3),
            "build": _build.build(), "wall_s": s["wall_s"], "cpu_s": round(cpu, 3),
            "events": s["events"], "events_per_s": s["events_per_s"],
            "peak_rss_mib": round(rss_mib, 1), "lost": s["lost"],
            "fct_p50_us": s["fct_us"]["p50"], "fct_p99_us": s["fct_us"]["p99"],
            "fct_max_us": s["fct_us"]["max"], "slowdown_p99": s["slowdown"]["p99"],
            "goodput_p50_gbps": s["goodput_gbps"]["p50"],
            "peak_edge_down_bytes": s["peak_queue_bytes"]["edge_down"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", action="append", choices=sorted(SCENARIOS))
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--protocol", default="gse")
    ap.add_argument("--baseline", help="a RoCE profile (--protocol roce): deployed, htsim, "
                    "hpcc-dcqcn")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--json", help="also write the rows as JSON")
    args = ap.parse_args()
    names = args.scenario or ["perm-k8", "incast32-k8", "incast32-k8-nounsched"]
    if args.child:
        print(json.dumps(run_one(names[0], args.seeds[0], args.protocol,
                                    args.baseline)))
        return 0
    rows = []
    cols = ("scenario", "seed", "wall_s", "cpu_s", "events", "events_per_s", "peak_rss_mib", "lost",
            "fct_p50_us", "fct_p99_us", "fct_max_us", "slowdown_p99", "goodput_p50_gbps")
    print(" ".join("%14s" % c for c in cols), flush=True)
    for name in names:
        for seed in args.seeds:
            out = subprocess.run([sys.executable, __file__, "--child", "--scenario", name,
                                  "--seeds", str(seed), "--protocol", args.protocol]
                             + (["--baseline", args.baseline] if args.baseline else []),
                                 capture_output=True, text=True)
            if out.returncode != 0:
                print("%s seed %d failed:\n%s" % (name, seed, out.stderr), file=sys.stderr)
                return 1
            row = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(" ".join("%14s" % row[c] for c in cols), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
