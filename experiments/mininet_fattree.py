#!/usr/bin/env python3
"""GSE and RoCEv2 + PFC on the same Mininet Fat-Tree, beside the simulation (issue 5).

    sudo python3 experiments/mininet_fattree.py                    # k=4, 0.005 Gb/s, 3 workloads
    sudo python3 experiments/mininet_fattree.py --workload incast --senders 8 --link-gbps 0.02
    sudo python3 experiments/mininet_fattree.py --workload permutation --size 200000 \\
        --json mn.json --out-dir results/mininet        # every summary, record and agent file

Every node of the topology (hosts and switches) is a ``gse agent`` process in its own
Mininet namespace, one veth and one /31 per link (``gse.runtimes.mininet.run``,
``gse.runtimes.mininet.fabric``); links are emulated inside the agents at ``--link-gbps``.
For each workload (permutation, incast, all-to-all) and protocol (``gse``, ``roce`` with
PFC) the same messages run in Mininet and, unless ``--no-sim``, in the simulator with the
same configuration (the real-time protocol timers of ``gse.runtimes.udp.config.udp_profile``), so
the two columns of a protocol are the same workload at the same scale.  The default rate,
0.005 Gb/s, is one a two-core machine emulates faithfully for all three workloads (incasts
alone: up to 0.02 Gb/s; docs/mininet.md has the figures and ``--sweep-gbps`` measures it).

Printed per workload: the side-by-side table of ``gse compare`` (messages, lost, FCT
p50/p99/max, slowdown, goodput, drops, trims, retransmits, ECN marks, peak queue, PFC
pauses) plus the Mininet run's own figures (set-up, agents up, traffic, tear-down, kernel
drops, timer lateness, anything left behind).  ``--json`` writes every run's summary (the
schema of ``gse sim``); ``--out-dir`` also one ``<workload>-<protocol>-<runtime>.json``
summary and ``.csv`` record file per run and every agent's files.  A progress line runs
on stderr.  Needs root and Mininet (``scripts/setup-mininet.sh``); ``--no-mininet`` runs
the simulation columns only.  Figures are printed, never asserted
(tests/test_mininet_fattree.py checks correctness).  ``--forwarding kernel`` runs no
switch agent: the switch namespaces route in the kernel (GSE only; every summary and
table says what that mode does not model: docs/mininet.md, "Kernel forwarding").
"""

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from gse.cli.common import gse_config_from_args, traffic_from_args  # noqa: E402
from gse.cli.run import explicit_settings  # noqa: E402
from gse.metrics.report import format_side_by_side, write_records  # noqa: E402
from gse.runtimes.sim.run import run_simulation  # noqa: E402
from gse.runtimes.udp.config import udp_profile  # noqa: E402
from topologies.registry import add_topology_options, build_topology, describe_topology_args  # noqa: E402

