"""The command line end to end: options, JSON summary schema, records, .cm files, errors."""

import csv
import json

import pytest

from gse.cli.main import main

KEYS = {"messages", "delivered", "lost", "fct_us", "slowdown", "goodput_gbps", "drops",
        "trims", "retransmits", "ecn_marks", "peak_queue_bytes", "base_rtt_us",
        "sim_time_us", "events", "wall_s"}


def test_sim_writes_summary_and_records(tmp_path, capsys):
    out = tmp_path / "s.json"
    rec = tmp_path / "r.csv"
    rc = main(["sim", "--k", "4", "--traffic", "incast", "--senders", "5", "--size", "300000",
               "--seed", "3", "--json", str(out), "--records", str(rec)])
    assert rc == 0
    s = json.loads(out.read_text())
    assert KEYS <= set(s)
    assert set(s["fct_us"]) >= {"p50", "p99", "p999", "max"}
    assert set(s["slowdown"]) >= {"p50", "p99", "max"}
    assert set(s["goodput_gbps"]) >= {"p50", "min"}
    assert {"max", "edge", "agg", "core"} <= set(s["peak_queue_bytes"])
    assert s["messages"] == s["delivered"] == 5 and s["lost"] == 0
    rows = list(csv.DictReader(rec.open()))
    assert len(rows) == 5 and all(float(r["slowdown"]) >= 1.0 for r in rows)
    assert "FCT us" in capsys.readouterr().out


def test_traffic_file_round_trip_through_cli(tmp_path):
    cm = tmp_path / "t.cm"
    assert main(["traffic", "--k", "4", "--traffic", "permutation", "--size", "100000",
                 "--out", str(cm)]) == 0
    assert cm.read_text().startswith("Nodes 16")
    out = tmp_path / "s.json"
    assert main(["sim", "--k", "4", "--traffic-file", str(cm), "--json", str(out),
                 "--quiet"]) == 0
    assert json.loads(out.read_text())["delivered"] == 16


def test_bad_traffic_file_names_the_line(tmp_path, capsys):
    cm = tmp_path / "bad.cm"
    cm.write_text("Nodes 16\nConnections 1\n0->3 id 1 start 0 size 100 trigger 4\n")
    assert main(["sim", "--k", "4", "--traffic-file", str(cm)]) == 2
    err = capsys.readouterr().err
    assert "bad.cm:3:" in err and "trigger" in err


def test_bad_parameters_are_refused_clearly(capsys):
    assert main(["sim", "--k", "5"]) == 2
    assert "k" in capsys.readouterr().err
    assert main(["sim", "--k", "4", "--set", "policy=lifo"]) == 2
    assert "policy" in capsys.readouterr().err
    assert main(["sim", "--k", "4", "--set", "nonsense=1"]) == 2
    assert "unknown GSE parameter" in capsys.readouterr().err


def test_version(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    assert "gse" in capsys.readouterr().out


def test_baseline_profile_switch(tmp_path, capsys):
    """--baseline sets the RoCE profile; compare says which it ran, summaries record it."""
    out = tmp_path / "cmp.json"
    assert main(["compare", "--k", "4", "--traffic", "incast", "--senders", "3", "--size",
                 "100000", "--protocols", "gse,roce", "--baseline", "htsim", "--json",
                 str(out)]) == 0
    text = capsys.readouterr().out
    assert "RoCE baseline: htsim (htsim's RoCE model" in text
    summaries = json.loads(out.read_text())
    assert summaries["roce"]["baseline"] == "htsim" and "baseline" not in summaries["gse"]
    assert summaries["roce"]["config"]["mtu"] == 4150
    assert summaries["roce"]["config"]["pfc_model"] == "htsim"
    out = tmp_path / "sim.json"
    assert main(["sim", "--k", "4", "--traffic", "incast", "--senders", "3", "--size",
                 "100000", "--protocol", "roce", "--set", "mtu=2000", "--json", str(out),
                 "--quiet"]) == 0
    s = json.loads(out.read_text())
    assert s["baseline"] == "deployed" and s["config"]["mtu"] == 2000
    assert s["config"]["dcqcn"] is True
    with pytest.raises(SystemExit):          # argparse: not one of the profiles
        main(["sim", "--k", "4", "--protocol", "roce", "--baseline", "ns3"])


@pytest.mark.parametrize("module", ["gse", "gse.cli.main"])
def test_process_entry_writes_complete_outputs(tmp_path, module):
    """``python -m gse`` and ``python -m gse.cli.main`` run ``entry``, which freezes the
    objects left before the interpreter's exit (no final garbage collection): the summary,
    the records and stdout are whole, the same as ``main`` writes in process."""
    import os
    import subprocess
    import sys
    args = ["sim", "--k", "4", "--traffic", "incast", "--senders", "5", "--size", "300000",
            "--seed", "3"]
    assert main(args + ["--quiet", "--json", str(tmp_path / "in.json"),
                        "--records", str(tmp_path / "in.csv")]) == 0
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
        + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    proc = subprocess.run([sys.executable, "-m", module] + args
                          + ["--json", str(tmp_path / "out.json"),
                             "--records", str(tmp_path / "out.csv")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "FCT us" in proc.stdout and proc.stdout.endswith("\n")
    assert (tmp_path / "out.csv").read_bytes() == (tmp_path / "in.csv").read_bytes()
    ours, ref = (json.loads((tmp_path / n).read_text()) for n in ("out.json", "in.json"))
    for s in (ours, ref):
        s.pop("wall_s", None)
        s.pop("events_per_s", None)
    assert KEYS - {"wall_s"} <= set(ours) and ours == ref
