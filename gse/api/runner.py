"""``gse.run(scenario)`` and ``gse.compare(scenario, protocols=...)``: a Scenario through
its runtime, ``Result`` objects out: the simulation here, ``udp`` and ``mininet`` in
``gse.api.realtime``.

``gse sim`` and ``gse compare`` are these calls plus options and printing, so a
scenario's ``Result.summary.to_dict()`` is what the command line's ``--json`` writes.
The steps are public for the callers that add their own observers or stop early:
``prepare`` builds the run's pieces once, ``run_protocol`` runs one protocol on them.
"""

from gse.api import build
from gse.api.result import Result
from gse.api.scenario import REPLAY_KINDS, Scenario


class Prepared:
    """What every protocol of a scenario runs on: topology, messages (and a connection
    matrix's triggers), fault schedule, configs by protocol and the times in ps."""

    __slots__ = ("scenario", "topology", "messages", "triggers", "configs", "faults",
                 "until_ps", "stall_ps", "detect_ps", "sample_ps")

    def __init__(self, scenario, protocols, lenient, log=print):
        s = scenario
        self.scenario = s
        self.topology = build.topology(s)
        self.messages, self.triggers = build.workload(s, self.topology, log)
        if not self.messages and self.triggers is None:
            raise ValueError("the traffic has no messages")
        self.configs = {p: build.config(s, p, lenient) for p in protocols}
        self.faults = build.faults(s, self.topology)
        self.until_ps, self.stall_ps = build.until_ps(s), build.stall_ps(s)
        self.detect_ps, self.sample_ps = build.detect_ps(s), build.sample_ps(s)


def prepare(scenario, protocols=None, lenient=None, log=print):
    """The pieces of a simulation of ``protocols`` (default: the scenario's); ``lenient``
    (default: a comparison) lets an unprefixed override skip a config without it.  A
    trace or collective workload gives a ``gse.api.replay.PreparedReplay``."""
    scenario = _scenario(scenario)
    if scenario.runtime != "sim":
        raise ValueError("prepare and run_protocol run the simulation; a %s scenario runs "
                         "with gse.run or gse.compare (or scenario.replace(runtime='sim'))"
                         % scenario.runtime)
    protocols = list(protocols or scenario.protocols)
    if lenient is None:
        lenient = len(protocols) > 1
    from gse.runtimes.sim.observe import quiet_gc
    with quiet_gc():    # long-lived pieces, no garbage: no collection passes over them
        if scenario.workload["kind"] in REPLAY_KINDS:
            from gse.api.replay import PreparedReplay
            return PreparedReplay(scenario, protocols, lenient)
        return Prepared(scenario, protocols, lenient, log)


def run_protocol(prepared, protocol, observers=()):
    """One protocol on prepared pieces; the summary describes what was run."""
    if not isinstance(prepared, Prepared):
        return prepared.run(protocol, observers)       # a replay (gse.api.replay)
    from gse.runtimes.sim.observe import quiet_gc
    from gse.runtimes.sim.run import run_simulation
    s, cfg = prepared.scenario, prepared.configs[protocol]
    # the collector is off for the run already (run_observed); off too while the network
    # is built and the records summed up: long-lived objects, no garbage to find
    with quiet_gc():
        res = run_simulation(prepared.topology, prepared.messages, protocol, cfg, s.seed,
                             s.loss, s.corrupt, prepared.until_ps, prepared.sample_ps,
                             list(observers), triggers=prepared.triggers,
                             faults=prepared.faults, detect_ps=prepared.detect_ps,
                             stall_ps=prepared.stall_ps)
    build.describe(res.summary, s, cfg)
    return Result(s, protocol, res)


def run(scenario, observers=(), log=print, progress=None):
    """Run the scenario's (first) protocol in its runtime; a ``Result``.
    ``observers``: more ``gse.runtimes.sim.observe`` observers (a capture, a progress bar);
    ``progress``: the real-time runtimes' display (``gse.api.realtime.run_real_time``)."""
    scenario = _scenario(scenario)
    if scenario.runtime != "sim":
        _no_observers(scenario, observers)
        from gse.api.realtime import run_real_time
        return run_real_time(scenario, progress=progress, log=log)
    prepared = prepare(scenario, [scenario.protocol], False, log)
    return run_protocol(prepared, prepared.scenario.protocol, observers)


def compare(scenario, protocols=None, observers=None, stop=None, log=print, progress=None):
    """The same scenario under each of ``protocols`` (default: the scenario's), in order:
    {protocol: Result}.  ``observers(protocol, messages)`` gives each run's observers (the
    simulation's; messages: None for a replay, whose flows are not known beforehand);
    ``stop()`` true ends the comparison before the next protocol (once one has run);
    ``progress``: the real-time runtimes' display."""
    scenario = _scenario(scenario)
    if protocols is not None:
        if isinstance(protocols, str):
            protocols = protocols.split(",")
        scenario = scenario.replace(protocols=list(protocols))
    if scenario.runtime != "sim":
        _no_observers(scenario, observers)
        from gse.api.realtime import run_real_time
        results = {}
        for p in scenario.protocols:
            if stop is not None and results and stop():
                break
            results[p] = run_real_time(scenario, p, progress, log, lenient=True)
        return results
    prepared = prepare(scenario, scenario.protocols, True, log)
    results = {}
    for p in scenario.protocols:
        if stop is not None and results and stop():
            break
        total = None if prepared.messages is None else len(prepared.messages)
        watch = observers(p, total) if observers else ()
        results[p] = run_protocol(prepared, p, watch)
    return results


def _no_observers(scenario, observers):
    if observers:
        raise ValueError("observers watch a simulation; runtime %s takes none (its "
                         "runtime_options capture packets: pcap)" % scenario.runtime)


def _scenario(scenario):
    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, dict):
        return Scenario.from_dict(scenario)
    raise TypeError("expected a gse.Scenario (or its dict), got %r" % type(scenario).__name__)
