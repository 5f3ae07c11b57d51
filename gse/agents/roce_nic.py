"""The NIC of the RoCEv2 baseline host: its queues, which flow sends next, pacers and PAUSE.

Control packets (ACK, NAK, CNP) go before data.  Which queue pair the NIC serves next
(``nic_scheduler``): ``rr`` rotates a ring in the order queue pairs became active, control
packets first come first served; ``htsim`` is what htsim's RoCE host does (roce.cpp,
queue.cpp FairPriorityQueue, fairpullqueue.cpp).  There every flow has its own pacer that
puts one packet into the host's queue per wire time at line rate, from its start on, and
stops while the host is PAUSEd (restarting at the RESUME, or one wire time after its last
packet if that is later; a flow that starts during a PAUSE never heard it and goes on until
the next one, roce.cpp:235-238); the host's queue sends ACKs first, then data, each class
round robin by flow id, one packet per turn, from a cursor that keeps its place when flows
come and go (ACKs in ``gse.common.fairq.FairQueue``).  Here the pacers are timers
(``T_GEN``) that make a flow's next packet available, and the NIC takes available packets
in htsim's order (``_next_by_id``).  A pacer is rarely the binding limit on a shared NIC,
but it is at ties: a packet the pacer makes at the instant the NIC finishes the previous
one waits for the next turn, as in htsim, and the first round at a common start serves
every flow once before any flow twice.

A PFC PAUSE holds the NIC's data in the runtime (``poll(now, data_ok=False)``: control
only); the NIC here only relays it to the pacers (``on_pause``).
"""

from bisect import bisect_left, bisect_right, insort

from gse.agents.dcqcn import NEVER
from gse.agents.roce_sender import T_GEN, T_PACE
from gse.common.fairq import FairQueue
from gse.common.fifo import Fifo
from gse.wire.packet import HEADER_BYTES


