"""Replays through the Python API: a Scenario whose workload is a trace or a generated
collective, run by ``gse.run`` / ``gse.compare``.

``gse replay``'s ``--json`` must equal ``gse.run(...).summary.to_dict()`` for the same
scenario (but for the wall-clock fields), the replay workloads must round-trip through
JSON, and bad values are refused naming the field.
"""

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gse
from gse.api.replay_scenario import COLLECTIVE_DEFAULTS, TRACE_DEFAULTS
from gse.api.scenario import Scenario, ScenarioError
from gse.cli.main import main

DATA = os.path.join(os.path.dirname(__file__), "data")
JSONL = os.path.join(DATA, "all_reduce_8npus_1MB.jsonl")
CHAKRA = os.path.join(DATA, "chakra", "all_reduce_8npus_1MB")
PYTORCH = os.path.join(DATA, "pytorch_et", "all_to_all_16npus_1MB")
RAIL = ["--topology", "spine-leaf-rail", "--servers", "2", "--nics-per-server", "8"]
RAIL_TOPOLOGY = {"name": "spine-leaf-rail", "servers": 2, "nics_per_server": 8}
WALL_KEYS = ("wall_s", "events_per_s")


def _without_wall(summary):
    return {k: v for k, v in summary.items() if k not in WALL_KEYS}


def _cli_json(tmp_path, argv):
    out = tmp_path / "cli.json"
    assert main(["replay"] + argv + ["--json", str(out), "--quiet"]) == 0
    return json.loads(out.read_text())


# -- the CLI's summary is the API's ------------------------------------------------------------

def test_a_jsonl_replay_with_an_algorithm_override_is_gse_run(tmp_path):
    cli = _cli_json(tmp_path, [JSONL] + RAIL + ["--algorithm", "all_reduce=hd", "--seed", "3"])
    s = Scenario(topology=RAIL_TOPOLOGY, seed=3,
                 workload={"kind": "trace", "paths": [JSONL], "algorithms": ["all_reduce=hd"]})
    res = gse.run(s)
    assert _without_wall(res.summary.to_dict()) == _without_wall(cli)
    assert res.summary["collectives"][0]["algo"] == "hd"
    assert res.collectives[0].done and res.trace.format == "jsonl"
    assert res.collectives_columns()["time_us"] == [cli["collectives"][0]["time_us"]]


def test_a_chakra_replay_with_a_failure_mid_run_is_gse_run(tmp_path):
    fail = ["--fail", "link:leaf0_0-spine0@20us", "--detect-us", "10"]
    cli = _cli_json(tmp_path, [CHAKRA] + RAIL + fail + ["--compute-scale", "0.5"])
    s = Scenario(topology=RAIL_TOPOLOGY, failures=["link:leaf0_0-spine0@20us"], detect_us=10,
                 workload={"kind": "trace", "paths": [CHAKRA], "compute_scale": 0.5})
    got = gse.run(s).summary.to_dict()
    assert _without_wall(got) == _without_wall(cli)
    assert got["failures"]["links"] == ["leaf0_0-spine0"]
    assert got["collectives_done"] == 1 and got["lost"] == 0
    healthy = gse.run(s.replace(failures=[])).summary.to_dict()
    assert got["replay_time_us"] > healthy["replay_time_us"]      # the failure cost time


def test_a_pytorch_compare_is_gse_compare(tmp_path):
    argv = [PYTORCH, "--topology", "pod-fat-tree", "--pods", "2", "--groups", "1",
            "--servers", "4", "--nics-per-server", "4", "--compare", "--protocols",
            "gse,roce", "--set", "mtu=2048"]
    cli = _cli_json(tmp_path, argv)
    s = Scenario(topology={"name": "pod-fat-tree", "pods": 2, "groups": 1, "servers": 4,
                           "nics_per_server": 4},
                 workload={"kind": "trace", "paths": [PYTORCH], "format": "pytorch"},
                 overrides=["mtu=2048"])
    got = gse.compare(s, protocols=["gse", "roce"])
    assert list(got) == ["gse", "roce"] == sorted(cli)
    for p, res in got.items():
        assert _without_wall(res.summary.to_dict()) == _without_wall(cli[p])
        assert res.summary["config"]["mtu"] == 2048


def test_a_generated_collective_replays_as_the_same_call_read_from_a_trace():
    from_trace = gse.run(Scenario(topology={"name": "fat-tree", "k": 4},
                                  workload={"kind": "trace", "paths": [JSONL]}))
    generated = gse.run(Scenario(topology={"name": "fat-tree", "k": 4},
                                 workload={"kind": "collective", "op": "all_reduce",
                                           "ranks": "0-7", "size": 1_048_576}))
    (a,), (b,) = from_trace.summary["collectives"], generated.summary["collectives"]
    for key in ("op", "algo", "ranks", "bytes", "flows", "time_us", "busbw_gbps"):
        assert a[key] == b[key], key
    assert generated.summary["trace"]["format"] == "collective"
    two = gse.run(Scenario(topology={"name": "fat-tree", "k": 4},
                           workload={"kind": "collective", "ranks": 4, "size": 100_000,
                                     "iterations": 2, "gap_us": 5.0}))
    first, second = two.summary["collectives"]
    assert second["start_us"] > first["start_us"] and two.summary["collectives_done"] == 2


