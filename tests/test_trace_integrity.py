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
from gse.workloads.traces import TraceError, load_trace
from gse.workloads.traces.chakra_schema import COLL, COMP, metadata_record, node_record
from test_trace_schemas import AR, et_doc, et_node, rpc_inputs, tensor, write_ranks

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
