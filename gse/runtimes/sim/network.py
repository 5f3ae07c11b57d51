"""The in-process simulation runtime: a topology of ports, links and agents on one clock.

Roles follow htsim: an egress port serialises at its link rate and hands the packet to the
link, which delivers it ``delay`` later to the peer's ingress; a switch node routes and
enqueues at an egress port; a host node drives its sans-I/O agent, whose NIC pulls packets
only when the link is free (so hosts never queue data, as htsim's NIC).  Ports only
schedule a wake-up when something waits behind the packet on the wire, which halves the
event count of an uncongested hop.

PFC (RoCE baseline): a switch with a ``PfcState`` counts queued data bytes per ingress
port and sends PAUSE/RESUME frames (control class) to the upstream neighbour, whose egress
port toward it stops and restarts its data class; paused time is kept per port.  As in
802.1Qbb a PAUSE holds for its quanta (x 512 bit times) and the switch refreshes it at half
that while the port stays over XOFF, so a lost RESUME or PAUSE cannot stall a port forever.

Fault injection (per link, seeded): ``loss_rate`` drops a packet on the wire,
``corrupt_rate`` flips a bit (the receiving host's checksum fails: counted and dropped).
Link failures (``gse.runtimes.sim.faults``) hang a ``PortFault`` on the ports they may
touch (``fault``): such a port hands what it sends to its fault instead of scheduling the
arrival itself, and drops at once what is routed to it while its link is down; a port
without one pays a single ``None`` test.
"""

import random
from functools import partial

try:
    import cython  # only for cython.compiled: False in pure Python
    cython.compiled
except (ImportError, AttributeError):
    from gse import _no_cython as cython

from gse.agents.driver import AgentDriver
from gse.config import ConfigError, fault_rates_error
from gse.common.handler import Handler
from gse.runtimes.sim.eventq import EventQueue, event_target
from gse.wire import linkrate
from gse.wire.packet import PAUSE, PRIO_CONTROL, PRIO_DATA, RESUME, Packet
from switchmodel.pfc import PfcState
from switchmodel.queue import ENQUEUED, OutputQueue
from switchmodel.switch import Switch, tier_salt

# Compiled, a port's next wake-up carries the packet it will dequeue as a hint
# (EventQueue.at_fire, read by gse_queue_head of cython/switchmodel/gse_qlink.h, declared
# in network.pxd), which the event loop prefetches an event ahead; the pure build has no
# hints and schedules the wake-up bare.
C_HINT = cython.compiled


