"""``Scenario``: one run described as data — what ``gse sim`` / ``gse compare`` take as
options, as a value that validates itself and round-trips through JSON (and loads TOML).

Why data and not argparse: a notebook, a sweep row and the command line must describe a
run the same way, so that a saved scenario alone reproduces the run.  Every field holds
plain JSON values; ``Scenario.from_dict(s.to_dict()) == s`` always holds because
construction fills every default into ``topology`` and ``workload``.

Errors are ``ScenarioError`` (a ValueError) naming the field, the value and what is
allowed, e.g. ``scenario.workload.senders: expected an integer, got '4'``.  A range that
depends on the run (incast senders against the topology's hosts, a message size, a loss
rate) is checked where it is known, by the generator or the network, with the messages
the command line has always given.
"""

import json
import math
import sys

TOPOLOGY_DEFAULTS = {"k": 8, "servers": None, "nics_per_server": None, "groups": None,
                     "spines": None, "pods": None, "hosts": None, "cores_per_group": None,
                     "link_gbps": 100.0, "link_delay_ns": 1000, "switch_latency_ns": 0}
TOPOLOGY_FLOATS = ("link_gbps",)

GENERATORS = ("permutation", "incast", "all-to-all", "random")
# the generator parameters (gse sim's traffic options) with their defaults
WORKLOAD_DEFAULTS = {"size": 2_000_000, "senders": 32, "receiver": None, "messages": 1000,
                     "size_dist": None, "load": 0.5, "start_us": 0.0}
# kinds that read a file; "trace" and "collective" (gse replay) are REPLAY_KINDS
FILE_WORKLOADS = ("cm",)
# the replay driver's workloads (gse.api.replay_scenario): on the simulation only
REPLAY_KINDS = ("trace", "collective")
RUNTIMES = ("sim", "udp", "mininet")
REAL_TIME_RUNTIMES = ("udp", "mininet")
# gse run's defaults, for a real-time runtime's scenario where the field was not given:
# what one Python process (or one agent per node) carries over real sockets
REAL_TIME_DEFAULTS: dict[str, dict] = {
    "topology": {"k": 4, "link_gbps": 0.1},
    "workload": {"size": 200_000, "senders": 8, "messages": 200}}


class ScenarioError(ValueError):
    """A scenario field that is not valid: which field, what value, what is allowed."""


def _fail(where, expected, value):
    raise ScenarioError("scenario.%s: expected %s, got %r" % (where, expected, value))


def _int(where, value, low=None, none=False):
    if value is None and none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or (low is not None and value < low):
        _fail(where, "an integer" + (" >= %d" % low if low is not None else "")
              + (" or null" if none else ""), value)
    return value


def _float(where, value, low=0.0, none=False, positive=False):
    if value is None and none:
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) and value >= low and (value > 0 or not positive)
    if not ok:
        _fail(where, "a finite number %s %g%s" % (">" if positive else ">=", low,
                                                   " or null" if none else ""), value)
    return float(value)


