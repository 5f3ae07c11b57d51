"""Loss stories told step by step: after each step, the exact timers, phases and packets.

In the manner of aioquic's ``test_connect_with_loss_1``: two GSE hosts on a direct wire
(``tests/harness.py``), a ``drop`` function choosing what the wire loses, and ``w.run(t)``
advancing the clock by hand; after each step the test asserts the named deadlines
(``GseHost.deadlines()``), the phase of the messages on both sides and what went on the
wire.  The harness checks every invariant of ``gse.agents.invariants`` after every event
it hands a host, so each story is also a run of those checks.
"""

from harness import Wire

from gse.agents.phases import DRAINING, RECEIVING, SENDING, UNPROVEN
from gse.agents.scheduler import wire_ps
from gse.config import GseConfig
from gse.wire.linkrate import wire_time_ps
from gse.wire.packet import ACK, DATA, F_LAST, F_RETX, GRANT, NACK, REQUEST

MTU = 4096
DELAY = 1_000_000            # one-way wire delay, 1 us


def kinds(w, kind):
    return [p for p in w.sent if p.kind == kind]


def tx(w, pkt):
    """Time ``pkt`` takes on the wire."""
    return wire_time_ps(pkt.size, w.mbps)


def grant_gap(host, credit):
    """The pacer's spacing after a GRANT of ``credit`` bytes."""
    sched = host.receiver.scheduler
    return wire_ps(credit, MTU, sched.mbps)


def test_request_expires_at_the_receiver_and_a_re_request_recreates_it():
    """The sender's GRANTs are all lost: the receiver, which knows the message from its
    REQUEST alone, forgets it a request timeout after granting; the starved sender asks
    again with doubling timeouts, and its REQUEST recreates the state."""
    cfg = GseConfig(unsched_bytes=0)
    timeout = cfg.request_timeout_ps
    lost = []

    def drop(pkt):
        if pkt.kind == GRANT and pkt.ts < 3 * timeout // 2:
            lost.append(pkt)
            return True
        if pkt.kind == REQUEST and pkt.flags & F_RETX and not [p for p in lost
                                                                if p.kind == REQUEST]:
            lost.append(pkt)                   # the first re-REQUEST too
            return True
        return False
    w = Wire(config=cfg, drop=drop, delay_ps=DELAY)
    a, b = w.hosts
    w.start(0, 1, 1, 10 * MTU)
    req = w.sent[-1]
    assert req.kind == REQUEST and req.credit == 10 * MTU and not req.flags & F_RETX
    assert a.out[1].phase == SENDING
    assert a.deadlines() == {("request", 1): timeout}
    assert a.next_deadline() == timeout

    arrive = req.ts + tx(w, req) + DELAY
    w.run(arrive)                              # the REQUEST is in: granted at once
    msg = b.receiver.messages[(0, 1)]
    assert msg.phase == UNPROVEN and msg.bitmap is None   # a REQUEST proves nothing
    grant = w.sent[-1]
    assert grant.kind == GRANT and grant.ts == arrive and grant.credit == cfg.credit_bytes
    assert b.deadlines() == {("pacer", None): arrive + grant_gap(b, cfg.credit_bytes)}

    w.run(timeout - 1)                         # the whole need granted, every GRANT lost
    assert sum(g.credit for g in kinds(w, GRANT)) == 10 * MTU
    assert a.out[1].credit_received == 0 and kinds(w, DATA) == []
    # the pacer is idle with an unproven message granted: its expiry is armed
    assert b.deadlines() == {("expiry", None): arrive + timeout}
    assert a.deadlines() == {("request", 1): timeout}

    w.run(timeout)                             # starved a whole timeout: ask again
    rereq = w.sent[-1]
    assert rereq.kind == REQUEST and rereq.flags & F_RETX and rereq.ts == timeout
    assert rereq.credit == 10 * MTU and rereq.aux == 0      # absolute totals, none granted
    assert a.deadlines() == {("request", 1): timeout + 2 * timeout}   # backed off

    w.run(arrive + timeout)                    # (that one was lost too) the state expires
    assert b.receiver.requests_expired == 1 and b.receiver.messages == {}
    assert b.deadlines() == {} and b.next_deadline() == -1

    w.run(3 * timeout)                         # the second re-REQUEST, backed off again
    rereq = w.sent[-1]
    assert rereq.kind == REQUEST and rereq.flags & F_RETX and rereq.ts == 3 * timeout
    assert a.deadlines() == {("request", 1): 3 * timeout + 4 * timeout}

    w.run(3 * timeout + tx(w, rereq) + DELAY)  # it recreates the message, granted afresh
    msg = b.receiver.messages[(0, 1)]
    assert msg.phase == UNPROVEN and msg.demand.granted_total == cfg.credit_bytes
    assert w.sent[-1].kind == GRANT and w.sent[-1].aux == cfg.credit_bytes

    w.run()
    assert (0, 1) in w.delivered and a.out == {} and a.deadlines() == {}
    assert a.requests_sent == 3 and b.receiver.requests_expired == 1
    assert b.receiver.scheduler.holds == 0


