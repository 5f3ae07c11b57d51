"""Recorded traces as their writers publish them: Chakra's schema versions and converters,
ASTRA-sim's point-to-point collectives, PyTorch execution traces 1.0.1 to 1.1.x, archives.

Every fixture here is written by the test itself and reproduces one feature of the public
files (tests/test_third_party.py reads those, opt-in): a GlobalMetadata with the schema as
an attribute and no version, a ring of COMM_SEND/COMM_RECV in which each receive depends
on the rank's own send, ctrl_deps on nodes outside the file, CPU-side COMM_COLL nodes
without comm_type, record_param_comms with positional inputs, ``ranks: []`` process
groups, the rank recorded in the calls, traces in .gz and .tar.gz.
"""

import gzip
import io
import json
import tarfile

import pytest

from gse.workloads.replay import replay, ring_bound_ps
from gse.workloads.traces import TraceError, detect_format, load_trace
from gse.workloads.traces import protowire as pw
from gse.workloads.traces.chakra_schema import (COLL, COMP, METADATA, RECV, SEND, metadata_record,
                                                node_record)
from topologies.fattree import fat_tree
from topologies.spineleaf import spine_leaf_rail

MiB = 1 << 20
US = 1_000_000
AR = {"comm_type": 0, "comm_size": 8000}


def write_ranks(tmp_path, per_rank, prefix="t", meta=None):
    for rank, nodes in per_rank.items():
        head = meta if meta is not None else metadata_record()
        (tmp_path / ("%s.%d.et" % (prefix, rank))).write_bytes(head + b"".join(nodes))
    return str(tmp_path)


# -- Chakra: schema versions ----------------------------------------------------------------

@pytest.mark.parametrize("meta, schema", [
    (metadata_record("0.0.4"), "0.0.4"),                              # the generator
    (metadata_record("1.0.0"), "1.0.0"),                              # its 2026 relabel
    (metadata_record(None, {"schema": "1.0.2-chakra.0.0.4", "input_file": "<algo/>",
                            "collective": "allreduce"}), "1.0.2-chakra.0.0.4"),  # MSCCL
    (metadata_record(None, {"schema": "1.0.1", "pid": 7, "time": "t"}), "1.0.1"),  # PyTorch
    (pw.delimited(pw.f_bytes(1, pw.f_string(1, "schema") + pw.f_string(29, "0.0.4"))),
     "0.0.4"),                                     # 2023-10-10: attributes in field 1
    (pw.delimited(b""), "(none)"),                 # an empty GlobalMetadata
])
def test_chakra_metadata_in_every_layout_in_use(tmp_path, meta, schema):
    d = write_ranks(tmp_path, {r: [node_record(1, "ar", COLL, attrs=AR)] for r in (0, 1)},
                    meta=meta)
    t = load_trace(d)
    assert [c.op for c in t.collectives] == ["all_reduce"] and t.schemas == [schema]
    attrs = [k for k in t.ignored if k.startswith("GlobalMetadata")]
    assert all(t.ignored[k] == 2 for k in attrs)    # every metadata attribute is counted


def test_chakra_layouts_before_0_0_4_are_refused_by_name(tmp_path):
    d = write_ranks(tmp_path, {0: [node_record(1, "x", 5)]}, meta=metadata_record("0.0.3"))
    with pytest.raises(TraceError, match=r"t\.0\.et: record 1: schema '0\.0\.3' .*before 0\.0\.4"):
        load_trace(d)


# -- Chakra: ASTRA-sim's custom collectives (eager point to point) --------------------------

def ring_all_reduce_p2p(n=8, size=MiB, reduce_us=7):
    """A ring all-reduce as ASTRA-sim's MSCCL converter writes it: per rank, 2(n-1) steps,
    each a COMM_SEND to the next rank then a COMM_RECV from the previous one that depends
    on that send, and a reduction (COMP) after each receive of the reduce-scatter half."""
    chunk = size // n
    out = {}
    for r in range(n):
        nodes = []
        nid = 0
        prev = None
        for step in range(2 * (n - 1)):
            send = {"comm_type": 5, "comm_size": chunk, "comm_dst": (r + 1) % n, "comm_tag": 0}
            nodes.append(node_record(nid, "COMM_SEND_NODE_step%d" % step, SEND,
                                     [] if prev is None else [prev], attrs=send,
                                     typed={"comm_dst": "int32", "comm_tag": "int32"}))
            recv = {"comm_type": 6, "comm_size": chunk, "comm_src": (r - 1) % n, "comm_tag": 0}
            nodes.append(node_record(nid + 1, "COMM_RECV_NODE_step%d" % step, RECV, [nid],
                                     attrs=recv, typed={"comm_src": "int32",
                                                        "comm_tag": "int32"}))
            prev = nid + 1
            nid += 2
            if step < n - 1:
                nodes.append(node_record(nid, "COMP_NODE_step%d" % step, COMP, [prev],
                                         duration_us=reduce_us))
                prev = nid
                nid += 1
        out[r] = nodes
    return out


