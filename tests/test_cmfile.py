"""Tests of gse.workloads.cmfile: exact round trips, htsim's example, and every refused line."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gse.workloads.cmfile import (CmFileError, format_cm, parse_cm, parse_cm_workload, ps_to_us,
                                  read_cm, read_cm_workload, us_to_ps, write_cm)
from gse.workloads.traffic import Message

EXAMPLE = """\
# htsim's example
Nodes 128
Connections 2
0->13 id 1 start 0 size 2000000
5->13 id 2 start 0 size 2000000   # trailing comment
"""


@st.composite
def workloads(draw):
    n = draw(st.integers(2, 1 << 20))
    count = draw(st.integers(0, 20))
    ids = draw(st.lists(st.integers(1, 2 ** 32 - 1), min_size=count, max_size=count,
                        unique=True))
    msgs = []
    for mid in ids:
        src = draw(st.integers(0, n - 1))
        dst = draw(st.integers(0, n - 2))
        if dst >= src:
            dst += 1
        start = draw(st.one_of(st.just(0), st.integers(0, 10 ** 6), st.integers(0, 2 ** 63 - 1)))
        msgs.append(Message(mid, src, dst, draw(st.integers(1, 2 ** 32 - 1)), start))
    msgs.sort(key=lambda m: (m.start_ps, m.msg_id))
    return n, msgs


@given(workloads())
def test_round_trip(w):
    n, msgs = w
    text = format_cm(n, msgs)
    assert parse_cm(text) == (n, msgs)


@given(st.integers(0, 2 ** 63 - 1))
def test_us_ps_exact(ps):
    assert us_to_ps(ps_to_us(ps)) == ps


def test_example_and_files(tmp_path):
    n, msgs = parse_cm(EXAMPLE)
    assert n == 128
    assert msgs == [Message(1, 0, 13, 2_000_000, 0), Message(2, 5, 13, 2_000_000, 0)]
    path = tmp_path / "x.cm"
    write_cm(path, n, msgs)
    assert read_cm(path) == (n, msgs)
    assert path.read_text().startswith("Nodes 128\nConnections 2\n0->13 id 1 start 0 size")


def test_start_units():
    assert us_to_ps("1.5") == 1_500_000
    assert us_to_ps("0.000001") == 1
    assert us_to_ps("0.000000") == 0           # htsim's own writer uses %f
    assert us_to_ps("2e-6") == 2
    assert us_to_ps("1.25E1") == 12_500_000
    assert us_to_ps("0.0000001") is None
    assert us_to_ps("-1") is None and us_to_ps("nan") is None and us_to_ps(".") is None
    assert ps_to_us(1_500_000) == "1.5" and ps_to_us(1) == "0.000001" and ps_to_us(0) == "0"


def test_missing_ids_sorted_and_assigned():
    text = "Nodes 4\nConnections 3\n1->2 start 5 size 10\n0->1 id 7 start 1 size 10\n" \
           "3->0 start 1 size 10\n"
    n, msgs = parse_cm(text)
    assert [(m.msg_id, m.src, m.start_ps) for m in msgs] == \
        [(7, 0, 1_000_000), (9, 3, 1_000_000), (8, 1, 5_000_000)]


BAD = [
    ("Connections 1\n0->1 id 1 start 0 size 1\nNodes 4\n", 2, "before the 'Nodes N'"),
    ("Nodes 4\nConnections 1\n0->1 id 1 start 0 size 1\nNodes 4\n", 4, "second Nodes"),
    ("Nodes 4\n0->1 id 1 start 0 size 1\n", 2, "before the 'Connections N'"),
    ("Nodes x\n", 1, "Nodes must be a whole number"),
    ("Nodes 4\nConnections 1\n0->4 id 1 start 0 size 1\n", 3, "destination node 4"),
    ("Nodes 4\nConnections 1\n9->1 id 1 start 0 size 1\n", 3, "source node 9"),
    ("Nodes 4\nConnections 1\n2->2 id 1 start 0 size 1\n", 3, "both node 2"),
    ("Nodes 4\nConnections 2\n0->1 id 1 start 0 size 1\n\n1->0 id 1 start 0 size 1\n", 5,
     "duplicate id 1 (first on line 3)"),
    ("Nodes 4\nConnections 1\n0->1 id 0 start 0 size 1\n", 3, "id must be in 1.."),
    ("Nodes 4\nConnections 1\n0->1 id 1 start 0 size 0\n", 3, "size must be in 1.."),
    ("Nodes 4\nConnections 1\n0->1 id 1 start 0 size 4294967296\n", 3, "size must be in 1.."),
    ("Nodes 4\nConnections 1\n0->1 id 1 start 0\n", 3, "no 'size'"),
    ("Nodes 4\nConnections 1\n0->1 id 1 size 5\n", 3, "no 'start'"),
    ("Nodes 4\nConnections 1\n0->1 id 1 start -1 size 5\n", 3, "start must be"),
    ("Nodes 4\nConnections 1\n0->1 id 1 start 0.0000001 size 5\n", 3, "whole number of pico"),
    ("Nodes 4\nConnections 1\n0->1 id 1 start 0 size 5 size 6\n", 3, "given twice"),
    ("Nodes 4\nConnections 1\n0->1 id 1 start 0 size\n", 3, "has no value"),
    ("Nodes 4\nConnections 1\n0 -> 1 id 1 start 0 size 5\n", 3, "unknown line"),
    ("Nodes 4\nConnections 1\n0->1x id 1 start 0 size 5\n", 3, "SRC->DST"),
    ("Nodes 4\nConnections 1\n0->1 id 1 start 0 size 5 colour red\n", 3, "unknown connection"),
    ("Nodes 4\nConnections 1\n0->1 id 1 start 0 size 5 send_done_trigger 3\n", 3,
     "trigger 3 is used but never defined"),
    ("Nodes 4\nConnections 1\n0->1 trigger 2 id 1 size 5\n", 3, "needs the connection's 'id'"),
    ("Nodes 4\nConnections 1\n0->1 id 1 trigger 2 start 0 size 5\n", 3, "'start' after"),
    ("Nodes 4\nConnections 1\n0->1 id 1 start 0 size 5 flowsize 9\n", 3, "'flowsize'"),
    ("Nodes 4\nConnections 1\n0->1 id 1 start 0 size 5 priority 2\n", 3, "'priority'"),
    ("Nodes 4\nConnections 1\n0->1 id 1 start 0 size 5 prio x\n", 3, "prio must be"),
    ("Nodes 4\nConnections 1\nTriggers 1\n0->1 id 1 start 0 size 5\ntrigger id 1 sometimes\n",
     5, "unknown trigger type 'sometimes'"),
    ("Nodes 4\nConnections 1\nTriggers 1\n0->1 id 1 start 0 size 5\ntrigger id 1 barrier\n", 5,
     "needs 'count K'"),
    ("Nodes 4\nConnections 1\nTriggers 1\n0->1 id 1 start 0 size 5\ntrigger id 0 oneshot\n", 5,
     "trigger id must be in 1.."),
    ("Nodes 4\nConnections 0\n# c\nfailure switch_type TOR switch_id 0 link_id 1\n", 4,
     "failure lines are not supported"),
    ("Nodes 4\nFailures 1\nConnections 0\n", 2, "failures are not supported"),
    ("Nodes 4\nTriggers 2\nConnections 0\n", 2, "declares 2 triggers but the file defines 0"),
    ("Nodes 4\nConnections 2\n0->1 id 1 start 0 size 5\n1->0 id 1 msg start 0 size 5\n", 4,
     "goes 1->0 but the connection"),
    ("Nodes 4\nConnections 1\n0->1 msg start 0 size 5\n", 3, "'msg' needs the connection's"),
    ("Nodes 4\nConnections 2\nTriggers 1\n0->1 id 1 start 0 size 5 send_done_trigger 1\n"
     "0->1 id 1 msg 2 trigger 1 size 5\ntrigger id 1 oneshot\n", 5, "reused connection"),
    ("Nodes 4\nConnections 1\nTriggers 1\n0->1 id 1 trigger 1 size 5\ntrigger id 1 oneshot\n",
     5, "nothing activates trigger 1"),
    ("Nodes 4\nConnections 3\nTriggers 1\n0->1 id 1 start 0 size 5 send_done_trigger 1\n"
     "0->2 id 2 start 0 size 5 send_done_trigger 1\n1->2 id 3 trigger 1 size 5\n"
     "trigger id 1 oneshot\n", 7, "htsim aborts at its second activation"),
    ("Nodes 4\nConnections 2\nTriggers 1\n0->1 id 1 start 0 size 5 send_done_trigger 1\n"
     "1->2 id 3 trigger 1 size 5\ntrigger id 1 barrier count 2\n", 6, "it would never fire"),
    ("Nodes 4\nConnections 3\nTriggers 1\n0->1 id 1 start 0 size 5 send_done_trigger 1\n"
     "1->2 id 2 trigger 1 size 5\n1->3 id 3 trigger 1 size 5\ntrigger id 1 multishot\n", 7,
     "the last would never start"),
    ("Nodes 4\nConnections 2\n0->1 id 1 start 0 size 5\n", 2, "declares 2 connections but"),
    ("Nodes 4\nConnections 0\nhello\n", 3, "unknown line"),
]


@pytest.mark.parametrize("text,lineno,word", BAD)
def test_bad_lines(text, lineno, word):
    with pytest.raises(CmFileError) as e:
        parse_cm(text, name="bad.cm")
    msg = str(e.value)
    assert msg.startswith("bad.cm:%d: " % lineno), msg
    assert word in msg, msg
    assert e.value.lineno == lineno
    offending = text.split("\n")[lineno - 1].split("#")[0].strip()
    assert repr(offending) in msg or e.value.text in ("Connections 2", "Triggers 2") \
        or e.value.text.startswith("trigger id")


@pytest.mark.parametrize("text,word", [
    ("Connections 0\n", "no 'Nodes N'"), ("Nodes 3\n", "no 'Connections N'"),
])
def test_missing_headers(text, word):
    with pytest.raises(CmFileError, match=word):
        parse_cm(text, name="h.cm")


def test_accepts_zero_triggers_and_failures():
    assert parse_cm("Nodes 2\nTriggers 0\nFailures 0\nConnections 0\n") == (2, [])


def test_format_errors():
    with pytest.raises(CmFileError, match="duplicate message id 3"):
        format_cm(4, [Message(3, 0, 1, 5), Message(3, 1, 0, 5)])
    with pytest.raises(CmFileError, match="id 0"):
        format_cm(4, [Message(0, 0, 1, 5)])
    with pytest.raises(CmFileError, match="below n_nodes 4"):
        format_cm(4, [Message(1, 0, 4, 5)])


def test_read_non_utf8(tmp_path):
    path = tmp_path / "bin.cm"
    path.write_bytes(b"Nodes 4\nConnections 0\n\xff\xfe\n")
    with pytest.raises(CmFileError, match=r"bin.cm:3: not UTF-8"):
        read_cm(path)


# -- triggers and msg: the syntax of uet-htsim's connection matrices ------------------------

SERIAL = """\
Nodes 4
Connections 6
Triggers 4
0->1 id 1 start 0 size 4000 send_done_trigger 1
1->2 id 2 start 0 size 4000 send_done_trigger 2
0->2 id 3 trigger 1 size 4000 send_done_trigger 3
1->3 id 4 trigger 2 size 4000
0->3 id 5 trigger 3 size 4000 recv_done_trigger 4
2->0 id 6 trigger 4 size 8000
trigger id 1 oneshot
trigger id 2 oneshot
trigger id 3 oneshot
trigger id 4 oneshot
"""


def test_trigger_chains_parse_as_htsim_reads_them(tmp_path):
    """The layout of uet-htsim's alltoall_serial_16n.cm: per host a chain of flows, each
    started by a oneshot trigger that the previous flow's send_done_trigger activates."""
    w = parse_cm_workload(SERIAL, "serial.cm")
    assert [m.msg_id for m in w.messages] == [1, 2]
    assert [(m.msg_id, m.src, m.dst, m.size) for m in w.held] == \
        [(3, 0, 2, 4000), (4, 1, 3, 4000), (5, 0, 3, 4000), (6, 2, 0, 8000)]
    assert w.held_by == {3: 1, 4: 2, 5: 3, 6: 4}
    assert w.send_done == {1: [1], 2: [2], 3: [3]} and w.recv_done == {5: [4]}
    assert {t.id: (t.kind, t.targets, t.activators) for t in w.triggers.values()} == {
        1: ("oneshot", [3], [(1, "send")]), 2: ("oneshot", [4], [(2, "send")]),
        3: ("oneshot", [5], [(3, "send")]), 4: ("oneshot", [6], [(5, "recv")])}
    with pytest.raises(CmFileError, match="starts flows by triggers"):
        parse_cm(SERIAL)                       # the message-list API refuses to drop them
    path = tmp_path / "serial.cm"
    path.write_text(SERIAL)
    assert read_cm_workload(path).summary()["triggers"] == {"oneshot": 4}


