"""Links of the UDP runtimes: emulated egress ports and host NICs, and the decoder.

The roles mirror ``gse.sim``: an egress port serialises at its link rate, the link adds its
propagation delay, a host's NIC pulls from its agent when the link is free.  What differs is
the clock: time is real, so every port keeps a *virtual* schedule in integer picoseconds
and sends the datagram once the loop's clock reaches the packet's departure (end of
serialisation plus delay):

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
packet (ECN mark, trim) or the link corrupts it, in which case it re-encodes.
"""

import zlib
from collections import deque

from gse.packet import (ACK, DATA, F_TRIMMED, HEADER_BYTES, KNOWN_FLAGS, MAX_KIND, PAUSE,
                        PRIO_CONTROL, PRIO_DATA, RESUME, WIRE_VERSION, Packet)
from gse.udp_io import record_error
from gse.wire import CHECKSUM_OFFSET, HEADER, MAX_DATAGRAM, decode, encode
from switchmodel.queue import DROPPED, ENQUEUED

DEFAULT_SLACK_PS = 20_000_000      # 20 us
NIC_BURST = 8                      # packets a NIC may send per wake-up within the slack

_crc32 = zlib.crc32
_unpack = HEADER.unpack_from


def decode_datagram(data, max_datagram=MAX_DATAGRAM):
    """``gse.wire.decode`` with a fast path for well-formed datagrams.

    Every datagram is decoded at every hop, so the reference decoder's keyword-argument
    construction and checks in error-reporting order cost about a third of a switch's
    work per packet.  This accepts only what passes every check of ``decode`` (size,
    version, kind, flags, reserved bytes, length, ACK alignment, checksum) and builds the
    same packet; at the first doubt it calls ``decode`` itself, which returns the same
    packet or raises the ``WireError`` with its reason.  ``tests/test_udp_codec.py`` checks
    the two agree on valid, mutated, truncated and extended datagrams.
    """
    n = len(data)
    if n < HEADER_BYTES or n > max_datagram or type(data) is not bytes:
        return decode(data, max_datagram)
    (version, kind, flags, src, dst, msg_id, psn, entropy, payload_len, msg_len, credit,
     aux, sack_base, sack_bits, ts, prio, res8, res16, checksum) = _unpack(data, 0)
    if version != WIRE_VERSION or kind > MAX_KIND or flags & ~KNOWN_FLAGS or res8 or res16:
        return decode(data, max_datagram)
    view = memoryview(data)
    if kind == DATA and not flags & F_TRIMMED:
        if (n - HEADER_BYTES != payload_len
                or _crc32(view[HEADER_BYTES:], _crc32(view[:CHECKSUM_OFFSET])) != checksum):
            return decode(data, max_datagram)
        pkt = Packet(kind, src, dst, msg_id, psn, entropy, payload_len, flags, msg_len,
                     credit, aux, sack_base, sack_bits, ts, prio)
        pkt.payload = data[HEADER_BYTES:]
        return pkt
    if (n != HEADER_BYTES or (kind == ACK and sack_base & 7)
            or _crc32(view[:CHECKSUM_OFFSET]) != checksum):
        return decode(data, max_datagram)
    return Packet(kind, src, dst, msg_id, psn, entropy, payload_len, flags, msg_len, credit,
                  aux, sack_base, sack_bits, ts, prio)


