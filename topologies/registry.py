"""Named topologies for the command line and experiment scripts.

Each entry names a builder and the options it reads, so that ``gse sim``, ``gse run``,
``gse replay`` and the experiment scripts all accept the same ``--topology NAME`` and its
parameters.  To add a topology: write its builder (returning a finalized ``Topology``)
and add one ``TopologySpec`` to ``TOPOLOGIES`` (and its options to
``add_topology_options``, and its parameters to ``describe_topology_args``).

The size options of the seed's topologies (``--servers``, ``--groups``, ``--spines``,
...) default to None, so each builder applies its own defaults; they are read with
``getattr`` so that a Namespace built by hand for the fat-tree still works.

``PRESETS`` are fixed sizes by name: the seed's 10k-GPU fabrics and the k=32 Fat-Tree
(their sizes are in docs/scale.md; ``gse topo --topology NAME`` prints them).
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


# The seed article's 10k-GPU fabrics (万卡集群), 1,280 servers x 8 NICs, and the k=32
# Fat-Tree: fixed sizes, selectable by name (link options still apply).  A Leaf has 64
# server ports and 64 uplinks (a 128-port switch), 1:1 everywhere.
PRESETS = {
    # 20 groups of 64 servers; per group 8 rail Leaves (NIC i of every server on Leaf i);
    # 64 Spines, each Leaf one link to every Spine: 160 Leaves, 64 Spines of 160 ports,
    # 20,480 links
    "spine-leaf-rail-10k": ("spine_leaf_rail", dict(servers=1280, nics_per_server=8,
                                                    groups=20, spines=64)),
    # 20 pods of one group (8 rail Leaves, 64 servers) and 8 Spines; each Leaf 8 links to
    # each Spine of its pod; Spine j of every pod to the 8 Cores of core group j, 8 links
    # each: 160 Leaves, 160 Spines, 64 Cores of 160 ports, 30,720 links
    "pod-fat-tree-10k": ("pod_fat_tree", dict(pods=20, groups_per_pod=1, servers_per_group=64,
                                              nics_per_server=8, spines_per_pod=8,
                                              cores_per_group=8)),
    # 32 pods x 16 edges x 16 hosts: 8,192 hosts, 512 edges, 512 aggs, 256 cores,
    # 24,576 links
    "fat-tree-k32": ("fat_tree", dict(k=32)),
}

_BUILDERS = {"spine_leaf_rail": spine_leaf_rail, "pod_fat_tree": pod_fat_tree,
             "fat_tree": fat_tree}


def _preset(name):
    kind, params = PRESETS[name]

    def build(args):
        return _BUILDERS[kind](**params, **_links(args))

    def describe(args):
        return dict(params, preset=name)
    return build, describe


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
for _name, _help in (
        ("spine-leaf-rail-10k", "the seed's rail Spine-Leaf at 10k GPUs: 1,280 servers x 8 "
                                "NICs = 10,240 hosts, 20 groups x 8 rail Leaves, 64 Spines"),
        ("pod-fat-tree-10k", "the seed's pod Fat-Tree at 10k GPUs: 10,240 hosts, 20 pods of "
                             "8 rail Leaves and 8 Spines, 8 core groups of 8 Cores"),
        ("fat-tree-k32", "k=32 Fat-Tree: 8,192 hosts, 1,280 switches")):
    _build, _describe = _preset(_name)
    TOPOLOGIES[_name] = TopologySpec(_name, _build, _help, _describe)


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
