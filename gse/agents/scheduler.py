"""The receiver's credit scheduler (pull pacer): it grants at the downlink rate.

Senders transmit scheduled data only against credit, so the rate at which this scheduler
hands out credit bounds what converges on the receiver's downlink.  Credit is counted in
payload bytes; the pacing interval is the wire time of the packets that credit buys (payload
plus one header per MTU), so grants never exceed ``rate x fraction``.

A message known only from its REQUEST (``Demand.proven`` False: no DATA has come yet) is
granted for at most ``probation_ps`` after its first grant unless its data starts
arriving, so a REQUEST that nobody follows up (a phantom, a dead sender) costs that much of
the downlink at most, not its whole claimed size; a proven message whose granted data stops
arriving for ``stall_ps`` is held likewise.  A held demand leaves the queue; its next DATA,
or its sender's re-REQUEST (the receiver clears ``owed_since``: a sender that asks has
nothing left to send), puts it back.

Policies: ``rr`` (round robin over messages that still need credit: fair sharing),
``srpt`` (the message with the fewest bytes left to grant first; ties by arrival: lowest
mean completion time) and ``fifo`` (the oldest message first: lowest maximum completion
time when messages arrive staggered, the order a lossless FIFO fabric serves them in).
"""

try:
    import cython  # for the class decorator below: a no-op in pure Python
    cython.compiled       # the real Cython (gse.wire.packet says why the check)
except (ImportError, AttributeError):
    from gse import _no_cython as cython

from gse.common.fifo import Fifo
from gse.wire import linkrate
from gse.wire.packet import HEADER_BYTES

CATCHUP_GRANTS = 4     # a late pacer makes up at most this many grants' worth of time


def wire_ps(payload_bytes, mtu, mbps):
    """Wire time in ps of ``payload_bytes`` sent as MTU packets at ``mbps`` Mb/s."""
    npkts = (payload_bytes + mtu - 1) // mtu
    return linkrate.wire_time_ps(payload_bytes + npkts * HEADER_BYTES, mbps)


# compiled, not tracked by the garbage collector (its key is a tuple of integers: no
# cycle); one made and freed per message
@cython.no_gc
@cython.cclass
class Demand:
    """What one message still needs from the scheduler (shared with the receiver state)."""

    __slots__ = ("key", "need_total", "granted_total", "queued", "order", "proven",
                 "owed_since")

    def __init__(self, key, order, proven=True):
        self.key = key
        self.need_total = 0
        self.granted_total = 0
        self.queued = False
        self.order = order
        self.proven = proven      # data of this message has arrived
        self.owed_since = -1      # first grant not yet followed by data (-1: none owed)

    def heard(self):
        """Data of the message arrived: it is proven, and nothing granted is overdue."""
        self.proven = True
        self.owed_since = -1

    def wanted(self):
        return self.need_total - self.granted_total


class CreditScheduler:
    __slots__ = ("mbps", "mtu", "credit_bytes", "policy", "active", "next_time",
                 "armed", "granted_bytes", "grants", "stall_ps", "probation_ps", "holds")

    def __init__(self, downlink_gbps, fraction, mtu, credit_bytes, policy, stall_ps=0,
                 probation_ps=0):
        self.mbps = max(1, int(round(downlink_gbps * fraction * 1000)))
        self.mtu = mtu
        self.credit_bytes = credit_bytes
        self.policy = policy
        self.active = Fifo()     # Demand objects with wanted() > 0
        self.next_time = 0        # earliest time the next grant may go
        self.armed = False        # a grant is due at next_time
        self.granted_bytes = 0
        self.grants = 0
        # hold a message granted this long without data arriving (0: never): a proven one
        # after stall_ps, one known only from its REQUEST after probation_ps
        self.stall_ps = stall_ps
        self.probation_ps = probation_ps
        self.holds = 0            # demands taken out of the queue by those rules

    def add_need(self, demand, nbytes, now):
        """Raise a message's demand; return the time a grant is due, or -1 if none new."""
        demand.need_total += nbytes
        return self.set_need(demand, demand.need_total, now)

    def set_need(self, demand, need_total, now):
        if need_total > demand.need_total:
            demand.need_total = need_total
        if demand.wanted() > 0 and not demand.queued:
            demand.queued = True
            self.active.append(demand)
        return self.wake(now)

    def wake(self, now):
        """Arm the pacer if a message waits for credit and it is not armed: the time the
        grant is due, or -1 if nothing new."""
        if self.active and not self.armed:
            self.armed = True
            if self.next_time < now:
                self.next_time = now
            return self.next_time
        return -1

    def charge(self, payload_bytes, now, cap_bytes):
        """Unscheduled bytes are about to arrive while others hold credit: push the next
        grant back by their wire time, so that the downlink's total stays at its rate.

        The push never reaches more than ``cap_bytes`` of wire time past now: when many
        senders start at once their unscheduled windows mostly end up trimmed, and those
        trimmed bytes never use the downlink.  Returns the new due time if a grant is
        pending (the caller re-arms), else -1."""
        start = self.next_time if self.next_time > now else now
        pushed = start + wire_ps(payload_bytes, self.mtu, self.mbps)
        limit = now + wire_ps(cap_bytes, self.mtu, self.mbps)
        if pushed > limit:
            pushed = limit
        if pushed > self.next_time:
            self.next_time = pushed
        return self.next_time if self.armed else -1

    def busy(self):
        """Some message is waiting for credit."""
        return len(self.active) > 0

    def remove(self, demand):
        if demand.queued:
            demand.queued = False
            self.active.remove(demand)

    def grant(self, now):
        """Issue one grant at ``now``: (demand, bytes) or None.  Re-arms itself.

        The next grant is spaced from when this one was due (``next_time``), not from
        ``now``: on a real clock a pacer whose timer fires late then catches up instead of
        losing rate, by at most ``CATCHUP_GRANTS`` grants' worth of time (simulated timers
        fire on time, where both are the same)."""
        self.armed = False
        if now < self.next_time:
            raise ValueError("grant at %d before its time %d" % (now, self.next_time))
        start = now - wire_ps(CATCHUP_GRANTS * self.credit_bytes, self.mtu, self.mbps)
        if self.next_time > start:
            start = self.next_time
        active = self.active
        while active:
            if self.policy == "srpt":
                demand = min(active, key=_srpt_key)
                active.remove(demand)
            elif self.policy == "fifo":
                demand = min(active, key=_fifo_key)
                active.remove(demand)
            else:
                demand = active.popleft()
            want = demand.wanted()
            if want <= 0:
                demand.queued = False
                continue
            owed = demand.owed_since
            if owed >= 0 and self._overdue(demand, now - owed):
                demand.queued = False     # held until its data (or a re-REQUEST) comes
                self.holds += 1
                continue
            if owed < 0:
                demand.owed_since = now
            amount = want if want < self.credit_bytes else self.credit_bytes
            demand.granted_total += amount
            if demand.wanted() > 0:
                active.append(demand)
            else:
                demand.queued = False
            self.next_time = start + wire_ps(amount, self.mtu, self.mbps)
            self.granted_bytes += amount
            self.grants += 1
            if active:
                self.armed = True
            return demand, amount
        return None


    def _overdue(self, demand, owed_ps):
        limit = self.stall_ps if demand.proven else self.probation_ps
        return limit > 0 and owed_ps >= limit


def _fifo_key(demand):
    return demand.order


def _srpt_key(demand):
    return (demand.wanted(), demand.order)