def test_ring_of_sends_and_receives_runs_eagerly_within_2_percent_of_the_bound(tmp_path):
    meta = metadata_record(None, {"schema": "1.0.2-chakra.0.0.4"})
    d = write_ranks(tmp_path, ring_all_reduce_p2p(), "custom_allreduce", meta)
    t = load_trace(d)
    assert len(t.collectives) == 8 * 14 and {c.op for c in t.collectives} == {"send"}
    assert t.summary()["programs"]["compute_us_max_rank"] == {"gpu": 49.0}
    assert t.ignored["attr 'comm_type'"] == 8 * 28      # the node type, copied: counted
    topo = spine_leaf_rail(servers=8)
    r = replay(topo, t, "gse", seed=1)
    assert r.summary["lost"] == 0 and r.summary["programs"]["ops_not_done"] == 0
    bound, _ = ring_bound_ps(topo, list(range(8)), MiB)
    end = r.summary["replay_time_us"] * US
    assert abs(end / (bound + 49 * US) - 1) <= 0.02
    # the send starts on its own: the first flow of every rank leaves at time 0
    first = [c for c in r.collectives if c.start_ps == 0]
    assert len(first) == 8


def test_a_receive_posted_after_its_data_arrived_ends_when_posted(tmp_path):
    """Rank 1 computes for 100 us before posting the receive; the data is there long
    before: the receive ends when it is posted, the send when the data was delivered."""
    d = write_ranks(tmp_path, {
        0: [node_record(1, "s", SEND, attrs={"comm_dst": 1, "comm_size": 4096})],
        1: [node_record(5, "c", COMP, duration_us=100),
            node_record(6, "r", RECV, [5], attrs={"comm_src": 0, "comm_size": 4096}),
            node_record(7, "after", COMP, [6], duration_us=1)]})
    r = replay(fat_tree(4), load_trace(d), "gse")
    (res,) = r.collectives
    assert res.start_ps == 0 and res.end_ps < 10 * US
    assert r.summary["replay_time_us"] == pytest.approx(101.0)


def test_transfers_need_both_sides(tmp_path):
    (tmp_path / "a").mkdir()
    d = write_ranks(tmp_path / "a", {
        0: [node_record(1, "s", SEND, attrs={"comm_dst": 1, "comm_size": 10})],
        1: [node_record(1, "c", COMP, duration_us=1)]})
    with pytest.raises(TraceError, match="rank 0's send to rank 1 has no matching receive"):
        load_trace(d)
    (tmp_path / "b").mkdir()
    d = write_ranks(tmp_path / "b", {
        0: [node_record(1, "s", SEND, attrs={"comm_dst": 3, "comm_size": 10})],
        1: [node_record(1, "c", COMP, duration_us=1)]})
    with pytest.raises(TraceError, match="rank 3 has no file"):
        load_trace(d)
    (tmp_path / "c").mkdir()
    d = write_ranks(tmp_path / "c", {
        0: [node_record(1, "s", SEND, attrs={"comm_src": 2, "comm_dst": 1, "comm_size": 1})],
        1: [node_record(1, "r", RECV, attrs={"comm_src": 0, "comm_size": 1})]})
    with pytest.raises(TraceError, match="runs on rank 2 but this file is rank 0"):
        load_trace(d)


def test_a_group_rank_without_a_file_is_named(tmp_path):
    pg = dict(AR, pg_ranks=[0, 1, 2])
    d = write_ranks(tmp_path, {r: [node_record(1, "ar", COLL, attrs=pg)] for r in (0, 1)})
    with pytest.raises(TraceError, match=r"rank 2 is in this all_reduce's group \[0, 1, 2\] "
                                         r"but has no file"):
        load_trace(d)
    t = load_trace(d, world_size=3)
    assert t.programs[2].mirror_of == 0 and t.collectives[0].ranks == (0, 1, 2)