class EmulatedPort:
    """One direction of a link at its sending end: queue, serialiser, wire.

    Duck-types ``gse.sim.LinkPort`` for ``gse.metrics.summarize`` (``queue``,
    ``wire_drops``, ``wire_corrupt``, ``kind``, ``faces_host``).
    """

    __slots__ = ("sched", "endpoint", "peer_addr", "queue", "mbps", "delay", "slack",
                 "busy_until", "wake_at", "wire", "raw", "loss", "corrupt", "rng",
                 "wire_drops", "wire_corrupt", "encode_errors", "node", "port", "peer",
                 "peer_port", "kind", "faces_host", "pfc", "owner", "paused_since",
                 "paused_ps", "pauses_received")

    def __init__(self, sched, endpoint, peer_addr, queue, gbps, delay_ps, slack_ps,
                 node, port, kind, faces_host):
        self.sched = sched
        self.endpoint = endpoint
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
        self.wire = deque()        # (departure ps, datagram) not yet sent
        self.raw = {}              # id(queued pkt) -> (received datagram, its flags)
        self.loss = 0.0
        self.corrupt = 0.0
        self.rng = None
        self.wire_drops = 0
        self.wire_corrupt = 0
        self.encode_errors = 0
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

    def set_faults(self, loss, corrupt, rng):
        if loss or corrupt:
            self.loss = loss
            self.corrupt = corrupt
            self.rng = rng

    # -- switch egress ------------------------------------------------------------------

    def offer(self, pkt, raw, now):
        """A packet routed to this port at ``now``; ``raw`` is its datagram, or None."""
        queue = self.queue
        if queue.data or queue.control:
            self._drain(now)          # bring the virtual schedule up to now first
        if self.busy_until <= now and (not queue.paused or pkt.prio == PRIO_CONTROL):
            c = queue.counters        # OutputQueue.count_unqueued, inlined (hot path)
            c.tx_bytes += pkt.size
            c.tx_packets += 1
            self._transmit(pkt, raw, now, now)
            return
        flags = pkt.flags
        result = queue.enqueue(pkt)
        if result == DROPPED:
            return
        if result == ENQUEUED:
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
        return bool(queue.control) or (bool(queue.data) and not queue.paused)

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
            if raws:
                entry = raws.pop(id(pkt), None)
                if entry is not None and entry[1] == pkt.flags:
                    raw = entry[0]
            self._transmit(pkt, raw, self.busy_until, now)

    # -- the link -----------------------------------------------------------------------

    def _transmit(self, pkt, raw, start, now):
        done = start + (pkt.size * 8_000_000 + self.mbps - 1) // self.mbps
        self.busy_until = done
        if self.rng is not None:
            r = self.rng.random()
            if r < self.loss:
                self.wire_drops += 1
                return
            if r < self.loss + self.corrupt:
                self.wire_corrupt += 1
                pkt.corrupt = True
                raw = None
        if raw is None:
            try:
                raw = encode(pkt)
            except ValueError as exc:
                self.encode_errors += 1
                record_error(self.sched.errors, "node %d port %d: cannot encode %r: %s"
                             % (self.node, self.port, pkt, exc))
                return
        depart = done + self.delay
        if not self.wire and depart <= now + self.slack:
            self.endpoint.send(raw, self.peer_addr)
        else:
            self.wire.append((depart, raw))
            self._arm(depart - self.slack)

    def _flush(self, now):
        wire = self.wire
        limit = now + self.slack
        send = self.endpoint.send
        addr = self.peer_addr
        while wire and wire[0][0] <= limit:
            send(wire.popleft()[1], addr)

    def _arm(self, t):
        if self.wake_at < 0 or t < self.wake_at:
            self.wake_at = t
            self.sched.at(t, self._wake, None)

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

    def set_paused(self, paused, now):
        """A PAUSE or RESUME from the neighbour this port sends to."""
        queue = self.queue
        if paused:
            if not queue.paused:
                queue.paused = True
                self.paused_since = now
                self.pauses_received += 1
            return
        if queue.paused:
            queue.paused = False
            self.paused_ps += now - self.paused_since
            self.paused_since = -1
            if self.busy_until < now:
                self.busy_until = now   # nothing was sent while paused: no catch-up
            self.restart(now)

    def restart(self, now):
        if self._sendable():
            self._arm(self.busy_until if self.busy_until > now else now)

    def paused_total_ps(self, now):
        if self.queue.paused:
            return self.paused_ps + now - self.paused_since
        return self.paused_ps

    def stats(self, now):
        return {"port": self.port, "peer": self.peer, "peer_port": self.peer_port,
                "kind": self.kind, "faces_host": self.faces_host,
                "counters": self.queue.counters.as_dict(), "wire_drops": self.wire_drops,
                "wire_corrupt": self.wire_corrupt, "encode_errors": self.encode_errors,
                "pauses_received": self.pauses_received,
                "paused_ps": self.paused_total_ps(now)}


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
        for _ in range(NIC_BURST):
            pkt = agent.poll(now, not queue.paused)
            if pkt is None:
                self.want = False
                return
            queue.count_unqueued(pkt)
            self._transmit(pkt, None, start, now)
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
