"""An egress port's queues: what a switch does with a packet it cannot send yet.

Two strict-priority classes: control (ACK, NACK, GRANT, REQUEST, trimmed headers) is always
served before data, so the news of congestion overtakes the congestion.  On arrival a data
packet is, in order of precedence:

* trimmed, if trimming is on and the data queue would pass ``trim_bytes``: the payload is
  cut and the 64-byte header joins the control queue (dropped only if that is full too);
* dropped, if the data queue would pass ``queue_bytes`` (drop-tail);
* marked ECN-CE with a probability rising linearly from 0 at ``ecn_kmin`` to ``ecn_pmax``
  at ``ecn_kmax`` bytes of data queue (RED-style; always marked above kmax).  With
  ``ecn_on_dequeue`` the mark is decided instead when the packet leaves, by the data bytes
  it leaves behind (as the HPCC authors' ns-3 switch, switch-node.cc:203-210, and htsim).

With ``control_priority`` off the port is one FIFO for every packet (htsim's lossless output
queue): control packets wait behind data, and a PFC pause holds them too.

The queue is sans-I/O: the runtime decides when the port is free and calls ``dequeue``.
"""

try:
    import cython  # only for cython.compiled: False in pure Python
    cython.compiled
except (ImportError, AttributeError):
    from gse import _no_cython as cython

from gse.common.handler import Handler
from gse.wire.packet import DATA, F_ECN_CE, F_ECT, PRIO_CONTROL

# Compiled, dequeue takes its head packet off through gse_unlink_data and _control
# (cython/switchmodel/gse_qlink.h, declared in queue.pxd), which move the head packet's
# reference to the next one to the queue without touching that packet (cold, it is the
# next dequeue's); the pure build assigns, as the compiled one did.  Enqueue links a packet
# behind the tail through gse_link_data and _control: the queue keeps its tail as a C
# pointer without a reference (the packet before it, or the head, holds one), so the tail
# packet's line is only written (its qnext, None until then), never read: its reference
# count and qnext were a load that waited (the tail is cold: it was queued a
# serialisation time or more ago); data_tail and control_tail stay None in that build.
C_UNLINK = cython.compiled

ENQUEUED = 0
TRIMMED = 1
DROPPED = 2


class QueueConfig:
    """The queue thresholds of a port, in bytes (built from a GseConfig or by hand)."""

    __slots__ = ("queue_bytes", "control_queue_bytes", "trim", "trim_bytes", "ecn",
                 "ecn_kmin", "ecn_kmax", "ecn_pmax", "control_priority", "ecn_on_dequeue")

    def __init__(self, queue_bytes, control_queue_bytes=None, trim=False, trim_bytes=None,
                 ecn=False, ecn_kmin=0, ecn_kmax=0, ecn_pmax=1.0, control_priority=True,
                 ecn_on_dequeue=False):
        self.queue_bytes = queue_bytes
        self.control_queue_bytes = (queue_bytes if control_queue_bytes is None
                                    else control_queue_bytes)
        self.trim = trim
        self.trim_bytes = queue_bytes if trim_bytes is None else trim_bytes
        self.ecn = ecn
        self.ecn_kmin = ecn_kmin
        self.ecn_kmax = ecn_kmax
        self.ecn_pmax = ecn_pmax
        self.control_priority = control_priority
        self.ecn_on_dequeue = ecn_on_dequeue
        if queue_bytes <= 0:
            raise ValueError("queue_bytes must be positive, got %r" % queue_bytes)
        if ecn and not 0 <= ecn_kmin <= ecn_kmax:
            raise ValueError("need 0 <= ecn_kmin <= ecn_kmax, got %r, %r"
                             % (ecn_kmin, ecn_kmax))

    @classmethod
    def from_gse(cls, cfg):
        return cls(cfg.queue_bytes, cfg.control_queue_bytes, cfg.trim, cfg.trim_bytes,
                   cfg.ecn, cfg.ecn_kmin_bytes, cfg.ecn_kmax_bytes, cfg.ecn_pmax_pct / 100.0)


COUNTERS = ("tx_bytes", "tx_packets", "drops", "trims", "ecn_marks", "peak_bytes")


