"""Links of the UDP runtimes: emulated egress ports and host NICs, and the codec's fast paths.

The roles mirror ``gse.runtimes.sim.network``: an egress port serialises at its link
rate, the link adds its propagation delay, a host's NIC pulls from its agent when the
link is free.  What differs is the clock: time is real, so every port keeps a *virtual*
schedule in integer picoseconds and sends the datagram once the loop's clock reaches the packet's
departure (end of serialisation plus delay):

* a packet that finds its port idle starts at once; one that finds it busy is queued in
  the ``OutputQueue`` (ECN, trimming, drop-tail, PFC accounting exactly as simulated) and
  starts when the previous one has finished serialising -- in virtual time, so a timer
  that fires late sends the packets that fell due in the meantime together, back to back,
  and the port's rate and the queue's occupancy stay those of the emulated link;
* departures less than ``slack_ps`` away are sent at once: the runtime's own per-hop
  processing (tens of microseconds) already exceeds them, and a timer per packet per hop
  would halve what one process carries;
* a host NIC sends the packets whose serialisation starts within ``slack_ps`` of now, at
  most ``NIC_BURST`` per wake-up, and catches up at most one packet time when its timer
  was late: when the emulated rate is more than the process carries, the NIC is clocked by
  the loop (a few packets per iteration, which the next hops read in one batch) instead of
  turning a late timer into a burst that overflows socket buffers downstream.

A port forwards the datagram its switch received unchanged unless the queue changed the
packet (ECN mark, trim) or the link corrupts it, in which case it re-encodes (the payload
is then taken from the received datagram: a switch decodes headers only, ``decode_header``).

The codec is ``gse.wire.fastcodec`` (the C codec in the compiled build, the reference
``gse.wire.codec`` in the pure one), as in every runtime.
"""

from collections import deque

from gse.runtimes.udp.io import Endpoint, record_error
from gse.wire import linkrate
from gse.wire.codec import reframe
from gse.wire.fastcodec import encode_packet
from gse.wire.packet import (DATA, F_SEC, F_TRIMMED, HEADER_BYTES, PAUSE, PRIO_CONTROL,
                             PRIO_DATA, RESUME, new_packet)
from switchmodel.queue import DROPPED, ENQUEUED

DEFAULT_SLACK_PS = 20_000_000      # 20 us
NIC_BURST = 8                      # packets a NIC may send per wake-up within the slack


def copy_packet(pkt):
    """A new packet equal to ``pkt`` (header fields and runtime fields alike)."""
    c = new_packet(pkt.kind, pkt.src, pkt.dst, pkt.msg_id, pkt.psn, pkt.entropy,
                   pkt.payload_len, pkt.flags, pkt.msg_len, pkt.credit, pkt.aux,
                   pkt.sack_base, pkt.sack_bits, pkt.ts, pkt.prio)
    c.size = pkt.size
    c.corrupt = pkt.corrupt
    c.payload = pkt.payload
    c.ingress = pkt.ingress
    return c


def _attach_payload(pkt, raw):
    """Before re-encoding a packet a switch decoded with ``decode_header``."""
    if (pkt.payload is None and pkt.kind == DATA and not pkt.flags & F_TRIMMED
            and len(raw) > HEADER_BYTES):
        pkt.payload = raw[HEADER_BYTES:]


