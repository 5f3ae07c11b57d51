"""A sweep's specification: a grid of ``gse sim`` runs, as a JSON file.

    {
      "name": "k4-grid",
      "base": {"topology": "fat-tree", "k": 4, "size": 200000},
      "grid": {
        "protocol": ["gse", "roce", "gse-fabric"],
        "set.gse.unsched_bytes": [0, 65536, 178450],
        "seed": [1, 2, 3, 4],
        "workload": [{"label": "perm", "traffic": "permutation"},
                     {"label": "incast8", "traffic": "incast", "senders": 8}]
      }
    }

Every key of ``base`` and ``grid`` is an option of ``gse sim`` (``k``, ``link-gbps`` or
``link_gbps``, ``traffic``, ``seed``, ...) or ``set.NAME`` for ``--set NAME=VALUE``
(``set.gse.NAME`` for one protocol only, as on the command line).  Each grid key takes
a list of values; a value that is an object is a group of options set together (its
``label`` names it in the table).  The runs are the Cartesian product of the grid, keys
in the file's order, each over ``base``.  A run is named by ``run_id``, a digest of its
options (the same options give the same id in any sweep), which is what resuming
matches.  Errors name the file and the key.
"""

import hashlib
import itertools
import json

RESERVED = ("label",)


class SpecError(ValueError):
    """A sweep file that cannot be used; the message names the file and the key."""


class Run:
    """One simulation of the grid: its options, its argv for ``gse sim``, its labels."""

    __slots__ = ("run_id", "options", "labels", "argv")

    def __init__(self, options, labels):
        self.options = options            # {option: value}, base and grid merged
        self.labels = labels              # {grid key: value or group label}, for the table
        self.argv = options_to_argv(options)
        self.run_id = run_id(options)

    def task(self):
        """(function, arguments) a Dask worker runs for this run's row."""
        from gse.sweep.single import run_row
        return run_row, (self.run_id, self.argv)

    def scenario_json(self):
        """The run's ``gse.Scenario`` as compact JSON (the table's ``scenario``)."""
        from gse.sweep.single import scenario
        return json.dumps(scenario(self.argv).to_dict(), sort_keys=True,
                          separators=(",", ":"))

    def __repr__(self):
        return "Run(%s %s)" % (self.run_id, self.labels)


def run_id(options):
    """A stable name of a run's options (16 hex digits)."""
    text = json.dumps(options, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _option_name(key):
    return "--" + key.replace("_", "-")


def options_to_argv(options):
    """``gse sim`` arguments for ``options`` (``set.NAME`` -> ``--set NAME=VALUE``)."""
    argv = []
    for key in sorted(options):
        value = options[key]
        if key.startswith("set."):
            argv += ["--set", "%s=%s" % (key[4:], _text(value))]
        elif value is True:
            argv.append(_option_name(key))
        elif value is False or value is None:
            continue
        else:
            argv += [_option_name(key), _text(value)]
    return argv


def _text(value):
    if isinstance(value, float) and value == int(value):
        return repr(value)
    return str(value)


def label_of(value):
    """How a grid value appears in the table: itself, or a group's ``label`` (else its
    options as compact JSON)."""
    if isinstance(value, dict):
        if "label" in value:
            return str(value["label"])
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    if isinstance(value, (list, tuple)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


class Spec:
    """A parsed sweep file: ``name``, ``base`` options, ``grid`` [(key, values)]."""

    label = staticmethod(label_of)

    def __init__(self, name, base, grid, path="<spec>"):
        self.name = name
        self.base = base
        self.grid = grid
        self.path = path

    def runs(self):
        """Every run of the grid, in order (keys in the file's order, values in theirs)."""
        keys = [k for k, _ in self.grid]
        out = []
        for combo in itertools.product(*(values for _, values in self.grid)):
            options = dict(self.base)
            labels = {}
            for key, value in zip(keys, combo):
                if isinstance(value, dict):
                    options.update({k: v for k, v in value.items() if k not in RESERVED})
                else:
                    options[key] = value
                labels[key] = label_of(value)
            out.append(Run(options, labels))
        return out


def _check_options(obj, where):
    if not isinstance(obj, dict):
        raise SpecError("%s: expected an object of options, got %s" % (where, type(obj).__name__))
    for key, value in obj.items():
        if not isinstance(key, str) or not key or key.startswith("-"):
            raise SpecError("%s: option names are plain names (\"k\", \"set.NAME\"), got %r"
                            % (where, key))
        if key in RESERVED:
            continue
        if isinstance(value, (dict, list)):
            raise SpecError("%s.%s: an option takes a number, a string or a boolean, got %s"
                            % (where, key, type(value).__name__))


def read_json(path):
    """A sweep file's JSON, or a SpecError naming the line."""
    try:
        with open(path) as f:
            return json.load(f)
    except json.JSONDecodeError as exc:
        raise SpecError("%s line %d column %d: not JSON: %s"
                        % (path, exc.lineno, exc.colno, exc.msg)) from None


def load_spec(path):
    """Read and check a sweep file of ``gse sim`` options (JSON); the Scenario form is
    ``gse.sweep.scenario_grid.load_sweep``'s, which reads both."""
    return parse_spec(read_json(path), path)


def parse_spec(data, path="<spec>"):
    if not isinstance(data, dict):
        raise SpecError("%s: a sweep is a JSON object with \"grid\" (and \"base\", \"name\")"
                        % path)
    unknown = sorted(set(data) - {"name", "base", "grid"})
    if unknown:
        raise SpecError("%s: unknown key(s) %s (a sweep has name, base, grid; or name, "
                        "scenario, grid for a grid over a Scenario)"
                        % (path, ", ".join(unknown)))
    base = data.get("base", {})
    _check_options(base, "%s: base" % path)
    grid = data.get("grid")
    if not isinstance(grid, dict) or not grid:
        raise SpecError("%s: \"grid\" must be an object of option -> list of values" % path)
    items = []
    for key, values in grid.items():
        where = "%s: grid.%s" % (path, key)
        if not isinstance(values, list) or not values:
            raise SpecError("%s: expected a non-empty list of values" % where)
        for i, v in enumerate(values):
            if isinstance(v, dict):
                _check_options(v, "%s[%d]" % (where, i))
            elif isinstance(v, list):
                raise SpecError("%s[%d]: a value is a number, a string, a boolean or an "
                                "object of options, not a list" % (where, i))
        items.append((key, values))
    name = data.get("name", "sweep")
    if not isinstance(name, str):
        raise SpecError("%s: name must be a string" % path)
    return Spec(name, base, items, path)
