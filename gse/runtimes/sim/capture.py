"""``--pcap`` in the simulation: the chosen interfaces' packets, encoded, in virtual time.

The simulator passes ``Packet`` objects without encoding them; a capture encodes each one
it sees (``gse.wire.fastcodec.encode_packet``: the real 64-byte header, the payload pattern
of an untrimmed DATA packet, the checksum inverted for a packet the link corrupted) and writes
it in a frame (``gse.metrics.pcap``).  It sees a packet where the simulation hands it to
the far end of a link: each tapped direction's ``LinkPort.deliver`` (the event target of
the arrival) is wrapped for the run and put back after, so a run without ``--pcap`` has
no hook at all and a captured run executes the same events (results are identical).

A packet leaving the interface is stamped at the start of its serialisation (arrival
minus propagation delay minus serialisation time), one arriving at its arrival.  PAUSE
and RESUME frames, which the simulator addresses to no node (``dst`` -1), are written
with the neighbour they are sent to as ``dst``, as the UDP runtime sends them.  A packet
lost on the wire (``--loss``) never arrives and is not in the capture.

An observer of ``gse.runtimes.sim.observe`` (it only needs ``close``): build it with
``SimCapture.factory(directory, spec, ...)`` and hand that to ``run_simulation(...,
observers=[...])``.
"""

import os
from collections.abc import Callable
from typing import Any

from gse.metrics.pcap import (DEFAULT_BUDGET, CaptureFile, check_options, file_name, frame,
                              node_ip, node_mac, parse_ports, write_manifest)
from gse.common.handler import Handler
from gse.wire.fastcodec import encode_packet
from gse.wire.linkrate import wire_time_ps
from gse.wire.packet import make_packet


class SimCapture:
    next_stop = -1

    def __init__(self, net, directory, spec="all", budget=DEFAULT_BUDGET, snaplen=65535,
                 keep_records=False, manifest="captures.json"):
        check_options(budget, snaplen)
        topo = net.topo
        self.net = net
        self.directory = directory
        self.manifest = manifest
        os.makedirs(directory, exist_ok=True)
        interfaces = parse_ports(spec, topo)
        port_of = {(p.node, p.port): p for p in net.ports}
        self.files = []
        self.taps = []            # (port, its original deliver)
        tapped = {}               # port -> [(file, outgoing)]
        for node, pidx in interfaces:
            peer, peer_port = topo.peer(node, pidx)
            out_port = port_of[(node, pidx)]
            in_port = port_of[(peer, peer_port)]
            horizon = (out_port.delay + wire_time_ps(65535, out_port.mbps)) // 1000 + 1
            cf = CaptureFile(os.path.join(directory, file_name(topo, node, pidx)), budget,
                             snaplen, horizon, keep_records,
                             {"node": node, "node_name": topo.nodes[node].name, "port": pidx,
                              "peer": peer, "peer_name": topo.nodes[peer].name,
                              "peer_port": peer_port})
            self.files.append(cf)
            tapped.setdefault(out_port, []).append((cf, True))
            tapped.setdefault(in_port, []).append((cf, False))
        for port, users in tapped.items():
            self.taps.append((port, port.deliver))
            port.deliver = self._tap(port, port.deliver, users,
                                     topo.peer(port.node, port.port)[0])
        self.closed = False

    @classmethod
    def factory(cls, directory: str, spec: str = "all", budget: int = DEFAULT_BUDGET,
                snaplen: int = 65535, keep_records: bool = False
                ) -> "Callable[[Any], SimCapture]":
        """``make(net)`` for ``run_simulation(..., observers=[make])``."""
        def make(net):
            return cls(net, directory, spec, budget, snaplen, keep_records)
        return make

    def _tap(self, port, deliver, users, dst_node):
        eq = self.net.eq
        src_node = port.node
        mbps = port.mbps
        delay = port.delay
        mac_src = node_mac(src_node)
        mac_dst = node_mac(dst_node)
        budgets = [cf for cf, _ in users]
        # the compiled queue's event target is the handler itself (its fire is the call)
        call = deliver.fire if isinstance(deliver, Handler) else deliver

        def tap(pkt, in_port):
            if any(cf.packets + len(cf.heap) < cf.budget for cf in budgets):
                now = eq.now
                fields = pkt.fields()
                if pkt.dst < 0:                 # PFC frames: to the neighbour
                    fields = fields[:3] + (dst_node,) + fields[4:]
                wire = _encode(pkt, dst_node)
                data = frame(wire, node_ip(fields[2]), node_ip(fields[3]), mac_src, mac_dst)
                arrive_ns = now // 1000
                start_ns = (now - delay - wire_time_ps(pkt.size, mbps)) // 1000
                for cf, outgoing in users:
                    cf.add(start_ns if outgoing else arrive_ns, data, fields)
            else:
                for cf in budgets:
                    cf.over_budget += 1
            call(pkt, in_port)
        return tap

    def at_stop(self, now):
        pass

    def close(self, now):
        if self.closed:
            return
        self.closed = True
        for port, deliver in self.taps:
            port.deliver = deliver
        entries = [cf.close() for cf in self.files]
        write_manifest(os.path.join(self.directory, self.manifest), entries, "virtual",
                       {"time_unit": "ns of virtual time"})

    def records(self):
        """With ``keep_records``: {file name: [(frame number, t_ns, Packet.fields())]}."""
        return {os.path.basename(cf.path): cf.records for cf in self.files}


def _encode(pkt, neighbour):
    if pkt.dst >= 0:
        return encode_packet(pkt)
    c = make_packet(kind=pkt.kind, src=pkt.src, dst=neighbour, msg_id=pkt.msg_id,
                    psn=pkt.psn, entropy=pkt.entropy, payload_len=pkt.payload_len,
                    flags=pkt.flags, msg_len=pkt.msg_len, credit=pkt.credit, aux=pkt.aux,
                    sack_base=pkt.sack_base, sack_bits=pkt.sack_bits, ts=pkt.ts,
                    prio=pkt.prio)
    c.corrupt = pkt.corrupt
    return encode_packet(c)
