"""pcap captures of a run: Ethernet/IPv4/UDP frames carrying the project's real datagrams.

A capture point is an *interface*: one port of one node, which sees both directions of
its link, as ``tcpdump -i`` on that port would.  Every runtime writes the same files
(``--pcap DIR``, docs/pcap.md):

* ``DIR/<node name>-p<port>.pcap``: nanosecond pcap (magic ``a1b23c4d``), link type
  Ethernet; each frame's UDP payload is the datagram of docs/wire-format.md (the 64-byte
  header, then the payload of an untrimmed DATA packet), cut to ``snaplen`` bytes of frame
  if asked (the record keeps the frame's real length);
* ``DIR/captures.json`` (one per writer: ``captures-<node>.json`` for a Mininet agent):
  the interfaces, files, packet counts and clock.

Timestamps: virtual time in the simulation (a packet leaving the interface at the start
of its serialisation, one arriving when its last bit is in), wall time (``time_ns``)
elsewhere.  Addresses: in the simulation, node ``n`` is IPv4 ``10.x.y.z`` with
``n = x*65536 + y*256 + z`` and MAC ``02:00:00:x:y:z``, the IP header carries the
datagram's end-to-end source and destination and the MACs the hop, and both UDP ports are
``UDP_PORT`` (47000, the UDP runtime's default, where the Lua dissector listens); the UDP
and Mininet runtimes write the sockets' real addresses and ports.

Files are written with dpkt (``pip install 'gse-transport[pcap]'``): its file header and
record headers; the frames' Ethernet, IPv4 and UDP headers are packed here (``frame``).
``--pcap-ports SPEC`` chooses the interfaces (``parse_ports``); ``--pcap-budget N`` caps
the packets of each file (the rest are counted, not written).
"""

from __future__ import annotations

import heapq
import json
import os
import struct
from collections.abc import Sequence

TYPE_CHECKING = False   # typing's own, without importing typing (2.9 ms of a start)
if TYPE_CHECKING:
    from typing import Any
    from topologies.topology import Topology

UDP_PORT = 47000
DEFAULT_BUDGET = 10_000
MIN_SNAPLEN = 14 + 20 + 8 + 64      # Ethernet, IPv4, UDP, the project's header


def dpkt_module():
    try:
        import dpkt
    except ImportError as exc:
        raise RuntimeError("pcap captures need dpkt: pip install 'gse-transport[pcap]'"
                           ) from exc
    return dpkt


def node_ip(n: int) -> bytes:
    """The simulation's IPv4 address of node ``n`` (4 bytes)."""
    if not 0 <= n < 1 << 24:
        raise ValueError("node id %r has no 10.0.0.0/8 address" % (n,))
    return bytes((10, (n >> 16) & 255, (n >> 8) & 255, n & 255))


def node_mac(n: int) -> bytes:
    return bytes((2, 0, 0, (n >> 16) & 255, (n >> 8) & 255, n & 255))


def ip_bytes(text: str) -> bytes:
    parts = [int(p) for p in text.split(".")]
    if len(parts) != 4 or not all(0 <= p <= 255 for p in parts):
        raise ValueError("not an IPv4 address: %r" % (text,))
    return bytes(parts)


_ETH_IP = struct.Struct("!6s6sH")
_IPV4 = struct.Struct("!BBHHHBBH4s4s")
_UDP = struct.Struct("!HHHH")


def frame(datagram: bytes, ip_src: bytes, ip_dst: bytes, mac_src: bytes, mac_dst: bytes,
          sport: int = UDP_PORT, dport: int = UDP_PORT) -> bytes:
    """An Ethernet II / IPv4 / UDP frame around ``datagram``.

    Packed with ``struct``, not built with dpkt's packet classes: dpkt's construction was
    three quarters of a capture's cost (docs/pcap.md, "Speed").  The IPv4 header checksum
    is computed; the UDP checksum is 0 ("none", which IPv4 allows), since computing it
    would read every payload byte again.  ``tests/test_pcap.py`` parses the frames with
    dpkt and checks every header field."""
    n = len(datagram)
    total = 28 + n
    hdr = _IPV4.pack(0x45, 0, total, 0, 0, 64, 17, 0, ip_src, ip_dst)
    c = sum(struct.unpack("!10H", hdr))
    c = (c & 0xFFFF) + (c >> 16)
    c = (c & 0xFFFF) + (c >> 16)
    hdr = hdr[:10] + struct.pack("!H", ~c & 0xFFFF) + hdr[12:]
    return b"".join((_ETH_IP.pack(mac_dst, mac_src, 0x0800), hdr,
                     _UDP.pack(sport, dport, 8 + n, 0), datagram))


# -- which interfaces ----------------------------------------------------------------------

