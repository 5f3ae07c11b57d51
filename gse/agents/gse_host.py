"""The GSE host agent: one NIC, many messages out and in, no clock and no socket.

Driven exactly like aioquic's connection: the runtime hands it ``start_message``,
``receive(pkt, now)`` and ``on_timer(now)``; it pulls packets with ``poll(now)`` whenever the
NIC is free and re-arms one timer at ``next_deadline()``.  The NIC sends control packets
(ACK, NACK, GRANT, REQUEST) first, then data round-robin over the messages that may send
(htsim's NIC role).  Timers are named deadlines (``deadline(kind, msg)``: the grant pacer
and the expiry of unproven grants; per message the re-REQUEST, RTO and tail-loss probe)
kept in one heap with lazy deletion: a deadline moved later is checked when its old entry
pops, one moved earlier gets an entry of its own (``_move``).  A message's phase
(``gse.agents.phases``) changes only through ``phases.enter``.
"""

from gse.agents.events import completed
from gse.agents.interface import HostAgent
from gse.agents.phases import DONE, DRAINING, SENDING, enter
from gse.agents.receiver import ReceiverSide
from gse.agents.sender import NEVER, OutMsg
from gse.common.fifo import Fifo
from gse.wire.packet import ACK, DATA, F_ECN_CE, F_RETX, GRANT, NACK, REQUEST

T_PACER = 0
T_RTO = 1
T_REQUEST = 2
T_TLP = 3
T_EXPIRE = 4

# the named deadlines (``GseHost.deadline``): the host's, then each message's
HOST_DEADLINES = ("pacer", "expiry")
MESSAGE_DEADLINES = ("request", "rto", "tlp")


def plain_random(rng):
    """Whether ``rng`` is a ``random.Random`` (recognised by name: agents do not import
    ``random``, tests/test_architecture.py)."""
    cls = type(rng)
    return cls.__name__ == "Random" and cls.__module__ == "random"


def randbelow(rng, n):
    """``rng.randrange(n)`` (n >= 1), the same number from the same state: for a
    ``random.Random`` as CPython draws it (``Random._randbelow``: ``n.bit_length()`` bits,
    drawn again while not below n), without randrange's Python frames, once per message;
    any other generator is asked its own ``randrange``.  (``GseHost.draw_cursor`` is the
    same with the checks done once per host.)"""
    if n < 1 or not plain_random(rng):
        return rng.randrange(n)
    k = n.bit_length()
    r = rng.getrandbits(k)
    while r >= n:
        r = rng.getrandbits(k)
    return r


