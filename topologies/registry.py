"""Named topologies for the command line and experiment scripts.

Each entry names a builder and the options it reads, so that ``gse sim``, ``gse run``,
``gse replay`` and the experiment scripts all accept the same ``--topology NAME`` and its
parameters.  To add a topology: write its builder (returning a finalized ``Topology``)
and add one ``TopologySpec`` to ``TOPOLOGIES``.
"""

from topologies.fattree import fat_tree
from topologies.topology import TopologyError


class TopologySpec:
    __slots__ = ("name", "build", "help")

    def __init__(self, name, build, help):
        self.name = name
        self.build = build      # build(args) -> Topology, reading the parsed options
        self.help = help


def _fat_tree(args):
    return fat_tree(args.k, link_gbps=args.link_gbps, link_delay_ns=args.link_delay_ns,
                    switch_latency_ns=args.switch_latency_ns)


TOPOLOGIES = {
    "fat-tree": TopologySpec("fat-tree", _fat_tree,
                             "k-ary Fat-Tree (--k): k^3/4 hosts, 1:1 at every tier"),
}


def add_topology_options(parser):
    """The options of every registered topology, in one argument group."""
    g = parser.add_argument_group("fabric")
    g.add_argument("--topology", default="fat-tree", choices=sorted(TOPOLOGIES),
                   help="; ".join("%s: %s" % (n, s.help) for n, s in sorted(TOPOLOGIES.items())))
    g.add_argument("--k", type=int, default=8, help="fat-tree arity, even (default 8: 128 hosts)")
    g.add_argument("--link-gbps", type=float, default=100.0, help="every link's rate")
    g.add_argument("--link-delay-ns", type=int, default=1000,
                   help="propagation per link (default 1000: base RTT ~14 us across pods)")
    g.add_argument("--switch-latency-ns", type=int, default=0)
    return g


def build_topology(args):
    spec = TOPOLOGIES.get(args.topology)
    if spec is None:
        raise TopologyError("unknown topology %r (known: %s)"
                            % (args.topology, ", ".join(sorted(TOPOLOGIES))))
    return spec.build(args)


def describe_topology_args(args):
    """The topology part of a JSON summary."""
    return {"kind": args.topology, "k": args.k, "link_gbps": args.link_gbps,
            "link_delay_ns": args.link_delay_ns, "switch_latency_ns": args.switch_latency_ns}
