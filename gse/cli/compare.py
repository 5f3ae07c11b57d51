"""``gse compare``: the same traffic under several protocols, side by side (the main job).

    gse compare --k 8 --traffic incast --senders 32 --plot fct.png
    gse compare --protocols roce,gse,gse-fabric
"""

from gse.cli.common import (
    add_run_options,
    baseline_line,
    describe_run,
    gse_config_from_args,
    topology_from_args,
    workload_from_args,
    until_ps,
    write_json,
)
from gse.cli.faults import detect_ps, faults_from_args
from gse.cli.observe import (add_observe_options, check_outputs, sample_ps, sim_observers,
                             write_observed)
from gse.cli.progress import Progress, wanted
from gse.metrics.report import side_by_side, write_records
from gse.protocols import PROTOCOLS
from gse.runtimes.sim.run import compare


def add_commands(sub):
    p = sub.add_parser("compare", help="GSE vs RoCE/PFC on the same fabric and traffic")
    add_run_options(p, PROTOCOLS)
    p.add_argument("--protocols", default=",".join(PROTOCOLS),
                   help="comma-separated protocols to run (default: all)")
    p.add_argument("--until-us", type=float, default=None, help="stop each run at this time")
    p.add_argument("--plot", metavar="FILE.png", help="draw the FCT CDFs (needs matplotlib)")
    add_observe_options(p)
    return {"compare": cmd_compare}


def cmd_compare(args):
    topo = topology_from_args(args)
    messages, triggers = workload_from_args(args, topo)
    if not messages and triggers is None:
        raise ValueError("the traffic has no messages")
    protocols = args.protocols.split(",")
    for p in protocols:
        if p not in PROTOCOLS:
            raise ValueError("unknown protocol %r in --protocols (known: %s)"
                             % (p, ", ".join(PROTOCOLS)))
    configs = {p: gse_config_from_args(args, p) for p in protocols}
    faults = faults_from_args(args, topo)
    check_outputs(args)
    with Progress(wanted(args)) as progress:
        watch = {p: sim_observers(args, p, True) + [progress.sim(p, len(messages))]
                 for p in protocols}
        results = compare(topo, messages, configs, args.seed, args.loss, args.corrupt,
                          until_ps(args), sample_ps(args), watch, triggers=triggers,
                          faults=faults, detect_ps=detect_ps(args))
    for p, result in results.items():
        describe_run(result.summary, args, configs[p])
    if not args.quiet:
        if "roce" in results:
            print(baseline_line(args.baseline))
        print(side_by_side(results))
    if args.json:
        write_json(args.json, {p: r.summary for p, r in results.items()})
    if args.records:
        for p, r in results.items():
            stem, dot, ext = args.records.rpartition(".")
            write_records("%s.%s.%s" % (stem, p, ext) if dot else "%s.%s" % (args.records, p),
                          r.records)
    for p, r in results.items():
        write_observed(args, r, p, multi=True)
    if args.plot:
        from gse.metrics.plots import plot_fct_cdfs  # matplotlib: only when asked
        plot_fct_cdfs(results, args.plot, "%s, %s" % (args.topology, args.traffic_file
                                                      or args.traffic))
        print("plot written to %s" % args.plot)
    return 0 if all(r.summary["lost"] == 0 and not r.summary.get("never_started")
                    for r in results.values()) else 1
