"""The rail-optimised two-tier Spine-Leaf of the seed article (section 9, figure 3).

An AI server has ``nics_per_server`` NICs (8: one per GPU).  Servers form groups; a group
has one Leaf per rail, and NIC ``i`` of every server in the group hangs off Leaf ``i`` of
the group ("multi-rail": the same GPU index of every server meets on one Leaf, so the
rail-local traffic of collectives never leaves it).  Every Leaf connects to every Spine
(full mesh), with as many uplinks as it has downlinks, so the Leaves are 1:1.

Each NIC is a host node (the ``Topology`` convention: hosts first, exactly one link each),
named ``s<server>n<nic>`` with id ``server * nics_per_server + nic``; so GPU rank ``r``
placed in the usual way (server ``r // 8``, local rank ``r % 8``) is host ``r``.  Switches:
``leaf<group>_<rail>``, then ``spine<j>``.

Sizes: ``servers`` in total, split evenly into ``groups``; ``spines`` defaults to the
servers per group, so each Leaf has one link to each Spine.  With fewer Spines each
Leaf-Spine pair gets ``servers_per_group / spines`` parallel links (which must divide).
The seed's largest figure (8 Leaves per group, 1:1) is the default shape.

``topo.meta`` keeps ``server_of``, ``nic_of`` (the rail) and ``group_of`` for every host.
"""

from topologies.topology import PS_PER_NS, Topology, TopologyError


def check_count(func, name, value, lo=1):
    """An integer size parameter >= ``lo``, or a TopologyError naming it."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TopologyError("%s: %s must be an integer, got %r" % (func, name, value))
    if value < lo:
        raise TopologyError("%s: %s must be >= %d, got %d" % (func, name, lo, value))
    return value


def link_params(func, link_gbps, link_delay_ns, switch_latency_ns):
    """Validated (gbps, delay ps, switch latency ps) for uniform links."""
    for name, value, positive in (("link_gbps", link_gbps, True),
                                  ("link_delay_ns", link_delay_ns, False),
                                  ("switch_latency_ns", switch_latency_ns, False)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TopologyError("%s: %s must be a number, got %r" % (func, name, value))
        if value != value or value in (float("inf"), float("-inf")):
            raise TopologyError("%s: %s must be finite, got %r" % (func, name, value))
        if (positive and not value > 0) or value < 0:
            raise TopologyError("%s: %s must be %s, got %r"
                                % (func, name, "> 0" if positive else ">= 0", value))
    out = []
    for name, ns in (("link_delay_ns", link_delay_ns), ("switch_latency_ns", switch_latency_ns)):
        ps = ns * PS_PER_NS
        if isinstance(ps, float):
            if ps != round(ps):
                raise TopologyError("%s: %s=%r ns is not a whole number of picoseconds"
                                    % (func, name, ns))
            ps = int(round(ps))
        out.append(ps)
    return float(link_gbps), out[0], out[1]


def add_servers(topo, servers, nics_per_server):
    """Add the NIC host nodes ``s<server>n<nic>`` (ids server * nics + nic)."""
    for s in range(servers):
        for n in range(nics_per_server):
            topo.add_node("s%dn%d" % (s, n), "host", 0)


def spine_leaf_rail(servers=8, nics_per_server=8, groups=1, spines=None, link_gbps=100.0,
                    link_delay_ns=1000, switch_latency_ns=0):
    """Build and finalize the rail-optimised Spine-Leaf (see the module docstring)."""
    f = "spine_leaf_rail"
    check_count(f, "servers", servers)
    check_count(f, "nics_per_server", nics_per_server)
    check_count(f, "groups", groups)
    if servers % groups:
        raise TopologyError("%s: %d servers do not split evenly into %d groups"
                            % (f, servers, groups))
    per_group = servers // groups
    if spines is None:
        spines = per_group
    check_count(f, "spines", spines)
    if per_group % spines:
        raise TopologyError("%s: a Leaf has %d downlinks (servers per group); for 1:1 its "
                            "uplinks must split evenly over the spines, but %d spines do not "
                            "divide %d (use a divisor, e.g. --spines %d)"
                            % (f, per_group, spines, per_group, per_group))
    n_hosts = servers * nics_per_server
    if n_hosts < 2:
        raise TopologyError("%s: needs at least 2 NICs in all, got %d" % (f, n_hosts))
    gbps, delay_ps, latency_ps = link_params(f, link_gbps, link_delay_ns, switch_latency_ns)
    parallel = per_group // spines

    topo = Topology("spine_leaf_rail(servers=%d, nics=%d, groups=%d, spines=%d)"
                    % (servers, nics_per_server, groups, spines), switch_latency_ps=latency_ps)
    add_servers(topo, servers, nics_per_server)
    leaf = [[topo.add_node("leaf%d_%d" % (g, i), "leaf", 1) for i in range(nics_per_server)]
            for g in range(groups)]
    spine = [topo.add_node("spine%d" % j, "spine", 2) for j in range(spines)]
    for s in range(servers):
        g = s // per_group
        for n in range(nics_per_server):
            topo.add_link(s * nics_per_server + n, leaf[g][n], gbps, delay_ps)
    for g in range(groups):
        for i in range(nics_per_server):
            for j in range(spines):
                for _ in range(parallel):
                    topo.add_link(leaf[g][i], spine[j], gbps, delay_ps)
    topo.meta.update(
        kind="spine_leaf_rail", servers=servers, nics_per_server=nics_per_server,
        groups=groups, servers_per_group=per_group, spines=spines,
        links_per_leaf_spine=parallel,
        server_of=[h // nics_per_server for h in range(n_hosts)],
        nic_of=[h % nics_per_server for h in range(n_hosts)],
        group_of=[h // nics_per_server // per_group for h in range(n_hosts)])
    return topo.finalize()
