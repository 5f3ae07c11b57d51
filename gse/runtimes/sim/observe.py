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


def run_observed(net, until_ps=-1, observers=()):
    """``net.run(until_ps)`` with ``observers`` called at the times they ask for.

    Returns what ``net.run`` returns: True if the event queue drained, False if the run
    stopped at ``until_ps``."""
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
