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

Optionally (``path_share_pacing``, off) the source leaf paces each pair to the share of
the line rate its live paths carry: it sends a remote VOQ's granted packets no faster
than the line rate times live over all paths toward the destination (times
``path_share_headroom``, at most 1); live paths are the widths a route update tells it
(after detection), less those it suspects (before).  Held to ``live / all`` with each
path getting the same share of it, no surviving link carries more than it would without
the failure, so nothing overfills from the start; but a pair whose two pods both lost
links keeps only the cores alive on both sides, and ``live / all`` is then far below
what those links could give it (the k=8 study: a p99 bound of 1.98x the run without
failure against 1.57x for max-min fair rates under the same even spraying), so it is
off; docs/fabric-mode.md has the figures.  The destination's pacer still grants at its
rate (the credit waits at the source).

A milder form (``path_share_start``, off): when a route change tells the destination
leaf the widths, each downlink's pacer starts at the lowest live-path share of the
pairs that want its credit, and the ECN response raises it from there (a Fat-Tree's
paths are the same both ways, so the destination's own widths give the pair's).

Without a failure nothing marks (the queues stay below ``ecn_bytes``), no widths are
told, and nothing changes.  ``LeafCongestion`` is the part of
``switchmodel.fabric.FabricLeaf`` that does this.
"""

from gse.wire.linkrate import wire_time_ps
from gse.wire.packet import F_ECN_CE, PRIO_CONTROL, PRIO_DATA

CLEAR = ~F_ECN_CE
T_PACE = 5                # a VOQ held by path-share pacing may send again


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
            if self.share_start and self.ecn:
                self._share_start()

    def _share_start(self):
        """``path_share_start``: a route change starts each busy downlink's pacer at the
        lowest live-path share (``_path_share``, toward a host of the source leaf: the
        paths of a Fat-Tree are the same both ways) of the pairs that want its credit,
        if that is below its rate; ECN's clean windows raise it from there."""
        first = {}
        for h, leaf in enumerate(self.leaf_of):
            if leaf != self.node:
                first.setdefault(leaf, h)
        for dl in self.downlinks.values():
            low = 1.0
            for d in dl.active:
                h = first.get(d.src_leaf)
                if h is not None:
                    low = min(low, self._path_share(h, d.src_leaf, -1))
            if low < dl.scale:
                dl.scale = low
                dl.rate = max(1, int(dl.mbps * low))

    def _init_share(self, cfg, host_gbps):
        """Path-share pacing's state: on only with leaf recovery and ``paths="leaf"`` (the
        leaf knows its paths); the rate it scales is the fastest local host's."""
        self.share_pacing = bool(cfg.path_share_pacing) and self.recovery and self.leaf_paths
        self.share_headroom = cfg.path_share_headroom
        self.share_mbps = max(1, int(round(max(host_gbps.values(), default=0) * 1000)))
        self.full_paths = 0       # uplinks times spine fan-out, before any failure
        rows = self.switch.next_hops
        for h in range(len(self.leaf_of)):
            if h not in self.host_ports and h < len(rows) and rows[h]:
                self.full_paths = len(rows[h]) * self.spine_fanout
                break
        self.share_holds = 0
        self.share_start = bool(cfg.path_share_start) and self.recovery and self.leaf_paths
        self.repair_prio = PRIO_CONTROL if cfg.leaf_repair_priority else PRIO_DATA

    def _path_share(self, dst, dst_leaf, now):
        """The share of the line rate the pair's live paths carry: (the widths' live paths
        toward ``dst``, less the ones suspected at ``now``; ``now`` < 0: the widths alone)
        over all paths, times the headroom; with ``plan_pacing``, the rate the control
        plane computed for the pair (``fabric_maxmin``; 1 for a pair it did not see)."""
        if self.plan_rates is not None:
            return self.plan_rates.get(dst_leaf, 1.0)
        hops = self.switch.next_hops[dst]
        n = len(hops)
        fanout = self.spine_fanout
        widths = self.widths.get(dst) if self.widths else None
        if widths is not None and len(widths) != n:
            widths = None                # (stale, as in _next_path)
        live = sum(widths) if widths is not None else n * fanout
        paths = self.suspects.get(dst_leaf) if self.suspects and now >= 0 else None
        if paths:
            for key, entry in paths.items():
                if entry[0] <= now:
                    continue
                port, choice = divmod(key, 256)
                if port in hops and (widths is None or choice < widths[hops.index(port)]):
                    live -= 1
        full = self.full_paths
        if full <= 0 or live >= full:
            return 1.0
        return min(1.0, max(1, live) * self.share_headroom / full)

    def _share_hold(self, voq, size, now):
        """Whether ``voq``'s next packet (``size`` wire bytes) must wait for its pair's
        path share; if not, the one after it waits its wire time at that share."""
        if voq.pace_next > now:
            if not voq.pace_armed:
                voq.pace_armed = True
                self._push(voq.pace_next, T_PACE, voq)
            self.share_holds += 1
            return True
        share = self._path_share(voq.dst, voq.dst_leaf, now)
        if share < 1.0:
            voq.pace_next = now + wire_time_ps(size, max(1, int(self.share_mbps * share)))
        return False

    def _pace_timer(self, voq, now):
        voq.pace_armed = False
        if self.voqs.get(voq.dst) is voq and voq.granted > voq.sent:
            self._drain(voq, now)

    def _ecn_arrival(self, pkt, src_leaf, now):
        """A fabric DATA packet reached its destination leaf: count it for its downlink's
        window (and its path if marked); clear CE before it goes down (ECT is the host's
        own: a plain host marks its DATA ECN-capable, as any RoCE NIC); whether it came
        marked."""
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
            return True
        return False

    def _pacer_window(self, dl, now):
        """Close the downlink's window(s) up to ``now``: slow by half the marked share, or
        speed up by ``pacer_increase`` per clean window."""
        cfg = self.cfg
        window = cfg.pacer_window_ps
        scale = dl.scale
        if dl.ce:
            scale *= 1.0 - 0.5 * dl.ce / dl.rx
            floor = cfg.pacer_min_fraction
            if self.plan_inbound:        # plan_floor: not below the planned rates
                floor = max(floor, self._plan_floor(dl))
            if scale < floor:
                scale = floor
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