WORKLOADS = ("permutation", "incast", "all-to-all")
PROTOCOLS = ("gse", "roce", "gse-fabric")
FAITHFUL = 1.10        # last FCT within 10% of the simulation's


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    add_topology_options(p)
    p.set_defaults(k=4, link_gbps=0.005)
    g = p.add_argument_group("workload")
    g.add_argument("--workload", action="append", choices=WORKLOADS,
                   help="repeatable (default: all three)")
    g.add_argument("--size", type=int, default=100_000,
                   help="message bytes (all-to-all: to each other host; default 100000)")
    g.add_argument("--a2a-size", type=int, default=None,
                   help="all-to-all message bytes (default: --size / 4)")
    g.add_argument("--senders", type=int, default=8, help="incast senders (default 8)")
    g.add_argument("--receiver", type=int, default=0, help="incast receiver host (default 0)")
    g.add_argument("--seed", type=int, default=1)
    g = p.add_argument_group("protocols")
    g.add_argument("--protocol", action="append", choices=PROTOCOLS, dest="protocols",
                   help="repeatable (default: gse, roce and gse-fabric)")
    g.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="protocol parameter, as gse sim (gse.NAME / roce.NAME for one)")
    g.add_argument("--unsched", type=int, default=None, help="GSE unscheduled window bytes")
    g.add_argument("--policy", choices=("rr", "srpt", "fifo"), default=None)
    g = p.add_argument_group("runs")
    g.add_argument("--timeout-s", type=float, default=120.0,
                   help="wall-clock bound of each Mininet run's traffic (default 120)")
    g.add_argument("--start-budget-s", type=float, default=None,
                   help="seconds from launching the agents to time 0 (default: by size)")
    g.add_argument("--loop", choices=("auto", "asyncio", "uvloop"), default="auto")
    g.add_argument("--placement", choices=("node", "tier", "switches", "all"), default="node",
                   help="agent processes: one per node (default), per switch tier, one for "
                        "all switches, one for everything (gse.runtimes.mininet.run)")
    g.add_argument("--precise-timers", action="store_true",
                   help="agents wake for timers to the microsecond (timerfd)")
    g.add_argument("--forwarding", choices=("agents", "kernel"), default="agents",
                   help="agents: a switch agent per switch (default); kernel: the switch "
                        "namespaces route in the kernel (GSE only; no PFC, ECN, trimming, "
                        "control priority or link delay: docs/mininet.md)")
    g.add_argument("--no-sim", action="store_true", help="Mininet columns only")
    g.add_argument("--no-mininet", action="store_true", help="simulation columns only")
    g.add_argument("--sweep-gbps", type=float, nargs="+", metavar="GBPS",
                   help="run everything at each of these link rates and end with a table "
                        "of Mininet against the simulation per rate (what rate the agents "
                        "sustain: the FCT ratio stays near 1 and timers stay on time)")
    g = p.add_argument_group("output")
    g.add_argument("--json", metavar="FILE", help="every run's summary, one JSON file")
    g.add_argument("--out-dir", metavar="DIR",
                   help="per-run summary JSON and records CSV, and every agent's files")
    g.add_argument("--quiet", action="store_true", help="no progress line")
    args = p.parse_args(argv)
    args.workloads = args.workload or list(WORKLOADS)
    if args.forwarding == "kernel":
        from gse.runtimes.mininet.kernel_forwarding import KERNEL_PROTOCOLS
        bad = [x for x in args.protocols or () if x not in KERNEL_PROTOCOLS]
        if bad:
            p.error("--forwarding kernel runs %s only, not %s (no PFC, ECN, trimming or "
                    "fabric-mode leaf scheduler in the kernel's switches)"
                    % (", ".join(KERNEL_PROTOCOLS), ", ".join(bad)))
        args.protocols = args.protocols or list(KERNEL_PROTOCOLS)
    args.protocols = args.protocols or list(PROTOCOLS)
    if args.no_sim and args.no_mininet:
        p.error("--no-sim and --no-mininet leave nothing to run")
    return args


