"""Options that fail links and switches during a run (``docs/failures.md``).

``--fail SPEC`` (repeatable) and ``--fail-file FILE`` (repeatable) give the entries of a
fault schedule (``gse.workloads.faults``); ``--detect-us`` how long the switches take to
learn of each change.  ``gse sim``, ``gse compare``, ``gse run`` and ``gse agent-configs``
take them.
"""

from gse.api.options import (  # noqa: F401  (the commands import them from here)
    DEFAULT_DETECT_US,
    add_fault_options,
    add_trigger_option,
    detect_ps,
)
from gse.workloads.faults import FaultSchedule, build_schedule


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
