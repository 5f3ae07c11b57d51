"""The interface every runtime drives a host agent through (docs/architecture.md).

``GseHost`` and ``RoceHost`` derive from ``HostAgent``: in the pure-Python build it only
documents the calls; in the compiled build (cython/gse/agents/interface.pxd) it is the
extension type through which the simulator calls an agent's methods directly, whichever
the protocol.
Runtimes may drive any object with these methods (duck typing), the compiled simulator
only a ``HostAgent``.

``progress()`` and ``waiting()`` are what the runtimes' no-progress watchdog reads
(``gse.metrics.stall``): they scan the unfinished messages, so a runtime calls them now and
then (a look every quarter of the watchdog's span), never per event.

What an agent has to tell its runtime (a message delivered here, a message of ours
acknowledged in full) it queues as typed events (``gse.agents.events``) that the runtime
takes with ``next_event()`` after every call, as aioquic's connections do;
``gse.agents.driver`` is the loop every runtime drives an agent with.
"""

from __future__ import annotations

from gse.common.fifo import Fifo
from gse.common.timers import TimerHeap

# What an unfinished message can be waiting for (``HostAgent.waiting``), most telling first:
# "path": data of it timed out and nothing was acknowledged since (a dead path, or a peer
# that never answers); "grant": credit it asked for has not come; "send": it may send and
# waits for its NIC (busy with others, rate-limited or PFC-paused); "timer": a resend waits
# for the retransmission timer to let it go; "ack": all of it is out, unacknowledged.
CAUSES = ("path", "grant", "send", "timer", "ack")

TYPE_CHECKING = False   # typing's own, without importing typing (2.9 ms of a start)
if TYPE_CHECKING:    # hints only: the compiled build cimports Packet (interface.pxd)
    from typing import Any
    from gse.wire import packet as wire


class HostAgent:
    """A sans-I/O host agent: inputs with ``now``, packets and one deadline out.

    Besides these methods an agent has ``addr`` and ``counters()``.  What happened to
    whole messages comes out as events (``MessageDelivered``, ``MessageCompleted``):
    the agent appends them to ``_events`` and the runtime takes them with
    ``next_event()`` after every call it makes, in the order they happened.

    What every agent does alike is done here, once: ``receive`` drops a corrupt packet
    (``malformed``) and one for another host (``stray``) before the agent sees it, and
    ``on_timer`` pops the due entries of the agent's ``timers`` heap.  Each agent has one
    dispatch table for each: ``on_packet`` (packet kind -> handler) and ``on_timer_kind``
    (timer kind -> handler), typed C methods in the compiled build (a dict of bound methods
    made the compiled RoCE simulation about 10% slower: docs/architecture.md)."""

    __slots__ = ("addr", "timers", "malformed", "stray", "_events")

    def __init__(self, addr: int) -> None:
        self.addr = addr
        self.timers = TimerHeap()  # (deadline, kind, owner), lazily deleted
        self.malformed = 0        # failed their checksum: the peer's fault, counted, dropped
        self.stray = 0            # for another host, of an unknown kind or message
        self._events: "Fifo[Any]" = Fifo()   # the events not yet taken, oldest first

    def next_event(self):
        """The oldest event not yet taken, or None."""
        if self._events:
            return self._events.popleft()
        return None

    def start_message(self, msg_id: int, dst: int, size: int, now: int) -> None:
        """The application has a message of ``size`` bytes for host ``dst``."""
        raise NotImplementedError

    def has_work(self) -> bool:
        """True if ``poll`` may have a packet."""
        raise NotImplementedError

    def poll(self, now: int, data_ok: bool = True) -> "wire.Packet | None":
        """The next packet for the NIC, or None (control only while ``data_ok`` is False)."""
        raise NotImplementedError

    def next_deadline(self) -> int:
        """The time the agent's timer falls due, or -1."""
        raise NotImplementedError

    def receive(self, pkt: "wire.Packet", now: int) -> None:
        """A packet arrived on the host's link: the checks every agent makes, then the
        agent's handler for its kind (``on_packet``); a kind it has none for is stray."""
        if pkt.corrupt:
            self.malformed += 1      # a failed checksum: the peer's fault, count and drop
            return
        if pkt.dst != self.addr:
            self.stray += 1
            return
        if not self.on_packet(pkt, now):
            self.stray += 1

    def on_packet(self, pkt: "wire.Packet", now: int) -> bool:
        """The agent's dispatch table on ``pkt.kind`` (intact, addressed here): True if
        it has a handler for the kind."""
        raise NotImplementedError

    def on_timer(self, now: int) -> None:
        """The deadline passed: every entry of ``timers`` due by ``now``, in order, to the
        agent's handler for its kind (``on_timer_kind``).  Entries are deleted lazily: a
        handler checks that its deadline still stands."""
        timers = self.timers
        t = timers.first()
        while 0 <= t <= now:
            owner = timers.pop()
            self.on_timer_kind(timers.last_kind, owner, t, now)
            t = timers.first()

    def on_timer_kind(self, kind: int, owner: Any, t: int, now: int) -> None:
        """The agent's dispatch table on timer kinds: the entry ``(t, kind, owner)`` fell
        due at ``now``."""
        raise NotImplementedError

    def progress(self) -> tuple[int, int]:
        """``(unfinished, acked)``: messages started here and not yet acknowledged in full,
        and the packets acknowledged so far of every message ever started here -- a count
        that only grows, and stands still exactly when nothing new is acknowledged.

        Read from the agent's unfinished messages (``out``: msg_id -> message with
        ``acked_packets()``) and ``acked_done``, the packets of those it finished."""
        agent: Any = self      # out and acked_done are the subclasses' attributes
        acked = agent.acked_done
        for msg in agent.out.values():
            acked += msg.acked_packets()
        return len(agent.out), acked

    def waiting(self) -> dict[str, int]:
        """``{cause: count}`` over the unfinished messages: what each waits for
        (``CAUSES``; each message's ``waiting_for()``)."""
        agent: Any = self
        out: dict[str, int] = {}
        for msg in agent.out.values():
            cause = msg.waiting_for()
            out[cause] = out.get(cause, 0) + 1
        return out

    def on_pause(self, paused: bool, now: int) -> None:
        """The NIC was PAUSEd (``paused`` True) or resumed by its link partner.  The runtime
        already holds the NIC; an agent that models what a pause does to its senders
        (RoCE's ``htsim`` NIC: the per-flow pacers stop) overrides this."""
        return None
