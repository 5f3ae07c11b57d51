"""Opt-in: the public files the readers and codecs were written for, read unmodified.

These files are not in the repository -- they belong to their projects and the project
does not redistribute them -- so the tests run only when ``GSE_THIRD_PARTY_DIR`` names a
directory holding them in their repositories' own layout (each test skips, saying what is
missing, otherwise)::

    $GSE_THIRD_PARTY_DIR/astra-sim/examples/...                  (astra-sim/astra-sim)
    $GSE_THIRD_PARTY_DIR/param/et_replay/tests/inputs/...         (facebookresearch/param)
    $GSE_THIRD_PARTY_DIR/chakra/tests/data/...                    (mlcommons/chakra)
    $GSE_THIRD_PARTY_DIR/uet-htsim/htsim/sim/datacenter/connection_matrices/...
    $GSE_THIRD_PARTY_DIR/xdp2-uet/pcap/uet_{pds,ses}.pcap         (xdp2-dev/xdp2's generator
                                                                   scripts' output, port 4793)

The suite's own tests (test_traces*, test_trace_schemas, test_cmfile, test_triggers,
test_uet_wire) cover every schema feature of these files with fixtures the project wrote.
"""

import glob
import os
import struct
from collections import Counter

import pytest

from gse.runtimes.sim.run import run_simulation
from gse.wire import uet_headers as uh
from gse.workloads.cmfile import CmFileError, read_cm_workload
from gse.workloads.collectives import expand
from gse.workloads.replay import replay, ring_bound_ps
from gse.workloads.traces import TraceError, load_trace
from topologies.fattree import fat_tree
from topologies.spineleaf import spine_leaf_rail

ROOT = os.environ.get("GSE_THIRD_PARTY_DIR")
MiB = 1 << 20


def need(*parts):
    if not ROOT:
        pytest.skip("set GSE_THIRD_PARTY_DIR to a directory of the public traces (see this "
                    "module's docstring); they are not in the repository")
    path = os.path.join(ROOT, *parts)
    if not os.path.exists(path):
        pytest.skip("%s is not there" % path)
    return path


# -- Chakra: ASTRA-sim's examples -----------------------------------------------------------

def et_dirs(base):
    return sorted({os.path.dirname(p) for p in glob.glob(os.path.join(base, "**", "*.et"),
                                                         recursive=True)})


def test_every_chakra_trace_of_astra_sims_examples_loads():
    dirs = et_dirs(need("astra-sim", "examples"))
    assert dirs
    files = 0
    for d in dirs:
        t = load_trace(d)
        files += len(t.sources)
        assert t.collectives and t.programs, d
    print("astra-sim examples: %d traces, %d .et files, all loaded" % (len(dirs), files))


def test_custom_ring_all_reduce_completes_within_2_percent_of_ring_bound_plus_compute():
    d = need("astra-sim", "examples", "system", "custom_collectives",
             "custom_ring_allreduce_8npus_1MB")
    t = load_trace(d)
    assert Counter(c.op for c in t.collectives) == {"send": 112}
    compute = max(sum(op.dur_ps for op in p.ops if op.kind == "compute")
                  for p in t.programs.values())
    assert compute == 49_000_000                  # 7 reduce steps of 7 us on every rank
    topo = spine_leaf_rail(servers=8)             # 8 ranks on one server's rails
    r = replay(topo, t, "gse", seed=1)
    assert r.summary["lost"] == 0 and r.summary["programs"]["ops_not_done"] == 0
    bound, _ = ring_bound_ps(topo, list(range(8)), MiB)
    end = r.summary["replay_time_us"] * 1e6
    assert abs(end / (bound + compute) - 1) <= 0.02, (end, bound, compute)


# -- PyTorch execution traces: param's et_replay inputs -------------------------------------

