"""A sweep as a grid over a ``gse.Scenario``: the form ``gse.sweep(base, grid)`` takes,
and the sweep file form with ``"scenario"`` in place of ``"base"``:

    {
      "name": "k4-incast",
      "scenario": {"topology": {"name": "fat-tree", "k": 4},
                   "workload": {"kind": "incast", "size": 20000}},
      "grid": {
        "protocols": ["gse", "roce"],
        "workload.senders": [2, 3],
        "seed": [1, 2],
        "overrides": [[], ["gse.unsched_bytes=0"]]
      }
    }

A grid key is a Scenario field (``seed``, ``protocols``, ``overrides``, ...) or a path
into one (``workload.senders``, ``topology.k``); each takes a list of values, set at that
path in a copy of the base (a value that is an object with a ``label`` sets the field to
the object without it, and the label names it in the table).  The runs are the Cartesian
product, keys in the grid's order.  Each run's Scenario is validated before anything
runs, errors naming the file, the run and the field; a run is named by ``run_id``, a
digest of its whole Scenario (defaults filled in), so the same scenario has the same id
in every sweep.  A row runs ``gse.run``: one protocol, so a base with several protocols
needs ``protocols`` in the grid.
"""

import copy
import hashlib
import itertools
import json

from gse.api.scenario import Scenario, ScenarioError
from gse.sweep.spec import Spec, SpecError, label_of, parse_spec, read_json


def compact_json(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


scenario_label = label_of     # a scalar as itself, a group's label, else compact JSON


class ScenarioRun:
    """One run of a Scenario grid: ``scenario`` (a ``Scenario``), its JSON, its labels."""

    __slots__ = ("run_id", "scenario", "_json", "labels", "argv")

    def __init__(self, scenario, labels):
        self.scenario = scenario
        self._json = compact_json(scenario.to_dict())
        self.labels = labels
        self.argv = []                   # not a gse sim command line
        self.run_id = hashlib.sha256(self._json.encode()).hexdigest()[:16]

    def task(self):
        """(function, arguments) a Dask worker runs for this run's row."""
        from gse.sweep.single import scenario_row
        return scenario_row, (self.run_id, self._json)

    def scenario_json(self):
        """The run's Scenario as compact JSON (the table's ``scenario``)."""
        return self._json

    def __repr__(self):
        return "ScenarioRun(%s %s)" % (self.run_id, self.labels)


def set_path(data, path, value, where):
    """``data`` (a Scenario's dict) with ``value`` at the dotted ``path``."""
    head, _, rest = path.partition(".")
    if head not in data:
        raise SpecError("%s: %r is not a Scenario field (known: %s)"
                        % (where, head, ", ".join(sorted(data))))
    if not rest:
        data[head] = value
        return
    inner = data[head]
    if not isinstance(inner, dict) or "." in rest:
        raise SpecError("%s: %r is a path into a table field (workload.NAME, topology.NAME)"
                        % (where, path))
    inner[rest] = value


class ScenarioSpec(Spec):
    """A Scenario grid: a ``Spec`` whose ``base`` is a Scenario's full dict and whose
    ``grid`` keys are field paths; ``runs()`` gives ``ScenarioRun`` objects."""

    label = staticmethod(scenario_label)

    def runs(self):
        out = []
        for combo in itertools.product(*(values for _k, values in self.grid)):
            data = copy.deepcopy(self.base)
            labels = {}
            for (key, _values), value in zip(self.grid, combo):
                labels[key] = scenario_label(value)
                if isinstance(value, dict) and "label" in value:
                    value = {k: v for k, v in value.items() if k != "label"}
                set_path(data, key, copy.deepcopy(value), "%s: grid.%s" % (self.path, key))
            try:
                scenario = Scenario.from_dict(data)
            except ScenarioError as exc:
                raise SpecError("%s: run %s: %s" % (self.path, labels, exc)) from None
            if len(scenario.protocols) != 1:
                raise SpecError("%s: run %s: a sweep row runs one protocol (gse.run), this "
                                "scenario has %s: put \"protocols\" in the grid, e.g. "
                                "\"protocols\": %s" % (self.path, labels,
                                                       list(scenario.protocols),
                                                       compact_json(list(scenario.protocols))))
            out.append(ScenarioRun(scenario, labels))
        return out


def scenario_spec(base, grid, name="sweep", path="<sweep>"):
    """A ``ScenarioSpec`` of ``base`` (a ``Scenario`` or its dict) and ``grid`` ({field
    path: [values]}), checked: the base, each key, each run's Scenario."""
    if isinstance(base, Scenario):
        base = base.to_dict()
    try:
        base = Scenario.from_dict(base).to_dict()
    except ScenarioError as exc:
        raise SpecError("%s: scenario: %s" % (path, exc)) from None
    if not isinstance(grid, dict) or not grid:
        raise SpecError("%s: \"grid\" must be an object of Scenario field -> list of values"
                        % path)
    items = []
    for key, values in grid.items():
        where = "%s: grid.%s" % (path, key)
        if not isinstance(key, str) or not key:
            raise SpecError("%s: a grid key is a Scenario field or path, got %r" % (path, key))
        if isinstance(values, tuple):
            values = list(values)
        if not isinstance(values, list) or not values:
            raise SpecError("%s: expected a non-empty list of values" % where)
        set_path(copy.deepcopy(base), key, None, where)          # the key names a field
        items.append((key, values))
    if not isinstance(name, str):
        raise SpecError("%s: name must be a string" % path)
    spec = ScenarioSpec(name, base, items, path)
    spec.runs()                                                  # every run validates
    return spec


def parse_scenario_spec(data, path="<sweep>"):
    """A sweep file's object in the Scenario form (``name``, ``scenario``, ``grid``)."""
    unknown = sorted(set(data) - {"name", "scenario", "grid"})
    if unknown:
        raise SpecError("%s: unknown key(s) %s (a grid over a Scenario has name, scenario, "
                        "grid; \"base\" holds gse sim options, in the other form)"
                        % (path, ", ".join(unknown)))
    return scenario_spec(data["scenario"], data.get("grid"), data.get("name", "sweep"), path)


def load_sweep(path):
    """A sweep file in either form: ``"scenario"`` (a grid over a Scenario, this module)
    or ``"base"`` / options only (a grid of ``gse sim`` options, ``gse.sweep.spec``)."""
    data = read_json(path)
    if isinstance(data, dict) and "scenario" in data:
        return parse_scenario_spec(data, path)
    return parse_spec(data, path)


def sweep(base, grid, out=None, name="sweep", client=None, scheduler=None, workers=None,
          resume=True, progress=None):
    """Run the grid over ``base`` (a ``gse.Scenario`` or its dict; ``grid``: {field path:
    [values]}) on Dask: a local cluster of ``workers`` processes (default: this machine's
    cores), or ``scheduler``'s cluster, or ``client``.  Returns a
    ``gse.sweep.runner.SweepResult``: ``rows`` (dicts, grid order), ``table()`` (pyarrow),
    ``frame()`` (pandas); each row has its ``run_id``, its labels, its ``scenario`` as
    JSON (``gse.run(gse.Scenario.from_json(row["scenario"]))`` reproduces it) and the
    summary's figures (``gse.sweep.single.SUMMARY_COLUMNS``).  ``out``: also write
    OUT.parquet and OUT.csv, and skip the runs already there (``resume``)."""
    from gse.sweep.runner import run_sweep
    spec = scenario_spec(base, grid, name)
    return run_sweep(spec, out, client=client, scheduler=scheduler, workers=workers,
                     progress=progress, resume=resume)
