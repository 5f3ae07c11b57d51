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
  ``now`` has run); it updates ``next_stop``;
* ``close(now)``: called once when the run ends (``now`` = the time of the last event, or
  ``until_ps``).

``gse.metrics.timeseries.Sampler`` (``--sample-us``) and ``gse.metrics.progress`` (the
progress bar) are observers.
"""

import gc


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
    the same."""

    def __enter__(self):
        self.enabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            gc.enable()
        return False


def run_observed(net, until_ps=-1, observers=()):
    """``net.run(until_ps)`` with ``observers`` called at the times they ask for (and
    the garbage collector quiet, ``quiet_gc``).

    Returns what ``net.run`` returns: True if the event queue drained, False if the run
    stopped at ``until_ps``."""
    with quiet_gc():
        return _run_observed(net, until_ps, observers)


def _run_observed(net, until_ps, observers):
    observers = [o for o in observers if o is not None]
    if not observers:
        return net.run(until_ps)
    eq = net.eq
    drained = False
    try:
        while True:
            stop = -1
            for o in observers:
                t = o.next_stop
                if t >= 0 and (stop < 0 or t < stop):
                    stop = t
            if stop < 0 or (0 <= until_ps <= stop):
                drained = net.run(until_ps)
                break
            if stop < eq.now:
                stop = eq.now
            if net.run(stop):
                drained = True
                break
            for o in observers:
                if 0 <= o.next_stop <= stop:
                    o.at_stop(stop)
    finally:
        now = eq.now
        for o in observers:
            o.close(now)
    return drained
