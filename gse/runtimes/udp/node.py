"""Nodes of the UDP runtimes: the sans-I/O agents behind real sockets.

A switch node decodes every datagram, routes it (``Switch.route``) and offers it to the
egress port toward the next hop; a host node hands it to its agent and lets the agent's
NIC pull whatever the agent has to send.  Every datagram received is decoded
(``gse.wire.fastcodec.decode_header``: every check, the payload left in the datagram; a
switch decodes into one reusable packet); a malformed one is counted by reason
(``WireError.reason``) and dropped, a valid one from an address that is not a neighbour
is counted as ``foreign`` and dropped, and a host checks every DATA payload against the documented
pattern.  The links themselves are in ``gse.runtimes.udp.link``.

PAUSE and RESUME are hop by hop: every node passes them through ``admit_pfc`` first.  A
port takes them only where its link's configuration sends them (``pfc_limit``: the
configured quanta; 0 where the protocol runs with PFC off, or the neighbour is a host,
which never pauses), a PAUSE holds for at most that many quanta, and under ``--secure``
the frame must authenticate under the link's key (``gse.runtimes.udp.secure.LinkAuth``).
Each refusal and each cut is counted (``pfc_in``).  A node may have a PFC lane (``lane``:
a second endpoint that only its neighbours' PAUSE and RESUME are sent to, read before its
data socket; ``gse.runtimes.udp.io.Reactor``); every frame admitted has its lag counted,
from when its switch made it (the frame's ``ts``) to when this node obeys it
(``pfc_lag``, the first ``PFC_LAG_KEPT``; on the run's shared clock: ``clock_offset_ps``).
"""

from gse.agents.driver import AgentDriver
from gse.runtimes.udp.io import record_error
from gse.runtimes.udp.link import DEFAULT_SLACK_PS, NIC_BURST, EmulatedPort, HostNic, copy_packet
from gse.wire.codec import MAX_DATAGRAM, REASONS, WireError, verify_payload
from gse.wire.fastcodec import decode_header, decode_header_into, pattern_intact, payload_intact
from gse.wire.packet import DATA, F_TRIMMED, PAUSE, PRIO_CONTROL, PRIO_DATA, RESUME, new_packet

PFC_LAG_KEPT = 4096     # PFC frames' lags kept per node (the count and the largest: all)

__all__ = ["DEFAULT_SLACK_PS", "NIC_BURST", "EmulatedPort", "HostNic", "NodeDriver",
           "SwitchDriver", "HostDriver", "HostAgentDriver"]


