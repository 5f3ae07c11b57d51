"""htsim's lossless RoCE fabric, part for part, for the ``htsim`` PFC model.

``RoceConfig(pfc_model="htsim")`` (the ``htsim`` baseline profile) runs the simulation with
these in place of the ports and switch nodes of ``network.py``, so that a run reproduces
htsim's RoCE model (github.com/ultraethernet/uet-htsim, ``htsim/sim``; file:line below),
event for event where it can:

* **Ingress accounting** (queue_lossless_input.cpp:62-103): a switch counts every packet,
  control included, against the port it came in by, from its arrival until its last bit
  has left the egress port (``LosslessOutputQueue::completeService`` releases it); PAUSE
  when the count passes XOFF, RESUME when it falls strictly below XON.
* **PAUSE and RESUME** travel on their own pipe with the link's delay, not through a queue
  and without serialisation (``CallbackPipe``, queue_lossless_input.cpp:54, :114); a PAUSE
  holds until its RESUME, there are no quanta (queue_lossless_output.cpp:50-69); it holds
  every packet of the port, control too, after the one being sent; at the RESUME an idle
  port starts its next packet in the same event.
* **A host's NIC**, paused, sends nothing at all, ACKs included, and relays the PAUSE and
  the RESUME to its senders' pacers (queue.cpp FairPriorityQueue::receivePacket): the
  runtime calls ``agent.on_pause``.
* **Pipes** (pipe.cpp): a packet enters a link's pipe when its last bit has left the port
  and the pipe keeps one event pending at a time (the next arrival, scheduled when the
  previous one is delivered), and a switch hands an arrival to its egress queue through a
  pipe of its own with the switch latency (fat_tree_switch.cpp:50: zero here, but a
  separate event).  The order of events at equal times, which decides whose packet a
  switch queues first, is therefore htsim's.  Where that event would be the very next
  to run (the pipe empty, no other event pending at this time: ``EventQueue.due_now``),
  the switch forwards without it, at the end of the arrival's event: the same state,
  and the same order of every later event (``Pipe.fire``; 10% fewer events at k=8).

Single-FIFO egress queues (``switch_control_priority=False``) and htsim's NIC
(``nic_scheduler="htsim"``) are set by the same profile; see docs/comparison.md.

Compiled (cython/gse/runtimes/sim/htsim_model.pxd) as the ports and nodes it stands in for
are: a pipe keeps its packets in a ring (a list, no ``Fifo`` calls) and their arrival
times in a ring of C integers beside it, with the same head and length, and delivers to
its node by a C call (``fire``, or ``forward`` for a switch's own pipe); the ports and the
switch node are extension types deriving from ``network.py``'s, whose methods they
override as C methods.
"""

from array import array

try:
    import cython  # the pipe ring's directives and casts: no-ops in pure Python
    cython.compiled
except (ImportError, AttributeError):
    from gse import _no_cython as cython

from gse.common.handler import Handler
from gse.runtimes.sim.eventq import event_target
from gse.runtimes.sim.network import HostNode, HostPort, LinkPort, SwitchNode
from gse.wire import linkrate
from gse.wire.packet import PAUSE, PRIO_CONTROL, PRIO_DATA, RESUME, Packet, make_packet

# Compiled, the events are filed by EventQueue.at_fire (at_hint for a typed Handler, its
# event the object's fire: no isinstance), as network.py's port wake-ups are: no method
# dispatch nor references to None, and the object the event reads first (a
# pipe's head packet, the packet a port dequeues next: gse_obj_hint, gse_queue_head) as its
# hint, which the event loop prefetches an event ahead; the pure build files them by at.
C_HINT = cython.compiled
RING8 = array("q", bytes(8 * 8))   # a pipe's first ring of arrival times, copied (a slice
                                   # copies; a new array from bytes parses its arguments)