def test_grants_are_held_for_a_sender_whose_data_stops_and_resume_on_its_data():
    """The sender's direction fails for 230 us mid-message: the receiver keeps granting
    for one request timeout after the last DATA it heard, then holds the message out of
    its scheduler (the pacer goes quiet); the sender's RTO probe, once through, puts it
    back."""
    cfg = GseConfig()
    timeout, rto = cfg.request_timeout_ps, cfg.rto_ps
    down, up = 20_000_000, 250_000_000

    def outage(pkt):
        return pkt.src == 0 and down < pkt.ts < up
    w = Wire(config=cfg, drop=outage, delay_ps=DELAY)
    a, b = w.hosts
    w.start(0, 1, 1, 2000 * MTU)
    w.run(down + 2 * DELAY)                    # the last DATA before the outage is in
    msg = b.receiver.messages[(0, 1)]
    demand = msg.demand
    assert msg.phase == RECEIVING and a.out[1].phase == SENDING
    assert demand.owed_since == -1             # every GRANT so far answered by DATA
    owed = b.deadline("pacer")
    w.run(owed)                                # the first GRANT no DATA will answer
    assert w.sent[-1].kind == GRANT and demand.owed_since == owed
    assert demand.queued and b.receiver.scheduler.holds == 0

    # the pacer keeps its rhythm, one GRANT per credit's wire time, up to the timeout
    tick = b.deadline("pacer")
    while tick < owed + timeout:
        w.run(tick)
        assert w.sent[-1].kind == GRANT and w.sent[-1].ts == tick
        assert b.deadline("pacer") == tick + grant_gap(b, cfg.credit_bytes)
        assert b.receiver.scheduler.holds == 0
        tick = b.deadline("pacer")
    grants = len(kinds(w, GRANT))
    w.run(tick)                                # the first tick a timeout past: held
    assert b.receiver.scheduler.holds == 1 and not demand.queued
    assert len(kinds(w, GRANT)) == grants and b.deadlines() == {}
    assert b.receiver.messages[(0, 1)] is msg  # held, not forgotten

    # meanwhile the sender timed out once, its probe lost in the outage, and backed off
    assert a.timeouts == 1 and a.out[1].rto_backoff == 2
    second = a.deadline("rto", 1)
    probes = [p for p in kinds(w, DATA) if p.flags & F_RETX]
    assert len(probes) == 1 and second - 2 * rto <= probes[0].ts < up < second
    w.run(second)                              # the second timeout: this probe gets through
    probe = w.sent[-1]
    assert probe.kind == DATA and probe.flags & F_RETX and probe.ts == second
    assert a.timeouts == 2 and a.deadline("rto", 1) == second + 4 * rto
    assert b.receiver.scheduler.holds == 1 and b.deadlines() == {}

    heard = second + tx(w, probe) + DELAY
    granted = b.receiver.grants_sent
    w.run(heard)                               # its DATA puts the message back: granted
    assert demand.queued and demand.owed_since == heard
    assert b.receiver.grants_sent == granted + 1
    assert b.deadline("pacer") == heard + grant_gap(b, cfg.credit_bytes)
    w.run()
    assert (0, 1) in w.delivered and a.out == {} and b.receiver.scheduler.holds == 1


