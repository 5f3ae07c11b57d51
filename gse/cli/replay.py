"""``gse replay``: replay a trace of collectives on a fabric, one protocol or compared.

    gse replay traces/allreduce_8r_1MB.jsonl --topology spine-leaf-rail --servers 1
    gse replay tests/data/chakra/all_to_all_16npus_1MB/ --topology spine-leaf-rail --servers 2
    gse replay traces/dp_step_64r.jsonl --topology spine-leaf-rail --compare --plot cmp.png
    gse replay rank0.json rank1.json --format pytorch --algorithm all_reduce=hd
    gse replay resnet_2gpu_et.json.gz --topology fat-tree --k 4       # one rank of an SPMD run
    gse replay custom_allreduce/ --compute-model unlimited --compute-scale 0.5

Loaded by ``gse.cli.main`` (``EXTENSIONS``).  The replay runs on the deterministic simulation
only: its driver (``gse.workloads.replay``) starts each flow from the simulation's event queue
when the deliveries it waits for have happened, which the UDP runtime (real timers, one
event loop) and Mininet (an agent process per node, traffic fixed in their configurations
before the start) do not offer, so ``--runtime`` takes ``sim`` alone.
"""

import sys

from gse.api.runner import prepare, run_protocol
from gse.cli.common import (add_output_options, add_protocol_options, add_stall_option,
                            add_topology_options, scenario_from_args, write_json)
from gse.cli.faults import add_fault_options
from gse.cli.observe import add_observe_options, check_outputs, sim_observers, write_observed
from gse.cli.progress import Progress, wanted
from gse.cli.signals import StopSignals, exit_code, note_signal
from gse.metrics.report import format_side_by_side, format_summary, write_records
from gse.protocols import PROTOCOLS
from gse.workloads.collectives import ALGORITHMS
from gse.workloads.replay_programs import COMPUTE_MODELS
from gse.workloads.traces import FORMATS

RUNTIMES = ("sim",)            # the replay driver runs on the simulation's event queue


