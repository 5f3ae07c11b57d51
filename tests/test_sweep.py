"""``gse sweep``: grids of runs on a Dask cluster give the figures of the same runs done
one by one; a failing run is a row with its error; a sweep run again skips what it has."""

import json
import os

import pytest

from gse.sweep.runner import LocalDask, read_done, run_sweep, table_paths
from gse.sweep.single import SUMMARY_COLUMNS, WALL_COLUMNS, run_row
from gse.sweep.spec import SpecError, load_spec, options_to_argv, parse_spec

GRID = {
    "name": "test-grid",
    "base": {"topology": "fat-tree", "k": 4, "traffic": "permutation", "size": 60000},
    "grid": {
        "protocol": ["gse", "roce"],
        "set.queue_bytes": [65536, -1],         # -1: refused by the configuration
        "seed": [1, 2],
    },
}


def _figures(row):
    return {name: row[name] for name, _t, _w in SUMMARY_COLUMNS if name not in WALL_COLUMNS}


def test_grid_expands_in_order_with_stable_ids(tmp_path):
    spec = parse_spec(GRID)
    runs = spec.runs()
    assert len(runs) == 8
    assert [r.labels for r in runs[:3]] == [
        {"protocol": "gse", "set.queue_bytes": 65536, "seed": 1},
        {"protocol": "gse", "set.queue_bytes": 65536, "seed": 2},
        {"protocol": "gse", "set.queue_bytes": -1, "seed": 1}]
    assert runs[0].argv == ["--k", "4", "--protocol", "gse", "--seed", "1", "--set",
                            "queue_bytes=65536", "--size", "60000", "--topology", "fat-tree",
                            "--traffic", "permutation"]
    assert len({r.run_id for r in runs}) == 8
    assert parse_spec(GRID).runs()[5].run_id == runs[5].run_id
    grouped = parse_spec({"grid": {"workload": [{"label": "inc", "traffic": "incast",
                                                 "senders": 4}]}}).runs()[0]
    assert grouped.labels == {"workload": "inc"}
    assert options_to_argv(grouped.options) == ["--senders", "4", "--traffic", "incast"]


@pytest.mark.parametrize("data, words", [
    ([], "JSON object"),
    ({"grid": {}}, "grid"),
    ({"grid": {"seed": 3}}, "grid.seed"),
    ({"grid": {"seed": [[1]]}}, "grid.seed[0]"),
    ({"grid": {"seed": [1]}, "bogus": 1}, "bogus"),
    ({"base": {"k": [4]}, "grid": {"seed": [1]}}, "base.k"),
])
def test_bad_specs_name_the_key(data, words):
    with pytest.raises(SpecError, match=words.replace("[", r"\[").replace("]", r"\]")):
        parse_spec(data, "g.json")


def test_bad_json_names_line(tmp_path):
    p = tmp_path / "g.json"
    p.write_text('{"grid":\n {"seed": [1,]}}')
    with pytest.raises(SpecError, match="g.json line 2"):
        load_spec(str(p))


def test_unknown_option_is_refused_before_running(tmp_path):
    spec = parse_spec({"grid": {"no-such-option": [1]}}, "g.json")
    with pytest.raises(ValueError, match="no-such-option|unrecognized"):
        run_sweep(spec, str(tmp_path / "t"), client=object())


def test_two_workers_match_single_runs_and_resume(tmp_path):
    pytest.importorskip("dask.distributed")
    spec_path = tmp_path / "grid.json"
    spec_path.write_text(json.dumps(GRID))
    spec = load_spec(str(spec_path))
    out = str(tmp_path / "table")
    with LocalDask(workers=2) as dask:
        assert len(dask.client.scheduler_info()["workers"]) == 2
        seen = []
        result = run_sweep(spec, out, client=dask.client,
                           progress=lambda done, total, failed: seen.append((done, failed)))
        assert (result.ran, result.skipped, result.failed) == (8, 0, 4)
        assert seen[-1] == (8, 4)
        for path in table_paths(out):
            assert os.path.exists(path)
        runs = spec.runs()
        assert [r["run_id"] for r in result.rows] == [r.run_id for r in runs]
        for run, row in zip(runs, result.rows):
            assert {k: row[k] for k in run.labels} == run.labels
            if run.labels["set.queue_bytes"] < 0:
                assert row["status"] == "failed"
                assert "queue_bytes" in row["error"]
                continue
            assert row["status"] == "ok", row["error"]
            single = run_row(run.run_id, run.argv)            # the same run, here, alone
            assert _figures(row) == _figures(single)
            assert row["delivered"] == row["messages"] == 16
        # both files hold the same table
        parquet, csv = (read_done([p]) for p in table_paths(out))
        assert parquet.keys() == csv.keys() and len(parquet) == 4
        for rid in parquet:
            assert _figures(parquet[rid]) == _figures(csv[rid])
        # run again: the four that worked are skipped, the failed ones are tried again
        again = run_sweep(spec, out, client=dask.client)
        assert (again.ran, again.skipped, again.failed) == (4, 4, 4)
        assert [_figures(r) for r in again.rows if r["status"] == "ok"] == \
            [_figures(r) for r in result.rows if r["status"] == "ok"]


def test_cli_dry_run_lists_the_runs(tmp_path, capsys):
    from gse.cli.main import main
    spec_path = tmp_path / "grid.json"
    spec_path.write_text(json.dumps(GRID))
    assert main(["sweep", str(spec_path), "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 9 and out[-1].startswith("8 runs; table: ")
    assert out[0].split()[0] == load_spec(str(spec_path)).runs()[0].run_id
    bad = tmp_path / "bad.json"
    bad.write_text('{"grid": {"seed": 1}}')
    assert main(["sweep", str(bad)]) == 2
    assert "grid.seed" in capsys.readouterr().err
