"""A Scenario whose workload is a trace or a generated collective, run by the replay
driver (``gse.workloads.replay``) on the simulation: what ``gse replay`` runs.

``gse.api.runner.prepare`` hands such a scenario here: ``PreparedReplay`` loads the
trace (or generates the collectives), applies the ``algorithms`` overrides, builds the
fabric, the rank map, the configs and the failure schedule once; ``run`` replays it under
one protocol.  The summary is ``gse replay --json``'s object: the replay's figures plus
the topology, the trace's description, the runtime and the config.
"""

from gse.api import build
from gse.api.replay_scenario import algorithm_override, collectives_of
from gse.api.result import Result
from gse.api.scenario import ScenarioError
from topologies.registry import describe_topology_args


class ReplayRunResult(Result):
    """A replay's ``Result``: also ``trace`` (the ``gse.workloads.traces.Trace`` replayed)
    and ``collectives`` (``CollectiveResult`` objects in trace order: start, end, time,
    bandwidths of every collective)."""

    __slots__ = ("trace", "collectives")

    def __init__(self, scenario, protocol, run, trace):
        super().__init__(scenario, protocol, run)
        self.trace = trace
        self.collectives = run.collectives

    def collectives_columns(self):
        """Every collective's figures as {column: list} (the summary's ``collectives``
        rows; None where a collective did not finish)."""
        rows = self.summary["collectives"]
        names = []
        for row in rows:
            names += [k for k in row if k not in names]
        return {name: [row.get(name) for row in rows] for name in names}

    def collectives_frame(self):
        """The collectives as a pandas DataFrame (needs pandas)."""
        try:
            import pandas
        except ImportError:
            raise ImportError("collectives_frame() needs pandas (pip install pandas); "
                              "collectives_columns() gives plain lists") from None
        return pandas.DataFrame(self.collectives_columns())


def apply_algorithms(collectives, specs):
    """Collectives with the ``OP=ALGO`` overrides applied (the last one per op wins)."""
    from gse.workloads.collectives import Collective

    def fail(where, expected, value):
        raise ScenarioError("scenario.%s: expected %s, got %r" % (where, expected, value))

    want = dict(algorithm_override("workload.algorithms[%d]" % i, spec, fail)
                for i, spec in enumerate(specs or ()))
    if not want:
        return list(collectives)
    return [Collective(c.id, c.op, c.ranks, c.size, algo=want.get(c.op, c.algo), root=c.root,
                       after=c.after, start_ps=c.start_ps, dtype=c.dtype, tag=c.tag,
                       chunk_bytes=c.chunk_bytes, where=c.where, splits=c.splits)
            for c in collectives]


def load(workload):
    """The ``Trace`` of a replay workload: the files read, or the generated collectives
    wrapped as a trace of format ``"collective"`` (so the summary describes either)."""
    from gse.workloads.traces import load_trace
    from gse.workloads.traces.common import Trace
    w = workload
    if w["kind"] == "trace":
        return load_trace(w["paths"], w["format"], w["world_size"])
    colls = collectives_of(w)
    return Trace(colls, "collective", [], records=len(colls),
                 name="%s of %d B over %d ranks x %d" % (w["op"], w["size"],
                                                          len(colls[0].ranks), len(colls)))


def rank_map(spec, ranks):
    """{rank: host} of ``rank_hosts`` (None: rank r on host r)."""
    if spec is None:
        return None
    from gse.workloads.traces.jsonl import parse_ranks
    hosts = parse_ranks(spec, "scenario.workload.rank_hosts")
    if len(hosts) < len(ranks):
        raise ValueError("scenario.workload.rank_hosts lists %d hosts but the trace has %d "
                         "ranks" % (len(hosts), len(ranks)))
    return dict(zip(ranks, hosts))


class PreparedReplay:
    """What every protocol of a replay scenario runs on.  ``messages`` is None: a replay's
    flows start as the collectives progress, so their number is not known beforehand."""

    messages = None

    def __init__(self, scenario, protocols, lenient):
        s = scenario
        w = s.workload
        self.scenario = s
        self.trace = load(w)
        self.collectives = apply_algorithms(self.trace.collectives, w.get("algorithms"))
        self.topology = build.topology(s)
        self.rank_hosts = rank_map(w["rank_hosts"], self.trace.ranks())
        self.until_ps, self.stall_ps = build.until_ps(s), build.stall_ps(s)
        self.configs = {p: build.config(s, p, lenient) for p in protocols}
        self.faults = build.faults(s, self.topology)
        self.detect_ps, self.sample_ps = build.detect_ps(s), build.sample_ps(s)

    def run(self, protocol, observers=()):
        """Replay under ``protocol``; a ``ReplayRunResult``."""
        from gse.workloads.replay import replay
        s, cfg, w = self.scenario, self.configs[protocol], self.scenario.workload
        res = replay(self.topology, self.collectives, protocol=protocol, config=cfg,
                     seed=s.seed, loss_rate=s.loss, corrupt_rate=s.corrupt,
                     rank_hosts=self.rank_hosts, until_ps=self.until_ps,
                     compute_scale=w["compute_scale"], sample_ps=self.sample_ps,
                     observers=list(observers),
                     compute_model=w.get("compute_model", "streams"),
                     programs=self.trace.programs, faults=self.faults,
                     detect_ps=self.detect_ps, stall_ps=self.stall_ps)
        res.summary["topology"] = describe_topology_args(build.topology_args(s))
        res.summary["trace"] = self.trace.summary()
        res.summary["runtime"] = s.runtime
        res.summary["config"] = cfg.as_dict()
        return ReplayRunResult(s, protocol, res, self.trace)
