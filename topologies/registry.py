"""Named topologies for the command line and experiment scripts.

Each entry names a builder and the options it reads, so that ``gse sim``, ``gse run``,
``gse replay`` and the experiment scripts all accept the same ``--topology NAME`` and its
parameters.  To add a topology: write its builder (returning a finalized ``Topology``)
and add one ``TopologySpec`` to ``TOPOLOGIES`` (and its options to
``add_topology_options``, and its parameters to ``describe_topology_args``).

The size options of the seed's topologies (``--servers``, ``--groups``, ``--spines``,
...) default to None, so each builder applies its own defaults; they are read with
``getattr`` so that a Namespace built by hand for the fat-tree still works.
"""

from topologies.fattree import fat_tree
from topologies.podfattree import pod_fat_tree
from topologies.spineleaf import spine_leaf_rail
from topologies.star import star
from topologies.topology import TopologyError


class TopologySpec:
    __slots__ = ("name", "build", "help", "describe")

    def __init__(self, name, build, help, describe=None):
        self.name = name
        self.build = build          # build(args) -> Topology, reading the parsed options
        self.help = help
        self.describe = describe    # describe(args) -> dict of the size parameters used


def _links(args):
    return dict(link_gbps=args.link_gbps, link_delay_ns=args.link_delay_ns,
                switch_latency_ns=args.switch_latency_ns)


def _opt(args, name, default=None):
    value = getattr(args, name, None)
    return default if value is None else value


def _fat_tree(args):
    return fat_tree(args.k, **_links(args))


def _star(args):
    return star(_opt(args, "hosts", 17), **_links(args))


def _spine_leaf_args(args):
    return dict(servers=_opt(args, "servers", 8), nics_per_server=_opt(args, "nics_per_server", 8),
                groups=_opt(args, "groups", 1), spines=_opt(args, "spines"))


def _spine_leaf(args):
    return spine_leaf_rail(**_spine_leaf_args(args), **_links(args))


def _pod_fat_tree_args(args):
    pods = _opt(args, "pods", 2)
    groups = _opt(args, "groups", 2)
    servers = _opt(args, "servers", pods * groups * 4)
    if isinstance(servers, int) and isinstance(pods, int) and isinstance(groups, int) \
            and pods > 0 and groups > 0 and servers % (pods * groups):
        raise TopologyError("pod-fat-tree: --servers %d does not split evenly into %d pods x "
                            "%d groups" % (servers, pods, groups))
    per_group = servers // (pods * groups) if pods > 0 and groups > 0 else servers
    return dict(pods=pods, groups_per_pod=groups, servers_per_group=per_group,
                nics_per_server=_opt(args, "nics_per_server", 8),
                spines_per_pod=_opt(args, "spines"), cores_per_group=_opt(args, "cores_per_group"))


def _pod_fat_tree(args):
    return pod_fat_tree(**_pod_fat_tree_args(args), **_links(args))


TOPOLOGIES = {
    "fat-tree": TopologySpec("fat-tree", _fat_tree,
                             "k-ary Fat-Tree (--k): k^3/4 hosts, 1:1 at every tier",
                             lambda args: {"k": args.k}),
    "star": TopologySpec("star", _star,
                         "one switch with --hosts hosts (default 17), as the HPCC authors' "
                         "ns-3 simulator's DCQCN runs",
                         lambda args: {"hosts": _opt(args, "hosts", 17)}),
    "spine-leaf-rail": TopologySpec(
        "spine-leaf-rail", _spine_leaf,
        "the seed's rail-optimised two-tier Spine-Leaf (--servers, --nics-per-server, "
        "--groups, --spines): one Leaf per rail per group, NIC i of each server on Leaf i, "
        "Spines full mesh, 1:1; host s<S>n<N> = server S NIC N, id S*nics+N",
        _spine_leaf_args),
    "pod-fat-tree": TopologySpec(
        "pod-fat-tree", _pod_fat_tree,
        "the seed's pod-based three-tier Fat-Tree (--pods, --groups per pod, --servers in "
        "all, --nics-per-server, --spines per pod, --cores-per-group): rail Leaves per "
        "group, Leaf-Spine full mesh in a pod, Spine j of every pod to core group j, 1:1",
        _pod_fat_tree_args),
}


def add_topology_options(parser):
    """The options of every registered topology, in one argument group."""
    g = parser.add_argument_group("fabric")
    g.add_argument("--topology", default="fat-tree", choices=sorted(TOPOLOGIES),
                   help="; ".join("%s: %s" % (n, s.help) for n, s in sorted(TOPOLOGIES.items())))
    g.add_argument("--k", type=int, default=8, help="fat-tree arity, even (default 8: 128 hosts)")
    g.add_argument("--servers", type=int, default=None,
                   help="spine-leaf-rail, pod-fat-tree: AI servers in all (default 8 for "
                        "spine-leaf-rail; 4 per group for pod-fat-tree)")
    g.add_argument("--nics-per-server", type=int, default=None,
                   help="spine-leaf-rail, pod-fat-tree: NICs (rails, Leaves per group) per "
                        "server (default 8)")
    g.add_argument("--groups", type=int, default=None,
                   help="spine-leaf-rail: groups in the fabric (default 1); pod-fat-tree: "
                        "groups per pod (default 2)")
    g.add_argument("--spines", type=int, default=None,
                   help="spine-leaf-rail: Spines; pod-fat-tree: Spines per pod (and core "
                        "groups); must divide the servers per group (default: equal to it)")
    g.add_argument("--pods", type=int, default=None, help="pod-fat-tree: pods (default 2)")
    g.add_argument("--hosts", type=int, default=None, help="star: hosts (default 17)")
    g.add_argument("--cores-per-group", type=int, default=None,
                   help="pod-fat-tree: Cores per core group; must divide a Spine's downlinks "
                        "(default: equal to them, one link per Spine-Core pair)")
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
    out = {"kind": args.topology, "k": args.k, "link_gbps": args.link_gbps,
           "link_delay_ns": args.link_delay_ns, "switch_latency_ns": args.switch_latency_ns}
    spec = TOPOLOGIES.get(args.topology)
    if spec is not None and spec.describe is not None and args.topology != "fat-tree":
        del out["k"]
        out.update(spec.describe(args))
    return out
