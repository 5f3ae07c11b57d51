"""Running a simulation with observers: time series, captures' bookkeeping, progress bars.

An observer looks at the network between events and never schedules any, so a run with
observers executes exactly the events of a run without them, in the same order (same
sequence numbers): results are bit-identical, and the event loop carries no hook at all.
The loop runs the event queue up to the earliest time an observer asked for
(``EventQueue.run(until)`` executes every event at or before it and stops), calls the
observers due, and goes on until the queue drains or ``until_ps`` is reached.

An observer has:

* ``next_stop``: the virtual time (ps) it wants to look next, -1 for never;
* ``at_stop(now)``: called with the queue stopped at ``now`` (every event at or before
  ``now`` has run); it updates ``next_stop``, and returns a reason (a string) to end the
  run there, or None;
* ``close(now)``: called once when the run ends (``now`` = the time of the last event, or
  ``until_ps``, or the stop an observer ended the run at);
* optionally ``run_bins(eq, limit)``: run the queue itself, stopping at each of its own
  stops before ``limit`` (-1: none) and doing there what ``at_stop`` does, and return
  True if the queue drained (the sampler, whose stops are every bin: the same stops,
  without a pass of this module's Python loop for each).

``gse.metrics.timeseries.Sampler`` (``--sample-us``), ``gse.cli.progress`` (the progress
bar) and ``Watchdog`` (the no-progress watchdog, ``gse.metrics.stall``) are observers; an
observer that ends the run (the watchdog, a signal: ``gse.cli.signals``) changes only
where the run stops, never what happened before.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable

from gse.metrics.stall import StallWatch, last_change_ps, look_at_hosts, span_of

TYPE_CHECKING = False   # typing's own, without importing typing (2.9 ms of a start)
if TYPE_CHECKING:
    from typing import Any
    from gse.protocols import ProtocolConfig
    from gse.workloads.faults import FaultSchedule


class quiet_gc:
    """The garbage collector kept out of the event loop's way, for the length of a run.

    A big network is millions of long-lived objects (ports, queues, agents, messages in
    flight); the collector's passes over them were a quarter of the wall time of a
    10k-NIC run (perf: ``gc_collect_main``, ``visit_decref``, ``visit_reachable``), and
    still a tenth with the network frozen (``gc.freeze``), as every message in flight is
    young at first.  The simulation's objects do not form cycles per packet or message
    (reference counting frees them; ``gc.collect()`` after a run finds only the network's
    own graph), so the collector is off during the run and back, as it was, after it.
    Nothing the simulation computes depends on when garbage is collected: results are
    the same.

    Also around the network's construction and the summary (``gse.api.runner``): what
    is made there lives as long as the network.  On the way out what was made while
    quiet joins the oldest generation (``promote_young``), as a collection that found it
    alive would move it, but without that pass: the first allocation after ``enable``
    would otherwise collect the young generation, the whole network (5 M instructions,
    1 ms, at k=8: docs/scale.md)."""

    def __enter__(self):
        self.enabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            promote_young()
            gc.enable()
        return False


def promote_young():
    """Every object the collector tracks joins its oldest generation, the young ones'
    counts reset (``gc.freeze`` then ``gc.unfreeze``: two list splices), unless objects
    are frozen (``gc.freeze``'s caller meant them to stay so)."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def run_observed(net: Any, until_ps: int = -1, observers: Iterable[Any] = ()) -> str:
    """``net.run(until_ps)`` with ``observers`` called at the times they ask for (and
    the garbage collector quiet, ``quiet_gc``).

    Returns why the run ended: "done" (the event queue drained), "until" (it reached
    ``until_ps``) or the reason an observer gave ("stalled", "signal")."""
    with quiet_gc():
        return _run_observed(net, until_ps, observers)


def _run_observed(net, until_ps, observers):
    observers = [o for o in observers if o is not None]
    if not observers:
        return "done" if net.run(until_ps) else "until"
    eq = net.eq
    end = None
    # An observer that can run the queue up to its own stops (the sampler: ``run_bins``)
    # does so between the others' stops, sparing this loop's Python per stop; the stops
    # it leaves (another observer's, the run's end, one in the past) are this loop's.
    binner = next((o for o in observers if getattr(o, "run_bins", None) is not None), None)
    others = [o for o in observers if o is not binner]
    try:
        while end is None:
            if binner is not None:
                limit = until_ps
                for o in others:
                    t = o.next_stop
                    if t >= 0 and (limit < 0 or t < limit):
                        limit = t
                if binner.run_bins(eq, limit):
                    end = "done"
                    break
            stop = -1
            for o in observers:
                t = o.next_stop
                if t >= 0 and (stop < 0 or t < stop):
                    stop = t
            if stop < 0 or (0 <= until_ps <= stop):
                end = "done" if net.run(until_ps) else "until"
                break
            if stop < eq.now:
                stop = eq.now
            if net.run(stop):
                end = "done"
                break
            for o in observers:
                if 0 <= o.next_stop <= stop:
                    reason = o.at_stop(stop)
                    if reason and end is None:
                        end = reason
    finally:
        now = eq.now
        for o in observers:
            o.close(now)
    return end


class Watchdog:
    """The no-progress watchdog on the virtual clock (``gse.metrics.stall``): looks at the
    hosts every quarter span and ends the run ("stalled") when nothing completed, was
    acknowledged or received for ``span_ps`` while messages were unfinished; ``report``
    then says what they wait for.  Its looks read the agents and schedule nothing."""

    def __init__(self, net, span_ps, not_before_ps=0):
        self.net = net
        self.agents = [h.agent for h in net.hosts]
        self.watch = StallWatch(span_ps, not_before_ps)
        self.next_stop = net.eq.now + self.watch.check_ps
        self.report = None

    @classmethod
    def factory(cls, stall_ps: int | None, config: "ProtocolConfig",
                faults: "FaultSchedule | None" = None,
                detect_ps: int = -1) -> "Callable[[Any], Watchdog] | None":
        """``make(net)`` for a run's observers: None when ``stall_ps`` turns it off
        (``gse.metrics.stall.span_of``)."""
        span = span_of(stall_ps, config)
        if not span:
            return None
        not_before = last_change_ps(faults, detect_ps)
        return lambda net: cls(net, span, not_before)

    def at_stop(self, now):
        self.report = look_at_hosts(self.watch, now, self.agents)
        if self.report is not None:
            self.next_stop = -1
            return "stalled"
        self.next_stop = now + self.watch.check_ps
        return None

    def close(self, now):
        self.next_stop = -1


def mark_end(summary: dict[str, Any], end: str, watchdog: Watchdog | None = None,
             complete: bool | None = None) -> dict[str, Any]:
    """Say in a run's summary how it ended: ``end`` ("done", "until", "stalled",
    "signal"), ``complete`` (ran to its end: drained, or stopped at ``--until-us`` with
    every message done, unless ``complete`` says otherwise) and, when the watchdog
    ended it, its ``stall`` report."""
    summary["end"] = end
    if complete is None:
        complete = end == "done" or (end == "until" and summary.get("lost") == 0)
    summary["complete"] = bool(complete)
    if watchdog is not None and watchdog.report is not None:
        summary["stall"] = watchdog.report
    return summary
