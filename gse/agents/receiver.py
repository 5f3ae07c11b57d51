"""Receiver side of a GSE host: reassembly, ACK/SACK/NACK and the credit scheduler.

Each incoming message has a receive bitmap (exactly-once delivery), an ACK coalescing
counter, and a ``Demand`` in the host's credit scheduler.  A message is delivered the moment
its last missing packet arrives; afterwards only its id is remembered, so that late
duplicates and re-REQUESTs are answered with a final ACK instead of creating new state.
Those ids are kept ``FINISHED_HOLD`` x ``rto_max_ps`` (a sender whose final ACK was lost
probes again within one ``rto_max_ps``), and at most ``max_finished`` of them, the oldest
forgotten first: a long-running receiver's memory does not grow with every message.

A REQUEST proves nothing about its sender: a message known only from REQUESTs is
*unproven* until its first DATA arrives.  It gets no receive bitmap until then, grants for
half a request timeout at most (``CreditScheduler.probation_ps``), and a bounded place: at
most ``max_requests_per_peer`` unproven messages per source and ``max_requests`` in all;
a REQUEST beyond either is refused (dropped and counted; the sender's re-REQUEST asks
again later).  An unproven message granted credit whose data has not come
``request_timeout_ps`` later is forgotten (``requests_expired``): a real sender that lost
the grant asks again, and the REQUEST, carrying absolute totals, recreates it.  A proven
message whose granted data stops coming for ``request_timeout_ps`` is held out of the
scheduler until its data (or a REQUEST) comes: a sender that died costs a timeout of
grants, not the rest of its message.

A re-REQUEST (``F_RETX``: its sender had no GRANT for a request timeout) never takes
back credit already granted: with a wide fan-in a sender's turn comes less often than its
request timeout, and the re-REQUEST often crosses the GRANT on its way.  Credit granted
twice made the second GRANT stale at the sender, which then had nothing to send for it,
so the message was held for data that could not come, and every REQUEST after that put
it back only to be held again (issue 24: a 127:1 incast stopped at 96 messages).  Now
the receiver repeats the cumulative total (no new credit; lost grants are made up, late
ones change nothing) and lifts the hold (``_starved``).
"""

try:
    import cython  # for the class decorator below: a no-op in pure Python
    cython.compiled       # the real Cython (gse.wire.packet says why the check)
except (ImportError, AttributeError):
    from gse import _no_cython as cython

from gse.agents.bitmap import new_bitmap
from gse.agents.events import delivered
from gse.agents.phases import DELIVERED, DROPPED, RECEIVING, UNPROVEN, Phased, enter
from gse.agents.scheduler import CreditScheduler, Demand
from gse.common.fifo import Fifo
from gse.common.finished import FinishedIds
from gse.wire.packet import (ACK, F_ECN_CE, F_LAST, F_RETX, F_TRIMMED, F_UNSCHED, GRANT, NACK,
                             PRIO_CONTROL, REQUEST, new_packet)

MASK32 = 0xFFFFFFFF
FINISHED_HOLD = 4     # a finished message's id is remembered this many maximum RTOs
IDLE_HOLD = 4         # reassembly state with no DATA for this many maximum RTOs may go
INMSG_BYTES = 512     # what one message's state costs besides its bitmap (accounting)


def reassembly_cost(npkts):
    """Bytes of reassembly state a message of ``npkts`` packets holds (accounting)."""
    return INMSG_BYTES + (npkts + 7) // 8 + 8


