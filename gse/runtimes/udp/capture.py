"""``--pcap`` in the UDP and Mininet runtimes: a node's chosen ports, in wall time.

A capture is attached to one node's driver (``gse.runtimes.udp.node``), in the process
that runs it: the one-process UDP runtime attaches one per node that owns a chosen
interface, a Mininet agent (``gse agent``) its own.  For each chosen port it records the
datagrams the port sends (its ``send`` is wrapped and the port told to call it) and the
datagrams the node receives from that port's neighbour (the node's receive callback is
wrapped), stamped with ``time.time_ns()`` when sent or received, in frames with the
sockets' real addresses and ports (``gse.metrics.pcap``).  A run without ``--pcap`` is
untouched.
"""

import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gse.metrics.pcap import (CaptureFile, check_options, frame, ip_bytes, node_mac,
                              parse_ports, write_manifest)

if TYPE_CHECKING:
    from topologies.topology import Topology


class NodeCapture:
    """The captures of ``driver``'s ports ``ports`` into ``directory``."""

    def __init__(self, driver, ports, directory, budget, snaplen, names, clock=time.time_ns):
        self.driver = driver
        self.clock = clock
        self.files = []
        self.incoming = {}        # neighbour's (ip, port) -> (file, frame maker)
        own = driver.endpoint.addr
        os.makedirs(directory, exist_ok=True)
        for pidx in ports:
            port = driver.ports[pidx]
            peer = port.peer
            cf = CaptureFile(os.path.join(directory, "%s-p%d.pcap" % (driver.name, pidx)),
                             budget, snaplen, 0, False,
                             {"node": driver.node, "node_name": driver.name, "port": pidx,
                              "peer": peer, "peer_name": names.get(peer, str(peer)),
                              "peer_port": port.peer_port})
            self.files.append(cf)
            addr = port.peer_addr
            out = _maker(own, addr, node_mac(driver.node), node_mac(max(peer, 0)))
            inn = _maker(addr, own, node_mac(max(peer, 0)), node_mac(driver.node))
            self.incoming[addr] = (cf, inn)
            port.send = self._tap_send(port.send, cf, out)
            port.ep = None                 # the port now calls ``send``, the tap
        self.datagram = self._tap_receive(driver.datagram)
        self.lane_datagram = self._tap_receive(driver.lane_datagram)    # its PFC lane

    def _tap_send(self, send, cf, make):
        clock = self.clock

        def tapped(data, addr):
            cf.add(clock(), make(data))
            send(data, addr)
        return tapped

    def _tap_receive(self, receive):
        incoming = self.incoming
        clock = self.clock

        def tapped(data, addr):
            hit = incoming.get(addr)
            if hit is not None:
                hit[0].add(clock(), hit[1](data))
            receive(data, addr)
        return tapped

    def close(self):
        """Write what is pending; returns the manifest entries."""
        return [cf.close() for cf in self.files]


def _maker(src, dst, mac_src, mac_dst):
    ip_src, ip_dst = ip_bytes(src[0]), ip_bytes(dst[0])
    sport, dport = src[1], dst[1]

    def make(data):
        return frame(bytes(data), ip_src, ip_dst, mac_src, mac_dst, sport, dport)
    return make


def plan(topo: "Topology", options: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """``{node: pcap configuration}`` for the nodes that own a chosen interface, from
    ``options`` = ``{"dir", "spec", "budget", "snaplen"}`` (what a node configuration's
    optional ``pcap`` field holds, with the node's ports)."""
    check_options(options["budget"], options["snaplen"])
    by_node: dict[int, list[int]] = {}
    for node, port in parse_ports(options["spec"], topo):
        by_node.setdefault(node, []).append(port)
    names = {n.id: n.name for n in topo.nodes}
    return {node: {"dir": os.path.abspath(options["dir"]), "ports": ports,
                   "budget": options["budget"], "snaplen": options["snaplen"],
                   "names": {str(k): v for k, v in names.items()}}
            for node, ports in by_node.items()}


def attach(driver, conf):
    """A ``NodeCapture`` of ``driver`` from a node configuration's ``pcap`` field."""
    where = "node %r: field 'pcap'" % driver.name
    if not isinstance(conf, dict):
        raise ValueError("%s must be an object" % where)
    try:
        ports = [int(p) for p in conf["ports"]]
        budget, snaplen = int(conf["budget"]), int(conf["snaplen"])
        directory = str(conf["dir"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError("%s needs dir, ports, budget and snaplen (%s)" % (where, exc)) from None
    check_options(budget, snaplen)
    for p in ports:
        if not 0 <= p < len(driver.ports):
            raise ValueError("%s: no port %d (the node has %d)" % (where, p, len(driver.ports)))
    names = {int(k): v for k, v in (conf.get("names") or {}).items()}
    return NodeCapture(driver, ports, directory, budget, snaplen, names)


def close_all(captures: Sequence[Any], directory: str,
              manifest: str = "captures.json") -> None:
    """Close ``captures`` and write their manifest into ``directory``."""
    entries = []
    for cap in captures:
        entries.extend(cap.close())
    if captures:
        write_manifest(os.path.join(directory, manifest), entries, "wall",
                       {"time_unit": "ns since the Unix epoch"})