class RoceNic:
    """Which packet of one host goes on the wire next."""

    __slots__ = ("timers", "out", "by_id", "ring", "control", "acks", "pace_at", "active",
                 "active_ids", "all_ids", "cursor", "pacer_ps")

    def __init__(self, config, line_mbps, timers, out):
        self.timers = timers      # the host's heap (T_PACE, T_GEN entries)
        self.out = out            # the host's unfinished flows: msg_id -> RoceFlow
        # (read with defaults: the fabric mode's plain host runs on a FabricConfig)
        self.by_id = getattr(config, "nic_scheduler", "rr") == "htsim"
        self.ring = Fifo()        # nic_scheduler "rr": flows that may have data
        self.control = Fifo()     # control packets, sent before data
        # ACKs and NAKs round robin by flow id (htsim's high-priority FairPullQueue), or
        # None: control packets in ``control``, first come first served
        self.acks = FairQueue() if self.by_id else None
        self.pace_at = -1         # pending wake-up for a rate-limited flow
        # nic_scheduler "htsim": flows with data, sorted by id, and htsim's cursor
        self.active = []          # RoceFlow, ascending msg_id
        self.active_ids = []      # their msg_ids (for bisect)
        self.all_ids = []         # every msg_id started here: htsim's map never forgets
        self.cursor = -1          # msg_id the round robin resumes at; -1: from the start
        # one wire time at line rate, truncated as htsim's RoceSrc spacing (roce.h)
        self.pacer_ps = (config.mtu + HEADER_BYTES) * 8_000_000 // line_mbps

    def add(self, flow, now):
        """A flow started: its pacer (``htsim``) makes its first packet available at once."""
        if self.by_id:
            if not self.all_ids or self.all_ids[-1] < flow.msg_id:
                self.all_ids.append(flow.msg_id)
            elif flow.msg_id not in self.all_ids:
                insort(self.all_ids, flow.msg_id)
            flow.gen = 1          # the pacer's first packet goes at once
            flow.last_gen = now
            if flow.npkts > 1:
                flow.gen_at = now + self.pacer_ps
                self.timers.push(flow.gen_at, T_GEN, flow)
        self.activate(flow)

    def activate(self, flow):
        """Serve the flow (again) if it has data to send."""
        if not flow.in_ring and flow.has_data():
            flow.in_ring = True
            if self.by_id:
                i = bisect_left(self.active_ids, flow.msg_id)
                self.active_ids.insert(i, flow.msg_id)
                self.active.insert(i, flow)
            else:
                self.ring.append(flow)

    def enqueue_control(self, pkt):
        """An ACK, NAK or CNP, sent before any data."""
        if self.acks is not None:
            self.acks.append(pkt)
        else:
            self.control.append(pkt)

    def has_work(self):
        # (len(), not truth: compiled, the Fifo's length slot directly, where a truth test
        # goes through the interpreter's bool protocol first)
        return (len(self.control) > 0 or len(self.ring) > 0 or len(self.active) > 0
                or (self.acks is not None and self.acks.count > 0))

    def next_control(self):
        """The next control packet, or None."""
        if len(self.control) > 0:
            return self.control.popleft()
        acks = self.acks
        if acks is not None and acks.count > 0:
            return acks.popleft()
        return None

    def next_flow(self, now):
        """The flow whose packet goes next, or None (then a T_PACE entry wakes the host
        when the earliest rate limiter opens)."""
        if self.by_id:
            return self._next_by_id(now)
        ring = self.ring
        for _ in range(len(ring)):
            flow = ring[0]
            if not flow.has_data():
                ring.popleft()
                flow.in_ring = False
                continue
            if flow.next_send > now:
                ring.rotate(-1)
                continue
            ring.rotate(-1)
            return flow
        # nobody may send yet: wake up when the earliest limiter opens
        earliest = -1
        for i in range(len(ring)):
            flow = ring[i]
            if earliest < 0 or flow.next_send < earliest:
                earliest = flow.next_send
        self._wake_at(earliest, now)
        return None

    def _next_by_id(self, now):
        """htsim's host queue: round robin in flow-id order from the cursor, which points
        after the flow served last (among every flow this host ever started: a flow that
        starts behind it waits for the next round, as in htsim's FairPullQueue)."""
        active = self.active
        ids = self.active_ids
        n = len(active)
        i = 0 if self.cursor < 0 else bisect_left(ids, self.cursor)
        earliest = -1
        for _ in range(n):
            if i >= len(active):
                i = 0
            flow = active[i]
            if not flow.has_data():
                del active[i]
                del ids[i]
                flow.in_ring = False
                continue
            if flow.next_psn >= flow.gen:      # its pacer has not made the packet yet
                i += 1
                continue
            if flow.next_send > now:
                if earliest < 0 or flow.next_send < earliest:
                    earliest = flow.next_send
                i += 1
                continue
            j = bisect_right(self.all_ids, flow.msg_id)
            self.cursor = self.all_ids[j] if j < len(self.all_ids) else -1
            return flow
        self._wake_at(earliest, now)
        return None

    def _wake_at(self, earliest, now):
        if earliest > now and earliest != self.pace_at:
            self.pace_at = earliest
            self.timers.push(earliest, T_PACE, None)

    def on_pace(self, t):
        """A T_PACE entry fell due (the runtime polls the NIC after every timer)."""
        if t == self.pace_at:
            self.pace_at = -1

    def on_pacer(self, flow, t, now):
        """htsim NIC: the flow's pacer makes its next packet available; a pacer that falls
        due while its flow is paused stops until the RESUME (roce.cpp doNextEvent)."""
        if flow.done or t != flow.gen_at:
            return
        flow.gen_at = NEVER
        if flow.paused:
            return
        flow.gen += 1
        flow.last_gen = now
        if flow.gen < flow.npkts:
            flow.gen_at = now + self.pacer_ps
            self.timers.push(flow.gen_at, T_GEN, flow)

    def on_pause(self, paused, now):
        """PAUSE or RESUME at the host's NIC: htsim's host queue relays it to every flow's
        pacer; at the RESUME a stopped pacer goes on at once, or one wire time after its
        last packet if that is later.  Only flows started by then hear it (a flow that
        starts during a PAUSE paces on, roce.cpp RoceSrc::receivePacket)."""
        if not self.by_id:
            return
        for flow in self.out.values():
            flow.paused = paused
        if paused:
            return
        for flow in self.out.values():
            if flow.gen < flow.npkts and flow.gen_at == NEVER and not flow.done:
                t = flow.last_gen + self.pacer_ps
                flow.gen_at = t if t > now else now
                self.timers.push(flow.gen_at, T_GEN, flow)