# compiled, not tracked by the garbage collector (its bitmap and Demand never refer back
# to it: no cycle); one made and freed per message
@cython.no_gc
@cython.cclass
class InMsg(Phased):
    __slots__ = ("src", "msg_id", "size", "npkts", "bitmap", "demand", "unacked",
                 "ecn", "first_ps", "charged", "last_ack", "entropy", "heard", "requested",
                 "trimmed", "regrant_ps")

    def __init__(self, src, msg_id, size, mtu, order, now, proven=True):
        self.setup(src, msg_id, size, mtu, order, now, proven)

    def setup(self, src, msg_id, size, mtu, order, now, proven):
        """What ``__init__`` does.  The receiver makes a message as ``InMsg.__new__(InMsg)``
        then this: compiled, a C method taking C integers, without the constructor's
        argument handling, once per message."""
        self.src = src
        self.msg_id = msg_id
        self.size = size
        self.npkts = (self.size + mtu - 1) // mtu
        # an unproven message (REQUEST only) has no bitmap until its first DATA
        self.bitmap = new_bitmap(self.npkts) if proven else None
        self.phase = RECEIVING if proven else UNPROVEN   # changed by phases.enter() only
        self.demand = Demand((src, msg_id), order, proven)
        self.unacked = 0
        self.ecn = False
        self.first_ps = now
        self.charged = False      # its unscheduled window was accounted in the pacer
        self.last_ack = now
        self.entropy = 0          # of the sender's latest packet: GRANTs go back on it
        self.heard = now          # when its latest DATA arrived
        # credit need = what the sender asked for (its REQUESTs' totals, which leave out
        # resends of trimmed packets) + the payload of every trim seen here
        self.requested = 0
        self.trimmed = 0
        self.regrant_ps = 0       # no repeated GRANT (``_starved``) before then


