#!/usr/bin/env python3
"""Pure Python against the compiled build: wall time, events, events/s, peak RSS.

    python experiments/bench_compiled.py                     # k=8 GSE/RoCE, incast, k=16
    python experiments/bench_compiled.py --scenario perm-k8-gse --repeat 5
    python experiments/bench_compiled.py --pure-k16          # also k=16 in pure Python

Every run is its own process (as in bench_sim.py), so that peak RSS is that run's alone;
``GSE_PURE_PYTHON=1`` selects the reference in the pure runs, and each child reports which
build it really loaded.  With ``--repeat N`` each build runs N processes, compiled and pure
alternating, and the fastest of each is shown (the machines are shared and noisy);
``speedup`` is fastest pure over fastest compiled, ``pairs`` the median (and range) of the
speed-ups of the N consecutive (compiled, pure) pairs.  ``sim s`` is the event loop alone
(the summary's ``wall_s``), ``total s`` the whole process: imports, topology, traffic,
network, run.  The ``same`` column says whether both builds produced identical
per-message results.  Figures are printed, never asserted.
"""

import argparse
import hashlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# name -> (k, protocol, traffic, senders)
SCENARIOS = {
    "perm-k8-gse": (8, "gse", "permutation", 0),
    "perm-k8-roce": (8, "roce", "permutation", 0),
    "incast32-k8-gse": (8, "gse", "incast", 32),
    "incast32-k8-roce": (8, "roce", "incast", 32),
    "perm-k16-gse": (16, "gse", "permutation", 0),
}
SIZE = 2_000_000
K16 = ("perm-k16-gse",)


def child(name, seed):
    t0 = time.perf_counter()
    sys.path.insert(0, ROOT)
    from gse import _build
    from gse.protocols import default_config
    from gse.runtimes.sim.run import run_simulation
    from gse.workloads import traffic
    from topologies import fat_tree
    k, protocol, kind, senders = SCENARIOS[name]
    topo = fat_tree(k)
    rng = random.Random("%s/traffic" % seed)
    n = len(topo.hosts)
    if kind == "permutation":
        msgs = traffic.permutation(n, SIZE, rng)
    else:
        msgs = traffic.incast(n, senders, SIZE, rng)
    result = run_simulation(topo, msgs, protocol, default_config(protocol), seed)
    s = result.summary
    total = time.perf_counter() - t0
    digest = hashlib.sha256(json.dumps(result.per_message()).encode()).hexdigest()[:12]
    return {"scenario": name, "build": _build.build(), "seed": seed,
            "sim_s": s["wall_s"], "total_s": round(total, 3), "events": s["events"],
            "events_per_s": s["events_per_s"],
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "lost": s["lost"], "fct_p99_us": s["fct_us"]["p99"], "digest": digest}


def run_child(name, seed, pure):
    env = dict(os.environ)
    env.pop("GSE_PURE_PYTHON", None)
    if pure:
        env["GSE_PURE_PYTHON"] = "1"
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name,
                          "--seed", str(seed)], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("%s (%s) failed:\n%s" % (name, "pure" if pure else "compiled",
                                                   out.stderr))
    return json.loads(out.stdout.strip().splitlines()[-1])


def best_of(rows):
    best = dict(min(rows, key=lambda r: r["sim_s"]))
    best["total_s"] = min(r["total_s"] for r in rows)
    best["peak_rss_mib"] = max(r["peak_rss_mib"] for r in rows)
    return best


def measure(name, seed, repeat, with_pure):
    """``repeat`` processes per build, compiled and pure alternating, so that a change in
    the machine's load between them weighs on both builds alike.  Returns the fastest
    of each build and the speed-up of every (compiled, pure) pair."""
    compiled_rows, pure_rows, ratios = [], [], []
    for _ in range(repeat):
        c = run_child(name, seed, False)
        compiled_rows.append(c)
        if with_pure:
            p = run_child(name, seed, True)
            pure_rows.append(p)
            ratios.append(p["sim_s"] / c["sim_s"])
    return (best_of(compiled_rows), best_of(pure_rows) if pure_rows else None,
            sorted(ratios))


COLS = ("scenario", "build", "sim s", "total s", "events", "events/s", "RSS MiB", "speedup",
        "pairs", "p99 us", "same")


def fmt(row, speedup, pairs, same):
    return ("%-17s %-8s %8.3f %8.3f %10d %10d %8.1f %8s %16s %9s %5s"
            % (row["scenario"], row["build"], row["sim_s"], row["total_s"], row["events"],
               row["events_per_s"], row["peak_rss_mib"], speedup, pairs, row["fct_p99_us"],
               same))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", action="append", choices=sorted(SCENARIOS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3, help="processes per figure (fastest)")
    ap.add_argument("--pure-k16", action="store_true",
                    help="also run k=16 in pure Python (slow; off by default)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--json", help="also write the rows as JSON")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.seed)))
        return 0
    names = args.scenario or list(SCENARIOS)
    print(("%-17s %-8s %8s %8s %10s %10s %8s %8s %16s %9s %5s" % COLS), flush=True)
    rows = []
    for name in names:
        with_pure = name not in K16 or args.pure_k16
        repeat = 1 if name in K16 and args.pure_k16 else args.repeat
        compiled, pure, ratios = measure(name, args.seed, repeat, with_pure)
        if compiled["build"] != "compiled":
            print("%s: the compiled build is not active (see `gse info`); build it with "
                  "`python setup.py build_ext --inplace`" % name, file=sys.stderr)
            return 1
        same = "-" if pure is None else ("yes" if pure["digest"] == compiled["digest"]
                                         else "NO")
        if pure is not None:
            print(fmt(pure, "1.0x", "", same), flush=True)
            speed = "%.1fx" % (pure["sim_s"] / compiled["sim_s"])
            pairs = "%.1f (%.1f-%.1f)" % (statistics.median(ratios), ratios[0], ratios[-1])
            compiled["speedup_best"] = round(pure["sim_s"] / compiled["sim_s"], 2)
            compiled["speedup_pairs"] = [round(r, 2) for r in ratios]
        else:
            speed, pairs = "-", ""
        print(fmt(compiled, speed, pairs, same), flush=True)
        rows.extend(r for r in (pure, compiled) if r is not None)
    if any(n in K16 for n in names) and not args.pure_k16:
        print("(k=16 in pure Python is not run by default: --pure-k16)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