class Pipe(Handler):
    """Packets in flight for ``delay`` ps, delivered in order to ``target`` on its port
    ``port`` (its ``receive``), with one pending event at a time (htsim's
    Pipe/CallbackPipe).  A switch's own pipe (``port`` -1) hands each packet to the
    switch's ``forward`` with the port it came in by (``pkt.ingress``).  The event is the
    pipe's own ``fire``; a switch or host target is called through its typed field
    (``switch``, ``host``: a C call), anything else through its ``fire``."""

    __slots__ = ("eq", "delay", "pkts", "times", "head", "count", "mask", "target",
                 "switch", "host", "port", "fn")

    def __init__(self, eq, delay, target, port):
        self.eq = eq
        self.delay = delay
        self.pkts = [None] * 8       # the packets in flight: a ring from head
        self.times = RING8[:]        # their arrival times, the same ring (a copy)
        self.head = 0
        self.count = 0
        self.mask = 7                # len(times) - 1, a power of two less one
        self.port = port
        self.target = target
        self.switch = target if isinstance(target, HtsimSwitchNode) else None
        self.host = target if isinstance(target, HostNode) else None
        if port < 0 and self.switch is None:
            raise TypeError("a switch's own pipe needs an HtsimSwitchNode, got %r" % target)
        self.fn = event_target(self, self.fire)

    @cython.boundscheck(False)   # every index is masked into the ring
    @cython.wraparound(False)
    def push(self, pkt):
        t = self.eq.now + self.delay
        n = self.count
        if n == 0:
            if C_HINT:
                self.eq.at_fire(t, self, gse_obj_hint(pkt))  # noqa: F821 (pxd)
            else:
                self.eq.at(t, self.fn, None, None)
        elif n > self.mask:
            self._grow()
        i = (self.head + n) & self.mask
        self.times[i] = t
        self.pkts[i] = pkt
        self.count = n + 1

    def _grow(self):
        """Twice the ring, its packets and times in order from 0."""
        old = self.times
        olds = self.pkts
        size = self.mask + 1
        times = array("q", bytes(16 * size))
        pkts = [None] * (2 * size)
        for i in range(size):
            j = (self.head + i) & self.mask
            times[i] = old[j]
            pkts[i] = olds[j]
        self.times = times
        self.pkts = pkts
        self.head = 0
        self.mask = 2 * size - 1

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def fire(self, _a, _b):
        """The head packet arrives: to its target, then the next one's event."""
        h = self.head
        pkt = cython.cast(Packet, self.pkts[h])   # (push takes only packets: no type test)
        self.pkts[h] = None
        self.head = (h + 1) & self.mask
        self.count -= 1
        port = self.port
        now_pkt = None
        if port < 0:
            self.switch.forward(pkt, pkt.ingress)
        elif self.switch is not None:
            sw = self.switch
            if sw.admit(pkt, port):
                swp = sw.pipe
                if swp.count or swp.delay or self.eq.due_now():
                    swp.push(pkt)
                else:            # its event would run next: no event (see below)
                    now_pkt = pkt
        elif self.host is not None:
            self.host.receive(pkt, port)
        else:
            self.target.fire(pkt, port)
        if self.count:
            h = self.head
            if C_HINT:
                self.eq.at_fire(self.times[h], self, gse_obj_hint(self.pkts[h]))  # noqa: F821
            else:
                self.eq.at(self.times[h], self.fn, None, None)
        if now_pkt is not None:
            # The switch's own pipe is empty and without latency, and no event is pending
            # at this time: the event it would schedule now would be the next to run, so
            # the switch forwards here, after this pipe's next event is scheduled, with
            # the same state and the same order of later events (htsim's order).
            sw.forward(now_pkt, now_pkt.ingress)


def _launch(port, pipe, pkt):
    """The packet's last bit has left ``port``: into the link's ``pipe`` (or lost on it)."""
    if port.wire_rng is not None:
        r = port.wire_rng.random()
        if r < port.loss:
            port.wire_drops += 1
            return
        if r < port.loss + port.corrupt:
            port.wire_corrupt += 1
            pkt.corrupt = True
    pipe.push(pkt)


def _hold(port, pkt, now):
    """PAUSE holds the port until RESUME; True if it was a RESUME."""
    if pkt.kind != PAUSE:
        port.resume(now)
        return True
    if not port.paused:
        port.paused = True
        port.paused_since = now
        port.pauses_received += 1
        port.counters.s_flag = 1
        if port.watch is not None:
            port.touch()
    return False


class HtsimSwitchPort(LinkPort):
    """A switch egress port as htsim's LosslessOutputQueue: one packet in service, which
    is released from its ingress count and enters the link's pipe when it has left."""

    __slots__ = ("tx_pkt", "pipe", "wire")

    def offer(self, pkt):
        if not self.wake_pending and not self.paused:
            self.count_unqueued(pkt)
            self.begin(pkt, self.eq.now)
        else:
            self.enqueue(pkt)

    def begin(self, pkt, now):
        self.busy_until = now + linkrate.wire_time_ps(pkt.size, self.mbps)
        if self.watch is not None:
            self.touch()
        self.tx_pkt = pkt
        self.wake_pending = True
        if C_HINT:
            self.eq.at_fire(self.busy_until, self, gse_queue_head(self))  # noqa: F821
        else:
            self.eq.at(self.busy_until, self.wake_fn, None, None)

    def fire(self, a, b):
        """The port's event, its wake-up (``wake``), run here rather than through
        ``LinkPort.fire``: one C call less per packet and hop."""
        pkt = self.tx_pkt
        if pkt is not None:        # its last bit has left: release it, then the wire
            self.tx_pkt = None
            if self.pfc.on_release(pkt.ingress, pkt.size):
                node = self.owner
                node.send_pfc(pkt.ingress, RESUME)
            _launch(self, self.pipe, pkt)
        nxt = self.dequeue()
        if nxt is None:
            self.wake_pending = False
        else:
            self.begin(nxt, self.eq.now)

    def wake(self, _a, _b):
        self.fire(_a, _b)

    def restart(self, now):
        """RESUME: an idle port begins its next packet in the same event, as htsim's
        LosslessOutputQueue does (queue_lossless_output.cpp:61-69), not in a wake-up of its
        own: its completion then falls due before an arrival the link's pipe scheduled
        later for the same instant, which decides whether that arrival passes XOFF."""
        if not self.wake_pending:
            nxt = self.dequeue()
            if nxt is not None:
                self.begin(nxt, now)

    def on_pfc(self, pkt, now):
        _hold(self, pkt, now)


