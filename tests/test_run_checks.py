"""Configurations and options that used to be accepted and fail later (or never): each is
refused at once with an error naming what and where (issue 24, item 6)."""

import json

import pytest

from gse.cli.main import main
from gse.config import ConfigError
from gse.runtimes.udp.config import (check_node_config, loopback_addresses, node_configs,
                                     write_node_configs)
from topologies.fattree import fat_tree


def test_agent_configs_refuse_port_zero(tmp_path, capsys):
    assert main(["agent-configs", "--k", "4", "--out-dir", str(tmp_path), "--port", "0"]) == 2
    assert "--port must be a UDP port 1..65535" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []                  # nothing written


def test_a_peer_address_with_port_zero_is_refused():
    conf = node_configs(fat_tree(4), [], address_of=loopback_addresses(fat_tree(4)))[0]
    conf["ports"][0]["peer_addr"] = ["127.77.0.17", 0]
    with pytest.raises(ConfigError, match=r"h0.json \(node 'h0'\) port 0 field 'peer_addr'"
                                          r".*port 1\.\.65535"):
        check_node_config(conf, "h0.json")
    conf["bind"] = ["127.77.0.1", 0]                      # binding: the kernel's choice
    conf["ports"][0]["peer_addr"] = ["127.77.0.17", 47000]
    assert check_node_config(conf, "h0.json")


def test_one_process_refuses_the_same_node_twice(tmp_path, capsys):
    topo = fat_tree(4)
    confs = node_configs(topo, [], address_of=loopback_addresses(topo),
                         output_dir=str(tmp_path))
    paths = write_node_configs(confs, str(tmp_path / "conf"))
    twin = tmp_path / "twin.json"
    twin.write_text(json.dumps(dict(confs[0], bind=["127.77.0.99", 47000])))
    for second in (paths[0], str(twin)):
        assert main(["agent", "--config", paths[0], "--config", second]) == 2
        err = capsys.readouterr().err
        assert "both configure node 0 in one process" in err and paths[0] in err
    other = dict(confs[1], output=dict(confs[0]["output"]))   # h1 writing h0's files
    (tmp_path / "other.json").write_text(json.dumps(other))
    assert main(["agent", "--config", paths[0], "--config", str(tmp_path / "other.json")]) == 2
    assert "both configure output file" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["sim"], ["compare"], ["run", "--runtime", "udp"]])
def test_negative_times_are_refused(command, capsys):
    assert main(command + ["--k", "4", "--until-us", "-1"]) == 2
    assert "--until-us must be a time >= 0" in capsys.readouterr().err
    assert main(command + ["--k", "4", "--stall-us", "-5"]) == 2
    assert "--stall-us must be a time >= 0" in capsys.readouterr().err


def test_replay_refuses_a_negative_until(tmp_path, capsys):
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"id": 1, "op": "all_reduce", "ranks": "0-3",
                                 "bytes": 1000}) + "\n")
    assert main(["replay", str(trace), "--k", "4", "--until-us", "-1"]) == 2
    assert "--until-us must be a time >= 0" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--json", "--records"])
def test_an_output_that_is_a_directory_is_refused(tmp_path, option, capsys):
    assert main(["sim", "--k", "4", "--size", "10000", option, str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "%s %s: is a directory" % (option, tmp_path) in err and "Errno" not in err


def test_a_fail_file_error_names_the_file_without_an_empty_entry(tmp_path, capsys):
    missing = tmp_path / "none.txt"
    assert main(["sim", "--k", "4", "--fail-file", str(missing)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("%s: cannot read: No such file or directory" % missing), err
    bad = tmp_path / "bad.txt"
    bad.write_text("# a comment\nlink:nosuch@1us\n")
    assert main(["sim", "--k", "4", "--fail-file", str(bad)]) == 2
    assert "%s:2: link target 'nosuch'" % bad in capsys.readouterr().err