def test_a_deadlocked_recording_is_refused(tmp_path):
    """Rank 0 waits for collective A before B, rank 1 for B before A (other groups)."""
    a = dict(AR, pg_name="A")
    b = dict(AR, pg_name="B")
    d = write_ranks(tmp_path, {
        0: [node_record(1, "a", COLL, attrs=a), node_record(2, "b", COLL, [1], attrs=b)],
        1: [node_record(1, "b", COLL, attrs=b), node_record(2, "a", COLL, [1], attrs=a)]})
    with pytest.raises(TraceError, match="can never start.*deadlock"):
        load_trace(d)


# -- Chakra: PyTorch converter output -------------------------------------------------------

def converted_rank():
    """What Chakra's PyTorch converter writes: CPU operators whose ctrl_deps name the
    thread's root node (not in the file), GPU kernels with ctrl_deps back on their operator
    (a cycle with the data_deps), self ctrl_deps, CPU-side c10d COMM_COLL nodes without
    comm_type, GPU comm kernels with comm_type/comm_size, converter attributes."""
    cpu = {"is_cpu_op": True, "rf_id": 1, "tid": 1, "op_schema": "aten::x"}
    gpu = {"is_cpu_op": False, "tid": 7}
    return [
        node_record(10, "aten::flatten(0)", COMP, [], 300, cpu, ctrl_deps=[3], start_us=5),
        node_record(11, "kernel", COMP, [10], 40, gpu, ctrl_deps=[10]),
        node_record(12, "c10d::broadcast_(0)", COLL, [10], 80, cpu, ctrl_deps=[3]),
        node_record(13, "ncclKernel_Broadcast", COLL, [12, 11], 28,
                    dict(gpu, comm_type=5, comm_size=212480, involved_dim=[True])),
        node_record(14, "aten::mul(0)", COMP, [12], 20, cpu, ctrl_deps=[15]),
        node_record(15, "mul_kernel", COMP, [14], 10, gpu, ctrl_deps=[14, 15]),
        node_record(16, "c10d::allreduce_(0)", COLL, [14], 60, cpu, ctrl_deps=[16]),
        node_record(17, "ncclKernel_AllReduce", COLL, [16, 15], 5000,
                    dict(gpu, comm_type=0, comm_size=8196000)),
    ]


def test_converter_output_loads_with_every_drop_counted(tmp_path):
    meta = metadata_record(None, {"schema": "1.0.1", "pid": 1, "time": "t", "start_ts": 1,
                                  "finish_ts": 2})
    d = write_ranks(tmp_path, {0: converted_rank()}, "chakra", meta)
    with pytest.raises(TraceError, match="appears only in rank 0's file.*--world-size"):
        load_trace(d)
    t = load_trace(d, world_size=2)
    assert [(c.op, c.size, c.ranks) for c in t.collectives] == [
        ("broadcast", 212480, (0, 1)), ("all_reduce", 8196000, (0, 1))]
    assert t.skipped == {"COMM_COLL_NODE on the CPU without comm_type (replayed as CPU time)": 2}
    ig = t.ignored
    assert ig["ctrl_deps on nodes not in the file (dropped)"] == 2
    assert ig["ctrl_deps on the node itself (dropped)"] == 2
    assert ig["ctrl_deps closing a cycle with other dependencies (dropped)"] == 1
    assert ig["duration_micros of communication nodes (the network decides)"] == 2
    assert ig["start_time_micros (the replay computes start times)"] == 1
    assert ig["attr 'involved_dim'"] == 1 and ig["attr 'tid'"] == 6
    assert ig["GlobalMetadata attr 'pid'"] == 1
    assert any("depends on node 3, which is not in the file" in n for n in t.notes)
    assert any("ranks 1 have no file" in n for n in t.notes)
    prog = t.programs[0]
    assert t.programs[1].mirror_of == 0 and len(t.programs[1].ops) == len(prog.ops)
    assert prog.compute_ps() == {"cpu": (300 + 80 + 20 + 60) * US, "gpu": 50 * US}