class EmulatedPort:
    """One direction of a link at its sending end: queue, serialiser, wire.

    Duck-types ``gse.runtimes.sim.network.LinkPort`` for ``gse.metrics.records.summarize``
    (``queue``, ``wire_drops``, ``wire_corrupt``, ``kind``, ``faces_host``).
    """

    __slots__ = ("sched", "endpoint", "ep", "send", "peer_addr", "queue", "mbps", "delay",
                 "slack", "busy_until", "wake_at", "wake_fn", "wire", "raw", "loss",
                 "corrupt", "rng", "wire_drops", "wire_corrupt", "encode_errors", "codec", "node",
                 "port", "peer", "peer_port", "kind", "faces_host", "pfc", "owner",
                 "paused_since", "paused_ps", "pauses_received", "pause_until", "pause_fn",
                 "pause_expiries", "seal", "fault", "pfc_limit", "restart_fn", "plane",
                 "lane_addr")

    def __init__(self, sched, endpoint, peer_addr, queue, gbps, delay_ps, slack_ps,
                 node, port, kind, faces_host):
        self.sched = sched
        self.endpoint = endpoint
        # the endpoint's send, called for every datagram: directly if it is an Endpoint
        # (a C method in the compiled build), else bound once (a stand-in in a test)
        self.ep = endpoint if type(endpoint) is Endpoint else None
        self.send = endpoint.send
        self.peer_addr = peer_addr
        self.queue = queue
        self.mbps = int(round(gbps * 1000))
        if self.mbps <= 0:
            raise ValueError("node %d port %d: link rate %r Gb/s is below 1 Mb/s"
                             % (node, port, gbps))
        self.delay = delay_ps
        self.slack = slack_ps
        self.busy_until = 0
        self.wake_at = -1
        self.wake_fn = self._wake  # bound once: every timer of this port calls it
        self.wire = deque()        # (departure ps, datagram) not yet sent
        self.raw = {}              # id(queued pkt) -> (received datagram, its flags)
        self.loss = 0.0
        self.corrupt = 0.0
        self.rng = None
        self.wire_drops = 0
        self.wire_corrupt = 0
        self.encode_errors = 0
        self.codec = None          # another wire profile's codec (gse.wire.uet), or None
        self.node = node
        self.port = port
        self.peer = -1
        self.peer_port = -1
        self.kind = kind
        self.faces_host = faces_host
        self.pfc = None
        self.owner = None
        self.paused_since = -1
        self.paused_ps = 0
        self.pauses_received = 0
        self.pause_until = -1      # when the PAUSE in force expires unless refreshed
        self.pause_fn = self._pause_expired
        self.pause_expiries = 0    # pauses that ended by their quanta (no RESUME came)
        self.seal = None           # --secure: Tss.seal or LinkAuth.seal(pkt, raw) -> datagram
        self.fault = None          # a gse.runtimes.udp.faults.LinkFault when scheduled
        self.pfc_limit = 0         # most quanta a PAUSE from the neighbour may hold (0: none)
        self.restart_fn = None     # the switch's data plane holds this port's queue: it
        #                            restarts it (gse.runtimes.udp.switchplane)
        self.plane = None          # a host's compiled packet path (gse.runtimes.udp.hostplane):
        #                            encodes a packet straight into its send batch
        self.lane_addr = None      # the neighbour's PFC lane (its socket for PAUSE and
        #                            RESUME, read before data), or None: the data socket

    def set_faults(self, loss, corrupt, rng):
        if loss or corrupt:
            self.loss = loss
            self.corrupt = corrupt
            self.rng = rng

    # -- switch egress ------------------------------------------------------------------

    def offer(self, pkt, raw, now, transient=False):
        """A packet routed to this port at ``now``; ``raw`` is its datagram, or None.
        ``transient``: ``pkt`` is the switch's reusable packet, copied if it must wait."""
        queue = self.queue
        if self.fault is not None and self.fault.down:
            self.fault.black_holed += 1   # routed to a dead link, not yet learnt
            return
        if queue.data_bytes or queue.control_bytes:   # (bytes exactly when packets)
            self._drain(now)          # bring the virtual schedule up to now first
        if self.busy_until <= now and (not queue.paused or pkt.prio == PRIO_CONTROL):
            c = queue.counters        # OutputQueue.count_unqueued, inlined (hot path)
            c.tx_bytes += pkt.size
            c.tx_packets += 1
            self._transmit(pkt, raw, False, now, now)
            return
        if transient:
            pkt = copy_packet(pkt)    # the queue keeps it
        flags = pkt.flags
        result = queue.enqueue(pkt)
        if result == DROPPED:
            return
        if result != ENQUEUED:          # trimmed: the header is re-encoded when it goes,
            if raw is not None and flags & F_SEC:   # a secured one keeps its trailer
                self.raw[id(pkt)] = (raw, flags)
        else:
            if raw is not None:
                self.raw[id(pkt)] = (raw, flags)
            pfc = self.pfc
            if pfc is not None and pkt.prio == PRIO_DATA and pfc.on_enqueue(pkt.ingress,
                                                                            pkt.size):
                self.owner.send_pfc(pkt.ingress, PAUSE, now)
        if self._sendable():
            self._arm(self.busy_until if self.busy_until > now else now)

    def _sendable(self):
        queue = self.queue
        return queue.control_bytes > 0 or (queue.data_bytes > 0 and not queue.paused)

    def _drain(self, now):
        """Start every queued packet whose turn came by ``now``, back to back."""
        queue = self.queue
        raws = self.raw
        pfc = self.pfc
        while self.busy_until <= now:
            pkt = queue.dequeue()
            if pkt is None:
                return
            if pfc is not None and pkt.prio == PRIO_DATA and pfc.on_dequeue(pkt.ingress,
                                                                           pkt.size):
                self.owner.send_pfc(pkt.ingress, RESUME, now)
            raw = None
            changed = False
            if raws:
                entry = raws.pop(id(pkt), None)
                if entry is not None:
                    raw = entry[0]
                    changed = entry[1] != pkt.flags
            self._transmit(pkt, raw, changed, self.busy_until, now)

    # -- the link -----------------------------------------------------------------------

    def _transmit(self, pkt, raw, changed, start, now):
        """Serialise ``pkt`` from ``start``; ``raw`` is the datagram it arrived as (None
        if it was made here), ``changed`` whether the queue changed it since."""
        done = start + linkrate.wire_time_ps(pkt.size, self.mbps)
        self.busy_until = done
        if self.fault is not None and self.fault.drops():
            return
        if self.rng is not None:
            r = self.rng.random()
            if r < self.loss:
                self.wire_drops += 1
                return
            if r < self.loss + self.corrupt:
                self.wire_corrupt += 1
                pkt.corrupt = True
                changed = True
        if (self.plane is not None and raw is None and not changed and self.seal is None
                and self.codec is None):
            # a host's compiled packet path: encoded straight into its C buffers, sent
            # now or held on the emulated wire (None here: the plane holds the datagram)
            depart = done + self.delay
            if not self.wire and depart <= now + self.slack:
                if self.plane.send_packet(pkt):
                    return
            elif self.plane.wire_packet(pkt):
                self.wire.append((depart, None))
                self._arm(depart - self.slack)
                return
        if raw is not None and changed and pkt.flags & F_SEC:
            # secured: the switch keeps the security trailer (and TSS header)
            raw = reframe(raw, pkt) if self.codec is None else self.codec.reframe(raw, pkt)
        elif raw is None or changed:
            if raw is not None:
                _attach_payload(pkt, raw)
            try:
                raw = encode_packet(pkt) if self.codec is None else self.codec.encode(pkt)
            except ValueError as exc:
                self.encode_errors += 1
                record_error(self.sched.errors, "node %d port %d: cannot encode %r: %s"
                             % (self.node, self.port, pkt, exc))
                return
            if self.seal is not None:
                raw = self.seal(pkt, raw)
                if raw is None:        # the sender's counter ran out (counted there)
                    return
        depart = done + self.delay
        addr = self.peer_addr
        lane = False
        if self.lane_addr is not None and (pkt.kind == PAUSE or pkt.kind == RESUME):
            addr = self.lane_addr       # the neighbour's PFC lane
            lane = True
        if not self.wire and depart <= now + self.slack:
            if self.ep is not None:
                self.ep.send(raw, addr)
                if lane:
                    self.ep.flush()     # a PFC frame leaves at once (what is held with it)
            else:
                self.send(raw, addr)
        else:
            self.wire.append((depart, raw, addr) if lane else (depart, raw))
            self._arm(depart - self.slack)

    def _flush(self, now):
        wire = self.wire
        limit = now + self.slack
        send = self.send
        addr = self.peer_addr
        while wire and wire[0][0] <= limit:
            item = wire.popleft()
            if len(item) == 2:
                send(item[1], addr)
            else:                       # a PFC frame: to the lane, and at once
                send(item[1], item[2])
                if self.ep is not None:
                    self.ep.flush()

    def _arm(self, t):
        if self.wake_at < 0 or t < self.wake_at:
            self.wake_at = t
            self.sched.at(t, self.wake_fn, None)

    def _wake(self, t, _arg):
        if t != self.wake_at:
            return                      # superseded by an earlier wake-up
        self.wake_at = -1
        now = self.sched.now()
        self._drain(now)
        self._flush(now)
        nxt = self.busy_until if self._sendable() else -1
        if self.wire:
            w = self.wire[0][0] - self.slack
            if nxt < 0 or w < nxt:
                nxt = w
        if nxt >= 0:
            self._arm(nxt)

    # -- PFC ------------------------------------------------------------------------------

    def on_pfc(self, pause, quanta, now):
        """A PAUSE (``pause`` True, holding for ``quanta`` x 512 bit times at this link's
        rate) or a RESUME from the neighbour this port sends to.

        As in 802.1Qbb and the simulator (``gse.runtimes.sim.network.LinkPort.on_pfc``), a
        PAUSE expires unless refreshed and a PAUSE of zero quanta resumes, so a lost RESUME
        holds a port for one pause time, not for ever."""
        if pause and quanta > 0:
            until = now + (quanta * 512 * 1_000_000 + self.mbps - 1) // self.mbps
            queue = self.queue
            if not queue.paused:
                queue.paused = True
                self.paused_since = now
                self.pauses_received += 1
            if until > self.pause_until:
                self.pause_until = until
                self.sched.at(until, self.pause_fn, None)
            return
        self.resume(now)

    def _pause_expired(self, t, _arg):
        if self.queue.paused and t == self.pause_until:
            self.pause_expiries += 1
            self.resume(self.sched.now())

    def resume(self, now):
        queue = self.queue
        self.pause_until = -1
        if queue.paused:
            queue.paused = False
            self.paused_ps += now - self.paused_since
            self.paused_since = -1
            if self.busy_until < now:
                self.busy_until = now   # nothing was sent while paused: no catch-up
            self.restart(now)

    def restart(self, now):
        if self.restart_fn is not None:
            self.restart_fn(now)
            return
        if self._sendable():
            self._arm(self.busy_until if self.busy_until > now else now)

    def paused_total_ps(self, now):
        if self.queue.paused:
            return self.paused_ps + now - self.paused_since
        return self.paused_ps

    def stats(self, now):
        d = {"port": self.port, "peer": self.peer, "peer_port": self.peer_port,
             "kind": self.kind, "faces_host": self.faces_host,
             "counters": self.queue.counters.as_dict(), "wire_drops": self.wire_drops,
             "wire_corrupt": self.wire_corrupt, "encode_errors": self.encode_errors,
             "pauses_received": self.pauses_received,
             "pause_expiries": self.pause_expiries,
             "paused_ps": self.paused_total_ps(now)}
        if self.fault is not None:
            d["faults"] = self.fault.stats()
        return d


class HostNic(EmulatedPort):
    """A host's NIC: it pulls the next packet from its agent whenever the link is free.

    ``want`` means "pull again when the link frees": set after a packet went out (the
    agent may have more), cleared when the pull finds nothing, so an agent that has work
    but may not send yet (credit, pacing) is woken by its own timer, never polled in a loop.
    """

    __slots__ = ("agent", "catchup", "want")

    def kick(self, now):
        if self.busy_until > now:
            self.want = True
            self._arm(self.busy_until)
            return
        agent = self.agent
        queue = self.queue
        start = self.busy_until
        floor = now - self.catchup
        if start < floor:
            start = floor
        limit = now + self.slack
        burst = NIC_BURST
        for i in range(burst):
            pkt = agent.poll(now, not queue.paused)
            if pkt is None:
                self.want = False
                return
            queue.count_unqueued(pkt)
            self._transmit(pkt, None, False, start, now)
            start = self.busy_until
            if start > limit:
                break
        self.want = True
        self._arm(self.busy_until)

    def _drain(self, now):
        if self.want:
            self.kick(now)

    def _sendable(self):
        return self.want

    def restart(self, now):
        self.kick(now)