def add_commands(sub):
    p = sub.add_parser("replay", help="replay a trace of training collectives (project JSONL, "
                       "Chakra .et, PyTorch ET JSON) with their dependencies",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("trace", nargs="+", metavar="TRACE",
                   help="a project .jsonl file, or every rank's file (or their directory) of a "
                        "Chakra or PyTorch execution trace")
    p.add_argument("--format", default="auto", choices=FORMATS,
                   help="trace format (default: from the file names and contents)")
    p.add_argument("--runtime", default="sim", choices=RUNTIMES,
                   help="sim, the deterministic simulation (the only runtime that replays "
                        "dependencies: docs/traces.md)")
    p.add_argument("--compare", action="store_true",
                   help="run every protocol of --protocols and print them side by side")
    p.add_argument("--protocols", default=",".join(PROTOCOLS),
                   help="with --compare: comma-separated protocols (default: all)")
    p.add_argument("--algorithm", action="append", metavar="OP=ALGO",
                   help="override the algorithm of every OP collective, e.g. all_reduce=hd "
                        "(known: %s)" % "; ".join("%s: %s" % (op, ", ".join(a))
                                                  for op, a in ALGORITHMS.items() if len(a) > 1))
    p.add_argument("--rank-hosts", metavar="HOSTS",
                   help="hosts of the trace's ranks, in ascending rank order, e.g. '0-7' or "
                        "'0,8,16,24' (default: rank r on host r)")
    p.add_argument("--compute-scale", type=float, default=1.0,
                   help="scale the trace's compute times, lags and start times (0: network "
                        "only)")
    p.add_argument("--compute-model", default="streams", choices=COMPUTE_MODELS,
                   help="how a rank runs the compute of a trace that records it (Chakra): "
                        "streams (default) = one GPU and one CPU stream per rank, one op at a "
                        "time on each; unlimited = every op as soon as it is ready")
    p.add_argument("--world-size", type=int, default=None, metavar="N",
                   help="the number of ranks when the trace's files are fewer and it does not "
                        "say (one rank's file of an SPMD run), or to replay a single-GPU "
                        "PyTorch trace data-parallel over N ranks")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--until-us", type=float, default=None, help="stop each run at this time")
    add_stall_option(p)
    p.add_argument("--plot", metavar="FILE.png",
                   help="bar chart of collective completion times (needs matplotlib)")
    add_topology_options(p)
    add_protocol_options(p, PROTOCOLS)
    add_fault_options(p)
    add_output_options(p)
    add_observe_options(p)
    return {"replay": cmd_replay}


def scenario_from_replay_args(args, protocols):
    """The options as a ``gse.Scenario`` whose workload is the trace (``gse.api`` checks
    it: a bad ``--algorithm``, ``--rank-hosts`` or ``--compute-scale`` is named by its
    field, e.g. ``scenario.workload.algorithms[0]``)."""
    workload = {"kind": "trace", "paths": list(args.trace), "format": args.format,
                "world_size": args.world_size, "algorithms": list(args.algorithm or ()),
                "rank_hosts": args.rank_hosts, "compute_model": args.compute_model,
                "compute_scale": args.compute_scale}
    return scenario_from_args(args, protocols).replace(workload=workload, runtime=args.runtime)


def format_collectives(results_by_protocol):
    """Per-collective table; with several protocols, their times side by side."""
    protocols = list(results_by_protocol)
    first = results_by_protocol[protocols[0]]
    head = "%4s  %-20s %5s %11s  %-12s" % ("id", "op/algo", "ranks", "bytes", "tag")
    if len(protocols) == 1:
        head += "%10s %10s %10s %10s" % ("start us", "time us", "algbw Gb/s", "busbw Gb/s")
    else:
        for p in protocols:
            head += " %14s %9s" % ("%s us" % p, "busbw")
        head += "%8s" % ("x %s" % protocols[0])
    lines = [head]
    for i, res in enumerate(first.collectives):
        c = res.coll
        row = "%4d  %-20s %5d %11d  %-12s" % (c.id, "%s/%s" % (c.op, c.algo), len(c.ranks),
                                              c.size, (c.tag or "")[:12])
        if len(protocols) == 1:
            t = res.time_ps()
            row += "%10s %10s %10s %10s" % (_f(res.start_ps / 1e6 if res.start_ps >= 0 else None),
                                            _f(None if t is None else t / 1e6),
                                            _f(res.algbw_gbps()), _f(res.busbw_gbps()))
        else:
            times = []
            for p in protocols:
                r = results_by_protocol[p].collectives[i]
                t = r.time_ps()
                times.append(t)
                row += " %14s %9s" % (_f(None if t is None else t / 1e6), _f(r.busbw_gbps()))
            row += "%8s" % (_f(times[-1] / times[0]) if times[0] and times[-1] else "-")
        lines.append(row)
    return "\n".join(lines)


def _f(v):
    if v is None:
        return "-"
    return "%.4g" % v if abs(v) < 1000 else "%.1f" % v


def plot_collective_times(results_by_protocol, path, title=None):
    """Grouped bars: completion time of every collective per protocol (matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise RuntimeError("plotting needs matplotlib: pip install 'gse-transport[plot]' "
                           "(or pip install matplotlib)") from exc
    protocols = list(results_by_protocol)
    first = results_by_protocol[protocols[0]].collectives
    labels = ["%d %s" % (r.coll.id, r.coll.tag or r.coll.op) for r in first]
    width = 0.8 / len(protocols)
    fig, ax = plt.subplots(figsize=(max(6.4, 0.6 * len(labels) + 2), 4.0))
    for k, p in enumerate(protocols):
        ys = [(r.time_ps() or 0) / 1e6 for r in results_by_protocol[p].collectives]
        xs = [i + (k - (len(protocols) - 1) / 2) * width for i in range(len(ys))]
        ax.bar(xs, ys, width, label=p)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("collective completion time (us)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend()
    if title:
        ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def cmd_replay(args):
    """A stop signal ends the replay in progress (partial results written, ``"complete":
    false``; protocols not run yet left out): exit 128 + the signal."""
    with StopSignals() as stop:
        return _replay(args, stop)


def _replay(args, stop):
    """The options as a ``gse.Scenario`` with a trace workload, run as ``gse.run`` /
    ``gse.compare`` run it (``gse.api.runner.prepare``, then ``run_protocol`` per
    protocol, with the command line's observers)."""
    check_outputs(args)
    if args.compare:
        protocols = [p.strip() for p in args.protocols.split(",") if p.strip()]
        for p in protocols:
            if p not in PROTOCOLS:
                raise ValueError("unknown protocol %r in --protocols (known: %s)"
                                 % (p, ", ".join(PROTOCOLS)))
        if "roce" not in PROTOCOLS:
            print("gse replay: the RoCE/PFC baseline is not available yet (protocols: %s); "
                  "running GSE only" % ", ".join(PROTOCOLS), file=sys.stderr)
    else:
        protocols = [args.protocol]
    scenario = scenario_from_replay_args(args, protocols)
    prepared = prepare(scenario, lenient=args.compare)
    trace, colls = prepared.trace, prepared.collectives
    ran = {}
    with Progress(wanted(args)) as progress:
        for p in protocols:
            if stop.signal and ran:          # the first one runs: a summary to write
                break
            watch = sim_observers(args, p, len(protocols) > 1)
            watch += [progress.sim("replay " + p, None), stop.observer()]
            ran[p] = run_protocol(prepared, p, watch)
    results = {p: r.run for p, r in ran.items()}
    for res in results.values():
        note_signal(res.summary, stop)
    if not args.quiet:
        t = trace.summary()
        print("trace: %s, %d file(s), %d records, %d collectives over %d ranks, %d skipped%s"
              % (t["format"], len(t["files"]), t["records"], t["collectives"], t["ranks"],
                 t["skipped_total"], "" if not t["skipped"] else " (%s)" % ", ".join(
                     "%s: %d" % kv for kv in sorted(t["skipped"].items()))))
        if t["ignored"]:
            print("ignored: %d field value(s) the replay does not use (%s)"
                  % (t["ignored_total"], ", ".join("%s: %d" % kv
                                                    for kv in sorted(t["ignored"].items()))))
        if "programs" in t:
            pg = t["programs"]
            print("programs: %d ranks (%d copied from another rank), %s; compute model %s, "
                  "scale %g; most compute on one rank: %s"
                  % (pg["ranks"], pg["mirrored_ranks"], ", ".join(
                      "%d %s ops" % (n, k) for k, n in sorted(pg["ops"].items())),
                     args.compute_model, args.compute_scale, ", ".join(
                      "%s %.4g us" % kv for kv in pg["compute_us_max_rank"].items()) or "none"))
        for note in t["notes"]:
            print("note: %s" % note)
        print(format_collectives(results))
        print()
        if len(results) == 1:
            print(format_summary(next(iter(results.values())).summary))
        else:
            print(format_side_by_side([r.summary for r in results.values()], list(results)))
    if args.json:
        write_json(args.json, next(iter(results.values())).summary if len(results) == 1
                   else {p: r.summary for p, r in results.items()})
    if args.records:
        for p, r in results.items():
            path = args.records
            if len(results) > 1:
                stem, dot, ext = path.rpartition(".")
                path = "%s.%s.%s" % (stem, p, ext) if dot else "%s.%s" % (path, p)
            write_records(path, r.records)
    for p, r in results.items():
        write_observed(args, r, p, multi=len(results) > 1)
    if args.plot:
        plot_collective_times(results, args.plot, "replay of %s on %s"
                              % (trace.name or trace.format, args.topology))
        print("plot written to %s" % args.plot)
    if not any(c.bytes_moved for r in results.values() for c in r.collectives):
        print("gse replay: this replay moved no data%s" % (
            ": every collective is over one rank (a single-GPU trace?); give --world-size N "
            "to replay them over N ranks" if all(len(c.ranks) == 1 for c in colls) else ""),
            file=sys.stderr)
    ok = all(r.summary["lost"] == 0 and r.summary["collectives_done"] ==
             r.summary["collectives_total"] and r.summary.get("programs", {}).get(
                 "ops_not_done", 0) == 0 for r in results.values())
    if not args.quiet:
        for p, r in results.items():
            if "programs" in r.summary:
                pr = r.summary["programs"]
                print("%s: every rank's program %s at %.4g us (first rank done at %.4g us)"
                      % (p, "ended" if pr["ops_not_done"] == 0 else
                         "did NOT end (%d ops left)" % pr["ops_not_done"], pr["end_us"],
                         pr["first_rank_end_us"]))
    return exit_code("replay", [(p if len(results) > 1 else None, r.summary)
                                for p, r in results.items()], stop, ok, args.json)
