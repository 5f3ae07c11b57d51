"""The Python API (gse.api, docs/api.md): scenarios as data, run/compare, results as tables.

The CLI's ``--json`` summary must equal ``gse.run``'s ``summary.to_dict()`` for the same
scenario (but for the wall-clock fields), a scenario must round-trip through JSON, and
``import gse`` must not load the API or its heavy dependencies.
"""

import json
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gse
from gse.api.scenario import GENERATORS, Scenario, ScenarioError
from gse.cli.main import main
from gse.config import BASELINES
from gse.protocols import PROTOCOLS
from gse.sweep.single import run_summary, scenario as sweep_scenario

WALL_KEYS = ("wall_s", "events_per_s")


def _without_wall(summary):
    return {k: v for k, v in summary.items() if k not in WALL_KEYS}


SMALL = dict(topology={"name": "fat-tree", "k": 4},
             workload={"kind": "incast", "senders": 5, "size": 300_000}, seed=3)


# -- the scenario as data ---------------------------------------------------------------------

finite = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)
scenarios = st.builds(
    Scenario,
    topology=st.fixed_dictionaries(
        {"name": st.sampled_from(["fat-tree", "star", "spine-leaf-rail", "pod-fat-tree"])},
        optional={"k": st.integers(0, 64), "hosts": st.none() | st.integers(0, 1000),
                  "link_gbps": st.floats(0.1, 1e4, allow_nan=False),
                  "link_delay_ns": st.integers(0, 10 ** 6)}),
    workload=st.one_of(
        st.fixed_dictionaries({"kind": st.sampled_from(GENERATORS)},
                              optional={"size": st.integers(1, 10 ** 9),
                                        "senders": st.integers(1, 4096),
                                        "receiver": st.none() | st.integers(0, 10 ** 4),
                                        "load": st.floats(0.01, 1.0),
                                        "size_dist": st.none() | st.just("exp:1000"),
                                        "start_us": finite}),
        st.builds(lambda p: {"kind": "cm", "path": p}, st.text(min_size=1, max_size=20))),
    protocols=st.lists(st.sampled_from(PROTOCOLS), min_size=1, max_size=3),
    baseline=st.sampled_from(sorted(BASELINES)),
    overrides=st.lists(st.sampled_from(["mtu=4096", "roce.ecn_kmin=1", "gse.policy=srpt"]),
                       max_size=3),
    unsched=st.none() | st.integers(0, 10 ** 6),
    policy=st.none() | st.sampled_from(["rr", "srpt", "fifo"]),
    loss=st.floats(0, 1), corrupt=st.floats(0, 1),
    failures=st.lists(st.sampled_from(["link:agg0_0-core0@50us",
                                       "switch:agg1_0@50us,restore=1ms"]), max_size=2),
    detect_us=st.just("never") | finite,
    seed=st.integers(-10 ** 9, 10 ** 9),
    until_us=st.none() | finite, stall_us=st.none() | finite,
    sample_us=st.none() | st.floats(0.001, 1e4),
    runtime=st.just("sim"))           # udp and mininet: tests/test_api_runtimes.py


@settings(max_examples=200, deadline=None)
@given(scenarios)
def test_a_scenario_round_trips_through_json_unchanged(s):
    text = s.to_json()
    back = Scenario.from_json(text)
    assert back == s
    assert back.to_json() == text
    assert Scenario.from_dict(json.loads(text)).to_dict() == s.to_dict()


def test_defaults_are_gse_sims_defaults():
    s = Scenario()
    assert s.topology["name"] == "fat-tree" and s.topology["k"] == 8
    assert s.topology["link_gbps"] == 100.0 and s.workload["kind"] == "permutation"
    assert s.workload["size"] == 2_000_000 and s.protocol == "gse" and s.seed == 1
    assert s.detect_us == 1000.0 and s.until_us is None and s.runtime == "sim"


