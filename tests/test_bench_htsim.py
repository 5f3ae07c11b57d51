"""experiments/bench_htsim.py: its arguments, how it reads htsim's and the project's flow
completion times (on htsim output captured in tests/data/htsim_output/), its errors for a
missing binary or matrix, and its table.  The live run against htsim itself happens only
when ``GSE_HTSIM_UEC`` (and, for RoCE, ``GSE_HTSIM_ROCE``) names a built binary."""

import json
import os
import re
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "experiments"))

import bench_htsim  # noqa: E402

DATA = os.path.join(HERE, "data", "htsim_output")


def canned(name):
    with open(os.path.join(DATA, name)) as f:
        return f.read()


def matrix_flows():
    """The 16 connections of perm_16n_16c_2MB.cm, as htsim_roce printed them."""
    flows = [(int(a), int(b), 0.0) for a, b in
             re.findall(r"^Connection (\d+)->(\d+) starting at 0 ", canned(
                 "roce_perm_16n_16c_2MB.txt"), re.M)]
    assert len(flows) == 16
    return flows


def test_arguments_and_their_defaults():
    args = bench_htsim.parse_args(["--htsim-dir", "/x"])
    assert (args.rounds, args.protocol, args.cm) == (3, "gse", list(bench_htsim.DEFAULT_CMS))
    args = bench_htsim.parse_args(["--uec", "/b", "--cm", "a.cm", "b.cm", "--rounds", "5",
                                   "--protocol", "roce", "--json", "o.json"])
    assert (args.uec, args.cm, args.rounds, args.protocol, args.json) == (
        "/b", ["a.cm", "b.cm"], 5, "roce", "o.json")
    with pytest.raises(SystemExit):
        bench_htsim.parse_args(["--rounds", "0"])
    with pytest.raises(SystemExit):
        bench_htsim.parse_args(["--protocol", "ndp"])


def test_uec_output_gives_every_flow_its_fct():
    fcts, unknown = bench_htsim.htsim_fcts(canned("uec_perm_16n_16c_2MB.txt"), matrix_flows())
    assert (len(fcts), unknown) == (16, 0)
    assert bench_htsim.fct_stats(fcts) == {"p50": 192.616, "p99": 198.726, "max": 198.726}


def test_roce_output_gives_every_flow_its_fct():
    fcts, unknown = bench_htsim.htsim_fcts(canned("roce_perm_16n_16c_2MB.txt"),
                                           matrix_flows())
    assert (len(fcts), unknown) == (16, 0)
    assert bench_htsim.fct_stats(fcts) == {"p50": 348.997, "p99": 501.192, "max": 501.192}


def test_fct_counts_from_each_flows_start_and_misses_show():
    text = canned("roce_perm_16n_16c_2MB.txt")
    flows = matrix_flows()
    late = [(s, d, 100.0 if (s, d) == (0, 8) else t) for s, d, t in flows]
    fcts, _ = bench_htsim.htsim_fcts(text, late)
    assert max(fcts) == pytest.approx(498.832)           # 0->8 finished at 501.192
    assert min(fcts) == pytest.approx(195.077)
    cut = "\n".join(line for line in text.splitlines() if not line.startswith("Flow Roce_0_8 "))
    fcts, unknown = bench_htsim.htsim_fcts(cut + "\nFlow Roce_5_6 1 finished at 9.0 total\n",
                                           flows)
    assert (len(fcts), unknown) == (15, 1)


def test_project_records_give_completed_fcts():
    text = "\n".join(json.dumps(r) for r in (
        {"msg_id": 1, "completed": True, "fct_us": 186.1},
        {"msg_id": 2, "completed": False},
        {"msg_id": 3, "completed": True, "fct_us": 185.0})) + "\n\n"
    assert bench_htsim.project_fcts(text) == [186.1, 185.0]
    with pytest.raises(bench_htsim.BenchError, match="line 2"):
        bench_htsim.project_fcts('{"completed": true}\nnot json\n')


def test_fat_tree_arity_from_nodes():
    assert [bench_htsim.fat_tree_k(n, "x") for n in (16, 128, 1024, 8192)] == [4, 8, 16, 32]
    with pytest.raises(bench_htsim.BenchError, match="x.cm: 32 nodes"):
        bench_htsim.fat_tree_k(32, "x.cm")


def test_missing_binary_or_matrix_is_named(tmp_path, capsys):
    assert bench_htsim.main(["--htsim-dir", str(tmp_path)]) == 2
    assert "htsim_uec not found" in capsys.readouterr().err
    exe = tmp_path / "htsim_roce"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert bench_htsim.main(["--roce", str(exe), "--protocol", "roce",
                             "--cm", str(tmp_path / "none.cm")]) == 2
    assert "connection matrix not found: %s" % (tmp_path / "none.cm") in capsys.readouterr().err
    assert bench_htsim.main(["--roce", str(exe), "--time", str(tmp_path / "no-time")]) == 2
    assert "GNU time not usable at %s" % (tmp_path / "no-time") in capsys.readouterr().err


