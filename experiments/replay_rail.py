"""64 GPUs (8 servers x 8 NICs) on the seed's rail-optimised Spine-Leaf: replay a
data-parallel step and an MoE all-to-all, GSE against RoCEv2 + PFC.

    python experiments/replay_rail.py                      # about a minute a seed, pure Python
    python experiments/replay_rail.py --quick              # smaller buffers, seconds
    python experiments/replay_rail.py --seeds 1 2 3 --plot out.png --json out.json

Workloads (rank r is GPU r % 8 of server r // 8, i.e. NIC host ``s<r//8>n<r%8>``):

* ``dp-step``: ``traces/dp_step_64r`` (read from its Chakra files): four gradient
  buckets (4, 4, 4, 2 MiB) all-reduced over one 64-rank ring in rank order, each when
  the backward pass has produced it and after the previous bucket (one NCCL stream).
  Consecutive ranks sit on different rails, so every ring hop crosses a Spine.
* ``dp-step-rail``: the same buckets reduced the rail-aligned way (what NCCL does when
  NVLink joins a server's GPUs): the intra-server part is free here, and each bucket is
  one ring per rail over the 8 GPUs of that rail, S/8 each, so traffic never leaves the
  rail's Leaf.
* ``moe``: two MoE layers over all 64 ranks, each a dispatch and a combine all-to-all of
  2 MiB per rank (32 KiB to every peer) with expert compute between.

Prints per-collective completion times and the completion time of each workload per
protocol; draws grouped bars when matplotlib is installed (``pip install matplotlib``),
and says so when it is not.
"""

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from gse.protocols import PROTOCOLS  # noqa: E402
from gse.workloads.collectives import Collective  # noqa: E402
from gse.workloads.replay import replay  # noqa: E402
from gse.workloads.traces import load_trace  # noqa: E402
from gse.workloads.traces.samples import MiB, dp_step_trace, moe_trace  # noqa: E402
from topologies.spineleaf import spine_leaf_rail  # noqa: E402

SERVERS, NICS = 8, 8


def rail_aligned(step):
    """The buckets of a DP step as one ring per rail (S / nics each), per-rail ordering."""
    out = []
    for c in step:
        for n in range(NICS):
            after = [(d_id - 1) * NICS + n + 1 for d_id, _ in c.after]
            out.append(Collective(len(out) + 1, "all_reduce", range(n, SERVERS * NICS, NICS),
                                  c.size // NICS, after=[(a, 0) for a in after],
                                  start_ps=c.start_ps, dtype=c.dtype,
                                  tag="%s.rail%d" % (c.tag, n)))
    return out


def workloads(quick):
    if quick:
        step = dp_step_trace(64, buckets=(MiB, MiB, MiB // 2))
        moe = moe_trace(64, size=MiB // 2, layers=1)
    else:
        step = load_trace(os.path.join(ROOT, "traces", "chakra", "dp_step_64r")).collectives
        moe = moe_trace(64, size=2 * MiB, layers=2)
    return {"dp-step": step, "dp-step-rail": rail_aligned(step), "moe": moe}


def bucket_times(result, colls):
    """Per original collective: time from the first rank entering to the last delivery,
    merging the per-rail pieces of a rail-aligned bucket by tag prefix."""
    groups = {}
    for r in result.collectives:
        key = (r.coll.tag or str(r.coll.id)).split(".rail")[0]
        lo, hi = groups.get(key, (None, None))
        lo = r.start_ps if lo is None else min(lo, r.start_ps)
        hi = r.end_ps if hi is None else max(hi, r.end_ps)
        groups[key] = (lo, hi)
    return {k: round((hi - lo) / 1e6, 1) for k, (lo, hi) in groups.items()}


def run_study(seeds, protocols, quick=False, only=None, log=print):
    """(topology, {workload: {protocol: [one row per seed]}}): every replay of the study
    (also what experiments/doc_figures.py quotes)."""
    topo = spine_leaf_rail(servers=SERVERS, nics_per_server=NICS)
    log("fabric: %s, %d NICs, 100 Gb/s links, 1 us per link" % (topo.name, len(topo.hosts)))
    results = {}
    for name, colls in workloads(quick).items():
        if only and name not in only:
            continue
        for seed in seeds:
            for proto in protocols:
                t0 = time.perf_counter()
                r = replay(topo, colls, proto, seed=seed)
                wall = time.perf_counter() - t0
                s = r.summary
                results.setdefault(name, {}).setdefault(proto, []).append({
                    "seed": seed, "total_us": s["replay_time_us"], "wall_s": round(wall, 1),
                    "collectives": bucket_times(r, colls), "lost": s["lost"],
                    "done": s["collectives_done"] == s["collectives_total"],
                    "retransmits": s["retransmits"], "trims": s["trims"], "drops": s["drops"],
                    "pfc_pauses": s.get("pfc_pauses"), "paused_us": s.get("paused_time_us"),
                    "peak_queue_bytes": s["peak_queue_bytes"]["max"]})
                log("  %-13s %-5s seed %d: %8.1f us  (%.0f s wall)"
                    % (name, proto, seed, s["replay_time_us"], wall))
    return topo, results


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[1])
    p.add_argument("--protocols", default=",".join(PROTOCOLS))
    p.add_argument("--quick", action="store_true", help="smaller buffers (a smoke run)")
    p.add_argument("--only", choices=("dp-step", "dp-step-rail", "moe"), action="append")
    p.add_argument("--json", default=os.path.join(ROOT, "results", "replay_rail.json"))
    p.add_argument("--plot", default=os.path.join(ROOT, "results", "replay_rail.png"))
    args = p.parse_args(argv)
    protocols = [x for x in args.protocols.split(",") if x]
    if "roce" not in PROTOCOLS:
        print("note: the RoCE/PFC baseline is not available yet; running GSE only")
    topo, results = run_study(args.seeds, protocols, args.quick, args.only,
                              lambda line: print(line, flush=True))
    print()
    print(table(results))
    os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"topology": topo.summary(), "results": results}, f, indent=2)
    print("\nresults written to %s" % args.json)
    plot(results, args.plot)
    return 0 if all(run["done"] and run["lost"] == 0 for w in results.values()
                    for runs in w.values() for run in runs) else 1


