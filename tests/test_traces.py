"""Trace formats: the project's JSONL, Chakra .et (real ASTRA-sim samples) and PyTorch ET.

The Chakra samples in tests/data/chakra are MLCommons Chakra traces from ASTRA-sim's
public examples (MIT licence, tests/data/chakra/LICENSE).
"""

import json
import os
import shutil

import pytest

from gse.workloads.collectives import Collective
from gse.workloads.traces import (TraceError, detect_format, load_trace, read_chakra, read_jsonl,
                                  write_chakra, write_jsonl, write_pytorch_et)
from gse.workloads.traces import protowire as pw
from gse.workloads.traces.chakra import COLL, COMP, RECV, SEND, metadata_record, node_record
from gse.workloads.traces.program import COMM
from gse.workloads.traces.samples import SAMPLES

HERE = os.path.dirname(__file__)
DATA = os.path.join(HERE, "data")
ROOT = os.path.dirname(HERE)
MiB = 1 << 20


def data(*parts):
    return os.path.join(DATA, *parts)


def flatten(trace):
    """The collective-level view of a trace's programs, as the project format says it:
    {collective id: ({earlier collective: lag ps}, start ps)}, the lag being the longest
    chain of compute between the two on any rank, the start the longest chain of compute
    before it that no communication precedes."""
    out = {}
    for prog in trace.programs.values():
        reach = []                                   # per op: ({collective: lag}, base)
        for op in prog.ops:
            after, base = {}, (0 if not op.deps else None)
            for d in op.deps:
                dep = prog.ops[d]
                if dep.kind == COMM:
                    after[dep.coll] = max(after.get(dep.coll, 0), 0)
                    continue
                d_after, d_base = reach[d]
                for c, lag in d_after.items():
                    after[c] = max(after.get(c, -1), lag + dep.dur_ps)
                if d_base is not None:
                    base = max(base or 0, d_base + dep.dur_ps)
            if op.kind == COMM:
                a, st = out.setdefault(op.coll, ({}, 0))
                for c, lag in after.items():
                    a[c] = max(a.get(c, 0), lag)
                out[op.coll] = (a, max(st, base or 0))
                reach.append(({}, None))
            else:
                reach.append((after, base))
    return out


def collective_view(colls):
    """The same view of project-format collectives."""
    return {c.id: (dict(c.after), c.start_ps) for c in colls}


def shapes(colls):
    return [(c.id, c.op, c.ranks, c.size, c.algo, c.root if c.op in ("broadcast", "reduce",
             "gather", "scatter") else None) for c in colls]


# -- the real Chakra samples ----------------------------------------------------------------

@pytest.mark.parametrize("name, op, n", [("all_reduce_8npus_1MB", "all_reduce", 8),
                                         ("all_to_all_16npus_1MB", "all_to_all", 16)])
def test_chakra_samples_decode(name, op, n):
    t = load_trace(data("chakra", name))
    assert t.format == "chakra" and len(t.sources) == n
    (c,) = t.collectives
    assert (c.op, c.ranks, c.size, c.after, c.start_ps) == (op, tuple(range(n)), MiB, (), 0)
    assert t.skipped == {} and t.records == n


@pytest.mark.parametrize("name", ["all_reduce_8npus_1MB", "all_to_all_16npus_1MB"])
def test_chakra_pytorch_and_project_format_agree(name):
    """Acceptance: Chakra .et and PyTorch ET JSON decode into the same collectives as the
    equivalent project-format trace."""
    project = load_trace(data(name + ".jsonl"))
    chakra = load_trace(data("chakra", name))
    pytorch = load_trace(data("pytorch_et", name))
    assert pytorch.format == "pytorch" and project.format == "jsonl"
    assert chakra.collectives == project.collectives
    assert pytorch.collectives == project.collectives
    assert pytorch.skipped["nccl kernel nodes"] == len(pytorch.sources)   # counted, not read


def test_generated_samples_are_current_and_agree_across_formats():
    for name, make in SAMPLES.items():
        project = load_trace(os.path.join(ROOT, "traces", name + ".jsonl"))
        chakra = load_trace(os.path.join(ROOT, "traces", "chakra", name))
        assert project.collectives == make(), name
        assert shapes(chakra.collectives) == shapes(project.collectives), name
        assert flatten(chakra) == collective_view(project.collectives), name


