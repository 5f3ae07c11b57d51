"""Fabric mode: the leaves repair what the fabric loses, before a host sees a hole.

With ``leaf_recovery`` (the default) a packet lost between two leaves (a dead or gray
link, a full queue, a bad frame) is resent by its source leaf, not by the host's go-back-N:

* **Source leaf**: every packet it sprays into the fabric stays in a *sent buffer* per
  destination host (the VOQ's sequence space, which the destination leaf already orders
  by) until the destination leaf acknowledges it; at most ``leaf_retx_buffer_bytes`` per
  leaf (beyond, a packet goes unbuffered and counted: its loss falls back to the host).
* **Destination leaf**: ACKs each (source leaf, host) pair cumulatively (the next sequence
  number it expects) every ``leaf_ack_packets`` in-order packets and ``leaf_ack_delay_ps``
  after the last one; NACKs a hole once it is ``leaf_nack_timeout_ps`` old, naming the
  missing sequence numbers among the next 64 (a bitmap), and again with backoff while it
  stays open; skips it (the hosts' go-back-N then resends) only after
  ``leaf_repair_timeout_ps``, when no repair can be expected (the source leaf failed, or
  it no longer holds the packet), below the host's RTO.
* **Source leaf, repair**: a NACKed packet is resent at once on another path; a buffer with
  no ACK progress for ``leaf_rto_ps`` (a lost tail, a lost NACK or ACK) resends what is
  older than that.  A path that lost a packet is *suspected* for ``path_suspect_ps`` for
  that destination leaf and the sprayer skips it, as GSE's endpoint sender skips entropy
  values suspected dead (``gse.agents.entropy``).  A path is (uplink port, the spine's
  uplink choice), the spine's choice being byte 1 of the entropy modulo ``spine_fanout``.
  With ``leaf_repair_priority`` (on) the resend of a NACKed packet crosses the fabric at
  control priority: its hole holds up the whole pair at the destination leaf, so it
  should not wait behind new data in queues a failure just filled (the destination leaf
  hands it down as data).  The source's timeout resends stay data: they are often
  spurious (over UDP, a busy process), and a burst of them in the control class delays
  the GRANTs and ACKs behind it.

``LeafRecovery`` is the part of ``switchmodel.fabric.FabricLeaf`` that does this; the
destination's side of the timers lives in ``switchmodel.fabric_order``.  Wire messages:
docs/wire-format.md, "Fabric mode".
"""

from gse.wire.packet import (ACK, DATA, F_ECN_CE, F_ECT, F_TRIMMED, NACK, PRIO_CONTROL,
                             PRIO_DATA, make_packet, new_packet)
from switchmodel.fabric_order import NEVER, unwrap32
from switchmodel.fabric_plan import path_entropy

MASK32 = 0xFFFFFFFF
T_RETX = 3
T_ACK = 4
NACK_SPAN = 64
MAX_RETX_BACKOFF = 16


class Sent:
    """A packet the source leaf sprayed and keeps until the destination leaf has it."""

    __slots__ = ("pkt", "host_entropy", "port", "entropy", "path", "time")

    def __init__(self, pkt, host_entropy, port, entropy, path, time):
        self.pkt = pkt
        self.host_entropy = host_entropy
        self.port = port
        self.entropy = entropy    # the path's entropy (what the spines follow)
        self.path = path          # (uplink port, spine choice): what to suspect on loss
        self.time = time


class SentBuffer:
    """Source side: the unacknowledged packets toward one destination host, by sequence."""

    __slots__ = ("dst", "dst_leaf", "sent", "lo", "bytes", "deadline", "armed", "backoff",
                 "rr")

    def __init__(self, dst, dst_leaf, lo, rr):
        self.dst = dst
        self.dst_leaf = dst_leaf
        self.sent = {}            # seq -> Sent
        self.lo = lo              # lowest sequence number not yet acknowledged
        self.bytes = 0
        self.deadline = NEVER
        self.armed = NEVER
        self.backoff = 1
        self.rr = rr              # the resend path walk