def test_compute_model_streams_or_unlimited_and_scale(tmp_path):
    """Two GPU kernels and one CPU operator, independent, then a collective."""
    nodes = [node_record(1, "k1", COMP, [], 10, {"is_cpu_op": False}),
             node_record(2, "k2", COMP, [], 10),
             node_record(3, "op", COMP, [], 15, {"is_cpu_op": True}),
             node_record(4, "ar", COLL, [1, 2, 3], attrs=AR)]
    t = load_trace(write_ranks(tmp_path, {0: nodes, 1: nodes}))
    topo = fat_tree(4)
    starts = {}
    for model, scale in (("streams", 1), ("unlimited", 1), ("streams", 0.5),
                         ("unlimited", 0)):
        r = replay(topo, t, "gse", compute_model=model, compute_scale=scale)
        starts[(model, scale)] = r.collectives[0].start_ps
        assert r.summary["compute_model"] == model and r.summary["compute_scale"] == scale
    assert starts == {("streams", 1): 20 * US, ("unlimited", 1): 15 * US,
                      ("streams", 0.5): 10 * US, ("unlimited", 0): 0}
    with pytest.raises(ValueError, match="unknown compute model"):
        replay(topo, t, "gse", compute_model="gpu-only")


def test_collectives_of_one_process_group_run_in_order(tmp_path):
    """Two all-reduces with no dependency between them on one communicator: the second
    waits for the first on each rank (one NCCL stream); on two groups they overlap."""
    same = [node_record(1, "a", COLL, attrs=dict(AR, comm_size=MiB)),
            node_record(2, "b", COLL, attrs=dict(AR, comm_size=MiB))]
    other = [node_record(1, "a", COLL, attrs=dict(AR, comm_size=MiB, pg_name="x")),
             node_record(2, "b", COLL, attrs=dict(AR, comm_size=MiB, pg_name="y"))]
    (tmp_path / "s").mkdir()
    (tmp_path / "o").mkdir()
    r1 = replay(fat_tree(4), load_trace(write_ranks(tmp_path / "s", {0: same, 1: same})), "gse")
    r2 = replay(fat_tree(4), load_trace(write_ranks(tmp_path / "o", {0: other, 1: other})),
                "gse")
    a, b = r1.collectives
    assert b.start_ps >= a.end_ps
    a, b = r2.collectives
    assert b.start_ps == a.start_ps == 0


def test_data_dependency_cycles_are_errors(tmp_path):
    d = write_ranks(tmp_path, {0: [node_record(1, "a", COMP, [2], 1),
                                   node_record(2, "b", COLL, [1], attrs=AR)]})
    with pytest.raises(TraceError, match=r"record \d \(node id \d .*data_deps form a cycle"):
        load_trace(d)


# -- PyTorch execution traces ---------------------------------------------------------------

def tensor(numel, itemsize=4, device="cuda:0", tid=1):
    return [tid, tid + 1, 0, numel, itemsize, device]


def rpc_inputs(schema, name, rank, tensors=None, seq=1, pg=("0", "default_pg"), world=2,
               splits=()):
    """record_param_comms inputs by position, as each schema records them."""
    vals = ([tensors] if tensors is not None else []) + [seq]
    if schema.startswith(("1.0.1", "1.0.2")):
        vals.append(94594108284448)                            # the group, a pointer
    else:
        vals.append(list(pg))
    vals += [rank, name, list(splits), list(splits)]
    if schema.startswith("1.0.2"):
        vals.append(world)
    elif not schema.startswith("1.0.1"):
        vals += [0, 1, world]
    return vals


def et_node(schema, nid, name, inputs, outputs=(), attrs=()):
    if schema == "1.0.1":
        return {"name": name, "id": nid, "parent": 1, "rf_id": nid, "inputs": inputs,
                "input_types": ["Int"] * len(inputs), "outputs": list(outputs),
                "output_types": []}
    return {"id": nid, "name": name, "ctrl_deps": 1,
            "inputs": {"values": inputs, "shapes": [], "types": []},
            "outputs": {"values": list(outputs), "shapes": [], "types": []},
            "attrs": [{"name": "rf_id", "type": "uint64", "value": nid}] + list(attrs)}


def et_doc(schema, nodes, group_size=None, ranks=()):
    head = []
    if group_size is not None:
        pg = [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
               "ranks": list(ranks), "group_size": group_size, "group_count": 1}]
        head.append(et_node(schema, 3, "## process_group:init ##", [json.dumps(pg)]))
    return {"schema": schema, "pid": 1, "time": "t", "start_ts": 0, "finish_ts": 0,
            "nodes": head + nodes + [et_node(schema, 1, "[pytorch|profiler|execution_trace|"
                                                        "thread]", [])]}


