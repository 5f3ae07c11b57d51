"""The no-progress watchdog of every runtime: when a run is stuck, and on what.

A run makes progress while messages complete or new data is acknowledged or received.
A run that can make none (every path dead and never routed around, a receiver that stopped
granting) would otherwise go on for ever: its senders probe and re-request with backoff,
so the event queue never drains and the clock never stops.  Every runtime therefore looks
at its hosts now and then -- the simulation on its virtual clock (an observer of
``gse.runtimes.sim.observe``), the UDP runtimes on their real one -- and ends the run when
nothing moved for ``span_ps`` of the run's clock while messages were unfinished, with a
report of what the unfinished messages wait for (``HostAgent.waiting``).

What counts (``host_progress``): each agent's count of acknowledged packets (it includes
the messages that finished, so a completion counts) and the payload its receiver
accepted.  Time with no message unfinished is never a stall: a trace's compute phase,
messages that start later, the gap before a trigger fires.

The default span is ``SPAN_RTOS`` x the protocol's largest RTO (``rto_max_ps``: a sender
that gets no answer probes once per maximum RTO, so four unanswered probes in a row), and
never ends before the fault schedule's last change (a link failure, a restore, the
switches learning of one) plus that span: a fabric cut off until the switches route
around it is not stuck.  On a real clock it is at least ``REALTIME_MIN_SPAN_PS`` (1 s):
a loaded machine may not run a process for a good part of a second, and simulation-sized
timers (a 1.6 ms maximum RTO) would make that look like a stuck run; and a look that
comes more than two looks late (the process was not run) starts the span again.  ``--stall-us``
sets it; 0 turns the watchdog off.
"""

from __future__ import annotations

from collections.abc import Sequence

from gse.agents.interface import CAUSES

TYPE_CHECKING = False   # typing's own, without importing typing (2.9 ms of a start)
if TYPE_CHECKING:
    from typing import Any
    from gse.protocols import ProtocolConfig
    from gse.workloads.faults import FaultSchedule

    # The host agents of a run: gse.agents.interface.HostAgent and the objects runtimes
    # drive like one (duck typing), with the ``receiver`` it documents.
    Agents = Sequence[Any]

SPAN_RTOS = 4
REALTIME_MIN_SPAN_PS = 1_000_000_000_000

CAUSE_TEXT = {
    "path": "waiting for a path (timed out, nothing acknowledged since)",
    "grant": "waiting for grants",
    "send": "waiting to send (NIC busy, rate-limited or paused)",
    "timer": "waiting for a retransmission timer",
    "ack": "waiting for acknowledgements",
    "delivery": "expected here, not delivered",
}


def default_span_ps(config: "ProtocolConfig", realtime: bool = False) -> int:
    """The watchdog's span for a protocol config: ``SPAN_RTOS`` maximum RTOs (on a real
    clock, ``realtime``, at least ``REALTIME_MIN_SPAN_PS``)."""
    span = SPAN_RTOS * config.rto_max_ps
    return max(span, REALTIME_MIN_SPAN_PS) if realtime else span


def last_change_ps(faults: "FaultSchedule | None", detect_ps: int = -1) -> int:
    """The time of a fault schedule's last change: a link going down or up, or the
    switches learning of one (``detect_ps`` after it unless the entry says otherwise);
    0 without one."""
    if not faults:
        return 0
    times = [t for t, *_ in faults.link_events()]
    times += [t for t, *_ in faults.route_events(detect_ps)]
    return max(times, default=0)


def span_of(stall_ps: int | None, config: "ProtocolConfig",
            realtime: bool = False) -> int:
    """``stall_ps`` as the runs take it (None: the default for ``config``; <= 0: off) ->
    the span in picoseconds, 0 for off."""
    if stall_ps is None:
        return default_span_ps(config, realtime)
    return stall_ps if stall_ps > 0 else 0


def host_progress(agents: Agents) -> tuple[int, tuple[int, int]]:
    """(unfinished messages, progress mark) over ``agents``: the mark changes exactly when
    some message completed or some new data was acknowledged or accepted."""
    unfinished = acked = received = 0
    for agent in agents:
        n, k = agent.progress()
        unfinished += n
        acked += k
        received += agent.receiver.payload_bytes
    return unfinished, (acked, received)


