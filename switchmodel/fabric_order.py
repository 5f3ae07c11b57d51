"""Fabric mode, destination leaf: fabric packets put back in their VOQ's order.

Packets of one (source leaf, destination host) pair carry their VOQ's sequence number
(``aux``, a 32-bit serial number widened against the expected one) and arrive sprayed over
every path; with ``reorder="leaf"`` the destination leaf hands them to the host in order,
holding early ones in a ``Reorder`` buffer.  With ``leaf_recovery`` a hole is NACKed to
the source leaf once ``leaf_nack_timeout_ps`` old (and again, with backoff) and skipped only
after ``leaf_repair_timeout_ps`` (``switchmodel.fabric_recovery``); without it a hole older
than ``reorder_timeout_ps`` is skipped (the host's go-back-N resends what was lost).  What
the leaf holds is bounded: at most ``reorder_buffer_bytes`` in all (beyond, a packet is dropped and
counted in ``reorder_drops``; the hole it leaves is repaired or skipped like a loss), and only pairs
whose source is a leaf of the fabric.  ``LeafReorder`` is the part of
``switchmodel.fabric.FabricLeaf`` that does this.
"""

from gse.wire.packet import PRIO_DATA

MASK32 = 0xFFFFFFFF
NEVER = -1
T_HOLE = 2
MAX_NACK_BACKOFF = 8


def unwrap32(wire, ref):
    """The counter value nearest ``ref`` whose low 32 bits are ``wire`` (RFC 1982)."""
    d = (wire - ref) & MASK32
    if d >= 0x80000000:
        d -= 0x100000000
    return ref + d


class Reorder:
    """Destination side: fabric packets of one (source leaf, host) pair held for order."""

    __slots__ = ("key", "expected", "held", "bytes", "deadline", "armed", "since",
                 "backoff")

    def __init__(self, key, expected):
        self.key = key
        self.expected = expected
        self.held = {}            # seq -> packet
        self.bytes = 0
        self.deadline = NEVER
        self.armed = NEVER
        self.since = NEVER        # when the current hole was first seen (or last narrowed)
        self.backoff = 1          # NACK backoff


class LeafReorder:
    """The destination side's reordering, mixed into ``FabricLeaf``."""

    __slots__ = ()

    # -- destination side: order ----------------------------------------------------------

    def _arrive(self, pkt, now):
        if not 0 <= pkt.src < len(self.leaf_of):
            self.stray += 1              # no host of the fabric sent this
            return
        marked = self.ecn and self._ecn_arrival(pkt, self.leaf_of[pkt.src], now)
        if not self.reorder_at_leaf:
            self._deliver(pkt)
            return
        src_leaf = self.leaf_of[pkt.src]
        if self.recovery:
            self.echo[src_leaf] = (pkt.entropy, now)   # a path that works, for replies
        q = self._delay_sample(pkt, src_leaf, now) if self.delay_on else 0
        key = (src_leaf, pkt.dst)
        rb = self.reorders.get(key)
        expected = rb.expected if rb is not None else self.rtails.get(key, 1)
        seq = unwrap32(pkt.aux, expected)
        if marked and self.weights_k and seq >= expected:
            self._note_mark(key, seq)    # echoed in the pair's next ACK (fabric_weights)
        if seq == expected:
            self._deliver(pkt)
            if rb is None:
                self.rtails[key] = expected + 1
                count = 1
            else:
                rb.expected = expected + 1
                count = 1 + self._release(rb, now)
            if self.recovery:
                self._delivered_in_order(key, expected + count, count, now)
        elif seq > expected:
            if rb is None:
                rb = self.reorders[key] = Reorder(key, expected)
                self.rtails.pop(key, None)
            if seq in rb.held:
                self.duplicates += 1
                return
            if self.reorder_bytes + pkt.size > self.cfg.reorder_buffer_bytes:
                self.reorder_drops += 1  # a hole the timer skips; the host resends
                return
            rb.held[seq] = pkt
            rb.bytes += pkt.size
            self.reorder_bytes += pkt.size
            if self.reorder_bytes > self.reorder_peak:
                self.reorder_peak = self.reorder_bytes
            if rb.deadline == NEVER:
                rb.since = now           # (nack_by_delay: longer while paths are slow)
                rb.deadline = now + self._hole_wait(src_leaf, q, now)
                self._arm_hole(rb)
        elif self.recovery:
            self.duplicates += 1         # a repair that crossed the original (or an ACK
            self._send_leaf_ack(key, expected, now)   # lost): acknowledged again at once
        else:
            self.late += 1               # after its hole was skipped: the host decides
            self._deliver(pkt)

    def _release(self, rb, now):
        """Hand down what follows ``rb.expected`` in order; the count of packets."""
        held = rb.held
        expected = rb.expected
        start = expected
        while expected in held:
            pkt = held.pop(expected)
            rb.bytes -= pkt.size
            self.reorder_bytes -= pkt.size
            self._deliver(pkt)
            expected += 1
        rb.expected = expected
        if not held:
            del self.reorders[rb.key]
            self.rtails[rb.key] = expected
        elif expected > start or rb.since == NEVER:
            rb.since = now               # the hole narrowed: its age starts again
            rb.backoff = 1
            rb.deadline = now + self._hole_wait(rb.key[0], 0, now)
            self._arm_hole(rb)
        return expected - start

    def _arm_hole(self, rb):
        if rb.armed == NEVER:
            rb.armed = rb.deadline
            self._push(rb.deadline, T_HOLE, rb)

    def _hole_timer(self, rb, now):
        rb.armed = NEVER
        if self.reorders.get(rb.key) is not rb:
            return
        if now < rb.deadline:
            self._arm_hole(rb)
            return
        if self.recovery:
            give_up = rb.since + self.cfg.leaf_repair_timeout_ps
            if now < give_up:            # ask the source leaf again; skip only at give_up
                self._send_leaf_nack(rb, now)
                if rb.backoff < MAX_NACK_BACKOFF:
                    rb.backoff *= 2
                rb.deadline = min(now + self.cfg.leaf_nack_timeout_ps * rb.backoff, give_up)
                self._arm_hole(rb)
                return
        first = min(rb.held)
        self.hole_skips += 1
        self.skipped += first - rb.expected
        rb.expected = first
        rb.since = NEVER
        count = self._release(rb, now)
        if self.recovery:
            self._delivered_in_order(rb.key, rb.expected, count, now)

    def _deliver(self, pkt):
        pkt.entropy = pkt.sack_base      # the host sees its own header again
        pkt.sack_base = 0
        pkt.aux = 0
        pkt.prio = PRIO_DATA             # (a repair crossed the fabric at control priority)
        self.out.append((self.host_ports[pkt.dst], pkt))
