"""Sender side of one GSE message: segmentation, credit, spraying and loss recovery.

Rules, in the order the sender applies them:

* The first ``unsched`` bytes go at once without credit (the unscheduled window); the rest
  is announced with a REQUEST carrying the total credit needed, and sent only against
  GRANTed credit.  Resends of trimmed packets spend credit (the receiver grants them
  again, having seen the trim); resends of packets lost silently (RACK) and RTO and tail
  probes do not: what the fabric lost never used the receiver's downlink, so its credit
  is still good for the resend.
* Every packet takes an entropy value from the message's selector: recycled from clean
  ACKs (REPS-style) or explored; values reported with ECN-CE, a trim (NACK) or a timeout
  are not recycled and are penalised.
* Loss is inferred three ways: a NACK (trimmed header) means retransmit at once; SACK
  evidence means a hole overtaken by a packet sent at least ``reorder_window_ps`` later
  (RACK-style: spraying reorders by up to the queueing-delay difference between paths,
  which trimming bounds, so time, not a packet count, is the right yardstick); a
  tail-loss probe two smoothed RTTs after the last packet exposes a lost tail; the RTO,
  with backoff, is the backstop.
* Credit starvation (a lost GRANT or REQUEST) is repaired by re-sending the REQUEST, which
  carries absolute totals so that a duplicate is harmless.  The total leaves out the
  resends of trimmed packets: the receiver adds those itself when it sees the trim, and
  a total that counted them would hide, behind the receiver's larger count, a loss found
  by RACK at the same time.
* Control traffic is sprayed and steered like data: a REQUEST takes the entropy of the
  newest ACK or GRANT, a path that just worked (the receiver's GRANTs echo the
  entropy it last heard from the sender);
  the entropy of a packet lost silently (found by RACK or the RTO, not trimmed) and of a
  REQUEST that brought no GRANT is suspected dead until ``suspect_until`` (the caller's
  clock plus ``entropy_suspect_ps``), so a path that drops without a word (a dead link
  not yet routed around) is left within a round trip or two.
* GRANTs carry the message's cumulative credit, so a lost GRANT is made up by the next.
"""

try:
    import cython  # for the class decorator below: a no-op in pure Python
    cython.compiled       # the real Cython (gse.wire.packet says why the check)
except (ImportError, AttributeError):
    from gse import _no_cython as cython

from array import array

from gse.agents.entropy import EntropySelector
from gse.agents.phases import DONE, SENDING, Phased, enter
from gse.common.bits import le64, lowest_bit
from gse.common.fifo import Fifo
from gse.common.sendlog import SendLog
from gse.wire.packet import (DATA, F_ECT, F_LAST, F_RETX, F_UNSCHED, PRIO_CONTROL, PRIO_DATA,
                             REQUEST, new_packet)

NEVER = -1
MASK32 = 0xFFFFFFFF
TAIL_PKTS = 8                # the last packets of a message, sent on known paths ...
WARY = 4                     # ... when this many paths to the destination are suspected
AMBIGUOUS = 0x10000          # sent_entropy flag: the psn was sent more than once
SIGN32 = 0x80000000
WRAP32 = 0x100000000
# one-slot arrays repeated into a message's per-psn arrays: one allocation per message
# and array (``array(code, [v]) * n`` makes a list and an array before the result)
UNSENT = array("q", [-1])
NO_ENTROPY = array("i", [0])


