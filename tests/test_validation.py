"""Bad input is refused at start-up with one error naming the file and the field (issue 19,
item 6): fault rates that leave nothing intact, node configurations that used to crash or
wait out the whole timeout, output directories that do not exist, and traces whose
records cannot be replayed as written.
"""

import json
import math
import os
import shutil

import pytest

from gse.cli.main import main
from gse.config import ConfigError, GseConfig, RoceConfig
from gse.runtimes.udp.agent_process import main as agent_main
from gse.runtimes.udp.config import (check_node_config, loopback_addresses, node_configs,
                                     write_node_configs)
from gse.workloads.collectives import Collective, CollectiveError
from gse.workloads.replay import replay
from gse.workloads.traces import TraceError, load_trace
from gse.workloads.traffic import Message
from topologies.fattree import fat_tree

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CHAKRA_8 = os.path.join(HERE, "data", "chakra", "all_reduce_8npus_1MB")


# -- fault rates -----------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["sim", "run"])
def test_loss_plus_corruption_of_one_or_more_is_refused_before_running(command, capsys,
                                                                       monkeypatch):
    """Refused before anything runs (not run until a timeout): what would run the traffic
    fails the test if it is reached."""
    from gse.runtimes.sim import run as sim_run
    from gse.runtimes.udp import network

    def ran(*args, **kwargs):
        raise AssertionError("the run started")
    monkeypatch.setattr(sim_run, "run_observed", ran)
    monkeypatch.setattr(network.UdpNetwork, "open", ran)
    code = main([command, "--k", "4", "--loss", "0.6", "--corrupt", "0.5", "--quiet",
                 "--size", "100000"])
    err = capsys.readouterr().err
    assert code == 2 and "--loss + --corrupt must be below 1" in err, err
    assert "the run started" not in err


def test_fault_rates_are_checked_by_every_runtime():
    from gse.runtimes.sim.run import run_simulation
    msgs = [Message(1, 0, 15, 1000)]
    with pytest.raises(ConfigError, match="loss"):
        run_simulation(fat_tree(4), msgs, loss_rate=0.5, corrupt_rate=0.5)
    with pytest.raises(ConfigError, match="loss"):
        node_configs(fat_tree(4), msgs, loss_rate=0.7, corrupt_rate=0.3)


@pytest.mark.parametrize("option", ["--json", "--records"])
def test_a_missing_output_directory_is_refused_before_running(option, tmp_path, capsys):
    path = str(tmp_path / "missing" / "out.json")
    code = main(["sim", "--k", "4", "--size", "10000", "--quiet", option, path])
    assert code == 2 and option in capsys.readouterr().err


# -- gse agent configurations ----------------------------------------------------------------

def host_conf(**run):
    topo = fat_tree(4)
    msgs = [Message(1, 0, 15, 10_000), Message(2, 0, 3, 20_000)]
    return node_configs(topo, msgs, address_of=loopback_addresses(topo), run=run or None)[0]


def switch_conf():
    topo = fat_tree(4)
    return node_configs(topo, [], "roce", address_of=loopback_addresses(topo))[16]