@pytest.mark.parametrize("fields, located", [
    (dict(workload={"kind": "incast", "senders": "4"}), "scenario.workload.senders: "
                                                        "expected an integer, got '4'"),
    (dict(workload={"kind": "random", "load": None}), "scenario.workload.load: "
                                                      "expected a number, got None"),
    (dict(workload={"kind": "zipf"}), "scenario.workload.kind: expected one of"),
    (dict(workload={"kind": "incast", "sendres": 4}), "scenario.workload.sendres"),
    (dict(workload={"kind": "cm"}), "scenario.workload.path"),
    (dict(topology={"name": "torus"}), "scenario.topology.name"),
    (dict(topology={"name": "fat-tree", "link_gbps": "fast"}), "scenario.topology.link_gbps"),
    (dict(topology={"name": "fat-tree", "k": 4.0}), "scenario.topology.k: expected an integer"),
    (dict(protocols=["gse", "tcp"]), "scenario.protocols[1]: expected one of"),
    (dict(baseline="fancy"), "scenario.baseline"),
    (dict(overrides=["mtu"]), "scenario.overrides[0]: expected NAME=VALUE"),
    (dict(loss="1%"), "scenario.loss: expected a number"),
    (dict(detect_us="soon"), "scenario.detect_us"),
    (dict(until_us=float("nan")), "scenario.until_us"),
    (dict(sample_us=0), "scenario.sample_us"),
    (dict(seed=1.5), "scenario.seed: expected an integer"),
    (dict(runtime="ns3"), "scenario.runtime"),
])
def test_a_bad_field_is_named_with_its_value_and_what_is_allowed(fields, located):
    with pytest.raises(ScenarioError) as e:
        Scenario(**fields)
    assert located in str(e.value)


def test_a_range_that_depends_on_the_run_is_checked_by_its_step():
    with pytest.raises(ValueError, match="incast: n_senders must be in 1..n_hosts-1 = 1..15"):
        gse.run(Scenario(topology={"k": 4}, workload={"kind": "incast", "senders": 0}))


def test_an_unknown_field_is_refused():
    with pytest.raises(ScenarioError, match="scenario.protocl: unknown field"):
        Scenario.from_dict({"protocl": "gse"})


def test_the_scenario_fields_types_and_defaults_name_the_same_fields():
    """``Scenario`` is a plain class (no dataclass, for start-up): its annotations, its
    ``FIELDS`` table and what an instance holds must not drift apart."""
    from gse.api.scenario import FIELD_NAMES
    assert tuple(Scenario.__annotations__) == FIELD_NAMES
    assert tuple(vars(Scenario()).keys()) == FIELD_NAMES
    a, b = Scenario(), Scenario()
    assert a == b and a.topology is not b.topology      # a fresh default per scenario
    with pytest.raises(TypeError):
        hash(a)


def test_load_reads_json_and_toml(tmp_path):
    s = Scenario(**SMALL)
    s.to_json(tmp_path / "s.json")
    assert Scenario.load(tmp_path / "s.json") == s
    (tmp_path / "s.toml").write_text(
        'seed = 3\nprotocols = ["roce", "gse"]\n[topology]\nname = "fat-tree"\nk = 4\n'
        '[workload]\nkind = "incast"\nsenders = 5\nsize = 300000\n')
    assert Scenario.load(str(tmp_path / "s.toml")) == s.replace(protocols=["roce", "gse"])
    (tmp_path / "bad.json").write_text('{"seed": "one"}')
    with pytest.raises(ScenarioError, match="bad.json: scenario.seed"):
        Scenario.load(str(tmp_path / "bad.json"))
    (tmp_path / "bad.toml").write_text('[workload]\nkind = "zipf"\n')
    with pytest.raises(ScenarioError, match="bad.toml: scenario.workload.kind"):
        Scenario.load(str(tmp_path / "bad.toml"))


# -- the CLI's summary is the API's ----------------------------------------------------------

