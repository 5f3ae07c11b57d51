"""Progress bars for the long commands (rich), on a terminal only.

One ``Progress`` per command invocation, used as a context manager around the runs; each
run is a *task* of it:

* ``Progress.sim(label, total)`` -> ``make(net)`` for ``run_simulation(...,
  observers=[make])``: an observer of ``gse.runtimes.sim.observe`` that stops the event
  queue every ~0.2 s of wall time (an adaptive step of virtual time) to show simulated
  time, events per second and messages completed;
* ``Progress.counter(label, total)`` -> ``update(done, **fields)``: a plain task for runs
  that report their own progress (the UDP runtime's completions, Mininet's agents, and
  the place a future ``gse sweep`` hangs its runs: one task, ``update(runs_done)``);
* ``Progress.mininet(label)`` -> the ``progress(dict)`` callback ``run_mininet`` takes.

Everything is drawn on standard error and nothing at all when it is not a terminal or
``--quiet`` is given (``Progress(enabled=False)`` hands out observers and callbacks that
do nothing, so callers never branch).  Observers only read the network, so a run with a
progress bar gives the same results as one without.
"""

import sys
import time

PS_PER_US = 1_000_000
STEP_S = 0.2                      # wall time between two looks at a simulation


def wanted(args, stream=None):
    """A progress bar for these options: a terminal, and no ``--quiet``."""
    stream = stream or sys.stderr
    return (not getattr(args, "quiet", False) and hasattr(stream, "isatty")
            and stream.isatty())


class Progress:
    """A display of one or more tasks (see the module docstring)."""

    def __init__(self, enabled=True, stream=None):
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.display = None

    def __enter__(self):
        if self.enabled:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress,
                                       TextColumn, TimeElapsedColumn)
            self.display = RichProgress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[status]}"), TimeElapsedColumn(),
                console=Console(file=self.stream), transient=False)
            self.display.start()
        return self

    def __exit__(self, *exc):
        if self.display is not None:
            self.display.stop()
            self.display = None
        return False

    def _task(self, label, total):
        if self.display is None:
            return None
        return self.display.add_task(label, total=total, status="")

    def counter(self, label, total=None):
        """``update(done, status="")`` for a task of ``total`` steps."""
        task = self._task(label, total)
        display = self.display

        def update(done, status=""):
            if task is not None:
                display.update(task, completed=done, status=status)
        return update

    def sim(self, label, total):
        """``make(net)`` for ``run_simulation(..., observers=[make])``; the task appears
        when the run starts."""
        def make(net):
            task = self._task(label, total)
            if task is None:
                return None
            return SimProgress(net, self.display, task, total)
        return make

    def mininet(self, label):
        """The ``progress`` callback of ``run_mininet``: hosts done of hosts, the stage,
        agents up and datagrams received."""
        task = self._task(label, None)
        display = self.display

        def update(p):
            if task is None or p is None:
                return
            display.update(task, total=p["hosts"], completed=p["hosts_done"],
                           status="%s, agents up %d/%d, %d datagrams"
                           % (p["stage"], p["ready"], p["agents"], p["datagrams"]))
        return update


class WallSteps:
    """Steps of virtual time that take about ``target_s`` of wall time each: what an
    observer of a simulation that looks by the wall clock (a progress bar, a signal
    check) asks for as its ``next_stop``.  ``spent``: the wall time of the last step."""

    def __init__(self, target_s=STEP_S, clock=time.perf_counter):
        self.target_s = target_s
        self.clock = clock
        self.step = PS_PER_US             # virtual time between looks, adapted
        self.wall = clock()
        self.spent = 0.0

    def next_stop(self, now):
        wall = self.clock()
        self.spent = wall - self.wall
        if self.spent > 0:
            # aim at target_s per look; grow at most 4x at a time (the load changes)
            self.step = max(1000, int(self.step * min(4.0, self.target_s / self.spent)))
        self.wall = wall
        return now + self.step


class SimProgress:
    """The observer behind ``Progress.sim``: looks every ~``STEP_S`` of wall time."""

    def __init__(self, net, display, task, total, clock=time.perf_counter):
        self.net = net
        self.display = display
        self.task = task
        self.total = total
        self.steps = WallSteps(STEP_S, clock)
        self.next_stop = net.eq.now + self.steps.step
        self.events = net.eq.events
        self.rate = 0.0

    def at_stop(self, now):
        eq = self.net.eq
        self.next_stop = self.steps.next_stop(now)
        if self.steps.spent > 0:
            self.rate = (eq.events - self.events) / self.steps.spent
        self.events = eq.events
        self._show(now)

    def close(self, now):
        self._show(now)
        self.next_stop = -1

    def _show(self, now):
        done = len(self.net.sender_done)
        self.display.update(self.task, completed=done,
                            status="sim %.1f us, %s events/s" % (now / PS_PER_US,
                                                                 _si(self.rate)))


def _si(x):
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return "%.2f%s" % (x / scale, unit)
    return "%.0f" % x
