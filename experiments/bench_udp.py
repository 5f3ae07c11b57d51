"""How much of one Python process's UDP forwarding capacity the GSE runtime keeps.

One GSE message stream host to host across the k=4 Fat-Tree (h0 -> h15: edge, agg, core,
agg, edge: 5 switch hops, 6 links), all 36 nodes on one event loop over real UDP, beside a
no-protocol floor measured in the same run on the same kind of loop: the same chain of
5 plain forwarders between a source and a sink, 4,160-byte datagrams (a full DATA packet),
with a window of datagrams in flight so that socket buffers never overflow.  Three floors
and the switch chain:

* ``dgram``: forwarders written with asyncio-dgram's own API (``await recv()``,
  ``await send()``), the plain way;
* ``endpoint``: forwarders on the runtime's own I/O path (``gse.runtimes.udp.io.Endpoint``: a
  reader callback draining the socket, ``sendto``; recvfrom(2)/sendto(2) called from C in
  the compiled build), i.e. exactly the runtime minus decoding, routing, queues and agents;
* ``c``: the same chain as a minimal C program (``experiments/c_forwarder.c``: recvmmsg(2)
  and sendmmsg(2) of 32 datagrams, nothing else), compiled here with ``cc -O2`` so that
  it does not depend on which build of the project is active; what the kernel's loopback
  path costs, the ceiling of any forwarder in one process.  Absent (None) without ``cc``.

and ``switch``: the same chain of 5 hops made of the runtime's own UDP switches
(``SwitchDriver``, ``Switch.route``, ``OutputQueue``, ``EmulatedPort`` at the stream's
link rate, the node ``Scheduler``) fed valid DATA datagrams: the one-process switch
forwarder that issue 27 compares with the ``c`` floor (target: within 1.5x) and the
``endpoint`` floor (target: at least 3x).  ``switch_py`` is the same chain with the
compiled data plane turned off (``gse.runtimes.udp.dataplane``), i.e. the switch as it
was before it; in the pure build both are the Python path.  ``--compare-dataplane`` also
runs the GSE stream with the data plane off (``GSE_DATAPLANE=0``) in each round.
``--fabric-spine`` makes the chains' switches fabric-mode spines (``FabricSpine``, as
``--protocol gse-fabric`` runs its spines and cores: queues of
``queue_config("gse-fabric")``, step ECN marking at ``ecn_bytes``), each with two
uplinks toward the next hop, chosen by byte 1 of the entropy, which the datagrams vary.

The emulated links are fast (100 Gb/s by default) so that the process, not the emulated
rate, limits the stream.  Reported per loop (asyncio, uvloop when installed), median of
``--repeat`` runs: data datagrams/s (payload packets over the sender's completion time),
all datagrams/s sent by the stream's hosts (data plus ACK, GRANT, REQUEST), goodput, and
the ratio of data datagrams/s to each floor.

    python experiments/bench_udp.py                    # both loops, 3 runs each
    python experiments/bench_udp.py --loops uvloop --size 8000000 --json bench.json
    python experiments/bench_udp.py --secure domain.key      # and with authenticated packets
    python experiments/bench_udp.py --loops asyncio --switch-only --hops 9   # switch chains
    python experiments/bench_udp.py --loops asyncio --switch-only --fabric-spine --repeat 7
"""

import argparse
import asyncio
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import asyncio_dgram  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

from gse.runtimes.udp.io import Endpoint, open_udp_socket, run_async, uvloop_available  # noqa: E402
from gse.runtimes.udp.network import UdpNetwork  # noqa: E402
from gse.wire.packet import HEADER_BYTES  # noqa: E402
from gse.workloads.traffic import Message  # noqa: E402
from topologies.fattree import fat_tree  # noqa: E402

DATAGRAM = 4096 + HEADER_BYTES
HOPS = 5