class LinkPort(OutputQueue):
    """One direction of a link: the egress queue of ``node`` on local ``port``.

    The port is its egress queue and that queue's counters (it derives from
    ``OutputQueue``, built from ``queue_config`` and ``queue_rng``; ``queue`` and
    ``counters`` are the port itself), so that a packet's hop through it touches one
    object's lines, where the port, its queue and their counters were three objects, each
    reached through the one before.  Its events are wake-ups (``fire`` = ``wake``)."""

    __slots__ = ("eq", "queue", "mbps", "delay", "peer", "peer_port", "busy_until",
                 "wake_pending", "loss", "corrupt", "wire_rng", "wire_drops", "wire_corrupt",
                 "node", "port", "kind", "faces_host", "pfc", "owner", "paused_since",
                 "paused_ps", "pauses_received", "pause_until", "wake_fn", "deliver",
                 "fault", "index", "watch", "s_trims", "s_drops", "s_ecn", "s_paused")

    def __init__(self, eq, queue_config, queue_rng, gbps, delay_ps, node, port, kind,
                 faces_host):
        OutputQueue.__init__(self, queue_config, queue_rng)
        self.eq = eq
        self.queue = self         # (for its readers: the port is its queue)
        self.mbps = int(round(gbps * 1000))
        self.delay = delay_ps
        self.peer = None          # receiving node object (has .receive(pkt, in_port))
        self.peer_port = 0
        self.busy_until = 0
        self.wake_pending = False
        self.loss = 0.0
        self.corrupt = 0.0
        self.wire_rng = None      # the draws of loss and corruption on the wire, if any
        self.wire_drops = 0
        self.wire_corrupt = 0
        self.node = node
        self.port = port
        self.kind = kind          # kind of the node that owns this egress
        self.faces_host = faces_host
        self.pfc = None           # the owning switch's PfcState, if PFC is on
        self.owner = None         # the owning node object (sends PFC frames)
        self.paused_since = -1
        self.paused_ps = 0
        self.pauses_received = 0
        self.pause_until = -1
        self.wake_fn = event_target(self, self.wake)  # once, for the event queue
        self.deliver = None       # event target of peer.receive (set with peer)
        self.fault = None         # a PortFault when link failures may touch this port
        self.index = -1           # its place in Network.ports
        self.watch = None         # a sampler's list to join when it turns busy or paused
        # (counters: the port itself, set by OutputQueue; a change of the pause state marks
        # them, counters.s_flag, so that a sampler reads the pause totals only then:
        # gse.runtimes.sim.sampler)
        # what that sampler read here at the last bin's end, of the rarer values: totals of
        # trims, drops, ECN marks and paused ps (read when the counters are marked; the
        # paused ps of a port paused then as a negative offset: sampler._rarer)
        self.s_trims = self.s_drops = self.s_ecn = self.s_paused = 0

    def fire(self, a, b):
        self.wake(a, b)

    def offer(self, pkt):
        """A packet routed to this port."""
        eq = self.eq
        now = eq.now
        if self.fault is not None and self.fault.down:
            self.fault.black_hole(pkt)
            return
        if (self.busy_until <= now and not self.wake_pending
                and (not self.paused or pkt.prio == PRIO_CONTROL)):
            self.count_unqueued(pkt)
            self.transmit(pkt, now)
            return
        result = self.enqueue(pkt)
        pfc = self.pfc
        if pfc is not None and result == ENQUEUED and pkt.prio == PRIO_DATA:
            if pfc.on_enqueue(pkt.ingress, pkt.size):
                self.owner.send_pfc(pkt.ingress, PAUSE)
        if not self.wake_pending and self.has_packets():
            self.wake_pending = True
            eq.at(self.busy_until if self.busy_until > now else now, self.wake_fn, None, None)

    def wake(self, _a, _b):
        now = self.eq.now
        pkt = self.dequeue()
        if pkt is None:
            self.wake_pending = False
            return
        pfc = self.pfc
        if pfc is not None and pkt.prio == PRIO_DATA:
            if pfc.on_dequeue(pkt.ingress, pkt.size):
                self.owner.send_pfc(pkt.ingress, RESUME)
        self.transmit(pkt, now)
        if self.has_packets():
            # the next wake-up's hint is the packet it will dequeue: the event queue
            # prefetches it an event ahead, so that packet (cold: it waited a
            # serialisation time or more) is in the cache when dequeue reads it; a hint,
            # not a reference, as taking one (a read-modify-write of its line) waited here
            if C_HINT:
                self.eq.at_fire(self.busy_until, self, gse_queue_head(self))
            else:
                self.eq.at(self.busy_until, self.wake_fn, None, None)
        else:
            self.wake_pending = False

    def on_pfc(self, pkt, now):
        """A PAUSE or RESUME from the neighbour this port sends to."""
        if pkt.kind == PAUSE and pkt.credit > 0:
            until = now + (pkt.credit * 512 * 1_000_000 + self.mbps - 1) // self.mbps
            if not self.paused:
                self.paused = True
                self.paused_since = now
                self.pauses_received += 1
                self.counters.s_flag = 1
                if self.watch is not None:
                    self.touch()
            if until > self.pause_until:
                self.pause_until = until
                self.eq.at(until, self.pause_expired, until, None)
            return
        self.resume(now)

    def pause_expired(self, until, _b):
        if self.paused and until == self.pause_until:
            self.resume(self.eq.now)

    def resume(self, now):
        self.pause_until = -1
        if self.paused:
            self.paused = False
            self.paused_ps += now - self.paused_since
            self.paused_since = -1
            self.counters.s_flag = 1
            self.restart(now)

    def restart(self, now):
        if not self.wake_pending and self.has_packets():
            self.wake_pending = True
            self.eq.at(self.busy_until if self.busy_until > now else now, self.wake_fn, None, None)

    def paused_total_ps(self, now):
        if self.paused:
            return self.paused_ps + now - self.paused_since
        return self.paused_ps

    def touch(self):
        """This idle port turns busy or paused: join the list of the sampler watching it
        (``gse.runtimes.sim.sampler``), which then reads it at its next bin and leaves the
        other idle ports unread.  Called, when ``watch`` is set, wherever ``busy_until`` or
        ``paused_since`` is set (a run without sampling pays one ``None`` test there)."""
        watch = self.watch
        self.watch = None
        watch.append(self)

    def transmit(self, pkt, now):
        done = now + linkrate.wire_time_ps(pkt.size, self.mbps)
        self.busy_until = done
        if self.watch is not None:
            self.touch()
        if self.wire_rng is not None:
            r = self.wire_rng.random()
            if r < self.loss:
                self.wire_drops += 1
                return
            if r < self.loss + self.corrupt:
                self.wire_corrupt += 1
                pkt.corrupt = True
        if self.fault is not None:
            self.fault.carry(pkt, done)
            return
        self.eq.at(done + self.delay, self.deliver, pkt, self.peer_port)


