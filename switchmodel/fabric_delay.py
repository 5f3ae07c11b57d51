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
from switchmodel.fabric_weights import LeafWeights


class LeafDelay(LeafWeights):
    """Per-path delay at the destination leaf and the hole wait it gives."""

    __slots__ = ()

    def _init_paths(self, cfg):
        """Both per-path mixins: ``path_weights`` and ``nack_by_delay`` (recovery only,
        with ``paths="leaf"``: the entropy names the path)."""
        self._init_weights(cfg)
        self.delay_on = bool(cfg.nack_by_delay) and self.recovery and self.leaf_paths
        self.path_delay = {}      # src leaf -> {path: [least owd, queueing, seen at]}
        self.delay_waits = 0      # holes given longer than leaf_nack_timeout_ps
        self.delay_samples = 0

    # -- source side ----------------------------------------------------------------------

    def _stamp(self, pkt, now):
        if self.delay_on:
            pkt.sack_bits = now

    # -- destination side -----------------------------------------------------------------

    def _delay_sample(self, pkt, src_leaf, now):
        """The queueing delay of ``pkt``'s path (0 without a stamp); records the sample."""
        stamp = pkt.sack_bits
        pkt.sack_bits = 0                 # the host sees its own header again
        if stamp <= 0 or stamp > now:
            return 0
        owd = now - stamp
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
        if not self.delay_on:
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
