"""Next hops kept per attachment group: a table the size of the links, not of the hosts.

In a Clos fabric every host hanging off the same switch (its *attachment* switch: an edge
or a leaf) has the same routes from every other switch, so a switch's next hops toward
10,240 hosts are really its next hops toward 160 leaves.  A ``HopRow`` is one switch's
row of ``Topology.next_hops``, stored that way:

* ``group_of[host]``: the host's group (its attachment switch's index), shared by the
  rows of every switch of the topology (one array of 4-byte integers);
* ``host_port[host]``: the port of the host at its attachment switch, also shared;
* ``rows[group]``: this switch's tuple of local ports toward that group, or ``None`` for
  the group that hangs off this switch itself, where the hop is the host's own port
  (``local[host_port[host]]``, an interned one-port tuple).

``row[host]`` reads like the list of tuples it replaces (``len``, iteration, slices), so
code that walks paths or writes configuration files needs no change, and a k=32
Fat-Tree's table takes 1,280 switches x 512 groups entries instead of 1,280 x 8,192.
Writing ``row[host] = hops`` (what a runtime does when routes change) gives that host a
group of its own in this row only: the shared arrays are copied for that row first.
"""

from array import array


class HopRow:
    """One switch's next hops toward every host (see the module docstring)."""

    __slots__ = ("group_of", "host_port", "rows", "local", "_private")

    def __init__(self, group_of, host_port, rows, local):
        self.group_of = group_of      # array('i'): host -> group (shared)
        self.host_port = host_port    # array('i'): host -> port at its attachment switch
        self.rows = rows              # list: group -> tuple of ports, None: hosts hang here
        self.local = local            # list: port -> (port,), interned (shared)
        self._private = None          # host -> its own group, once written to

    def __len__(self):
        return len(self.group_of)

    def __getitem__(self, host):
        if isinstance(host, slice):
            return [self[h] for h in range(*host.indices(len(self.group_of)))]
        if host < 0:
            raise IndexError("host %d: hosts are numbered from 0" % host)
        hops = self.rows[self.group_of[host]]
        if hops is None:
            return self.local[self.host_port[host]]
        return hops

    def __setitem__(self, host, hops):
        if not 0 <= host < len(self.group_of):
            raise IndexError("host %r: no such host (0..%d)" % (host, len(self.group_of) - 1))
        hops = tuple(hops)
        if self._private is None:
            self._private = {}
            self.group_of = array("i", self.group_of)     # this row's own copy from now on
            self.rows = list(self.rows)
        g = self._private.get(host)
        if g is None:
            g = self._private[host] = len(self.rows)
            self.rows.append(hops)
            self.group_of[host] = g
        else:
            self.rows[g] = hops

    def __iter__(self):
        for h in range(len(self.group_of)):
            yield self[h]

    def __eq__(self, other):
        try:
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        except TypeError:
            return NotImplemented

    __hash__ = None

    def __repr__(self):
        return "HopRow(%d hosts in %d groups)" % (len(self.group_of), len(self.rows))


def group_table(n_hosts, attach, n_switch_nodes):
    """(group_of, host_port, groups): hosts grouped by attachment switch, in order of
    first appearance.  ``attach[host]`` is (switch, port at the switch) or None for a host
    cut off from every switch, which gets the last group (unreachable everywhere)."""
    group_of = array("i", [0]) * n_hosts
    host_port = array("i", [0]) * n_hosts
    index = {}
    groups = []                       # group -> its attachment switch (None: cut off)
    cut = -1
    for h in range(n_hosts):
        a = attach[h]
        if a is None:
            if cut < 0:
                cut = len(groups)
                groups.append(None)
            group_of[h] = cut
            continue
        sw, port = a
        g = index.get(sw)
        if g is None:
            g = index[sw] = len(groups)
            groups.append(sw)
        group_of[h] = g
        host_port[h] = port
    return group_of, host_port, groups
