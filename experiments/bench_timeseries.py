#!/usr/bin/env python3
"""What ``--sample-us`` costs: the k=8 permutation with and without sampling.

    python experiments/bench_timeseries.py                   # gse, roce, gse-fabric; 1, 10 us
    python experiments/bench_timeseries.py --protocols roce --sample-us 1 10 --repeat 5
    python experiments/bench_timeseries.py --split --sample-us 1 --repeat 9   # sampler apart

Every run is its own process; with ``--repeat N`` the unsampled and sampled runs
alternate N times and the median of each is shown (the machine is shared and noisy).
``run s`` is the event loop with the sampler (the summary's ``wall_s``), ``cpu s`` the CPU
time of ``run_simulation`` (set-up, loop, sampler and the series' assembly), ``overhead``
the sampled run's CPU over the unsampled one's (of the medians, and the median of each
round's ratio); ``table s`` the CPU time to build the whole dense table afterwards (its
columns are built when first read: ``gse.runtimes.sim.sampler.DenseColumns``), ``write s``
the time to write the time series as Parquet after that (what the command adds after
the run).  ``same`` says whether every run's per-message results equal the unsampled
run's.  ``--in-process`` runs every round of a protocol in one process instead (the
same memory layout for all: steadier ratios; CPU of ``run_simulation`` only).  ``--split``
runs every round in one process too, on the bare event loop (``run_observed``), and also
times the sampler's own calls (CPU time of its ``at_stop``, read with ``time.thread_time``
around each): on a shared machine the run's total moves by more than the sampler costs,
its own time much less.  ``--order abba`` (the default of both) runs the unsampled run
first in the even rounds and last in the odd ones and prints the rounds' ratios of each
half too (a sampled run right after another one reuses the memory its rows were freed
from: docs/scale.md, "the benchmark's order"); ``--order ab`` puts it first in every
round, as before.  ``--root DIR`` measures the tree at DIR (another checkout) with this
script.
Figures are printed, never asserted.  Run it under ``flock /tmp/gse-bench.lock`` on a
shared machine.
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
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def child(root, protocol, sample_us, k, size, seed):
    t0 = time.perf_counter()
    sys.path.insert(0, root)
    from gse import _build
    from gse.config import PS_PER_US
    from gse.protocols import default_config
    from gse.runtimes.sim.run import run_simulation
    from gse.workloads import traffic
    from topologies import fat_tree
    topo = fat_tree(k)
    msgs = traffic.permutation(len(topo.hosts), size, random.Random("%s/traffic" % seed))
    c0 = time.process_time()
    res = run_simulation(topo, msgs, protocol, default_config(protocol), seed,
                         sample_ps=int(round(sample_us * PS_PER_US)))
    cpu_s = time.process_time() - c0
    write_s = table_s = 0.0
    bins = 0
    if res.timeseries is not None:
        ts = res.timeseries
        t1 = time.process_time()
        for values in (ts.port_values, ts.host_values):
            for name in values:
                values[name]
        table_s = time.process_time() - t1
        with tempfile.TemporaryDirectory() as d:
            w0 = time.perf_counter()
            res.timeseries.write(d, "parquet")
            write_s = time.perf_counter() - w0
        bins = res.timeseries.nbins
    digest = hashlib.sha256(repr(res.per_message()).encode()).hexdigest()[:12]
    print(json.dumps({"run_s": res.summary["wall_s"], "cpu_s": cpu_s, "table_s": table_s,
                      "write_s": write_s, "bins": bins,
                      "events": res.summary["events"], "build": _build.build(),
                      "sim_us": res.summary["sim_time_us"], "digest": digest,
                      "total_s": time.perf_counter() - t0}))


def orders(samples, rounds, order):
    """The runs of each round, in turn: the unsampled one first in every round (``ab``),
    or first in the even rounds and last in the odd ones (``abba``: a run that follows
    its own kind as often as the other, so that what one run leaves behind, in the heap
    or the caches, weighs on both alike)."""
    first = [0.0] + samples
    return [first if order == "ab" or r % 2 == 0 else first[::-1] for r in range(rounds)]


def by_order(ratios, rounds, order):
    """The median ratio of every round, then (``abba``) of the rounds with the unsampled
    run first and of those with it last, as text."""
    text = "rounds %+.1f%%" % (100 * (statistics.median(ratios) - 1))
    if order == "abba" and rounds > 1:
        text += " (unsampled first %+.1f%%, last %+.1f%%)" % (
            100 * (statistics.median(ratios[0::2]) - 1),
            100 * (statistics.median(ratios[1::2]) - 1))
    return text


def in_process(root, protocol, samples, k, size, seed, rounds, order):
    """One process, ``rounds`` rounds of the unsampled run and every sampled one in turn
    (the same memory layout for all: steadier ratios than across processes)."""
    sys.path.insert(0, root)
    from gse.config import PS_PER_US
    from gse.protocols import default_config
    from gse.runtimes.sim.run import run_simulation
    from gse.workloads import traffic
    from topologies import fat_tree
    topo = fat_tree(k)
    msgs = traffic.permutation(len(topo.hosts), size, random.Random("%s/traffic" % seed))
    cpu = {us: [] for us in [0.0] + samples}
    after = {}                        # (run, the run before it): [(cpu, fresh-page faults)]
    before = None
    for turn in orders(samples, rounds, order):
        for us in turn:
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            c0 = time.process_time()
            run_simulation(topo, msgs, protocol, default_config(protocol), seed,
                           sample_ps=int(round(us * PS_PER_US)))
            cpu[us].append(time.process_time() - c0)
            after.setdefault((us, before), []).append(
                (cpu[us][-1], resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0))
            before = us
    base = cpu[0.0]
    for us in samples:
        ratios = [s / b for s, b in zip(cpu[us], base)]
        print("%-11s %7g  cpu %.3f s against %.3f s unsampled: %+.1f%% [%s]" % (
            protocol, us, statistics.median(cpu[us]), statistics.median(base),
            100 * (statistics.median(cpu[us]) / statistics.median(base) - 1),
            by_order(ratios, rounds, order)))
    print("%-11s by the run before (median cpu s, page faults; the process's first run "
          "apart): %s" % (protocol, ", ".join(
              "%s after %s %.4f %d" % (
                  "%g" % us if us else "unsampled",
                  "-" if b is None else "%g" % b if b else "unsampled",
                  statistics.median(c for c, _ in v), statistics.median(f for _, f in v))
              for (us, b), v in sorted(after.items(), key=lambda kv: (kv[0][0],
                                                                      kv[0][1] or 0)))))


class Timed:
    """The sampler with the CPU time of its calls added up (``--split``)."""

    def __init__(self, sampler):
        self.sampler = sampler
        self.cpu = 0.0
        self.next_stop = sampler.next_stop

    def at_stop(self, now):
        t0 = time.thread_time()
        self.sampler.at_stop(now)
        self.cpu += time.thread_time() - t0
        self.next_stop = self.sampler.next_stop

    def close(self, now):
        t0 = time.thread_time()
        self.sampler.close(now)
        self.cpu += time.thread_time() - t0


def split(root, protocol, samples, k, size, seed, rounds, order):
    """``rounds`` rounds of the bare loop, unsampled and sampled in turn, in one process:
    the total's overhead, the sampler's own CPU and the rest."""
    sys.path.insert(0, root)
    from gse.config import PS_PER_US
    from gse.protocols import default_config
    from gse.runtimes.sim.observe import run_observed
    from gse.runtimes.sim.run import build_network
    from gse.runtimes.sim.sampler import Sampler
    from gse.workloads import traffic
    from topologies import fat_tree
    topo = fat_tree(k)
    msgs = traffic.permutation(len(topo.hosts), size, random.Random("%s/traffic" % seed))
    runs = {us: [] for us in [0.0] + samples}
    for turn in orders(samples, rounds, order):
        for us in turn:
            net = build_network(topo, protocol, default_config(protocol), seed)
            net.schedule(msgs)
            obs = [Timed(Sampler(net, int(round(us * PS_PER_US))))] if us else []
            c0 = time.process_time()
            run_observed(net, -1, obs)
            runs[us].append((time.process_time() - c0, obs[0].cpu if obs else 0.0,
                             len(obs[0].sampler.edges) - 1 if obs else 0))
    base = statistics.median(r[0] for r in runs[0.0])
    for us in samples:
        cpu = statistics.median(r[0] for r in runs[us])
        own = statistics.median(r[1] for r in runs[us])
        ratios = [r[0] / b[0] for r, b in zip(runs[us], runs[0.0])]
        print("%-11s %7g  loop %.3f s against %.3f s: %+.1f%% [%s]; the sampler's "
              "own %.1f ms (%.1f%% of the unsampled loop), %.2f us per bin" % (
                  protocol, us, cpu, base, 100 * (cpu / base - 1),
                  by_order(ratios, rounds, order),
                  1000 * own, 100 * own / base, 1e6 * own / max(1, runs[us][0][2])))


def spawn(protocol, sample_us, args):
    out = subprocess.run([sys.executable, __file__, "--child", args.root, protocol,
                          str(sample_us), str(args.k), str(args.size), str(args.seed)],
                         capture_output=True, text=True, check=True, cwd=args.root)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--protocols", default="gse,roce,gse-fabric")
    ap.add_argument("--sample-us", type=float, nargs="+", default=[1.0, 10.0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--size", type=int, default=2_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--root", default=ROOT, help="the tree to measure (default: this one)")
    ap.add_argument("--in-process", action="store_true",
                    help="all rounds in one process per protocol (CPU of run_simulation)")
    ap.add_argument("--split", action="store_true",
                    help="all rounds in one process, the sampler's own CPU time apart")
    ap.add_argument("--order", choices=("abba", "ab"), default="abba",
                    help="--in-process and --split: the unsampled run first in every "
                    "other round (abba, the default) or in every round (ab)")
    ap.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    ap.add_argument("--in-process-child", nargs=9, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.in_process_child:
        root, p, us, k, size, seed, rounds, how, order = args.in_process_child
        (split if how == "split" else in_process)(
            root, p, [float(x) for x in us.split(",")], int(k), int(size), int(seed),
            int(rounds), order)
        return 0
    if args.child:
        root, p, s, k, size, seed = args.child
        child(root, p, float(s), int(k), int(size), int(seed))
        return 0
    args.root = os.path.abspath(args.root)
    if args.in_process or args.split:
        print("%s: k=%d permutation of %d-byte messages, %d rounds in one process per "
              "protocol, order %s" % (args.root, args.k, args.size, args.repeat, args.order))
        for protocol in args.protocols.split(","):
            subprocess.run([sys.executable, __file__, "--in-process-child", args.root,
                            protocol, ",".join(map(str, args.sample_us)), str(args.k),
                            str(args.size), str(args.seed), str(args.repeat),
                            "split" if args.split else "total", args.order],
                           check=True, cwd=args.root)
        return 0
    print("%s: k=%d permutation of %d-byte messages, %d rounds; each round runs the "
          "unsampled and every sampled process in turn"
          % (args.root, args.k, args.size, args.repeat))
    print("cpu s: CPU time of run_simulation (with the sampler and its result()), median; "
          "overhead: median cpu s over the unsampled one's, and [median of the rounds' "
          "ratios]")
    print("%-11s %7s %7s %8s %8s %9s %9s %8s %8s %5s %9s" % (
        "protocol", "sample", "bins", "run s", "cpu s", "overhead", "[rounds]", "table s",
        "write s", "same", "build"))
    totals = {}
    for protocol in args.protocols.split(","):
        runs = {us: [] for us in [0.0] + args.sample_us}
        for _ in range(args.repeat):
            for us in runs:
                runs[us].append(spawn(protocol, us, args))
        base = runs[0.0]
        bcpu = statistics.median(r["cpu_s"] for r in base)
        print("%-11s %7s %7s %8.3f %8.3f %9s %9s %8s %8s %5s %9s" % (
            protocol, "-", "-", statistics.median(r["run_s"] for r in base), bcpu, "", "",
            "-", "-", "", base[0]["build"]))
        for us in args.sample_us:
            samp = runs[us]
            scpu = statistics.median(r["cpu_s"] for r in samp)
            paired = statistics.median(s["cpu_s"] / b["cpu_s"] for s, b in zip(samp, base))
            totals.setdefault(us, [0.0, 0.0])
            totals[us][0] += bcpu
            totals[us][1] += scpu
            same = all(r["digest"] == base[0]["digest"] for r in samp + base)
            print("%-11s %7g %7d %8.3f %8.3f %+8.1f%% %+8.1f%% %8.3f %8.3f %5s %9s" % (
                protocol, us, samp[0]["bins"], statistics.median(r["run_s"] for r in samp),
                scpu, 100 * (scpu / bcpu - 1), 100 * (paired - 1),
                statistics.median(r["table_s"] for r in samp),
                statistics.median(r["write_s"] for r in samp), "yes" if same else "NO",
                samp[0]["build"]))
    for us, (b, s) in totals.items():
        print("all protocols, sampled every %g us: cpu %.3f s -> %.3f s (%+.1f%%)"
              % (us, b, s, 100 * (s / b - 1)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