def test_multishot_barrier_count_and_prio():
    text = ("Nodes 8\nConnections 6\nTriggers 2\n"
            "0->1 id 1 start 0 size 10 send_done_trigger 1 send_done_trigger 2 prio 3\n"
            "2->1 id 2 start 0 size 10 send_done_trigger 2 send_done_trigger 1\n"
            "1->3 id 3 trigger 1 size 10\n1->4 id 4 trigger 1 size 10\n"
            "5->6 id 5 trigger 2 size 10\n6->7 id 6 trigger 2 size 10\n"
            "trigger id 1 multishot\ntrigger id 2 barrier count 2\n")
    w = parse_cm_workload(text)
    assert w.triggers[1].targets == [3, 4] and w.triggers[2].count == 2
    assert w.send_done == {1: [1, 2], 2: [2, 1]}
    assert w.ignored == {"prio (htsim's priority; not modelled)": 1}


def test_msg_reuses_a_connection_with_fresh_message_ids():
    """test_cr_1f10m10p.cm's layout: several messages on one connection id."""
    text = ("Nodes 2\nConnections 3\nTriggers 0\n0->1 id 1 msg start 0 size 4086\n"
            "0->1 id 1 msg 7 start 0 size 4086\n0->1 id 1 msg start 2 size 100\n")
    w = parse_cm_workload(text)
    assert [(m.msg_id, m.start_ps, m.size) for m in w.messages] == \
        [(1, 0, 4086), (2, 0, 4086), (3, 2_000_000, 100)]
    assert w.flow_of == {2: 1, 3: 1}
    assert parse_cm(text)[1] == w.messages           # no triggers: the plain API reads it
