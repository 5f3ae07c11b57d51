"""``gse.sweep(base, grid)``: a sweep as a grid over a Scenario, on a local Dask cluster.

A row reproduces from its saved Scenario alone (``gse.run(Scenario.from_json(row
["scenario"]))`` gives the row's figures), the sweep file takes the same grid, and a bad
grid is refused before anything runs, naming the key or the field.
"""

import json

import pytest

import gse
from gse.cli.main import main
from gse.sweep.scenario_grid import load_sweep, scenario_spec
from gse.sweep.single import SUMMARY_COLUMNS, WALL_COLUMNS, summary_row
from gse.sweep.spec import SpecError

BASE = {"topology": {"name": "fat-tree", "k": 4},
        "workload": {"kind": "incast", "size": 20_000, "senders": 2}}
GRID = {"protocols": ["gse", "roce"], "workload.senders": [2, 3]}


def _figures(row):
    return {name: row[name] for name, _t, _w in SUMMARY_COLUMNS if name not in WALL_COLUMNS}


def test_grid_runs_are_scenarios_in_order_with_stable_ids():
    runs = scenario_spec(BASE, GRID).runs()
    assert [r.labels for r in runs] == [
        {"protocols": "gse", "workload.senders": 2}, {"protocols": "gse", "workload.senders": 3},
        {"protocols": "roce", "workload.senders": 2},
        {"protocols": "roce", "workload.senders": 3}]
    assert runs[3].scenario.protocols == ("roce",) and runs[3].scenario.workload["senders"] == 3
    assert len({r.run_id for r in runs}) == 4
    assert [r.run_id for r in scenario_spec(gse.Scenario.from_dict(BASE), GRID).runs()] \
        == [r.run_id for r in runs]
    labelled = scenario_spec(BASE, {"workload": [{"label": "a2a", "kind": "all-to-all"}],
                                    "overrides": [[], ["mtu=2048"]]}).runs()
    assert labelled[1].labels == {"workload": "a2a", "overrides": '["mtu=2048"]'}
    assert labelled[1].scenario.workload["kind"] == "all-to-all"
    assert labelled[1].scenario.overrides == ("mtu=2048",)


@pytest.mark.parametrize("base, grid, words", [
    (BASE, {}, "grid"),
    (BASE, {"seed": 3}, "grid.seed: expected a non-empty list"),
    (BASE, {"speed": [1]}, "grid.speed: 'speed' is not a Scenario field"),
    (BASE, {"seed.x": [1]}, "grid.seed.x"),
    (BASE, {"workload.senders": ["4"]}, "scenario.workload.senders: expected an integer"),
    (BASE, {"protocols": [["gse", "roce"]]}, "one protocol"),
    (dict(BASE, seed="x"), {"seed": [1]}, "scenario: scenario.seed"),
])
def test_bad_grids_are_refused_naming_the_key_or_field(base, grid, words):
    with pytest.raises(SpecError) as err:
        scenario_spec(base, grid, path="g.json")
    assert words in str(err.value) and str(err.value).startswith("g.json: ")


def test_sweep_rows_reproduce_from_their_saved_scenario(tmp_path):
    res = gse.sweep(BASE, GRID, out=str(tmp_path / "grid"), workers=2)
    assert res.ran == 4 and res.failed == 0 and len(res.rows) == 4
    table = res.table()
    assert table.num_rows == 4
    assert table.column("workload.senders").to_pylist() == [2, 3, 2, 3]
    figures = {}
    for row in res.rows:
        assert row["status"] == "ok" and row["end"] == "done", row
        alone = gse.run(gse.Scenario.from_json(row["scenario"])).summary.to_dict()
        assert _figures(summary_row(alone)) == _figures(row)
        figures[row["run_id"]] = _figures(row)
    assert table.column("run_id").to_pylist() == [r["run_id"] for r in res.rows]
    again = gse.sweep(gse.Scenario.from_dict(BASE), GRID, out=str(tmp_path / "grid"),
                      workers=1)
    assert again.ran == 0 and again.skipped == 4          # resumed from the files
    spec_path = tmp_path / "grid.json"
    spec_path.write_text(json.dumps({"name": "g", "scenario": BASE, "grid": GRID}))
    assert [r.run_id for r in load_sweep(str(spec_path)).runs()] == list(figures)


def test_the_sweep_file_takes_the_scenario_form(tmp_path, capsys):
    path = tmp_path / "grid.json"
    path.write_text(json.dumps({"name": "g", "scenario": BASE, "grid": {"seed": [1, 2]}}))
    assert main(["sweep", str(path), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("2 runs")
    run_id, text = lines[0].split(" ", 1)
    assert gse.Scenario.from_json(text) == gse.Scenario.from_dict(dict(BASE, seed=1))
    path.write_text(json.dumps({"scenario": BASE, "base": {"k": 4}, "grid": {"seed": [1]}}))
    assert main(["sweep", str(path), "--dry-run"]) == 2
    assert "unknown key(s) base" in capsys.readouterr().err


def test_a_failing_row_keeps_its_scenario_and_the_others():
    res = gse.sweep(BASE, {"overrides": [[], ["queue_bytes=-1"]]}, workers=1)
    ok, bad = res.rows
    assert ok["status"] == "ok" and bad["status"] == "failed" and "queue_bytes" in bad["error"]
    assert gse.Scenario.from_json(bad["scenario"]).overrides == ("queue_bytes=-1",)


def test_gse_sweep_is_the_callable_package_and_loads_nothing_heavy():
    import subprocess
    import sys
    code = ("import sys, gse\n"
            "f = gse.sweep\n"
            "import gse.sweep.scenario_grid\n"
            "print(callable(f), f is gse.sweep)\n"
            "print(sorted(m for m in ('dask', 'distributed', 'pandas', 'pyarrow', "
            "'matplotlib') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == "True True" and out[1] == "[]"