class LeafRecovery:
    """The leaf-to-leaf repair, mixed into ``FabricLeaf`` (see the module docstring)."""

    __slots__ = ()

    # -- source side: keep, resend --------------------------------------------------------

    def _keep(self, voq, pkt, seq, port, entropy, now):
        """Keep a packet just sprayed (or that found no route) until it is acknowledged."""
        self._stamp(pkt, now)            # nack_by_delay: its send time (fabric_delay)
        if self.retx_bytes + pkt.size > self.cfg.leaf_retx_buffer_bytes:
            self.retx_unbuffered += 1    # its loss falls back to the hosts
            return
        buf = self.sent_bufs.get(voq.dst)
        if buf is None:
            buf = self.sent_bufs[voq.dst] = SentBuffer(voq.dst, voq.dst_leaf, seq, voq.rr)
        buf.sent[seq] = Sent(pkt, pkt.sack_base, port, entropy,
                             self._path_key(port, entropy), now)
        buf.bytes += pkt.size
        self.retx_bytes += pkt.size
        if self.retx_bytes > self.retx_peak:
            self.retx_peak = self.retx_bytes
        if buf.deadline == NEVER:
            buf.deadline = now + self.cfg.leaf_rto_ps
            self._arm_retx(buf)

    def _path_key(self, port, entropy):
        return port * 256 + ((entropy >> 8) & 0xFF) % self.spine_fanout

    def _suspected(self, dst_leaf, key, now):
        paths = self.suspects.get(dst_leaf)
        if paths is None:
            return False
        entry = paths.get(key)
        if entry is None:
            return False
        if entry[0] <= now:
            del paths[key]
            if not paths:
                del self.suspects[dst_leaf]
            return False
        return True

    def _suspect(self, dst_leaf, key, lost_at, now):
        """Suspect a path that lost a packet sent at ``lost_at``: until
        ``path_suspect_ps`` from now (``gossip_suspect_ps`` while the leaves report), or
        until a packet sent on it later is acknowledged (the loss was a late packet or a
        passing drop, not a dead link)."""
        paths = self.suspects.setdefault(dst_leaf, {})
        old = paths.get(key)
        if old is None or old[0] <= now:
            self.paths_suspected += 1
        cfg = self.cfg
        paths[key] = (now + (cfg.gossip_suspect_ps if self._gossiping()
                             else cfg.path_suspect_ps), lost_at)

    def _cleared(self, paths, s):
        entry = paths.get(s.path)
        if entry is not None and s.time > entry[1]:
            del paths[s.path]
            self.paths_cleared += 1

    def _next_path(self, dst, dst_leaf, rr, now, avoid=-1):
        """(port, entropy, rr) of the next path of the walk ``rr`` toward ``dst`` that is
        neither suspected nor ``avoid``; the first one of the walk if every path is."""
        hops = self.switch.next_hops[dst]
        n = len(hops)
        if n == 0:
            return -1, 0, rr
        if self.plan:                    # plan_weights: the control plane's weights
            picked = self._plan_path(dst, dst_leaf, now, avoid)
            if picked is not None:
                return picked[0], picked[1], rr
        first = None
        start = rr
        fanout = self.spine_fanout
        tries = n * fanout if self.leaf_paths else n
        widths = self.widths.get(dst) if self.widths else None
        if widths is not None and len(widths) != n:
            widths = None                # (stale: the leaf's own row changed since)
        table = self.scores.get(dst_leaf) if self.scores else None
        if table is not None:            # path_weights: a weighted walk (fabric_weights)
            tries *= self.weight_laps
        for _ in range(tries):
            rr += 1
            up = rr % n
            port = hops[up]
            if widths is not None:       # one slot per live path beyond the uplink
                choice = (rr // n + up) % fanout     # (lap + uplink, as path_entropy)
                if choice >= widths[up]:
                    continue
                entropy = up | (choice << 8)
            elif self.leaf_paths:
                entropy = path_entropy(rr, n)
            else:
                self.entropy = (self.entropy + 1) & 0xFFFF
                entropy = self.entropy
            if first is None:
                first = (port, entropy)
            if not self.suspects and not self.hot and table is None:
                return port, entropy, rr
            key = self._path_key(port, entropy)
            if key != avoid and not self._suspected(dst_leaf, key, now) \
                    and not (self.hot and self._is_hot(dst_leaf, port, now)) \
                    and (table is None or self._weighed_ok(table, key)):
                return port, entropy, rr
        if first is None:                # no live path beyond any uplink (widths all 0)
            return -1, 0, rr
        self.all_suspected += 1          # every path suspected: walk on one step at a time
        return first[0], first[1], start + 1   # (a full lap would pick the same one again)

    def _resend(self, buf, seq, now, good=None, prio=PRIO_DATA):
        """Resend ``seq`` on another path: one of ``good`` (paths that just delivered, from
        a NACK), else the next unsuspected one of the buffer's walk; in the class
        ``prio`` (a NACKed hole's repair: ``repair_prio``)."""
        s = buf.sent[seq]
        self._suspect(buf.dst_leaf, s.path, s.time, now)
        if good:
            good = [g for g in good if self._path_key(g[0], g[1]) != s.path]
        if good:
            port, entropy = good[self.leaf_resends % len(good)]
        else:
            port, entropy, buf.rr = self._next_path(buf.dst, buf.dst_leaf, buf.rr, now,
                                                    s.path)
        if port < 0:
            self.unroutable += 1
            return
        old = s.pkt                      # (in the simulation the very object sprayed,
        flags = old.flags & ~(F_ECN_CE | F_TRIMMED)     # which a spine may have trimmed
        flags = flags | F_ECT if self.ecn else flags & ~F_ECT   # in place: resent whole)
        pkt = new_packet(DATA, old.src, old.dst, old.msg_id, old.psn, entropy,
                         old.payload_len, flags, old.msg_len, old.credit, seq & MASK32,
                         s.host_entropy, now if self.delay_on else old.sack_bits, old.ts,
                         prio)
        pkt.payload = old.payload
        s.pkt = pkt
        s.port = port
        s.entropy = entropy
        s.path = self._path_key(port, entropy)
        s.time = now
        self.leaf_resends += 1
        self.out.append((port, pkt))

    def _nack_pkt(self, pkt, now):
        buf = self.sent_bufs.get(pkt.msg_id)
        if buf is None or buf.dst_leaf != pkt.src:
            self.stale_nacks += 1        # nothing held toward that host: already acknowledged
            return
        self.nacks_received += 1
        first = unwrap32(pkt.psn, buf.lo)
        self._ack_to(buf, first, now)
        if self.sent_bufs.get(buf.dst) is not buf:
            return
        bits = pkt.sack_bits
        span = min(pkt.credit, NACK_SPAN)  # the window the bitmap covers: bit 0 = received
        sent = buf.sent
        paths = self.suspects.get(buf.dst_leaf)
        good = []
        missing = []
        for i in range(span):
            s = sent.get(first + i)
            if s is None:
                continue
            if bits >> i & 1:
                missing.append(first + i)
            else:                        # it got through: its path works (recycled for
                good.append((s.port, s.entropy))   # the resends, as REPS recycles)
                if paths and not (pkt.flags & F_TRIMMED and self._gossiping()):
                    self._cleared(paths, s)
        for seq in missing:
            if self.weights_k:           # a NACKed packet: a marked sample of its path
                self._weigh_loss(buf.dst_leaf, sent[seq].path)
            self._resend(buf, seq, now, good, self.repair_prio)

    def _ack_pkt(self, pkt, now):
        if pkt.sack_bits and self.hot_ps and not self.weights_k \
                and 0 <= pkt.src < len(self.switch.next_hops):
            self._hot_paths(pkt.src, pkt.msg_id, pkt.sack_bits, now)   # paths that marked
        if self.delay_weights and 0 <= pkt.src < len(self.switch.next_hops):
            self._weigh_delays(pkt.src, pkt.sack_bits)    # its paths' delays (fabric_delay)
        buf = self.sent_bufs.get(pkt.msg_id)
        if buf is None or buf.dst_leaf != pkt.src:
            self.stale_acks += 1
            return
        upto = unwrap32(pkt.psn, buf.lo)
        if self.weights_k and upto > buf.lo:
            self._weigh_ack(buf, upto, pkt.sack_bits)   # the marks it echoes, per path
        self._ack_to(buf, upto, now)

    def _ack_to(self, buf, upto, now):
        """Free what precedes ``upto`` (the next sequence number the destination expects)."""
        voq = self.voqs.get(buf.dst)
        top = voq.seq if voq is not None else self.tails.get(buf.dst, (0, 0))[1]
        if upto > top + 1:
            self.bad_acks += 1           # beyond anything sent: a confused or lying peer
            return
        if upto <= buf.lo:
            return
        sent = buf.sent
        paths = self.suspects.get(buf.dst_leaf)
        last = None
        for seq in range(buf.lo, upto):
            s = sent.pop(seq, None)
            if s is not None:
                buf.bytes -= s.pkt.size
                self.retx_bytes -= s.pkt.size
                last = s
                if paths:                # it got through: its path is not dead
                    self._cleared(paths, s)
        if last is not None and last.port >= 0:
            self.proven[buf.dst_leaf] = (last.port, last.entropy, now)
        if paths is not None and not paths:
            del self.suspects[buf.dst_leaf]
        buf.lo = upto
        buf.backoff = 1
        if not sent:
            del self.sent_bufs[buf.dst]
            buf.deadline = NEVER
        else:
            buf.deadline = now + self.cfg.leaf_rto_ps
            self._arm_retx(buf)

    def _arm_retx(self, buf):
        if buf.armed == NEVER:
            buf.armed = buf.deadline
            self._push(buf.deadline, T_RETX, buf)

    def _retx_timer(self, buf, now):
        buf.armed = NEVER
        if self.sent_bufs.get(buf.dst) is not buf or buf.deadline == NEVER:
            return
        if now < buf.deadline:
            self._arm_retx(buf)
            return
        self.leaf_timeouts += 1
        old = now - self.cfg.leaf_rto_ps
        due = [seq for seq, s in buf.sent.items() if s.time <= old]
        for seq in sorted(due)[:self.cfg.leaf_ack_packets]:
            self._resend(buf, seq, now)
        if buf.backoff < MAX_RETX_BACKOFF:
            buf.backoff *= 2
        buf.deadline = now + self.cfg.leaf_rto_ps * buf.backoff
        self._arm_retx(buf)

    def _steer(self, pkt, dst_leaf, now, leaf_msg=False):
        """The port for a control packet toward ``dst_leaf`` (a leaf's GRANT, ACK, NACK,
        REQUEST, or a host's ACK or NAK): back along the path of the latest DATA that came
        from that leaf, which worked a moment ago (the fabrics supported are symmetric: a
        path's reverse has the same uplink index and spine choice), with the entropy that
        makes the spines follow it; else along the path of the latest packet that leaf
        acknowledged; else the next path of its walk that it does not suspect (its own
        DATA lost there).  Leaf control thus always names its path in the entropy, and the
        far leaf answers along the same path reversed; -1 when nothing is routed (then the
        switch decides).  ``leaf_msg``: the leaf's own message, which carries the reports
        of ``plan_gossip_ps`` (``fabric_gossip``)."""
        if leaf_msg and self.gossip is not None:
            self._gossip_out(pkt, now)
        if not self.leaf_paths:
            return -1
        seen = self.echo.get(dst_leaf)
        if seen is None or now - seen[1] > self.cfg.leaf_rto_ps:
            proven = self.proven.get(dst_leaf)
            if proven is not None and now - proven[2] <= self.cfg.leaf_rto_ps:
                pkt.entropy = proven[1]  # the path of the latest packet it acknowledged
                return proven[0]
            port, entropy, self.ctrl_rr = self._next_path(pkt.dst, dst_leaf, self.ctrl_rr, now)
            if port >= 0:
                pkt.entropy = entropy
            return port
        entropy = seen[0]
        hops = self.switch.next_hops[pkt.dst]
        n = len(hops)
        if n == 0:
            return -1
        pkt.entropy = entropy
        return hops[(entropy & 0xFF) % n]

    # -- destination side: acknowledge, ask again -----------------------------------------

    def _delivered_in_order(self, key, expected, count, now):
        """``count`` packets went down in order; ``expected`` is the pair's next one."""
        n = self.ack_due.get(key, 0) + count
        if n >= self.cfg.leaf_ack_packets:
            self._send_leaf_ack(key, expected, now)
        else:
            self.ack_due[key] = n
            if n == count:
                self._push(now + self.cfg.leaf_ack_delay_ps, T_ACK, key)

    def _ack_timer(self, key, now):
        if self.ack_due.get(key):
            rb = self.reorders.get(key)
            self._send_leaf_ack(key, rb.expected if rb is not None
                                else self.rtails.get(key, 1), now)

    def _send_leaf_ack(self, key, expected, now):
        self.ack_due.pop(key, None)
        src_leaf, host = key
        self.leaf_acks += 1
        self.entropy = (self.entropy + 1) & 0xFFFF
        self._route(make_packet(kind=ACK, src=self.node, dst=src_leaf, msg_id=host,
                                psn=expected & MASK32,
                                sack_bits=self._ack_echo(key, expected, now),
                                entropy=self.entropy, ts=now, prio=PRIO_CONTROL))

    def _trimmed(self, pkt, now):
        """A spine trimmed one of the pair's packets (``trim``): the destination leaf knows
        it is lost, so it NACKs it at once instead of waiting for the hole's age (the
        trimmed header goes no further: a plain host could not use it).  The NACK names
        only the trimmed packet missing: what is below it and not held may still be on its
        way (the hole's timer NACKs it if it is not), and resending it now would double
        the load of a fabric that is trimming."""
        if pkt.corrupt or not 0 <= pkt.src < len(self.leaf_of):
            self.bad_frames += 1
            return
        key = (self.leaf_of[pkt.src], pkt.dst)
        rb = self.reorders.get(key)
        expected = rb.expected if rb is not None else self.rtails.get(key, 1)
        seq = unwrap32(pkt.aux, expected)
        offset = seq - expected
        if not 0 <= offset < NACK_SPAN or (rb is not None and seq in rb.held):
            self.trimmed_stale += 1      # beyond what one NACK names, or already here:
            return                       # the hole's timer covers it
        bits = 1 << offset
        if self.ecn:
            self._charge_repairs(pkt.dst, 1, now)
        self.trimmed_nacks += 1
        self.entropy = (self.entropy + 1) & 0xFFFF
        self._route(make_packet(kind=NACK, src=self.node, dst=key[0], msg_id=pkt.dst,
                                psn=expected & MASK32, sack_bits=bits, credit=offset + 1,
                                flags=F_TRIMMED if self._gossiping() else 0,
                                entropy=self.entropy, ts=now, prio=PRIO_CONTROL))

    def _send_leaf_nack(self, rb, now):
        src_leaf, host = rb.key
        bits = 0
        held = rb.held
        for i in range(NACK_SPAN):
            if rb.expected + i not in held:
                bits |= 1 << i
        span = min(max(held) - rb.expected, NACK_SPAN)   # the holes below the highest held
        bits &= (1 << span) - 1
        if self.ecn:
            self._charge_repairs(host, bin(bits).count("1"), now)
        self.leaf_nacks += 1
        self.entropy = (self.entropy + 1) & 0xFFFF
        self._route(make_packet(kind=NACK, src=self.node, dst=src_leaf, msg_id=host,
                                psn=rb.expected & MASK32, sack_bits=bits, credit=span,
                                entropy=self.entropy, ts=now, prio=PRIO_CONTROL))
