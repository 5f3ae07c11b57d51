"""Cross-field invariants of the host agents, checked after every step of a test.

A message's state is spread over some forty fields; most bugs show first as two of them
disagreeing (a phase and a deadline, a queue and its membership flag, a counter and what
it counts), long before a run stalls or a golden differs.  ``check_invariants(agent)`` raises
``InvariantError`` naming the host, the message and the field at the first disagreement.
``tests/harness.py`` calls it after every event it hands a host, and the fuzz targets after
every operation.

It reads the agents and never changes them (in particular it never calls
``OutMsg.can_send``, which tidies the retransmit queue), so a run with checks is the run
without.  Its cost is linear in the state (bitmaps included): tests only.

The GSE host is checked field by field (``check_gse``); a RoCE or fabric-mode host gets
the lighter ``check_roce``: its flows' sequence numbers in bounds, its deadline sane.
"""

from collections import Counter

from gse.agents.gse_host import T_EXPIRE, T_PACER, T_REQUEST, T_RTO, T_TLP, GseHost
from gse.agents.phases import (DRAINING, RECEIVING, SENDING, UNPROVEN, describe, name)
from gse.agents.receiver import reassembly_cost
from gse.agents.sender import NEVER


class InvariantError(AssertionError):
    """Two fields of an agent disagree: a bug in the agent, whatever the peer sent."""


def check_invariants(agent):
    """Check whichever kind of host ``agent`` is."""
    if isinstance(agent, GseHost):
        check_gse(agent)
    else:
        check_roce(agent)


def _fail(host, what, field, detail):
    raise InvariantError("host %d, %s: %s: %s" % (host.addr, what, field, detail))


def _timers(host):
    """{(kind, id(owner)): earliest pending deadline} of the host's timer heap."""
    first = {}
    for t, kind, owner in host.timers.entries():
        key = (kind, id(owner))
        if key not in first or t < first[key]:
            first[key] = t
    return first


def _armed(host, timers, what, field, deadline, kind, owner):
    """An armed deadline has a heap entry due no later than it: the lazy heap pops that
    entry, finds the deadline moved later and pushes it again, so it fires on time.  (An
    entry *after* the deadline would fire late.)"""
    if deadline == NEVER:
        return
    t = timers.get((kind, id(owner)))
    if t is None:
        _fail(host, what, field, "armed for %d but no timer is pending" % deadline)
    if t > deadline:
        _fail(host, what, field, "armed for %d but its timer is due only at %d"
              % (deadline, t))


def check_gse(host):
    timers = _timers(host)
    first = host.timers.first()
    if len(host.timers) == 0 and first != -1 or len(host.timers) and first < 0:
        _fail(host, "host", "timers", "first() is %d with %d pending" % (first, len(host.timers)))
    if host.next_deadline() != first:
        _fail(host, "host", "next_deadline", "%d, the heap says %d"
              % (host.next_deadline(), first))
    ring = list(host.ring)
    in_ring = Counter(id(m) for m in ring)
    for m in ring:
        if in_ring[id(m)] > 1:
            _fail(host, describe(m), "ring", "queued %d times" % in_ring[id(m)])
        if not m.in_ring:
            _fail(host, describe(m), "in_ring", "False but the message is in the ring")
        if host.out.get(m.msg_id) is not m and m.phase in (SENDING, DRAINING):
            _fail(host, describe(m), "ring", "in the ring, unfinished, but not in out")
    for msg_id, msg in host.out.items():
        if msg.msg_id != msg_id or msg.src != host.addr:
            _fail(host, describe(msg), "out", "filed under id %d of host %d"
                  % (msg_id, host.addr))
        _check_out(host, msg, timers, id(msg) in in_ring)
    _check_receiver(host, host.receiver, timers)
    if host.expiry_at != NEVER and timers.get((T_EXPIRE, id(None)), NEVER) > host.expiry_at:
        _fail(host, "host", "expiry_at", "armed for %d with no timer due by then"
              % host.expiry_at)