def workload_messages(args, topo, workload):
    ns = argparse.Namespace(traffic=workload, traffic_file=None, seed=args.seed,
                            size=args.size, senders=args.senders, receiver=args.receiver,
                            messages=0, size_dist=None, load=0.0, start_us=0.0,
                            link_gbps=args.link_gbps)
    if workload == "all-to-all":
        ns.size = args.a2a_size or max(1, args.size // 4)
    return traffic_from_args(ns, topo), ns.size


def protocol_config(args, protocol):
    ns = argparse.Namespace(**vars(args))
    ns.protocol = protocol
    ns.command = "compare"             # an unprefixed --set applies where it exists
    return udp_profile(gse_config_from_args(ns, protocol), explicit_settings(args),
                       link_gbps=args.link_gbps)


def describe(summary, args, workload, size, cfg, runtime):
    summary["topology"] = describe_topology_args(args)
    summary["traffic"] = {"kind": workload, "size": size, "seed": args.seed}
    if workload == "incast":
        summary["traffic"].update(senders=args.senders, receiver=args.receiver)
    summary["config"] = cfg.as_dict()
    summary.setdefault("runtime", runtime)
    return summary


def mininet_rows(runs):
    """Rows that only a Mininet run has, in the columns of ``format_side_by_side``."""
    def get(s, *path):
        for key in path:
            if not isinstance(s, dict) or key not in s:
                return "-"
            s = s[key]
        return s
    rows = [("last FCT us", lambda s: s["fct_us"]["max"]),
            ("set-up s", lambda s: get(s, "mininet", "setup_s")),
            ("agents up s", lambda s: get(s, "mininet", "agents_ready_s")),
            ("traffic s", lambda s: get(s, "mininet", "run_s")),
            ("tear-down s", lambda s: get(s, "mininet", "teardown_s")),
            ("end", lambda s: get(s, "mininet", "end")),
            ("kernel drops", lambda s: get(s, "udp", "kernel_drops")),
            ("forwarding", lambda s: get(s, "mininet", "forwarding")),
            ("kernel q.drops", lambda s: get(s, "kernel_forwarding", "queue_drops")),
            ("late timer mean us", lambda s: get(s, "udp", "timer_late", "mean_us")),
            ("left behind", lambda s: ("-" if "mininet" not in s else
                                       ",".join(sorted(s["mininet"]["left_behind"])) or "none"))]
    lines = []
    for name, fn in rows:
        cells = []
        for s in runs:
            v = fn(s)
            cells.append("%16s" % (("%.4g" % v) if isinstance(v, float) else v))
        lines.append("%-18s" % name + "".join(cells))
    return "\n".join(lines)


def sweep_rows(runs):
    """Mininet against the simulation per (rate, workload, protocol): dicts with the
    ratios of the study (last FCT, p50 FCT), timer lateness, kernel drops, losses."""
    sims = {(r["gbps"], r["workload"], r["protocol"]): r["summary"] for r in runs
            if r["runtime"] == "sim"}
    rows = []
    for r in runs:
        if r["runtime"] != "mininet":
            continue
        s = r["summary"]
        sim = sims.get((r["gbps"], r["workload"], r["protocol"]))
        fct = s["fct_us"]
        last = (fct["max"] / sim["fct_us"]["max"]) if sim and sim["fct_us"]["max"] else None
        p50 = (fct["p50"] / sim["fct_us"]["p50"]) if sim and sim["fct_us"]["p50"] else None
        rows.append({"gbps": r["gbps"], "workload": r["workload"], "protocol": r["protocol"],
                     "sim_p50_ms": sim["fct_us"]["p50"] / 1e3 if sim else None,
                     "sim_max_ms": sim["fct_us"]["max"] / 1e3 if sim else None,
                     "p50_ms": fct["p50"] / 1e3, "max_ms": fct["max"] / 1e3,
                     "last_fct_ratio": last, "p50_ratio": p50,
                     "late_mean_us": s["udp"]["timer_late"]["mean_us"],
                     "late_max_us": s["udp"]["timer_late"]["max_us"],
                     "kernel_drops": s["udp"]["kernel_drops"], "lost": s["lost"],
                     "left_behind": s["mininet"]["left_behind"],
                     "forwarding": s.get("forwarding", "agents"),
                     "queue_drops": s["queue_drops"],
                     "faithful": last is not None and last <= FAITHFUL and s["lost"] == 0})
    return rows


def sweep_table(runs):
    """The sweep as text: a row per Mininet run, then the highest faithful rate per
    (workload, protocol): the fastest link rate at which the last FCT was within 10% of
    the simulation's (and nothing lost), every slower rate of the sweep too."""
    rows = sweep_rows(runs)
    lines = ["%-8s %-12s %-10s %21s %21s %9s %9s %9s %9s %7s %5s" % (
        "Gb/s", "workload", "protocol", "sim FCT p50/max ms", "mininet p50/max ms",
        "last/sim", "p50/sim", "late ms", "late max", "k.drops", "lost")]
    for r in rows:
        lines.append("%-8g %-12s %-10s %21s %21s %9s %9s %9.2f %9.1f %7d %5d" % (
            r["gbps"], r["workload"], r["protocol"],
            "%.1f / %.1f" % (r["sim_p50_ms"], r["sim_max_ms"]) if r["sim_max_ms"] else "-",
            "%.1f / %.1f" % (r["p50_ms"], r["max_ms"]),
            "%.2f" % r["last_fct_ratio"] if r["last_fct_ratio"] else "-",
            "%.2f" % r["p50_ratio"] if r["p50_ratio"] else "-",
            r["late_mean_us"] / 1e3, r["late_max_us"] / 1e3, r["kernel_drops"], r["lost"]))
    lines.append("")
    for label in sorted({r["forwarding"] for r in rows} - {"agents"}):
        lines.append("forwarding: %s" % label)
    lines.append("highest faithful rate (last FCT within %d%% of the simulation at it and "
                 "every slower rate of the sweep):" % round((FAITHFUL - 1) * 100))
    for key, best in faithful_rates(rows).items():
        lines.append("  %-12s %-10s %s" % (key[0], key[1],
                                           "%g Gb/s" % best if best else "none of the sweep"))
    return "\n".join(lines)


def faithful_rates(rows):
    """{(workload, protocol): highest faithful rate or None}."""
    by = {}
    for r in rows:
        by.setdefault((r["workload"], r["protocol"]), []).append(r)
    out = {}
    for key, items in by.items():
        best = None
        for r in sorted(items, key=lambda x: x["gbps"]):
            if not r["faithful"]:
                break
            best = r["gbps"]
        out[key] = best
    return out


def main(argv=None):
    args = parse_args(argv)
    rates = args.sweep_gbps or [args.link_gbps]
    out = None
    for rate in rates:
        args.link_gbps = rate
        code, out = run_rate(args, out)
        if code:
            return code
    if args.sweep_gbps:
        print("\n## sweep: Mininet against the simulation (last/sim: last FCT over the "
              "simulation's; late: mean and max timer lateness; k.drops: kernel drops)")
        print(sweep_table(out["runs"]))
        if args.json:
            out["sweep"] = sweep_rows(out["runs"])
            out["faithful_gbps"] = {"%s/%s" % k: v
                                    for k, v in faithful_rates(out["sweep"]).items()}
            with open(args.json, "w") as f:
                json.dump(out, f, indent=2, sort_keys=True)
                f.write("\n")
    return 0


def run_rate(args, out=None):
    topo = build_topology(args)
    mininet = None
    if not args.no_mininet:
        from gse.runtimes.mininet import run as mininet
        from gse.runtimes.mininet.environment import mininet_unavailable
        from gse.runtimes.mininet.progress import ProgressLine
        reason = mininet_unavailable()
        if reason:
            print("mininet_fattree: %s (--no-mininet runs the simulation only)" % reason,
                  file=sys.stderr)
            return 2, out
    if args.out_dir:
        os.makedirs(args.out_dir, exist_ok=True)
    print("# %s, %d hosts, %d switches, %d links at %g Gb/s; protocols %s; workloads %s"
          % (args.topology, len(topo.hosts), len(topo.nodes) - len(topo.hosts),
             len(topo.links), args.link_gbps, ", ".join(args.protocols),
             ", ".join(args.workloads)))
    progress = None if (args.quiet or mininet is None) else ProgressLine()
    if out is None:
        out = {"experiment": "mininet_fattree", "topology": describe_topology_args(args),
               "seed": args.seed, "runs": []}
    t0 = time.perf_counter()
    first = len(out["runs"])
    try:
        for workload in args.workloads:
            messages, size = workload_messages(args, topo, workload)
            summaries, labels = [], []
            for protocol in args.protocols:
                cfg = protocol_config(args, protocol)
                runtimes = ([] if args.no_sim else ["sim"]) + ([] if mininet is None
                                                               else ["mininet"])
                for runtime in runtimes:
                    tag = "%s-%s-%s" % (workload, protocol, runtime)
                    if args.sweep_gbps:
                        tag = "%g-%s" % (args.link_gbps, tag)
                    if runtime == "sim":
                        res = run_simulation(topo, messages, protocol, cfg, args.seed)
                    else:
                        res = mininet.run_mininet(
                            topo, messages, protocol, cfg, args.seed,
                            timeout_s=args.timeout_s, loop=args.loop,
                            start_budget_s=args.start_budget_s, progress=progress,
                            label="%s %s" % (workload, protocol), placement=args.placement,
                            precise_timers=args.precise_timers,
                            forwarding=args.forwarding,
                            out_dir=(os.path.join(args.out_dir, tag) if args.out_dir
                                     else None))
                    s = describe(res.summary, args, workload, size, cfg, runtime)
                    summaries.append(s)
                    labels.append("%s %s" % (protocol, runtime))
                    out["runs"].append({"workload": workload, "protocol": protocol,
                                        "runtime": runtime, "gbps": args.link_gbps,
                                        "summary": s})
                    if args.out_dir:
                        with open(os.path.join(args.out_dir, tag + ".json"), "w") as f:
                            json.dump(s, f, indent=2, sort_keys=True)
                            f.write("\n")
                        write_records(os.path.join(args.out_dir, tag + ".records.csv"),
                                      res.records)
            print("\n## %s: %d messages of %d B%s" % (
                workload, len(messages), size,
                " (%d senders -> host %d)" % (args.senders, args.receiver)
                if workload == "incast" else ""))
            print(format_side_by_side(summaries, labels))
            if mininet is not None:
                print(mininet_rows(summaries))
                if args.forwarding == "kernel":
                    print("forwarding: %s" % summaries[-1].get("forwarding"))
            sys.stdout.flush()
    except KeyboardInterrupt as exc:          # Ctrl-C or SIGTERM: the network is gone
        print("mininet_fattree: interrupted (%s); the network was torn down"
              % (exc or "SIGINT"), file=sys.stderr)
        return 130, out
    finally:
        if args.json and out["runs"]:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=2, sort_keys=True)
                f.write("\n")
    print("\n# %g Gb/s: %d runs in %.1f s" % (args.link_gbps, len(out["runs"]) - first,
                                             time.perf_counter() - t0))
    return 0, out


if __name__ == "__main__":
    sys.exit(main())