class PortCounters(Handler):
    """What a port's queue counts, and beside the counters (left out of ``as_dict``, so no
    report changes) what a sampler (``gse.runtimes.sim.sampler``) reads of a busy port at
    every bin, together in the compiled object.  An ``OutputQueue`` is its own counters (it
    derives from this class; ``counters`` is itself), and a simulated port its own queue
    (``gse.runtimes.sim.network.LinkPort``), so that a hop and a sampler's bin touch one
    object's lines, not three objects' (hence the base ``Handler``: the port is what the
    event queue calls):

    * ``queued_bytes``: the bytes the queue holds now (kept by the queue);
    * ``s_tx``: the sampler's total of bytes sent at its last bin's end;
    * ``s_flag``: set to 1 wherever a rarer value changes (``drops``, ``trims``,
      ``ecn_marks``: here; the pause state: the simulated ports), so that the sampler
      reads those and the port's pause totals only then; the sampler sets it to 0 when it
      has read them, or to 2 when the port was paused then (paused all its next bin
      unless the flag is set to 1 again: nothing more to read);
    * ``s_index``: the port's index in the sampled network (set by the sampler), so that
      a bin reads no further than the counters' first two lines (compiled) of a busy port;
    * ``s_peak``: the queue's peak over the run (the sampler resets ``peak_bytes`` every
      bin, and puts the run's peak back when it closes).

    ``drops`` and ``trims`` come after."""

    __slots__ = ("queued_bytes", "peak_bytes", "tx_bytes", "tx_packets", "s_tx", "s_flag",
                 "s_index", "s_peak", "ecn_marks", "drops", "trims")

    def __init__(self):
        self.queued_bytes = 0     # data_bytes + control_bytes of the queue, always
        self.peak_bytes = 0
        self.tx_bytes = 0
        self.tx_packets = 0
        self.s_tx = 0             # the sampler's (gse.runtimes.sim.sampler)
        self.s_flag = 0           # a rarer value changed since the sampler read them
        self.s_index = -1
        self.s_peak = 0
        self.ecn_marks = 0
        self.drops = 0
        self.trims = 0

    def as_dict(self):
        return {name: getattr(self, name) for name in COUNTERS}


