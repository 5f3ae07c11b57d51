"""Forwarding: which equal-cost next hop a packet takes.

``spray`` picks by the packet's entropy value (per-packet spraying: the sender chooses the
path by choosing the entropy); ``ecmp`` picks by a hash of the flow (source, destination,
message id), so every packet of a flow takes one path, as RoCEv2 does with a fixed UDP source
port.  Each tier of switches mixes in its own salt (``tier_salt``) so that consecutive
tiers choose independently, while the switches of one tier hash alike: in a fabric whose
switches list their equal-cost ports in the same order (a Fat-Tree, a Spine-Leaf), a reply
sent with a packet's entropy then takes the reverse of the packet's path (symmetric
hashing), so an ACK or GRANT that echoes the entropy of the data it answers travels links
that data just crossed.

A destination this switch has no next hop toward (an empty tuple: what routing computes
when failures cut the switch off from it) is a counted drop, ``unreachable``, never an
error: the runtime drops the packet as it drops one for an unknown destination.
"""


import zlib
from array import array

try:
    import cython  # only for cython.compiled: False in pure Python
    cython.compiled
except (ImportError, AttributeError):
    from gse import _no_cython as cython

from topologies.hops import HopRow

# Named so that the compiled build keeps them as 64-bit C constants (cython/switchmodel/
# switch.pxd): a literal above 2^31 would make Cython do the arithmetic on Python ints.
MASK32 = 0xFFFFFFFF
MIX_C1 = 0x85EBCA6B
MIX_C2 = 0xC2B2AE35
FLOW_K_SRC = 0x9E3779B1
FLOW_K_DST = 0x7FEB352D


def mix32(x):
    """A 32-bit integer hash with good avalanche (murmur3's finaliser)."""
    x &= MASK32
    x ^= x >> 16
    x = (x * MIX_C1) & MASK32
    x ^= x >> 13
    x = (x * MIX_C2) & MASK32
    x ^= x >> 16
    return x


def tier_salt(seed, kind):
    """The hash salt of every switch of kind ``kind`` ("edge", "agg", ...) in a run seeded
    with ``seed``: the same in every runtime."""
    return mix32(zlib.crc32(("%s/salt/%s" % (seed, kind)).encode()))