CASES = [
    (lambda c: c["ports"][0].update(gbps=math.inf), "'gbps'"),
    (lambda c: c["ports"][0].update(gbps=float("nan")), "'gbps'"),
    (lambda c: c["ports"][0].update(gbps=0.0000001), "'gbps'"),
    (lambda c: c["ports"][0].update(loss=0.7, corrupt=0.3), "'loss' + 'corrupt'"),
    (lambda c: c["run"].update(timeout_s="soon"), "'timeout_s'"),
    (lambda c: c["run"].update(linger_s=-1), "'linger_s'"),
    (lambda c: c["run"].update(loop="tokio"), "'loop'"),
    (lambda c: c["run"].update(precise_timers="yes"), "'precise_timers'"),
    (lambda c: c["messages"][0].update(size=-5), "'size'"),
    (lambda c: c["messages"][0].update(size=2 ** 40), "'size'"),
    (lambda c: c["messages"][0].update(size=0), "'size'"),
    (lambda c: c["messages"][0].update(dst=0), "'dst' is this host itself"),
    (lambda c: c["messages"][1].update(msg_id=1), "'msg_id' 1 is also message 0's"),
    (lambda c: c["messages"][0].update(dst=999), "'dst'"),
    (lambda c: c["messages"][0].update(msg_id=2 ** 32), "'msg_id'"),
    (lambda c: c.update(node=-1), "'node'"),
    (lambda c: c.update(node=20), "'node'"),
    (lambda c: c["expect"].append({"src": 0, "msg_id": 5, "size": 10}), "'src'"),
    (lambda c: c["agent"]["params"].update(rto_ps="soon"), "rto_ps"),
    (lambda c: c["agent"]["params"].update(rto_ps=[1]), "rto_ps"),
    (lambda c: c["agent"]["params"].update(grant_rate_fraction=math.inf), "grant_rate_fraction"),
    (lambda c: c["agent"]["params"].update(trim=3), "trim"),
    (lambda c: c["agent"].update(protocol="tcp"), "protocol"),
    # a fabric-mode host takes fabric parameters: a GSE endpoint field is named
    (lambda c: c["agent"].update(protocol="gse-fabric"), "unsched_bytes"),
    (lambda c: c["queue"].update(queue_bytes=-1), "'queue'"),
    (lambda c: c["output"].update(counters=5), "'output.counters'"),
]


@pytest.mark.parametrize("mutate, field", CASES)
def test_host_config_errors_name_the_file_and_field(mutate, field):
    conf = json.loads(json.dumps(host_conf()))
    mutate(conf)
    with pytest.raises(ConfigError) as err:
        check_node_config(conf, "h0.json")
    assert "h0.json" in str(err.value) and field in str(err.value), str(err.value)


@pytest.mark.parametrize("mutate, field", [
    (lambda c: c["pfc"].update(pause_quanta=0), "'pfc'"),
    (lambda c: c["pfc"].update(colour="red"), "'pfc'"),
    (lambda c: c.update(forwarding="random"), "'forwarding'"),
    (lambda c: c.update(salt=-3), "'salt'"),
    (lambda c: c["next_hops"].pop(), "'next_hops'"),
    (lambda c: c["ports"][1].update(delay_ps=-1), "'delay_ps'"),
])
def test_switch_config_errors_name_the_file_and_field(mutate, field):
    conf = json.loads(json.dumps(switch_conf()))
    mutate(conf)
    with pytest.raises(ConfigError) as err:
        check_node_config(conf, "edge0_0.json")
    assert "edge0_0.json" in str(err.value) and field in str(err.value), str(err.value)


def test_generated_configurations_pass_the_checks():
    for protocol in ("gse", "roce"):
        topo = fat_tree(4)
        msgs = [Message(i, i, (i + 5) % 16, 1000 + i) for i in range(16)]
        for conf in node_configs(topo, msgs, protocol, address_of=loopback_addresses(topo)):
            assert check_node_config(json.loads(json.dumps(conf))) is not None


def test_agent_with_a_missing_output_directory_fails_at_start_up(tmp_path, capsys,
                                                                  monkeypatch):
    conf = host_conf(timeout_s=60.0)
    conf["output"]["counters"] = str(tmp_path / "gone" / "h0.counters.json")
    path = write_node_configs([conf], str(tmp_path))[0]
    from gse.runtimes.udp import agent_process

    def ran(*args, **kwargs):              # refused at start-up, not after the 60 s run
        raise AssertionError("the agent started")
    monkeypatch.setattr(agent_process, "run_agent", ran)
    assert agent_main(["--config", path]) == 2
    err = capsys.readouterr().err
    assert "h0.json" in err and "'output.counters'" in err and "does not exist" in err


def test_agent_with_an_infinite_link_rate_exits_with_an_error_not_a_traceback(tmp_path, capsys):
    conf = host_conf()
    conf["ports"][0]["gbps"] = math.inf
    path = str(tmp_path / "h0.json")
    with open(path, "w") as f:
        json.dump(conf, f)                     # writes Infinity, as the file had
    assert agent_main(["--config", path]) == 2
    err = capsys.readouterr().err
    assert "h0.json" in err and "'gbps'" in err and "Traceback" not in err


