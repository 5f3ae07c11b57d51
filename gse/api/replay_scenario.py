"""The Scenario's replay workloads: what ``gse replay`` takes, as data.

Two kinds, both run by the replay driver (``gse.workloads.replay``) on the simulation:

* ``{"kind": "trace", "paths": [...], "format": "auto", "world_size": null,
  "algorithms": ["all_reduce=hd", ...], "rank_hosts": null, "compute_model": "streams",
  "compute_scale": 1.0}`` — a recorded trace (project JSONL, Chakra ``.et``, PyTorch ET),
  exactly ``gse replay TRACE... --format --world-size --algorithm --rank-hosts
  --compute-model --compute-scale``;
* ``{"kind": "collective", "op": "all_reduce", "ranks": 8, "size": 1048576,
  "algorithm": null, "root": 0, "iterations": 1, "gap_us": 0.0, "rank_hosts": null,
  "compute_scale": 1.0}`` — a generated collective, as nccl-tests runs one: ``iterations``
  calls of ``op`` over ``ranks`` (a count N for ranks 0..N-1, a range string ``"0-7"`` or
  a list), each waiting ``gap_us`` after the previous one ends.

Like the rest of the Scenario, the values are checked for their types and the choices
known without running (formats, ops, algorithms, compute models, rank lists); what
depends on the files or the fabric (a trace's ranks against the hosts) is checked when
the replay is prepared, with the trace's file and record in the message.
"""

import math

TRACE_DEFAULTS: dict[str, object] = {
    "paths": None, "format": "auto", "world_size": None, "algorithms": [], "rank_hosts": None,
    "compute_model": "streams", "compute_scale": 1.0}
COLLECTIVE_DEFAULTS: dict[str, object] = {
    "op": "all_reduce", "ranks": 8, "size": 1 << 20, "algorithm": None, "root": 0,
    "iterations": 1, "gap_us": 0.0, "rank_hosts": None, "compute_scale": 1.0}
REPLAY_WORKLOADS = {"trace": TRACE_DEFAULTS, "collective": COLLECTIVE_DEFAULTS}
TRACE_FORMATS = ("auto", "jsonl", "chakra", "pytorch")     # gse.workloads.traces.FORMATS


def normal_replay_workload(kind, value, fail):
    """The workload with every default filled in; ``fail(where, expected, value)`` raises
    the Scenario's located error."""
    _float, _int, _str, _strings = _checks(fail)
    defaults = REPLAY_WORKLOADS[kind]
    unknown = sorted(set(value) - set(defaults) - {"kind"})
    if unknown:
        fail("workload.%s" % unknown[0], "one of the parameters of a %s workload: %s"
             % (kind, ", ".join(sorted(defaults))), value[unknown[0]])
    out = {"kind": kind}
    out.update({k: value.get(k, v) for k, v in defaults.items()})
    out["compute_scale"] = _float("workload.compute_scale", out["compute_scale"])
    out["rank_hosts"] = _rank_list("workload.rank_hosts", out["rank_hosts"], fail, none=True)
    if kind == "trace":
        paths = out["paths"]
        if isinstance(paths, str):
            paths = [paths]
        if paths is None:
            fail("workload.paths", "the trace's files (a list of paths)", None)
        out["paths"] = list(_strings("workload.paths", paths))
        if not out["paths"]:
            fail("workload.paths", "at least one trace file", [])
        if out["format"] not in TRACE_FORMATS:
            fail("workload.format", "one of %s" % ", ".join(TRACE_FORMATS), out["format"])
        out["world_size"] = _int("workload.world_size", out["world_size"], low=1, none=True)
        out["algorithms"] = list(_strings("workload.algorithms", out["algorithms"]))
        for i, spec in enumerate(out["algorithms"]):
            algorithm_override("workload.algorithms[%d]" % i, spec, fail)
        from gse.workloads.replay_programs import COMPUTE_MODELS
        if out["compute_model"] not in COMPUTE_MODELS:
            fail("workload.compute_model", "one of %s" % ", ".join(COMPUTE_MODELS),
                 out["compute_model"])
        return out
    from gse.workloads.collectives import ALGORITHMS
    if out["op"] not in ALGORITHMS:
        fail("workload.op", "one of %s" % ", ".join(ALGORITHMS), out["op"])
    algos = ALGORITHMS[out["op"]]
    if out["algorithm"] is not None and out["algorithm"] not in algos:
        fail("workload.algorithm", "null or an algorithm of %s: %s"
             % (out["op"], ", ".join(algos)), out["algorithm"])
    if isinstance(out["ranks"], int) and not isinstance(out["ranks"], bool):
        _int("workload.ranks", out["ranks"], low=1)
    else:
        out["ranks"] = _rank_list("workload.ranks", out["ranks"], fail)
    _int("workload.size", out["size"], low=0)
    _int("workload.root", out["root"], low=0)
    _int("workload.iterations", out["iterations"], low=1)
    out["gap_us"] = _float("workload.gap_us", out["gap_us"])
    _str("workload.algorithm", out["algorithm"], none=True)
    return out


