"""``--pcap`` over real datagrams: the one-process UDP runtime and Mininet's agents.

The frames hold exactly the datagrams that crossed the sockets, in wall time: each one
decodes (``gse.wire.codec.decode``) or is one the run corrupted on purpose, the interface
sees both directions, and tshark with the dissector (where installed) decodes every frame.
The Mininet test needs root and Mininet (skipped elsewhere, as the other Mininet tests).
"""

import json
import os
import random
import shutil
import subprocess

import pytest

from gse.protocols import default_config
from gse.runtimes.mininet.environment import mininet_unavailable
from gse.runtimes.udp.config import udp_profile
from gse.runtimes.udp.network import run_udp
from gse.wire.codec import decode
from gse.wire.packet import DATA, PAUSE
from gse.workloads.traffic import incast
from topologies import fat_tree

dpkt = pytest.importorskip("dpkt")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LUA = os.path.join(ROOT, "tools", "wireshark", "gse.lua")


def read_capture(directory):
    """{file: [(ts_ns, (src ip, sport), (dst ip, dport), Packet)]} of every capture."""
    out = {}
    entries = []
    for name in os.listdir(directory):
        if name.startswith("captures") and name.endswith(".json"):
            d = json.loads(open(os.path.join(directory, name)).read())
            assert d["clock"] == "wall"
            entries += d["interfaces"]
    for e in entries:
        rows = []
        with open(os.path.join(directory, e["file"]), "rb") as f:
            for ts, buf in dpkt.pcap.Reader(f):
                ip = dpkt.ethernet.Ethernet(buf).data
                udp = ip.data
                rows.append((ts, (ip.src, udp.sport), (ip.dst, udp.dport),
                             decode(bytes(udp.data))))
        assert len(rows) == e["packets"]
        out[e["file"]] = (e, rows)
    return out


def tshark_check(path):
    exe = shutil.which("tshark")
    if exe is None:
        return
    out = subprocess.run([exe, "-n", "-X", "lua_script:" + LUA, "-r", str(path), "-T",
                          "fields", "-e", "frame.protocols", "-e", "_ws.malformed", "-e",
                          "gse.checksum.status"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    for line in out.stdout.splitlines():
        assert line.split("\t") == ["eth:ethertype:ip:udp:gse", "", "good"], line


def test_udp_runtime_captures(tmp_path):
    topo = fat_tree(4, link_gbps=1)
    msgs = incast(16, 4, 60_000, random.Random(1), receiver=0)
    res = run_udp(topo, msgs, "roce", udp_profile(default_config("roce")), 1, timeout_s=60,
                  pcap={"dir": str(tmp_path), "spec": "host:0,edge0_0:2", "budget": 5000,
                        "snaplen": 65535})
    assert res.summary["lost"] == 0
    caps = read_capture(str(tmp_path))
    assert sorted(caps) == ["edge0_0-p2.pcap", "h0-p0.pcap"]
    entry, rows = caps["h0-p0.pcap"]
    assert entry["node_name"] == "h0" and entry["peer_name"] == "edge0_0"
    data = [p for _, _, _, p in rows if p.kind == DATA]
    assert sum(p.payload_len for p in data) >= sum(m.size for m in msgs)
    assert {p.dst for p in data} == {0}
    assert any(p.src == 0 for _, _, _, p in rows)          # both directions
    times = [t for t, _, _, _ in rows]
    assert times == sorted(times)
    for name in caps:
        tshark_check(tmp_path / name)


def test_secured_captures_decode_with_the_dissector_and_show_the_runs_epoch(tmp_path):
    """--secure: every frame a flag F_SEC, a checksum that verifies, no malformed mark,
    and the trailer read by the dissector: the run's epoch, counters that never repeat
    toward one destination (docs/wire-format.md, "Authenticated packets")."""
    exe = shutil.which("tshark")
    if exe is None:
        pytest.skip("tshark is not installed (scripts/setup-tshark.sh, as root)")
    key = tmp_path / "domain.key"
    key.write_text("ab" * 32 + "\n")
    topo = fat_tree(4, link_gbps=1)
    msgs = incast(16, 4, 60_000, random.Random(1), receiver=0)
    res = run_udp(topo, msgs, "roce", udp_profile(default_config("roce")), 1, timeout_s=60,
                  secure_key_file=str(key),
                  pcap={"dir": str(tmp_path / "c"), "spec": "host:0,host:%d" % msgs[0].src,
                        "budget": 5000, "snaplen": 65535})
    assert res.summary["lost"] == 0
    epoch = json.loads((tmp_path / "domain.key.epochs").read_text())["epoch"]
    fields = ("frame.protocols", "_ws.malformed", "gse.checksum.status", "gse.flags.sec",
              "gse.src", "gse.dst", "gse.kind", "gse.sec.epoch", "gse.sec.counter")
    for name in ("h0-p0.pcap", "h%d-p0.pcap" % msgs[0].src):
        seen = set()
        cmd = [exe, "-n", "-X", "lua_script:" + LUA, "-r", str(tmp_path / "c" / name), "-T",
               "fields"]
        for field in fields:
            cmd += ["-e", field]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        rows = [dict(zip(fields, line.split("\t"))) for line in out.stdout.splitlines()]
        assert len(rows) > 10
        for row in rows:
            assert row["frame.protocols"] == "eth:ethertype:ip:udp:gse", row
            assert row["_ws.malformed"] == "" and row["gse.checksum.status"] == "good", row
            assert row["gse.flags.sec"] == "1" and int(row["gse.sec.epoch"]) == epoch, row
            key_of = (row["gse.kind"] in ("5", "6"), row["gse.src"], row["gse.dst"],
                      row["gse.sec.counter"])
            assert key_of not in seen, row                     # no counter twice
            seen.add(key_of)


REASON = mininet_unavailable()


@pytest.mark.skipif(REASON is not None, reason="Mininet: %s" % (REASON,))
def test_mininet_agents_capture(tmp_path):
    from gse.runtimes.mininet.run import run_mininet
    topo = fat_tree(4, link_gbps=0.5)
    msgs = incast(16, 6, 40_000, random.Random(1), receiver=0)
    res = run_mininet(topo, msgs, "roce", udp_profile(default_config("roce")), seed=1,
                      timeout_s=90.0, pcap={"dir": str(tmp_path / "caps"),
                                            "spec": "all,edge0_0:0",
                                            "budget": 5000, "snaplen": 65535})
    assert res.summary["lost"] == 0, res.summary["mininet"]
    caps = read_capture(str(tmp_path / "caps"))
    assert "h0-p0.pcap" in caps and "edge0_0-p0.pcap" in caps
    manifests = [n for n in os.listdir(tmp_path / "caps") if n.startswith("captures-")]
    assert "captures-h0.json" in manifests
    # the receiver's NIC and the ToR port facing it see the same incast
    _, at_host = caps["h0-p0.pcap"]
    _, at_tor = caps["edge0_0-p0.pcap"]
    host_data = sorted((p.src, p.msg_id, p.psn) for _, _, _, p in at_host if p.kind == DATA)
    tor_data = sorted((p.src, p.msg_id, p.psn) for _, _, _, p in at_tor if p.kind == DATA)
    assert host_data and host_data == tor_data
    kinds = {p.kind for _, rows in caps.values() for _, _, _, p in rows}
    assert DATA in kinds
    # every link is captured: a PAUSE any switch sent is in some file
    assert (PAUSE in kinds) == (res.summary.get("pfc_pauses", 0) > 0)
    for name in caps:
        tshark_check(tmp_path / "caps" / name)