def user_s(who=resource.RUSAGE_SELF):
    """User-space CPU seconds so far (the kernel's share is the rest of process_time)."""
    return resource.getrusage(who).ru_utime


async def floor_chain(n, window, style, timeout_s=60.0):
    """(datagrams/s, per CPU-second, user-space us per datagram) through source -> HOPS
    forwarders -> sink on the running loop."""
    loop = asyncio.get_running_loop()
    socks = [open_udp_socket("127.0.0.1", 0, what="floor %d" % i) for i in range(HOPS + 2)]
    addrs = [s.getsockname() for s in socks]
    payload = b"\x5a" * DATAGRAM
    state = {"sent": 0, "got": 0}
    done = loop.create_future()
    endpoints, streams, tasks = [], [], []

    def pump():
        src = socks[0]
        while state["sent"] < n and state["sent"] - state["got"] < window:
            src.sendto(payload, addrs[1])
            state["sent"] += 1

    def at_sink():
        state["got"] += 1
        if state["got"] >= n:
            if not done.done():
                done.set_result(None)
        else:
            pump()

    try:
        if style == "endpoint":
            for i in range(1, HOPS + 2):
                ep = Endpoint(socks[i], "floor%d" % i)
                endpoints.append(ep)
                if i == HOPS + 1:
                    await ep.start(lambda data, addr: at_sink())
                else:
                    nxt = addrs[i + 1]
                    await ep.start(lambda data, addr, ep=ep, nxt=nxt: ep.send(data, nxt))
        else:
            for i in range(1, HOPS + 2):
                streams.append(await asyncio_dgram.from_socket(socks[i]))

            async def forward(stream, nxt):
                while True:
                    data, _ = await stream.recv()
                    await stream.send(data, nxt)

            async def sink(stream):
                while True:
                    await stream.recv()
                    at_sink()

            for i, stream in enumerate(streams[:-1], start=1):
                tasks.append(loop.create_task(forward(stream, addrs[i + 1])))
            tasks.append(loop.create_task(sink(streams[-1])))
        t0, c0, u0 = time.perf_counter(), time.process_time(), user_s()
        pump()
        await asyncio.wait_for(done, timeout_s)
        return (n / (time.perf_counter() - t0), n / max(time.process_time() - c0, 1e-9),
                (user_s() - u0) / n * 1e6)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for ep in endpoints:
            await ep.close()
        for st in streams:
            st.close()
        for s in socks:
            s.close()


C_FORWARDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "c_forwarder.c")


def c_forwarder_binary():
    """The C floor compiled with ``cc -O2`` (once per process), or None without a compiler."""
    global _C_BINARY
    if _C_BINARY is None:
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            _C_BINARY = ""
        else:
            out = os.path.join(tempfile.mkdtemp(prefix="gse-cfloor-"), "c_forwarder")
            r = subprocess.run([cc, "-O2", "-o", out, C_FORWARDER], capture_output=True)
            _C_BINARY = out if r.returncode == 0 else ""
    return _C_BINARY or None


_C_BINARY = None