def _check_out(host, msg, timers, queued):
    what = describe(msg)
    npkts = msg.npkts
    if msg.phase not in (SENDING, DRAINING):
        _fail(host, what, "phase", "%s, yet still in out" % name(msg.phase))
    if not 0 <= msg.next_new <= npkts:
        _fail(host, what, "next_new", "%d of %d packets" % (msg.next_new, npkts))
    if (msg.phase == SENDING) != (msg.next_new < npkts):
        _fail(host, what, "phase", "%s with %d of %d packets sent"
              % (name(msg.phase), msg.next_new, npkts))
    # acknowledgements
    acked = int.from_bytes(msg.acked, "little")
    if acked >> npkts:
        _fail(host, what, "acked", "bits set beyond psn %d" % (npkts - 1))
    if bin(acked).count("1") != msg.n_acked or not 0 <= msg.n_acked < npkts:
        _fail(host, what, "n_acked", "%d, the bitmap holds %d of %d"
              % (msg.n_acked, bin(acked).count("1"), npkts))
    cum = msg.cum_acked
    if not 0 <= cum <= npkts or acked & ((1 << cum) - 1) != (1 << cum) - 1 \
            or (cum < npkts and acked >> cum & 1):
        _fail(host, what, "cum_acked", "%d is not the first unacknowledged psn" % cum)
    acked_bytes = msg.n_acked * msg.mtu
    if acked >> (npkts - 1) & 1:
        acked_bytes -= msg.mtu - msg.payload_of(npkts - 1)
    if acked_bytes > msg.size:
        _fail(host, what, "acked", "%d bytes of a %d-byte message" % (acked_bytes, msg.size))
    # credit and probes
    for field in ("credit", "credit_received", "probe", "nacked"):
        if getattr(msg, field) < 0:
            _fail(host, what, field, "negative (%d)" % getattr(msg, field))
    if msg.nacked > msg.need_total:
        _fail(host, what, "nacked", "%d beyond the need %d" % (msg.nacked, msg.need_total))
    # the retransmit queue and its flags
    if (msg.retx is None) != (msg.in_retx is None):
        _fail(host, what, "retx", "the queue and its flags made apart")
    retx = list(msg.retx or ())
    flagged = sum(msg.in_retx or ())
    if len(set(retx)) != len(retx) or flagged != len(retx):
        _fail(host, what, "retx", "%d queued, %d flagged in in_retx" % (len(retx), flagged))
    for psn in retx:
        if not msg.in_retx[psn] or msg.sent_at[psn] != -1 or psn >= msg.next_new:
            _fail(host, what, "retx", "psn %d queued but in_retx=%d sent_at=%d next_new=%d"
                  % (psn, msg.in_retx[psn], msg.sent_at[psn], msg.next_new))
    for psn in range(msg.next_new, npkts):
        if msg.sent_at[psn] != -1:
            _fail(host, what, "sent_at", "psn %d never sent has a send time" % psn)
    # ring membership: a message that can send is queued for the NIC
    if msg.in_ring != queued:
        _fail(host, what, "in_ring", "%s but %s the ring" % (msg.in_ring,
                                                             "in" if queued else "not in"))
    if not queued and _sendable(msg):
        _fail(host, what, "in_ring", "it can send but is not in the ring")
    # deadlines against the phase and the timer heap
    if msg.phase == SENDING and msg.tlp_deadline != NEVER:
        _fail(host, what, "tlp_deadline", "armed (%d) before the last packet went"
              % msg.tlp_deadline)
    if msg.req_deadline != NEVER and msg.need_total <= 0:
        _fail(host, what, "req_deadline", "armed for a message that needs no credit")
    _armed(host, timers, what, "rto_deadline", msg.rto_deadline, T_RTO, msg)
    _armed(host, timers, what, "req_deadline", msg.req_deadline, T_REQUEST, msg)
    _armed(host, timers, what, "tlp_deadline", msg.tlp_deadline, T_TLP, msg)
    if msg.rto_backoff < 1 or msg.req_backoff < 1:
        _fail(host, what, "backoff", "rto %d, request %d" % (msg.rto_backoff, msg.req_backoff))


def _sendable(msg):
    """``OutMsg.can_send()`` without its tidying of the retransmit queue."""
    for psn in msg.retx or ():
        if not msg.is_acked(psn):
            return msg.probe > 0 or msg.credit >= msg.payload_of(psn)
    psn = msg.next_new
    if psn >= msg.npkts:
        return False
    return psn < msg.unsched_pkts or msg.credit >= msg.payload_of(psn)