def table(results):
    lines = []
    for name, by_proto in results.items():
        protos = list(by_proto)
        keys = list(by_proto[protos[0]][0]["collectives"])
        lines.append("%s (completion us, mean over seeds)" % name)
        lines.append("  %-16s" % "collective" + "".join("%12s" % p for p in protos)
                     + ("%10s" % ("%s/%s" % (protos[-1], protos[0])) if len(protos) > 1 else ""))
        rows = [(k, [_mean([run["collectives"][k] for run in by_proto[p]]) for p in protos])
                for k in keys]
        rows.append(("whole workload", [_mean([run["total_us"] for run in by_proto[p]])
                                        for p in protos]))
        for k, vals in rows:
            lines.append("  %-16s" % k + "".join("%12.1f" % v for v in vals)
                         + ("%10.2f" % (vals[-1] / vals[0]) if len(vals) > 1 else ""))
        for p in protos:
            runs = by_proto[p]
            lines.append("  %-5s lost %d, retransmits %d, trims %d, PFC pauses %s, peak queue %d B"
                         % (p, sum(r["lost"] for r in runs), sum(r["retransmits"] for r in runs),
                            sum(r["trims"] for r in runs),
                            sum(r["pfc_pauses"] or 0 for r in runs),
                            max(r["peak_queue_bytes"] for r in runs)))
        lines.append("")
    return "\n".join(lines)


def _mean(xs):
    return sum(xs) / len(xs)


def plot(results, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed, so no plot was drawn: pip install matplotlib "
              "(or pip install -e '.[plot]')")
        return
    names = list(results)
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 4.0), squeeze=False)
    for ax, name in zip(axes[0], names):
        by_proto = results[name]
        protos = list(by_proto)
        keys = list(by_proto[protos[0]][0]["collectives"]) + ["total"]
        width = 0.8 / len(protos)
        for i, proto in enumerate(protos):
            runs = by_proto[proto]
            ys = [_mean([r["collectives"][k] for r in runs]) for k in keys[:-1]]
            ys.append(_mean([r["total_us"] for r in runs]))
            xs = [j + (i - (len(protos) - 1) / 2) * width for j in range(len(keys))]
            ax.bar(xs, ys, width, label=proto)
        ax.set_xticks(range(len(keys)))
        ax.set_xticklabels(keys, rotation=30, ha="right", fontsize=8)
        ax.set_title(name)
        ax.set_ylabel("completion time (us)")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend()
    fig.suptitle("64 GPUs, rail-optimised Spine-Leaf (8 servers x 8 NICs, 100 Gb/s)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print("plot written to %s" % path)


if __name__ == "__main__":
    sys.exit(main())