class NodeDriver:
    """What hosts and switches share: a socket, ports, counters of what was received."""

    __slots__ = ("node", "name", "kind", "sched", "endpoint", "ports", "port_of",
                 "malformed", "foreign", "datagrams", "max_datagram", "codec", "pfc_in",
                 "link_auth", "lane", "lane_datagrams", "pfc_lags", "pfc_lag_n",
                 "pfc_lag_max", "clock_offset_ps")

    def __init__(self, node, name, kind, sched, endpoint):
        self.node = node
        self.name = name
        self.kind = kind
        self.sched = sched
        self.endpoint = endpoint
        self.ports = []
        self.port_of = {}           # neighbour's (ip, port) -> local port
        self.malformed = {reason: 0 for reason in REASONS}
        self.foreign = 0
        self.datagrams = 0
        self.max_datagram = MAX_DATAGRAM   # larger than the fabric's MTU: "oversized"
        self.codec = None                  # another wire profile's codec, or None
        self.pfc_in = {"accepted": 0, "clamped": 0, "pfc_off": 0}
        self.link_auth = None              # --secure: PFC frames' keys (secure.LinkAuth)
        self.lane = None                   # the PFC lane's endpoint, or None
        self.lane_datagrams = 0            # datagrams it received (lane_datagram)
        self.pfc_lags = []                 # ps from a PFC frame's making to its admission
        self.pfc_lag_n = 0
        self.pfc_lag_max = 0
        # this node's time 0 on the run's shared clock (an agent up late counts from its
        # own start): PFC frames carry their making on the shared clock
        self.clock_offset_ps = 0

    def _decode(self, data, addr, into):
        """The packet (header fields; an untrimmed DATA packet's payload stays in ``data``)
        with ``ingress`` set to the port it came in by, or None after counting why not.
        ``into``: a packet to decode into (or None for a new one)."""
        self.datagrams += 1
        try:
            if self.codec is not None:        # (decodes the payload too)
                pkt = self.codec.decode(data, self.max_datagram)
            elif into is None:
                pkt = decode_header(data, self.max_datagram)
            else:
                pkt = decode_header_into(into, data, self.max_datagram)
        except WireError as exc:
            self.malformed[exc.reason] += 1
            return None
        in_port = self.port_of.get(addr, -1)
        if in_port < 0:
            if len(addr) > 2:             # IPv6: (ip, port, flowinfo, scope)
                in_port = self.port_of.get(addr[:2], -1)
            if in_port < 0:
                self.foreign += 1
                return None
        pkt.ingress = in_port
        return pkt

    def lane_datagram(self, data, addr):
        """A datagram of the PFC lane: counted, then as any other (``datagram``)."""
        self.lane_datagrams += 1
        self.datagram(data, addr)

    def admit_pfc(self, pkt, data):
        """The quanta a PAUSE (or RESUME: 0) that came in by ``pkt.ingress`` may hold, or
        -1: refused, and counted by reason."""
        port = self.ports[pkt.ingress]
        limit = port.pfc_limit
        pfc_in = self.pfc_in
        if limit <= 0:                  # PFC off on this link (or a host pausing)
            pfc_in["pfc_off"] += 1
            return -1
        auth = self.link_auth
        if auth is not None and not auth.open(pkt, data):
            return -1                   # counted by the link's channels
        pfc_in["accepted"] += 1
        lag = self.sched.now() + self.clock_offset_ps - pkt.ts   # made at ts (shared clock)
        self.pfc_lag_n += 1
        if lag > self.pfc_lag_max:
            self.pfc_lag_max = lag
        if self.pfc_lag_n <= PFC_LAG_KEPT:
            self.pfc_lags.append(lag)
        if pkt.kind != PAUSE:
            return 0
        quanta = pkt.credit
        if quanta > limit:              # more than the link's configuration ever sends
            pfc_in["clamped"] += 1
            return limit
        return quanta

    def counters(self, now):
        """JSON-ready counters of this node (what ``gse agent`` writes)."""
        ep = self.endpoint
        pfc_in = dict(self.pfc_in)
        if self.link_auth is not None:
            for key, n in self.link_auth.counters().items():
                if key not in ("opened", "sealed"):
                    pfc_in[key] = n
            pfc_in["sealed"] = self.link_auth.sealed
        return {"node": self.node, "name": self.name, "kind": self.kind,
                "datagrams": self.datagrams, "malformed": dict(self.malformed),
                "malformed_total": sum(self.malformed.values()), "foreign": self.foreign,
                "sent": ep.sent, "send_blocked": ep.send_blocked,
                "send_errors": ep.send_errors, "recv_errors": ep.recv_errors,
                "pfc_in": pfc_in, "ports": [p.stats(now) for p in self.ports],
                **self._lane_counters()}

    def _lane_counters(self):
        out = {}
        if self.pfc_lag_n:
            out["pfc_lag"] = {"frames": self.pfc_lag_n, "max_ps": self.pfc_lag_max,
                              "kept_ps": list(self.pfc_lags)}
        lane = self.lane
        if lane is not None:
            out["pfc_lane"] = {"datagrams": self.lane_datagrams,
                               "recv_errors": lane.recv_errors, "errors": len(lane.errors)}
        return out