class HtsimHostPort(HostPort):
    """A host NIC as htsim's FairPriorityQueue: a PAUSE holds everything and reaches the
    senders' pacers; a packet enters the link's pipe when it has left."""

    __slots__ = ("tx_pkt", "pipe", "wire")

    def kick(self, now):
        if self.wake_pending or self.busy_until > now or self.paused:
            return
        pkt = self.agent.poll(now, True)
        if pkt is None:
            return
        self.count_unqueued(pkt)
        self.busy_until = now + linkrate.wire_time_ps(pkt.size, self.mbps)
        if self.watch is not None:
            self.touch()
        self.tx_pkt = pkt
        self.wake_pending = True
        if C_HINT:
            self.eq.at_fire(self.busy_until, self, cython.NULL)
        else:
            self.eq.at(self.busy_until, self.wake_fn, None, None)

    def fire(self, a, b):
        """The NIC's event, its wake-up (``wake``), run here as the switch port's is."""
        pkt = self.tx_pkt
        self.tx_pkt = None
        self.wake_pending = False
        if pkt is not None:
            _launch(self, self.pipe, pkt)
        node = self.owner
        node.after(self.eq.now)

    def wake(self, _a, _b):
        self.fire(_a, _b)

    def on_pfc(self, pkt, now):
        resumed = _hold(self, pkt, now)
        self.agent.on_pause(not resumed, now)
        node = self.owner
        node.after(now)


class HtsimSwitchNode(SwitchNode):
    """A switch whose ingress counts every arrival and hands it to the egress queue through
    its own pipe (switch latency, a separate event even when zero, except where that
    event would be the next to run anyway: ``Pipe.fire``)."""

    __slots__ = ("pipe",)

    def receive(self, pkt, in_port):
        if self.admit(pkt, in_port):
            self.pipe.push(pkt)

    def admit(self, pkt, in_port):
        """An arrival by ``in_port``: a PAUSE or RESUME acts on that port; anything else is
        counted against it (PAUSE upstream past XOFF) and is to enter the switch's pipe:
        True."""
        kind = pkt.kind
        if kind == PAUSE or kind == RESUME:
            if pkt.corrupt:
                self.bad_frames += 1
            else:
                egress = self.ports[in_port]
                egress.on_pfc(pkt, self.eq.now)
            return False
        pkt.ingress = in_port
        if self.pfc.on_enqueue(in_port, pkt.size):
            self.send_pfc(in_port, PAUSE)
        return True

    def forward(self, pkt, in_port):
        port = self.switch.route(pkt)
        if port < 0:
            self.unroutable += 1
            if self.pfc.on_release(in_port, pkt.size):
                self.send_pfc(in_port, RESUME)
            return
        egress = cython.cast(LinkPort, self.ports[port])   # (every port is one)
        egress.offer(pkt)

    def send_pfc(self, port, kind):
        """PAUSE or RESUME on the wire pipe of ``port``: no queue, no quanta, no refresh."""
        self.pfc_frames += 1
        egress = self.ports[port]
        egress.wire.push(make_packet(kind=kind, src=self.switch.node, dst=-1, aux=PRIO_DATA,
                                     ts=self.eq.now, prio=PRIO_CONTROL))


CLASSES = (HtsimSwitchNode, HtsimSwitchPort, HtsimHostPort)


def attach(net):
    """Give a Network built with ``CLASSES`` its pipes: one per link direction, one for
    PFC frames per switch port, one inside every switch."""
    for port in net.ports:
        port.tx_pkt = None
        port.pipe = Pipe(net.eq, port.delay, port.peer, port.peer_port)
        port.wire = Pipe(net.eq, port.delay, port.peer, port.peer_port)
    for sn in net.switches:
        if sn.pfc is None:
            raise ValueError("the htsim PFC model needs PFC on (pfc=1)")
        sn.pipe = Pipe(net.eq, sn.latency, sn, -1)
    return net
