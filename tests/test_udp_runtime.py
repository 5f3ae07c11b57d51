"""The in-process UDP runtime on a k=4 Fat-Tree over loopback: real sockets, real time.

What is asserted is correctness, never speed: every message delivered exactly once and
intact under injected loss, malformed datagrams counted by reason and dropped while the
run goes on, and nothing (task, socket) left behind, also when a run is cancelled.  Runs
are small (tens of KB per message at 0.2 Gb/s) and every wait is bounded generously, so
they pass on a loaded two-core machine.
"""

import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time

import pytest

from gse.cli.main import main
from gse.runtimes.udp.io import run_async, uvloop_available
from gse.runtimes.udp.network import UdpNetwork, run_udp
from gse.wire.codec import encode
from gse.wire.packet import ACK, DATA, PRIO_DATA, Packet
from gse.workloads import traffic
from gse.workloads.traffic import Message
from topologies.fattree import fat_tree

LOOPS = ["asyncio"] + (["uvloop"] if uvloop_available() else [])
SIZE = 48 * 1024
TIMEOUT_S = 30.0          # a run takes well under a second; a stuck one fails in 30 s


def fds():
    return len(os.listdir("/proc/self/fd"))


def stuck(result):
    """What the senders of unfinished messages hold (for the failure message)."""
    out = []
    for h in result.network.hosts:
        for mid, m in h.agent.out.items():
            out.append("host %d msg %d: acked %d/%d, retx %s, credit %d, need %d/%d, "
                       "probe %s, rto %d, timers %d"
                       % (h.node, mid, m.n_acked, m.npkts, list(m.retx)[:4], m.credit,
                          m.credit_received, m.need_total, m.probe, m.rto_deadline,
                          len(h.agent.timers)))
    return "; ".join(out)


def check_intact(result, messages):
    s = result.summary
    u = s["udp"]
    assert u["end"] == "done", stuck(result)
    assert s["lost"] == 0 and s["delivered"] == s["completed"] == len(messages)
    assert u["duplicate_deliveries"] == 0 and u["payload_errors"] == 0
    assert u["payload_bytes"] >= sum(m.size for m in messages)   # every byte was checked
    assert u["errors"] == [] and u["agent_errors"] == 0
    for r in result.records:
        assert 0 < r.deliver_ps and 0 < r.finish_ps


@pytest.mark.parametrize("loop", LOOPS)
def test_permutation_with_loss_delivers_everything_intact(loop):
    topo = fat_tree(4, link_gbps=0.2)
    msgs = traffic.permutation(16, SIZE, random.Random(5))
    result = run_udp(topo, msgs, loss_rate=0.01, seed=5, loop=loop, timeout_s=TIMEOUT_S)
    check_intact(result, msgs)
    s = result.summary
    assert s["wire_drops"] > 0 and s["retransmits"] >= s["wire_drops"] - s["trims"] - 5
    assert s["udp"]["loop"] == loop and s["runtime"] == "udp"
    assert s["udp"]["malformed_total"] == 0 and s["udp"]["foreign"] == 0


def test_switch_latency_and_queues_with_corruption_deliver_everything_intact():
    """Switches decode into one reusable packet: what waits (the switch-latency timer, a
    busy port's queue, ECN marks and trims that re-encode) must be a copy of it."""
    topo = fat_tree(4, link_gbps=0.05, switch_latency_ns=2000)
    msgs = traffic.incast(16, 6, SIZE, random.Random(3), receiver=0)
    result = run_udp(topo, msgs, corrupt_rate=0.005, seed=3, timeout_s=TIMEOUT_S)
    check_intact(result, msgs)
    s = result.summary
    assert s["trims"] + s["ecn_marks"] > 0                  # queues built and changed packets
    assert s["corrupted"] == s["udp"]["malformed"]["checksum"]
    assert s["udp"]["foreign"] == 0


