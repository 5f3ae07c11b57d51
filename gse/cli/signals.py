"""SIGINT and SIGTERM end a command's runs the way a run's own end would: the partial
summary and records are written, marked ``"complete": false``, and the command exits
128 + the signal, as ``gse run --runtime udp`` does.

``StopSignals`` is held for the length of a command (``gse sim``, ``compare``,
``replay``, ``sweep``), so a signal that comes while results are written is answered
the same way.  In a simulation the handler only notes the signal: the compiled event
loop runs no Python code for long stretches, and an exception raised in the middle of an
event would leave the network half-updated.  ``StopSignals.observer`` hands the run an
observer (``gse.runtimes.sim.observe``) that looks about ten times a second of wall
time and ends the run there ("signal"), so the summary describes a consistent state.
A sweep waits on its workers, not on an event loop: there the handler raises
``Interrupted`` (``raise_at_once``) and the sweep writes the rows it has on its way out.

A second signal ends the process at once (the signal's default action), for a user who
will not wait.
"""

import os
import signal
import sys

from gse.cli.progress import WallSteps
from gse.metrics.stall import describe_stall

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
LOOK_S = 0.1                      # wall time between a simulation's looks at the flag


class Interrupted(Exception):
    """A stop signal, raised where the command waits (``StopSignals(raise_at_once=True)``)."""

    def __init__(self, name):
        self.signal = name
        super().__init__("interrupted by %s" % name)


class StopSignals:
    """SIGINT and SIGTERM noted (or raised as ``Interrupted``) while held; in the main
    thread only (elsewhere the signals keep their handlers), and not a signal the process
    was started with ignored (``cmd &`` in a shell script ignores SIGINT)."""

    def __init__(self, raise_at_once=False):
        self.raise_at_once = raise_at_once
        self.signal = None        # the first signal's name, once one came
        self.signum = None
        self.saved = {}

    def __enter__(self):
        for sig in STOP_SIGNALS:
            if signal.getsignal(sig) is signal.SIG_IGN:
                continue            # ignored by whoever started us (a background job)
            try:
                self.saved[sig] = signal.signal(sig, self._handle)
            except ValueError:      # not the main thread (so not for any signal), where
                break               # ``signal`` refuses: no ``threading`` to ask first
        return self

    def __exit__(self, *exc):
        for sig, old in self.saved.items():
            signal.signal(sig, old)
        self.saved = {}
        return False

    def _handle(self, signum, _frame):
        if self.signum is not None:           # the second one: the default action, now
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        self.signum = signum
        self.signal = signal.Signals(signum).name
        if self.raise_at_once:
            raise Interrupted(self.signal)

    @property
    def exit_code(self):
        return 128 + self.signum

    def observer(self):
        """``make(net)`` for a simulation's observers: ends the run once a signal came."""
        return lambda net: SignalStop(net, self)


class SignalStop:
    """An observer that ends a simulation at its first look after a stop signal."""

    def __init__(self, net, stop):
        self.stop = stop
        self.steps = WallSteps(LOOK_S)
        self.next_stop = net.eq.now if stop.signal else net.eq.now + self.steps.step

    def at_stop(self, now):
        if self.stop.signal:
            self.next_stop = -1
            return "signal"
        self.next_stop = self.steps.next_stop(now)
        return None

    def close(self, now):
        self.next_stop = -1


def note_signal(summary, stop):
    """A run the signal ended says which signal in its summary."""
    if summary.get("end") == "signal":
        summary["signal"] = stop.signal
    return summary


def exit_code(command, summaries, stop, ok, json_path=None):
    """The exit code of a simulating command, after saying on standard error what cut
    its runs short: 128 + the signal, 1 for a stalled run (with what it waited for) or
    a run that is not ``ok``, else 0."""
    for label, s in summaries:
        if s.get("stall"):
            print("gse %s: error: %s%s" % (command, "%s: " % label if label else "",
                                           describe_stall(s["stall"])), file=sys.stderr)
    if stop.signal:
        done = sum(s.get("delivered", 0) for _, s in summaries)
        total = sum(s.get("messages", 0) for _, s in summaries)
        print("gse %s: interrupted by %s: partial results (%d of %d messages delivered)%s"
              % (command, stop.signal, done, total,
                 " written to %s" % json_path if json_path else ""), file=sys.stderr)
        return stop.exit_code
    if any(s.get("stall") for _, s in summaries):
        return 1
    return 0 if ok else 1
