"""Options and steps that every ``gse`` command running traffic shares.

``gse sim`` (simulation), ``gse run`` (UDP and Mininet runtimes), ``gse compare`` and
``gse replay`` read the same fabric, traffic and protocol options and write the same
summary, so their results line up column for column.
"""

import json

from gse.api import build
from gse.api.scenario import TOPOLOGY_DEFAULTS, WORKLOAD_DEFAULTS, Scenario
from gse.cli.faults import detect_ps
from gse.cli.observe import sample_ps
from gse.config import BASELINES, PS_PER_US, ConfigError
from gse.metrics.report import format_summary, write_records
from topologies.registry import add_topology_options, build_topology


def add_traffic_options(p):
    g = p.add_argument_group("traffic")
    g.add_argument("--traffic", default="permutation",
                   choices=("permutation", "incast", "all-to-all", "random"))
    g.add_argument("--traffic-file", metavar="FILE.cm",
                   help="htsim connection matrix in place of the generator options")
    g.add_argument("--size", type=int, default=2_000_000, help="message bytes")
    g.add_argument("--senders", type=int, default=32, help="incast senders")
    g.add_argument("--receiver", type=int, default=None, help="incast receiver host")
    g.add_argument("--messages", type=int, default=1000, help="random: message count")
    g.add_argument("--size-dist", help="random: fixed:N, uniform:LO:HI, exp:MEAN, "
                                       "lognormal:MEDIAN:SIGMA")
    g.add_argument("--load", type=float, default=0.5, help="random: offered load per host")
    g.add_argument("--start-us", type=float, default=0.0, help="start time of generated flows")
    g.add_argument("--seed", type=int, default=1)
    return g


def add_protocol_options(p, protocols):
    g = p.add_argument_group("protocol")
    g.add_argument("--protocol", default=protocols[0], choices=protocols)
    g.add_argument("--unsched", type=int, default=None,
                   help="GSE unscheduled first window in bytes (0 = off)")
    g.add_argument("--policy", choices=("rr", "srpt", "fifo"),
                   help="GSE receiver grant policy (default rr)")
    g.add_argument("--baseline", default="deployed", choices=sorted(BASELINES),
                   help="the RoCE baseline profile (docs/comparison.md): deployed = RoCEv2 + "
                        "PFC + DCQCN + ECN (default); htsim = htsim's RoCE model (no "
                        "congestion control, its framing, NIC and PFC); hpcc-dcqcn = DCQCN "
                        "as the HPCC authors' ns-3 simulator runs it; --set overrides apply "
                        "on top")
    g.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override any protocol parameter (repeatable)")
    g.add_argument("--loss", type=float, default=0.0, help="random loss per link traversal")
    g.add_argument("--corrupt", type=float, default=0.0,
                   help="random corruption per link traversal")
    return g


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
    from gse.cli.faults import add_fault_options, add_trigger_option
    add_topology_options(p)
    add_traffic_options(p)
    add_protocol_options(p, protocols)
    g = add_fault_options(p)
    if real_time:
        add_trigger_option(g)
    add_output_options(p)


def topology_part(args):
    """The topology options as a Scenario's ``topology`` (name and parameters)."""
    out = {"name": args.topology}
    for name in TOPOLOGY_DEFAULTS:
        value = getattr(args, name, None)
        out[name] = TOPOLOGY_DEFAULTS[name] if value is None else value
    return out


def workload_part(args):
    """The traffic options as a Scenario's ``workload``: a ``.cm`` file or a generator."""
    if getattr(args, "traffic_file", None):
        return {"kind": "cm", "path": args.traffic_file}
    out = {"kind": getattr(args, "traffic", "permutation")}
    for name, default in WORKLOAD_DEFAULTS.items():
        value = getattr(args, name, default)
        out[name] = value
    return out


def scenario_from_args(args, protocols=None):
    """The run the options describe, as a ``gse.api.Scenario`` (bad times and ``--set``
    items are refused first, with the options' own messages)."""
    until_ps(args)
    stall_ps(args)
    detect = detect_ps(args)
    sample_ps(args)
    list(_overrides(args))
    return Scenario(
        topology=topology_part(args), workload=workload_part(args),
        protocols=list(protocols or [args.protocol]),
        baseline=getattr(args, "baseline", None) or "deployed",
        overrides=list(getattr(args, "set", None) or ()),
        unsched=getattr(args, "unsched", None), policy=getattr(args, "policy", None),
        loss=getattr(args, "loss", 0.0), corrupt=getattr(args, "corrupt", 0.0),
        failures=list(getattr(args, "fail", None) or ()),
        failure_files=list(getattr(args, "fail_file", None) or ()),
        detect_us="never" if detect == -1 else float(str(args.detect_us).strip())
        if hasattr(args, "detect_us") else 1000.0,
        seed=getattr(args, "seed", 1), until_us=getattr(args, "until_us", None),
        stall_us=getattr(args, "stall_us", None), sample_us=getattr(args, "sample_us", None))


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
    list(_overrides(args))
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


def _overrides(args):
    for item in getattr(args, "set", None) or ():
        if "=" not in item:
            raise ConfigError("--set takes name=value, got %r" % item)
        name, value = item.split("=", 1)
        yield name.strip(), value.strip()


def describe_run(summary, args, config):
    """Add what was run to a summary, so a JSON file stands on its own."""
    build.describe(summary, _traffic_scenario(args), config)
    if summary.get("protocol", getattr(args, "protocol", None)) == "roce":
        summary["baseline"] = getattr(args, "baseline", None) or "deployed"
    return summary


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


def until_ps(args):
    """``--until-us`` as the runtimes take it: picoseconds, -1 for no bound."""
    us = getattr(args, "until_us", None)
    if us is None:
        return -1
    if not 0 <= us < float("inf"):
        raise ValueError("--until-us must be a time >= 0 (microseconds), got %r" % us)
    return int(us * PS_PER_US)


def add_stall_option(p):
    """``--stall-us``: the no-progress watchdog's span (``gse.metrics.stall``)."""
    p.add_argument("--stall-us", type=float, default=None, metavar="US",
                   help="end the run when nothing completes, is acknowledged or received for "
                        "this long on the run's clock while messages are unfinished (default: "
                        "4 x the protocol's rto_max_ps, 6.4 ms for GSE, 64 ms for RoCE and "
                        "fabric mode, 4 s over UDP, and not before the failures' last change; "
                        "0: never)")


def stall_ps(args):
    """``--stall-us`` as the runtimes take it: None for the default, 0 for off."""
    us = getattr(args, "stall_us", None)
    if us is None:
        return None
    if not 0 <= us < float("inf"):
        raise ValueError("--stall-us must be a time >= 0 (microseconds; 0: no watchdog), "
                         "got %r" % us)
    ps = int(round(us * PS_PER_US))
    if us > 0 and ps == 0:
        raise ValueError("--stall-us %r is below a picosecond" % us)
    return ps
