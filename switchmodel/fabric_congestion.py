"""Fabric mode: the leaves' response to congestion inside the fabric.

The grant pacers make a downlink's arrivals match its rate, which is enough while the
fabric has full bisection: the spine and core queues stay small (36 KB at most in the
k=8 permutation).  A failure removes capacity (a quarter of the core links leaves 75% of
it, unevenly: an aggregation switch may keep one core link of four), and pacers that
still grant every downlink's full rate, spraying evenly over uplinks whose paths beyond
differ, overfill the surviving links: their 1-BDP queues drop, and the leaves' recovery
resends what they drop, adding load.  Plain hosts have no congestion control, so the
leaves need one, in three parts:

* **Unequal-cost spraying.**  When routes change, the control plane tells each leaf how
  many next hops the switch beyond each of its uplinks keeps toward every host
  (``set_widths``; ``switchmodel.fabric_plan.uplink_widths``), as a routing protocol that
  carries link bandwidth would; the sprayer then gives each uplink one slot per live
  path beyond it, and byte 1 of the entropy names that path exactly.
* **ECN from the spines to the destination's pacer.**  Spine and core queues mark the
  DATA the leaves spray CE above ``ecn_bytes`` (step marking, as DCTCP's switches; the
  plain host's RoCE sender makes its DATA ECN-capable); the destination leaf clears CE
  before the packet goes down, so the host never sees it.  Every ``pacer_window_ps``
  (about one leaf-to-leaf round trip) with marked arrivals, a downlink's pacer slows by
  half the marked share, down to ``pacer_min_fraction`` of the line rate; each window
  without a mark it speeds up by ``pacer_increase`` (windows with no arrival count too).
* **Repairs are paced.**  A NACK asks the source leaf for packets on top of what the
  pacer granted; the pacer's next grant waits their wire time (``_charge_repairs``), so a
  failure's burst of repairs does not land on a fabric that just lost capacity.

Optionally (``path_hot_skips`` > 0) the destination also counts, per pair, the CE marks
per uplink (byte 0 of the path entropy, 4 bits each, 16 uplinks) and echoes them in its
next leaf ACK (``sack_bits``, unused by ACKs; the pair's first mark is echoed at once),
and the source leaf skips that uplink a turn per mark.  Off by default: with the widths
it made no measurable difference (docs/fabric-mode.md).

Without a failure nothing marks (the queues stay below ``ecn_bytes``), no widths are
told, and nothing changes.  ``LeafCongestion`` is the part of
``switchmodel.fabric.FabricLeaf`` that does this.
"""

from gse.wire.linkrate import wire_time_ps
from gse.wire.packet import F_ECN_CE

CLEAR = ~F_ECN_CE


class LeafCongestion:
    """The pacers' congestion response and the hot-path echo, mixed into ``FabricLeaf``."""

    __slots__ = ()

    def set_widths(self, widths):
        """What the control plane tells the leaf after a route change: ``{host: widths}``,
        how many next hops the switch beyond each uplink (in the order of
        ``next_hops[host]``) keeps toward ``host``, where not all ``spine_fanout``
        (``switchmodel.fabric_plan.uplink_widths``).  The sprayer then gives each uplink
        one slot per live path beyond it (unequal-cost multipath, as routing that carries
        link bandwidth does); only with leaf recovery and ``paths="leaf"``."""
        if self.recovery and self.leaf_paths:
            self.widths = widths

    def _ecn_arrival(self, pkt, src_leaf, now):
        """A fabric DATA packet reached its destination leaf: count it for its downlink's
        window (and its path if marked); clear CE before it goes down (ECT is the host's
        own: a plain host marks its DATA ECN-capable, as any RoCE NIC)."""
        flags = pkt.flags
        pkt.flags = flags & CLEAR
        dl = self.downlinks[pkt.dst]
        if now >= dl.win_end:
            self._pacer_window(dl, now)
        dl.rx += 1
        if flags & F_ECN_CE:
            dl.ce += 1
            self.ce_received += 1
            if self.hot_ps:
                key = (src_leaf, pkt.dst)
                bits = self.hot_bits.get(key, 0)
                shift = (pkt.entropy & 15) * 4      # a 4-bit count per uplink
                if (bits >> shift) & 15 < 15:
                    self.hot_bits[key] = bits + (1 << shift)
                if not bits:                        # the pair's first mark since its last
                    rb = self.reorders.get(key)     # ACK: echoed at once, not after the
                    self._send_leaf_ack(key, rb.expected if rb is not None   # next 8
                                        else self.rtails.get(key, 1), now)  # in order

    def _pacer_window(self, dl, now):
        """Close the downlink's window(s) up to ``now``: slow by half the marked share, or
        speed up by ``pacer_increase`` per clean window."""
        cfg = self.cfg
        window = cfg.pacer_window_ps
        scale = dl.scale
        if dl.ce:
            scale *= 1.0 - 0.5 * dl.ce / dl.rx
            if scale < cfg.pacer_min_fraction:
                scale = cfg.pacer_min_fraction
            self.pacer_cuts += 1
        elif scale < 1.0:
            clean = 1 + (now - dl.win_end) // window if dl.win_end >= 0 else 1
            scale = min(1.0, scale + cfg.pacer_increase * clean)
        if scale != dl.scale:
            dl.scale = scale
            dl.rate = max(1, int(dl.mbps * scale))
            if scale < self.pacer_low:
                self.pacer_low = scale
        dl.rx = dl.ce = 0
        dl.win_end = now + window

    def _charge_repairs(self, host, packets, now):
        """A NACK asks for ``packets`` full packets again: they come on top of what the
        pacer granted, so its next grant waits their wire time (repairs are paced like
        new data, not a burst on a fabric that just lost capacity)."""
        dl = self.downlinks[host]
        start = dl.next_time if dl.next_time > now else now
        dl.next_time = start + wire_time_ps(packets * self.mtu_wire, dl.rate)
        self.repair_charges += packets
        if dl.armed:                             # the armed timer would find it early
            self._push(dl.next_time, 0, dl)      # (T_PACER)

    def _hot_echo(self, key):
        """The path map to send in the pair's next leaf ACK (and forget)."""
        return self.hot_bits.pop(key, 0) if self.hot_bits else 0

    def _hot_paths(self, dst_leaf, host, bits, now):
        """The destination leaf says these uplinks' paths marked CE: avoid them toward
        ``dst_leaf`` for ``path_hot_ps``."""
        hops = self.switch.next_hops[host] if 0 <= host < len(self.switch.next_hops) else ()
        n = len(hops)
        if n == 0:
            return
        ports = self.hot.setdefault(dst_leaf, {})
        cap = self.hot_ps
        up = 0
        while bits and up < n:
            count = bits & 15
            if count:
                port = hops[up]
                ports[port] = min(cap, ports.get(port, 0) + count * self.hot_per_mark)
                self.paths_hot += count
            bits >>= 4
            up += 1
        if not ports:
            del self.hot[dst_leaf]

    def _is_hot(self, dst_leaf, port, now):
        """Skip ``port`` this turn if it owes a skip (and pay one)."""
        ports = self.hot.get(dst_leaf)
        if ports is None:
            return False
        owed = ports.get(port)
        if not owed:
            return False
        if owed == 1:
            del ports[port]
            if not ports:
                del self.hot[dst_leaf]
        else:
            ports[port] = owed - 1
        return True