# compiled, not tracked by the garbage collector: what it holds (its FIFOs of integers and
# (time, psn) pairs, arrays, its entropy selector) never refers back to it, so it cannot be in
# a cycle; one made and freed per message
@cython.no_gc
@cython.cclass
class OutMsg(Phased):
    __slots__ = ("msg_id", "src", "dst", "size", "mtu", "npkts", "start_ps",
                 "next_new", "unsched_pkts", "unsched_payload",
                 "credit", "credit_received", "need_total", "nacked",
                 "acked", "cum_acked", "n_acked", "sent_at", "sent_entropy", "inflight",
                 "max_acked_sent", "retx", "in_retx", "probe",
                 "rto_deadline", "rto_backoff", "req_deadline", "req_backoff", "req_seq",
                 "req_entropy", "back_entropy",
                 "tlp_deadline", "last_progress",
                 "entropy", "retransmits", "in_ring", "finish_ps")

    def __init__(self, msg_id, src, dst, size, mtu, unsched_bytes, entropy_base, config,
                 now, dead=None, cursor=0):
        self.setup(msg_id, src, dst, size, mtu, unsched_bytes, entropy_base, config, now,
                   dead, cursor)

    def setup(self, msg_id, src, dst, size, mtu, unsched_bytes, entropy_base, config, now,
              dead, cursor):
        """What ``__init__`` does.  The host makes a message as ``OutMsg.__new__(OutMsg)``
        then this: compiled, a C method taking C integers, without the constructor's
        argument handling (as ``gse.wire.packet.new_packet``), once per message."""
        if size <= 0 or size >= 2 ** 32:
            raise ValueError("message %d: size must be in 1..2^32-1 bytes, got %d"
                             % (msg_id, size))
        self.msg_id = msg_id
        self.src = src
        self.dst = dst
        # (computed from the fields: C integers, compiled)
        self.size = size
        self.mtu = mtu
        self.npkts = (self.size + self.mtu - 1) // self.mtu
        self.start_ps = now
        self.next_new = 0
        self.unsched_pkts = unsched_bytes
        self.unsched_pkts //= self.mtu          # the whole packets the window holds
        if self.unsched_pkts >= self.npkts:
            self.unsched_pkts = self.npkts
            self.unsched_payload = self.size
        else:
            self.unsched_payload = self.unsched_pkts * self.mtu
        self.credit = 0
        self.credit_received = 0
        self.need_total = self.size - self.unsched_payload
        self.nacked = 0                # of need_total: resends of trimmed packets
        self.acked = bytearray((self.npkts + 7) // 8 + 8)
        self.cum_acked = 0
        self.n_acked = 0
        # per psn, as flat C integers (no boxed int per packet sent): the last transmit
        # time (-1 while queued for retransmission) and that transmission's entropy
        self.sent_at = UNSENT * self.npkts
        self.sent_entropy = NO_ENTROPY * self.npkts
        self.inflight = SendLog()        # (sent_at, psn) in transmit order
        self.max_acked_sent = -1          # latest transmit time among acknowledged psns
        # psns queued for retransmission, and a flag per psn: None until the first loss
        # (mark_lost), as most messages lose nothing
        self.retx = None
        self.in_retx = None
        self.probe = 0                 # credit-free sends owed to RTO and tail probes
        self.rto_deadline = NEVER
        self.tlp_deadline = NEVER      # tail-loss probe armed once the last packet is out
        self.last_progress = now
        self.rto_backoff = 1
        self.req_deadline = NEVER
        self.req_backoff = 1
        self.req_seq = 0
        self.req_entropy = -1          # entropy of the last REQUEST
        self.back_entropy = -1         # of the newest ACK or GRANT that arrived
        self.entropy = EntropySelector.__new__(EntropySelector)     # (as OutMsg: setup)
        self.entropy.setup(entropy_base, config.n_entropies, config.entropy_penalty, dead,
                           cursor, config.entropy_trim_penalty)
        self.retransmits = 0
        self.phase = SENDING           # gse.agents.phases: changed by enter() only
        self.in_ring = False
        self.finish_ps = NEVER

    # -- what to send -------------------------------------------------------------------

    def payload_of(self, psn):
        if psn == self.npkts - 1:
            return self.size - psn * self.mtu
        return self.mtu

    def can_send(self):
        if self.phase == DONE:
            return False
        retx = self.retx
        while retx and self.is_acked(retx[0]):
            self.in_retx[retx.popleft()] = 0
        if retx:
            return self.probe > 0 or self.credit >= self.payload_of(retx[0])
        psn = self.next_new
        if psn >= self.npkts:
            return False
        return psn < self.unsched_pkts or self.credit >= self.payload_of(psn)

    def next_packet(self, now):
        """The next DATA packet (call only when can_send() is True)."""
        flags = F_ECT
        probe = False
        if self.retx:
            psn = self.retx.popleft()
            self.in_retx[psn] = 0
            length = self.payload_of(psn)
            if self.probe > 0:
                self.probe -= 1
                probe = True
            else:
                self.credit -= length
            flags |= F_RETX
            self.retransmits += 1
        else:
            psn = self.next_new
            self.next_new = psn + 1
            length = self.payload_of(psn)
            if psn < self.unsched_pkts:
                flags |= F_UNSCHED
            else:
                self.credit -= length
        if psn == self.npkts - 1:
            flags |= F_LAST
        sent = now                       # (one Python int for its uses, compiled)
        self.sent_at[psn] = sent
        self.inflight.append(sent, psn)
        if probe:                        # the last resort goes where an ACK just came from
            entropy = self.trusted_entropy(now, -1)
        elif ((flags & F_RETX or psn >= self.npkts - TAIL_PKTS) and not self.entropy.recycled
              and self.entropy.dead and len(self.entropy.dead) >= WARY):
            # while paths die (several suspected: more than random loss would make), a
            # lost resend or tail packet is found late (nothing sent after it exposes
            # it): no exploring for them
            entropy = self.trusted_entropy(now, -1)
        else:
            entropy = self.entropy.next(now)
        self.sent_entropy[psn] = entropy
        pkt = new_packet(DATA, self.src, self.dst, self.msg_id, psn, entropy, length, flags,
                         self.size, 0, 0, 0, 0, sent, PRIO_DATA)
        if flags & F_UNSCHED:
            pkt.credit = self.unsched_payload
        elif flags & F_RETX:
            # an ACK of a resent psn may be for any of its transmissions: its entropy is
            # not recycled (a first copy held up in a queue must not vouch for the path
            # of its resend, which may be dead)
            self.sent_entropy[psn] = entropy | AMBIGUOUS
        return pkt

    def request(self, now, retx, suspect_until=0):
        """A REQUEST with absolute totals: duplicates and losses are harmless.

        A re-request (``retx``: starved of credit for a whole timeout) suspects the
        entropy of the last one and takes another: its path, or the grants' way back
        along it, may be broken."""
        self.req_seq += 1
        if retx and self.req_entropy >= 0:
            self._lost_on(self.req_entropy, suspect_until)
        entropy = self.trusted_entropy(now, self.req_entropy if retx else -1)
        self.req_entropy = entropy
        return new_packet(REQUEST, self.src, self.dst, self.msg_id, self.req_seq, entropy, 0,
                          F_RETX if retx else 0, self.size, self.need_total - self.nacked,
                          self.credit_received, 0, 0, now, PRIO_CONTROL)

    def trusted_entropy(self, now, avoid):
        """The path most likely to work now, for a REQUEST or a probe: the entropy of the
        newest ACK or GRANT (congested or not: it arrived), unless suspected since or
        ``avoid``; else the selector's best guess (``EntropySelector.control``)."""
        entropy = self.back_entropy
        if entropy < 0 or entropy == avoid or self.entropy.is_dead(entropy, now):
            entropy = self.entropy.control(now)
        return entropy

    def on_grant(self, total_wire):
        """A GRANT carrying the message's cumulative credit (its low 32 bits): take what
        is new, so a lost GRANT is made up by the next and a late or duplicate one adds
        nothing.  Returns the new credit (0 for a stale GRANT)."""
        ref = self.credit_received
        d = (total_wire - ref) & MASK32          # serial-number arithmetic (RFC 1982)
        if d >= SIGN32:
            d -= WRAP32
        if d <= 0:
            return 0
        self.credit += d
        self.credit_received = ref + d
        return d

    def acked_packets(self):
        return self.n_acked

    def release(self):
        """Done: let go of the per-packet state (the acknowledgement bitmap, the per-psn
        arrays, the FIFOs, the entropy selector) now, while it is in the cache.  The
        message object itself lives on until its stale timers pop (the RTO and tail-probe
        entries of the host's heap, which find it ``DONE`` and read nothing else): an RTO,
        that is a hundred or more later messages of a busy host, whose parts would
        otherwise be held, and freed cold, with it."""
        self.acked = None
        self.sent_at = None
        self.sent_entropy = None
        self.inflight = None
        self.retx = None
        self.in_retx = None
        self.entropy = None

    def waiting_for(self):
        """What this unfinished message waits for (``gse.agents.interface.CAUSES``): read
        by a watchdog that has found the run stuck."""
        if self.rto_backoff > 1:
            return "path"            # timed out, and nothing acknowledged since
        if self.can_send():
            return "send"
        if self.credit_received < self.need_total:
            return "grant"
        return "timer" if self.retx else "ack"

    def starved(self):
        """Waiting for credit that has not come."""
        return (self.phase != DONE and self.credit_received < self.need_total
                and not self.can_send())

    # -- feedback -----------------------------------------------------------------------

    def is_acked(self, psn):
        return bool(self.acked[psn >> 3] & (1 << (psn & 7)))

    def _set_acked(self, psn, marked):
        self.acked[psn >> 3] |= 1 << (psn & 7)
        self.n_acked += 1
        entropy = self.sent_entropy[psn]
        # (not once every packet is acknowledged: the message is done, no packet will
        # take the value; a one-packet message's selector then never holds one)
        if entropy != marked and entropy < AMBIGUOUS and self.n_acked < self.npkts:
            self.entropy.recycle(entropy)
        t = self.sent_at[psn]
        if t > self.max_acked_sent:
            self.max_acked_sent = t

    def on_ack(self, cum, sack_base, sack_bits, marked=-1):
        """Apply a cumulative ACK and SACK bitmap; return how many psns were newly acked.

        ``marked`` is the entropy the ACK reports congested (-1 if none): every other newly
        acknowledged packet's entropy is recycled."""
        before = self.n_acked
        npkts = self.npkts
        if cum > npkts:
            cum = npkts
        acked = self.acked
        psn = self.cum_acked
        while psn < cum:
            if not acked[psn >> 3] & (1 << (psn & 7)):
                self._set_acked(psn, marked)
            psn += 1
        if cum > self.cum_acked:
            self.cum_acked = cum
        if sack_bits:
            # a C unsigned 64-bit integer in the compiled build, which refuses a wider one
            bits = sack_bits
            new = bits & ~le64(acked, sack_base >> 3)
            while new:
                p = sack_base + lowest_bit(new)
                if p < npkts:
                    self._set_acked(p, marked)
                new &= new - 1
        while self.cum_acked < npkts and self.is_acked(self.cum_acked):
            self.cum_acked += 1
        if self.n_acked >= npkts and self.phase != DONE:
            enter(self, DONE)
        return self.n_acked - before

    def detect_losses(self, window_ps, suspect_until=0):
        """SACK-based fast retransmit: a hole overtaken by a packet sent ``window_ps`` later.

        Returns the payload bytes newly queued for retransmission; they are resent on
        the credit they were first sent with (a packet lost in the fabric never reached
        the receiver's downlink, so its resend does not add to what the downlink was
        promised).  The holes' entropies are suspected dead until ``suspect_until``."""
        inflight = self.inflight
        limit = self.max_acked_sent - window_ps
        lost = 0
        while inflight:
            sent = inflight.first_sent()
            psn = inflight.first_psn()
            if self.sent_at[psn] != sent or self.is_acked(psn):
                inflight.popleft()       # resent since, or delivered: nothing to watch
                continue
            if sent > limit:
                break
            inflight.popleft()
            if self.mark_lost(psn):
                lost += self.payload_of(psn)
                self.probe += 1          # resent on the credit it was sent with
                self._lost_on(self.sent_entropy[psn] & 0xFFFF, suspect_until)
        return lost

    def _lost_on(self, entropy, suspect_until):
        """A packet sent with ``entropy`` vanished: suspect the path until
        ``suspect_until``, or (0: freezing off) penalise it as a trim would."""
        if suspect_until > 0:
            self.entropy.suspect(entropy, suspect_until)
        else:
            self.entropy.penalise(entropy)

    def queued(self, psn):
        """Whether psn waits in the retransmission queue."""
        return self.in_retx is not None and self.in_retx[psn] != 0

    def mark_lost(self, psn):
        """Queue psn for retransmission (once); it needs credit like new data."""
        if self.is_acked(psn) or self.queued(psn):
            return False
        if self.retx is None:           # the first loss
            self.retx = Fifo()
            self.in_retx = bytearray(self.npkts)
        self.in_retx[psn] = 1
        self.retx.append(psn)
        self.sent_at[psn] = -1
        return True

    def oldest_outstanding(self):
        """Send time of the oldest packet still unacknowledged and not queued for
        retransmission, or -1.  Entries that no longer matter are dropped on the way."""
        inflight = self.inflight
        while inflight:
            sent = inflight.first_sent()
            psn = inflight.first_psn()
            if self.sent_at[psn] == sent and not self.is_acked(psn) and not self.queued(psn):
                return sent
            inflight.popleft()
        return -1

    def probe_tail(self):
        """Tail-loss probe: resend the newest outstanding packet, without credit.

        When the end of a message is lost no later packet exists to expose the hole to
        RACK; the probe's ACK does, two round trips after the tail instead of an RTO."""
        for sent, psn in reversed(self.inflight):
            if self._probe_if_outstanding(sent, psn):
                return psn
        return -1

    def on_timeout(self, suspect_until=0):
        """RTO: probe with the oldest outstanding packet, without credit.

        Only one packet is presumed lost: the probe's ACK carries the SACK state, and any
        remaining hole is then found by the RACK rule (the probe was sent long after it),
        so a lost tail ACK does not cost a whole window of spurious retransmissions.  But
        the paths of every packet still out, an earlier probe's included, are suspected
        until ``suspect_until``: a whole timeout without an answer, none of them is safe
        for the probe."""
        if suspect_until > 0:
            for sent, psn in self.inflight:
                if self.sent_at[psn] == sent and not self.is_acked(psn):
                    self.entropy.suspect(self.sent_entropy[psn] & 0xFFFF, suspect_until)
        if self.retx and self.probe == 0:
            # A retransmission waits for credit that will not come (its need was never
            # announced, or the grant was lost and the message looks satisfied): the
            # timeout lets it go as a probe rather than stall the message for ever.
            self.probe = 1
            return self.retx[0]
        for sent, psn in self.inflight:
            if self._probe_if_outstanding(sent, psn):
                self._lost_on(self.sent_entropy[psn] & 0xFFFF, suspect_until)
                return psn
        return -1

    def _probe_if_outstanding(self, sent, psn):
        """Queue ``psn`` first for a credit-free resend if that transmission is still out."""
        if self.sent_at[psn] != sent or self.is_acked(psn) or self.queued(psn):
            return False
        self.mark_lost(psn)
        self.retx.remove(psn)
        self.retx.appendleft(psn)
        self.probe += 1
        return True