def resnet_like(schema, rank, world):
    """Two broadcasts (root 0), a wait carrying the caller's rank, two all-reduces."""
    n = []
    n.append(et_node(schema, 437, "record_param_comms",
                     rpc_inputs(schema, "broadcast", 0, [tensor(53120, device="cuda:%d" % rank)],
                                33, world=world)))
    n.append(et_node(schema, 438, "nccl:broadcast", []))
    n.append(et_node(schema, 602, "record_param_comms",
                     rpc_inputs(schema, "broadcast", 0, [tensor(53, 8)], 34, world=world)))
    n.append(et_node(schema, 604, "record_param_comms",
                     rpc_inputs(schema, "wait", rank, None, 33, ("", ""), world=1)))
    for i, numel in enumerate((2049000, 7875584)):
        n.append(et_node(schema, 3237 + i, "record_param_comms",
                         rpc_inputs(schema, "allreduce", rank, [tensor(numel)], 35 + i,
                                    world=world)))
    n.append(et_node(schema, 9000, "aten::mm", []))
    return n


@pytest.mark.parametrize("schema", ["1.0.1", "1.0.2-chakra.0.0.4", "1.0.3-chakra.0.0.4",
                                    "1.1.0-chakra.0.0.4", "1.1.1-chakra.0.0.4"])
def test_positional_record_param_comms_in_every_schema(tmp_path, schema):
    """One file of a 2-rank run, named like param's resnet_2gpu_et.json: the rank (1) is
    the calls' own, not the 2 in the name; the world is 2 from the trace."""
    group = 2 if not schema.startswith(("1.0.1", "1.0.3")) else None
    doc = et_doc(schema, resnet_like(schema, 1, 2), group_size=group)
    p = tmp_path / "resnet_2gpu_et.json"
    p.write_text(json.dumps(doc))
    world = 2 if schema == "1.0.1" else None       # a 1.0.1 trace does not say
    t = load_trace(str(p), world_size=world)
    assert t.format == "pytorch" and t.notes == []
    assert [(c.op, c.size, c.ranks, c.root if c.op == "broadcast" else None)
            for c in t.collectives] == [("broadcast", 212480, (0, 1), 0),
                                        ("broadcast", 424, (0, 1), 0),
                                        ("all_reduce", 8196000, (0, 1), None),
                                        ("all_reduce", 31502336, (0, 1), None)]
    assert t.skipped["record_param_comms wait (no data)"] == 1
    assert t.ignored["trace field 'pid'"] == 1
    if schema == "1.0.1":
        with pytest.raises(TraceError, match="does not say which ranks"):
            load_trace(str(p))


def test_attributes_of_1_1_x_and_ranks_empty_is_the_whole_group(tmp_path):
    attrs = [{"name": "collective_name", "type": "string", "value": "allreduce"},
             {"name": "dtype", "type": "string", "value": "BFloat16"},
             {"name": "in_msg_nelems", "type": "uint64", "value": 1000},
             {"name": "out_msg_nelems", "type": "uint64", "value": 1000},
             {"name": "pg_name", "type": "string", "value": "0"},
             {"name": "pg_desc", "type": "string", "value": "default_pg"},
             {"name": "pg_size", "type": "uint64", "value": 4},
             {"name": "kernel_backend", "type": "string", "value": ""}]
    node = et_node("1.1.1", 5, "record_param_comms",
                   rpc_inputs("1.1.1", "allreduce", 2, [tensor(999)], world=4), attrs=attrs)
    p = tmp_path / "trace.json"
    p.write_text(json.dumps(et_doc("1.1.1-chakra.0.0.4", [node], group_size=4)))
    t = load_trace(str(p))
    (c,) = t.collectives
    assert (c.ranks, c.size, c.dtype) == ((0, 1, 2, 3), 2000, "bfloat16")   # attrs win
    assert t.ignored["record_param_comms attr 'kernel_backend'"] == 1
    assert t.ignored["record_param_comms attr 'pg_desc'"] == 1


def test_rank_from_the_file_name_only_as_a_noted_last_resort(tmp_path):
    attrs = [{"name": "collective_name", "type": "string", "value": "broadcast"},
             {"name": "dtype", "type": "string", "value": "Float"},
             {"name": "in_msg_nelems", "type": "uint64", "value": 10},
             {"name": "pg_size", "type": "uint64", "value": 4}]
    doc = et_doc("1.1.1-chakra.0.0.4", [et_node("1.1.1", 5, "record_param_comms", [],
                                                attrs=attrs)])
    p = tmp_path / "rank3.json"
    p.write_text(json.dumps(doc))
    t = load_trace(str(p))
    assert t.notes == ["%s: the trace records no rank; rank 3 from the number in the file "
                       "name" % p]
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for f, rank in ((a, 0), (b, 1)):
        f.write_text(json.dumps(et_doc("1.0.3-chakra.0.0.4", [
            et_node("1.0.3", 5, "record_param_comms",
                    rpc_inputs("1.0.3", "allreduce", rank, [tensor(8)], world=2)),
            et_node("1.0.3", 6, "record_param_comms",
                    rpc_inputs("1.0.3", "allreduce", 1 - rank, [tensor(8)], seq=2,
                               world=2))])))
    with pytest.raises(TraceError, match="the calls disagree on this file's rank"):
        load_trace(str(a))


