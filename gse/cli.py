"""The ``gse`` command line: run a simulation and report loss and tail latency.

    gse sim --topology fat-tree --k 8 --link-gbps 100 --traffic permutation \
            --size 2000000 --protocol gse --seed 1 --json out.json
    gse sim --traffic-file flows.cm
    gse traffic --k 8 --traffic incast --senders 32 --out incast.cm
    gse topo --k 8
"""

import argparse
import json
import random
import sys

from gse import __version__
from gse.config import ConfigError, GseConfig, PS_PER_US
from gse.report import format_summary, write_records
from gse.run import PROTOCOLS, run_simulation


def _topology(args):
    from topologies import fat_tree
    if args.topology != "fat-tree":
        raise SystemExit("gse: unknown topology %r (known: fat-tree)" % args.topology)
    return fat_tree(args.k, link_gbps=args.link_gbps, link_delay_ns=args.link_delay_ns,
                    switch_latency_ns=args.switch_latency_ns)


def _traffic(args, topo):
    from gse import traffic
    from gse.cmfile import read_cm
    n = len(topo.hosts)
    if args.traffic_file:
        nodes, messages = read_cm(args.traffic_file)
        if nodes > n:
            raise SystemExit("gse: %s declares %d nodes but the topology has %d hosts"
                             % (args.traffic_file, nodes, n))
        return messages
    rng = random.Random("%s/traffic" % args.seed)
    start = int(args.start_us * PS_PER_US)
    if args.traffic == "permutation":
        return traffic.permutation(n, args.size, rng, start_ps=start)
    if args.traffic == "incast":
        return traffic.incast(n, args.senders, args.size, rng, receiver=args.receiver,
                              start_ps=start)
    if args.traffic == "all-to-all":
        return traffic.all_to_all(n, args.size, start_ps=start)
    if args.traffic == "random":
        dist = traffic.parse_size_dist(args.size_dist or str(args.size))
        return traffic.uniform_random(n, args.messages, rng, dist, args.load, args.link_gbps)
    raise SystemExit("gse: unknown traffic %r" % args.traffic)


def _config(args):
    cfg = GseConfig()
    for item in args.set or ():
        if "=" not in item:
            raise ConfigError("--set takes name=value, got %r" % item)
        name, value = item.split("=", 1)
        cfg.set(name.strip(), value.strip())
    if args.unsched is not None:
        cfg.unsched_bytes = args.unsched
    if args.policy:
        cfg.policy = args.policy
    cfg.validate()
    return cfg


def add_fabric_options(p):
    g = p.add_argument_group("fabric")
    g.add_argument("--topology", default="fat-tree", help="topology kind (fat-tree)")
    g.add_argument("--k", type=int, default=8, help="fat-tree arity, even (default 8: 128 hosts)")
    g.add_argument("--link-gbps", type=float, default=100.0, help="every link's rate")
    g.add_argument("--link-delay-ns", type=int, default=1000,
                   help="propagation per link (default 1000: base RTT ~14 us across pods)")
    g.add_argument("--switch-latency-ns", type=int, default=0)


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


def build_parser():
    parser = argparse.ArgumentParser(prog="gse", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version="gse " + __version__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("sim", help="run the deterministic in-process simulation")
    add_fabric_options(p)
    add_traffic_options(p)
    g = p.add_argument_group("protocol")
    g.add_argument("--protocol", default="gse", choices=PROTOCOLS)
    g.add_argument("--unsched", type=int, default=None,
                   help="unscheduled first window in bytes (0 = off)")
    g.add_argument("--policy", choices=("rr", "srpt"), help="receiver grant policy")
    g.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override any GseConfig field (repeatable)")
    g.add_argument("--loss", type=float, default=0.0, help="random loss per link traversal")
    g.add_argument("--corrupt", type=float, default=0.0,
                   help="random corruption per link traversal")
    g.add_argument("--until-us", type=float, default=None, help="stop the run at this time")
    o = p.add_argument_group("output")
    o.add_argument("--json", metavar="FILE", help="write the summary as JSON")
    o.add_argument("--records", metavar="FILE", help="per-message records (.csv or .jsonl)")
    o.add_argument("--quiet", action="store_true", help="no table on stdout")

    p = sub.add_parser("traffic", help="generate traffic and write it as a .cm file")
    add_fabric_options(p)
    add_traffic_options(p)
    p.add_argument("--out", required=True, metavar="FILE.cm")

    p = sub.add_parser("topo", help="describe a topology")
    add_fabric_options(p)
    return parser


def cmd_sim(args):
    topo = _topology(args)
    messages = _traffic(args, topo)
    if not messages:
        raise SystemExit("gse: the traffic has no messages")
    cfg = _config(args)
    until = -1 if args.until_us is None else int(args.until_us * PS_PER_US)
    result = run_simulation(topo, messages, args.protocol, cfg, args.seed, args.loss,
                            args.corrupt, until)
    s = result.summary
    s["topology"] = {"kind": args.topology, "k": args.k, "hosts": len(topo.hosts),
                     "link_gbps": args.link_gbps, "link_delay_ns": args.link_delay_ns,
                     "switch_latency_ns": args.switch_latency_ns}
    s["traffic"] = (args.traffic_file if args.traffic_file else
                    {"kind": args.traffic, "size": args.size, "seed": args.seed})
    s["config"] = cfg.as_dict()
    if not args.quiet:
        print(format_summary(s))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(s, f, indent=2, sort_keys=True)
            f.write("\n")
    if args.records:
        write_records(args.records, result.records)
    return 0 if s["lost"] == 0 else 1


def cmd_traffic(args):
    from gse.cmfile import write_cm
    topo = _topology(args)
    messages = _traffic(args, topo)
    write_cm(args.out, len(topo.hosts), messages)
    print("wrote %d connections over %d nodes to %s" % (len(messages), len(topo.hosts),
                                                        args.out))
    return 0


def cmd_topo(args):
    topo = _topology(args)
    from gse.packet import HEADER_BYTES
    info = topo.summary()
    info["max_base_rtt_us"] = topo.max_base_rtt_ps(4096 + HEADER_BYTES, HEADER_BYTES) / 1e6
    print(json.dumps(info, indent=2, sort_keys=True))
    return 0


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return {"sim": cmd_sim, "traffic": cmd_traffic, "topo": cmd_topo}[args.command](args)
    except (ConfigError, ValueError, OSError) as exc:
        print("gse: error: %s" % exc, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