def _checks(fail):
    """The Scenario's type checks (``gse.api.scenario``'s rules) raising through ``fail``
    (passed in: this module is imported by ``gse.api.scenario``, never the reverse)."""
    def _int(where, value, low=None, none=False):
        if value is None and none:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or (
                low is not None and value < low):
            fail(where, "an integer" + (" >= %d" % low if low is not None else "")
                 + (" or null" if none else ""), value)
        return value

    def _float(where, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value < 0:
            fail(where, "a finite number >= 0", value)
        return float(value)

    def _str(where, value, none=False):
        if value is None and none:
            return None
        if not isinstance(value, str) or not value:
            fail(where, "a non-empty string" + (" or null" if none else ""), value)
        return value

    def _strings(where, value):
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            fail(where, "a list of strings", value)
        return [_str("%s[%d]" % (where, i), v) for i, v in enumerate(value)]

    return _float, _int, _str, _strings


def algorithm_override(where, spec, fail):
    """(op, algorithm) of an ``OP=ALGO`` string (``gse replay --algorithm``)."""
    from gse.workloads.collectives import ALGORITHMS
    op, sep, algo = spec.partition("=")
    op, algo = op.strip(), algo.strip()
    if not sep or op not in ALGORITHMS:
        fail(where, "OP=ALGO with OP one of %s" % ", ".join(ALGORITHMS), spec)
    if algo not in ALGORITHMS[op]:
        fail(where, "an algorithm of %s: %s" % (op, ", ".join(ALGORITHMS[op])), spec)
    return op, algo


def _rank_list(where, value, fail, none=False):
    """A rank list as ``gse replay --rank-hosts`` and the project format take it: a list
    of integers >= 0 or a range string ``"0-7,16-23"`` (kept as given)."""
    if value is None and none:
        return None
    from gse.workloads.traces.jsonl import parse_ranks
    if isinstance(value, tuple):
        value = list(value)
    try:
        ranks = parse_ranks(value, "scenario." + where)
    except ValueError:
        fail(where, "a list of integers >= 0 or a range string like \"0-7\""
             + (" or null" if none else ""), value)
    if not ranks:
        fail(where, "at least one rank", value)
    return value


def collectives_of(workload):
    """The generated collectives of a ``collective`` workload (ids 1..iterations)."""
    from gse.config import PS_PER_US
    from gse.workloads.collectives import Collective
    from gse.workloads.traces.jsonl import parse_ranks
    w = workload
    ranks = (range(w["ranks"]) if isinstance(w["ranks"], int)
             else parse_ranks(w["ranks"], "scenario.workload.ranks"))
    lag = int(round(w["gap_us"] * PS_PER_US))
    return [Collective(i + 1, w["op"], ranks, w["size"], algo=w["algorithm"], root=w["root"],
                       after=[(i, lag)] if i else [], tag="%s%d" % (w["op"], i))
            for i in range(w["iterations"])]