class HostPort(LinkPort):
    """A host NIC: it pulls from its agent whenever the link is free."""

    __slots__ = ("agent",)

    def kick(self, now):
        if self.wake_pending or self.busy_until > now:
            return
        pkt = self.agent.poll(now, not self.paused)
        if pkt is None:
            return
        self.count_unqueued(pkt)
        self.transmit(pkt, now)
        self.wake_pending = True
        self.eq.at(self.busy_until, self.wake_fn, None, None)

    def wake(self, _a, _b):
        # through the host node: a poll may arm agent timers (pacing, RTO, tail probe)
        # that the node's one wake-up must then cover
        self.wake_pending = False
        node = self.owner
        node.after(self.eq.now)

    def restart(self, now):
        node = self.owner
        node.after(now)


class SwitchNode(Handler):
    """A switch: its events are packet arrivals (``fire`` = ``receive``)."""

    __slots__ = ("eq", "switch", "ports", "latency", "unroutable", "pfc", "pfc_frames",
                 "bad_frames")

    def __init__(self, eq, switch, latency_ps):
        self.eq = eq
        self.switch = switch
        self.ports = []
        self.latency = latency_ps
        self.unroutable = 0
        self.pfc = None
        self.pfc_frames = 0       # PAUSE and RESUME frames sent, refreshes included
        self.bad_frames = 0       # corrupted PFC frames ignored

    def send_pfc(self, port, kind):
        """PAUSE (with quanta) or RESUME to the neighbour on ``port``, ahead of data."""
        quanta = self.pfc.cfg.pause_quanta if kind == PAUSE else 0
        self.pfc_frames += 1
        self.ports[port].offer(Packet(kind, self.switch.node, -1, 0, 0, 0, 0, 0, 0, quanta,
                                      PRIO_DATA, 0, 0, self.eq.now, PRIO_CONTROL))
        if kind == PAUSE:
            self.eq.at(self.eq.now + self._refresh_ps(port), self.refresh_pause, port, None)

    def _refresh_ps(self, port):
        """Half the pause time, so the upstream never resumes while we are over XOFF."""
        mbps = self.ports[port].mbps
        return self.pfc.cfg.pause_quanta * 512 * 1_000_000 // mbps // 2

    def refresh_pause(self, port, _b):
        if self.pfc.pausing[port]:
            self.send_pfc(port, PAUSE)

    def fire(self, a, b):
        self.receive(a, b)

    def receive(self, pkt, in_port):
        if self.latency:
            self.eq.at(self.eq.now + self.latency, self.forward, pkt, in_port)
        else:
            self.forward(pkt, in_port)

    def forward(self, pkt, in_port):
        kind = pkt.kind
        if kind == PAUSE or kind == RESUME:
            if pkt.corrupt:
                self.bad_frames += 1
            else:
                self.ports[in_port].on_pfc(pkt, self.eq.now)
            return
        pkt.ingress = in_port
        port = self.switch.route(pkt)
        if port < 0:
            self.unroutable += 1
            return
        egress = self.ports[port]
        egress.offer(pkt)


class HostDriver(AgentDriver):
    """The agent driver of a host node: the NIC is the node's port, a timer is an event of
    the node's queue (run at once if its deadline is past)."""

    __slots__ = ("node", "timer_fn")

    def __init__(self, node, agent, on_delivered, on_completed):
        AgentDriver.__init__(self, agent, on_delivered, on_completed)
        self.node = node
        self.timer_fn = self.fire_timer   # bound once, for the event queue

    def kick_nic(self, now):
        self.node.nic.kick(now)

    def arm_timer(self, t, now):
        self.node.eq.at(t if t > now else now, self.timer_fn, t, None)

    def fire_timer(self, t, _b):
        self.on_timer(t, self.node.eq.now)


class HostNode(Handler):
    """A host: its events are packet arrivals (``fire`` = ``receive``) and its timer; its
    agent is driven by ``driver`` (``gse.agents.driver``), whose callbacks take the
    agent's events."""

    __slots__ = ("eq", "agent", "nic", "driver", "index", "watch")

    def __init__(self, eq, agent, on_delivered, on_completed):
        self.eq = eq
        self.agent = agent
        self.nic = None
        self.driver = HostDriver(self, agent, on_delivered, on_completed)
        self.index = -1           # its place in Network.hosts
        self.watch = None         # a sampler's list to join when a packet arrives

    def touch(self):
        """A packet arrives (what changes the receiver's accepted payload): join the list
        of the sampler watching this host (``gse.runtimes.sim.sampler``), which reads
        only the receivers of the hosts that joined."""
        watch = self.watch
        self.watch = None
        watch.append(self)

    def fire(self, a, b):
        self.receive(a, b)

    def receive(self, pkt, in_port):
        now = self.eq.now
        kind = pkt.kind
        if kind == PAUSE or kind == RESUME:
            if not pkt.corrupt:
                self.nic.on_pfc(pkt, now)
            return
        if self.watch is not None:
            self.touch()
        self.driver.receive(pkt, now)

    def start(self, msg, _b):
        self.driver.start(msg.msg_id, msg.dst, msg.size, self.eq.now)

    def after(self, now):
        self.driver.after(now)