class GseHost(HostAgent):
    __slots__ = ("config", "rng", "out", "ring", "control",
                 "receiver", "timeouts",
                 "fast_retx_bytes", "nack_retx", "requests_sent", "retransmits",
                 "retransmit_bytes", "srtt", "tail_probes", "rto_ps", "reorder_window_ps",
                 "unknown_grants", "expiry_at", "paths", "acked_done",
                 "n_entropies", "cursor_bits", "getrandbits", "last_out")

    def __init__(self, addr, config, rng, downlink_gbps):
        HostAgent.__init__(self, addr)
        self.config = config
        self.rng = rng
        self.out = {}             # msg_id -> OutMsg
        self.last_out = None      # the message of the latest ACK, GRANT or NACK (_outgoing)
        self.ring = Fifo()       # messages that may have data to send
        self.control = Fifo()    # control packets, sent before data
        self.receiver = ReceiverSide(addr, config, downlink_gbps, self._events)
        self.timeouts = 0
        self.fast_retx_bytes = 0
        self.nack_retx = 0
        self.requests_sent = 0
        self.retransmits = 0
        self.retransmit_bytes = 0
        self.srtt = 0             # smoothed RTT from ACK timestamp echoes (0: no sample)
        self.tail_probes = 0
        self.unknown_grants = 0   # GRANTs for no message of ours (late, or forged)
        self.expiry_at = NEVER    # a T_EXPIRE timer is pending for then
        # read on every ACK: kept as plain attributes, not looked up on the config object
        self.rto_ps = config.rto_ps
        self.reorder_window_ps = config.reorder_window_ps
        # per destination: (the base of its entropy range, {entropy: until when its path
        # is suspected dead}), shared by the messages to it (EntropySelector.suspect):
        # what one learnt about the paths the next need not learn again
        self.paths = {}
        self.acked_done = 0       # packets of the messages finished here (progress())
        # a message's entropy cursor (draw_cursor): randbelow(rng, n_entropies) with what
        # it looks up done once; cursor_bits 0: not a random.Random, ask randbelow
        self.n_entropies = config.n_entropies
        plain = plain_random(rng) and self.n_entropies >= 1
        self.cursor_bits = self.n_entropies.bit_length() if plain else 0
        self.getrandbits = rng.getrandbits if plain else None

    # -- application ----------------------------------------------------------------------

    def start_message(self, msg_id, dst, size, now):
        if msg_id in self.out:
            raise ValueError("host %d: message id %d is already in use" % (self.addr, msg_id))
        if dst == self.addr:
            raise ValueError("host %d: message %d addressed to itself" % (self.addr, msg_id))
        cfg = self.config
        paths = self.paths.get(dst)
        if paths is None:             # the entropy range of dst, and its suspected values
            paths = self.paths[dst] = (self.rng.getrandbits(16), {})
        msg = OutMsg.__new__(OutMsg)        # (OutMsg.setup: see there)
        msg.setup(msg_id, self.addr, dst, size, cfg.mtu, cfg.unsched_bytes, paths[0], cfg,
                  now, paths[1], self.draw_cursor())
        self.out[msg_id] = msg
        if msg.need_total > 0:
            self._send_request(msg, now, False)
        self._activate(msg)

    def draw_cursor(self):
        """Where a new message's entropy walk starts: ``randbelow(rng, n_entropies)``, the
        same number, with the generator's type checked and the bits counted once."""
        k = self.cursor_bits
        if k == 0:
            return randbelow(self.rng, self.n_entropies)
        n = self.n_entropies
        r = self.getrandbits(k)
        while r >= n:
            r = self.getrandbits(k)
        return r

    # -- runtime interface ----------------------------------------------------------------

    def has_work(self):
        return bool(self.control) or bool(self.ring)

    def poll(self, now, data_ok=True):
        """The next packet for the NIC, or None (control only while ``data_ok`` is False)."""
        if self.control:
            return self.control.popleft()
        if not data_ok:
            return None
        ring = self.ring
        while ring:
            msg = ring.popleft()
            if msg.can_send():
                pkt = msg.next_packet(now)
                ring.append(msg)
                if pkt.flags & F_RETX:
                    self.retransmits += 1
                    self.retransmit_bytes += pkt.payload_len
                if msg.rto_deadline == NEVER:
                    msg.rto_deadline = now + self.rto_ps * msg.rto_backoff
                    self._push(msg.rto_deadline, T_RTO, msg)
                if msg.phase == SENDING and msg.next_new == msg.npkts:
                    enter(msg, DRAINING)      # the last new packet: arm the tail probe
                    msg.tlp_deadline = now + self._pto()
                    self._push(msg.tlp_deadline, T_TLP, msg)
                return pkt
            msg.in_ring = False
        return None

    def next_deadline(self):
        return self.timers.first()

    def deadline(self, kind, msg=None):
        """The named deadline ``kind``, or NEVER (-1) if it is not armed: the host's
        ``"pacer"`` (the next GRANT) and ``"expiry"`` (of unproven messages granted on a
        REQUEST alone), or ``msg``'s (an ``OutMsg`` or its id) ``"request"`` (re-REQUEST),
        ``"rto"`` and ``"tlp"`` (tail-loss probe).

        The timer heap implements them lazily: a deadline moved later keeps its old entry,
        which on popping finds it moved and pushes it again.  So ``next_deadline()`` is
        never later than the earliest of these, and may be earlier (the host then wakes,
        finds nothing due, and sleeps again); the invariants (``gse.agents.invariants``)
        check that every armed deadline has an entry due no later than it."""
        if kind == "pacer":
            sched = self.receiver.scheduler
            return sched.next_time if sched.armed else NEVER
        if kind == "expiry":
            return self.expiry_at
        if kind not in MESSAGE_DEADLINES:
            raise ValueError("no deadline named %r (%s)"
                             % (kind, ", ".join(HOST_DEADLINES + MESSAGE_DEADLINES)))
        if not isinstance(msg, OutMsg):
            msg = self.out[msg]
        if kind == "rto":
            return msg.rto_deadline
        if kind == "tlp":
            return msg.tlp_deadline
        return msg.req_deadline

    def deadlines(self):
        """Every armed named deadline, ``{(kind, msg_id or None): time}``: what a test
        asserts after each step, as aioquic's tests assert ``get_timer()``."""
        armed = {}
        for kind in HOST_DEADLINES:
            t = self.deadline(kind)
            if t != NEVER:
                armed[(kind, None)] = t
        for msg_id, msg in self.out.items():
            for kind in MESSAGE_DEADLINES:
                t = self.deadline(kind, msg)
                if t != NEVER:
                    armed[(kind, msg_id)] = t
        return armed

    def on_packet(self, pkt, now):
        """The dispatch table on packet kinds (``HostAgent.receive`` checked the packet)."""
        kind = pkt.kind
        if kind == DATA:
            due = self.receiver.on_data(pkt, now, self.control)
            if due >= 0:
                self._push(due, T_PACER, None)
        elif kind == ACK:
            self._on_ack(pkt, now)
        elif kind == GRANT:
            self._on_grant(pkt, now)
        elif kind == NACK:
            self._on_nack(pkt, now)
        elif kind == REQUEST:
            due = self.receiver.on_request(pkt, now, self.control)
            if due >= 0:
                self._push(due, T_PACER, None)
        else:
            return False
        return True

    def on_timer_kind(self, kind, msg, t, now):
        """The dispatch table on timer kinds (``HostAgent.on_timer`` pops them)."""
        if kind == T_PACER:
            self._on_pacer(now)
        elif kind == T_RTO:
            self._on_rto(t, msg, now)
        elif kind == T_TLP:
            self._on_tlp(msg, now)
        elif kind == T_EXPIRE:
            self._on_expiry(t, now)
        else:
            self._on_request_timer(t, msg, now)

    # -- sender feedback ------------------------------------------------------------------

    def _outgoing(self, msg_id):
        """``self.out.get(msg_id)``, the message of the latest feedback asked first (a
        message's ACKs come in trains): no boxed integer nor dict lookup."""
        msg = self.last_out
        if msg is None or msg.msg_id != msg_id:
            msg = self.out.get(msg_id)
            if msg is not None:
                self.last_out = msg
        return msg

    def _on_ack(self, pkt, now):
        msg = self._outgoing(pkt.msg_id)
        if msg is None or msg.dst != pkt.src:
            self.stray += 1
            return
        marked = -1
        if pkt.flags & F_ECN_CE:                      # echoed congestion: steer away
            marked = pkt.entropy
            msg.entropy.penalise(marked)
        msg.back_entropy = pkt.entropy                # a path that works, both ways
        msg.entropy.alive(pkt.entropy)
        sample = now - pkt.ts
        if 0 < sample < self.rto_ps:
            self.srtt = sample if self.srtt == 0 else (7 * self.srtt + sample) // 8
        if msg.on_ack(pkt.psn, pkt.sack_base, pkt.sack_bits, marked):
            self._move(msg, T_RTO, msg.rto_deadline, now + self.rto_ps)
            msg.rto_deadline = now + self.rto_ps
            msg.rto_backoff = 1
            msg.last_progress = now
        if msg.phase == DONE:
            self._finish(msg, now)
            return
        lost = msg.detect_losses(self.reorder_window_ps, self._suspect_until(now, 0))
        if lost:
            self.fast_retx_bytes += lost
        self._activate(msg)

    def _on_nack(self, pkt, now):
        msg = self._outgoing(pkt.msg_id)
        if msg is None or msg.dst != pkt.src or pkt.psn >= msg.next_new:
            self.stray += 1          # no such message, or a packet never sent: a lie
            return
        msg.entropy.penalise_trim(pkt.entropy)
        if msg.mark_lost(pkt.psn):
            # The receiver raised its own demand for this packet when it sent the NACK.
            msg.need_total += msg.payload_of(pkt.psn)
            msg.nacked += msg.payload_of(pkt.psn)
            self.nack_retx += 1
            self._activate(msg)

    def _on_grant(self, pkt, now):
        msg = self._outgoing(pkt.msg_id)
        if msg is None or msg.dst != pkt.src:
            self.unknown_grants += 1  # late grant for a finished message, or forged
            return
        msg.back_entropy = pkt.entropy
        msg.entropy.alive(pkt.entropy)
        if msg.on_grant(pkt.aux) <= 0:
            return                   # stale: a later GRANT already brought this credit
        msg.req_backoff = 1
        if msg.req_deadline != NEVER:
            self._move(msg, T_REQUEST, msg.req_deadline, now + self.config.request_timeout_ps)
            msg.req_deadline = now + self.config.request_timeout_ps
        self._activate(msg)

    def _finish(self, msg, now):
        msg.finish_ps = now
        self.acked_done += msg.npkts
        del self.out[msg.msg_id]
        if self.last_out is msg:
            self.last_out = None
        self._events.append(completed(msg.msg_id, msg.retransmits, now))
        msg.release()

    # -- timers ---------------------------------------------------------------------------

    def _on_pacer(self, now):
        sched = self.receiver.scheduler
        if not sched.armed or now < sched.next_time:
            return                   # stale entry
        grant = self.receiver.grant(now)
        if grant is not None:
            self.control.append(grant)
        if sched.armed:
            self._push(sched.next_time, T_PACER, None)
        elif self.receiver.granted_unproven:
            self._arm_expiry()

    def _arm_expiry(self):
        """The pacer went idle with messages granted on their REQUEST alone: expire them
        on time (while it runs, each grant expires what is due)."""
        rx = self.receiver
        t = rx.oldest_unproven_grant()
        if t < 0:
            return
        t += rx.expire_ps
        if self.expiry_at == NEVER or t < self.expiry_at:
            self.expiry_at = t
            self._push(t, T_EXPIRE, None)

    def _on_expiry(self, t, now):
        if t != self.expiry_at:
            return                   # superseded
        self.expiry_at = NEVER
        rx = self.receiver
        rx.expire(now)
        if not rx.scheduler.armed:
            self._arm_expiry()

    def _on_rto(self, t, msg, now):
        if msg.phase == DONE or msg.rto_deadline == NEVER:
            return
        if now < msg.rto_deadline:
            self._push(msg.rto_deadline, T_RTO, msg)
            return
        # The timeout counts from the oldest packet still out, not from the last ACK: a
        # message that shares a busy NIC with many others sends slowly, and its newest
        # packets have had no time to be acknowledged.
        oldest = msg.oldest_outstanding()
        if oldest >= 0 and now < oldest + self.rto_ps * msg.rto_backoff:
            msg.rto_deadline = oldest + self.rto_ps * msg.rto_backoff
            self._push(msg.rto_deadline, T_RTO, msg)
            return
        # (suspected at least until the next timeout: a probe must not retry a dead path)
        if msg.on_timeout(self._suspect_until(now, 4 * self.rto_ps * msg.rto_backoff)) < 0:
            msg.rto_deadline = NEVER  # nothing outstanding: the next send re-arms
            return
        self.timeouts += 1
        cfg = self.config
        if msg.rto_backoff * cfg.rto_ps < cfg.rto_max_ps:
            msg.rto_backoff *= 2
        msg.rto_deadline = now + cfg.rto_ps * msg.rto_backoff
        self._push(msg.rto_deadline, T_RTO, msg)
        self._activate(msg)

    def _pto(self):
        """Tail-loss probe timeout: two smoothed RTTs, within [tlp_min_ps, rto_ps)."""
        cfg = self.config
        pto = 2 * self.srtt
        if pto < cfg.tlp_min_ps:
            return cfg.tlp_min_ps
        return pto if pto < cfg.rto_ps else cfg.rto_ps

    def _on_tlp(self, msg, now):
        """One probe per quiet spell: re-armed while ACKs keep arriving."""
        if msg.phase == DONE or msg.tlp_deadline == NEVER:
            return
        due = msg.last_progress + self._pto()
        if due > msg.tlp_deadline and due > now:
            msg.tlp_deadline = due
            self._push(due, T_TLP, msg)
            return
        msg.tlp_deadline = NEVER      # spent: never re-armed (DRAINING arms it once)
        if msg.probe_tail() >= 0:
            self.tail_probes += 1
            self._activate(msg)

    def _on_request_timer(self, t, msg, now):
        if msg.phase == DONE or msg.req_deadline == NEVER:
            return
        if now < msg.req_deadline:
            self._push(msg.req_deadline, T_REQUEST, msg)
            return
        cfg = self.config
        if msg.starved():
            self.control.append(msg.request(
                now, True, self._suspect_until(now, 4 * cfg.request_timeout_ps * msg.req_backoff)))
            self.requests_sent += 1
            if msg.req_backoff * cfg.request_timeout_ps < cfg.rto_max_ps:
                msg.req_backoff *= 2
        elif msg.credit_received >= msg.need_total:
            msg.req_deadline = NEVER
            return
        msg.req_deadline = now + cfg.request_timeout_ps * msg.req_backoff
        self._push(msg.req_deadline, T_REQUEST, msg)

    # -- helpers --------------------------------------------------------------------------

    def _suspect_until(self, now, at_least):
        """Until when a path that lost a packet silently (RACK, RTO, an unanswered
        REQUEST: not a trim) is presumed dead, ``entropy_suspect_ps`` or ``at_least``;
        0 when suspicion is off."""
        suspect = self.config.entropy_suspect_ps
        if not suspect:
            return 0
        return now + (suspect if suspect > at_least else at_least)

    def _send_request(self, msg, now, retx):
        self.control.append(msg.request(now, retx))
        self.requests_sent += 1
        if msg.req_deadline == NEVER:
            msg.req_deadline = now + self.config.request_timeout_ps
            self._push(msg.req_deadline, T_REQUEST, msg)

    def _activate(self, msg):
        if not msg.in_ring and msg.can_send():
            msg.in_ring = True
            self.ring.append(msg)

    def _move(self, msg, kind, old, t):
        """A deadline of ``msg`` moves from ``old`` to ``t``.  Later: its pending entry
        pops first and pushes it again.  Earlier, or not armed before: it needs an entry
        of its own, or it would fire late (at ``old``) or never."""
        if old == NEVER or t < old:
            self._push(t, kind, msg)

    def _push(self, t, kind, msg):
        self.timers.push(t, kind, msg)

    def counters(self):
        rx = self.receiver
        return {
            "malformed": self.malformed, "stray": self.stray, "timeouts": self.timeouts,
            "fast_retx_bytes": self.fast_retx_bytes, "nack_retx": self.nack_retx,
            "requests": self.requests_sent, "retransmits": self.retransmits,
            "retransmit_bytes": self.retransmit_bytes, "tail_probes": self.tail_probes,
            "acks": rx.acks, "nacks": rx.nacks, "grants": rx.grants_sent,
            "regrants": rx.regrants, "duplicates": rx.duplicates, "ecn_seen": rx.ecn_seen,
            "unknown_grants": self.unknown_grants, "requests_refused": rx.requests_refused,
            "requests_expired": rx.requests_expired, "grant_holds": rx.scheduler.holds,
            "inbound_refused": rx.inbound_refused, "inbound_expired": rx.inbound_expired,
        }
