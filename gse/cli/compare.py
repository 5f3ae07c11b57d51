"""``gse compare``: the same traffic under several protocols, side by side (the main job).

    gse compare --k 8 --traffic incast --senders 32 --plot fct.png
    gse compare --protocols roce,gse,gse-fabric
"""

from gse.api.runner import prepare, run_protocol
from gse.cli.common import (
    add_run_options,
    add_stall_option,
    baseline_line,
    scenario_from_args,
    write_json,
)
from gse.cli.observe import add_observe_options, check_outputs, sim_observers, write_observed
from gse.cli.progress import Progress, wanted
from gse.cli.signals import StopSignals, exit_code, note_signal
from gse.metrics.report import side_by_side, write_records
from gse.protocols import PROTOCOLS


def add_commands(sub):
    p = sub.add_parser("compare", help="GSE vs RoCE/PFC on the same fabric and traffic")
    add_run_options(p, PROTOCOLS)
    p.add_argument("--protocols", default=",".join(PROTOCOLS),
                   help="comma-separated protocols to run (default: all)")
    p.add_argument("--until-us", type=float, default=None, help="stop each run at this time")
    p.add_argument("--plot", metavar="FILE.png", help="draw the FCT CDFs (needs matplotlib)")
    add_stall_option(p)
    add_observe_options(p)
    return {"compare": cmd_compare}


def cmd_compare(args):
    """A stop signal ends the run in progress (partial results, ``"complete": false``)
    and the protocols not run yet are left out; exit 128 + the signal."""
    with StopSignals() as stop:
        return _compare(args, stop)


def _compare(args, stop):
    """The options as a ``gse.Scenario`` of several protocols, run as ``gse.compare``
    runs it (``gse.api.runner.prepare``, then ``run_protocol`` per protocol)."""
    protocols = args.protocols.split(",")
    for p in protocols:
        if p not in PROTOCOLS:
            raise ValueError("unknown protocol %r in --protocols (known: %s)"
                             % (p, ", ".join(PROTOCOLS)))
    scenario = scenario_from_args(args, protocols)
    prepared = prepare(scenario, lenient=True)
    check_outputs(args)
    ran = {}
    with Progress(wanted(args)) as progress:
        for p in protocols:
            if stop.signal and ran:          # the first one runs: a summary to write
                break
            watch = sim_observers(args, p, True) + [progress.sim(p, len(prepared.messages)),
                                                     stop.observer()]
            ran[p] = run_protocol(prepared, p, watch)
    results = {p: r.run for p, r in ran.items()}
    for result in results.values():
        note_signal(result.summary, stop)
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
    ok = all(r.summary["lost"] == 0 and not r.summary.get("never_started")
             for r in results.values())
    return exit_code("compare", [(p, r.summary) for p, r in results.items()], stop, ok,
                     args.json)
