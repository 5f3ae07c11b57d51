"""``gse sim``: one protocol in the deterministic in-process simulation.

    gse sim --topology fat-tree --k 8 --link-gbps 100 --traffic permutation \\
            --size 2000000 --protocol gse --seed 1 --json out.json
    gse sim --traffic-file flows.cm
"""

from gse.api.runner import prepare, run_protocol
from gse.cli.common import add_run_options, add_stall_option, emit, scenario_from_args
from gse.cli.observe import add_observe_options, check_outputs, sim_observers, write_observed
from gse.cli.progress import Progress, wanted
from gse.cli.signals import StopSignals, exit_code, note_signal
from gse.protocols import PROTOCOLS


def add_commands(sub):
    p = sub.add_parser("sim", help="run the deterministic in-process simulation")
    add_run_options(p, PROTOCOLS)
    p.add_argument("--until-us", type=float, default=None, help="stop the run at this time")
    add_stall_option(p)
    add_observe_options(p)
    return {"sim": cmd_sim}


def cmd_sim(args):
    """The options as a ``gse.Scenario``, run by ``gse.api`` (the same summary as
    ``gse.run``).  SIGINT and SIGTERM end the run with its partial results written (exit
    128 + the signal); a run the watchdog ends says what it waited for (exit 1)."""
    with StopSignals() as stop:
        scenario = scenario_from_args(args)
        prepared = prepare(scenario, lenient=False)
        check_outputs(args)
        with Progress(wanted(args)) as progress:
            watch = sim_observers(args, args.protocol)
            watch += [progress.sim(args.protocol, len(prepared.messages)), stop.observer()]
            result = run_protocol(prepared, args.protocol, watch)
        summary = note_signal(result.summary.to_dict(), stop)
        emit(summary, result.records, args)
        write_observed(args, result.run, args.protocol)
        ok = summary["lost"] == 0 and not summary.get("never_started")
        return exit_code("sim", [(None, summary)], stop, ok, args.json)
