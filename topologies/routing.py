"""Routes after failures, recomputed only where they change: next hops as plain data.

``Routes(topo, down_links)`` keeps, for every *attachment* switch (the switch a group of
hosts hangs off), the hop distance of every switch to it over the live switch-to-switch
links, and the next-hop table those distances give: ``table[switch][host]`` is the tuple
of local ports on a shortest live path toward ``host`` (empty: no route), exactly
``Topology.next_hops`` when nothing is down.  ``set_down(links)`` takes the new set of
links the switches know to be down and returns only the entries that changed,
``[(switch, host, hops)]``, which is what a runtime hands its switches:

* a group's distances are recomputed (one BFS) only if a link whose state changed can lie
  on one of its shortest paths: a link that went down with its ends one hop apart in that
  group's distances, or a link that came up with its ends at different distances;
* a host's link changes that host's entries alone (a cut-off host has no route anywhere).

``hosts_connected(topo, down_links)`` says whether every host can still reach every other,
what a schedule of failures must keep for every message to be deliverable.
"""

from collections import deque


class Routes:
    """Shortest-path next hops of one topology under a changing set of down links."""

    def __init__(self, topo, down_links=()):
        self.topo = topo
        nodes, links = topo.nodes, topo.links
        n = len(nodes)
        self.is_switch = bytearray(n)
        for s in topo.switches:
            self.is_switch[s] = 1
        # per switch: every switch neighbour, (local port, neighbour, link index)
        self.adj = [()] * n
        for s in topo.switches:
            out = []
            for port, li in enumerate(nodes[s].ports):
                link = links[li]
                v = link.b if link.a == s else link.a
                if self.is_switch[v]:
                    out.append((port, v, li))
            self.adj[s] = tuple(out)
        self.groups = {}          # attachment switch -> [(host, port at the switch, link)]
        self.group_of = {}        # host -> its attachment switch
        for h in topo.hosts:
            li = nodes[h].ports[0]
            link = links[li]
            sw, port = (link.b, link.b_port) if link.a == h else (link.a, link.a_port)
            self.groups.setdefault(sw, []).append((h, port, li))
            self.group_of[h] = sw
        self.down = frozenset(down_links)
        self._intern = {(): ()}
        self.dist = {}
        n_hosts = len(topo.hosts)
        self.table = [None] * n
        for s in topo.switches:
            self.table[s] = [()] * n_hosts
        for s in self.groups:
            self._bfs(s)
            self._fill(s, None)

    def set_down(self, down_links):
        """Links now known to be down (the whole set); returns the changed entries."""
        new = frozenset(down_links)
        changed = new.symmetric_difference(self.down)
        if not changed:
            return []
        went_down = new - self.down
        self.down = new
        links = self.topo.links
        is_switch = self.is_switch
        affected = set()
        for li in changed:
            link = links[li]
            a, b = link.a, link.b
            if not (is_switch[a] and is_switch[b]):
                affected.add(self.group_of[a if not is_switch[a] else b])
                continue
            down = li in went_down
            for s, dist in self.dist.items():
                da, db = dist[a], dist[b]
                if down:
                    if da >= 0 and db >= 0 and (da - db == 1 or db - da == 1):
                        affected.add(s)
                elif da != db:
                    affected.add(s)
        out = []
        for s in sorted(affected):
            self._bfs(s)
            self._fill(s, out)
        return out

    def _bfs(self, s):
        dist = [-1] * len(self.topo.nodes)
        dist[s] = 0
        down, adj = self.down, self.adj
        q = deque((s,))
        while q:
            u = q.popleft()
            du = dist[u] + 1
            for _, v, li in adj[u]:
                if dist[v] < 0 and li not in down:
                    dist[v] = du
                    q.append(v)
        self.dist[s] = dist

    def _fill(self, s, changes):
        """Write group ``s``'s entries into the table; append what changed to ``changes``."""
        dist, down, adj, table = self.dist[s], self.down, self.adj, self.table
        members = self.groups[s]
        intern = self._intern
        for u in self.topo.switches:
            if u == s:
                continue
            if dist[u] < 0:
                hops = ()
            else:
                want = dist[u] - 1
                hops = tuple(port for port, v, li in adj[u]
                             if dist[v] == want and li not in down)
                hops = intern.setdefault(hops, hops)
            row = table[u]
            for h, _, li in members:
                value = () if li in down else hops
                if row[h] != value:
                    row[h] = value
                    if changes is not None:
                        changes.append((u, h, value))
        row = table[s]
        for h, port, li in members:
            value = () if li in down else intern.setdefault((port,), (port,))
            if row[h] != value:
                row[h] = value
                if changes is not None:
                    changes.append((s, h, value))


def hosts_connected(topo, down_links):
    """True if every host can reach every other with ``down_links`` removed."""
    down = frozenset(down_links)
    nodes, links = topo.nodes, topo.links
    start = topo.hosts[0]
    seen = bytearray(len(nodes))
    seen[start] = 1
    todo = [start]
    while todo:
        u = todo.pop()
        if u != start and nodes[u].kind == "host":
            continue                      # hosts do not forward
        for li in nodes[u].ports:
            if li in down:
                continue
            link = links[li]
            v = link.b if link.a == u else link.a
            if not seen[v]:
                seen[v] = 1
                todo.append(v)
    return all(seen[h] for h in topo.hosts)
