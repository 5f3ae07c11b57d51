"""Records as Parquet/CSV/JSON Lines (docs/records.md) and ``gse plot`` (docs/plots.md)."""

import os
import random

import pytest

from gse.cli.main import main
from gse.config import PS_PER_US
from gse.metrics.report import RECORD_SCHEMA, read_records, write_records
from gse.protocols import default_config
from gse.runtimes.sim.run import run_simulation
from gse.workloads.traffic import incast, permutation
from topologies import fat_tree

TOPO = fat_tree(4)
N = len(TOPO.hosts)


@pytest.mark.parametrize("ext", ["parquet", "csv", "jsonl"])
def test_records_round_trip_with_missing_values(tmp_path, ext):
    if ext == "parquet":
        pytest.importorskip("pyarrow")
    msgs = permutation(N, 100_000, random.Random(1)) + permutation(N, 2_000_000,
                                                                  random.Random(2))
    for i, m in enumerate(msgs):
        m.msg_id = i
    # stopped early: the long messages are not delivered, so their columns are missing
    res = run_simulation(TOPO, msgs, "gse", default_config("gse"), 1, until_ps=60 * PS_PER_US)
    assert 0 < sum(r.completed for r in res.records) < len(msgs)
    path = str(tmp_path / ("rec." + ext))
    write_records(path, res.records)
    rows = read_records(path)
    assert len(rows) == len(res.records)
    for row, r in zip(rows, res.records):
        want = r.as_dict()
        assert row["msg_id"] == r.msg_id and row["src"] == r.src and row["size"] == r.size
        assert row["delivered"] == r.delivered and row["completed"] == r.completed
        assert row.get("fct_us") == want.get("fct_us")
        assert row.get("deliver_us") == want.get("deliver_us")
        assert row["ideal_us"] == pytest.approx(want["ideal_us"])
    if ext != "jsonl":
        assert list(rows[0]) == [name for name, _ in RECORD_SCHEMA]


def test_parquet_records_schema(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    res = run_simulation(TOPO, permutation(N, 100_000, random.Random(2)), "roce",
                         default_config("roce"), 1)
    write_records(str(tmp_path / "r.parquet"), res.records)
    schema = pq.read_schema(str(tmp_path / "r.parquet"))
    types = {"int64": pa.int64(), "int32": pa.int32(), "float64": pa.float64(),
             "bool": pa.bool_()}
    assert [(f.name, f.type) for f in schema] == [(n, types[t]) for n, t in RECORD_SCHEMA]


def test_plots_from_a_runs_outputs(tmp_path):
    pytest.importorskip("matplotlib")
    ts = tmp_path / "ts"
    rec = tmp_path / "rec.csv"
    assert main(["compare", "--k", "4", "--size", "200000", "--protocols", "gse,roce",
                 "--sample-us", "2", "--timeseries", str(ts), "--timeseries-format", "csv",
                 "--records", str(rec), "--quiet"]) == 0
    out = tmp_path / "h.png"
    assert main(["plot", "heatmap", str(ts / "roce"), "-o", str(out)]) == 0
    assert out.stat().st_size > 10_000
    assert main(["plot", "heatmap", str(ts / "roce"), "-o", str(out), "--tiers", "edge:up",
                 "--from-us", "10", "--to-us", "60", "--value", "queue_bytes"]) == 0
    assert main(["plot", "goodput", str(ts / "gse"), str(ts / "roce"), "-o",
                 str(tmp_path / "g.svg"), "--hosts", "0,1"]) == 0
    assert (tmp_path / "g.svg").read_text().startswith("<?xml")
    assert main(["plot", "fct", str(tmp_path / "rec.gse.csv"), str(tmp_path / "rec.roce.csv"),
                 "-o", str(tmp_path / "f.png"), "--log-x"]) == 0
    assert os.path.getsize(tmp_path / "f.png") > 10_000
    # errors name what is wrong
    assert main(["plot", "heatmap", str(tmp_path / "nowhere"), "-o", str(out)]) == 2
    assert main(["plot", "heatmap", str(ts / "roce"), "-o", str(out), "--tiers", "x"]) == 2
    assert main(["plot", "fct", str(rec), "-o", str(out), "--label", "a", "--label",
                 "b"]) == 2


def test_the_heatmap_shows_the_uplink_build_up_the_summary_reports():
    from gse.metrics.plots import queue_panels
    msgs = incast(N, 12, 300_000, random.Random(4)) + permutation(N, 300_000,
                                                                  random.Random(5))
    for i, m in enumerate(msgs):
        m.msg_id = i
    res = run_simulation(TOPO, msgs, "roce", default_config("roce"), 1, sample_ps=PS_PER_US)
    peaks = res.summary["peak_queue_bytes"]
    panels = {(tier, d): grid for tier, d, _, grid in queue_panels(res.timeseries)}
    for tier in ("edge", "agg", "core"):
        shown = max(int(g.max()) for (t, _), g in panels.items() if t == tier)
        assert shown == peaks[tier]
    assert int(panels[("edge", "down")].max()) == peaks["edge_down"]
    assert int(panels[("edge", "up")].max()) > 0