def _number(where, value):
    """A number, any range: the step that uses it (a generator, the network) checks its
    range against the run (e.g. incast senders against the hosts) and says so."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _fail(where, "a number", value)
    return float(value)


def _choice(where, value, allowed):
    if value not in allowed:
        _fail(where, "one of %s" % ", ".join(allowed), value)
    return value


def _str(where, value, none=False):
    if value is None and none:
        return None
    if not isinstance(value, str) or not value:
        _fail(where, "a non-empty string" + (" or null" if none else ""), value)
    return value


def _strings(where, value):
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        _fail(where, "a list of strings", value)
    return tuple(_str("%s[%d]" % (where, i), v) for i, v in enumerate(value))


def _params(where, given, defaults, floats=()):
    if not isinstance(given, dict):
        _fail(where, "a table (dict)", given)
    unknown = sorted(set(given) - set(defaults) - {"name", "kind", "path"})
    if unknown:
        _fail("%s.%s" % (where, unknown[0]), "one of the parameters %s"
              % ", ".join(sorted(defaults)), given[unknown[0]])
    out = dict(defaults)
    out.update({k: v for k, v in given.items() if k in defaults})
    for k in floats:
        if isinstance(out[k], int) and not isinstance(out[k], bool):
            out[k] = float(out[k])
    return out


def normal_topology(value):
    """``{"name": ..., every parameter}`` (parameters as ``topologies.registry`` reads
    them; the builder checks their values)."""
    from topologies.registry import TOPOLOGIES
    if isinstance(value, str):
        value = {"name": value}
    out = _params("topology", value, TOPOLOGY_DEFAULTS, TOPOLOGY_FLOATS)
    out["name"] = _choice("topology.name", value.get("name", "fat-tree"), sorted(TOPOLOGIES))
    for k, v in out.items():             # types here; sizes in the builders
        if k in TOPOLOGY_FLOATS:
            out[k] = _number("topology." + k, v)
        elif k != "name":
            _int("topology." + k, v, none=k not in ("k", "link_delay_ns",
                                                     "switch_latency_ns"))
    return out


def normal_workload(value):
    """``{"kind": generator, every generator parameter}``, ``{"kind": "cm", "path": P}``
    or a replay's trace or collective (``gse.api.replay_scenario``)."""
    if isinstance(value, str):
        value = {"kind": value}
    if not isinstance(value, dict):
        _fail("workload", "a table (dict) with a kind", value)
    kind = _choice("workload.kind", value.get("kind", "permutation"),
                   GENERATORS + FILE_WORKLOADS + REPLAY_KINDS)
    if kind in REPLAY_KINDS:
        from gse.api.replay_scenario import normal_replay_workload
        return normal_replay_workload(kind, value, _fail)
    if kind in FILE_WORKLOADS:
        extra = sorted(set(value) - {"kind", "path"})
        if extra:
            _fail("workload.%s" % extra[0], "only kind and path for a %s file" % kind,
                  value[extra[0]])
        return {"kind": kind, "path": _str("workload.path", value.get("path"))}
    if "path" in value:
        _fail("workload.path", "no path for a generator (kind %s)" % kind, value["path"])
    out = _params("workload", value, WORKLOAD_DEFAULTS, ("load", "start_us"))
    out["kind"] = kind
    # types here; ranges where they are known, in the generators (gse.workloads.traffic)
    for name in ("size", "senders", "messages"):
        _int("workload." + name, out[name])
    _int("workload.receiver", out["receiver"], none=True)
    _str("workload.size_dist", out["size_dist"], none=True)
    out["load"] = _number("workload.load", out["load"])
    out["start_us"] = _number("workload.start_us", out["start_us"])
    return out


# Scenario's fields in order, with their defaults (a callable: a fresh value per scenario).
# A plain class rather than a dataclass: ``dataclasses`` imports ``inspect`` (with ``ast``
# and ``dis``), some 8 ms of every ``gse`` command's start-up (issue 30).
FIELDS = (("topology", lambda: {"name": "fat-tree"}),
          ("workload", lambda: {"kind": "permutation"}),
          ("protocols", ("gse",)), ("baseline", "deployed"), ("overrides", ()),
          ("unsched", None), ("policy", None), ("loss", 0.0), ("corrupt", 0.0),
          ("failures", ()), ("failure_files", ()), ("detect_us", 1000.0), ("seed", 1),
          ("until_us", None), ("stall_us", None), ("sample_us", None), ("runtime", "sim"),
          ("runtime_options", dict))
FIELD_NAMES = tuple(name for name, _ in FIELDS)


