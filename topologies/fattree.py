"""The standard k-ary fat-tree (Al-Fares et al., SIGCOMM 2008), as htsim builds it.

k pods; each pod has k/2 edge (ToR) and k/2 aggregation switches, fully meshed; each edge
switch has k/2 hosts; (k/2)^2 core switches, core j wired to aggregation switch j // (k/2) of
every pod.  So k^3/4 hosts: k=4 -> 16, k=8 -> 128 (htsim's ``fat_tree_128_1os``), k=16 -> 1,024.

Numbering (hosts first, as ``Topology`` requires):

* hosts ``h0 .. h{H-1}`` are ids ``0 .. H-1``; host h hangs off global edge ``h // (k/2)``
  and lives in pod ``h // (k/2)^2``;
* then edges ``edge<pod>_<i>``, aggregations ``agg<pod>_<i>``, cores ``core<j>``.

Port order, fixed by the order links are added: an edge switch has its hosts on ports
``0 .. k/2-1`` and aggregation ``i`` of its pod on port ``k/2 + i``; an aggregation switch has
edge ``i`` on port ``i`` and core ``(agg index)*(k/2) + j`` on port ``k/2 + j``; core ``j`` has
pod ``p`` on port ``p``.  The pod of every node is kept in ``topo.meta["pod_of"]`` (None for
cores); ``host_pod`` and ``node_pod`` read it.
"""

from topologies.topology import PS_PER_NS, Topology, TopologyError

MAX_K = 64          # 65,536 hosts: beyond it a pure-Python table of routes is not sensible


def _check_number(name, value, positive):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TopologyError("fat_tree: %s must be a number, got %r" % (name, value))
    if value != value or value in (float("inf"), float("-inf")):
        raise TopologyError("fat_tree: %s must be finite, got %r" % (name, value))
    if positive and not value > 0:
        raise TopologyError("fat_tree: %s must be > 0, got %r" % (name, value))
    if not positive and value < 0:
        raise TopologyError("fat_tree: %s must be >= 0, got %r" % (name, value))


def _ns_to_ps(name, ns):
    """Nanoseconds (int or float) to integer picoseconds, refusing sub-picosecond values."""
    ps = ns * PS_PER_NS
    if isinstance(ps, float):
        if ps != round(ps):
            raise TopologyError("fat_tree: %s=%r ns is not a whole number of picoseconds"
                                % (name, ns))
        ps = int(round(ps))
    return ps


def fat_tree(k, link_gbps=100.0, link_delay_ns=1000, switch_latency_ns=0):
    """Build and finalize a k-ary fat-tree with uniform links.

    ``link_delay_ns`` is the one-way propagation delay of every link and
    ``switch_latency_ns`` the forwarding latency of every switch.  With the defaults a
    cross-pod path is 6 links, 12 us of round-trip propagation, matching htsim's set-up.
    """
    if isinstance(k, bool) or not isinstance(k, int):
        raise TopologyError("fat_tree: k must be an even integer >= 2, got %r" % (k,))
    if k < 2:
        raise TopologyError("fat_tree: k must be an even integer >= 2, got k=%d" % k)
    if k % 2:
        raise TopologyError("fat_tree: k must be even (k/2 hosts and uplinks per edge "
                            "switch), got k=%d" % k)
    if k > MAX_K:
        raise TopologyError("fat_tree: k=%d is too large (at most %d, i.e. %d hosts)"
                            % (k, MAX_K, MAX_K ** 3 // 4))
    _check_number("link_gbps", link_gbps, positive=True)
    _check_number("link_delay_ns", link_delay_ns, positive=False)
    _check_number("switch_latency_ns", switch_latency_ns, positive=False)
    delay_ps = _ns_to_ps("link_delay_ns", link_delay_ns)
    latency_ps = _ns_to_ps("switch_latency_ns", switch_latency_ns)

    half = k // 2
    n_hosts = k * half * half
    topo = Topology("fat_tree(k=%d)" % k, switch_latency_ps=latency_ps)
    pod_of = []
    for h in range(n_hosts):
        topo.add_node("h%d" % h, "host", 0)
        pod_of.append(h // (half * half))
    edge = [[topo.add_node("edge%d_%d" % (p, i), "edge", 1) for i in range(half)]
            for p in range(k)]
    pod_of.extend(p for p in range(k) for _ in range(half))
    agg = [[topo.add_node("agg%d_%d" % (p, i), "agg", 2) for i in range(half)]
           for p in range(k)]
    pod_of.extend(p for p in range(k) for _ in range(half))
    core = [topo.add_node("core%d" % j, "core", 3) for j in range(half * half)]
    pod_of.extend(None for _ in core)

    gbps = float(link_gbps)
    for h in range(n_hosts):
        e = h // half
        topo.add_link(h, edge[e // half][e % half], gbps, delay_ps)
    for p in range(k):
        for i in range(half):
            for j in range(half):
                topo.add_link(edge[p][i], agg[p][j], gbps, delay_ps)
    for p in range(k):
        for i in range(half):
            for j in range(half):
                topo.add_link(agg[p][i], core[i * half + j], gbps, delay_ps)

    topo.meta.update(kind="fat_tree", k=k, pods=k, hosts_per_edge=half,
                     hosts_per_pod=half * half, pod_of=pod_of)
    return topo.finalize()


def node_pod(topo, node):
    """The pod of any node of a fat-tree built by ``fat_tree`` (None for a core switch)."""
    pod_of = topo.meta.get("pod_of")
    if pod_of is None:
        raise TopologyError("node_pod: topology %r is not a fat-tree built by fat_tree()"
                            % (topo.name,))
    if isinstance(node, bool) or not isinstance(node, int) or not 0 <= node < len(pod_of):
        raise TopologyError("node_pod: no node %r in %r" % (node, topo.name))
    return pod_of[node]


def host_pod(topo, host):
    """The pod of ``host`` in a fat-tree built by ``fat_tree``."""
    if isinstance(host, bool) or not isinstance(host, int) or not 0 <= host < len(topo.hosts):
        raise TopologyError("host_pod: %r is not a host of %r (hosts 0..%d)"
                            % (host, topo.name, len(topo.hosts) - 1))
    return node_pod(topo, host)