class SwitchDriver(NodeDriver):
    """Forwards every datagram it receives.  Datagrams are decoded into one reusable packet
    (``scratch``), nothing keeps it: a port copies it when it must queue it, as does the
    switch-latency path."""

    __slots__ = ("switch", "pfc", "latency", "unroutable", "scratch", "refresh_fn",
                 "route_updates", "plane")

    def __init__(self, node, name, kind, sched, endpoint, switch, latency_ps, pfc):
        NodeDriver.__init__(self, node, name, kind, sched, endpoint)
        self.scratch = new_packet(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        self.switch = switch
        self.latency = latency_ps
        self.pfc = pfc
        self.unroutable = 0
        self.refresh_fn = self._refresh_pause
        self.route_updates = None   # gse.runtimes.udp.faults.RouteUpdates, when scheduled
        self.plane = None           # its compiled data plane (gse.runtimes.udp.dataplane)

    def datagram(self, data, addr):
        pkt = self._decode(data, addr, self.scratch)
        if pkt is None:
            return
        if self.latency:
            self.sched.at(self.sched.now() + self.latency, self._forward,
                          (copy_packet(pkt), data))
            return
        self._route(pkt, data, self.sched.now())

    def _forward(self, _t, item):
        self._route(item[0], item[1], self.sched.now())

    def _route(self, pkt, data, now):
        kind = pkt.kind
        if kind == PAUSE or kind == RESUME:
            quanta = self.admit_pfc(pkt, data)
            if quanta >= 0:
                self.ports[pkt.ingress].on_pfc(kind == PAUSE, quanta, now)
            return
        port = self.switch.route(pkt)
        if port < 0:
            self.unroutable += 1
            return
        egress = self.ports[port]
        egress.offer(pkt, data, now, pkt is self.scratch)

    def send_pfc(self, port, kind, now):
        """PAUSE (with the configured quanta) or RESUME to the neighbour on ``port``, ahead
        of data (control class).  As in the simulator, a PAUSE is refreshed at half its
        time while the port stays over XOFF, so the neighbour's pause never lapses while it
        is needed, and a lost RESUME costs at most one pause time."""
        p = self.ports[port]
        quanta = self.pfc.cfg.pause_quanta if kind == PAUSE else 0
        pkt = new_packet(kind, self.node, max(p.peer, 0), 0, 0, 0, 0, 0, 0, quanta,
                         PRIO_DATA, 0, 0, now + self.clock_offset_ps, PRIO_CONTROL)
        if self.plane is not None:      # the data plane holds the port's queue
            self.plane.inject(port, pkt, now)
        else:
            p.offer(pkt, None, now)
        if kind == PAUSE:
            half = self.pfc.cfg.pause_quanta * 512 * 1_000_000 // p.mbps // 2
            self.sched.at(now + half, self.refresh_fn, port)

    def _refresh_pause(self, _t, port):
        if self.pfc is not None and self.pfc.pausing[port]:
            self.send_pfc(port, PAUSE, self.sched.now())

    def counters(self, now):
        c = NodeDriver.counters(self, now)
        c["role"] = "switch"
        c["unroutable"] = self.unroutable
        c["unreachable"] = self.switch.unreachable
        if self.route_updates is not None:
            c["route_updates"] = {"applied": self.route_updates.applied,
                                  "entries": self.route_updates.entries}
        c["forwarded"] = self.switch.forwarded
        if self.pfc is not None:
            c["pfc"] = {"pauses_sent": self.pfc.pauses_sent,
                        "resumes_sent": self.pfc.resumes_sent,
                        "headroom_overflows": self.pfc.headroom_overflows,
                        "peak_ingress": self.pfc.peak_ingress}
        return c


class HostAgentDriver(AgentDriver):
    """The agent driver of a UDP host: the NIC is the host's emulated port, a timer is one
    of the node's scheduler, an exception of the agent is counted and the host goes on."""

    __slots__ = ("host", "timer_fn")

    def __init__(self, host, agent):
        AgentDriver.__init__(self, agent, host._delivered, host._completed, None, None,
                             host._agent_error)
        self.host = host
        self.timer_fn = self._fire_timer    # bound once: every timer of this host calls it

    def kick_nic(self, now):
        self.host.nic.kick(now)

    def arm_timer(self, t, now):
        self.host.sched.at(t, self.timer_fn, None)

    def _fire_timer(self, t, _arg):
        self.on_timer(t, self.host.sched.now())


class HostDriver(NodeDriver):
    """Drives one host agent: datagrams in, NIC pulls out, one timer, completions out."""

    __slots__ = ("agent", "nic", "driver", "on_delivered", "on_sent", "delivered", "sent",
                 "payload_errors", "payload_bytes", "duplicate_deliveries", "agent_errors",
                 "started", "tss")

    def __init__(self, node, name, sched, endpoint, agent, on_delivered=None, on_sent=None):
        NodeDriver.__init__(self, node, name, "host", sched, endpoint)
        self.agent = agent
        self.nic = None
        self.on_delivered = on_delivered    # fn(src, msg_id, size, now)
        self.on_sent = on_sent              # fn(src, msg_id, retransmits, now)
        self.delivered = {}                 # (src, msg_id) -> (size, ps)
        self.sent = {}                      # msg_id -> (retransmits, ps)
        self.started = {}                   # msg_id -> (dst, size, ps)
        self.payload_errors = 0
        self.payload_bytes = 0              # DATA payload bytes checked against the pattern
        self.duplicate_deliveries = 0
        self.agent_errors = 0
        self.tss = None                     # authenticated packets (gse.runtimes.udp.secure)
        self.driver = HostAgentDriver(self, agent)

    def datagram(self, data, addr):
        pkt = self._decode(data, addr, None)    # a new packet: the agent may keep it
        if pkt is None:
            return
        now = self.sched.now()
        kind = pkt.kind
        if kind == PAUSE or kind == RESUME:
            quanta = self.admit_pfc(pkt, data)
            if quanta >= 0:
                self.nic.on_pfc(kind == PAUSE, quanta, now)
            return
        if kind == DATA and not pkt.flags & F_TRIMMED:
            if self.tss is not None:
                if not self.tss.open(pkt, data):    # refused, counted by reason
                    return
                intact = pattern_intact(pkt, pkt.payload)   # the decrypted payload
                pkt.payload = None
            elif self.codec is None:
                intact = payload_intact(pkt, data)
            else:
                intact = verify_payload(pkt)
            if not intact:
                self.payload_errors += 1  # checksum passed but the bytes are not ours
                return
            self.payload_bytes += pkt.payload_len
        elif self.tss is not None and not self.tss.open(pkt, data):
            return
        self.driver.receive(pkt, now)

    def start(self, _t, msg):
        now = self.sched.now()
        self.started[msg.msg_id] = (msg.dst, msg.size, now)
        self.driver.start(msg.msg_id, msg.dst, msg.size, now)

    def after(self, now):
        """What follows a call into the agent (``AgentDriver.after``)."""
        self.driver.after(now)

    def _delivered(self, event):
        key = (event.src, event.msg_id)
        if key in self.delivered:
            self.duplicate_deliveries += 1
            return
        self.delivered[key] = (event.size, event.time_ps)
        if self.on_delivered is not None:
            self.on_delivered(event.src, event.msg_id, event.size, event.time_ps)

    def _completed(self, event):
        if event.msg_id not in self.sent:
            self.sent[event.msg_id] = (event.retransmits, event.time_ps)
            if self.on_sent is not None:
                self.on_sent(self.node, event.msg_id, event.retransmits, event.time_ps)

    def _agent_error(self, what, exc):
        self.agent_errors += 1
        record_error(self.sched.errors, "host %d: %s: %r" % (self.node, what, exc))

    def counters(self, now):
        c = NodeDriver.counters(self, now)
        c["role"] = "host"
        c["payload_errors"] = self.payload_errors
        c["payload_bytes"] = self.payload_bytes
        c["duplicate_deliveries"] = self.duplicate_deliveries
        c["agent_errors"] = self.agent_errors
        c["agent"] = self.agent.counters()
        if self.tss is not None:
            c["secure"] = self.tss.counters()
        return c

    def records(self):
        """Per-message outcomes seen by this host, JSON-ready (times in ps of its clock)."""
        sent = []
        for msg_id, (dst, size, start) in sorted(self.started.items()):
            item = {"msg_id": msg_id, "dst": dst, "size": size, "start_ps": start}
            done = self.sent.get(msg_id)
            if done is not None:
                item["retransmits"], item["finish_ps"] = done
            sent.append(item)
        received = [{"src": src, "msg_id": msg_id, "size": size, "deliver_ps": t}
                    for (src, msg_id), (size, t) in sorted(self.delivered.items())]
        return {"node": self.node, "sent": sent, "received": received}