# -- the scenario as data ---------------------------------------------------------------------

ranks = st.one_of(st.integers(1, 64), st.just("0-7"), st.lists(st.integers(0, 99), min_size=1,
                                                                max_size=4))
replay_workloads = st.one_of(
    st.fixed_dictionaries(
        {"kind": st.just("trace"),
         "paths": st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=3)},
        optional={"format": st.sampled_from(["auto", "jsonl", "chakra", "pytorch"]),
                  "world_size": st.none() | st.integers(1, 512),
                  "algorithms": st.lists(st.sampled_from(["all_reduce=hd", "broadcast=tree"]),
                                         max_size=2),
                  "rank_hosts": st.none() | ranks.filter(lambda r: not isinstance(r, int)),
                  "compute_model": st.sampled_from(["streams", "unlimited"]),
                  "compute_scale": st.floats(0, 10)}),
    st.fixed_dictionaries(
        {"kind": st.just("collective")},
        optional={"op": st.just("all_reduce"), "ranks": ranks, "size": st.integers(0, 10 ** 9),
                  "algorithm": st.none() | st.sampled_from(["ring", "hd"]),
                  "iterations": st.integers(1, 10), "gap_us": st.floats(0, 1e3),
                  "root": st.integers(0, 7), "compute_scale": st.floats(0, 10)}))


@settings(max_examples=100, deadline=None)
@given(replay_workloads, st.integers(0, 1000))
def test_replay_scenarios_round_trip_through_json(workload, seed):
    s = Scenario(workload=workload, seed=seed, protocols=["gse", "roce"])
    again = Scenario.from_json(s.to_json())
    assert again == s and again.to_dict() == s.to_dict()
    defaults = TRACE_DEFAULTS if workload["kind"] == "trace" else COLLECTIVE_DEFAULTS
    assert set(s.workload) == set(defaults) | {"kind"}


@pytest.mark.parametrize("workload, words", [
    ({"kind": "trace"}, "scenario.workload.paths: expected the trace's files"),
    ({"kind": "trace", "paths": []}, "scenario.workload.paths: expected at least one"),
    ({"kind": "trace", "paths": ["t"], "format": "kineto"}, "scenario.workload.format"),
    ({"kind": "trace", "paths": ["t"], "algorithms": ["all_reduce=tree"]},
     "scenario.workload.algorithms[0]: expected an algorithm of all_reduce: ring, hd"),
    ({"kind": "trace", "paths": ["t"], "algorithms": ["allreduce"]},
     "scenario.workload.algorithms[0]: expected OP=ALGO"),
    ({"kind": "trace", "paths": ["t"], "compute_model": "gpu"}, "scenario.workload.compute_model"),
    ({"kind": "trace", "paths": ["t"], "compute_scale": -1}, "scenario.workload.compute_scale"),
    ({"kind": "trace", "paths": ["t"], "world_size": 0}, "scenario.workload.world_size"),
    ({"kind": "trace", "paths": ["t"], "rank_hosts": "0-x"}, "scenario.workload.rank_hosts"),
    ({"kind": "trace", "paths": ["t"], "size": 3}, "scenario.workload.size: expected one of "
                                                    "the parameters of a trace workload"),
    ({"kind": "collective", "op": "allreduce"}, "scenario.workload.op"),
    ({"kind": "collective", "algorithm": "tree"}, "scenario.workload.algorithm"),
    ({"kind": "collective", "ranks": 0}, "scenario.workload.ranks: expected an integer >= 1"),
    ({"kind": "collective", "ranks": []}, "scenario.workload.ranks: expected at least one"),
    ({"kind": "collective", "iterations": 0}, "scenario.workload.iterations"),
    ({"kind": "collective", "size": "1MB"}, "scenario.workload.size"),
])
def test_bad_replay_workloads_name_the_field(workload, words):
    with pytest.raises(ScenarioError) as err:
        Scenario(workload=workload)
    assert words in str(err.value)


def test_a_replay_runs_on_the_simulation_only():
    with pytest.raises(ScenarioError) as err:
        Scenario(workload={"kind": "collective"}, runtime="udp")
    assert "scenario.runtime" in str(err.value) and "sim" in str(err.value)


def test_errors_of_the_files_and_the_fabric_name_them(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "op": "all_reduce", "ranks": "0-7", "bytes": 8}\n{"id": 2,\n')
    with pytest.raises(ValueError, match="line 2"):
        gse.run({"workload": {"kind": "trace", "paths": [str(bad)]}})
    with pytest.raises(ValueError, match="hosts 0..15"):
        gse.run({"topology": {"name": "fat-tree", "k": 4},
                 "workload": {"kind": "collective", "ranks": 32, "size": 1000}})
    with pytest.raises(ValueError, match="rank_hosts lists 2 hosts but the trace has 8"):
        gse.run({"workload": {"kind": "trace", "paths": [JSONL], "rank_hosts": [0, 1]}})
