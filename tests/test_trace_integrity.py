"""Recorded traces that are damaged, incomplete or say more than an even split: each is
read faithfully or refused by name, never shrunk, evened out or replayed empty in silence.

The fixtures mirror the public files the defects were found with (issue 24): param's
``dlrm_pytorch_et.tar.gz`` (eight 1.0.1 rank files in one archive, an ``all_to_allv`` whose
input splits send 1,664 of 3,392 rows to rank 3), its single-GPU ResNet traces (world 1),
and ASTRA-sim's 8-rank all-reduce with one rank's ``.et`` cut to its metadata.
"""

import io
import json
import os
import shutil
import tarfile

import pytest

from gse.cli.main import main
from gse.workloads.collectives import Collective, CollectiveError, expand
from gse.workloads.replay import replay
from gse.workloads.traces import (TraceError, load_trace, read_jsonl, write_chakra,
                                  write_jsonl, write_pytorch_et)
from gse.workloads.traces.chakra_schema import COLL, COMP, metadata_record, node_record
from test_trace_schemas import AR, et_doc, et_node, rpc_inputs, tensor, write_ranks
from topologies.fattree import fat_tree

DATA = os.path.join(os.path.dirname(__file__), "data")


# -- truncated archives ---------------------------------------------------------------------

def rank_archive(path, mode, ranks=4):
    """Every rank's PyTorch ET in one archive, as param publishes DLRM's."""
    with tarfile.open(path, mode) as tf:
        for r in range(ranks):
            doc = et_doc("1.0.3-chakra.0.0.4", [et_node("1.0.3", 5 + k, "record_param_comms",
                                                        rpc_inputs("1.0.3", "allreduce", r,
                                                                   [tensor(4096 + k)], seq=k,
                                                                   world=ranks))
                                                for k in range(40)])
            raw = json.dumps(doc).encode()
            info = tarfile.TarInfo("et/rank_%d.json" % r)
            info.size = len(raw)
            tf.addfile(info, io.BytesIO(raw))
    return path


@pytest.mark.parametrize("name, mode", [("t.tar.gz", "w:gz"), ("t.tgz", "w:gz"),
                                        ("t.tar", "w")])