def parse_ports(spec: str, topo: "Topology") -> list[tuple[int, int]]:
    """The interfaces ``[(node, port)]`` a ``--pcap-ports`` SPEC names, in topology order.

    SPEC is a comma-separated list of: ``all`` (every link once, at its lower-tier end:
    every host NIC and every switch uplink); ``host:N`` or a host's name (its NIC);
    ``NODE:PORT`` with a node's name or id (``edge0_1:2``); ``tier:KIND`` (every port of
    every node of that kind: host, edge, agg, core, leaf, spine), optionally
    ``tier:KIND:up`` or ``tier:KIND:down``."""
    names = {node.name: node.id for node in topo.nodes}
    chosen = set()
    if not spec or not spec.strip():
        raise ValueError("--pcap-ports: empty specification")
    for item in spec.split(","):
        item = item.strip()
        where = "--pcap-ports item %r" % item
        if item == "all":
            for link in topo.links:
                a, b = (link.a, link.a_port), (link.b, link.b_port)
                chosen.add(a if topo.nodes[a[0]].tier <= topo.nodes[b[0]].tier else b)
            continue
        parts = item.split(":")
        if parts[0] == "tier":
            if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] not in ("up", "down")):
                raise ValueError("%s: expected tier:KIND or tier:KIND:up|down" % where)
            kinds = {node.kind for node in topo.nodes}
            if parts[1] not in kinds:
                raise ValueError("%s: no node of kind %r (kinds: %s)"
                                 % (where, parts[1], ", ".join(sorted(kinds))))
            for node in topo.nodes:
                if node.kind != parts[1]:
                    continue
                for p in range(len(node.ports)):
                    peer, _ = topo.peer(node.id, p)
                    up = topo.nodes[peer].tier > node.tier
                    if len(parts) == 2 or (parts[2] == "up") == up:
                        chosen.add((node.id, p))
            continue
        if parts[0] == "host":
            if len(parts) != 2:
                raise ValueError("%s: expected host:N" % where)
            n = _int(parts[1], where)
            if not 0 <= n < len(topo.hosts):
                raise ValueError("%s: host %d outside 0..%d" % (where, n, len(topo.hosts) - 1))
            chosen.add((topo.hosts[n], 0))
            continue
        if len(parts) == 1:
            nid = names.get(parts[0])
            if nid is None or topo.nodes[nid].kind != "host":
                raise ValueError("%s: not a host name, host:N, NODE:PORT, tier:KIND or all"
                                 % where)
            chosen.add((nid, 0))
            continue
        if len(parts) != 2:
            raise ValueError("%s: expected NODE:PORT" % where)
        nid = names.get(parts[0])
        if nid is None:
            nid = _int(parts[0], where, "a node name or id")
            if not 0 <= nid < len(topo.nodes):
                raise ValueError("%s: no node %d" % (where, nid))
        p = _int(parts[1], where)
        if not 0 <= p < len(topo.nodes[nid].ports):
            raise ValueError("%s: %s has ports 0..%d" % (where, topo.nodes[nid].name,
                                                        len(topo.nodes[nid].ports) - 1))
        chosen.add((nid, p))
    return sorted(chosen)


def _int(text, where, what="an integer"):
    try:
        return int(text)
    except ValueError:
        raise ValueError("%s: %r is not %s" % (where, text, what)) from None


def file_name(topo: "Topology", node: int, port: int) -> str:
    return "%s-p%d.pcap" % (topo.nodes[node].name, port)


# -- writing -------------------------------------------------------------------------------

class CaptureFile:
    """One interface's pcap file.  Frames may be handed in slightly out of time order (a
    packet leaving is known only when it arrives); they wait in a heap until nothing
    earlier can come (``horizon_ns`` behind the latest), then are written in order."""

    def __init__(self, path, budget, snaplen, horizon_ns=0, keep=False, info=None):
        dpkt = dpkt_module()
        self.path = path
        self.budget = budget
        self.snaplen = snaplen
        self.horizon = horizon_ns
        self.f = open(path, "wb")
        self.writer = dpkt.pcap.Writer(self.f, snaplen=snaplen, nano=True)
        self.heap = []
        self.seq = 0
        self.latest = 0
        self.packets = 0          # written
        self.over_budget = 0      # seen after the budget was spent
        self.first_ns = None
        self.last_ns = None
        self.keep = keep
        self.records = []         # with keep: (frame number, t_ns, fields) in file order
        self.info = dict(info or {})

    def add(self, t_ns, data, fields=None):
        if self.packets + len(self.heap) >= self.budget:
            self.over_budget += 1
            return
        self.seq += 1
        heapq.heappush(self.heap, (t_ns, self.seq, data, fields))
        if t_ns > self.latest:
            self.latest = t_ns
        limit = self.latest - self.horizon
        while self.heap and self.heap[0][0] <= limit:
            self._write(heapq.heappop(self.heap))

    def _write(self, item):
        t_ns, _, data, fields = item
        n = len(data)
        cut = data if n <= self.snaplen else data[:self.snaplen]
        sec, nsec = divmod(t_ns, 1_000_000_000)
        self.f.write(self.writer._pack_hdr(sec, nsec, len(cut), n) + cut)
        self.packets += 1
        if self.first_ns is None:
            self.first_ns = t_ns
        self.last_ns = t_ns
        if self.keep:
            self.records.append((self.packets, t_ns, fields))

    def close(self):
        while self.heap:
            self._write(heapq.heappop(self.heap))
        self.f.close()
        d = dict(self.info)
        d.update(file=os.path.basename(self.path), packets=self.packets,
                 not_written_over_budget=self.over_budget, first_ns=self.first_ns,
                 last_ns=self.last_ns)
        return d


def check_options(budget: int, snaplen: int) -> None:
    if budget <= 0:
        raise ValueError("--pcap-budget must be positive, got %r" % (budget,))
    if snaplen < MIN_SNAPLEN:
        raise ValueError("--pcap-snaplen must keep the headers: at least %d bytes, got %r"
                         % (MIN_SNAPLEN, snaplen))


def write_manifest(path: str, files: Sequence[dict[str, Any]], clock: str,
                   extra: dict[str, Any] | None = None) -> str:
    d = {"clock": clock, "udp_port": UDP_PORT, "interfaces": files}
    d.update(extra or {})
    with open(path, "w") as f:
        json.dump(d, f, indent=2, sort_keys=True)
        f.write("\n")
    return path


def read_manifests(directory: str) -> list[dict[str, Any]]:
    """Every interface of every ``captures*.json`` in ``directory``."""
    out = []
    for name in sorted(os.listdir(directory)):
        if name.startswith("captures") and name.endswith(".json"):
            with open(os.path.join(directory, name)) as f:
                out.extend(json.load(f)["interfaces"])
    return out