def _round(i, cpu_h, cpu_p, fcts_p):
    side = {"wall_s": 2 * cpu_h, "cpu_s": cpu_h, "rss_mib": 10.0, "events": None,
            "fcts": [100.0, 200.0], "unknown": 0}
    ours = {"wall_s": 2 * cpu_p, "cpu_s": cpu_p, "rss_mib": 20.0, "events": 1000,
            "loop_s": cpu_p / 2, "fcts": fcts_p, "unknown": 0}
    return {"round": i, "load_1min": 1.0, "htsim": side, "project": ours}


def test_summary_medians_ratios_and_the_table():
    rounds = [_round(1, 1.0, 0.5, [105.0, 210.0]), _round(2, 2.0, 0.6, [105.0, 210.0]),
              _round(3, 1.5, 3.0, [105.0, 210.0])]
    row = bench_htsim.summarise("a.cm", 8, 2, rounds)
    assert row["htsim"]["cpu_s"] == 1.5 and row["project"]["cpu_s"] == 0.6
    assert row["ratio"]["cpu_s"] == pytest.approx(0.4)
    assert row["ratio"]["rss_mib"] == 2.0
    assert row["round_ratios_cpu_s"] == pytest.approx([0.3, 0.5, 2.0])
    assert row["project"]["cpu_ns_per_event"] == pytest.approx(6e5)
    assert row["ratio"]["fct_us"]["max"] == pytest.approx(1.05)
    assert row["all_finished"]
    table = bench_htsim.format_table([row])
    assert "| a.cm (k=8) | **project / htsim** | 0.40 | 0.40 | 2.00 |" in table
    assert "median 0.50 (0.30-2.00)" in table
    short = bench_htsim.summarise("a.cm", 8, 2, rounds[:2] + [_round(3, 1.0, 1.0, [105.0])])
    assert not short["all_finished"] and "NOT ALL" in bench_htsim.format_table([short])
    # htsim's CPU over the project's events (1.5 s / 1,000 events), in brackets
    assert row["htsim"]["cpu_ns_per_project_event"] == pytest.approx(1.5e6)
    assert "| a.cm (k=8) | htsim | 3.000 | 1.500 | 10.0 | - | (1500000) |" in table
    assert "against" not in table          # one matrix: no growth line


def test_growth_of_the_per_event_cost_across_matrices():
    small = bench_htsim.summarise("s.cm", 8, 2, [_round(1, 1.0, 0.5, [105.0, 210.0])])
    big = [_round(1, 40.0, 10.0, [105.0, 210.0])]
    for r in big:
        r["project"]["events"] = 4000        # 4x the events: 20x and 10x the CPU
    large = bench_htsim.summarise("l.cm", 32, 2, big)
    table = bench_htsim.format_table([small, large])
    assert ("l.cm (k=32) against s.cm (k=8), CPU per event: project 5.00x, htsim "
            "(per project event) 10.00x") in table


def _live(tmp_path, protocol, exe):
    cm = tmp_path / "perm16.cm"
    lines = ["%d->%d id %d start 0 size 2000000" % (i, (i + 5) % 16, i + 1) for i in range(16)]
    cm.write_text("Nodes 16\nConnections 16\n" + "\n".join(lines) + "\n")
    out = tmp_path / "bench.json"
    flag = "--uec" if protocol == "gse" else "--roce"
    assert bench_htsim.main([flag, exe, "--cm", str(cm), "--rounds", "1",
                             "--protocol", protocol, "--json", str(out)]) == 0
    row = json.loads(out.read_text())["rows"][0]
    assert row["all_finished"] and row["k"] == 4
    assert row["project"]["events"] > 0 and row["htsim"]["cpu_s"] > 0
    return row


@pytest.mark.skipif(not os.environ.get("GSE_HTSIM_UEC"),
                    reason="GSE_HTSIM_UEC does not name an htsim_uec binary")
def test_live_against_htsim_uec(tmp_path):
    row = _live(tmp_path, "gse", os.environ["GSE_HTSIM_UEC"])
    assert 0.9 < row["ratio"]["fct_us"]["p50"] < 1.1


@pytest.mark.skipif(not os.environ.get("GSE_HTSIM_ROCE"),
                    reason="GSE_HTSIM_ROCE does not name an htsim_roce binary")
def test_live_against_htsim_roce(tmp_path):
    _live(tmp_path, "roce", os.environ["GSE_HTSIM_ROCE"])


def test_bytecode_modes_set_the_projects_environment(monkeypatch):
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    assert "PYTHONDONTWRITEBYTECODE" not in bench_htsim.project_env("cached")
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE")
    none = bench_htsim.project_env("none")
    assert none["PYTHONDONTWRITEBYTECODE"] == "1"
    assert none["PYTHONPYCACHEPREFIX"] == bench_htsim.EMPTY_PYCACHE
    assert bench_htsim.project_env("cached")["PYTHONPATH"].split(os.pathsep)[0] == \
        bench_htsim.ROOT
    assert bench_htsim.parse_args(["--htsim-dir", "/x"]).bytecode == "cached"
    assert bench_htsim.parse_args(["--bytecode", "none"]).bytecode == "none"
    with pytest.raises(SystemExit):
        bench_htsim.parse_args(["--bytecode", "warm"])
