"""Fabric mode: per-path one-way delay, so that a hole on a slow path is not resent.

With a quarter of the core links failed the queues the failure filled make some paths
tens of microseconds slower than others, more than ``leaf_nack_timeout_ps`` (12 µs, the
skew of an unloaded fabric).  A hole whose packet is merely on such a path is NACKed and
resent, and the original arrives as a duplicate: over half the leaf repairs were wasted
that way (docs/fabric-mode.md).  A longer fixed timeout delays the repair of real losses
(a dead path with 1 ms detection) for every hole.  With ``nack_by_delay`` the timeout
follows what the paths show:

* **Source leaf** stamps its send time (integer ps) into every fabric DATA packet it
  sprays or resends (``sack_bits``, which DATA does not use; the destination leaf zeroes
  it before the host sees the packet).
* **Destination leaf** keeps per source leaf and path (the uplink index and the spine's
  choice the source wrote in the entropy) the least one-way delay seen (arrival minus
  stamp) and the latest *queueing* delay: the one-way delay less that least one.  The
  difference cancels any clock offset between the leaves, so over UDP the leaves need no
  synchronized clocks, only a steady rate.  Only
  data-priority packets count for the queueing delay (a repair at control priority
  overtakes the queues it is meant to measure).
* **Hole wait.** A packet missing below one that arrived was sent before it, so it is
  overdue once the hole is ``q_max - q_open + margin`` old, ``q_max`` the largest queueing
  delay of the source's paths that delivered in the last ``delay_live_ps`` (a dead path
  delivers nothing and does not count) and ``q_open`` the queueing delay of the packet that
  opened the hole; at least ``leaf_nack_timeout_ps`` and at most ``delay_nack_max_ps``
  (a bound on how long a held hole can grow the reorder buffer; a long hole releases a
  burst toward the host).  Slow but alive paths thus get time to deliver; a packet on a
  dead path is NACKed as soon as every live path would have delivered it.

``LeafDelay`` is the part of ``switchmodel.fabric.FabricLeaf`` that does this (it also
brings ``LeafWeights``, the per-path CE scores, so that the leaf keeps one mixin per
concern without growing ``fabric.py``).
"""

from gse.wire.packet import PRIO_DATA
from switchmodel.fabric_gossip import LeafGossip
from switchmodel.fabric_maxmin import LeafPlan
from switchmodel.fabric_weights import LeafWeights

ECHO_PATHS = 16                   # 4-bit delay slots in a leaf ACK's 64-bit sack_bits


