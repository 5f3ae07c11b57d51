"""The pod-based three-tier Fat-Tree of the seed article (section 9, figure 4).

Leaf, Spine and Core switches.  A *group* is one Leaf per rail (``nics_per_server``
Leaves, 8 in the article) with its servers, NIC ``i`` of every server on Leaf ``i``; a
*pod* is ``groups_per_pod`` groups and ``spines_per_pod`` Spines, every Leaf of the pod
connected to every Spine of the pod (full mesh); the fabric grows pod by pod.  The Cores
form ``spines_per_pod`` core groups: Spine ``j`` of every pod connects to every Core of
core group ``j`` ("all Spine1 full-mesh to the first Core group, all Spine2 to the
second, ...").  Leaves and Spines are 1:1 (as many uplinks as downlinks).

Sizes and parallel links: a Leaf has ``servers_per_group`` downlinks and reaches each
Spine over ``servers_per_group / spines_per_pod`` parallel links; a Spine has
``leaves_per_pod * that`` downlinks and reaches each Core of its core group over
``downlinks / cores_per_group`` parallel links.  Both quotients must be whole numbers
(for 1:1 with uniform link rates).  Defaults give single links everywhere.

Naming: hosts ``s<server>n<nic>`` (id ``server * nics + nic``, servers numbered pod by
pod, group by group), ``leaf<pod>_<group>_<rail>``, ``spine<pod>_<j>``, ``core<j>_<c>``.
``topo.meta`` keeps ``server_of``, ``nic_of`` and ``group_of`` (global group index) for
every host, and ``pod_of`` for every node (None for a Core), as ``fattree.node_pod`` reads.
"""

from topologies.spineleaf import add_servers, check_count, link_params
from topologies.topology import Topology, TopologyError


def pod_fat_tree(pods=2, groups_per_pod=2, servers_per_group=4, nics_per_server=8,
                 spines_per_pod=None, cores_per_group=None, link_gbps=100.0,
                 link_delay_ns=1000, switch_latency_ns=0):
    """Build and finalize the pod-based Fat-Tree (see the module docstring)."""
    f = "pod_fat_tree"
    check_count(f, "pods", pods)
    check_count(f, "groups_per_pod", groups_per_pod)
    check_count(f, "servers_per_group", servers_per_group)
    check_count(f, "nics_per_server", nics_per_server)
    if spines_per_pod is None:
        spines_per_pod = servers_per_group
    check_count(f, "spines_per_pod", spines_per_pod)
    if servers_per_group % spines_per_pod:
        raise TopologyError("%s: a Leaf has %d downlinks (servers per group); for 1:1 they "
                            "must split evenly over the %d spines of its pod"
                            % (f, servers_per_group, spines_per_pod))
    leaves_per_pod = groups_per_pod * nics_per_server
    leaf_parallel = servers_per_group // spines_per_pod
    spine_down = leaves_per_pod * leaf_parallel
    if cores_per_group is None:
        cores_per_group = spine_down
    check_count(f, "cores_per_group", cores_per_group)
    if spine_down % cores_per_group:
        raise TopologyError("%s: a Spine has %d downlinks; for 1:1 its uplinks must split "
                            "evenly over the %d cores of its core group"
                            % (f, spine_down, cores_per_group))
    spine_parallel = spine_down // cores_per_group
    servers = pods * groups_per_pod * servers_per_group
    n_hosts = servers * nics_per_server
    if n_hosts < 2:
        raise TopologyError("%s: needs at least 2 NICs in all, got %d" % (f, n_hosts))
    gbps, delay_ps, latency_ps = link_params(f, link_gbps, link_delay_ns, switch_latency_ns)

    topo = Topology("pod_fat_tree(pods=%d, groups=%d, servers/group=%d, nics=%d, "
                    "spines/pod=%d, cores/group=%d)"
                    % (pods, groups_per_pod, servers_per_group, nics_per_server,
                       spines_per_pod, cores_per_group), switch_latency_ps=latency_ps)
    add_servers(topo, servers, nics_per_server)
    leaf = [[[topo.add_node("leaf%d_%d_%d" % (p, g, i), "leaf", 1)
              for i in range(nics_per_server)] for g in range(groups_per_pod)]
            for p in range(pods)]
    spine = [[topo.add_node("spine%d_%d" % (p, j), "spine", 2) for j in range(spines_per_pod)]
             for p in range(pods)]
    core = [[topo.add_node("core%d_%d" % (j, c), "core", 3) for c in range(cores_per_group)]
            for j in range(spines_per_pod)]
    for s in range(servers):
        p, rest = divmod(s, groups_per_pod * servers_per_group)
        g = rest // servers_per_group
        for n in range(nics_per_server):
            topo.add_link(s * nics_per_server + n, leaf[p][g][n], gbps, delay_ps)
    for p in range(pods):
        for g in range(groups_per_pod):
            for i in range(nics_per_server):
                for j in range(spines_per_pod):
                    for _ in range(leaf_parallel):
                        topo.add_link(leaf[p][g][i], spine[p][j], gbps, delay_ps)
    for p in range(pods):
        for j in range(spines_per_pod):
            for c in range(cores_per_group):
                for _ in range(spine_parallel):
                    topo.add_link(spine[p][j], core[j][c], gbps, delay_ps)
    per_pod = groups_per_pod * servers_per_group
    topo.meta.update(
        kind="pod_fat_tree", pods=pods, groups_per_pod=groups_per_pod,
        servers_per_group=servers_per_group, nics_per_server=nics_per_server,
        spines_per_pod=spines_per_pod, cores_per_group=cores_per_group,
        links_per_leaf_spine=leaf_parallel, links_per_spine_core=spine_parallel,
        servers=servers,
        server_of=[h // nics_per_server for h in range(n_hosts)],
        nic_of=[h % nics_per_server for h in range(n_hosts)],
        group_of=[h // nics_per_server // servers_per_group for h in range(n_hosts)],
        pod_of=([h // nics_per_server // per_pod for h in range(n_hosts)]
                + [p for p in range(pods) for _ in range(leaves_per_pod)]
                + [p for p in range(pods) for _ in range(spines_per_pod)]
                + [None] * (spines_per_pod * cores_per_group)))
    return topo.finalize()