def test_chakra_round_trip_of_everything_it_can_say(tmp_path):
    colls = [
        Collective(1, "all_reduce", range(8), 3 * MiB + 5, start_ps=7_000_000),
        Collective(2, "all_gather", [0, 2, 4, 6], MiB, after=[(1, 12_000_000)]),
        Collective(3, "broadcast", [5, 1, 3, 7], 100_000, algo="tree", root=3,
                   after=[(1, 0)]),
        Collective(4, "send", [7, 1], 4096, after=[(3, 2_000_000)]),
        Collective(5, "all_reduce", range(8), 1000, algo="hd", after=[(1, 0)]),
        Collective(6, "reduce_scatter", [1, 3, 5, 7], 4000, after=[(3, 0)]),
    ]
    paths = write_chakra(str(tmp_path / "t"), colls)
    assert len(paths) == 8
    t = read_chakra(paths)
    assert shapes(t.collectives) == shapes(colls)
    assert flatten(t) == collective_view(colls)
    comp_ops = 8 + 4 + 2                             # a start on 8 ranks, lags on 4 and 2
    assert t.summary()["programs"]["ops"] == {"compute": comp_ops, "comm": 8 + 4 + 4 + 2 + 8
                                              + 4}
    assert t.skipped == {} and t.ignored == {}


def test_chakra_lags_follow_the_longest_compute_chain(tmp_path):
    """Compute nodes become the ranks' compute; with unlimited parallelism their chains are
    the lags and starts of the project format; memory nodes are skipped and counted."""
    for rank in (0, 1):
        nodes = [metadata_record(),
                 node_record(10, "fwd", COMP, [], 10),
                 node_record(11, "bwd", COMP, [10], 5),
                 node_record(1, "ar1", COLL, [11], 0, {"comm_type": 0, "comm_size": 1000}),
                 node_record(12, "opt", COMP, [1], 7),
                 node_record(13, "io", COMP, [], 30),
                 node_record(14, "mem", 2, [1], 2),
                 node_record(2, "ar2", COLL, [12, 13], 0, {"comm_type": 0, "comm_size": 2000},
                             ctrl_deps=[1, 14])]
        (tmp_path / ("x.%d.et" % rank)).write_bytes(b"".join(nodes))
    t = load_trace(str(tmp_path))
    assert flatten(t) == {1: ({}, 15_000_000), 2: ({1: 7_000_000}, 30_000_000)}
    assert t.skipped == {"MEM_LOAD_NODE": 2}
    assert t.summary()["programs"]["compute_us_max_rank"] == {"gpu": 52.0}


def test_chakra_send_recv_are_matched(tmp_path):
    (tmp_path / "p.0.et").write_bytes(metadata_record() + node_record(
        1, "s", SEND, attrs={"comm_dst": 1, "comm_size": 500, "comm_tag": 9}))
    (tmp_path / "p.1.et").write_bytes(metadata_record() + node_record(
        7, "r", RECV, attrs={"comm_src": 0, "comm_size": 500, "comm_tag": 9}))
    (c,) = load_trace(str(tmp_path)).collectives
    assert (c.op, c.ranks, c.size) == ("send", (0, 1), 500)


def test_pytorch_round_trip_and_spmd_single_file(tmp_path):
    colls = [Collective(1, "all_reduce", range(8), 4 * MiB, dtype="float32"),
             Collective(2, "all_to_all", [0, 2, 4, 6], MiB, dtype="bfloat16"),
             Collective(3, "all_reduce", range(8), MiB, after=[(1, 0)], dtype="float32"),
             Collective(4, "all_gather", [0, 2, 4, 6], 8000, after=[(2, 0)], dtype="float16"),
             Collective(5, "send", [2, 3], 64, dtype="uint8")]
    paths = write_pytorch_et(str(tmp_path / "et"), colls)
    t = load_trace(paths)
    assert t.collectives == colls
    assert [c.dtype for c in t.collectives] == [c.dtype for c in colls]
    only = load_trace([p for p in paths if p.endswith(".0.json")])   # rank 0's file alone
    assert [(c.op, c.ranks, c.size) for c in only.collectives] == \
        [(c.op, c.ranks, c.size) for c in colls if 0 in c.ranks]