class Scenario:
    """A run as data.  ``protocols``: what ``gse.compare`` runs (``gse.run`` runs the
    first); ``baseline``: the RoCE profile; ``overrides``: ``--set NAME=VALUE`` strings
    (``gse.NAME`` / ``roce.NAME`` for one protocol); ``unsched`` / ``policy``: gse sim's
    ``--unsched`` / ``--policy``; ``failures`` / ``failure_files``: ``--fail`` specs and
    schedule files (docs/failures.md); ``detect_us``: a number or ``"never"``;
    ``until_us`` / ``stall_us`` / ``sample_us``: None for the defaults; ``runtime``:
    sim, udp or mininet, ``runtime_options`` what udp and mininet take besides
    (``runtime_options_defaults``; a real-time runtime fills ``REAL_TIME_DEFAULTS`` into the
    topology and workload parameters not given)."""

    # the fields' types (their order and defaults: FIELDS)
    topology: dict
    workload: dict
    protocols: tuple
    baseline: str
    overrides: tuple
    unsched: int | None
    policy: str | None
    loss: float
    corrupt: float
    failures: tuple
    failure_files: tuple
    detect_us: object
    seed: int
    until_us: float | None
    stall_us: float | None
    sample_us: float | None
    runtime: str
    runtime_options: dict

    # mutable and compared by value, so unhashable, as the dataclass it was
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, *args, **kwargs):
        if len(args) > len(FIELDS):
            raise TypeError("Scenario() takes at most %d positional arguments (%d given)"
                            % (len(FIELDS), len(args)))
        for (name, _), value in zip(FIELDS, args):
            if name in kwargs:
                raise TypeError("Scenario() got multiple values for argument %r" % name)
            kwargs[name] = value
        unknown = sorted(set(kwargs) - set(FIELD_NAMES))
        if unknown:
            raise TypeError("Scenario() got an unexpected keyword argument %r" % unknown[0])
        for name, default in FIELDS:
            if name in kwargs:
                value = kwargs[name]
            else:
                value = default() if callable(default) else default
            setattr(self, name, value)
        self.__post_init__()

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (tuple(getattr(self, n) for n in FIELD_NAMES)
                == tuple(getattr(other, n) for n in FIELD_NAMES))

    def __repr__(self):
        return "Scenario(%s)" % ", ".join("%s=%r" % (n, getattr(self, n))
                                          for n in FIELD_NAMES)

    def __post_init__(self):
        from gse.config import BASELINES
        from gse.protocols import PROTOCOLS
        self.runtime = _choice("runtime", self.runtime, RUNTIMES)
        if self.runtime in REAL_TIME_RUNTIMES:
            self.topology, self.workload = real_time_defaults(self.topology, self.workload)
        self.topology = normal_topology(self.topology)
        self.workload = normal_workload(self.workload)
        if isinstance(self.protocols, str):
            self.protocols = tuple(p.strip() for p in self.protocols.split(","))
        self.protocols = _strings("protocols", self.protocols)
        if not self.protocols:
            _fail("protocols", "at least one protocol", [])
        for i, p in enumerate(self.protocols):
            _choice("protocols[%d]" % i, p, PROTOCOLS)
        self.baseline = _choice("baseline", self.baseline, sorted(BASELINES))
        self.overrides = _strings("overrides", self.overrides)
        for i, item in enumerate(self.overrides):
            if "=" not in item:
                _fail("overrides[%d]" % i, "NAME=VALUE", item)
        self.unsched = _int("unsched", self.unsched, none=True)    # the config checks it
        if self.policy is not None:
            _choice("policy", self.policy, ("rr", "srpt", "fifo"))
        self.loss = _number("loss", self.loss)          # the network checks [0, 1)
        self.corrupt = _number("corrupt", self.corrupt)
        self.failures = _strings("failures", self.failures)
        self.failure_files = _strings("failure_files", self.failure_files)
        if self.detect_us != "never":
            self.detect_us = _float("detect_us", self.detect_us)
        self.seed = _int("seed", self.seed)
        self.until_us = _float("until_us", self.until_us, none=True)
        self.stall_us = _float("stall_us", self.stall_us, none=True)
        self.sample_us = _float("sample_us", self.sample_us, none=True, positive=True)
        if self.workload["kind"] in REPLAY_KINDS and self.runtime != "sim":
            _fail("runtime", "sim for a %s workload (the replay starts flows from the "
                  "simulation's event queue: docs/traces.md)" % self.workload["kind"],
                  self.runtime)
        self.runtime_options = normal_runtime_options(self.runtime, self.runtime_options)
        check_runtime_fields(self)

    @property
    def protocol(self):
        """The protocol ``gse.run`` runs: the first of ``protocols``."""
        return self.protocols[0]

    def replace(self, **changes):
        """A copy with ``changes`` (validated like a new scenario).  A new ``runtime``
        without ``runtime_options`` keeps the options the new runtime also takes (the
        topology and workload stay as they are: ``replace(runtime="sim")`` is the same
        run in the simulation)."""
        data = dict(self.to_dict(), **changes)
        if "runtime" in changes and "runtime_options" not in changes:
            keep = runtime_options_defaults(data["runtime"])
            data["runtime_options"] = {k: v for k, v in self.runtime_options.items()
                                       if k in keep}
        return Scenario.from_dict(data)

    def to_dict(self):
        out = {}
        for name in FIELD_NAMES:
            v = getattr(self, name)
            out[name] = list(v) if isinstance(v, tuple) else (dict(v) if isinstance(v, dict)
                                                                 else v)
        return out

    @classmethod
    def from_dict(cls, data):
        if not isinstance(data, dict):
            raise ScenarioError("scenario: expected a table (dict), got %r" % (data,))
        known = set(FIELD_NAMES)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ScenarioError("scenario.%s: unknown field (known: %s)"
                                % (unknown[0], ", ".join(sorted(known))))
        return cls(**data)

    def to_json(self, path=None):
        """The scenario as JSON text; also written to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"
        if path is not None:
            with open(path, "w") as f:
                f.write(text)
        return text

    @classmethod
    def from_json(cls, text):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ScenarioError("scenario: not JSON (%s)" % exc) from None
        return cls.from_dict(data)

    @classmethod
    def load(cls, path):
        """A scenario from a ``.json`` or ``.toml`` file (TOML has no null: leave a field
        out for its default)."""
        try:
            if str(path).endswith(".toml"):
                return cls.from_dict(_read_toml(path))
            with open(path) as f:
                return cls.from_json(f.read())
        except ScenarioError as exc:
            raise ScenarioError("%s: %s" % (path, exc)) from None


def _read_toml(path):
    """A TOML file's table (tomllib: Python 3.11 and newer)."""
    if sys.version_info < (3, 11):
        raise ScenarioError("TOML scenarios need Python 3.11 or newer (tomllib); use JSON")
    else:
        import tomllib
        with open(path, "rb") as f:
            try:
                return tomllib.load(f)
            except tomllib.TOMLDecodeError as exc:
                raise ScenarioError("scenario: not TOML (%s)" % exc) from None


