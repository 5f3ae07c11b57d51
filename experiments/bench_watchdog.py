#!/usr/bin/env python3
"""What the no-progress watchdog costs a simulation: runs with it off, at its default span
and looking often, alternated.

    python experiments/bench_watchdog.py                       # k=8 permutation, 2 MB
    python experiments/bench_watchdog.py --size 40000000 --repeat 5
    python experiments/bench_watchdog.py --root /tmp/base      # and another tree's build

The watchdog (``gse.runtimes.sim.observe.Watchdog``) adds no work per event: it stops the
event queue every quarter span of virtual time and reads every agent's progress.  At its
default span (6.4 ms for GSE) a 2 MB permutation (190 us) ends before its first look;
``often`` looks every ``--often-us`` of virtual time to show what the looks cost.  With
``--root DIR`` the same run with another tree's build (a copy of the code before the
watchdog, say) is alternated with these.  Every run is its own process; the fastest of
``--repeat`` is shown (``run s``: the event loop's wall time; ``cpu s``: the process's CPU
time over the whole ``run_simulation``, network building included, less disturbed by a
busy machine), ``same`` says whether the per-message results equal the run
without the watchdog.  Figures are printed, never asserted: run it under
``flock /tmp/gse-bench.lock`` on a shared machine.
"""

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def child(root, protocol, stall_us, k, size, seed):
    t0 = time.perf_counter()
    sys.path.insert(0, root)
    from gse import _build
    from gse.protocols import default_config
    from gse.runtimes.sim.run import run_simulation
    from gse.workloads import traffic
    from topologies import fat_tree
    topo = fat_tree(k)
    msgs = traffic.permutation(len(topo.hosts), size, random.Random("%s/traffic" % seed))
    kw = {}
    if stall_us != "none":                 # "none": a tree without the watchdog's option
        kw["stall_ps"] = None if stall_us == "default" else int(float(stall_us) * 1e6)
    cpu0 = time.process_time()
    res = run_simulation(topo, msgs, protocol, default_config(protocol), seed, **kw)
    cpu = time.process_time() - cpu0
    digest = hashlib.sha256(repr(res.per_message()).encode()).hexdigest()[:12]
    print(json.dumps({"run_s": res.summary["wall_s"], "cpu_s": cpu,
                      "events": res.summary["events"],
                      "build": _build.build(), "sim_us": res.summary["sim_time_us"],
                      "digest": digest, "end": res.summary.get("end"),
                      "total_s": time.perf_counter() - t0}))


def spawn(root, protocol, stall, args):
    out = subprocess.run([sys.executable, __file__, "--child", root, protocol, stall,
                          str(args.k), str(args.size), str(args.seed)],
                         capture_output=True, text=True, check=True, cwd=root)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--protocols", default="gse")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--size", type=int, default=2_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--often-us", type=float, default=4.0,
                    help="the span of the 'often' runs (a look every quarter of it)")
    ap.add_argument("--root", help="also run this tree's build (no watchdog option)")
    ap.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        root, p, stall, k, size, seed = args.child
        child(root, p, stall, int(k), int(size), int(seed))
        return 0
    variants = [("off", ROOT, "0"), ("default", ROOT, "default"),
                ("often", ROOT, repr(args.often_us))]
    if args.root:
        variants.insert(0, ("other tree", os.path.abspath(args.root), "none"))
    print("k=%d permutation of %d-byte messages, fastest of %d alternating processes; "
          "'often': a look every %g us of virtual time"
          % (args.k, args.size, args.repeat, args.often_us / 4))
    print("%-11s %-11s %8s %9s %8s %9s %10s %9s %5s %9s" % (
        "protocol", "watchdog", "run s", "vs off", "cpu s", "vs off", "events", "sim us",
        "same", "build"))
    for protocol in args.protocols.split(","):
        runs = {name: [] for name, _, _ in variants}
        for _ in range(args.repeat):
            for name, root, stall in variants:
                runs[name].append(spawn(root, protocol, stall, args))
        best = {name: min(rs, key=lambda r: r["run_s"]) for name, rs in runs.items()}
        cpu = {name: min(r["cpu_s"] for r in rs) for name, rs in runs.items()}
        off = best["off"]
        for name, _, _ in variants:
            b = best[name]
            print("%-11s %-11s %8.3f %+8.1f%% %8.3f %+8.1f%% %10d %9.1f %5s %9s" % (
                protocol, name, b["run_s"], 100 * (b["run_s"] / off["run_s"] - 1),
                cpu[name], 100 * (cpu[name] / cpu["off"] - 1), b["events"], b["sim_us"],
                "yes" if b["digest"] == off["digest"] else "NO", b["build"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
