#!/usr/bin/env python3
"""The seed article's scale: 10,240-NIC fabrics in the simulation, GSE against RoCE/PFC.

    python experiments/scale_10k.py runs                       # the three runs, GSE and RoCE
    python experiments/scale_10k.py runs --protocols gse,roce,gse-fabric --plot scale.png
    python experiments/scale_10k.py runs --only allreduce      # one of allreduce, moe, perm32
    python experiments/scale_10k.py scaling                    # 128 .. 10,240 hosts, GSE
    python experiments/scale_10k.py htsim --htsim /path/to/htsim_uec --cm perm_1024n.cm

Runs (each in its own process, so that its peak RSS is its own):

* ``allreduce``: 8 MiB per rank all-reduced over all 10,240 NICs of
  ``spine-leaf-rail-10k`` the way NCCL does on rails (``gse.workloads.stream``):
  reduce-scatter across each server's 8 rails, one ring all-reduce of 1 MiB per rail
  over the 1,280 servers, all-gather across the rails.  Printed: completion, bytes
  delivered of offered, bus bandwidth (nccl-tests factor 2(N-1)/N) and the bound of an
  idle fabric (``stream.bound_busbw``: every ring step its chunk's NIC-to-NIC time).
* ``moe``: an MoE all-to-all of 64 KiB per pair inside each group of 256 consecutive
  ranks (40 groups), NCCL's pairwise rounds with ``--window`` peers in flight.
* ``perm32``: a 2 MB permutation over the 8,192 hosts of ``fat-tree-k32``.

``scaling``: a 2 MB permutation, GSE, at 128 (k=8), 1,024 (k=16), 8,192 (k=32) and
10,240 hosts (``spine-leaf-rail-10k``): wall time, peak RSS, events.

``htsim``: the k=16 permutation of a connection matrix (htsim's
``perm_1024n_1024c_0u_2000000b.cm``) run by ``gse sim`` and by an htsim binary given with
``--htsim`` (this repository neither ships nor builds htsim), alternating, ``--repeat``
times each; wall time and peak RSS side by side and their ratio.

Figures are printed (and written with ``--json``), never asserted: the machine is shared.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

MiB = 1 << 20
RUNS = ("allreduce", "moe", "perm32")
SCALING = (("fat-tree", 8), ("fat-tree", 16), ("fat-tree-k32", None),
           ("spine-leaf-rail-10k", None))


def _rss_mib():
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _leaf_state(summary):
    """Fabric mode: what the leaves held at their peak (the largest of one leaf), the
    state a leaf's memory must hold beside its packets; None for the other protocols."""
    f = summary.get("fabric")
    if not f:
        return None
    return {k: f.get(k, 0) for k in ("voq_peak_bytes", "reorder_peak_bytes",
                                     "retx_peak_bytes", "voqs_created", "voq_drops",
                                     "leaf_resends", "sent_buffers_live")}