def test_incast_with_loss_and_corruption_delivers_everything_intact():
    topo = fat_tree(4, link_gbps=0.2)
    msgs = traffic.incast(16, 8, SIZE, random.Random(2), receiver=3)
    result = run_udp(topo, msgs, loss_rate=0.01, corrupt_rate=0.005, seed=2,
                     timeout_s=TIMEOUT_S, addressing="ips")
    check_intact(result, msgs)
    s = result.summary
    # corrupted datagrams are caught by the next node's checksum, counted and dropped
    assert s["corrupted"] == s["udp"]["malformed"]["checksum"] > 0
    assert s["udp"]["addressing"] == "ips"
    assert all(ip.startswith("127.78.") for ip, _ in result.network.addresses)


def junk_datagrams(max_datagram):
    good = encode(Packet(ACK, 1, 2, msg_id=3, psn=4))
    data = encode(Packet(DATA, 0, 15, msg_id=9, psn=0, payload_len=512, msg_len=512,
                         prio=PRIO_DATA))
    flipped = bytearray(data)
    flipped[100] ^= 0xFF
    version = bytearray(good)
    version[0] = 9
    kind = bytearray(good)
    kind[1] = 200
    return {
        "truncated": [b"", b"\x01" * 10, good[:63]],
        "oversized": [bytes(max_datagram + 1), b"\x01" * (max_datagram + 500)],
        "version": [bytes(version)],
        "kind": [bytes(kind)],
        "checksum": [bytes(flipped)],
        "length": [data[:-1]],
    }, good


def test_malformed_datagrams_to_every_node_are_counted_and_dropped():
    topo = fat_tree(4, link_gbps=0.2)
    msgs = traffic.permutation(16, SIZE, random.Random(8))
    rounds = 3

    async def scenario():
        async with UdpNetwork(topo, msgs, seed=8) as net:
            junk, good = junk_datagrams(4096 + 64)
            task = asyncio.ensure_future(net.run(timeout_s=TIMEOUT_S))
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                # All rounds go out before the traffic gets going: each node's socket
                # then holds the junk ahead of the legitimate datagrams it must still
                # read, so every piece is counted however fast the run completes.
                for _ in range(rounds):
                    await asyncio.sleep(0)
                    for addr in net.addresses:
                        for items in junk.values():
                            for d in items:
                                sock.sendto(d, addr)
                        sock.sendto(good, addr)     # valid, but not from a neighbour
            finally:
                sock.close()
            await task
        return net.result(), junk

    result, junk = run_async(scenario, "auto")
    check_intact(result, msgs)
    for node in result.network.node_counters():
        for reason, items in junk.items():
            assert node["malformed"][reason] == rounds * len(items), (node["name"], reason)
        assert node["foreign"] == rounds
    u = result.summary["udp"]
    assert u["malformed_total"] == 36 * rounds * sum(len(v) for v in junk.values())


def test_cancel_mid_run_leaves_no_task_or_socket():
    topo = fat_tree(4, link_gbps=0.05)
    msgs = traffic.permutation(16, 2_000_000, random.Random(1))   # seconds of traffic
    before = fds()

    async def scenario():
        net = UdpNetwork(topo, msgs)
        await net.open()
        assert fds() >= before + 36
        task = asyncio.ensure_future(net.run(timeout_s=TIMEOUT_S))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await net.close()
        await asyncio.sleep(0)
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        return net, others

    net, others = run_async(scenario, "auto")
    assert others == []
    assert all(ep.closed and ep.sock.fileno() == -1 for ep in net.endpoints)
    assert net.sched.closed and not net.sched.heap
    assert fds() == before
    assert len(net.delivered) < len(msgs)                 # it was stopped mid-run


