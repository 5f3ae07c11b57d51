"""A switch's next-hop table, looked up once per packet: per destination group.

The switch asks ``HopTable.lookup(dst)`` for the equal-cost ports toward ``dst``.  The
table keeps what ``topologies.hops.HopRow`` keeps (and shares its arrays, so building a
network copies nothing): ``group_of[dst]`` (the destination's group: the hosts behind
one edge or leaf), ``rows[group]`` (a tuple of ports; ``None`` for the group that hangs
off this switch, whose port is ``local[host_port[dst]]``).  Two small array reads per
packet instead of one read into a row as long as the fabric has hosts: a k=32 switch's
row is 512 entries, not 8,192, which also keeps routing in the CPU's caches.

A plain sequence of tuples (a table written by hand, a configuration file, fabric mode's
table extended to leaves) is taken as one group per destination.  ``table[dst] = hops``
(routes recomputed after a failure) gives ``dst`` a group of its own in this table.
"""

from array import array


class HopTable:
    __slots__ = ("group_of", "host_port", "rows", "local", "private")

    def __init__(self, group_of, host_port, rows, local):
        self.group_of = group_of      # int array: destination -> group
        self.host_port = host_port    # int array: destination -> its port at its own switch
        self.rows = rows              # list: group -> tuple of ports, or None (local group)
        self.local = local            # list: port -> (port,)
        self.private = None           # dict: destination -> its own group, once written

    @staticmethod
    def of(table):
        """A ``HopTable`` over ``table``: a ``HopTable``, a ``topologies.hops.HopRow``
        (its arrays shared), or any sequence of port sequences (copied as tuples)."""
        if isinstance(table, HopTable):
            return table
        rows = getattr(table, "rows", None)
        if rows is not None and hasattr(table, "group_of"):
            return HopTable(table.group_of, table.host_port, list(rows), table.local)
        rows = [tuple(hops) for hops in table]
        n = len(rows)
        return HopTable(array("i", range(n)), array("i", [0]) * n, rows, [])

    def lookup(self, dst):
        """The tuple of ports toward ``dst``, or None if ``dst`` is not in the table."""
        if dst < 0 or dst >= len(self.group_of):
            return None
        hops = self.rows[self.group_of[dst]]
        if hops is None:
            return self.local[self.host_port[dst]]
        return hops

    def __len__(self):
        return len(self.group_of)

    def __getitem__(self, dst):
        hops = self.lookup(dst)
        if hops is None:
            raise IndexError("no destination %r in this table (0..%d)"
                             % (dst, len(self.group_of) - 1))
        return hops

    def __setitem__(self, dst, hops):
        if dst < 0 or dst >= len(self.group_of):
            raise IndexError("no destination %r in this table (0..%d)"
                             % (dst, len(self.group_of) - 1))
        hops = tuple(hops)
        if self.private is None:
            self.private = {}
            self.group_of = array("i", self.group_of)     # this table's own copy from now on
            self.rows = list(self.rows)
        g = self.private.get(dst)
        if g is None:
            self.private[dst] = len(self.rows)
            self.group_of[dst] = len(self.rows)
            self.rows.append(hops)
        else:
            self.rows[g] = hops

    def __iter__(self):
        for dst in range(len(self.group_of)):
            yield self.lookup(dst)