def _cpu_s():
    """CPU seconds of this process (user + system): what the run cost, whatever else the
    shared machine was doing (its wall time is that over the share of a core it got)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return round(ru.ru_utime + ru.ru_stime, 1)


def _topo(name, k=None):
    from topologies.registry import build_topology
    return build_topology(argparse.Namespace(topology=name, k=k or 8, link_gbps=100.0,
                                             link_delay_ns=1000, switch_latency_ns=0))


def child_allreduce(protocol, args):
    from gse.workloads.collectives import bus_factor
    from gse.workloads.stream import StreamRun, bound_busbw, hierarchical_all_reduce
    t0 = time.perf_counter()
    topo = _topo("spine-leaf-rail-10k")
    size = args.size_mib * MiB
    servers = len(topo.hosts) // 8
    phases = hierarchical_all_reduce(servers, 8, size)
    bound_ps, bound_bus = bound_busbw(topo, phases, size, len(topo.hosts), 4096)
    r = StreamRun(topo, phases, protocol, seed=args.seed).run()
    s = r.summary
    t = s["collective_time_us"]
    bus = size * 8 / (t * 1e3) * bus_factor("all_reduce", len(topo.hosts)) if t else None
    return {"run": "allreduce", "protocol": protocol, "ranks": len(topo.hosts),
            "bytes_per_rank": size, "done": s["collective_done"], "time_us": t,
            "bytes_offered": s["bytes_offered"], "bytes_delivered": s["bytes_delivered"],
            "messages": s["messages"], "delivered": s["delivered"],
            "busbw_gbps": round(bus, 3) if bus else None,
            "bound_us": round(bound_ps / 1e6, 3), "bound_busbw_gbps": round(bound_bus, 3),
            "of_bound": round(bus / bound_bus, 4) if bus else None,
            "fct_us": s["fct_us"], "trims": s["trims"], "drops": s["drops"],
            "pfc_pauses": s["pfc_pauses"], "phases": r.phases, "events": s["events"],
            "loop_s": s["wall_s"], "total_s": round(time.perf_counter() - t0, 1),
            "cpu_s": _cpu_s(), "peak_rss_mib": _rss_mib(), "leaves": _leaf_state(s)}


def child_moe(protocol, args):
    from gse.workloads.stream import PairwisePhase, StreamRun
    t0 = time.perf_counter()
    topo = _topo("spine-leaf-rail-10k")
    n = len(topo.hosts)
    groups = [tuple(range(g, g + 256)) for g in range(0, n, 256)]
    phase = PairwisePhase(groups, 64 * 1024, window=args.window)
    r = StreamRun(topo, [phase], protocol, seed=args.seed).run()
    s = r.summary
    return {"run": "moe", "protocol": protocol, "ranks": n, "group": 256,
            "bytes_per_pair": 64 * 1024, "window": phase.window,
            "done": s["collective_done"], "time_us": s["collective_time_us"],
            "messages": s["messages"], "delivered": s["delivered"],
            "bytes_offered": s["bytes_offered"], "bytes_delivered": s["bytes_delivered"],
            "fct_us": s["fct_us"], "slowdown": s["slowdown"], "trims": s["trims"],
            "drops": s["drops"], "pfc_pauses": s["pfc_pauses"], "events": s["events"],
            "loop_s": s["wall_s"], "total_s": round(time.perf_counter() - t0, 1),
            "cpu_s": _cpu_s(), "peak_rss_mib": _rss_mib(), "leaves": _leaf_state(s)}


def _permutation(protocol, topo_name, k, seed):
    import random

    from gse.runtimes.sim.run import run_simulation
    from gse.workloads import traffic
    t0 = time.perf_counter()
    topo = _topo(topo_name, k)
    msgs = traffic.permutation(len(topo.hosts), 2_000_000, random.Random("%s/traffic" % seed))
    s = run_simulation(topo, msgs, protocol, seed=seed).summary
    return {"protocol": protocol, "topology": topo_name if k is None else "%s k=%d"
            % (topo_name, k), "hosts": len(topo.hosts), "messages": s["messages"],
            "delivered": s["delivered"], "fct_us": s["fct_us"], "slowdown": s["slowdown"],
            "trims": s["trims"], "drops": s["drops"], "pfc_pauses": s["pfc_pauses"],
            "events": s["events"], "loop_s": s["wall_s"],
            "total_s": round(time.perf_counter() - t0, 2), "cpu_s": _cpu_s(),
            "peak_rss_mib": _rss_mib()}


def child_perm32(protocol, args):
    out = _permutation(protocol, "fat-tree-k32", None, args.seed)
    out["run"] = "perm32"
    return out


def child_scaling(spec, args):
    name, k = spec.split(":")
    out = _permutation("gse", name, int(k) if k else None, args.seed)
    out["run"] = "scaling"
    return out


CHILDREN = {"allreduce": child_allreduce, "moe": child_moe, "perm32": child_perm32,
            "scaling": child_scaling}


def spawn(kind, what, args):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", kind, what,
           "--seed", str(args.seed), "--size-mib", str(args.size_mib),
           "--window", str(args.window or 0)]
    t0 = time.time()
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        return {"run": kind, "what": what, "error": out.stderr.strip()[-2000:],
                "wall_s": round(time.time() - t0, 1)}
    return json.loads(out.stdout.strip().splitlines()[-1])


def show(r):
    if "error" in r:
        print("%-9s %-10s FAILED: %s" % (r["run"], r.get("what"), r["error"]), flush=True)
        return
    fct = r.get("fct_us") or {}
    line = ("%-9s %-10s done %-5s msgs %s/%s  fct p50/p99/max %s/%s/%s us  events %.1f M  "
            "loop %.0f s  total %.0f s  CPU %s s  RSS %.0f MiB"
            % (r["run"], r["protocol"], r.get("done", r["delivered"] == r["messages"]),
               r["delivered"], r["messages"], fct.get("p50"), fct.get("p99"), fct.get("max"),
               r["events"] / 1e6, r["loop_s"], r["total_s"], r.get("cpu_s"),
               r["peak_rss_mib"]))
    if r["run"] == "allreduce":
        line += ("\n          time %.1f us, bytes %d of %d, busbw %s Gb/s, idle bound %.3f Gb/s "
                 "(%.1f us): %.1f%% of it" % (r["time_us"] or 0, r["bytes_delivered"],
                                              r["bytes_offered"], r["busbw_gbps"],
                                              r["bound_busbw_gbps"], r["bound_us"],
                                              100 * (r["of_bound"] or 0)))
        for ph in r["phases"]:
            line += "\n            %-28s %s us" % (ph["phase"], ph["time_us"])
    leaves = r.get("leaves")
    if leaves:
        line += ("\n          leaves (largest one): VOQ %.1f MiB, reorder %.1f MiB, "
                 "unacknowledged %.1f MiB; %d VOQs created, %d VOQ drops, %d leaf resends"
                 % (leaves["voq_peak_bytes"] / MiB, leaves["reorder_peak_bytes"] / MiB,
                    leaves["retx_peak_bytes"] / MiB, leaves["voqs_created"],
                    leaves["voq_drops"], leaves["leaf_resends"]))
    if r["run"] == "moe":
        line += "\n          completion %s us, bytes %d of %d" % (
            r["time_us"], r["bytes_delivered"], r["bytes_offered"])
    print(line, flush=True)


def plot(results, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no plot: matplotlib is not installed (pip install matplotlib)")
        return
    runs = [r for r in results if "error" not in r and r["run"] in RUNS]
    scal = [r for r in results if "error" not in r and r["run"] == "scaling"]
    panels = [k for k in RUNS if any(r["run"] == k for r in runs)] + (["scaling"] if scal else [])
    if not panels:
        return
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 3.8), squeeze=False)
    for ax, kind in zip(axes[0], panels):
        if kind == "scaling":
            xs = [r["hosts"] for r in scal]
            ax.plot(xs, [r["total_s"] for r in scal], "o-", label="wall s")
            ax.plot(xs, [r["peak_rss_mib"] for r in scal], "s-", label="peak RSS MiB")
            ax.plot(xs, [r["events"] / 1e6 for r in scal], "^-", label="events (M)")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("hosts (2 MB permutation, GSE)")
            ax.legend(fontsize=8)
            ax.set_title("scaling")
            continue
        rs = [r for r in runs if r["run"] == kind]
        names = [r["protocol"] for r in rs]
        if kind == "allreduce":
            ax.bar(names, [r["busbw_gbps"] or 0 for r in rs])
            ax.axhline(rs[0]["bound_busbw_gbps"], color="k", ls="--", label="idle-fabric bound")
            ax.set_ylabel("busbw Gb/s")
            ax.legend(fontsize=8)
            ax.set_title("all-reduce 8 MiB x 10,240 NICs")
        else:
            x = range(len(rs))
            ax.bar([i - 0.2 for i in x], [r["fct_us"]["p50"] or 0 for r in rs], 0.4, label="p50")
            ax.bar([i + 0.2 for i in x], [r["fct_us"]["p99"] or 0 for r in rs], 0.4, label="p99")
            ax.set_xticks(list(x))
            ax.set_xticklabels(names)
            ax.set_ylabel("FCT us")
            ax.legend(fontsize=8)
            ax.set_title("MoE all-to-all 64 KiB, groups of 256" if kind == "moe"
                         else "permutation 2 MB, k=32")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print("plot: %s" % path)


def htsim_side_by_side(args):
    cm = args.cm
    if not cm or not os.path.exists(cm):
        raise SystemExit("htsim: --cm FILE (htsim's perm_1024n_1024c_0u_2000000b.cm) is needed")
    out = []
    for i in range(args.repeat):
        cmd = ["/usr/bin/time", "-f", "%e %M %U", sys.executable, "-m", "gse.cli.main", "sim",
               "--k", "16", "--traffic-file", cm, "--protocol", "gse", "--quiet"]
        ours = _timed(cmd)
        theirs = None
        if args.htsim:
            log = os.path.join(os.path.dirname(os.path.abspath(args.json or "x")) or ".",
                               "htsim_k16.log")
            theirs = _timed(["/usr/bin/time", "-f", "%e %M %U", args.htsim, "-tm", cm,
                             "-o", log])
        row = {"round": i + 1, "gse_s": ours[0], "gse_rss_mib": ours[1], "gse_user_s": ours[2],
               "htsim_s": theirs and theirs[0], "htsim_rss_mib": theirs and theirs[1],
               "htsim_user_s": theirs and theirs[2]}
        if theirs:
            row["ratio"] = round(ours[0] / theirs[0], 3)
            row["user_ratio"] = round(ours[2] / theirs[2], 3)
        print("k=16 permutation 2 MB, round %d: gse sim %.2f s (user %.2f) %.0f MiB%s" % (
            i + 1, ours[0], ours[2], ours[1], "" if not theirs else
            ";  htsim %.2f s (user %.2f) %.0f MiB;  wall ratio %.3f, user ratio %.3f"
            % (theirs[0], theirs[2], theirs[1], row["ratio"], row["user_ratio"])), flush=True)
        out.append(row)
    return out


def _timed(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    last = p.stderr.strip().splitlines()[-1].split()
    return float(last[0]), round(int(last[1]) / 1024, 1), float(last[2])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", nargs="?", default="runs", choices=("runs", "scaling", "htsim"))
    ap.add_argument("--protocols", default="gse,roce")
    ap.add_argument("--only", default=",".join(RUNS), help="runs: comma-separated of %s"
                    % ", ".join(RUNS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--size-mib", type=int, default=8, help="all-reduce bytes per rank")
    ap.add_argument("--window", type=int, default=16,
                    help="moe: peers in flight per rank (0: all 255 at once)")
    ap.add_argument("--htsim", help="htsim: an htsim_uec binary to run side by side")
    ap.add_argument("--cm", default="perm_1024n_1024c_0u_2000000b.cm")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="write every figure as JSON")
    ap.add_argument("--plot", help="draw FCT / busbw per protocol and the scaling curve")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.window == 0:
        args.window = None
    if args.child:
        kind, what = args.child
        print(json.dumps(CHILDREN[kind](what, args)))
        return 0
    results = []
    if args.mode == "runs":
        for kind in args.only.split(","):
            for protocol in args.protocols.split(","):
                r = spawn(kind, protocol, args)
                show(r)
                results.append(r)
    elif args.mode == "scaling":
        for name, k in SCALING:
            r = spawn("scaling", "%s:%s" % (name, k or ""), args)
            show(r)
            results.append(r)
    else:
        results = htsim_side_by_side(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    if args.plot and args.mode != "htsim":
        plot(results, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