def test_point_to_point_peers_from_the_rank_position(tmp_path):
    for rank in (0, 1):
        name, peer = ("send", 1) if rank == 0 else ("recv", 0)
        (tmp_path / ("r%d.json" % rank)).write_text(json.dumps(et_doc("1.0.3-chakra.0.0.4", [
            et_node("1.0.3", 5, "record_param_comms",
                    rpc_inputs("1.0.3", "allreduce", rank, [tensor(4)], world=2)),
            et_node("1.0.3", 6, "record_param_comms",
                    rpc_inputs("1.0.3", name, peer, [tensor(256)], seq=2, world=2))])))
    t = load_trace(str(tmp_path))
    assert [(c.op, c.ranks, c.size) for c in t.collectives] == [
        ("all_reduce", (0, 1), 16), ("send", (0, 1), 1024)]


def test_archives_and_gzip_are_read_as_published(tmp_path):
    docs = {r: et_doc("1.0.1", resnet_like("1.0.1", r, 2)) for r in (0, 1)}
    tar = tmp_path / "dlrm_pytorch_et.tar.gz"
    with tarfile.open(tar, "w:gz") as tf:
        for r, doc in docs.items():
            raw = json.dumps(doc).encode()
            info = tarfile.TarInfo("dlrm_pytorch_et/dlrm_eg_%d.json" % r)
            info.size = len(raw)
            tf.addfile(info, io.BytesIO(raw))
        info = tarfile.TarInfo("dlrm_pytorch_et/kernel.py")
        info.size = 3
        tf.addfile(info, io.BytesIO(b"x=1"))
    t = load_trace(str(tar))
    assert [s.rsplit(":", 1)[1] for s in t.sources] == ["dlrm_pytorch_et/dlrm_eg_0.json",
                                                          "dlrm_pytorch_et/dlrm_eg_1.json"]
    assert len(t.collectives) == 4 and t.ranks() == [0, 1]
    gz = tmp_path / "one_et.json.gz"
    gz.write_bytes(gzip.compress(json.dumps(et_doc("1.1.0-chakra.0.0.4", resnet_like(
        "1.1.0", 1, 2), group_size=2)).encode()))
    assert detect_format(str(gz)) == "pytorch"
    assert len(load_trace(str(gz)).collectives) == 4
    et = tmp_path / "chakra_trace.tgz"
    with tarfile.open(et, "w:gz") as tf:
        for r in (0, 1):
            raw = metadata_record() + node_record(1, "ar", COLL, attrs=AR)
            info = tarfile.TarInfo("tests/data/chakra.%d.et" % r)
            info.size = len(raw)
            tf.addfile(info, io.BytesIO(raw))
    assert load_trace(str(et)).collectives[0].ranks == (0, 1)


def test_other_json_traces_are_named_not_misread(tmp_path):
    kineto = tmp_path / "resnet_kineto.json"
    kineto.write_text(json.dumps({"schemaVersion": 1, "distributedInfo": {"rank": 0},
                                  "traceEvents": []}))
    with pytest.raises(TraceError, match="Kineto"):
        load_trace(str(kineto))
    feeder = tmp_path / "chakra.0.json"
    feeder.write_text(json.dumps({"workload_graph": [{"Id": 1}]}))
    with pytest.raises(TraceError, match="feeder JSON"):
        load_trace(str(feeder))
    assert detect_format(str(kineto)) == "kineto"


def test_metadata_nodes_pass_through(tmp_path):
    d = write_ranks(tmp_path, {r: [node_record(1, "pg", METADATA, attrs={"pg_name": "0"}),
                                   node_record(2, "ar", COLL, [1], attrs=AR)]
                               for r in (0, 1)})
    t = load_trace(d)
    assert t.skipped == {"METADATA_NODE": 2} and len(t.collectives) == 1
