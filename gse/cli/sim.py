"""``gse sim``: one protocol in the deterministic in-process simulation.

    gse sim --topology fat-tree --k 8 --link-gbps 100 --traffic permutation \\
            --size 2000000 --protocol gse --seed 1 --json out.json
    gse sim --traffic-file flows.cm
"""

from gse.cli.common import (
    add_run_options,
    describe_run,
    emit,
    gse_config_from_args,
    topology_from_args,
    workload_from_args,
    until_ps,
)
from gse.cli.faults import detect_ps, faults_from_args
from gse.cli.observe import (add_observe_options, check_outputs, sample_ps, sim_observers,
                             write_observed)
from gse.cli.progress import Progress, wanted
from gse.protocols import PROTOCOLS
from gse.runtimes.sim.run import run_simulation


def add_commands(sub):
    p = sub.add_parser("sim", help="run the deterministic in-process simulation")
    add_run_options(p, PROTOCOLS)
    p.add_argument("--until-us", type=float, default=None, help="stop the run at this time")
    add_observe_options(p)
    return {"sim": cmd_sim}


def cmd_sim(args):
    topo = topology_from_args(args)
    messages, triggers = workload_from_args(args, topo)
    if not messages and triggers is None:
        raise ValueError("the traffic has no messages")
    cfg = gse_config_from_args(args)
    faults = faults_from_args(args, topo)
    check_outputs(args)
    with Progress(wanted(args)) as progress:
        watch = sim_observers(args, args.protocol)
        watch.append(progress.sim(args.protocol, len(messages)))
        result = run_simulation(topo, messages, args.protocol, cfg, args.seed, args.loss,
                                args.corrupt, until_ps(args), sample_ps(args), watch,
                                triggers=triggers, faults=faults, detect_ps=detect_ps(args))
    summary = describe_run(result.summary, args, cfg)
    emit(summary, result.records, args)
    write_observed(args, result, args.protocol)
    return 0 if summary["lost"] == 0 and not summary.get("never_started") else 1