class ReceiverSide:
    __slots__ = ("addr", "mtu", "ack_every", "ack_delay", "charge_cap", "messages", "finished",
                 "scheduler", "order",
                 "events", "duplicates", "acks", "nacks", "grants_sent", "regrants",
                 "ecn_seen", "payload_bytes", "max_per_peer", "max_unproven", "unproven_of",
                 "unproven", "granted_unproven", "expire_ps", "requests_refused",
                 "requests_expired",
                 "max_inbound_per_peer", "max_inbound", "max_reassembly", "inbound_of",
                 "inbound", "reassembly", "idle_ps", "next_idle_sweep", "inbound_refused",
                 "inbound_expired",
                 "finished_hold", "max_finished", "last")

    def __init__(self, addr, config, downlink_gbps, events=None):
        self.addr = addr
        self.mtu = config.mtu
        self.ack_every = config.ack_every_bytes
        self.ack_delay = config.ack_delay_ps
        self.charge_cap = config.unsched_charge_cap_bytes
        self.messages = {}        # (src, msg_id) -> InMsg
        # the message of the latest DATA, asked first (a message's packets come in trains):
        # no tuple, boxed integers nor dict lookup; None once it leaves self.messages
        self.last = None
        self.finished_hold = FINISHED_HOLD * config.rto_max_ps
        self.max_finished = config.max_finished
        self.finished = FinishedIds(self.finished_hold, self.max_finished)  # late packets
        self.scheduler = CreditScheduler(downlink_gbps, config.grant_rate_fraction,
                                         config.mtu, config.credit_bytes, config.policy,
                                         config.request_timeout_ps,
                                         config.request_timeout_ps // 2)
        self.order = 0
        # the host's event queue (gse.agents.events), where whole messages are announced
        self.events = Fifo() if events is None else events
        self.duplicates = 0
        self.acks = 0
        self.nacks = 0
        self.grants_sent = 0
        self.regrants = 0         # GRANTs repeating a total for a starved sender
        self.ecn_seen = 0
        self.payload_bytes = 0
        self.max_per_peer = config.max_requests_per_peer
        self.max_unproven = config.max_requests
        self.unproven_of = {}     # src -> unproven messages from it
        self.unproven = 0         # unproven messages in all
        self.granted_unproven = Fifo()  # (grant time, key): unproven messages granted
        self.expire_ps = config.request_timeout_ps
        self.requests_refused = 0
        self.requests_expired = 0
        self.max_inbound_per_peer = config.max_inbound_per_peer
        self.max_inbound = config.max_inbound
        self.max_reassembly = config.max_reassembly_bytes
        self.inbound_of = {}      # src -> messages with reassembly state from it
        self.inbound = 0          # such messages in all
        self.reassembly = 0       # and the bytes they hold (``reassembly_cost``)
        self.idle_ps = IDLE_HOLD * config.rto_max_ps
        self.next_idle_sweep = 0
        self.inbound_refused = 0  # DATA of a new message beyond those limits, dropped
        self.inbound_expired = 0  # messages forgotten after idle_ps without DATA

    def _message(self, pkt, key, now):
        """The message ``key`` = (src, msg_id) of ``pkt``, created by its first packet;
        None if the packet cannot create one (no length, or a REQUEST beyond the limits)."""
        msg = self.messages.get(key)
        if msg is None:
            msg = self._create(pkt, key, now)
        return msg

    def _create(self, pkt, key, now):
        """``_message`` for a ``key`` known to have no message (``on_data`` asked)."""
        if pkt.msg_len <= 0:
            return None
        proven = pkt.kind != REQUEST
        if proven:
            if not self._admit(pkt.src, (pkt.msg_len + self.mtu - 1) // self.mtu, now):
                return None
        else:
            src = pkt.src
            if (self.unproven >= self.max_unproven
                    or self.unproven_of.get(src, 0) >= self.max_per_peer):
                self.expire(now)
                if (self.unproven >= self.max_unproven
                        or self.unproven_of.get(src, 0) >= self.max_per_peer):
                    self.requests_refused += 1
                    return None
            self.unproven += 1
            self.unproven_of[src] = self.unproven_of.get(src, 0) + 1
        self.order += 1
        msg = InMsg.__new__(InMsg)          # (InMsg.setup: see there)
        msg.setup(pkt.src, pkt.msg_id, pkt.msg_len, self.mtu, self.order, now, proven)
        self.messages[key] = msg
        return msg

    def _admit(self, src, npkts, now):
        """Room for the reassembly state of one more message from ``src`` (per-peer and
        global counts, bytes): taken and True, or False after counting the refusal.  At
        a limit, messages idle for ``idle_ps`` (a sender that died, forged state) go
        first."""
        cost = reassembly_cost(npkts)
        n = self.inbound_of.get(src, 0)
        if (self.inbound >= self.max_inbound or n >= self.max_inbound_per_peer
                or self.reassembly + cost > self.max_reassembly):
            self._forget_idle(now)
            n = self.inbound_of.get(src, 0)
            if (self.inbound >= self.max_inbound or n >= self.max_inbound_per_peer
                    or self.reassembly + cost > self.max_reassembly):
                self.inbound_refused += 1
                return False
        self.inbound += 1
        self.inbound_of[src] = n + 1
        self.reassembly += cost
        return True

    def _inbound_gone(self, msg):
        src = msg.src
        self.inbound -= 1
        self.reassembly -= reassembly_cost(msg.npkts)
        n = self.inbound_of[src] - 1
        if n:
            self.inbound_of[src] = n
        else:
            del self.inbound_of[src]

    def _forget_idle(self, now):
        """Drop messages with reassembly state but no DATA for ``idle_ps`` (at most one
        scan per quarter of it: this runs only when a limit is reached)."""
        if now < self.next_idle_sweep:
            return
        self.next_idle_sweep = now + self.idle_ps // 4
        limit = now - self.idle_ps
        for key, msg in list(self.messages.items()):
            if msg.phase == RECEIVING and msg.heard <= limit:
                enter(msg, DROPPED)
                del self.messages[key]
                self.last = None
                self.scheduler.remove(msg.demand)
                self._inbound_gone(msg)
                self.inbound_expired += 1

    def _unproven_gone(self, src):
        self.unproven -= 1
        n = self.unproven_of[src] - 1
        if n:
            self.unproven_of[src] = n
        else:
            del self.unproven_of[src]

    def _prove(self, msg, now):
        """The first DATA of a message known only from REQUESTs: give it its bitmap.
        Returns the time a grant falls due if its demand goes back in the queue, else -1."""
        msg.bitmap = new_bitmap(msg.npkts)
        enter(msg, RECEIVING)
        self._unproven_gone(msg.src)
        return self._heard(msg, now)

    def _heard(self, msg, now):
        demand = msg.demand
        demand.heard()
        if not demand.queued and demand.wanted() > 0:   # it was held: queue it again
            return self.scheduler.set_need(demand, demand.need_total, now)
        return -1

    def oldest_unproven_grant(self):
        """Grant time of the oldest unproven message still waiting for its data, or -1
        (records of messages proven, gone or granted again since are dropped here)."""
        pending = self.granted_unproven
        while pending:
            t, key = pending[0]
            msg = self.messages.get(key)
            if msg is not None and msg.phase == UNPROVEN and msg.demand.owed_since == t:
                return t
            pending.popleft()
        return -1

    def expire(self, now):
        """Forget unproven messages granted ``expire_ps`` ago whose data never came."""
        pending = self.granted_unproven
        limit = now - self.expire_ps
        while pending:
            t, key = pending[0]
            if t > limit:
                return
            pending.popleft()
            msg = self.messages.get(key)
            if msg is None or msg.phase != UNPROVEN or msg.demand.owed_since != t:
                continue              # proven, gone, or granted again since
            enter(msg, DROPPED)
            del self.messages[key]
            self.last = None
            self.scheduler.remove(msg.demand)
            self._unproven_gone(msg.src)
            self.requests_expired += 1

    def on_data(self, pkt, now, out):
        """A DATA packet (whole or trimmed). Control replies are appended to ``out``.

        Returns the time a grant falls due if this raised demand, else -1."""
        msg = self.last
        if msg is None or msg.msg_id != pkt.msg_id or msg.src != pkt.src:
            key = (pkt.src, pkt.msg_id)
            msg = self.messages.get(key)
            if msg is None:           # (a finished message is no longer in self.messages)
                if self.finished.has(pkt.src, pkt.msg_id):
                    self.duplicates += 1
                    out.append(self._final_ack(pkt, self.finished[key], now))
                    return -1
                if pkt.msg_len <= 0:
                    self.duplicates += 1  # inconsistent: nothing to deliver
                    return -1
                if self._whole(pkt):
                    return self._deliver_whole(pkt, now, out)
                msg = self._create(pkt, key, now)
                if msg is None:
                    return -1         # beyond the limits: refused and counted
            self.last = msg
        if pkt.psn >= msg.npkts:
            self.duplicates += 1      # inconsistent with what we know: nothing to deliver
            return -1
        msg.entropy = pkt.entropy
        msg.heard = now
        due = -1
        if msg.phase == UNPROVEN:
            if not self._admit(msg.src, msg.npkts, now):
                return -1
            due = self._prove(msg, now)
        elif msg.demand.owed_since >= 0:
            due = self._heard(msg, now)
        if pkt.flags & F_UNSCHED and not msg.charged:
            d = self._announce(msg, msg.size - pkt.credit, now)
            if d >= 0:
                due = d
        if pkt.flags & F_TRIMMED:     # the header says what was lost
            if msg.bitmap.has(pkt.psn):
                return due
            self.nacks += 1
            out.append(new_packet(NACK, self.addr, pkt.src, pkt.msg_id, pkt.psn, pkt.entropy,
                                  0, 0, msg.size, 0, 0, 0, 0, pkt.ts, PRIO_CONTROL))
            msg.trimmed += pkt.payload_len
            d = self.scheduler.set_need(msg.demand, msg.requested + msg.trimmed, now)
            return d if d >= 0 else due
        old_cum = msg.bitmap.cum
        if not msg.bitmap.mark(pkt.psn):
            self.duplicates += 1
            out.append(self._ack(msg, pkt, now))
            return due
        self.payload_bytes += pkt.payload_len
        msg.unacked += pkt.payload_len
        if pkt.flags & F_ECN_CE:
            msg.ecn = True
            self.ecn_seen += 1
        if msg.bitmap.count == msg.npkts:
            self._finish(msg, now)
            out.append(self._ack(msg, pkt, now))
            return due
        if (msg.unacked >= self.ack_every or msg.ecn or pkt.flags & (F_LAST | F_RETX)
                or msg.bitmap.cum > old_cum + 1 or now - msg.last_ack >= self.ack_delay):
            out.append(self._ack(msg, pkt, now))
        return due

    def _whole(self, pkt):
        """Whether the DATA ``pkt`` of a message not known here is the whole message, to
        be delivered at once without its state (``_deliver_whole``): one packet, not
        trimmed, its unscheduled credit (if any) the whole message, and room for it
        without forgetting idle messages (``_admit``'s limits: the counts it takes are
        given back at once)."""
        if pkt.msg_len > self.mtu or pkt.psn != 0 or pkt.flags & F_TRIMMED:
            return False
        if pkt.flags & F_UNSCHED and pkt.credit < pkt.msg_len:
            return False
        return (self.inbound < self.max_inbound
                and self.inbound_of.get(pkt.src, 0) < self.max_inbound_per_peer
                and self.reassembly + reassembly_cost(1) <= self.max_reassembly)

    def _deliver_whole(self, pkt, now, out):
        """``on_data`` for a message whose first packet is the whole of it (``_whole``):
        what creating its state, marking the packet and finishing it would do (the
        scheduler's charge for its unscheduled bytes, the delivery, its id remembered,
        the final ACK), without the state: no ``InMsg``, bitmap nor ``Demand``, and no
        entry in ``messages`` or ``inbound_of`` made and removed at once.  Most messages
        of a collective at scale are one packet (the 10k all-reduce's are 819 bytes)."""
        self.order += 1               # (the order the message would have had)
        self.last = None
        due = -1
        if pkt.flags & F_UNSCHED:     # _announce with nothing scheduled: a charge, and
            sched = self.scheduler    # the pacer woken as set_need would
            if sched.busy():
                due = sched.charge(pkt.credit, now, self.charge_cap)
            d = sched.wake(now)
            if d >= 0:
                due = d
        self.payload_bytes += pkt.payload_len
        flags = 0
        if pkt.flags & F_ECN_CE:
            flags = F_ECN_CE
            self.ecn_seen += 1
        self.finished.add(pkt.src, pkt.msg_id, 1, now)
        self.events.append(delivered(pkt.src, pkt.msg_id, pkt.msg_len, now))
        self.acks += 1                # every packet acknowledged: cum 1, SACK bit 0
        out.append(new_packet(ACK, self.addr, pkt.src, pkt.msg_id, 1, pkt.entropy, 0, flags,
                              pkt.msg_len, 0, 0, 0, 1, pkt.ts, PRIO_CONTROL))
        return due

    def _finish(self, msg, now):
        key = (msg.src, msg.msg_id)
        enter(msg, DELIVERED)
        del self.messages[key]
        self.last = None
        self._inbound_gone(msg)
        self.finished.add(msg.src, msg.msg_id, msg.npkts, now)
        self.scheduler.remove(msg.demand)
        self.events.append(delivered(msg.src, msg.msg_id, msg.size, now))

    def _ack(self, msg, pkt, now):
        bitmap = msg.bitmap
        base = bitmap.sack_base_for(pkt.psn)
        flags = F_ECN_CE if msg.ecn else 0
        msg.ecn = False
        msg.unacked = 0
        msg.last_ack = now
        self.acks += 1
        return new_packet(ACK, self.addr, msg.src, msg.msg_id, bitmap.cum, pkt.entropy, 0,
                          flags, msg.size, 0, 0, base, bitmap.sack(base), pkt.ts,
                          PRIO_CONTROL)

    def _final_ack(self, pkt, npkts, now):
        self.acks += 1
        return new_packet(ACK, self.addr, pkt.src, pkt.msg_id, npkts, pkt.entropy, 0, 0,
                          pkt.msg_len, 0, 0, 0, 0, pkt.ts, PRIO_CONTROL)

    def on_request(self, pkt, now, out):
        """REQUEST: announce or raise a message's credit need (absolute totals)."""
        key = (pkt.src, pkt.msg_id)
        if self.finished.has(pkt.src, pkt.msg_id):
            out.append(self._final_ack(pkt, self.finished[key], now))
            return -1
        if self.granted_unproven:
            self.expire(now)
        msg = self._message(pkt, key, now)
        if msg is None:
            return -1
        msg.entropy = pkt.entropy
        demand = msg.demand
        if pkt.aux > demand.granted_total:
            # the sender holds more credit than this state granted: it was forgotten
            # (expired) and recreated; count what the sender already has
            demand.granted_total = pkt.aux
        if pkt.flags & F_RETX:
            self._starved(msg, pkt.aux, now, out)
        elif not msg.charged:
            return self._announce(msg, pkt.credit, now)
        if pkt.credit > msg.requested:
            msg.requested = pkt.credit
        return self.scheduler.set_need(demand, msg.requested + msg.trimmed, now)

    def _starved(self, msg, seen, now, out):
        """A re-REQUEST: the sender has had no GRANT for a request timeout and holds
        ``seen`` bytes of credit, all spent.

        What this side granted beyond ``seen`` is lost or still on its way, and the two
        cannot be told apart here: where many senders share the downlink, a sender's turn
        comes less often than its request timeout, and its re-REQUEST crosses the GRANT
        that ends its wait.  So the credit is not granted again (GRANTs carry the
        cumulative total: a second grant of credit that arrives anyway is stale at the
        sender, which then has nothing to send for it); the total is repeated instead,
        adding no credit: it restores lost grants and changes nothing for late ones
        (fabric mode's leaves do the same).  At most one repeat per message per half a
        request timeout (an honest sender asks at most once per timeout), so a flood of
        re-REQUESTs draws a bounded trickle of GRANTs.  And a sender that asks is alive
        and cannot send without credit: a demand held for want of its data gets its turn
        back.  ``granted_total`` never goes down, so a lying sender gains no credit
        beyond the need it announced."""
        demand = msg.demand
        if seen < demand.granted_total and now >= msg.regrant_ps:
            msg.regrant_ps = now + self.expire_ps // 2
            out.append(self._grant_packet(demand, 0, now))
            self.regrants += 1
        demand.owed_since = -1

    def _announce(self, msg, scheduled_need, now):
        """First news of a message: its credit need, and its unscheduled window.

        If other messages are already being granted, the newcomer's unscheduled bytes
        will share the downlink with them: the pacer is pushed back by their wire time
        (Homa and EQDS count unscheduled bytes the same way), so the burst does not
        overflow the edge queue on top of granted traffic."""
        msg.charged = True
        sched = self.scheduler
        unsched = msg.size - scheduled_need
        due = -1
        if unsched > 0 and sched.busy():
            due = sched.charge(unsched, now, self.charge_cap)
        if scheduled_need > msg.requested:
            msg.requested = scheduled_need
        d = sched.set_need(msg.demand, msg.requested + msg.trimmed, now)
        return d if d >= 0 else due

    def grant(self, now):
        """The pacer is due: one GRANT packet, or None if nobody needs credit."""
        if self.granted_unproven:
            self.expire(now)
        issued = self.scheduler.grant(now)
        if issued is None:
            return None
        demand, amount = issued
        if not demand.proven:
            self.granted_unproven.append((now, demand.key))
        self.grants_sent += 1
        return self._grant_packet(demand, amount, now)

    def _grant_packet(self, demand, amount, now):
        """A GRANT adding ``amount`` bytes (0: a repeat of the total) to ``demand``."""
        src, msg_id = demand.key
        msg = self.messages.get(demand.key)
        entropy = msg.entropy if msg is not None else 0
        # aux: the message's cumulative credit (mod 2^32), so a lost GRANT is made up by
        # the next one; credit: what this one adds
        return new_packet(GRANT, self.addr, src, msg_id, 0, entropy, 0, 0, 0, amount,
                          demand.granted_total & MASK32, 0, 0, now, PRIO_CONTROL)
