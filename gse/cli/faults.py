"""Options that fail links and switches during a run (``docs/failures.md``).

``--fail SPEC`` (repeatable) and ``--fail-file FILE`` (repeatable) give the entries of a
fault schedule (``gse.workloads.faults``); ``--detect-us`` how long the switches take to
learn of each change.  ``gse sim``, ``gse compare``, ``gse run`` and ``gse agent-configs``
take them.
"""

from gse.config import PS_PER_US
from gse.workloads.faults import FaultSchedule, build_schedule

DEFAULT_DETECT_US = 1000.0


def add_fault_options(p):
    g = p.add_argument_group("failures")
    g.add_argument("--fail", action="append", default=[], metavar="SPEC",
                   help="fail links or a switch during the run, e.g. "
                        "link:agg0_0-core0@50us, switch:agg1_0@50us,restore=1ms, "
                        "tier:agg-core:25%%@50us, ...,flap=10us/40us,until=1ms, ...,gray=1%% "
                        "(repeatable; docs/failures.md)")
    g.add_argument("--fail-file", action="append", default=[], metavar="FILE",
                   help="a schedule file: one --fail SPEC per line, # comments")
    g.add_argument("--detect-us", default=str(DEFAULT_DETECT_US), metavar="US|never",
                   help="the switches learn of a failure or a restore this long after it "
                        "and route around it (default %g us)" % DEFAULT_DETECT_US)
    return g


def detect_ps(args):
    """``--detect-us`` in picoseconds, -1 for never."""
    text = str(getattr(args, "detect_us", DEFAULT_DETECT_US)).strip()
    if text == "never":
        return -1
    try:
        us = float(text)
    except ValueError:
        raise ValueError("--detect-us takes microseconds or 'never', got %r" % text) from None
    if not us >= 0 or us == float("inf"):
        raise ValueError("--detect-us must be >= 0, got %r" % text)
    return int(round(us * PS_PER_US))


def add_trigger_option(g):
    """``gse run`` only: the real-time runtimes start a schedule on the traffic's progress."""
    g.add_argument("--fail-after-packets", type=int, default=None, metavar="N",
                   help="the --fail times count from when a node has sent N packets over "
                        "the schedule's links, not from time 0: the failure hits traffic "
                        "however slowly the machine gets it going")


def faults_from_args(args, topo):
    """The run's fault schedule (empty without --fail/--fail-file)."""
    specs = getattr(args, "fail", None) or []
    files = getattr(args, "fail_file", None) or []
    after = getattr(args, "fail_after_packets", None)
    if not specs and not files:
        if after is not None:
            raise ValueError("--fail-after-packets needs a schedule (--fail or --fail-file)")
        return FaultSchedule()
    return build_schedule(topo, specs, files, getattr(args, "seed", 1), after)