class OutputQueue(PortCounters):
    """Two FIFOs of packets linked through the packets themselves (``Packet.qnext``): a
    packet waits in one queue at a time, and linking it costs no container, so queueing
    touches the packet and the queue only (the compiled build's switch path was a quarter
    FIFO cache misses: container, its list, its slot, then the packet).  It counts into its
    own fields (``counters`` is the queue itself)."""

    __slots__ = ("cfg", "rng", "draw", "data_head", "data_tail", "control_head", "control_tail",
                 "n_data", "n_control", "data_bytes", "control_bytes", "counters", "paused",
                 "data_tail_p", "control_tail_p")   # (the last two: compiled only)

    def __init__(self, cfg, rng):
        PortCounters.__init__(self)
        self.cfg = cfg
        self.rng = rng            # a seeded generator, or a function that makes it when needed
        self.draw = None          # rng.random, once the queue first draws
        self.data_head = None     # oldest data packet; each links to the next by qnext
        self.data_tail = None
        self.control_head = None
        self.control_tail = None
        self.n_data = 0
        self.n_control = 0
        self.data_bytes = 0
        self.control_bytes = 0
        # the queue is its own counters (it derives from them), so that counting touches
        # the queue's lines only; ``counters`` names it for the counters' readers
        self.counters = self
        self.paused = False       # data class held by a PFC PAUSE from downstream

    def __len__(self):
        return self.n_data + self.n_control

    def packets(self):
        """The queued packets, control first, each class oldest first (for inspection)."""
        out = []
        for head in (self.control_head, self.data_head):
            pkt = head
            while pkt is not None:
                out.append(pkt)
                pkt = pkt.qnext
        return out

    def __del__(self):
        # unlink one by one: a long chain freed from its head would recurse per packet
        for head in (self.control_head, self.data_head):
            pkt = head
            while pkt is not None:
                nxt = pkt.qnext
                pkt.qnext = None
                pkt = nxt

    def backlog(self):
        return self.data_bytes + self.control_bytes

    def has_packets(self):
        """``len(self) > 0``, from the byte counts: every packet has at least its header."""
        return self.data_bytes + self.control_bytes > 0

    def enqueue(self, pkt):
        """Queue ``pkt``; returns ENQUEUED, TRIMMED or DROPPED."""
        cfg = self.cfg
        size = pkt.size
        result = ENQUEUED
        if not cfg.control_priority:     # one FIFO for every packet
            if self.data_bytes + size > cfg.queue_bytes:
                self.drops += 1
                self.s_flag = 1
                return DROPPED
            if cfg.ecn and not cfg.ecn_on_dequeue and pkt.kind == DATA and pkt.flags & F_ECT \
                    and self.data_bytes + size > cfg.ecn_kmin:
                self._maybe_mark(pkt, self.data_bytes + size)
            if C_UNLINK:
                gse_link_data(self, pkt)
            elif self.data_tail is None:
                self.data_head = self.data_tail = pkt
            else:
                self.data_tail.qnext = pkt
                self.data_tail = pkt
            self.n_data += 1
            self.data_bytes += size
            self._peak()
            return ENQUEUED
        if pkt.prio != PRIO_CONTROL and pkt.kind == DATA:
            occupied = self.data_bytes + size
            if cfg.trim and occupied > cfg.trim_bytes:
                pkt.trim()
                size = pkt.size
                result = TRIMMED
            elif occupied > cfg.queue_bytes:
                self.drops += 1
                self.s_flag = 1
                return DROPPED
            else:
                if cfg.ecn and occupied > cfg.ecn_kmin and pkt.flags & F_ECT \
                        and not cfg.ecn_on_dequeue:
                    self._maybe_mark(pkt, occupied)
                if C_UNLINK:
                    gse_link_data(self, pkt)
                elif self.data_tail is None:
                    self.data_head = self.data_tail = pkt
                else:
                    self.data_tail.qnext = pkt
                    self.data_tail = pkt
                self.n_data += 1
                self.data_bytes += size
                self._peak()
                return ENQUEUED
        if self.control_bytes + size > cfg.control_queue_bytes:
            self.drops += 1
            self.s_flag = 1
            return DROPPED
        if C_UNLINK:
            gse_link_control(self, pkt)
        elif self.control_tail is None:
            self.control_head = self.control_tail = pkt
        else:
            self.control_tail.qnext = pkt
            self.control_tail = pkt
        self.n_control += 1
        self.control_bytes += size
        if result == TRIMMED:
            self.trims += 1
            self.s_flag = 1
        self._peak()
        return result

    def _maybe_mark(self, pkt, occupied):
        cfg = self.cfg
        if occupied > cfg.ecn_kmax:
            p = 1.0
        else:
            p = cfg.ecn_pmax * (occupied - cfg.ecn_kmin) / (cfg.ecn_kmax - cfg.ecn_kmin)
        if p < 1.0:
            draw = self.draw
            if draw is None:              # made on the first draw: most ports never mark
                rng = self.rng
                if callable(rng):
                    rng = self.rng = rng()
                # its bound method, kept: a lookup of "random" at every draw reads the
                # generator's instance dict, lines that are cold at k=16
                draw = self.draw = rng.random
            if draw() >= p:
                return
        pkt.flags |= F_ECN_CE
        self.ecn_marks += 1
        self.s_flag = 1

    def _peak(self):
        total = self.data_bytes + self.control_bytes
        self.queued_bytes = total
        if total > self.peak_bytes:
            self.peak_bytes = total

    def dequeue(self):
        """The next packet to serialise (control first), or None."""
        if self.control_bytes:           # (a queue holds bytes exactly when it holds packets)
            pkt = self.control_head
            if C_UNLINK:
                gse_unlink_control(self, pkt)      # (and the tail pointer, if it was it)
            else:
                self.control_head = pkt.qnext
                pkt.qnext = None
                if self.control_head is None:
                    self.control_tail = None
            self.n_control -= 1
            self.control_bytes -= pkt.size
        elif self.data_bytes and not self.paused:
            pkt = self.data_head
            if C_UNLINK:
                gse_unlink_data(self, pkt)         # (and the tail pointer, if it was it)
            else:
                self.data_head = pkt.qnext
                pkt.qnext = None
                if self.data_head is None:
                    self.data_tail = None
            self.n_data -= 1
            self.data_bytes -= pkt.size
            cfg = self.cfg
            if cfg.ecn_on_dequeue and cfg.ecn and self.data_bytes > cfg.ecn_kmin \
                    and pkt.kind == DATA and pkt.flags & F_ECT:
                self._maybe_mark(pkt, self.data_bytes)
        else:
            return None
        self.queued_bytes = self.data_bytes + self.control_bytes
        self.tx_bytes += pkt.size
        self.tx_packets += 1
        return pkt

    def flush(self):
        """Empty the queue (its link failed): the packets it held, control first, none of
        them counted as transmitted."""
        out = self.packets()
        for pkt in out:
            pkt.qnext = None
        self.control_head = self.control_tail = None
        self.data_head = self.data_tail = None
        if C_UNLINK:
            gse_clear_tails(self)
        self.n_control = self.n_data = 0
        self.control_bytes = 0
        self.data_bytes = 0
        self.queued_bytes = 0
        return out

    def count_unqueued(self, pkt):
        """A packet that went straight onto an idle link still counts as transmitted."""
        self.tx_bytes += pkt.size
        self.tx_packets += 1