class StallWatch:
    """Decides from successive looks (``look``) when a run has stopped making progress.

    ``check_ps``: how often a runtime should look (a quarter of the span), so a stall is
    declared between one span and one span plus two looks after the last progress
    (``since_ps``: the look that last saw progress, or saw nothing unfinished)."""

    def __init__(self, span_ps: int, not_before_ps: int = 0, realtime: bool = False) -> None:
        if span_ps <= 0:
            raise ValueError("the watchdog's span must be positive, got %r" % span_ps)
        self.span_ps = span_ps
        self.check_ps = max(1, span_ps // 4)
        self.not_before_ps = not_before_ps
        self.realtime = realtime
        self.mark: object = None
        self.since_ps = 0         # when progress (or an idle run) was last seen
        self.last_look_ps: int | None = None
        self.unwatched = 0        # looks that came late: the process was not run

    def look(self, now: int, unfinished: int, mark: object) -> bool:
        """True if nothing moved for the span while ``unfinished`` messages waited.

        On a real clock (``realtime``) a look that comes more than two looks late means
        the process itself was not run -- a loaded machine, not a stuck protocol: its
        packets wait in the socket, unread.  Time it did not watch is not time without
        progress, so the span starts again from that look."""
        late = (self.realtime and self.last_look_ps is not None
                and now - self.last_look_ps > 2 * self.check_ps)
        self.last_look_ps = now
        if unfinished == 0 or mark != self.mark or now < self.not_before_ps or late:
            self.unwatched += late
            self.mark = mark
            self.since_ps = now
            return False
        return now - self.since_ps >= self.span_ps


def waiting_counts(agents: Agents) -> tuple[dict[str, int], int]:
    """({cause: count}, hosts with unfinished messages) over ``agents``."""
    counts: dict[str, int] = {}
    hosts = 0
    for agent in agents:
        w = agent.waiting()
        if w:
            hosts += 1
        for cause, n in w.items():
            counts[cause] = counts.get(cause, 0) + n
    return counts, hosts


def stall_report(watch: StallWatch, now: int, counts: dict[str, int], hosts: int,
                 unfinished: int | None = None) -> dict[str, Any]:
    """The summary's ``stall`` section: when, for how long, and what waits for what."""
    order = list(CAUSES) + sorted(c for c in counts if c not in CAUSES)
    return {"span_us": watch.span_ps / 1e6, "progress_seen_us": watch.since_ps / 1e6,
            "at_us": now / 1e6,
            "unfinished": sum(counts.values()) if unfinished is None else unfinished,
            "hosts": hosts,
            "waiting": {c: counts[c] for c in order if counts.get(c)}}


def look_at_hosts(watch: StallWatch, now: int,
                  agents: Agents) -> dict[str, Any] | None:
    """One look of ``watch`` at ``agents`` at ``now``: the stall report if the run is
    stuck, else None."""
    unfinished, mark = host_progress(agents)
    if not watch.look(now, unfinished, mark):
        return None
    counts, hosts = waiting_counts(agents)
    return stall_report(watch, now, counts, hosts, unfinished)


def describe_causes(report: dict[str, Any]) -> str:
    """``3 waiting for grants, 1 ...``: a report's causes in words."""
    return ", ".join("%d %s" % (n, CAUSE_TEXT.get(c, c))
                     for c, n in report["waiting"].items()) or "nothing reported"


def time_text(us: float) -> str:
    """A duration or time of the run's clock for people: us, ms or s."""
    if us >= 1e6:
        return "%.4g s" % (us / 1e6)
    if us >= 1e3:
        return "%.4g ms" % (us / 1e3)
    return "%.4g us" % us


def describe_stall(report: dict[str, Any]) -> str:
    """One line for the user: what is stuck, per cause."""
    return ("no progress for %s of the run's clock (nothing completed, acknowledged or "
            "received between the watchdog's looks at %s and %s; its span, --stall-us, is "
            "%s): %d unfinished message(s) on %d host(s): %s"
            % (time_text(report["at_us"] - report["progress_seen_us"]),
               time_text(report["progress_seen_us"]), time_text(report["at_us"]),
               time_text(report["span_us"]), report["unfinished"], report["hosts"],
               describe_causes(report)))
