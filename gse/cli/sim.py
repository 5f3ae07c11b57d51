"""``gse sim``: one protocol in the deterministic in-process simulation.

    gse sim --topology fat-tree --k 8 --link-gbps 100 --traffic permutation \\
            --size 2000000 --protocol gse --seed 1 --json out.json
    gse sim --traffic-file flows.cm
"""

from gse.cli.common import (
    add_run_options,
    add_stall_option,
    describe_run,
    emit,
    gse_config_from_args,
    stall_ps,
    topology_from_args,
    workload_from_args,
    until_ps,
)
from gse.cli.faults import detect_ps, faults_from_args
from gse.cli.observe import (add_observe_options, check_outputs, sample_ps, sim_observers,
                             write_observed)
from gse.cli.progress import Progress, wanted
from gse.cli.signals import StopSignals, exit_code, note_signal
from gse.protocols import PROTOCOLS
from gse.runtimes.sim.run import run_simulation


def add_commands(sub):
    p = sub.add_parser("sim", help="run the deterministic in-process simulation")
    add_run_options(p, PROTOCOLS)
    p.add_argument("--until-us", type=float, default=None, help="stop the run at this time")
    add_stall_option(p)
    add_observe_options(p)
    return {"sim": cmd_sim}


def cmd_sim(args):
    """SIGINT and SIGTERM end the run with its partial results written (exit 128 + the
    signal); a run the watchdog ends says what it waited for (exit 1)."""
    with StopSignals() as stop:
        topo = topology_from_args(args)
        messages, triggers = workload_from_args(args, topo)
        if not messages and triggers is None:
            raise ValueError("the traffic has no messages")
        cfg = gse_config_from_args(args)
        faults = faults_from_args(args, topo)
        until, stall = until_ps(args), stall_ps(args)
        check_outputs(args)
        with Progress(wanted(args)) as progress:
            watch = sim_observers(args, args.protocol)
            watch += [progress.sim(args.protocol, len(messages)), stop.observer()]
            result = run_simulation(topo, messages, args.protocol, cfg, args.seed, args.loss,
                                    args.corrupt, until, sample_ps(args), watch,
                                    triggers=triggers, faults=faults,
                                    detect_ps=detect_ps(args), stall_ps=stall)
        summary = note_signal(describe_run(result.summary, args, cfg), stop)
        emit(summary, result.records, args)
        write_observed(args, result, args.protocol)
        ok = summary["lost"] == 0 and not summary.get("never_started")
        return exit_code("sim", [(None, summary)], stop, ok, args.json)