def _check_receiver(host, rx, timers):
    sched = rx.scheduler
    unproven = Counter()
    inbound = Counter()
    reassembly = 0
    for key, msg in rx.messages.items():
        what = describe(msg)
        if key != (msg.src, msg.msg_id) or msg.demand.key != key:
            _fail(host, what, "messages", "filed under %r" % (key,))
        proven = msg.phase == RECEIVING
        if msg.phase not in (UNPROVEN, RECEIVING):
            _fail(host, what, "phase", "%s, yet still in messages" % name(msg.phase))
        if (msg.bitmap is not None) != proven or msg.demand.proven != proven:
            _fail(host, what, "bitmap", "%s with bitmap %s, demand.proven %s"
                  % (name(msg.phase), "present" if msg.bitmap is not None else "absent",
                     msg.demand.proven))
        if proven:
            inbound[msg.src] += 1
            reassembly += reassembly_cost(msg.npkts)
            bm = msg.bitmap
            if not 0 <= bm.cum <= bm.count < msg.npkts:
                _fail(host, what, "bitmap", "cum %d, count %d of %d packets"
                      % (bm.cum, bm.count, msg.npkts))
        else:
            unproven[msg.src] += 1
        demand = msg.demand
        if demand.queued != any(d is demand for d in sched.active):
            _fail(host, what, "demand.queued", "%s but %s the scheduler's queue"
                  % (demand.queued, "not in" if demand.queued else "in"))
    if sum(unproven.values()) != rx.unproven or dict(unproven) != rx.unproven_of:
        _fail(host, "receiver", "unproven", "%d (%r) counted, %d (%r) held"
              % (rx.unproven, rx.unproven_of, sum(unproven.values()), dict(unproven)))
    if sum(inbound.values()) != rx.inbound or dict(inbound) != rx.inbound_of:
        _fail(host, "receiver", "inbound", "%d (%r) counted, %d (%r) held"
              % (rx.inbound, rx.inbound_of, sum(inbound.values()), dict(inbound)))
    if reassembly != rx.reassembly:
        _fail(host, "receiver", "reassembly", "%d counted, %d held" % (rx.reassembly, reassembly))
    for field, limit in (("unproven", rx.max_unproven), ("inbound", rx.max_inbound),
                         ("reassembly", rx.max_reassembly)):
        if getattr(rx, field) > limit:
            _fail(host, "receiver", field, "%d beyond its limit %d" % (getattr(rx, field), limit))
    for field, limit in (("unproven_of", rx.max_per_peer),
                         ("inbound_of", rx.max_inbound_per_peer)):
        for src, n in getattr(rx, field).items():
            if n > limit:
                _fail(host, "receiver", field, "%d from host %d, beyond %d" % (n, src, limit))
    if len(rx.finished) > rx.max_finished:
        _fail(host, "receiver", "finished", "%d ids, beyond %d"
              % (len(rx.finished), rx.max_finished))
    active = list(sched.active)
    for demand in active:
        msg = rx.messages.get(demand.key)
        if msg is None or msg.demand is not demand or not demand.queued:
            _fail(host, "receiver", "scheduler.active", "a demand for %r that is %s"
                  % (demand.key, "gone" if msg is None else "not queued"))
    if len({id(d) for d in active}) != len(active):
        _fail(host, "receiver", "scheduler.active", "a demand queued twice")
    if sched.armed:
        _armed(host, timers, "receiver", "scheduler.next_time", sched.next_time, T_PACER,
               None)


def check_roce(host):
    """RoCE and fabric-mode hosts: sequence numbers in bounds, a sane deadline."""
    if host.next_deadline() < -1:
        _fail(host, "host", "next_deadline", "%d" % host.next_deadline())
    for msg_id, flow in host.out.items():
        what = describe(flow)
        if flow.msg_id != msg_id:
            _fail(host, what, "out", "filed under id %d" % msg_id)
        if not 0 <= flow.una <= flow.high <= flow.npkts or not 0 <= flow.next_psn <= flow.npkts:
            _fail(host, what, "psn", "una %d, next %d, high %d of %d packets"
                  % (flow.una, flow.next_psn, flow.high, flow.npkts))
        if flow.rto_backoff < 1:
            _fail(host, what, "rto_backoff", "%d" % flow.rto_backoff)
    if hasattr(host, "deadlines"):
        from gse.agents.roce_sender import T_RTO as ROCE_T_RTO
        timers = _timers(host)
        for kind, flow, t in host.deadlines():
            if kind == "rto":       # one heap entry per flow, never after its deadline
                _armed(host, timers, describe(flow), "rto_deadline", t, ROCE_T_RTO, flow)