def floor_c(n, window):
    """(datagrams/s, per cpu-s, user us per datagram) of the C chain, or Nones without a
    compiler."""
    binary = c_forwarder_binary()
    if binary is None:
        return None, None, None
    u0 = user_s(resource.RUSAGE_CHILDREN)
    r = subprocess.run([binary, str(n), str(window), str(DATAGRAM), str(HOPS)],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError("C floor failed: %s" % r.stderr.strip())
    rate, cpu = r.stdout.split()
    return float(rate), float(cpu), (user_s(resource.RUSAGE_CHILDREN) - u0) / n * 1e6


async def switch_chain(n, window, gbps, dataplane=True, timeout_s=60.0, spine=False):
    """Datagrams/s through source -> HOPS runtime switches -> sink on the running loop:
    each switch a ``SwitchDriver`` with two ports (back, on), the GSE queue configuration
    and links of ``gbps``; the datagrams are DATA packets of the wire format.  ``spine``:
    fabric-mode spines instead, with fabric mode's queues and two ports on (both to the
    next hop), byte 1 of each datagram's entropy choosing between them."""
    from gse.config import GseConfig
    from gse.protocols import queue_config
    from switchmodel.fabric import FabricConfig, FabricSpine
    from gse.runtimes.udp import dataplane as dp
    from gse.runtimes.udp.io import Scheduler
    from gse.runtimes.udp.link import DEFAULT_SLACK_PS, EmulatedPort
    from gse.runtimes.udp.node import SwitchDriver
    from gse.wire.fastcodec import encode_packet
    from gse.wire.packet import DATA, F_ECT, PRIO_DATA, new_packet
    from switchmodel.queue import OutputQueue, QueueConfig
    from switchmodel.switch import Switch
    loop = asyncio.get_running_loop()
    sched = Scheduler(loop, True)
    socks = [open_udp_socket("127.0.0.1", 0, what="switch %d" % i) for i in range(HOPS + 2)]
    addrs = [s.getsockname() for s in socks]
    datagrams = [encode_packet(new_packet(DATA, 0, 1, 7, psn,
                                          (psn << 8 | psn) if spine else psn & 0xFFFF,
                                          DATAGRAM - HEADER_BYTES, F_ECT, 1 << 30, 0,
                                          PRIO_DATA, 0, 0, 0, PRIO_DATA))
                 for psn in range(64)]
    state = {"sent": 0, "got": 0}
    done = loop.create_future()
    endpoints, drivers = [], []
    qconf = queue_config("gse-fabric", FabricConfig()) if spine else \
        QueueConfig.from_gse(GseConfig())

    def pump():
        src = socks[0]
        while state["sent"] < n and state["sent"] - state["got"] < window:
            src.sendto(datagrams[state["sent"] & 63], addrs[1])
            state["sent"] += 1

    def at_sink(data, addr):
        state["got"] += 1
        if state["got"] >= n:
            if not done.done():
                done.set_result(None)
        else:
            pump()

    try:
        for i in range(1, HOPS + 2):
            ep = Endpoint(socks[i], "switch%d" % i)
            endpoints.append(ep)
            if i == HOPS + 1:
                await ep.start(at_sink)
                continue
            if spine:
                sw = FabricSpine(i, "s%d" % i, [(0,), (1, 2)], 0x1234, "spray")
                peers = (addrs[i - 1], addrs[i + 1], addrs[i + 1])
            else:
                sw = Switch(i, "s%d" % i, [(0,), (1,)], 0x1234, "spray")
                peers = (addrs[i - 1], addrs[i + 1])
            drv = SwitchDriver(i, "s%d" % i, "edge", sched, ep, sw, 0, None)
            for pidx, addr in enumerate(peers):
                port = EmulatedPort(sched, ep, addr, OutputQueue(qconf, random.Random(pidx)),
                                    gbps, 1_000_000, DEFAULT_SLACK_PS, i, pidx, "edge", False)
                port.peer = i - 1 if pidx == 0 else i + 1
                port.owner = drv
                drv.port_of.setdefault(addr, pidx)
                drv.ports.append(port)
                ep.know(addr)
            drivers.append(drv)
            await ep.start(drv.datagram)
            if dataplane:
                dp.attach(drv)
        t0, c0, u0 = time.perf_counter(), time.process_time(), user_s()
        pump()
        await asyncio.wait_for(done, timeout_s)
        return (n / (time.perf_counter() - t0), n / max(time.process_time() - c0, 1e-9),
                (user_s() - u0) / n * 1e6)
    finally:
        for drv in drivers:
            dp.detach(drv)
        for ep in endpoints:
            await ep.close()
        sched.close()
        for s in socks:
            s.close()


async def gse_stream(size, gbps, settings=(), timeout_s=120.0, secure_key_file=None):
    from gse.config import GseConfig
    from gse.runtimes.udp.config import udp_profile
    topo = fat_tree(4, link_gbps=gbps)
    src, dst = 0, len(topo.hosts) - 1
    assert len(topo.path(src, dst)) == HOPS + 2
    cfg = GseConfig()
    for item in settings:
        name, value = item.split("=", 1)
        cfg.set(name.strip(), value.strip())
    cfg = udp_profile(cfg, keep={item.split("=", 1)[0].strip() for item in settings})
    async with UdpNetwork(topo, [Message(1, src, dst, size)], config=cfg,
                          secure_key_file=secure_key_file) as net:
        c0 = time.process_time()
        end = await net.run(timeout_s=timeout_s)
        cpu_s = time.process_time() - c0
    result = net.result()
    s = result.summary
    rec = result.records[0]
    if end != "done" or s["lost"]:
        raise RuntimeError("the GSE stream did not complete (%s)" % end)
    fct_s = rec.fct_ps() / 1e12
    npkts = -(-size // 4096)
    hosts_sent = sum(n.endpoint.sent for n in net.hosts)
    return {"fct_ms": round(fct_s * 1e3, 2), "data_dgram_per_s": npkts / fct_s,
            "data_dgram_per_cpu_s": npkts / max(cpu_s, 1e-9),
            "all_dgram_per_s": hosts_sent / fct_s,
            "goodput_mbps": size * 8 / fct_s / 1e6,
            "retransmits": s["retransmits"], "trims": s["trims"],
            "kernel_drops": s["udp"]["kernel_drops"], "datagrams_all_hops": s["events"]}


async def one_round(args):
    """Floors and stream back to back, so that they see the same machine load."""
    out = {}
    out["floor_dgram"], out["floor_dgram_cpu"], out["floor_dgram_user_us"] = \
        await floor_chain(args.floor_datagrams, args.window, "dgram")
    out["floor_endpoint"], out["floor_endpoint_cpu"], out["floor_endpoint_user_us"] = \
        await floor_chain(args.floor_datagrams, args.window, "endpoint")
    out["floor_c"], out["floor_c_cpu"], out["floor_c_user_us"] = floor_c(
        args.floor_datagrams, args.window)
    out["switch_py"], out["switch_py_cpu"], out["switch_py_user_us"] = await switch_chain(
        args.floor_datagrams, args.window, args.link_gbps, dataplane=False,
        spine=args.fabric_spine)
    out["switch"], out["switch_cpu"], out["switch_user_us"] = await switch_chain(
        args.floor_datagrams, args.window, args.link_gbps, spine=args.fabric_spine)
    out["switch_over_switch_py"] = out["switch"] / out["switch_py"]
    for key in ("switch", "switch_py"):
        out[key + "_over_endpoint"] = out[key] / out["floor_endpoint"]
        out[key + "_over_endpoint_cpu"] = out[key + "_cpu"] / out["floor_endpoint_cpu"]
        if out["floor_c"]:
            out["c_over_" + key] = out["floor_c"] / out[key]
            out["c_over_" + key + "_cpu"] = out["floor_c_cpu"] / out[key + "_cpu"]
    if args.switch_only:
        return out
    out["gse"] = await gse_stream(args.size, args.link_gbps, args.set or ())
    if args.compare_dataplane:            # the same stream with every switch on Python
        held = os.environ.get("GSE_DATAPLANE")
        os.environ["GSE_DATAPLANE"] = "0"
        try:
            out["gse_py"] = await gse_stream(args.size, args.link_gbps, args.set or ())
        finally:
            if held is None:
                del os.environ["GSE_DATAPLANE"]
            else:
                os.environ["GSE_DATAPLANE"] = held
    if args.secure:                       # the same stream with authenticated packets
        out["gse_secure"] = await gse_stream(args.size, args.link_gbps, args.set or (),
                                             secure_key_file=args.secure)
    g = out["gse"]
    out["ratio_dgram"] = g["data_dgram_per_s"] / out["floor_dgram"]
    out["ratio_endpoint"] = g["data_dgram_per_s"] / out["floor_endpoint"]
    out["ratio_dgram_cpu"] = g["data_dgram_per_cpu_s"] / out["floor_dgram_cpu"]
    out["ratio_endpoint_cpu"] = g["data_dgram_per_cpu_s"] / out["floor_endpoint_cpu"]
    return out


def bench_loop(name, args):
    rounds = [run_async(lambda: one_round(args), name) for _ in range(args.repeat)]
    med = statistics.median
    res = {"loop": name, "repeat": args.repeat, "rounds": rounds}
    for key in ("floor_c", "floor_c_cpu", "switch", "switch_cpu", "switch_py",
                "switch_py_cpu"):
        vals = [r[key] for r in rounds if r[key] is not None]
        res[key + "_per_s"] = round(med(vals)) if vals else None
    for key in ("floor_endpoint", "floor_c", "switch", "switch_py"):
        vals = [r[key + "_user_us"] for r in rounds if r[key + "_user_us"] is not None]
        res[key + "_user_us"] = round(med(vals), 2) if vals else None
    for key in ("switch_over_switch_py", "switch_over_endpoint", "switch_over_endpoint_cpu",
                "switch_py_over_endpoint",
                "switch_py_over_endpoint_cpu", "c_over_switch", "c_over_switch_cpu",
                "c_over_switch_py", "c_over_switch_py_cpu"):
        vals = [r[key] for r in rounds if key in r]
        res[key] = round(med(vals), 3) if vals else None    # median of per-round ratios
    for key in ("floor_dgram", "floor_dgram_cpu", "floor_endpoint", "floor_endpoint_cpu"):
        res[key + "_per_s"] = round(med(r[key] for r in rounds))
    if args.switch_only:
        return res
    res["gse"] = {k: round(med(r["gse"][k] for r in rounds), 2) for k in rounds[0]["gse"]}
    if "gse_py" in rounds[0]:
        res["gse_py"] = {k: round(med(r["gse_py"][k] for r in rounds), 2)
                         for k in rounds[0]["gse_py"]}
        res["dataplane_ratio"] = round(med(r["gse"]["data_dgram_per_s"]
                                           / r["gse_py"]["data_dgram_per_s"]
                                           for r in rounds), 3)
    if "gse_secure" in rounds[0]:
        res["gse_secure"] = {k: round(med(r["gse_secure"][k] for r in rounds), 2)
                             for k in rounds[0]["gse_secure"]}
        res["secure_ratio"] = round(med(r["gse_secure"]["data_dgram_per_s"]
                                        / r["gse"]["data_dgram_per_s"] for r in rounds), 3)
    for key in ("ratio_dgram", "ratio_endpoint", "ratio_dgram_cpu", "ratio_endpoint_cpu"):
        res[key] = round(med(r[key] for r in rounds), 3)     # median of per-round ratios
    return res


def incast(args):
    """A small incast in the simulator and over UDP with the same configuration."""
    import random

    from gse.protocols import default_config
    from gse.runtimes.sim.run import run_simulation
    from gse.runtimes.udp.config import udp_profile
    from gse.runtimes.udp.config import udp_protocols
    from gse.runtimes.udp.network import run_udp
    from gse.workloads.traffic import incast as make_incast
    topo = fat_tree(4, link_gbps=args.incast_gbps)
    msgs = make_incast(16, args.incast_senders, args.incast_size, random.Random(1),
                       receiver=0)
    rows = []
    for protocol in udp_protocols():
        cfg = udp_profile(default_config(protocol))
        runs = [("sim", run_simulation(topo, msgs, protocol, cfg, seed=1).summary)]
        for name in args.loops_resolved:
            runs.append((name, run_udp(topo, msgs, protocol, cfg, seed=1, loop=name,
                                       timeout_s=120).summary))
        for where, s in runs:
            hc = s["host_counters"]
            row = {"protocol": protocol, "runtime": where, "lost": s["lost"],
                   "drops": s["drops"], "trims": s["trims"], "ecn_marks": s["ecn_marks"],
                   "retransmits": s["retransmits"], "timeouts": hc.get("timeouts", 0),
                   "pfc_pauses": s.get("pfc_pauses", 0),
                   "fct_p50_ms": round(s["fct_us"]["p50"] / 1e3, 1),
                   "fct_max_ms": round(s["fct_us"]["max"] / 1e3, 1),
                   "peak_edge_down_B": s["peak_queue_bytes"]["edge_down"]}
            if "udp" in s:
                row["kernel_drops"] = s["udp"]["kernel_drops"]
                row["late_mean_us"] = s["udp"]["timer_late"]["mean_us"]
            rows.append(row)
            print("incast %-4s %-7s lost %d drops %d trims %4d ECN %4d retx %4d timeouts %3d "
                  "pauses %3d FCT p50/max %7.1f/%7.1f ms peak edge->host %6d B%s"
                  % (protocol, where, row["lost"], row["drops"], row["trims"],
                     row["ecn_marks"], row["retransmits"], row["timeouts"],
                     row["pfc_pauses"], row["fct_p50_ms"], row["fct_max_ms"],
                     row["peak_edge_down_B"],
                     "" if "udp" not in s else "  kernel drops %d, timers late %.0f us "
                     "(mean)" % (row["kernel_drops"], row["late_mean_us"])))
    return rows


def dataplane_name():
    from gse.runtimes.udp import dataplane
    return "C" if dataplane.AVAILABLE else "off (pure build)"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--loops", nargs="+", default=None, choices=("asyncio", "uvloop"))
    p.add_argument("--size", type=int, default=4_000_000, help="GSE message bytes")
    p.add_argument("--link-gbps", type=float, default=100.0,
                   help="emulated link rate (high: the process is the limit)")
    p.add_argument("--floor-datagrams", type=int, default=5000)
    p.add_argument("--window", type=int, default=32, help="floor: datagrams in flight")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="GSE parameter of the stream (default: the defaults)")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--switch-only", action="store_true",
                   help="the floors and the switch chains, not the GSE stream")
    p.add_argument("--compare-dataplane", action="store_true",
                   help="also run the GSE stream with the switches' data plane off")
    p.add_argument("--hops", type=int, default=HOPS,
                   help="forwarders in the floors' and switch chains (with --switch-only; "
                        "two lengths give the cost of one hop apart from source and sink)")
    p.add_argument("--fabric-spine", action="store_true",
                   help="the switch chains made of fabric-mode spines (FabricSpine, fabric "
                        "mode's queues, two uplinks chosen by byte 1 of the entropy)")
    p.add_argument("--secure", metavar="KEYFILE",
                   help="also run the stream with authenticated packets (--secure), beside "
                        "the plain one")
    p.add_argument("--incast", action="store_true",
                   help="also run a small incast in the simulator and over UDP")
    p.add_argument("--incast-only", action="store_true", help="only the incast")
    p.add_argument("--incast-gbps", type=float, default=0.02)
    p.add_argument("--incast-senders", type=int, default=8)
    p.add_argument("--incast-size", type=int, default=200_000)
    args = p.parse_args(argv)
    if args.hops != HOPS:
        if not args.switch_only:
            p.error("--hops needs --switch-only (the GSE stream crosses 5 switches)")
        globals()["HOPS"] = args.hops
    loops = args.loops or (["asyncio", "uvloop"] if uvloop_available() else ["asyncio"])
    args.loops_resolved = loops
    results = []
    for name in ([] if args.incast_only else loops):
        r = bench_loop(name, args)
        results.append(r)
        print("%-8s floor: asyncio-dgram forwarders %6d/s (%6d/cpu-s), runtime I/O path "
              "%6d/s (%6d/cpu-s)" % (name, r["floor_dgram_per_s"], r["floor_dgram_cpu_per_s"],
                                     r["floor_endpoint_per_s"], r["floor_endpoint_cpu_per_s"]))
        if r["floor_c_per_s"]:
            print("%-8s floor: C recvmmsg/sendmmsg forwarders %6d/s (%6d/cpu-s)"
                  % (name, r["floor_c_per_s"], r["floor_c_cpu_per_s"]))
        print("%-8s user-space CPU per datagram through the chain: C floor %s us, runtime I/O "
              "path %.2f us, switches (Python path) %.2f us, switches (data plane) %.2f us"
              % (name, "-" if r["floor_c_user_us"] is None else "%.2f" % r["floor_c_user_us"],
                 r["floor_endpoint_user_us"], r["switch_py_user_us"], r["switch_user_us"]))
        kind = "fabric spines" if args.fabric_spine else "switches"
        for key, what in (("switch_py", "%s, Python path" % kind),
                          ("switch", "%s, data plane %s" % (kind, dataplane_name()))):
            print("%-8s %-38s %6d/s (%6d/cpu-s): x%.2f runtime I/O path (x%.2f per cpu-s)%s"
                  % (name, what, r[key + "_per_s"], r[key + "_cpu_per_s"],
                     r[key + "_over_endpoint"], r[key + "_over_endpoint_cpu"],
                     "" if r["c_over_" + key] is None else
                     ", C floor x%.2f of it (x%.2f per cpu-s)"
                     % (r["c_over_" + key], r["c_over_" + key + "_cpu"])))
        print("%-8s %s: data plane x%.2f the Python path (median of per-round ratios, "
              "the two alternating in each round)" % (name, kind, r["switch_over_switch_py"]))
        if args.switch_only:
            continue
        g = r["gse"]
        print("%-8s GSE stream: %6.0f data dgram/s (%6.0f/cpu-s, %6.0f all dgram/s), "
              "%6.1f Mb/s goodput, FCT %.1f ms, retx %d, kernel drops %d"
              % (name, g["data_dgram_per_s"], g["data_dgram_per_cpu_s"], g["all_dgram_per_s"],
                 g["goodput_mbps"], g["fct_ms"], g["retransmits"], g["kernel_drops"]))
        print("%-8s ratio to floor: %.2f asyncio-dgram (%.2f per cpu-s), %.2f runtime I/O "
              "path (%.2f per cpu-s)" % (name, r["ratio_dgram"], r["ratio_dgram_cpu"],
                                         r["ratio_endpoint"], r["ratio_endpoint_cpu"]))
        if "gse_py" in r:
            g = r["gse_py"]
            print("%-8s GSE stream, switches on Python (GSE_DATAPLANE=0): %6.0f data dgram/s "
                  "(%6.0f/cpu-s): the data plane's stream is x%.2f of it"
                  % (name, g["data_dgram_per_s"], g["data_dgram_per_cpu_s"],
                     r["dataplane_ratio"]))
        if "gse_secure" in r:
            g = r["gse_secure"]
            print("%-8s GSE stream, --secure: %6.0f data dgram/s (%6.0f/cpu-s), %6.1f Mb/s "
                  "goodput, FCT %.1f ms: %.2f of the plain stream's rate"
                  % (name, g["data_dgram_per_s"], g["data_dgram_per_cpu_s"],
                     g["goodput_mbps"], g["fct_ms"], r["secure_ratio"]))
    incast_rows = incast(args) if (args.incast or args.incast_only) else None
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"size": args.size, "link_gbps": args.link_gbps, "hops": HOPS,
                       "fabric_spine": args.fabric_spine,
                       "settings": args.set or [],
                       "results": results, "incast": incast_rows}, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