def test_pytorch_observer_style_file(tmp_path):
    """A trace as the observer writes it: process groups from the init node, operators,
    wait calls and kernels skipped, all-gather sized by its output."""
    pg = [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
           "pg_size": 4, "ranks": [0, 1, 2, 3]}]

    def rpc(i, name, dtype, n_in, n_out, pg_name="0"):
        attrs = [{"name": "rf_id", "type": "uint64", "value": i},
                 {"name": "collective_name", "type": "string", "value": name},
                 {"name": "dtype", "type": "string", "value": dtype},
                 {"name": "in_msg_nelems", "type": "uint64", "value": n_in},
                 {"name": "out_msg_nelems", "type": "uint64", "value": n_out},
                 {"name": "pg_name", "type": "string", "value": pg_name},
                 {"name": "pg_size", "type": "uint64", "value": 4}]
        return {"id": i, "name": "record_param_comms", "ctrl_deps": i - 1, "attrs": attrs,
                "inputs": {"values": [], "shapes": [], "types": []},
                "outputs": {"values": [], "shapes": [], "types": []}}

    for rank in range(4):
        doc = {"schema": "1.0.3-chakra.0.0.4", "pid": 1, "time": "t", "start_ts": 0,
               "nodes": [
                   {"id": 2, "name": "## process_group:init ##", "ctrl_deps": 1,
                    "inputs": {"values": [json.dumps(pg)], "shapes": [[]],
                               "types": ["String"]}, "attrs": []},
                   {"id": 3, "name": "aten::mm", "ctrl_deps": 1, "attrs": []},
                   rpc(5, "allreduce", "BFloat16", 1024, 1024),
                   {"id": 6, "name": "nccl:all_reduce", "ctrl_deps": 5, "attrs": []},
                   rpc(7, "wait", "Float", 0, 0),
                   rpc(8, "_allgather_base", "Float", 256, 1024),
                   {"id": 1, "name": "[pytorch|profiler|execution_trace|process]",
                    "ctrl_deps": 1, "attrs": []}]}
        (tmp_path / ("rank_%d.json" % rank)).write_text(json.dumps(doc))
    t = load_trace(str(tmp_path), "pytorch")
    a, g = t.collectives
    assert (a.op, a.ranks, a.size, a.dtype) == ("all_reduce", (0, 1, 2, 3), 2048, "bfloat16")
    assert (g.op, g.size, g.after) == ("all_gather", 4096, ((1, 0),))
    assert t.skipped["record_param_comms wait (no data)"] == 4
    assert t.skipped["nccl kernel nodes"] == 4 and t.skipped["operator/other nodes"] == 8


def test_project_format_features(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join([
        "# comment",
        '{"gse_trace": 1, "name": "x", "groups": {"dp": "0-3", "odd": "1-7/2"}}',
        '{"id": 1, "op": "all_reduce", "group": "dp", "count": 1000, "dtype": "bfloat16"}',
        '',
        '{"id": 2, "op": "broadcast", "ranks": [3, 1, 2], "bytes": 10, "root": 1,'
        ' "algo": "tree", "after": [1], "delay_us": 2.5, "_note": "ignored"}',
        '{"id": 3, "op": "all_to_all", "group": "odd", "bytes": 64, "after": [[1, 1], 2],'
        ' "start_us": 4, "tag": "moe"}',
    ]) + "\n")
    t = read_jsonl(str(p))
    a, b, c = t.collectives
    assert a.size == 2000 and a.ranks == (0, 1, 2, 3) and t.name == "x"
    assert b.ranks == (3, 1, 2) and b.root == 1 and b.after == ((1, 2_500_000),)
    assert c.ranks == (1, 3, 5, 7) and c.after == ((1, 1_000_000), (2, 0))
    assert c.start_ps == 4_000_000 and c.tag == "moe"
    q = tmp_path / "u.jsonl"
    write_jsonl(str(q), t.collectives, name="x")
    assert read_jsonl(str(q)).collectives == t.collectives