def test_protocol_parameters_are_type_checked():
    with pytest.raises(ConfigError, match="rto_ps must be an integer"):
        GseConfig(rto_ps=1.5)
    with pytest.raises(ConfigError, match="dcqcn_g must be a finite number"):
        RoceConfig(dcqcn_g=math.nan)
    assert RoceConfig(dcqcn=0).dcqcn is False and GseConfig(grant_rate_fraction=1).validate() \
        is None


# -- traces ----------------------------------------------------------------------------------

def write_trace(tmp_path, *records):
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ({"gse_trace": 1},) + records))
    return str(path)


@pytest.mark.parametrize("record, problem", [
    ({"id": 1, "op": "all_reduce", "ranks": "0-7", "bytes": 2 ** 40}, "above a message's"),
    ({"id": 1, "op": "send", "ranks": [0, 1], "bytes": 2 ** 32}, "above a message's"),
    ({"id": 1, "op": "all_reduce", "ranks": "0-5", "bytes": 10 ** 6, "algo": "hd"},
     "power-of-two"),
    ({"id": 1, "op": "all_reduce", "ranks": "0-4000000000", "bytes": 10 ** 6}, "rank"),
])
def test_jsonl_records_that_cannot_be_replayed_name_the_file_and_line(tmp_path, record,
                                                                      problem):
    ok = {"id": 0, "op": "all_reduce", "ranks": "0-7", "bytes": 1000}
    path = write_trace(tmp_path, ok, record)
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert str(err.value).startswith(path + ": line 3") and problem in str(err.value)


def test_ranks_beyond_the_fabric_name_the_trace_file_and_line(tmp_path, capsys):
    path = write_trace(tmp_path, {"id": 1, "op": "all_reduce", "ranks": "0-7", "bytes": 1000},
                       {"id": 2, "op": "all_reduce", "ranks": "0-99", "bytes": 1000})
    with pytest.raises(ValueError) as err:
        replay(fat_tree(4), load_trace(path))
    assert "%s: line 3: collective 2: rank 16 maps to host 16" % path in str(err.value)
    assert main(["replay", path, "--k", "4", "--quiet"]) == 2
    assert path + ": line 3" in capsys.readouterr().err


def test_an_algorithm_override_that_cannot_apply_names_the_record(tmp_path, capsys):
    path = write_trace(tmp_path, {"id": 4, "op": "all_reduce", "ranks": "0-5", "bytes": 1000})
    assert main(["replay", path, "--k", "4", "--quiet", "--algorithm", "all_reduce=hd"]) == 2
    err = capsys.readouterr().err
    assert path + ": line 2: collective 4: halving-doubling" in err


def chakra_dir(tmp_path, ranks, src=CHAKRA_8, name="all_reduce"):
    d = tmp_path / "trace"
    d.mkdir()
    for r in ranks:
        shutil.copy(os.path.join(src, "%s.%d.et" % (name, min(r, 7))),
                    str(d / ("%s.%d.et" % (name, r))))
    return str(d)


@pytest.mark.parametrize("ranks, problem", [
    (range(7), "says 8 NPUs but 7 rank files"),
    (range(9), "says 8 NPUs but 9 rank files"),
    ([0, 1, 2, 4, 5, 6, 7], "rank 3 has none"),
])
def test_a_chakra_trace_with_a_missing_or_extra_rank_file_is_refused(tmp_path, ranks, problem):
    assert len(load_trace(CHAKRA_8).collectives[0].ranks) == 8      # the whole set loads
    with pytest.raises(TraceError) as err:
        load_trace(chakra_dir(tmp_path, ranks))
    assert problem in str(err.value), str(err.value)


def test_a_chakra_group_member_without_a_file_is_refused(tmp_path):
    from gse.workloads.traces import write_chakra
    prefix = str(tmp_path / "pg")
    write_chakra(prefix, [Collective(1, "all_reduce", [0, 1, 2, 3], 4096),
                          Collective(2, "all_reduce", [2, 0, 3, 1], 4096, after=[1])])
    files = sorted(str(tmp_path / f) for f in os.listdir(str(tmp_path)))
    assert len(load_trace(files).collectives) == 2
    os.remove(files[-1])                                           # rank 3's file
    with pytest.raises(TraceError, match="rank 3"):
        load_trace(files[:-1])
    with pytest.raises(CollectiveError, match="power-of-two"):
        Collective(1, "all_reduce", [0, 1, 2], 4096, algo="hd")
