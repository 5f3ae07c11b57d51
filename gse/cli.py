"""The ``gse`` command line.

    gse sim --topology fat-tree --k 8 --link-gbps 100 --traffic permutation \
            --size 2000000 --protocol gse --seed 1 --json out.json
    gse sim --traffic-file flows.cm
    gse compare --k 8 --traffic incast --senders 32 --plot fct.png
    gse traffic --k 8 --traffic incast --senders 32 --out incast.cm
    gse topo --k 8

Further commands (other runtimes, trace replay) register themselves through the modules
listed in ``EXTENSIONS``: each has ``add_commands(subparsers)`` returning ``{name: handler}``.
"""

import argparse
import importlib
import importlib.util
import json
import sys

from gse import __version__, _build
from gse.cli_common import (add_run_options, add_topology_options, add_traffic_options,
                            describe_run, emit, gse_config_from_args, topology_from_args,
                            traffic_from_args)
from gse.config import ConfigError, PS_PER_US
from gse.run import PROTOCOLS, run_simulation

EXTENSIONS = ("gse.udp_cli", "gse.replay_cli", "gse._build")


def cmd_sim(args):
    topo = topology_from_args(args)
    messages = traffic_from_args(args, topo)
    if not messages:
        raise ValueError("the traffic has no messages")
    cfg = gse_config_from_args(args)
    until = -1 if args.until_us is None else int(args.until_us * PS_PER_US)
    result = run_simulation(topo, messages, args.protocol, cfg, args.seed, args.loss,
                            args.corrupt, until)
    summary = describe_run(result.summary, args, cfg)
    emit(summary, result.records, args)
    return 0 if summary["lost"] == 0 else 1


def cmd_compare(args):
    from gse.compare import compare, plot_fct_cdfs, side_by_side
    from gse.cli_common import write_json
    topo = topology_from_args(args)
    messages = traffic_from_args(args, topo)
    if not messages:
        raise ValueError("the traffic has no messages")
    protocols = args.protocols.split(",")
    for p in protocols:
        if p not in PROTOCOLS:
            raise ValueError("unknown protocol %r in --protocols (known: %s)"
                             % (p, ", ".join(PROTOCOLS)))
    configs = {p: gse_config_from_args(args, p) for p in protocols}
    until = -1 if args.until_us is None else int(args.until_us * PS_PER_US)
    results = compare(topo, messages, configs, args.seed, args.loss, args.corrupt, until)
    for p, result in results.items():
        describe_run(result.summary, args, configs[p])
    if not args.quiet:
        print(side_by_side(results))
    if args.json:
        write_json(args.json, {p: r.summary for p, r in results.items()})
    if args.records:
        from gse.report import write_records
        for p, r in results.items():
            stem, dot, ext = args.records.rpartition(".")
            write_records("%s.%s.%s" % (stem, p, ext) if dot else "%s.%s" % (args.records, p),
                          r.records)
    if args.plot:
        plot_fct_cdfs(results, args.plot, "%s, %s" % (args.topology, args.traffic_file
                                                      or args.traffic))
        print("plot written to %s" % args.plot)
    return 0 if all(r.summary["lost"] == 0 for r in results.values()) else 1


def cmd_traffic(args):
    from gse.cmfile import write_cm
    topo = topology_from_args(args)
    messages = traffic_from_args(args, topo)
    write_cm(args.out, len(topo.hosts), messages)
    print("wrote %d connections over %d nodes to %s" % (len(messages), len(topo.hosts),
                                                        args.out))
    return 0


def cmd_topo(args):
    from gse.packet import HEADER_BYTES
    topo = topology_from_args(args)
    info = topo.summary()
    info["max_base_rtt_us"] = topo.max_base_rtt_ps(4096 + HEADER_BYTES, HEADER_BYTES) / 1e6
    print(json.dumps(info, indent=2, sort_keys=True))
    return 0


def build_parser():
    parser = argparse.ArgumentParser(prog="gse", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version",
                        version="gse %s, %s" % (__version__, _build.describe()))
    sub = parser.add_subparsers(dest="command", required=True)
    handlers = {"sim": cmd_sim, "traffic": cmd_traffic, "topo": cmd_topo}

    p = sub.add_parser("sim", help="run the deterministic in-process simulation")
    add_run_options(p, PROTOCOLS)
    p.add_argument("--until-us", type=float, default=None, help="stop the run at this time")

    p = sub.add_parser("compare", help="GSE vs RoCE/PFC on the same fabric and traffic")
    add_run_options(p, PROTOCOLS)
    p.add_argument("--protocols", default=",".join(PROTOCOLS),
                   help="comma-separated protocols to run (default: all)")
    p.add_argument("--until-us", type=float, default=None, help="stop each run at this time")
    p.add_argument("--plot", metavar="FILE.png", help="draw the FCT CDFs (needs matplotlib)")
    handlers["compare"] = cmd_compare

    p = sub.add_parser("traffic", help="generate traffic and write it as a .cm file")
    add_topology_options(p)
    add_traffic_options(p)
    p.add_argument("--out", required=True, metavar="FILE.cm")

    p = sub.add_parser("topo", help="describe a topology")
    add_topology_options(p)

    for name in EXTENSIONS:
        if importlib.util.find_spec(name) is not None:   # not written yet: no command
            handlers.update(importlib.import_module(name).add_commands(sub))
    return parser, handlers


def main(argv=None):
    parser, handlers = build_parser()
    args = parser.parse_args(argv)
    try:
        return handlers[args.command](args)
    except (ConfigError, ValueError, OSError, RuntimeError) as exc:
        print("gse: error: %s" % exc, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