def test_format_detection(tmp_path):
    assert detect_format(data("all_reduce_8npus_1MB.jsonl")) == "jsonl"
    assert detect_format(data("pytorch_et", "all_reduce_8npus_1MB", "rank.0.json")) == "pytorch"
    blob = tmp_path / "x0"
    shutil.copy(data("chakra", "all_reduce_8npus_1MB", "all_reduce.0.et"), blob)
    assert detect_format(str(blob)) == "chakra"
    with pytest.raises(TraceError, match="mix formats"):
        load_trace([data("all_reduce_8npus_1MB.jsonl"),
                    data("chakra", "all_reduce_8npus_1MB", "all_reduce.0.et")])


# -- protobuf wire --------------------------------------------------------------------------

def test_varints_and_zigzag():
    for v in (0, 1, 127, 128, 300, 2 ** 32, 2 ** 63 - 1, 2 ** 64 - 1):
        enc = pw.varint(v)
        assert pw.read_varint(enc, 0) == (v, len(enc))
    assert pw.to_signed64(pw.read_varint(pw.varint(-5), 0)[0]) == -5
    assert len(pw.varint(-1)) == 10
    for v in (0, -1, 1, -64, 2 ** 40, -(2 ** 40)):
        assert pw.zigzag_decode(pw.zigzag_encode(v)) == v
    assert pw.unpack_repeated(pw.LEN, b"\x01\x96\x01", "varint") == [1, 150]
    with pytest.raises(pw.WireError, match="truncated varint"):
        pw.read_varint(b"\x80\x80", 0)
    with pytest.raises(pw.WireError, match="longer than 10"):
        pw.read_varint(b"\xff" * 11, 0)
    with pytest.raises(pw.WireError, match="wire type 3"):
        list(pw.iter_fields(b"\x0b"))


# -- bad input names the file and the record ------------------------------------------------

def _sample_copy(tmp_path, name="all_reduce_8npus_1MB"):
    d = tmp_path / name
    shutil.copytree(data("chakra", name), d)
    for f in d.iterdir():
        f.chmod(0o644)
    return d


def test_truncated_chakra_file(tmp_path):
    d = _sample_copy(tmp_path)
    f = d / "all_reduce.3.et"
    f.write_bytes(f.read_bytes()[:-5])
    with pytest.raises(TraceError) as err:
        load_trace(str(d))
    msg = str(err.value)
    assert "all_reduce.3.et" in msg and "byte 8" in msg and "file ends" in msg


@pytest.mark.parametrize("node, words", [
    (node_record(4, "bad", COLL, attrs={"comm_size": 10}), ["record 2", "node id 4", "comm_type"]),
    (node_record(4, "bad", COLL, attrs={"comm_type": 42, "comm_size": 1}),
     ["record 2", "comm_type 42"]),
    (node_record(4, "bad", SEND, attrs={"comm_size": 1}), ["record 2", "comm_dst"]),
    (pw.delimited(b"\x08\x01\x13"), ["record 2", "malformed protobuf"]),
    (pw.delimited(b"\x12\x05ab"), ["record 2", "malformed protobuf"]),
])
def test_bad_chakra_records(tmp_path, node, words):
    for rank in (0, 1):
        (tmp_path / ("b.%d.et" % rank)).write_bytes(metadata_record() + node)
    with pytest.raises(TraceError) as err:
        load_trace(str(tmp_path))
    msg = str(err.value)
    assert "b.0.et" in msg
    for w in words:
        assert w in msg, msg


def test_chakra_cycle_disagreement_and_missing_ranks(tmp_path):
    ar = {"comm_type": 0, "comm_size": 8}
    (tmp_path / "c.0.et").write_bytes(metadata_record() + node_record(1, "a", COMP, [2])
                                      + node_record(2, "b", COLL, [1], attrs=ar))
    with pytest.raises(TraceError, match=r"c\.0\.et: record \d .*cycle"):
        load_trace(str(tmp_path / "c.0.et"))
    (tmp_path / "d.0.et").write_bytes(metadata_record() + node_record(1, "a", COLL, attrs=ar))
    with pytest.raises(TraceError, match=r"d\.0\.et: record 2.*every rank"):
        load_trace(str(tmp_path / "d.0.et"))
    (tmp_path / "d.1.et").write_bytes(metadata_record() + node_record(
        1, "a", COLL, attrs={"comm_type": 0, "comm_size": 9}))
    with pytest.raises(TraceError) as err:
        load_trace([str(tmp_path / "d.0.et"), str(tmp_path / "d.1.et")])
    assert "d.1.et: record 2" in str(err.value) and "d.0.et" in str(err.value)
    (tmp_path / "e.0.et").write_bytes(b"")
    with pytest.raises(TraceError, match=r"e\.0\.et: empty"):
        read_chakra([str(tmp_path / "e.0.et")])
    (tmp_path / "f.0.et").write_bytes(b"\x04\x08\x01\x10\x02")
    with pytest.raises(TraceError, match=r"f\.0\.et: record 1.*GlobalMetadata"):
        read_chakra([str(tmp_path / "f.0.et")])


