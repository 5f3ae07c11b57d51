"""Fabric mode: the source leaf weights its paths by the CE marks they earn.

With a quarter of the core links failed, a pair of leaves in two damaged pods keeps only
the cores whose links to *both* pods survive, while a pair with a healthy end keeps many
more.  Sprayed evenly over their live paths (the widths a route change tells the
leaves), the pairs with many paths load the few cores the damaged pairs must share as
much as any other, and the max-min bound of even spraying is 1.57x the run without
failure on the mean of the study's seeds (docs/fabric-mode.md, "What remains with a
quarter of the core links").  Endpoint GSE does better (1.52x) because its senders spray
*unevenly*: they recycle the entropies that came back clean (REPS).  This module is the
fabric-mode counterpart, at the pair of leaves (``path_weights`` > 0):

* **Destination leaf: which packets came marked.**  It remembers the sequence numbers of
  a pair's DATA that arrived CE-marked (``_note_mark``) and its next leaf ACK (cumulative:
  every sequence number below ``psn`` arrived) carries them as a bitmap in ``sack_bits``:
  bit ``i`` set when packet ``psn - 1 - i`` came marked (the 64 packets below the ACK's
  point; a leaf ACK comes every ``leaf_ack_packets``, 8, in-order packets).
* **Source leaf: a score per path.**  The leaf ACK frees the packets it covers from the
  sent buffer, which knows each one's path (uplink, spine choice): each freed packet in
  the bitmap's window is a sample, 1 if marked, else 0, of an exponentially weighted
  mark fraction per (destination leaf, path) with gain ``path_weight_gain``.  A NACKed
  packet (trimmed or lost) is a sample of 1 for its path.  The table for a destination
  leaf is created by its first marked sample, so a run in which nothing is marked never
  sprays differently (the run without failure is bit-identical).
* **Source leaf: weighted spraying.**  The sprayer's walk over the live paths
  (``LeafRecovery._next_path``) takes a path only when its deficit credit reaches one
  packet: each visit adds the path's weight ``1 / (1 + path_weights * score)``, so each
  path carries traffic in proportion to its weight (deficit round robin over the walk),
  and the pairs with unmarked alternatives move off the cores the damaged pairs share.

Why marks and not the acknowledgements' timing: the destination leaf hands packets down
in order and acknowledges them cumulatively, so a packet on a fast path is acknowledged
with the slowest packet before it; the time to an ACK, or the packets outstanding per
path, is then the same for every path of a pair.  The marks name the path of the very
packet that met the queue, whatever order it arrived in.  Why weights and not skips: a
path skipped for a fixed time per mark (``path_hot_skips``, per uplink or per path)
pushed its load onto the others until they marked too; a weight lowers a path's share in
proportion to how often it marks and recovers as its packets come back clean.
``LeafWeights`` is the part of ``switchmodel.fabric.FabricLeaf`` that does this.
"""

WINDOW = 64               # packets below a leaf ACK's point whose marks it reports


class LeafWeights:
    """Per-path mark scores and the weighted walk, mixed into ``FabricLeaf``."""

    __slots__ = ()

    def _init_weights(self, cfg):
        """On only with ECN (the marks), leaf recovery (the sent buffer knows each packet's
        path, the ACKs carry the echo) and ``paths="leaf"`` (the leaf names the path)."""
        self.weights_k = (float(cfg.path_weights) if self.ecn and self.recovery
                          and self.leaf_paths else 0.0)
        self.weight_gain = cfg.path_weight_gain
        # the loop bound of a weighted walk: the lowest weight earns a packet in that many
        # visits
        self.walk_k = self.weights_k   # the weighted walk's strength (also delay_weights)
        self.weight_laps = int(1 + self.walk_k) + 2
        self.marked_seqs = {}     # (src leaf, host) -> sequence numbers that came marked
        self.scores = {}          # dst leaf -> {path key: [mark score, deficit credit]}
        self.weight_samples = self.weight_skips = 0

    # -- destination side -----------------------------------------------------------------

    def _note_mark(self, key, seq):
        marks = self.marked_seqs.get(key)
        if marks is None:
            marks = self.marked_seqs[key] = set()
        marks.add(seq)

    def _mark_echo(self, key, expected):
        """The bitmap for the pair's leaf ACK at ``expected``: bit ``i`` = packet
        ``expected - 1 - i`` came marked; forgets every mark below ``expected``."""
        marks = self.marked_seqs.get(key)
        if not marks:
            return 0
        bits = 0
        for seq in [s for s in marks if s < expected]:
            marks.discard(seq)
            i = expected - 1 - seq
            if i < WINDOW:
                bits |= 1 << i
        if not marks:
            del self.marked_seqs[key]
        return bits

    # -- source side ----------------------------------------------------------------------

    def _weigh_ack(self, buf, upto, bits):
        """A leaf ACK up to ``upto`` with the mark bitmap ``bits``: a sample per packet of
        its window still held (called before the ACK frees them)."""
        table = self.scores.get(buf.dst_leaf)
        if table is None:
            if not bits:
                return                    # nothing marked toward that leaf yet
            table = self.scores[buf.dst_leaf] = {}
        sent = buf.sent
        gain = self.weight_gain
        for seq in range(max(buf.lo, upto - WINDOW), upto):
            s = sent.get(seq)
            if s is None or s.port < 0:
                continue
            entry = table.get(s.path)
            if entry is None:
                entry = table[s.path] = [0.0, 0.0]
            sample = (bits >> (upto - 1 - seq)) & 1
            entry[0] += gain * (sample - entry[0])
            self.weight_samples += 1

    def _weigh_loss(self, dst_leaf, path):
        """A packet on ``path`` was NACKed (trimmed or lost): a marked sample."""
        table = self.scores.get(dst_leaf)
        if table is None:
            table = self.scores[dst_leaf] = {}
        entry = table.get(path)
        if entry is None:
            entry = table[path] = [0.0, 0.0]
        entry[0] += self.weight_gain * (1.0 - entry[0])
        self.weight_samples += 1

    def _weighed_ok(self, table, key):
        """The walk visits path ``key``: take it if its deficit credit reaches a packet
        (each visit adds its weight), else skip it this time."""
        entry = table.get(key)
        if entry is None:
            return True                   # never sampled: weight 1, always taken
        credit = entry[1] + 1.0 / (1.0 + self.walk_k * entry[0])
        if credit >= 1.0:
            entry[1] = credit - 1.0
            return True
        entry[1] = credit
        self.weight_skips += 1
        return False
