"""Golden runs: fixed seeded simulations whose per-message results are stored.

Each scenario below is a small k=4 Fat-Tree run (GSE and RoCE/PFC, with and without
faults).  Its ``RunResult.per_message()`` (src, msg_id, delivery ps, finish ps,
retransmissions) and a few run counters are kept in ``tests/data/golden/<name>.json`` and
must come out bit-identical, in the pure-Python and in the compiled build (CI runs this
file in both).  Invariants do not catch a silent change of behaviour; this does.

A change that is *meant* to alter results (a protocol fix, a new default) regenerates the
files, and the diff of tests/data/golden shows what moved:

    GSE_PURE_PYTHON=1 python tests/test_golden.py --update     # all scenarios
    GSE_PURE_PYTHON=1 python tests/test_golden.py --update roce-incast-pfc
"""

import json
import os
import random
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(HERE))

from gse import _build  # noqa: E402
from gse.config import GseConfig, RoceConfig  # noqa: E402
from gse.runtimes.sim.run import run_simulation  # noqa: E402
from gse.workloads import traffic  # noqa: E402
from topologies import fat_tree  # noqa: E402

GOLDEN = os.path.join(HERE, "data", "golden")

# name -> (protocol, traffic, seed, loss, corrupt, config overrides)
SCENARIOS = {
    "gse-permutation": ("gse", ("permutation", 1_000_000), 1, 0.0, 0.0, {}),
    "gse-incast-faults": ("gse", ("incast", 8, 300_000), 2, 0.005, 0.001, {}),
    "gse-random-srpt": ("gse", ("random", 120, "lognormal:60000:1.5", 0.6), 3, 0.0, 0.0,
                        {"policy": "srpt", "unsched_bytes": 40_000}),
    "roce-permutation-pfc": ("roce", ("permutation", 1_000_000), 1, 0.0, 0.0, {}),
    "roce-incast-pfc": ("roce", ("incast", 8, 500_000), 2, 0.0, 0.0, {}),
    "roce-incast-faults-nodcqcn": ("roce", ("incast", 6, 200_000), 4, 0.003, 0.0,
                                   {"dcqcn": False, "ecn": False}),
}

COUNTERS = ("events", "drops", "trims", "retransmits", "ecn_marks", "pfc_pauses",
            "sim_time_us", "lost")


def _messages(spec, n_hosts, seed):
    rng = random.Random("%s/golden-traffic" % seed)
    kind = spec[0]
    if kind == "permutation":
        return traffic.permutation(n_hosts, spec[1], rng)
    if kind == "incast":
        return traffic.incast(n_hosts, spec[1], spec[2], rng)
    return traffic.uniform_random(n_hosts, spec[1], rng, spec[2], spec[3], 100.0)


def run_scenario(name):
    protocol, spec, seed, loss, corrupt, overrides = SCENARIOS[name]
    topo = fat_tree(4)
    cfg = GseConfig(**overrides) if protocol == "gse" else RoceConfig(**overrides)
    result = run_simulation(topo, _messages(spec, len(topo.hosts), seed), protocol, cfg,
                            seed, loss, corrupt)
    s = result.summary
    return {"scenario": name, "protocol": protocol, "seed": seed,
            "per_message": [list(row) for row in result.per_message()],
            "counters": {k: s[k] for k in COUNTERS}}


def _path(name):
    return os.path.join(GOLDEN, name + ".json")


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_golden(name):
    with open(_path(name)) as f:
        want = json.load(f)
    got = run_scenario(name)
    build = _build.build()
    assert got["counters"] == want["counters"], "%s (%s build)" % (name, build)
    assert len(got["per_message"]) == len(want["per_message"])
    for g, w in zip(got["per_message"], want["per_message"]):
        assert g == w, "%s (%s build): message %s" % (name, build, w[:2])


def test_golden_files_cover_the_scenarios():
    names = {f[:-5] for f in os.listdir(GOLDEN) if f.endswith(".json")}
    assert names == set(SCENARIOS)


def _update(names):
    os.makedirs(GOLDEN, exist_ok=True)
    for name in names or sorted(SCENARIOS):
        data = run_scenario(name)
        with open(_path(name), "w") as f:
            json.dump(data, f, indent=None, separators=(",", ":"))
            f.write("\n")
        print("wrote %s (%d messages, %s build)" % (_path(name), len(data["per_message"]),
                                                   _build.build()))


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "--update":
        print(__doc__)
        sys.exit(2)
    _update(sys.argv[2:])