def test_every_pytorch_et_with_communication_loads():
    base = need("param", "et_replay", "tests", "inputs")
    files = sorted(p for p in glob.glob(os.path.join(base, "**", "*"), recursive=True)
                   if os.path.isfile(p) and not p.endswith(".py"))    # the package's __init__
    loaded, no_comms, kineto = [], [], []
    for f in files:
        try:
            t = load_trace(f)
        except TraceError as exc:
            if "Kineto" in str(exc):
                kineto.append(f)
            elif "no record_param_comms nodes with data" in str(exc):
                no_comms.append(f)
            else:
                raise
            continue
        assert t.format == "pytorch" and t.collectives
        loaded.append(f)
    names = sorted(os.path.basename(f) for f in loaded)
    assert names == ["dlrm_pytorch_et.tar.gz", "resnet_1gpu_et.json.gz",
                     "resnet_1gpu_et.json.tar.gz", "resnet_2gpu_et.json.gz",
                     "resnet_et.json.gz"], names
    assert sorted(os.path.basename(f) for f in no_comms) == [
        "hf_GPT2_et.json.tar.gz", "linear_et.json.gz", "pt2_et.json.tar.gz"]
    assert len(kineto) == 3
    print("param et_replay inputs: %d with communication loaded, %d without (refused: no "
          "record_param_comms with data), %d Kineto traces (named as such)"
          % (len(loaded), len(no_comms), len(kineto)))


RESNET_ALL_REDUCES = [8_196_000, 31_502_336, 26_255_360, 26_550_272, 9_724_160]
RESNET_BROADCASTS = [212_480, 424]


def test_resnet_2gpu_sizes_and_counts_equal_the_file():
    f = need("param", "et_replay", "tests", "inputs", "1.1.0-chakra.0.0.4",
             "resnet_2gpu_et.json.gz")
    t = load_trace(f)
    assert t.notes == []                          # the rank came from the trace itself
    ops = [(c.op, c.size) for c in t.collectives]
    assert ops == 3 * ([("broadcast", s) for s in RESNET_BROADCASTS]
                       + [("all_reduce", s) for s in RESNET_ALL_REDUCES])
    assert all(c.ranks == (0, 1) for c in t.collectives)
    assert all(c.root == 0 for c in t.collectives if c.op == "broadcast")
    assert t.skipped["record_param_comms wait (no data)"] == 6
    r = replay(fat_tree(4), t, "gse")
    assert r.summary["collectives_done"] == 21 and r.summary["lost"] == 0


def test_dlrm_eight_ranks_from_one_archive_with_the_recorded_alltoallv_splits():
    f = need("param", "et_replay", "tests", "inputs", "dlrm_pytorch_et.tar.gz")
    t = load_trace(f)
    assert len(t.sources) == 8 and t.ranks() == list(range(8)) and t.notes == []
    assert Counter(c.op for c in t.collectives) == {"all_to_all": 5, "all_reduce": 3}
    (uneven,) = [c for c in t.collectives if c.splits is not None]
    # every rank sends 1,664 of its 3,392 float32 rows to rank 3: 3.92x the even share
    assert uneven.size == 3392 * 4 and {row[3] for row in uneven.splits} == {1664 * 4}
    plan = expand(uneven)
    into = Counter()
    for d, size in zip(plan.dst, plan.size):
        into[d] += size
    assert into[3] == 7 * 1664 * 4 and into[0] == 7 * 96 * 4     # even: 7 x 1,696 each
    r = replay(fat_tree(4), t, "gse")
    assert r.summary["collectives_done"] == 8 and r.summary["lost"] == 0
    assert r.collectives[uneven.id - 1].bytes_moved == plan.bytes_sent()


def test_single_gpu_resnet_traces_replay_data_parallel_at_the_world_size_asked():
    base = need("param", "et_replay", "tests", "inputs")
    for f in ("resnet_1gpu_et.json.tar.gz", "resnet_et.json.gz",
              os.path.join("1.0.3-chakra.0.0.4", "resnet_1gpu_et.json.gz")):
        t = load_trace(os.path.join(base, f))
        assert t.ranks() == [0] and "nothing crosses the network" in t.notes[-1]
        t = load_trace(os.path.join(base, f), world_size=4)
        assert t.ranks() == [0, 1, 2, 3] and "data-parallel" in t.notes[0]
        assert [(c.op, c.size) for c in t.collectives] == 3 * (
            [("broadcast", s) for s in RESNET_BROADCASTS]
            + [("all_reduce", s) for s in RESNET_ALL_REDUCES])
    with pytest.raises(TraceError, match="world size 4 contradicts the trace"):
        load_trace(os.path.join(base, "1.1.0-chakra.0.0.4", "resnet_2gpu_et.json.gz"),
                   world_size=4)


# -- Chakra's own test traces ---------------------------------------------------------------

