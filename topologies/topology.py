"""A topology as plain data: nodes, bidirectional links with rate and delay, and the
equal-cost next hops of every switch toward every host.

Builders (``fattree.fat_tree`` and friends) call ``add_node`` and ``add_link`` and then
``finalize``; afterwards the object is read-only data that the simulator, the switch model and
the metrics share.  Conventions that others rely on:

* hosts are numbered first, so host ids are ``0 .. H-1`` and a host id is also an index into
  per-host tables (message sources and destinations, ``next_hops[switch]``);
* a node's port ``i`` is ``links[node.ports[i]]``, ports numbered in the order links were added;
* ``next_hops[switch][host]`` is a tuple of *local port indices* in ascending order; identical
  tuples are interned, and each switch's row is a ``topologies.hops.HopRow`` stored per
  attachment group (the hosts behind one edge or leaf share their routes), so the table
  grows with switches x groups, not switches x hosts (a k=32 fat-tree: 1,280 x 512);
* base RTTs and bottlenecks are computed per pair of attachment switches and kept
  (``path_profile``): a fabric's few hundred distinct switch paths, never a table of
  host pairs;
* times are integer picoseconds, so serialisation of a 64-byte header at 800 Gb/s is exact.
"""

from collections import deque

from topologies.hops import HopRow, group_table

PS_PER_NS = 1_000

HOST_KINDS = ("host",)
SWITCH_KINDS = ("edge", "agg", "core", "leaf", "spine")
KINDS = HOST_KINDS + SWITCH_KINDS


class TopologyError(ValueError):
    """A topology that cannot be built or used; the message names the parameter or node."""


