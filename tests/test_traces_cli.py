"""``gse replay`` on the command line: summaries, comparison, errors that name the file."""

import json
import os

import pytest

from gse.cli.main import main
from gse.protocols import PROTOCOLS

DATA = os.path.join(os.path.dirname(__file__), "data")
RAIL = ["--topology", "spine-leaf-rail", "--servers", "2", "--nics-per-server", "8"]


def test_replay_chakra_sample_writes_a_json_summary(tmp_path, capsys):
    out = tmp_path / "s.json"
    rec = tmp_path / "r.csv"
    rc = main(["replay", os.path.join(DATA, "chakra", "all_reduce_8npus_1MB")] + RAIL
              + ["--json", str(out), "--records", str(rec)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "all_reduce/ring" in text and "busbw Gb/s" in text and "trace: chakra" in text
    s = json.loads(out.read_text())
    (c,) = s["collectives"]
    assert c["done"] and c["ranks"] == 8 and c["bytes"] == 1 << 20 and c["flows"] == 112
    assert c["busbw_gbps"] == pytest.approx(c["algbw_gbps"] * 2 * 7 / 8, rel=1e-3)
    for key in ("fct_us", "slowdown", "drops", "trims", "peak_queue_bytes", "base_rtt_us"):
        assert key in s                              # the network metrics of gse sim
    assert s["trace"]["format"] == "chakra" and s["topology"]["kind"] == "spine-leaf-rail"
    assert s["runtime"] == "sim" and s["lost"] == 0
    assert len(rec.read_text().splitlines()) == 113


def test_replay_compare_and_algorithm_override(tmp_path, capsys):
    out = tmp_path / "c.json"
    rc = main(["replay", os.path.join(DATA, "all_reduce_8npus_1MB.jsonl"), "--compare",
               "--algorithm", "all_reduce=hd", "--json", str(out)] + RAIL)
    assert rc == 0
    captured = capsys.readouterr()
    s = json.loads(out.read_text())
    if "roce" in PROTOCOLS:
        assert set(s) == set(PROTOCOLS)
        assert "roce us" in captured.out and "PFC pauses" in captured.out
    else:
        assert "not available yet" in captured.err
    for summary in s.values():
        assert summary["collectives"][0]["algo"] == "hd"


def test_replay_pytorch_trace_on_the_pod_fat_tree(capsys):
    rc = main(["replay", os.path.join(DATA, "pytorch_et", "all_to_all_16npus_1MB"),
               "--topology", "pod-fat-tree", "--pods", "2", "--groups", "1", "--servers", "4",
               "--nics-per-server", "4", "--quiet"])
    assert rc == 0


def test_replay_errors_name_the_file_and_record(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "op": "all_reduce", "ranks": "0-7", "bytes": 8}\n{"id": 2,\n')
    assert main(["replay", str(bad)] + RAIL) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "line 2" in err
    for runtime in ("udp", "mininet"):                 # offered only where it works
        with pytest.raises(SystemExit) as exit_:
            main(["replay", os.path.join(DATA, "all_reduce_8npus_1MB.jsonl"), "--runtime",
                  runtime] + RAIL)
        assert exit_.value.code == 2
        assert "invalid choice: '%s' (choose from 'sim')" % runtime in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    assert "--runtime {sim}" in capsys.readouterr().out
    assert main(["replay", os.path.join(DATA, "all_to_all_16npus_1MB.jsonl"),
                 "--topology", "spine-leaf-rail", "--servers", "1"]) == 2
    assert "hosts 0..7" in capsys.readouterr().err
