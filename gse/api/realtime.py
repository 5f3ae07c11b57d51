"""``gse.run`` on the real-time runtimes: a Scenario over real UDP sockets, every node in
this process on the loopback range (``udp``), or a ``gse agent`` process per node in its
own Mininet namespace (``mininet``).  The same ``Result`` as the simulation's: the summary
in ``gse sim``'s schema (plus the runtime's own section, ``udp`` / ``mininet``), the
per-message records, the failure figures; no time series (the simulation samples them).

``gse run`` is this call plus options and printing: its ``--json`` is the
``Result.summary.to_dict()`` of the Scenario its options describe.  What was the command
line's glue (``run_from_args`` in ``gse.cli.run`` and in the Mininet runtime) is here, on
a Scenario, so that no runtime reads command-line options.

The protocol timers are the real-time ones (``gse.runtimes.udp.config.udp_profile``,
``UDP_TIMERS``) except those the scenario's ``overrides`` set.
"""

from gse.api import build
from gse.api.result import Result
from gse.config import PS_PER_US, fault_rates_error
from gse.metrics.records import RunResult


def explicit_settings(overrides):
    """Parameter names that ``NAME=VALUE`` overrides set (with or without a protocol
    prefix): ``udp_profile`` leaves them as set."""
    names = set()
    for item in overrides or ():
        name = item.split("=", 1)[0].strip()
        names.add(name.split(".", 1)[1] if "." in name else name)
    return names


def config(scenario, protocol, lenient=False):
    """The protocol's config with the scenario's overrides and the real-time timers."""
    from gse.runtimes.udp.config import udp_profile
    return udp_profile(build.config(scenario, protocol, lenient),
                       explicit_settings(scenario.overrides),
                       link_gbps=scenario.topology.get("link_gbps"))


def sim_twin(scenario):
    """The same run in the simulation: ``runtime="sim"``, the same topology, messages and
    seed, and as overrides the real-time values ``udp_profile`` gives each protocol's
    config, so every config is the one the real-time run uses (what the simulation
    columns of ``experiments/mininet_fattree.py`` run beside Mininet)."""
    from gse.runtimes.udp.config import UDP_COALESCING, UDP_TIMERS
    extra = []
    for p in scenario.protocols:
        cfg = config(scenario, p, lenient=len(scenario.protocols) > 1)
        plain = build.config(scenario, p, lenient=len(scenario.protocols) > 1)
        for name in sorted(set(UDP_TIMERS) | set(UDP_COALESCING)):
            if name in cfg.__slots__ and getattr(cfg, name) != getattr(plain, name):
                extra.append("%s.%s=%s" % (p, name, getattr(cfg, name)))
    return scenario.replace(runtime="sim", overrides=list(scenario.overrides) + extra)


def pcap_options(options):
    """The capture options as both runtimes take them (None without ``pcap``)."""
    if not options.get("pcap"):
        return None
    return {"dir": options["pcap"], "spec": options["pcap_ports"],
            "budget": options["pcap_budget"], "snaplen": options["pcap_snaplen"]}


def check_mininet():
    """Refuse at once, saying why, where Mininet cannot run (root, ``mnexec``, ...)."""
    from gse.runtimes.mininet.environment import MininetUnavailable, mininet_unavailable
    reason = mininet_unavailable()
    if reason:
        raise MininetUnavailable("runtime mininet: %s" % reason)


def run_real_time(scenario, protocol=None, progress=None, log=print, lenient=False):
    """One protocol (default: the scenario's first) of a ``udp`` or ``mininet`` scenario;
    a ``Result``.  ``progress``: a display with ``counter(label, total) -> update(done,
    status)`` (UDP) and ``mininet(label) -> update(state)`` (Mininet), as
    ``gse.cli.progress.Progress``; ``log`` gets what the run ignores or warns about.
    Bad input is refused before any socket or namespace exists."""
    s = scenario
    protocol = protocol or s.protocol
    problem = fault_rates_error(s.loss, s.corrupt)
    if problem:
        raise ValueError(problem)
    if s.runtime == "mininet":
        check_mininet()
    topo = build.topology(s)
    messages, triggers = build.workload(s, topo, log)
    if triggers is not None:
        raise ValueError("%s starts flows by triggers (htsim's trigger/send_done_trigger); "
                         "only the simulation runs them: gse sim or gse compare"
                         % s.workload["path"])
    if not messages:
        raise ValueError("the traffic has no messages")
    cfg = config(s, protocol, lenient)
    o = s.runtime_options
    faults = build.faults(s, topo, o["fail_after_packets"])
    label = "%s %s" % (s.runtime, protocol)
    if s.runtime == "udp":
        from gse.runtimes.udp.network import run_udp
        res = run_udp(topo, messages, protocol=protocol, config=cfg, seed=s.seed,
                      loss_rate=s.loss, corrupt_rate=s.corrupt, until_ps=build.until_ps(s),
                      timeout_s=o["timeout_s"], loop=o["loop"], addressing=o["addressing"],
                      slack_ps=int(o["slack_us"] * PS_PER_US),
                      precise_timers=not o["coarse_timers"], wire=o["wire"],
                      pcap=pcap_options(o),
                      progress=None if progress is None else progress.counter(label,
                                                                              len(messages)),
                      secure_key_file=o["secure"], faults=faults,
                      detect_ps=build.detect_ps(s), stall_ps=build.stall_ps(s))
    else:
        res = _run_mininet(s, topo, messages, protocol, cfg, faults,
                           None if progress is None else progress.mininet(label), log)
    build.describe(res.summary, s, cfg)
    return Result(s, protocol, res)


def _run_mininet(s, topo, messages, protocol, cfg, faults, progress, log):
    from gse.runtimes.mininet.run import FAITHFUL_GBPS, run_mininet
    fastest = max(link.gbps for link in topo.links)
    if fastest > FAITHFUL_GBPS:
        log("warning: links at %g Gb/s; agents in Mininet sleep >= 1 ms between timers, so "
            "one port keeps its emulated rate up to ~%g Gb/s (docs/mininet.md)"
            % (fastest, FAITHFUL_GBPS))
    o = s.runtime_options
    stall = build.stall_ps(s)
    res = run_mininet(topo, messages, protocol, cfg, s.seed, s.loss, s.corrupt,
                      timeout_s=o["timeout_s"], loop=o["loop"],
                      slack_ps=int(o["slack_us"] * PS_PER_US), progress=progress,
                      wire=o["wire"], pcap=pcap_options(o), placement=o["placement"],
                      precise_timers=o["precise_timers"], faults=faults,
                      detect_ps=build.detect_ps(s),
                      stall_s=None if stall is None else stall / 1e12,
                      secure_key_file=o["secure"], forwarding=o.get("forwarding", "agents"))
    if o.get("forwarding") == "kernel":
        log("forwarding: %s" % res.summary["forwarding"])
    return RunResult(res.summary, res.records, None)
