"""Options and steps that every ``gse`` command running traffic shares.

``gse sim`` (simulation), ``gse run`` (UDP and Mininet runtimes), ``gse compare`` and
``gse replay`` read the same fabric, traffic and protocol options and write the same
summary, so their results line up column for column.
"""

import json

from gse.api import build
from gse.api.options import (  # noqa: F401  (the commands import them from here)
    add_protocol_options,
    add_scenario_options,
    add_stall_option,
    add_traffic_options,
    arg_overrides,
    scenario_from_args,
    stall_ps,
    topology_part,
    until_ps,
    workload_part,
)
from gse.api.scenario import Scenario
from gse.metrics.report import format_summary, write_records
from topologies.registry import add_topology_options, build_topology  # noqa: F401


def add_output_options(p):
    o = p.add_argument_group("output")
    o.add_argument("--json", metavar="FILE", help="write the summary as JSON")
    o.add_argument("--records", metavar="FILE", help="per-message records (.csv or .jsonl)")
    o.add_argument("--quiet", action="store_true", help="no table on stdout")
    return o


def add_run_options(p, protocols, real_time=False):
    """Fabric, traffic, protocol, failure and output options: what a traffic-running
    command takes (``real_time``: a runtime on real time, which also takes the failure
    trigger ``--fail-after-packets``)."""
    add_scenario_options(p, protocols, real_time)
    add_output_options(p)


def topology_from_args(args):
    return build_topology(args)


def traffic_from_args(args, topo):
    """The messages of ``--traffic-file`` or the generator options (a matrix whose flows
    wait for triggers is refused: only the simulation runs triggers)."""
    messages, triggers = workload_from_args(args, topo)
    if triggers is not None:
        raise ValueError("%s starts flows by triggers (htsim's trigger/send_done_trigger); "
                         "only the simulation runs them: gse sim or gse compare"
                         % args.traffic_file)
    return messages


def _traffic_scenario(args):
    return Scenario(topology=topology_part(args), workload=workload_part(args),
                    seed=getattr(args, "seed", 1))


def workload_from_args(args, topo):
    """(messages, triggers) of the traffic options (``gse.api.build.workload``)."""
    return build.workload(_traffic_scenario(args), topo)


def generated_traffic(args, n):
    """The messages of the generator options over ``n`` hosts."""
    return build.generated_traffic(_traffic_scenario(args), n)


def gse_config_from_args(args, protocol=None):
    """The protocol's config (GseConfig or RoceConfig) with the command line's overrides
    (``gse.api.build.config``; ``gse compare``: unprefixed names apply where they exist)."""
    protocol = protocol or getattr(args, "protocol", "gse")
    list(arg_overrides(args))
    s = Scenario(protocols=[protocol], baseline=getattr(args, "baseline", None) or "deployed",
                 overrides=list(getattr(args, "set", None) or ()),
                 unsched=getattr(args, "unsched", None), policy=getattr(args, "policy", None))
    return build.config(s, protocol, lenient=getattr(args, "command", None) == "compare")


BASELINE_TEXT = {
    "deployed": "RoCEv2 + PFC + DCQCN (paper reaction point) + ECN, as deployed",
    "htsim": "htsim's RoCE model: no congestion control, 4,150 B + 64 B packets, an ACK "
             "per packet, per-flow pacers, one-FIFO lossless switches, htsim's PFC",
    "hpcc-dcqcn": "DCQCN as the HPCC authors' ns-3 simulator runs it at 100 Gb/s "
                  "(ConnectX reaction point, 1,048-B packets)",
}


def baseline_line(name):
    """What ``gse compare`` prints about the RoCE baseline it ran."""
    return "RoCE baseline: %s (%s; docs/comparison.md)" % (name, BASELINE_TEXT.get(name, name))


def emit(summary, records, args):
    """Table on stdout, JSON summary and per-message records as the options ask."""
    if not args.quiet:
        print(format_summary(summary))
    if args.json:
        write_json(args.json, summary)
    if args.records:
        write_records(args.records, records)


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")