def test_a_truncated_archive_is_a_located_error(tmp_path, name, mode):
    whole = rank_archive(str(tmp_path / name), mode)
    assert len(load_trace(whole).ranks()) == 4
    data = open(whole, "rb").read()
    for cut in (len(data) // 2, len(data) * 4 // 5):
        bad = tmp_path / ("cut_%d_%s" % (cut, name))
        bad.write_bytes(data[:cut])
        with pytest.raises(TraceError) as err:
            load_trace(str(bad))
        msg = str(err.value)
        assert msg.startswith(str(bad)) and "member 'et/rank_" in msg and "truncated" in msg


def test_a_plain_tar_cut_between_two_members_is_not_read_as_fewer_ranks(tmp_path):
    whole = rank_archive(str(tmp_path / "t.tar"), "w")
    with tarfile.open(whole) as tf:
        last = tf.getmembers()[-1]
    bad = tmp_path / "cut.tar"
    bad.write_bytes(open(whole, "rb").read()[:last.offset])      # 3 whole members, no end
    with pytest.raises(TraceError, match=r"cut\.tar: after member 'et/rank_2\.json': .*"
                                         r"end-of-archive blocks: it is truncated"):
        load_trace(str(bad))


def test_the_command_line_names_a_truncated_archive_without_a_traceback(tmp_path, capsys):
    whole = rank_archive(str(tmp_path / "t.tar.gz"), "w:gz")
    bad = tmp_path / "cut.tar.gz"
    data = open(whole, "rb").read()
    bad.write_bytes(data[:len(data) // 2])
    assert main(["replay", str(bad), "--k", "4", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "truncated" in err and "Traceback" not in err


# -- a rank's file cut short ----------------------------------------------------------------

def test_a_chakra_rank_cut_to_its_metadata_is_refused_not_dropped(tmp_path):
    d = tmp_path / "ar"
    shutil.copytree(os.path.join(DATA, "chakra", "all_reduce_8npus_1MB"), d)
    f = d / "all_reduce.3.et"
    f.chmod(0o644)
    f.write_bytes(metadata_record())                  # the GlobalMetadata alone, no node
    with pytest.raises(TraceError, match=r"all_reduce\.3\.et: rank 3's file holds no nodes, "
                                         r"only its metadata.*no collective"):
        load_trace(str(d))


def test_a_chakra_rank_that_stops_early_or_never_communicates_is_refused(tmp_path):
    two = [node_record(1, "ar", COLL, attrs=AR), node_record(2, "ar2", COLL, [1], attrs=AR)]
    (tmp_path / "a").mkdir()
    d = write_ranks(tmp_path / "a", {0: two, 1: two, 2: two[:1]})
    with pytest.raises(TraceError, match=r"t\.0\.et: record 3 .*rank 2's file \(.*t\.2\.et\) "
                                         r"does not hold this all_reduce, collective 2 of "
                                         r"process group '', which ranks 0\.\.1 hold; it holds 1"):
        load_trace(d)
    (tmp_path / "b").mkdir()
    d = write_ranks(tmp_path / "b", {0: two, 1: two,
                                     2: [node_record(1, "c", COMP, duration_us=3)]})
    with pytest.raises(TraceError, match=r"t\.2\.et: rank 2's file holds 1 node\(s\) but "
                                         r"no communication node"):
        load_trace(d)


def pytorch_rank(schema, rank, world, calls=2):
    return et_doc(schema, [et_node(schema, 5 + k, "record_param_comms",
                                   rpc_inputs(schema, "allreduce", rank, [tensor(64)], seq=k,
                                              world=world)) for k in range(calls)])


def test_pytorch_rank_files_with_a_gap_or_a_call_missing_are_refused(tmp_path):
    for r in (0, 2, 3):                        # 1.0.1 records no group: the files are the world
        (tmp_path / ("e_%d.json" % r)).write_text(json.dumps(pytorch_rank("1.0.1", r, 4)))
    with pytest.raises(TraceError, match="files given are ranks 0, 2, 3: rank 1 has no file"):
        load_trace(str(tmp_path))
    (tmp_path / "e_1.json").write_text(json.dumps(pytorch_rank("1.0.1", 1, 4, calls=1)))
    with pytest.raises(TraceError, match=r"rank 1's file \(.*e_1\.json\) does not hold this "
                                         r"all_reduce of its group 0\.\.3"):
        load_trace(str(tmp_path))
    doc = pytorch_rank("1.0.1", 1, 4)
    doc["nodes"] = doc["nodes"][-1:]           # operators only, no communication
    (tmp_path / "e_1.json").write_text(json.dumps(doc))
    with pytest.raises(TraceError, match=r"e_1\.json: rank 1's file holds no communication "):
        load_trace(str(tmp_path))


# -- single-GPU traces (world size 1) --------------------------------------------------------

def single_gpu(tmp_path):
    """A rank-0 trace of a one-GPU run, as param's resnet_1gpu_et: groups of one rank."""
    p = tmp_path / "resnet_1gpu_et.json"
    nodes = [et_node("1.1.0", 437, "record_param_comms",
                     rpc_inputs("1.1.0", "broadcast", 0, [tensor(53120)], 47, world=1)),
             et_node("1.1.0", 3237, "record_param_comms",
                     rpc_inputs("1.1.0", "allreduce", 0, [tensor(2049000)], 48, world=1))]
    p.write_text(json.dumps(et_doc("1.1.0-chakra.0.0.4", nodes, group_size=1)))
    return str(p)


def test_a_single_gpu_trace_says_it_moves_nothing_and_replays_at_the_world_size_asked(
        tmp_path):
    path = single_gpu(tmp_path)
    t = load_trace(path)
    assert t.ranks() == [0] and "nothing crosses the network" in t.notes[-1]
    t = load_trace(path, world_size=4)
    assert [(c.op, c.ranks, c.size) for c in t.collectives] == [
        ("broadcast", (0, 1, 2, 3), 212480), ("all_reduce", (0, 1, 2, 3), 8196000)]
    assert "data-parallel" in t.notes[0]
    r = replay(fat_tree(4), t, "gse")
    assert r.summary["collectives_done"] == 2 and r.summary["lost"] == 0
    assert [c.bytes_moved for c in r.collectives] == [3 * 212480, 6 * 8196000]   # the rings


def test_a_world_size_that_contradicts_the_recorded_groups_is_refused(tmp_path):
    p = tmp_path / "resnet_2gpu_et.json"
    p.write_text(json.dumps(pytorch_rank("1.1.0-chakra.0.0.4", 1, 2)))
    assert load_trace(str(p)).ranks() == [0, 1]
    with pytest.raises(TraceError, match=r"the world size 4 contradicts the trace: process "
                                         r"group '0' has ranks 0\.\.1"):
        load_trace(str(p), world_size=4)
    with pytest.raises(TraceError, match="not below the world size 1"):
        load_trace(str(p), world_size=1)


def test_the_command_line_says_when_a_replay_moves_no_data(tmp_path, capsys):
    path = single_gpu(tmp_path)
    assert main(["replay", path, "--k", "4"]) == 0
    out = capsys.readouterr()
    assert "moved no data" in out.err and "--world-size" in out.err
    assert main(["replay", path, "--k", "4", "--world-size", "4", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


# -- uneven all-to-all (alltoallv) ----------------------------------------------------------

ROWS = [96, 224, 288, 1664, 592, 96, 192, 240]          # DLRM's input splits, in rows


def dlrm_like(tmp_path, ranks=8, out_of=None):
    """Every rank's 1.0.1 file: an all_to_allv of 3,392 float32 rows whose input splits
    send ROWS[j] rows to rank j, and output splits receiving ROWS[r] from every rank."""
    total = sum(ROWS)
    for r in range(ranks):
        out = [ROWS[r]] * 8 if out_of is None else out_of(r)
        inputs = [tensor(total), 150, 94594108284448, r, "all_to_allv", ROWS, out]
        node = et_node("1.0.1", 1103, "record_param_comms", inputs,
                       outputs=[tensor(sum(out), tid=9)])
        doc = et_doc("1.0.1", [node])
        (tmp_path / ("dlrm_eg_%d.json" % r)).write_text(json.dumps(doc))
    return str(tmp_path)


def test_alltoallv_replays_the_recorded_splits(tmp_path):
    t = load_trace(dlrm_like(tmp_path))
    (c,) = t.collectives
    assert t.notes == [] and c.size == sum(ROWS) * 4
    assert c.splits == tuple(tuple(v * 4 for v in ROWS) for _ in range(8))
    plan = expand(c)
    into = [0] * 8
    for d, size in zip(plan.dst, plan.size):
        into[d] += size
    assert into[3] == 7 * 1664 * 4                    # 3.9x the even share, 7 x 1,696 B
    assert into[0] == into[5] == 7 * 96 * 4
    r = replay(fat_tree(4), t, "gse")
    assert r.summary["lost"] == 0 and r.collectives[0].bytes_moved == plan.bytes_sent()
    got = [0] * 8
    for m in r.records:
        got[m.dst] += m.size
    assert got == into


def test_alltoallv_output_splits_must_agree_with_the_senders(tmp_path):
    dlrm_like(tmp_path, out_of=lambda r: [ROWS[r]] * 7 + [ROWS[r] + (r == 2)])
    with pytest.raises(TraceError, match=r"dlrm_eg_2\.json: nodes\[0\] .*rank 2's all-to-all "
                                         r"receives 1156 bytes from rank 7"):
        load_trace(str(tmp_path))


def test_alltoallv_of_one_rank_file_takes_the_receivers_splits_from_it(tmp_path):
    dlrm_like(tmp_path, ranks=1)
    t = load_trace(str(tmp_path / "dlrm_eg_0.json"), world_size=8)
    (c,) = t.collectives
    assert c.splits[0] == tuple(v * 4 for v in ROWS)         # rank 0's own row
    assert [row[0] for row in c.splits] == [96 * 4] * 8      # its output splits: the column
    assert "is not recorded (no file)" in t.notes[0]


def test_uneven_all_to_all_round_trips_through_the_writers(tmp_path):
    splits = [[0, 40, 8, 4096], [12, 0, 8, 4], [4, 4, 4, 4], [400, 0, 0, 8]]
    c = Collective(1, "all_to_all", range(4), 4144, splits=splits, dtype="float32")
    assert c.largest_flow() == 4096 and c.as_dict()["splits"] == splits
    back = load_trace(write_pytorch_et(str(tmp_path / "et"), [c])).collectives
    assert back == [c]
    write_jsonl(str(tmp_path / "t.jsonl"), [c])
    assert read_jsonl(str(tmp_path / "t.jsonl")).collectives == [c]
    with pytest.raises(ValueError, match="uneven all-to-all cannot be written to Chakra"):
        write_chakra(str(tmp_path / "c"), [c])
    with pytest.raises(CollectiveError, match="largest row of splits"):
        Collective(1, "all_to_all", range(4), 100, splits=splits)
    with pytest.raises(CollectiveError, match="splits are for all_to_all"):
        Collective(1, "all_reduce", range(2), 8, splits=[[4, 4], [4, 4]])
