"""pcap captures (``--pcap``) and the Wireshark dissector (tools/wireshark/gse.lua).

Captures of a GSE run (with trims), a GSE fabric-mode run (leaf REQUEST/GRANT, the DATA
shim) and a RoCE/PFC run (PAUSE/RESUME, CNP) on a k=4 Fat-Tree:

* every frame reads back (dpkt) as Ethernet/IPv4/UDP around a datagram that
  ``gse.wire.codec.decode`` accepts and that equals the packet the simulator handled;
* ``tshark -X lua_script:tools/wireshark/gse.lua`` decodes every frame as GSE with no
  malformed-packet mark, and the fields of 1,000 sampled packets of each run equal the
  simulator's own records (the ``Packet.fields()`` it had when the packet crossed the
  link).

tshark is installed by ``./dev test`` (scripts/setup-tshark.sh, as root); where it is not
there the tshark tests skip with that reason, except under CI, where they fail.
"""

import json
import os
import random
import shutil
import subprocess

import pytest

from gse.cli.main import main
from gse.protocols import default_config
from gse.runtimes.sim.capture import SimCapture
from gse.runtimes.sim.run import run_simulation
from gse.wire.codec import decode
from gse.wire.packet import (ACK, CNP, DATA, F_TRIMMED, GRANT, NACK, PAUSE, REQUEST, RESUME)
from gse.workloads.traffic import incast, permutation
from topologies import fat_tree

dpkt = pytest.importorskip("dpkt")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LUA = os.path.join(ROOT, "tools", "wireshark", "gse.lua")
TOPO = fat_tree(4)
N = len(TOPO.hosts)
FIELDS = ("kind", "flags", "src", "dst", "msg_id", "psn", "entropy", "payload_len",
          "msg_len", "credit", "aux", "sack_base", "sack_bits", "ts", "prio")


def tshark():
    path = shutil.which("tshark")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("tshark is missing under CI (scripts/setup-tshark.sh installs it)")
        pytest.skip("tshark is not installed (scripts/setup-tshark.sh, as root)")
    return path


def traffic():
    msgs = incast(N, 10, 300_000, random.Random(1)) + permutation(N, 120_000,
                                                                  random.Random(2))
    for i, m in enumerate(msgs):
        m.msg_id = i
    return msgs


def capture(protocol, directory, spec="all", budget=4000, snaplen=65535, **run):
    cfg = default_config(protocol)
    if protocol == "gse":
        cfg.trim_bytes = 30_000              # trims in the incast
    caps = []

    def make(net):
        caps.append(SimCapture(net, str(directory), spec, budget, snaplen, True))
        return caps[-1]
    result = run_simulation(TOPO, traffic(), protocol, cfg, 3, observers=[make], **run)
    return result, caps[0]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = {}
    for protocol in ("gse", "gse-fabric", "roce"):
        d = tmp_path_factory.mktemp(protocol)
        result, cap = capture(protocol, d)
        out[protocol] = (d, result, cap)
    return out


def frames(path):
    with open(path, "rb") as f:
        reader = dpkt.pcap.Reader(f)
        assert reader._divisor == 1e9           # nanosecond pcap
        return [(ts, buf) for ts, buf in reader]