# -- the real-time runtimes (gse run) ----------------------------------------------------------

def _real_time_options():
    """gse run's options of both real-time runtimes, with their defaults."""
    from gse.metrics.pcap import DEFAULT_BUDGET
    return {"wire": "gse", "timeout_s": 120.0, "loop": "auto", "slack_us": 20.0,
            "secure": None, "fail_after_packets": None, "pcap": None, "pcap_ports": "all",
            "pcap_budget": DEFAULT_BUDGET, "pcap_snaplen": 65535}


def runtime_options_defaults(runtime):
    """{option: default} of ``runtime`` (the simulation takes none)."""
    if runtime == "udp":
        return dict(_real_time_options(), addressing="ports", coarse_timers=False)
    if runtime == "mininet":
        return dict(_real_time_options(), placement="node", precise_timers=False,
                    forwarding="agents")
    return {}


def _bool(where, value):
    if not isinstance(value, bool):
        _fail(where, "true or false", value)
    return value


def real_time_defaults(topology, workload):
    """``REAL_TIME_DEFAULTS`` filled into the parameters not given (a generator's only)."""
    t = {"name": topology} if isinstance(topology, str) else topology
    w = {"kind": workload} if isinstance(workload, str) else workload
    if isinstance(t, dict):
        t = dict(REAL_TIME_DEFAULTS["topology"], **t)
    if isinstance(w, dict) and w.get("kind", "permutation") in GENERATORS:
        w = dict(REAL_TIME_DEFAULTS["workload"], **w)
    return t, w


def normal_runtime_options(runtime, given):
    """Every option of ``runtime`` (``runtime_options_defaults``), validated: types and
    choices here, the rest (a key file, a capture's budget) where the run reads them."""
    where = "runtime_options"
    if not isinstance(given, dict):
        _fail(where, "a table (dict)", given)
    defaults = runtime_options_defaults(runtime)
    unknown = sorted(set(given) - set(defaults))
    if unknown and not defaults:
        _fail("%s.%s" % (where, unknown[0]), "no option: runtime %s takes none (udp and "
              "mininet do)" % runtime, given[unknown[0]])
    if not defaults:
        return {}
    from gse.runtimes.udp.loops import LOOPS
    from gse.wire import WIRE_PROFILES
    if unknown:
        _fail("%s.%s" % (where, unknown[0]), "one of the options of runtime %s: %s"
              % (runtime, ", ".join(sorted(defaults))), given[unknown[0]])
    out = dict(defaults, **given)
    choices = {"wire": WIRE_PROFILES, "loop": LOOPS, "addressing": ("ports", "ips"),
               "placement": ("node", "tier", "switches", "all"),
               "forwarding": ("agents", "kernel")}
    for name, value in out.items():
        at = "%s.%s" % (where, name)
        if name in choices:
            _choice(at, value, choices[name])
        elif name in ("timeout_s", "slack_us"):
            out[name] = _float(at, value, positive=name == "timeout_s")
        elif name in ("secure", "pcap"):
            _str(at, value, none=True)
        elif name == "pcap_ports":
            _str(at, value)
        elif name in ("pcap_budget", "pcap_snaplen"):
            _int(at, value, low=1)
        elif name == "fail_after_packets":
            _int(at, value, low=1, none=True)
        else:
            _bool(at, value)
    return out


def check_runtime_fields(s):
    """Fields a runtime cannot honour: time series are the simulation's; a Mininet run
    ends when its agents are done or ``timeout_s`` passes."""
    if s.runtime != "sim" and s.sample_us is not None:
        _fail("sample_us", "null for runtime %s (only the simulation samples time series)"
              % s.runtime, s.sample_us)
    if s.runtime == "mininet" and s.until_us is not None:
        _fail("until_us", "null for runtime mininet (it runs until the agents are done or "
              "runtime_options.timeout_s passes)", s.until_us)