CASES = [
    (["--k", "4", "--traffic", "incast", "--senders", "5", "--size", "300000", "--seed", "3"],
     SMALL),
    (["--k", "4", "--traffic", "permutation", "--size", "100000", "--protocol", "roce",
      "--baseline", "htsim", "--set", "mtu=2048"],
     dict(topology={"k": 4}, workload={"kind": "permutation", "size": 100_000},
          protocols=["roce"], baseline="htsim", overrides=["mtu=2048"])),
    (["--k", "4", "--traffic", "random", "--messages", "40", "--size-dist", "exp:50000",
      "--load", "0.3", "--protocol", "gse-fabric", "--fail", "link:agg0_0-core0@20us",
      "--detect-us", "5", "--until-us", "3000", "--seed", "7"],
     dict(topology={"k": 4}, workload={"kind": "random", "messages": 40,
                                       "size_dist": "exp:50000", "load": 0.3},
          protocols=["gse-fabric"], failures=["link:agg0_0-core0@20us"], detect_us=5.0,
          until_us=3000.0, seed=7)),
]


@pytest.mark.parametrize("argv, fields", CASES)
def test_gse_sim_json_is_the_run_summary(tmp_path, argv, fields):
    out = tmp_path / "s.json"
    main(["sim"] + argv + ["--quiet", "--json", str(out)])
    result = gse.run(Scenario(**fields))
    assert _without_wall(json.loads(out.read_text())) == \
        _without_wall(json.loads(json.dumps(result.summary.to_dict())))


def test_gse_compare_json_is_the_compare_summaries(tmp_path):
    out = tmp_path / "c.json"
    main(["compare", "--k", "4", "--traffic", "incast", "--senders", "5", "--size", "300000",
          "--seed", "3", "--protocols", "roce,gse", "--set", "mtu=2048", "--quiet",
          "--json", str(out)])
    results = gse.compare(Scenario(**SMALL, overrides=["mtu=2048"]), protocols=["roce", "gse"])
    cli = json.loads(out.read_text())
    assert list(results) == ["roce", "gse"] and sorted(cli) == ["gse", "roce"]
    for p, r in results.items():
        assert _without_wall(cli[p]) == \
            _without_wall(json.loads(json.dumps(r.summary.to_dict())))


def test_a_sweep_row_runs_the_scenario_of_its_argv():
    argv = CASES[0][0]
    assert sweep_scenario(argv) == Scenario(**SMALL)
    assert _without_wall(run_summary(argv)) == \
        _without_wall(gse.run(Scenario(**SMALL)).summary.to_dict())


# -- results -------------------------------------------------------------------------------

def test_records_as_a_table_and_time_series_when_sampled():
    r = gse.run(Scenario(**SMALL, sample_us=50.0))
    assert r.summary.delivered == r.summary["messages"] == 5
    t = r.records_table()
    assert t.num_rows == 5 and {"fct_us", "slowdown", "completed"} <= set(t.column_names)
    assert all(math.isfinite(v) and v >= 1.0 for v in t.column("slowdown").to_pylist())
    assert r.timeseries is not None and r.timeseries.nbins > 0
    assert gse.run(Scenario(**SMALL)).timeseries is None


def test_records_frame_needs_pandas_only_when_called():
    r = gse.run(Scenario(**SMALL))
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs pandas"):
            r.records_frame()
    else:
        assert len(r.records_frame()) == 5


def test_import_gse_loads_neither_the_api_nor_heavy_libraries():
    code = ("import sys, gse; heavy = [m for m in ('gse.api', 'pyarrow', 'pandas', "
            "'matplotlib', 'dask') if m in sys.modules]; print(heavy); "
            "gse.Scenario; print('gse.api' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == "[]" and out[1] == "True"


def test_traffic_from_a_namespace_built_by_hand_for_the_traffic_alone():
    # experiments/mininet_fattree.py builds one with the traffic options only: no topology
    import argparse

    from gse.cli.common import traffic_from_args
    from topologies import fat_tree
    ns = argparse.Namespace(traffic="incast", traffic_file=None, seed=1, size=1000, senders=3,
                            receiver=None, messages=0, size_dist=None, load=0.0, start_us=0.0,
                            link_gbps=1.0)
    msgs = traffic_from_args(ns, fat_tree(4))
    assert len(msgs) == 3 and {m.size for m in msgs} == {1000}