def test_interrupt_inside_run_async_closes_everything():
    """An exception escaping the run (here a timeout of an outer wait) still closes all."""
    topo = fat_tree(4, link_gbps=0.05)
    msgs = traffic.permutation(16, 2_000_000, random.Random(1))
    before = fds()
    holder = {}

    async def scenario():
        async with UdpNetwork(topo, msgs) as net:
            holder["net"] = net
            await asyncio.wait_for(net.run(timeout_s=TIMEOUT_S), 0.3)

    with pytest.raises(asyncio.TimeoutError):
        run_async(scenario, "asyncio")
    assert all(ep.closed for ep in holder["net"].endpoints)
    assert fds() == before


def test_timeout_bounds_a_run_that_cannot_finish():
    topo = fat_tree(4, link_gbps=0.01)
    result = run_udp(topo, [Message(1, 0, 15, 5_000_000)], timeout_s=0.5)
    s = result.summary
    # the message needs 4 s on the wire: a run that ended "timeout" was ended by the bound
    assert s["udp"]["end"] == "timeout" and s["lost"] == 1 and not s["complete"]


def test_cli_run_udp_writes_the_sim_summary_schema(tmp_path):
    sim_out, udp_out = tmp_path / "sim.json", tmp_path / "udp.json"
    common = ["--k", "4", "--link-gbps", "0.2", "--traffic", "incast", "--senders", "4",
              "--size", "40000", "--seed", "4", "--quiet"]
    assert main(["sim"] + common + ["--json", str(sim_out)]) == 0
    rec = tmp_path / "r.csv"
    assert main(["run", "--runtime", "udp"] + common + ["--json", str(udp_out), "--records",
                                                        str(rec), "--timeout-s", "60"]) == 0
    sim, udp = json.loads(sim_out.read_text()), json.loads(udp_out.read_text())
    assert set(sim) <= set(udp)
    for key in ("fct_us", "slowdown", "goodput_gbps", "peak_queue_bytes"):
        assert set(sim[key]) <= set(udp[key])
    assert udp["lost"] == 0 and udp["delivered"] == 4 and udp["runtime"] == "udp"
    assert udp["config"]["rto_ps"] == 30_000_000_000       # real-time timers by default
    assert len(rec.read_text().splitlines()) == 5


def test_cli_run_rejects_bad_options(capsys):
    assert main(["run", "--k", "4", "--traffic", "incast", "--senders", "40"]) == 2
    assert "senders" in capsys.readouterr().err


def sockets_of(pid):
    n = 0
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                n += os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:")
            except OSError:
                pass
    except OSError:
        pass
    return n


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_gse_run_stopped_by_a_signal_writes_its_partial_summary(sig, code, tmp_path):
    """Issue 19 item 7: a run stopped by SIGINT or SIGTERM exited without writing anything;
    now it writes what was delivered so far, marked incomplete, and exits 128 + signal."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out, rec = tmp_path / "partial.json", tmp_path / "partial.csv"
    proc = subprocess.Popen([sys.executable, "-m", "gse", "run", "--link-gbps", "0.01",
                             "--size", "5000000", "--timeout-s", "60", "--quiet",
                             "--json", str(out), "--records", str(rec)],
                            cwd=root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60        # wait until its 36 sockets are open
        while time.time() < deadline and proc.poll() is None and sockets_of(proc.pid) < 36:
            time.sleep(0.05)
        time.sleep(0.3)                    # traffic flowing
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err
    assert "interrupted" in err and "Traceback" not in err
    s = json.loads(out.read_text())
    assert s["complete"] is False and s["udp"]["end"] == "signal"
    assert s["udp"]["signal"] == sig.name
    assert s["messages"] == 16 and s["delivered"] < 16 and s["runtime"] == "udp"
    assert len(rec.read_text().splitlines()) == 17          # every message, done or not


def test_a_completed_run_is_marked_complete():
    topo = fat_tree(4, link_gbps=0.2)
    msgs = [Message(1, 0, 15, 20_000)]
    assert run_udp(topo, msgs, timeout_s=TIMEOUT_S).summary["complete"] is True