def test_a_trimmed_packet_is_nacked_granted_and_resent():
    """The fabric trims psn 3 of an unscheduled message: the receiver answers the header
    with a NACK and a GRANT for the resend, the sender resends it on that credit, long
    before its tail probe or RTO."""
    cfg = GseConfig(unsched_bytes=8 * MTU)

    def trim_psn3(pkt):
        if pkt.kind == DATA and pkt.psn == 3 and not pkt.flags & F_RETX:
            pkt.trim()
        return False
    w = Wire(config=cfg, drop=trim_psn3, delay_ps=DELAY)
    a, b = w.hosts
    w.start(0, 1, 1, 8 * MTU)
    first = w.sent[-1]
    full = tx(w, first)
    assert first.kind == DATA and first.psn == 0 and a.out[1].need_total == 0
    assert a.deadlines() == {("rto", 1): cfg.rto_ps}      # no REQUEST: nothing scheduled

    w.run(7 * full)                            # the last of the window goes
    last = w.sent[-1]
    assert last.psn == 7 and last.flags & F_LAST and last.ts == 7 * full
    assert a.out[1].phase == DRAINING          # no RTT sample yet: the minimum probe time
    assert a.deadlines() == {("rto", 1): cfg.rto_ps, ("tlp", 1): last.ts + cfg.tlp_min_ps}

    trimmed = w.sent[3]
    at_b = trimmed.ts + full + DELAY           # (the wire carried it whole: trimmed after)
    w.run(at_b)
    nack = w.sent[-1]
    assert kinds(w, NACK) == [nack] and nack.psn == 3
    assert b.receiver.messages[(0, 1)].trimmed == MTU
    # the resend needs credit: granted at once (queued behind the NACK), need met
    assert b.receiver.grants_sent == 1 and b.deadlines() == {}
    w.run(at_b + tx(w, nack))
    grant = w.sent[-1]
    assert grant.kind == GRANT and grant.credit == MTU and grant.ts == at_b

    w.run(at_b + tx(w, nack) + DELAY)          # the NACK is in: psn 3 waits for credit
    msg = a.out[1]
    assert list(msg.retx) == [3] and msg.need_total == MTU and msg.credit == 0
    assert a.nack_retx == 1 and kinds(w, DATA)[-1].psn == 7
    at_a = at_b + tx(w, nack) + tx(w, grant) + DELAY
    w.run(at_a)                                # the GRANT is in: resent at once
    resend = w.sent[-1]
    assert resend.kind == DATA and resend.psn == 3 and resend.flags & F_RETX
    assert resend.ts == at_a and msg.credit == 0 and list(msg.retx) == []

    w.run()
    assert (0, 1) in w.delivered and a.out == {} and a.deadlines() == {}
    assert a.timeouts == 0 and a.tail_probes == 0
    assert [p.psn for p in kinds(w, DATA) if p.flags & F_RETX] == [3]


def test_rto_backs_off_doubling_after_the_tail_probe():
    """A one-packet message whose first three transmissions are lost: the tail probe after
    the minimum probe time, then RTOs counted from the oldest packet out, doubling."""
    cfg = GseConfig()
    rto, pto = cfg.rto_ps, cfg.tlp_min_ps
    lost = []

    def drop_three(pkt):
        if pkt.kind == DATA and len(lost) < 3:
            lost.append(pkt)
            return True
        return False
    w = Wire(config=cfg, drop=drop_three, delay_ps=DELAY)
    a, b = w.hosts
    w.start(0, 1, 1, 1000)
    assert w.sent[-1].kind == DATA and w.sent[-1].flags & F_LAST
    assert a.out[1].phase == DRAINING          # its only packet went
    assert a.deadlines() == {("rto", 1): rto, ("tlp", 1): pto}
    assert a.next_deadline() == pto

    w.run(pto)                                 # the tail probe: spent, never re-armed
    assert w.sent[-1].flags & F_RETX and w.sent[-1].ts == pto and a.tail_probes == 1
    assert a.deadlines() == {("rto", 1): rto}

    w.run(rto)                                 # the RTO counts from the probe: moved on
    assert a.timeouts == 0 and len(w.sent) == 2
    assert a.deadlines() == {("rto", 1): pto + rto} and a.next_deadline() == pto + rto

    w.run(pto + rto)                           # first timeout: probe, back off x2
    assert a.timeouts == 1 and a.out[1].rto_backoff == 2
    assert w.sent[-1].ts == pto + rto and w.sent[-1].flags & F_RETX
    assert a.out[1].waiting_for() == "path"
    assert a.deadlines() == {("rto", 1): pto + rto + 2 * rto}

    w.run(pto + 3 * rto - 1)                   # nothing happens in between
    assert len(w.sent) == 3 and a.timeouts == 1

    w.run(pto + 3 * rto)                       # second timeout: x4; this probe gets through
    probe = w.sent[-1]
    assert a.timeouts == 2 and a.out[1].rto_backoff == 4 and probe.ts == pto + 3 * rto
    assert a.deadlines() == {("rto", 1): pto + 3 * rto + 4 * rto}

    w.run(probe.ts + tx(w, probe) + DELAY)     # delivered; its ACK on the way back
    assert (0, 1) in w.delivered and w.sent[-1].kind == ACK
    w.run(probe.ts + tx(w, probe) + tx(w, w.sent[-1]) + 2 * DELAY)
    assert a.out == {} and a.deadlines() == {} and len(lost) == 3
    w.run()
    assert a.timeouts == 2 and len(kinds(w, DATA)) == 4