class Switch:
    __slots__ = ("node", "name", "table", "group_of", "host_port", "rows", "local",
                 "overrides", "salt", "spray", "forwarded", "unroutable", "unreachable",
                 "flat", "n_dst", "stride", "hop_of", "hop_sets", "group_p", "host_port_p",
                 "hop_of_p", "hop_sets_p")

    def __init__(self, node, name, next_hops, salt, forwarding):
        if forwarding not in ("spray", "ecmp"):
            raise ValueError("forwarding must be 'spray' or 'ecmp', got %r" % forwarding)
        self.node = node
        self.name = name
        self._hold(HopRow.of(next_hops))
        self.salt = salt & 0xFFFFFFFF
        self.spray = forwarding == "spray"
        self.forwarded = 0
        self.unroutable = 0       # destination unknown (not a host of the table)
        self.unreachable = 0      # destination known, but no next hop toward it

    @property
    def next_hops(self):
        """dst host -> tuple of local ports: this switch's own ``topologies.hops.HopRow``
        (``next_hops[dst] = hops`` changes one entry); assigning any table of port
        sequences replaces it."""
        return self.table

    @next_hops.setter
    def next_hops(self, table):
        self._hold(HopRow.of(table))

    def _hold(self, row):
        """Forward by ``row``, whose parts are never replaced (``topologies.hops``): held
        here too, so that a lookup reads them directly (C arrays in the compiled build)."""
        self.table = row
        self.group_of = row.group_of
        self.host_port = row.host_port
        self.rows = row.rows
        self.local = row.local
        self.overrides = row.overrides
        self._flatten()

    def _flatten(self):
        """``route``'s own copy of ``rows``, without Python objects: ``hop_of[group]``,
        2 bytes, is the port itself where the group has one (most: every hop down the
        tree), -1 where the group hangs off this switch (the hop is ``host_port[dst]``),
        and -2 - s for the s-th of the switch's distinct tuples of several ports (or
        none), which ``hop_sets`` holds one after another, each as its length then its
        ports, ``stride`` integers apart.  A hop down reads one entry, a hop up one more
        of a few hot integers, where it read a tuple through ``rows``' item array (two
        lines of a switch's hundreds).  Tuples told apart by identity (equal ones are
        mostly one object).  ``flat`` is False (``route`` reads ``rows``) when ``local``
        is not ``(p,)`` per port p, or a port or the count of tuples passes 32,767."""
        local_ok = True
        for p, t in enumerate(self.local):
            if len(t) != 1 or t[0] != p:
                local_ok = False
        index = {}
        sets = []
        hop_of = array("h", [-1]) * len(self.rows)
        top = 0
        for g, hops in enumerate(self.rows):
            if hops is None:
                continue
            if len(hops) == 1:
                port = hops[0]
                top = max(top, port)
                if 0 <= port < 32768:
                    hop_of[g] = port
                    continue
                local_ok = False
            k = index.get(id(hops))
            if k is None:
                sets.append(hops)
                k = index[id(hops)] = len(sets) - 1
            if k < 32767 - 2:
                hop_of[g] = -2 - k
        stride = 1
        for hops in sets:
            stride = max(stride, 1 + len(hops))
        hop_sets = array("i", [0]) * (stride * (len(sets) + 1))
        for k, hops in enumerate(sets):
            hop_sets[k * stride] = len(hops)
            for j, port in enumerate(hops):
                hop_sets[k * stride + 1 + j] = port
                top = max(top, port)
        self.flat = (local_ok and len(sets) < 32767 - 2 and top < 32768
                     and len(self.group_of) > 0)
        self.n_dst = len(self.group_of)
        self.stride = stride
        self.hop_of = hop_of
        self.hop_sets = hop_sets
        if cython.compiled and self.flat:
            # the arrays' items as C pointers (the arrays are held above and never
            # resized): a memoryview's data pointer sits among its 200 bytes of shape
            # and strides, a line of the switch apart from the next one
            self.group_p = cython.address(self.group_of[0])
            self.host_port_p = cython.address(self.host_port[0])
            self.hop_of_p = cython.address(self.hop_of[0])
            self.hop_sets_p = cython.address(self.hop_sets[0])

    def hops_to(self, dst):
        """``self.table.lookup(dst)``, read from the parts held here: the tuple of ports
        toward ``dst``, or None if ``dst`` is not in the table."""
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

    def route(self, pkt):
        """The local egress port for ``pkt``, or -1 if its destination is unknown or
        unreachable from here (counted in ``unroutable`` or ``unreachable``)."""
        dst = pkt.dst
        if self.flat and not self.overrides:
            return self._route_flat(pkt, dst)
        hops = self.hops_to(dst)
        if hops is None:
            self.unroutable += 1
            return -1
        n = len(hops)
        if n == 1:
            self.forwarded += 1
            return hops[0]
        if n == 0:
            self.unreachable += 1
            return -1
        self.forwarded += 1
        if self.spray:
            key = pkt.entropy ^ self.salt
        else:
            key = (pkt.src * FLOW_K_SRC + dst * FLOW_K_DST + pkt.msg_id) ^ self.salt
        return hops[mix32(key) % n]

    def _route_flat(self, pkt, dst):
        """``route`` by the flat tables (``_flatten``): the same port, the same counts."""
        if dst < 0 or dst >= self.n_dst:
            self.unroutable += 1
            return -1
        if cython.compiled:
            hop = self.hop_of_p[self.group_p[dst]]
            if hop >= 0:
                self.forwarded += 1
                return hop
            if hop == -1:
                self.forwarded += 1
                return self.host_port_p[dst]
            base = (-2 - hop) * self.stride
            n = self.hop_sets_p[base]
        else:
            hop = self.hop_of[self.group_of[dst]]
            if hop >= 0:
                self.forwarded += 1
                return hop
            if hop == -1:
                self.forwarded += 1
                return self.host_port[dst]
            base = (-2 - hop) * self.stride
            n = self.hop_sets[base]
        if n == 0:
            self.unreachable += 1
            return -1
        self.forwarded += 1
        if n == 1:
            i = base + 1
        else:
            if self.spray:
                key = pkt.entropy ^ self.salt
            else:
                key = (pkt.src * FLOW_K_SRC + dst * FLOW_K_DST + pkt.msg_id) ^ self.salt
            i = base + 1 + mix32(key) % n
        return self.hop_sets_p[i] if cython.compiled else self.hop_sets[i]