def serialisation_ps(nbytes, gbps):
    """Picoseconds to clock ``nbytes`` onto a link of ``gbps``, rounded up.

    Computed in integers from the rate in Mb/s, so that 4,160 bytes at 100 Gb/s is exactly
    332,800 ps and event times never depend on float rounding.
    """
    mbps = round(gbps * 1000)
    if mbps <= 0:
        raise TopologyError("link rate %r Gb/s is below 1 Mb/s; serialisation is undefined"
                            % (gbps,))
    return -(-nbytes * 8_000_000 // mbps)


class Link:
    """A bidirectional link; each direction has the same rate and propagation delay."""

    __slots__ = ("index", "a", "a_port", "b", "b_port", "gbps", "delay_ps")

    def __init__(self, index, a, a_port, b, b_port, gbps, delay_ps):
        self.index = index
        self.a = a
        self.a_port = a_port
        self.b = b
        self.b_port = b_port
        self.gbps = gbps
        self.delay_ps = delay_ps

    def other(self, node):
        """(peer node, peer port) seen from ``node``, one end of this link."""
        if node == self.a:
            return self.b, self.b_port
        if node == self.b:
            return self.a, self.a_port
        raise TopologyError("node %d is not an end of link %d (%d-%d)"
                            % (node, self.index, self.a, self.b))

    def __repr__(self):
        return "Link(%d: %d/%d <-> %d/%d, %g Gb/s, %d ps)" % (
            self.index, self.a, self.a_port, self.b, self.b_port, self.gbps, self.delay_ps)


class Node:
    """A host or a switch; ``ports[i]`` is the index of the link on local port ``i``."""

    __slots__ = ("id", "name", "kind", "tier", "ports")

    def __init__(self, id, name, kind, tier):
        self.id = id
        self.name = name
        self.kind = kind
        self.tier = tier
        self.ports = []

    def __repr__(self):
        return "Node(%d %r %s tier %d, %d ports)" % (
            self.id, self.name, self.kind, self.tier, len(self.ports))


def _check_rate(gbps, where):
    if isinstance(gbps, bool) or not isinstance(gbps, (int, float)) or not gbps > 0:
        raise TopologyError("%s: link rate must be a positive number of Gb/s, got %r"
                            % (where, gbps))
    if round(gbps * 1000) <= 0:
        raise TopologyError("%s: link rate %r Gb/s is below the 1 Mb/s resolution"
                            % (where, gbps))
    if gbps == float("inf"):
        raise TopologyError("%s: link rate must be finite, got %r" % (where, gbps))


def _check_delay(delay_ps, where):
    if isinstance(delay_ps, bool) or not isinstance(delay_ps, int) or delay_ps < 0:
        raise TopologyError("%s: delay must be a non-negative integer of picoseconds, got %r"
                            % (where, delay_ps))


class Topology:
    """Nodes, links and equal-cost routes of one fabric (see the module docstring)."""

    __slots__ = ("name", "nodes", "hosts", "switches", "links", "switch_latency_ps",
                 "next_hops", "meta", "_by_name", "_final", "_segments", "_rtt_terms")

    def __init__(self, name, switch_latency_ps=0):
        _check_delay(switch_latency_ps, "topology %r switch_latency_ps" % (name,))
        self.name = name
        self.nodes = []
        self.hosts = []
        self.switches = []
        self.links = []
        self.switch_latency_ps = switch_latency_ps
        self.next_hops = []
        self.meta = {}          # builder parameters and lookups, e.g. fat-tree k and pods
        self._by_name = {}
        self._final = False
        self._segments = {}     # (src switch, dst switch) -> the switch part of a path
        self._rtt_terms = {}    # (link, data bytes, ack bytes) -> its part of a base RTT

    # -- building -------------------------------------------------------------------------

    def add_node(self, name, kind, tier):
        """Add a node and return its id.  Hosts must all be added before any switch."""
        if self._final:
            raise TopologyError("topology %r is finalized; cannot add node %r"
                                % (self.name, name))
        if not isinstance(name, str) or not name:
            raise TopologyError("node name must be a non-empty string, got %r" % (name,))
        if name in self._by_name:
            raise TopologyError("duplicate node name %r (already node %d)"
                                % (name, self._by_name[name]))
        if kind not in KINDS:
            raise TopologyError("node %r: kind %r is not one of %s" % (name, kind, KINDS))
        if isinstance(tier, bool) or not isinstance(tier, int) or tier < 0:
            raise TopologyError("node %r: tier must be a non-negative integer, got %r"
                                % (name, tier))
        if kind == "host":
            if tier != 0:
                raise TopologyError("node %r: a host is tier 0, got tier %d" % (name, tier))
            if self.switches:
                raise TopologyError("node %r: hosts are numbered first; host added after "
                                    "switch %r" % (name, self.nodes[self.switches[0]].name))
        elif tier == 0:
            raise TopologyError("node %r: a switch (%s) has tier >= 1, got 0" % (name, kind))
        nid = len(self.nodes)
        self.nodes.append(Node(nid, name, kind, tier))
        (self.hosts if kind == "host" else self.switches).append(nid)
        self._by_name[name] = nid
        return nid

    def add_link(self, a, b, gbps, delay_ps):
        """Connect nodes ``a`` and ``b``; the link takes the next free port on each end."""
        if self._final:
            raise TopologyError("topology %r is finalized; cannot add link %r-%r"
                                % (self.name, a, b))
        n = len(self.nodes)
        for end in (a, b):
            if isinstance(end, bool) or not isinstance(end, int) or not 0 <= end < n:
                raise TopologyError("link %r-%r: node %r does not exist (ids 0..%d)"
                                    % (a, b, end, n - 1))
        where = "link %s-%s" % (self.nodes[a].name, self.nodes[b].name)
        if a == b:
            raise TopologyError("%s: a link cannot join a node to itself" % where)
        _check_rate(gbps, where)
        _check_delay(delay_ps, where)
        na, nb = self.nodes[a], self.nodes[b]
        link = Link(len(self.links), a, len(na.ports), b, len(nb.ports), float(gbps), delay_ps)
        self.links.append(link)
        na.ports.append(link.index)
        nb.ports.append(link.index)
        return link

    def finalize(self):
        """Validate the graph and compute ``next_hops``; returns self for chaining."""
        if self._final:
            raise TopologyError("topology %r is already finalized" % (self.name,))
        if not self.hosts:
            raise TopologyError("topology %r has no hosts" % (self.name,))
        for h in self.hosts:
            node = self.nodes[h]
            if len(node.ports) != 1:
                raise TopologyError("host %r has %d links; a host has exactly one"
                                    % (node.name, len(node.ports)))
            peer, _ = self.peer(h, 0)
            if self.nodes[peer].kind == "host":
                raise TopologyError("host %r is linked to host %r; hosts attach to a switch"
                                    % (node.name, self.nodes[peer].name))
        self._check_connected()
        self.next_hops = self.compute_next_hops()
        self._final = True
        return self

    def _check_connected(self):
        seen = bytearray(len(self.nodes))
        seen[0] = 1
        todo = [0]
        nodes, links = self.nodes, self.links
        while todo:
            u = todo.pop()
            for li in nodes[u].ports:
                link = links[li]
                v = link.b if link.a == u else link.a
                if not seen[v]:
                    seen[v] = 1
                    todo.append(v)
        if not all(seen):
            lost = [nodes[i].name for i in range(len(nodes)) if not seen[i]]
            raise TopologyError("topology %r is not connected: %d node(s) unreachable from "
                                "%r, e.g. %s" % (self.name, len(lost), nodes[0].name,
                                                 ", ".join(repr(x) for x in lost[:5])))

    def compute_next_hops(self, down_links=()):
        """The next-hop table, optionally with the links in ``down_links`` (indices) removed.

        One BFS over the switch graph per *attachment* switch (the switch hosts hang off), not
        per host: every host behind the same switch has the same routes, so k=16 needs 128
        BFS runs, not 1,024.  A switch with no remaining path to a host gets an empty tuple
        there (only possible with ``down_links``).  Hosts never forward, so the BFS never
        crosses a host.  ``topologies.routing.Routes`` keeps the distances, to recompute
        only what a change of ``down_links`` touches (what a failure schedule uses).
        """
        down = frozenset(down_links)
        nodes, links = self.nodes, self.links
        n = len(nodes)
        is_switch = bytearray(n)
        for s in self.switches:
            is_switch[s] = 1
        # per switch: [(neighbour switch, the neighbour's port back)] over live
        # switch-to-switch links, in port order
        adj = [None] * n
        max_ports = 1
        for s in self.switches:
            lst = []
            ports = nodes[s].ports
            if len(ports) > max_ports:
                max_ports = len(ports)
            for li in ports:
                if li in down:
                    continue
                link = links[li]
                if link.a == s:
                    v, back = link.b, link.b_port
                else:
                    v, back = link.a, link.a_port
                if is_switch[v]:
                    lst.append((v, back))
            adj[s] = lst
        attach = []                       # host -> (attachment switch, port) or None
        for h in self.hosts:
            li = nodes[h].ports[0]
            link = links[li]
            if li in down:
                attach.append(None)       # a host cut off: no switch has a route to it
                continue
            attach.append((link.b, link.b_port) if link.a == h else (link.a, link.a_port))
        group_of, host_port, groups = group_table(len(self.hosts), attach)
        local = [(p,) for p in range(max_ports)]
        intern = {(): ()}
        for hops in local:
            intern[hops] = hops
        empty = ()
        rows = {s: [empty] * len(groups) for s in self.switches}
        for g, s in enumerate(groups):
            if s is None:
                continue                  # the cut-off hosts: () everywhere
            # one BFS: a switch's next hops are its ports back to the switches one hop
            # nearer, collected as the BFS crosses those links (nearer ones first)
            dist = [-1] * n
            dist[s] = 0
            nearer = {}                   # switch -> its ports toward distance - 1
            q = deque((s,))
            while q:
                u = q.popleft()
                du = dist[u] + 1
                for v, back in adj[u]:
                    dv = dist[v]
                    if dv < 0:
                        dist[v] = du
                        q.append(v)
                        nearer[v] = [back]
                    elif dv == du:
                        nearer[v].append(back)
            for u, ports in nearer.items():
                if len(ports) > 1:
                    ports.sort()          # ascending local ports, as documented
                hops = tuple(ports)
                rows[u][g] = intern.setdefault(hops, hops)
            rows[s][g] = None             # the group's own switch: the host's port
        table = [None] * n
        for s in self.switches:
            table[s] = HopRow(group_of, host_port, rows[s], local)
        return table

    # -- queries --------------------------------------------------------------------------

    def _host(self, h, what):
        if isinstance(h, bool) or not isinstance(h, int) or not 0 <= h < len(self.hosts):
            raise TopologyError("%s %r is not a host of %r (hosts 0..%d)"
                                % (what, h, self.name, len(self.hosts) - 1))

    def _require_final(self, what):
        if not self._final:
            raise TopologyError("topology %r: %s needs finalize() first" % (self.name, what))

    def node_id(self, name):
        """The id of the node called ``name``."""
        try:
            return self._by_name[name]
        except KeyError:
            raise TopologyError("topology %r has no node named %r" % (self.name, name)) from None

    def peer(self, node, port):
        """(peer node, peer port) at the far end of local ``port`` of ``node``."""
        if (isinstance(node, bool) or not isinstance(node, int) or not 0 <= node < len(self.nodes)
                or isinstance(port, bool) or not isinstance(port, int)
                or not 0 <= port < len(self.nodes[node].ports)):
            raise TopologyError("peer: node %r has no port %r in %r" % (node, port, self.name))
        li = self.nodes[node].ports[port]
        link = self.links[li]
        if link.a == node and link.a_port == port:
            return link.b, link.b_port
        return link.a, link.a_port

    def host_link(self, host):
        """The only link of ``host``."""
        self._host(host, "host_link: node")
        return self.links[self.nodes[host].ports[0]]

    def _walk(self, src_host, dst_host):
        """(nodes, links) along the first-choice shortest path; links follow the ports taken,
        so parallel links between two switches are told apart."""
        self._require_final("path")
        self._host(src_host, "path: source")
        self._host(dst_host, "path: destination")
        if src_host == dst_host:
            raise TopologyError("path: source and destination are both host %d" % src_host)
        links = self.links
        first = links[self.nodes[src_host].ports[0]]
        node = first.b if first.a == src_host else first.a
        out_nodes = [src_host, node]
        out_links = [first]
        limit = len(self.nodes)
        while node != dst_host:
            hops = self.next_hops[node][dst_host]
            if not hops or len(out_nodes) > limit:
                raise TopologyError("path: no route from %r to host %d"
                                    % (self.nodes[node].name, dst_host))
            link = links[self.nodes[node].ports[hops[0]]]
            node = link.b if link.a == node else link.a
            out_nodes.append(node)
            out_links.append(link)
        return out_nodes, out_links

    def path(self, src_host, dst_host):
        """Node ids along one shortest path, taking the first equal-cost next hop each hop."""
        return self._walk(src_host, dst_host)[0]

    def path_links(self, src_host, dst_host):
        """The links along ``path(src_host, dst_host)``, in order."""
        return self._walk(src_host, dst_host)[1]

    def _attachment(self, host):
        link = self.links[self.nodes[host].ports[0]]
        return link.b if link.a == host else link.a

    def path_profile(self, src, dst):
        """(host links, switch-to-switch links) of ``path(src, dst)``: the middle part
        depends only on the two attachment switches, so it is computed once per pair of
        them and kept (a fabric has few distinct switch paths; hosts never need a table
        of pairs)."""
        self._require_final("path")
        self._host(src, "path: source")
        self._host(dst, "path: destination")
        key = (self._attachment(src), self._attachment(dst))
        mid = self._segments.get(key)
        if mid is None:
            mid = self._segments[key] = tuple(self.path_links(src, dst)[1:-1])
        return (self.host_link(src), self.host_link(dst)), mid

    def base_rtt_ps(self, src, dst, data_wire_bytes, ack_wire_bytes):
        """Unloaded RTT: one data packet out and one ACK back along ``path(src, dst)``.

        Per link: twice the propagation delay plus the serialisation of the data packet and of
        the ACK (store-and-forward at every hop); per switch: its latency in each direction.
        """
        ends, mid = self.path_profile(src, dst)
        total = 2 * self.switch_latency_ps * (len(mid) + 1)
        terms = self._rtt_terms         # each link's part, computed once per packet sizes
        for links in (ends, mid):
            for link in links:
                key = (link.index, data_wire_bytes, ack_wire_bytes)
                term = terms.get(key)
                if term is None:
                    term = terms[key] = (2 * link.delay_ps
                                         + serialisation_ps(data_wire_bytes, link.gbps)
                                         + serialisation_ps(ack_wire_bytes, link.gbps))
                total += term
        return total

    def bottleneck_gbps(self, src, dst):
        """The slowest link rate on ``path(src, dst)``."""
        ends, mid = self.path_profile(src, dst)
        return min(link.gbps for links in (ends, mid) for link in links)

    def max_base_rtt_ps(self, data_wire_bytes, ack_wire_bytes, exhaustive=False):
        """The largest ``base_rtt_ps`` between two hosts.

        By default only host 0 to every other host is measured: in a symmetric topology (a
        fat-tree, a leaf-spine with uniform links) every host sees the same distances, so that
        is the maximum at a cost linear in the number of hosts.  For an asymmetric topology
        pass ``exhaustive=True`` (every ordered pair; quadratic).
        """
        hosts = self.hosts
        if len(hosts) < 2:
            return 0
        sources = hosts if exhaustive else hosts[:1]
        best = 0
        for s in sources:
            for d in hosts:
                if d != s:
                    rtt = self.base_rtt_ps(s, d, data_wire_bytes, ack_wire_bytes)
                    if rtt > best:
                        best = rtt
        return best

    def tier_name(self, node):
        """The label of ``node``'s role used in reports: its kind ("host", "edge", ...)."""
        if isinstance(node, Node):
            return node.kind
        try:
            return self.nodes[node].kind
        except (IndexError, TypeError):
            raise TopologyError("tier_name: no node %r in %r" % (node, self.name)) from None

    def link_tier_name(self, link):
        """A label for a link's layer, lower tier first, e.g. "host-edge" or "agg-core"."""
        na, nb = self.nodes[link.a], self.nodes[link.b]
        if (na.tier, na.kind) > (nb.tier, nb.kind):
            na, nb = nb, na
        return "%s-%s" % (na.kind, nb.kind)

    def summary(self):
        """Counts for logs and result files (JSON-friendly)."""
        kinds = {}
        for node in self.nodes:
            kinds[node.kind] = kinds.get(node.kind, 0) + 1
        rates = {}
        layers = {}
        for link in self.links:
            rates[link.gbps] = rates.get(link.gbps, 0) + 1
            name = self.link_tier_name(link)
            layers[name] = layers.get(name, 0) + 1
        return {
            "name": self.name,
            "hosts": len(self.hosts),
            "switches": len(self.switches),
            "nodes_by_kind": kinds,
            "links": len(self.links),
            "links_by_layer": layers,
            "link_gbps": sorted(rates),
            "links_by_gbps": {("%g" % g): c for g, c in sorted(rates.items())},
            "switch_latency_ps": self.switch_latency_ps,
        }

    def __repr__(self):
        return "Topology(%r: %d hosts, %d switches, %d links)" % (
            self.name, len(self.hosts), len(self.switches), len(self.links))