def test_chakra_feeder_trace_and_1_0_2_trace():
    base = need("chakra", "tests", "data")
    t = load_trace(os.path.join(base, "feeder_tests_trace.tar.gz"), world_size=2)
    assert [(c.op, c.size) for c in t.collectives] == (
        [("broadcast", s) for s in RESNET_BROADCASTS]
        + [("all_reduce", s) for s in RESNET_ALL_REDUCES])
    assert t.skipped == {"COMM_COLL_NODE on the CPU without comm_type (replayed as CPU time)": 14}
    assert t.ignored["ctrl_deps on nodes not in the file (dropped)"] == 1277
    for model in ("streams", "unlimited"):
        r = replay(fat_tree(4), t, "gse", compute_model=model)
        assert r.summary["programs"]["ops_not_done"] == 0 and r.summary["lost"] == 0
    t = load_trace(os.path.join(base, "1.0.2-chakra.0.0.4.tgz"))
    assert Counter((c.op, c.size, c.ranks) for c in t.collectives) == {
        ("all_gather", 8, (0, 1)): 10}


# -- htsim connection matrices --------------------------------------------------------------

def test_every_uet_htsim_connection_matrix_loads():
    base = need("uet-htsim", "htsim", "sim", "datacenter", "connection_matrices")
    files = sorted(glob.glob(os.path.join(base, "**", "*.cm"), recursive=True))
    loaded, refused = [], []
    for f in files:
        try:
            read_cm_workload(f)
            loaded.append(f)
        except CmFileError as exc:
            refused.append((os.path.basename(f), str(exc)))
    # a2a.cm declares 3600 connections and 3360 triggers for its 240 lines and no trigger
    # definitions: htsim refuses it too ("Mismatch in connection count")
    assert [(n, "declares 3600 connections but the file has 240" in e)
            for n, e in refused] == [("a2a.cm", True)]
    print("uet-htsim connection matrices: %d of %d .cm files loaded; refused: %s"
          % (len(loaded), len(files), [n for n, _ in refused]))


def test_alltoall_serial_16n_agrees_in_kind_with_htsim():
    f = need("uet-htsim", "htsim", "sim", "datacenter", "connection_matrices",
             "alltoall_serial_16n.cm")
    w = read_cm_workload(f)
    s = run_simulation(fat_tree(4), w.messages, "gse", triggers=w).summary
    assert s["messages"] == 240 and s["lost"] == 0 and s["triggers_fired"] == 224
    assert abs(s["last_finish_us"] / 2946.44 - 1) < 0.10       # htsim UEC: 2946.44 us
    print("alltoall_serial_16n.cm: last flow done at %.1f us (htsim UEC 2946.44 us)"
          % s["last_finish_us"])


# -- xdp2's UET sample packets --------------------------------------------------------------

def pcap_udp_payloads(path):
    """(dport, payload) of every IPv4/UDP frame of a classic pcap file (Ethernet)."""
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    pos = 24
    out = []
    while pos < len(data):
        _, _, incl, _ = struct.unpack_from(endian + "IIII", data, pos)
        frame = data[pos + 16:pos + 16 + incl]
        pos += 16 + incl
        if frame[12:14] != b"\x08\x00" or frame[23] != 17:
            continue
        ihl = (frame[14] & 0x0F) * 4
        udp = 14 + ihl
        dport, length = struct.unpack_from("!2xHH", frame, udp)
        out.append((dport, frame[udp + 8:udp + length]))
    return out


def test_xdp2_sample_packets_round_trip_byte_for_byte():
    base = need("xdp2-uet", "pcap")
    pcaps = sorted(glob.glob(os.path.join(base, "*.pcap")))
    assert pcaps
    total = 0
    kinds = Counter()
    for p in pcaps:
        for dport, payload in pcap_udp_payloads(p):
            assert dport == uh.UDP_PORT
            dg = uh.parse(payload)
            assert uh.build(dg) == payload
            kinds[dg.pds.name] += 1
            total += 1
    # the generator's field values (make_uet_pds.py): the first RUD request
    first = uh.parse(pcap_udp_payloads(os.path.join(base, "uet_pds.pcap"))[0][1])
    assert (first.pds["psn"], first.pds["spdcid"], first.pds["dpdcid"],
            first.pds["clear_psn_offset"]) == (0x98765432, 0x3456, 0x9abc, 0x1234)
    assert (first.ses["message_id"], first.ses["job_id"], first.ses["request_length"]) == (
        0x1234, 0xabcdef, 0x99887766)
    assert total == 36 and len(kinds) == 13
    print("xdp2 UET samples: %d packets, %d PDS types, all round trip byte for byte"
          % (total, len(kinds)))
