"""The phases of a GSE message, on each side, and the only place they change.

In the manner of h11's ``_state.py``: the rules in prose, then the transitions as a table,
then one function that applies a transition or refuses it.

A message going out (``sender.OutMsg``) lives through three phases:

* ``SENDING``: packets never sent remain (``next_new < npkts``).  Its first transmissions
  use the unscheduled window, then GRANTed credit; what is lost on the way is resent.
* ``DRAINING``: every packet has gone at least once, the last one just now: from here on
  only resends and probes go, and the tail-loss probe is armed (``GseHost.poll``).
* ``DONE``: every packet is acknowledged (``OutMsg.on_ack``); the host forgets the message
  at once.  ``SENDING -> DONE`` happens only on an ACK covering packets not yet sent (a
  forged or confused one): the sender believes it, as it always has.

A message coming in (``receiver.InMsg``):

* ``UNPROVEN``: known from REQUESTs only; it has no receive bitmap, a bounded place and a
  probation (``receiver`` module docstring).  A REQUEST proves nothing about its sender.
* ``RECEIVING``: its DATA has come (directly, or after REQUESTs): it has a bitmap.
* ``DELIVERED``: its last missing packet arrived; only its id is remembered after.
* ``DROPPED``: forgotten without delivery: an unproven message whose data never followed its
  grant (``requests_expired``) or a proven one idle too long (``inbound_expired``).

What is *not* a phase: whether a REQUEST, RTO or tail-loss probe timer is armed (those are
the host's named deadlines, ``GseHost.deadlines()``), whether the message sits in the
NIC's ring (a queue membership, ``in_ring``), and how many credit-free probes it owes.
``gse.agents.invariants`` checks those against the phase after every step of a test.

Phases are plain ints (the compiled build compares C integers on the hot path); a
transition happens two or three times per message, 26 M messages in the 10k all-reduce of
docs/scale.md, so ``enter`` is compiled too (cython/gse/agents/phases.pxd), a C function
the agents cimport.  Both kinds of message derive from ``Phased``, whose one slot is the
phase: compiled, ``enter`` reads and writes it as a C field and checks the transition in
a bit mask (``ALLOWED``, made from the table), with no Python object on the way.
"""

# a message going out
SENDING = 1
DRAINING = 2
DONE = 3
# a message coming in
UNPROVEN = 11
RECEIVING = 12
DELIVERED = 13
DROPPED = 14

NAMES = {SENDING: "SENDING", DRAINING: "DRAINING", DONE: "DONE",
         UNPROVEN: "UNPROVEN", RECEIVING: "RECEIVING", DELIVERED: "DELIVERED",
         DROPPED: "DROPPED"}

OUT_PHASES = frozenset((SENDING, DRAINING, DONE))
IN_PHASES = frozenset((UNPROVEN, RECEIVING, DELIVERED, DROPPED))

# phase -> the phases it may move to
TRANSITIONS = {
    SENDING: frozenset((DRAINING, DONE)),
    DRAINING: frozenset((DONE,)),
    DONE: frozenset(),
    UNPROVEN: frozenset((RECEIVING, DROPPED)),
    RECEIVING: frozenset((DELIVERED, DROPPED)),
    DELIVERED: frozenset(),
    DROPPED: frozenset(),
}

# the same table as bit masks, by phase: bit q of ALLOWED[p] if p may move to q
ALLOWED = tuple(sum(1 << q for q in TRANSITIONS.get(p, ())) for p in range(16))


class Phased:
    """The base of ``sender.OutMsg`` and ``receiver.InMsg``: the slot ``enter`` changes."""

    __slots__ = ("phase",)


class PhaseError(RuntimeError):
    """A transition the table does not allow: a bug in this package, never the peer's
    doing (a peer's packet may only trigger allowed transitions)."""

    def __init__(self, msg, old, new):
        self.msg_id = msg.msg_id
        self.old = old
        self.new = new
        super().__init__("%s: %s -> %s is not a transition"
                         % (describe(msg), name(old), name(new)))


def describe(msg):
    """``message 7 (0 -> 1)`` for an OutMsg, ``message 7 from 0`` for an InMsg."""
    dst = getattr(msg, "dst", None)
    if dst is None:
        return "message %d from %d" % (msg.msg_id, msg.src)
    return "message %d (%d -> %d)" % (msg.msg_id, msg.src, dst)


def name(phase):
    return NAMES.get(phase, "phase %r" % (phase,))


def enter(msg, phase):
    """Move ``msg`` (an ``OutMsg`` or ``InMsg``) to ``phase``, or raise ``PhaseError``."""
    old = msg.phase
    n = len(ALLOWED)
    if 0 <= old < n and 0 <= phase < n:
        mask = ALLOWED[old]
        if mask >> phase & 1:
            msg.phase = phase
            return
    raise PhaseError(msg, old, phase)