class Network:
    """A topology instantiated on an event queue with one agent per host."""

    def __init__(self, topo, agent_factory, queue_config, forwarding, seed,
                 loss_rate=0.0, corrupt_rate=0.0, pfc_config=None, switch_node=None,
                 classes=None):
        problem = fault_rates_error(loss_rate, corrupt_rate)
        if problem:
            raise ConfigError(problem)
        self.topo = topo
        # (switch node, switch port, host port) classes: another model of the same parts
        # (gse.runtimes.sim.htsim_model) may stand in for these
        node_cls, port_cls, host_port_cls = classes or (SwitchNode, LinkPort, HostPort)
        self.eq = EventQueue()
        self.seed = seed
        self.records = {}          # (src, msg_id) -> finish ps at the receiver
        self.sender_done = {}      # (src, msg_id) -> (retransmits, finish ps at sender)
        self.faults = None         # a gse.runtimes.sim.faults.FaultInjector, if any
        eq = self.eq
        self.nodes = [None] * len(topo.nodes)
        self.hosts = []
        self.switches = []
        for nid in topo.hosts:
            node = topo.nodes[nid]
            link = topo.links[node.ports[0]]
            agent = agent_factory(nid, random.Random("%s/host/%d" % (seed, nid)), link.gbps)
            hn = HostNode(eq, agent, self._delivered, partial(self._sent, nid))
            hn.index = len(self.hosts)
            self.nodes[nid] = hn
            self.hosts.append(hn)
        for nid in topo.switches:
            node = topo.nodes[nid]
            sw = Switch(nid, node.name, topo.next_hops[nid], tier_salt(seed, node.kind),
                        forwarding)
            if switch_node is None:
                sn = node_cls(eq, sw, topo.switch_latency_ps)
            else:                 # a mode with switch agents of its own (gse-fabric)
                sn = switch_node(eq, sw)
            if pfc_config is not None:
                sn.pfc = PfcState(pfc_config, len(node.ports))
            self.nodes[nid] = sn
            self.switches.append(sn)
        self.ports = []
        peers = []                # the node at the far end of each port, in order
        for nid, node in enumerate(topo.nodes):
            owner = self.nodes[nid]
            is_host = node.kind == "host"
            for pidx, lidx in enumerate(node.ports):
                link = topo.links[lidx]
                # topo.peer(nid, pidx), read from the link (a Python call per port saved)
                if link.a == nid and link.a_port == pidx:
                    peer, peer_port = link.b, link.b_port
                else:
                    peer, peer_port = link.a, link.a_port
                peers.append(peer)
                # the queue's generator is made when it first draws (an ECN mark below
                # the certain threshold): seeded the same, without 2.5 KB on every port
                qrng = partial(random.Random, "%s/queue/%d/%d" % (seed, nid, pidx))
                faces_host = topo.nodes[peer].kind == "host"
                cls = host_port_cls if is_host else port_cls
                port = cls(eq, queue_config, qrng, link.gbps, link.delay_ps, nid, pidx,
                           node.kind, faces_host)
                port.peer_port = peer_port
                port.owner = owner
                if not is_host:
                    port.pfc = owner.pfc
                if loss_rate or corrupt_rate:
                    port.loss = loss_rate
                    port.corrupt = corrupt_rate
                    port.wire_rng = random.Random("%s/wire/%d/%d" % (seed, nid, pidx))
                if is_host:
                    port.agent = owner.agent
                    owner.nic = port
                else:
                    owner.ports.append(port)
                port.index = len(self.ports)
                self.ports.append(port)
        for port, peer in zip(self.ports, peers):
            port.peer = self.nodes[peer]
            port.deliver = event_target(port.peer, port.peer.receive)

    def _delivered(self, event):
        key = (event.src, event.msg_id)
        if key in self.records:
            raise AssertionError("message %r delivered twice" % (key,))
        self.records[key] = event.time_ps

    def _sent(self, src, event):
        self.sender_done[(src, event.msg_id)] = (event.retransmits, event.time_ps)

    def schedule(self, messages):
        for msg in messages:
            if not 0 <= msg.src < len(self.hosts) or not 0 <= msg.dst < len(self.hosts):
                raise ValueError("message %d: host %d->%d outside 0..%d"
                                 % (msg.msg_id, msg.src, msg.dst, len(self.hosts) - 1))
            self.eq.at(msg.start_ps, self.hosts[msg.src].start, msg, None)

    def run(self, until=-1):
        return self.eq.run(until)