class LeafDelay(LeafWeights, LeafPlan, LeafGossip):
    """Per-path delay at the destination leaf and the hole wait it gives."""

    __slots__ = ()

    def _init_paths(self, cfg):
        """Both per-path mixins: ``path_weights``, and ``nack_by_delay`` and
        ``delay_weights`` (recovery only, with ``paths="leaf"``: the entropy names the
        path; ``delay_weights`` only where the paths fit the echo's 16 slots)."""
        self._init_weights(cfg)
        self.plan = {}            # dst leaf -> {path key: [weight, SWRR current]} (set_plan)
        self.plan_sets = self.plan_picks = 0
        self.plan_pacing = cfg.plan_pacing
        self.plan_rates = None    # dst leaf -> pacing rate (a fraction), with plan_pacing
        self.plan_floor_on = bool(cfg.plan_floor) and cfg.plan_pacing > 0 and self.ecn
        self.plan_pace_all = bool(cfg.plan_pace_all)
        self.plan_inbound = None  # src leaf -> its pairs' planned rate, with plan_floor
        self._init_gossip(cfg)    # plan_gossip_ps: the leaves' own plan (fabric_gossip)
        self.delay_on = (bool(cfg.nack_by_delay) or cfg.delay_weights > 0) \
            and self.recovery and self.leaf_paths      # stamp and measure
        self.delay_nack = self.delay_on and bool(cfg.nack_by_delay)
        # delay_weights: the destination echoes its paths' queueing delays in leaf ACKs,
        # the source weights its walk by them (the walk of fabric_weights)
        self.delay_weights = (self.delay_on and cfg.delay_weights > 0
                              and self._delay_paths_fit())
        if self.delay_weights:
            self.walk_k = float(cfg.delay_weights)
            self.weight_laps = int(1 + self.walk_k) + 2
        self.path_delay = {}      # src leaf -> {path: [least owd, queueing, seen at]}
        self.delay_waits = 0      # holes given longer than leaf_nack_timeout_ps
        self.delay_samples = 0

    def _delay_paths_fit(self):
        """The echo has a 4-bit slot per path: at most 16 (uplinks times spine choices)."""
        ups = max((len(h) for h in self.switch.next_hops if h), default=0)
        return 0 < ups * self.spine_fanout <= ECHO_PATHS

    # -- source side ----------------------------------------------------------------------

    def _stamp(self, pkt, now):
        if self.delay_on:
            pkt.sack_bits = now

    # -- destination side -----------------------------------------------------------------

    def _delay_sample(self, pkt, src_leaf, now):
        """The queueing delay of ``pkt``'s path (0 without a stamp and for a repair at
        control priority); records the sample."""
        stamp = pkt.sack_bits
        pkt.sack_bits = 0                 # the host sees its own header again
        if stamp <= 0:
            return 0                      # (not stamped: the options are off at the source)
        owd = now - stamp                 # (negative if the source's clock is ahead: only
                                          # differences from the path's least one count)
        paths = self.path_delay.get(src_leaf)
        if paths is None:
            paths = self.path_delay[src_leaf] = {}
        e = pkt.entropy                   # (uplink index, the spine's choice): the path
        path = (e & 0xFF) | (((e >> 8) & 0xFF) % self.spine_fanout) << 8
        entry = paths.get(path)
        if entry is None:
            entry = paths[path] = [owd, 0, now]
        elif owd < entry[0]:
            entry[0] = owd
        if pkt.prio != PRIO_DATA:
            return 0                      # a repair overtook the queues: no queueing sample
        q = owd - entry[0]
        entry[1] = q
        entry[2] = now
        self.delay_samples += 1
        return q

    def _hole_wait(self, src_leaf, q_open, now):
        """How long a hole opened by a packet with queueing delay ``q_open`` waits before
        its first NACK (see the module docstring)."""
        base = self.first_hole_ps
        if not self.delay_nack:
            return base
        paths = self.path_delay.get(src_leaf)
        if not paths:
            return base
        live = now - self.cfg.delay_live_ps
        q_max = 0
        for entry in paths.values():
            if entry[2] >= live and entry[1] > q_max:
                q_max = entry[1]
        wait = q_max - q_open + self.cfg.delay_margin_ps
        if wait <= base:
            return base
        self.delay_waits += 1
        cap = self.cfg.delay_nack_max_ps
        return wait if wait < cap else (cap if cap > base else base)

    # -- delay_weights: echo (destination), weigh (source) --------------------------------

    def _ack_echo(self, key, expected, now):
        """``sack_bits`` of the pair's leaf ACK: the marks (``path_weights``), the source
        leaf's paths' delays (``delay_weights``), or the CE counts (``path_hot_skips``)."""
        if self.weights_k:
            return self._mark_echo(key, expected)
        if self.delay_weights:
            return self._delay_echo(key[0], now)
        return self._hot_echo(key)

    def _delay_echo(self, src_leaf, now):
        """Slot ``uplink * spine_fanout + choice``: that path's queueing delay above
        ``delay_weight_floor_ps`` (what an unfailed fabric's queues give, so that runs
        without failure spray evenly) in units of ``delay_weight_unit_ps``, at most 15; 15
        for a path that fell silent (not heard in ``delay_live_ps``), 0 for one never
        heard."""
        paths = self.path_delay.get(src_leaf)
        if not paths:
            return 0
        unit = self.cfg.delay_weight_unit_ps
        floor = self.cfg.delay_weight_floor_ps
        live = now - self.cfg.delay_live_ps
        fanout = self.spine_fanout
        bits = 0
        for path, entry in paths.items():
            slot = (path & 0xFF) * fanout + (path >> 8)
            if slot >= ECHO_PATHS:
                continue
            v = 15 if entry[2] < live else min(15, max(0, entry[1] - floor) // unit)
            bits |= v << (4 * slot)
        return bits

    def _weigh_delays(self, dst_leaf, bits):
        """A leaf ACK from ``dst_leaf`` echoed its paths' delays: each path's score (the
        walk weighs it ``1 / (1 + delay_weights * score)``) is its slot over 15."""
        hops = self.switch.next_hops[dst_leaf]
        table = self.scores.get(dst_leaf)
        if table is None:
            if not bits:
                return
            table = self.scores[dst_leaf] = {}
        fanout = self.spine_fanout
        for slot in range(min(ECHO_PATHS, len(hops) * fanout)):
            key = hops[slot // fanout] * 256 + slot % fanout
            entry = table.get(key)
            score = ((bits >> (4 * slot)) & 15) / 15.0
            if entry is None:
                table[key] = [score, 0.0]
            else:
                entry[0] = score
        self.weight_samples += 1
