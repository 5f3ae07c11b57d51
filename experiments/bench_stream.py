#!/usr/bin/env python3
"""The CPU cost per message of the collectives' stream driver, on a scaled-down 10k run.

    python experiments/bench_stream.py                          # this tree, 3 rounds
    python experiments/bench_stream.py --root /work/main --repeat 5   # before/after, alternating
    python experiments/bench_stream.py --servers 128 --groups 2 --runs allreduce --pure

The 10,240-NIC runs of ``experiments/scale_10k.py`` take half an hour of CPU each; what
makes them slow is the work per message (26 M messages in the all-reduce).  This runs
the same two workloads on a smaller ``spine-leaf-rail`` fabric (``--servers`` x 8 NICs
in ``--groups`` groups, 100 Gb/s, 1 us links), sized so that a message looks like the
10k run's:

* ``allreduce``: ``stream.hierarchical_all_reduce`` of ``--size-kib`` per rank (default
  8 MiB x servers / 1,280, so that the rail ring's chunk is the 10k run's 819 bytes, one
  packet; the cross-rail chunks are smaller than the 10k run's 1 MiB);
* ``moe``: a ``PairwisePhase`` of 64 KiB per pair in groups of ``--moe-group``
  consecutive ranks, ``--window`` peers in flight (the 10k run: groups of 256, window 16).

Every measurement is its own process; it prints the CPU seconds of ``StreamRun(...)``
plus ``run()`` (set-up and event loop, not the topology), the events, the messages, and
CPU us per message and per event.  With ``--root DIR`` (another checkout, e.g. main with
its compiled build) the two trees alternate, ``--repeat`` rounds, and the medians and
the ratio are printed; both must give the same events and collective time (checked,
printed).  ``--pure`` runs the pure-Python build (``GSE_PURE_PYTHON=1``).  Figures are
printed (``--json`` writes them), never asserted: the machine is shared.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RAIL_CHUNK_10K = 8 * 1024 * 1024 // 8 // 1280      # 819 bytes


def child(root, run, args):
    sys.path.insert(0, root)
    from gse import _build
    from gse.workloads.stream import (PairwisePhase, StreamRun, hierarchical_all_reduce)
    from topologies.spineleaf import spine_leaf_rail
    topo = spine_leaf_rail(servers=args.servers, nics_per_server=8, groups=args.groups)
    n = len(topo.hosts)
    if run == "allreduce":
        size = args.size_kib * 1024 if args.size_kib else RAIL_CHUNK_10K * 8 * args.servers
        phases = hierarchical_all_reduce(args.servers, 8, size)
    else:
        g = args.moe_group
        if n % g:
            raise SystemExit("moe: %d NICs do not split into groups of %d" % (n, g))
        size = 64 * 1024
        phases = [PairwisePhase([tuple(range(s, s + g)) for s in range(0, n, g)], size,
                                window=args.window or None)]
    c0 = time.process_time()
    run_ = StreamRun(topo, phases, "gse", seed=args.seed)
    c1 = time.process_time()
    r = run_.run()
    cpu = time.process_time() - c0
    s = r.summary
    return {"run": run, "root": root, "build": _build.build(), "hosts": n,
            "bytes_per_rank": size, "cpu_s": round(cpu, 3),
            "setup_s": round(c1 - c0, 3), "events": s["events"],
            "messages": s["messages"], "delivered": s["delivered"],
            "time_us": s["collective_time_us"],
            "us_per_msg": round(cpu * 1e6 / s["messages"], 3),
            "us_per_event": round(cpu * 1e6 / s["events"], 4),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def spawn(root, run, args):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", root, run,
           "--servers", str(args.servers), "--groups", str(args.groups),
           "--size-kib", str(args.size_kib or 0), "--moe-group", str(args.moe_group),
           "--window", str(args.window), "--seed", str(args.seed)]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    if args.pure:
        env["GSE_PURE_PYTHON"] = "1"
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=root)
    if p.returncode:
        raise SystemExit("%s %s failed:\n%s" % (root, run, p.stderr[-3000:]))
    return json.loads(p.stdout.strip().splitlines()[-1])


def commit_of(root):
    p = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                       capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return p.stdout.strip() + ("+dirty" if dirty else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default="allreduce,moe", help="comma-separated: allreduce, moe")
    ap.add_argument("--servers", type=int, default=64, help="servers of 8 NICs (default 64)")
    ap.add_argument("--groups", type=int, default=1, help="spine-leaf-rail groups")
    ap.add_argument("--size-kib", type=int, default=0,
                    help="all-reduce KiB per rank (0: the 10k run's rail chunk, 819 B)")
    ap.add_argument("--moe-group", type=int, default=64, help="moe: ranks per group")
    ap.add_argument("--window", type=int, default=16, help="moe: peers in flight (0: all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--root", help="another tree to alternate with (the 'before')")
    ap.add_argument("--pure", action="store_true", help="the pure-Python build")
    ap.add_argument("--json", help="write every measurement as JSON")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args)))
        return 0
    roots = [os.path.abspath(args.root)] if args.root else []
    roots.append(ROOT)
    for root in roots:
        print("tree %s at %s" % (root, commit_of(root)))
    print("load average %s, %d cores" % (" ".join("%.2f" % x for x in os.getloadavg()),
                                         os.cpu_count()), flush=True)
    out = []
    for run in args.runs.split(","):
        if run not in ("allreduce", "moe"):
            raise SystemExit("--runs: unknown run %r (allreduce, moe)" % run)
        by_root = {root: [] for root in roots}
        for i in range(args.repeat):
            for root in roots:
                r = spawn(root, run, args)
                by_root[root].append(r)
                out.append(r)
                print("  %-9s round %d %-30s %-8s CPU %7.2f s (set-up %.2f)  events %9d  "
                      "msgs %7d  %7.2f us/msg  %.4f us/event  time %s us  peak RSS %.1f MiB"
                      % (run, i + 1, root[-30:], r["build"], r["cpu_s"], r["setup_s"],
                         r["events"],
                         r["messages"], r["us_per_msg"], r["us_per_event"], r["time_us"],
                         r["peak_rss_mib"]),
                      flush=True)
        meds = {}
        for root, rs in by_root.items():
            meds[root] = statistics.median(r["cpu_s"] for r in rs)
            r = rs[0]
            print("%-9s %-40s median CPU %.2f s: %.2f us/msg, %.4f us/event (%d msgs, "
                  "%d events)" % (run, root[-40:], meds[root], meds[root] * 1e6
                                  / r["messages"], meds[root] * 1e6 / r["events"],
                                  r["messages"], r["events"]))
        if len(roots) == 2:
            a, b = (by_root[root][0] for root in roots)
            same = a["events"] == b["events"] and a["time_us"] == b["time_us"]
            pairs = sorted(b_["cpu_s"] / a_["cpu_s"]
                           for a_, b_ in zip(by_root[roots[0]], by_root[roots[1]]))
            print("%-9s after/before CPU %.3f, per round median %.3f (%.3f-%.3f)  (same "
                  "events and time: %s)" % (run, meds[roots[1]] / meds[roots[0]],
                                            statistics.median(pairs), pairs[0], pairs[-1],
                                            same))
    print("load average %s" % " ".join("%.2f" % x for x in os.getloadavg()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