@pytest.mark.parametrize("protocol", ["gse", "gse-fabric", "roce"])
def test_frames_carry_the_simulators_packets(runs, protocol):
    d, result, cap = runs[protocol]
    manifest = json.loads((d / "captures.json").read_text())
    assert manifest["clock"] == "virtual"
    files = {e["file"]: e for e in manifest["interfaces"]}
    assert len(files) == len(TOPO.links)          # "all": every link once
    records = cap.records()
    kinds = set()
    total = 0
    for name, recs in records.items():
        got = frames(os.path.join(d, name))
        assert len(got) == len(recs) == files[name]["packets"] <= 4000
        last = -1
        for (ts, buf), (number, t_ns, fields) in zip(got, recs):
            eth = dpkt.ethernet.Ethernet(buf)
            ip = eth.data
            udp = ip.data
            assert udp.sport == udp.dport == 47000
            assert len(buf) == 14 + ip.len and ip.len == 20 + udp.ulen
            assert eth.type == dpkt.ethernet.ETH_TYPE_IP and ip.p == dpkt.ip.IP_PROTO_UDP
            assert ip.v == 4 and ip.hl == 5 and ip.ttl == 64 and udp.sum == 0
            sent = ip.sum                      # the header checksum dpkt computes
            ip.sum = 0
            assert dpkt.ip.IP(bytes(ip)).sum == sent
            pkt = decode(bytes(udp.data))
            assert pkt.fields() == fields
            assert ip.src == bytes((10, 0, fields[2] >> 8, fields[2] & 255))
            assert t_ns >= last            # in time order
            last = t_ns
            kinds.add((fields[0], fields[1] & F_TRIMMED))
            total += 1
    assert total > 3000
    assert result.summary["lost"] == 0
    expected = {"gse": {(DATA, 0), (DATA, F_TRIMMED), (REQUEST, 0), (GRANT, 0), (ACK, 0),
                        (NACK, 0)},
                "gse-fabric": {(DATA, 0), (REQUEST, 0), (GRANT, 0), (ACK, 0)},
                "roce": {(DATA, 0), (ACK, 0), (PAUSE, 0), (RESUME, 0), (CNP, 0)}}[protocol]
    assert expected <= kinds


def test_capturing_changes_nothing(tmp_path):
    result, _ = capture("roce", tmp_path, "tier:edge", 100)
    plain = run_simulation(TOPO, traffic(), "roce", default_config("roce"), 3)
    assert result.per_message() == plain.per_message()
    assert result.summary["events"] == plain.summary["events"]


def test_budget_and_snaplen(tmp_path):
    _, cap = capture("gse", tmp_path, "host:3,edge0_0:2", budget=50, snaplen=200)
    manifest = json.loads((tmp_path / "captures.json").read_text())
    assert sorted(e["file"] for e in manifest["interfaces"]) == ["edge0_0-p2.pcap",
                                                                 "h3-p0.pcap"]
    for e in manifest["interfaces"]:
        assert e["packets"] == 50 and e["not_written_over_budget"] > 0
        with open(tmp_path / e["file"], "rb") as f:
            for hdr in dpkt.pcap.Reader(f):
                pass
    with open(tmp_path / "h3-p0.pcap", "rb") as f:
        raw = f.read()
    # record headers: caplen <= 200 while the frame's length is kept
    pos, lens = 24, []
    while pos < len(raw):
        caplen = int.from_bytes(raw[pos + 8:pos + 12], "little")
        wirelen = int.from_bytes(raw[pos + 12:pos + 16], "little")
        lens.append((caplen, wirelen))
        pos += 16 + caplen
    assert all(c <= 200 and c <= w for c, w in lens)
    assert any(w > 4000 for _, w in lens)


@pytest.mark.parametrize("spec,error", [
    ("", "empty"), ("host:99", "outside"), ("tier:router", "no node of kind"),
    ("edge0_0:9", "has ports"), ("nowhere:1", "node name or id"), ("h3:1:2", "NODE:PORT"),
    ("tier:edge:sideways", "up|down"), ("bogus", "not a host name"),
])
def test_bad_port_specs_are_named(tmp_path, spec, error):
    with pytest.raises(ValueError, match=error):
        capture("gse", tmp_path, spec)


def test_cli_pcap(tmp_path, capsys):
    rc = main(["sim", "--k", "4", "--size", "50000", "--pcap", str(tmp_path / "c"),
               "--pcap-ports", "host:0,tier:core", "--pcap-budget", "20"])
    assert rc == 0 and "pcap captures written" in capsys.readouterr().out
    assert "h0-p0.pcap" in os.listdir(tmp_path / "c")
    assert main(["sim", "--k", "4", "--pcap", str(tmp_path / "d"), "--pcap-snaplen", "50",
                 "--quiet"]) == 2


# -- the dissector -------------------------------------------------------------------------

