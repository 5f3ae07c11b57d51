"""What the simulation's event queue calls without a Python call: a :class:`Handler`.

The objects that receive most events (ports, nodes) derive from it and schedule
``event_target(self, self.method)`` (``gse.runtimes.sim.eventq``), where ``fire(a, b)``
does what ``method(a, b)`` does.  It lives here, below the switch model, because a
simulated port is its own output queue and counters: ``switchmodel.queue.PortCounters``
derives from it, ``OutputQueue`` from that, the simulation's ``LinkPort`` from that, so
that a hop touches one object's lines (docs/scale.md).  ``gse.runtimes.sim.eventq``
names it too.
"""


class Handler:
    """An object the event queue may call as ``fire(a, b)`` instead of a bound method."""

    __slots__ = ()

    def fire(self, a, b):
        raise NotImplementedError
