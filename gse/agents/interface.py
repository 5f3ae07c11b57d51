"""The interface every runtime drives a host agent through (docs/architecture.md).

``GseHost`` and ``RoceHost`` derive from ``HostAgent``: in the pure-Python build it only
documents the calls; in the compiled build (cython/gse/agents/interface.pxd) it is the
extension type through which the simulator calls an agent's methods directly, whichever the protocol.
Runtimes may drive any object with these methods (duck typing), the compiled simulator
only a ``HostAgent``.

``progress()`` and ``waiting()`` are what the runtimes' no-progress watchdog reads
(``gse.metrics.stall``): they scan the unfinished messages, so a runtime calls them now and
then (a look every quarter of the watchdog's span), never per event.
"""

from typing import TYPE_CHECKING, Any

# What an unfinished message can be waiting for (``HostAgent.waiting``), most telling first:
# "path": data of it timed out and nothing was acknowledged since (a dead path, or a peer
# that never answers); "grant": credit it asked for has not come; "send": it may send and
# waits for its NIC (busy with others, rate-limited or PFC-paused); "timer": a resend waits
# for the retransmission timer to let it go; "ack": all of it is out, unacknowledged.
CAUSES = ("path", "grant", "send", "timer", "ack")

if TYPE_CHECKING:    # hints only: the compiled build cimports Packet (interface.pxd)
    from gse.wire import packet as wire


class HostAgent:
    """A sans-I/O host agent: inputs with ``now``, packets and one deadline out.

    Besides these methods an agent has ``addr``, ``sent_done`` (list of ``(msg_id,
    retransmits, now)``) and ``receiver.delivered`` (list of ``(src, msg_id, size, now)``),
    which the runtime drains after every call, and ``counters()``."""

    __slots__ = ()

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
        """A packet arrived on the host's link."""
        raise NotImplementedError

    def on_timer(self, now: int) -> None:
        """The deadline passed."""
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
