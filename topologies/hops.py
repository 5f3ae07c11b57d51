"""Next hops kept per attachment group: a table the size of the links, not of the hosts.

In a Clos fabric every host hanging off the same switch (its *attachment* switch: an edge
or a leaf) has the same routes from every other switch, so a switch's next hops toward
10,240 hosts are really its next hops toward 160 leaves.  A ``HopRow`` is one switch's
row of ``Topology.next_hops``, stored that way, and the table a switch forwards by
(``switchmodel.switch.Switch`` keeps one of its own):

* ``group_of[dst]``: the destination's group (its attachment switch's index), shared by
  the rows of every switch of the topology (one array of 4-byte integers);
* ``host_port[dst]``: the port of the destination at its attachment switch, also shared;
* ``rows[group]``: this switch's tuple of local ports toward that group, or ``None`` for
  the group that hangs off this switch itself, where the hop is the destination's own
  port (``local[host_port[dst]]``, an interned one-port tuple);
* ``overrides[dst]``: the entries written since (routes recomputed after a failure),
  read first when there are any.

``row[host]`` reads like the list of tuples it replaces (``len``, iteration, slices), so
code that walks paths or writes configuration files needs no change, and a k=32
Fat-Tree's table takes 1,280 switches x 512 groups entries instead of 1,280 x 8,192.
Writing ``row[host] = hops`` goes to that row's ``overrides`` only.  Nothing else is ever
written or replaced after construction, so a switch may hold the parts as C arrays for
good.  A plain sequence of port sequences (a table written by hand, a configuration
file, fabric mode's table extended to leaves) becomes a row of one group per destination
(``HopRow.of``).
"""

from array import array


class HopRow:
    """One switch's next hops toward every destination (see the module docstring)."""

    __slots__ = ("group_of", "host_port", "rows", "local", "overrides")

    def __init__(self, group_of, host_port, rows, local, overrides=None):
        self.group_of = group_of      # array('i'): destination -> group (shared)
        self.host_port = host_port    # array('i'): destination -> port at its own switch
        self.rows = rows              # list: group -> tuple of ports, None: hosts hang here
        self.local = local            # list: port -> (port,), interned (shared)
        self.overrides = {} if overrides is None else overrides   # dst -> tuple, written

    @classmethod
    def of(cls, table):
        """A row of its own over ``table`` (writing to it changes no other): a ``HopRow``
        (its parts shared, its overrides copied) or any sequence of port sequences
        (copied as tuples, one group per destination)."""
        if isinstance(table, HopRow):
            return cls(table.group_of, table.host_port, table.rows, table.local,
                       dict(table.overrides))
        rows = [tuple(hops) for hops in table]
        n = len(rows)
        return cls(array("i", range(n)), array("i", [0]) * n, rows, [])

    def lookup(self, dst):
        """The tuple of ports toward ``dst``, or None if ``dst`` is not in the row."""
        if dst < 0 or dst >= len(self.group_of):
            return None
        if self.overrides:
            hops = self.overrides.get(dst)
            if hops is not None:
                return hops
        hops = self.rows[self.group_of[dst]]
        if hops is None:
            return self.local[self.host_port[dst]]
        return hops

    def __len__(self):
        return len(self.group_of)

    def __getitem__(self, dst):
        if isinstance(dst, slice):
            return [self.lookup(d) for d in range(*dst.indices(len(self.group_of)))]
        hops = self.lookup(dst)
        if hops is None:
            raise IndexError("no destination %r in this row (0..%d)"
                             % (dst, len(self.group_of) - 1))
        return hops

    def __setitem__(self, dst, hops):
        if not 0 <= dst < len(self.group_of):
            raise IndexError("no destination %r in this row (0..%d)"
                             % (dst, len(self.group_of) - 1))
        self.overrides[dst] = tuple(hops)

    def __iter__(self):
        for dst in range(len(self.group_of)):
            yield self.lookup(dst)

    def __eq__(self, other):
        try:
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        except TypeError:
            return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable (__setitem__): unhashable

    def __repr__(self):
        return "HopRow(%d destinations in %d groups, %d written)" % (
            len(self.group_of), len(self.rows), len(self.overrides))


def group_table(n_hosts, attach):
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
