"""Where fabric mode puts its leaves, and how leaf-to-leaf messages are routed.

What every runtime that runs ``gse-fabric`` needs from a topology, apart from the agents
themselves (``switchmodel.fabric``): which switch each host hangs off (its leaf), which
switches are leaves, and a next-hop row for every leaf so that REQUESTs and GRANTs,
which are addressed to a leaf's node id, are routed like its first host's traffic.  The
simulation (``gse.runtimes.sim.fabric_nodes``) and the UDP runtimes
(``gse.runtimes.udp.config``, ``gse.runtimes.udp.fabric``) build their leaves from these,
so both route the same way.  ``topo`` is any ``topologies.Topology`` (duck-typed: this
module imports no topology code).
"""

__all__ = ["attachments", "leaf_routes", "extended_routes", "extend_row", "leaf_ports",
           "spine_fanout", "uplink_widths", "path_entropy"]


def attachments(topo):
    """(leaf_of, leaves): the switch every host hangs off, and those switches in order."""
    leaf_of = []
    for h in topo.hosts:
        peer, _ = topo.peer(h, 0)
        leaf_of.append(peer)
    return leaf_of, sorted(set(leaf_of))


def leaf_routes(topo, switch, leaf_of, leaves):
    """``{leaf: next-hop ports}`` at ``switch`` for every other leaf: a leaf is routed as
    its first host (a leaf has no route to itself)."""
    first = {}
    for h, leaf in enumerate(leaf_of):
        first.setdefault(leaf, h)
    hops = topo.next_hops[switch]
    return {leaf: tuple(hops[first[leaf]]) for leaf in leaves if leaf != switch}


def extend_row(host_rows, n_nodes, routes):
    """A next-hop table indexed by node id: ``host_rows`` (one per host), then an empty
    row per other node except the leaves of ``routes`` (``{leaf: ports}``)."""
    row = [tuple(r) for r in host_rows]
    row.extend([()] * (n_nodes - len(row)))
    for leaf, ports in routes.items():
        row[leaf] = tuple(ports)
    return row


def extended_routes(topo, leaf_of, leaves):
    """Per switch, its next-hop table indexed by node id: hosts as before, plus the leaves
    (routed as their first host; a leaf has no route to itself)."""
    n_hosts = len(topo.hosts)
    tables = {}
    for s in topo.switches:
        tables[s] = extend_row(topo.next_hops[s][:n_hosts], len(topo.nodes),
                               leaf_routes(topo, s, leaf_of, leaves))
    return tables


def leaf_ports(topo, leaf):
    """(host_ports, host_gbps) of a leaf: ``{host: local port}`` and ``{host: link Gb/s}``
    for the hosts attached to it."""
    host_ports, host_gbps = {}, {}
    for port, li in enumerate(topo.nodes[leaf].ports):
        peer, _ = topo.peer(leaf, port)
        if topo.nodes[peer].kind == "host":
            host_ports[peer] = port
            host_gbps[peer] = topo.links[li].gbps
    return host_ports, host_gbps


def spine_fanout(topo, leaf, tables):
    """How many next hops the switches above ``leaf`` choose among by byte 1 of the
    entropy (``FabricSpine``): the most any of its uplink neighbours has toward a host of
    the fabric (k/2 on a k-ary Fat-Tree, 1 on a leaf-spine).  ``tables``: the switches'
    next-hop tables (``extended_routes``)."""
    n_hosts = len(topo.hosts)
    fanout = 1
    for port in range(len(topo.nodes[leaf].ports)):
        peer, _ = topo.peer(leaf, port)
        if topo.nodes[peer].kind == "host" or peer not in tables:
            continue
        row = tables[peer]
        for h in range(n_hosts):
            hops = row[h]
            if hops is not None and len(hops) > fanout:
                fanout = len(hops)
    return fanout


def uplink_widths(leaf_hops, beyond, n_hosts, fanout):
    """``{host: widths}`` for a leaf whose next hops toward ``host`` are ``leaf_hops[host]``:
    how many next hops the switch beyond each of those uplinks has toward ``host``
    (``beyond(port, host)``, at most ``fanout``), for the hosts where the uplinks differ
    (a failure took some of the paths beyond one of them).  What a routing protocol
    that carries link bandwidth (UCMP) tells a leaf; the leaf sprays one slot per live
    path (``FabricLeaf.set_widths``)."""
    out = {}
    for h in range(n_hosts):
        hops = leaf_hops[h]
        if not hops or len(hops) < 2 and fanout < 2:
            continue
        w = tuple(min(fanout, beyond(port, h)) for port in hops)
        if len(set(w)) > 1:      # equal widths: the even walk over the uplinks is right
            out[h] = w
    return out


def path_entropy(rr, n):
    """The entropy of step ``rr`` of a VOQ's walk over ``n`` uplinks with ``paths="leaf"``:
    byte 0 the uplink, byte 1 the choice a spine (``FabricSpine``) makes among its own
    next hops.  Byte 1 is the lap plus the uplink, not the lap alone: where a leaf has
    several parallel links to one spine (the rail Spine-Leaf: 8 per pair), the lap alone
    sent every packet of a lap through that spine down one link to the destination leaf,
    8 times its share, and the spines dropped what collided (a 512-NIC rail all-reduce:
    36,582 drops, 63.6% of the idle-fabric bound; 0 and 91.5% with the uplink added).
    Over ``f`` laps each uplink still takes each of a spine's ``f`` choices once."""
    up = rr % n
    return up | (((rr // n + up) & 0xFF) << 8)