@pytest.mark.parametrize("lines, where, words", [
    (['{"id": 1, "op": "all_reduce", "ranks": "0-3", "bytes": 8}', '', '{"id": 2, "op": '],
     "line 3", ["invalid JSON"]),
    (['{"id": 1, "op": "all_reduce", "ranks": "0-3", "bytes": 8, "byts": 1}'],
     "line 1 (id 1)", ["unknown key", "'byts'"]),
    (['{"id": 1, "op": "all_reduce", "ranks": "0-3", "bytes": 8, "after": [2]}',
      '{"id": 2, "op": "all_reduce", "ranks": "0-3", "bytes": 8}'],
     "line 1 (id 1)", ["after: 2", "earlier"]),
    (['{"id": 1, "op": "all_reduce", "ranks": "0-3", "bytes": 8}',
      '{"id": 1, "op": "all_reduce", "ranks": "0-3", "bytes": 8}'],
     "line 2 (id 1)", ["already used (line 1)"]),
    (['{"id": 1, "op": "all_reduce", "group": "dp", "bytes": 8}'],
     "line 1 (id 1)", ["group 'dp' is not defined"]),
    (['{"id": 1, "op": "all_reduce", "ranks": "0-3"}'], "line 1", ["one of 'bytes' and 'count'"]),
    (['{"id": 1, "op": "all_reduce", "ranks": "0-3", "count": 4, "dtype": "float99"}'],
     "line 1", ["known dtype"]),
    (['{"id": 1, "op": "reduce_all", "ranks": "0-3", "bytes": 8}'], "line 1", ["unknown op"]),
    (['{"id": 1, "op": "all_reduce", "ranks": "3-0", "bytes": 8}'], "line 1", ["bad rank range"]),
    (['[1, 2]'], "line 1", ["JSON object"]),
])
def test_bad_project_records(tmp_path, lines, where, words):
    p = tmp_path / "bad.jsonl"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError) as err:
        read_jsonl(str(p))
    msg = str(err.value)
    assert msg.startswith(str(p) + ": " + where), msg
    for w in words:
        assert w in msg, msg


def _et(nodes):
    return json.dumps({"schema": "1.1.1-chakra.0.0.4", "nodes": nodes})


@pytest.mark.parametrize("text, words", [
    ('{"schema": "1.0.1", "nodes": [\n  {"id": 1, "name": "x"},\n  {"id": 2 "name": "y"}]}',
     ["line 3 column 12", "invalid JSON"]),
    ('{"schema": "1.0.1"}', ["not a PyTorch execution trace"]),
    (_et([{"id": 1, "name": "x"}, {"id": 5, "name": "record_param_comms", "attrs": []}]),
     ["nodes[1] (id 5)", "collective_name"]),
    (_et([{"id": 5, "name": "record_param_comms", "attrs": [
        {"name": "collective_name", "value": "allreduce"}, {"name": "dtype", "value": "Qubit"},
        {"name": "pg_size", "value": 2}]}]), ["nodes[0] (id 5)", "unknown dtype 'Qubit'"]),
    (_et([{"id": 5, "name": "record_param_comms", "attrs": [
        {"name": "collective_name", "value": "allshuffle"}]}]), ["unknown collective_name"]),
    (_et([{"id": 5}]), ["nodes[0]", "\"name\""]),
])
def test_bad_pytorch_traces(tmp_path, text, words):
    p = tmp_path / "rank0.json"
    p.write_text(text)
    with pytest.raises(TraceError) as err:
        load_trace(str(p), "pytorch")
    msg = str(err.value)
    assert msg.startswith(str(p)), msg
    for w in words:
        assert w in msg, msg