TS_FIELDS = ("frame.number", "frame.protocols", "_ws.malformed", "gse.kind", "gse.flags",
             "gse.src", "gse.dst", "gse.msg_id", "gse.psn", "gse.entropy", "gse.payload_len",
             "gse.msg_len", "gse.credit", "gse.aux", "gse.sack_base", "gse.sack_bits",
             "gse.ts", "gse.prio", "gse.version", "gse.sack.received", "gse.checksum.status",
             "gse.fabric.voq_seq", "gse.flags.trimmed")


def run_tshark(path, *options):
    cmd = [tshark(), "-n", "-X", "lua_script:" + LUA, "-r", str(path), "-T", "fields",
           "-E", "separator=|", "-E", "occurrence=f"] + list(options)
    for name in TS_FIELDS:
        cmd += ["-e", name]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "Lua" not in out.stderr or "error" not in out.stderr.lower(), out.stderr
    rows = [dict(zip(TS_FIELDS, line.split("|"))) for line in out.stdout.splitlines()]
    for row in rows:     # the dissector ran to its end (a Lua error stops it short)
        assert row["gse.checksum.status"] != "", row
    return rows


def merged(directory, records, path):
    """Every capture file of ``directory`` in one pcap, with the records in that order."""
    order = []
    with open(path, "wb") as out:
        w = dpkt.pcap.Writer(out, snaplen=65535, nano=True)
        for name in sorted(records):
            for (ts, buf), rec in zip(frames(os.path.join(directory, name)), records[name]):
                w.writepkt(buf, ts)
                order.append(rec)
    return order


@pytest.mark.parametrize("protocol", ["gse", "gse-fabric", "roce"])
def test_tshark_decodes_every_packet_and_the_fields_match(runs, protocol, tmp_path):
    tshark()
    d, _, cap = runs[protocol]
    path = tmp_path / "all.pcap"
    order = merged(d, cap.records(), path)
    rows = run_tshark(path, "-o", "gse.verify:FALSE")
    assert len(rows) == len(order) > 3000
    for row in rows:
        assert row["frame.protocols"] == "eth:ethertype:ip:udp:gse", row
        assert row["_ws.malformed"] == "", row
    sample = random.Random(protocol).sample(range(len(order)), 1000)
    for i in sample:
        row = rows[i]
        _, _, fields = order[i]
        assert int(row["gse.version"]) == 1
        got = tuple(int(row["gse." + name], 0) for name in FIELDS)
        assert got == fields, (i, row)
        kind, flags, sack_base, sack_bits = fields[0], fields[1], fields[11], fields[12]
        if kind == ACK:
            want = ",".join(str(sack_base + b) for b in range(64) if sack_bits >> b & 1)
            assert row["gse.sack.received"] == want
        assert int(row["gse.flags.trimmed"] == "1") == int(bool(flags & F_TRIMMED))
        if protocol == "gse-fabric" and kind == DATA and fields[10]:
            assert int(row["gse.fabric.voq_seq"]) == fields[10]


def test_tshark_verifies_checksums_and_reads_cut_frames(tmp_path):
    tshark()
    dst = traffic()[0].dst                    # the incast's receiver: a busy NIC
    name = "h%d-p0.pcap" % dst
    _, cap = capture("gse", tmp_path / "full", "host:%d" % dst, budget=300,
                     corrupt_rate=0.02)
    rows = run_tshark(tmp_path / "full" / name)
    assert len(rows) == 300
    status = [r["gse.checksum.status"] for r in rows]
    assert "bad" in status and status.count("good") > 250
    assert all(r["_ws.malformed"] == "" for r in rows)
    for row, (_, _, fields) in zip(rows, cap.records()[name]):
        assert tuple(int(row["gse." + n], 0) for n in FIELDS) == fields
    _, cap = capture("roce", tmp_path / "cut", "host:%d" % dst, budget=300, snaplen=150)
    rows = run_tshark(tmp_path / "cut" / name)
    assert len(rows) == 300
    assert all(r["frame.protocols"].endswith(":gse") and r["_ws.malformed"] == ""
               for r in rows)
    data = 0
    for row, (_, _, fields) in zip(rows, cap.records()[name]):
        assert tuple(int(row["gse." + n], 0) for n in FIELDS) == fields
        if fields[0] == DATA:
            data += 1
            assert row["gse.checksum.status"].startswith("unverified")
    assert data > 100
