"""The host agents' per-packet cost in the UDP runtime (issue 27, part 2).

One GSE message from h0 to h1 through one switch (``topologies.star.star(2)``: h0 ->
sw -> h1, links emulated at 100 Gb/s so that the process, not the emulated rate, is the
limit), every node on one event loop over real UDP on loopback.  The switch is on the
compiled data plane where the build has it (``gse.runtimes.udp.dataplane``), so most of
the process's user-space CPU is the two hosts: the agents, the codec, the emulated links
and the sockets of the host path.

Each round prints, per data packet (4 KB payload) of the message:

* ``cpu``: the process's CPU (user + system, ``getrusage``) over the run, in us, and its
  user-space part: the host path plus the switch's (small) user-space share and the loop;
* ``dgram/s``: data packets over the sender's completion time;
* with ``--perf`` (``perf`` installed, compiled build): the user-space CPU split by where
  it was spent, from ``perf record`` of the run: ``agents`` (the GSE host agent's
  modules, ``gse.common`` containers, packets), ``codec`` (``gse.wire.fastcodec``, its C
  and the CRC-32 of ISA-L or zlib), ``host path`` (``gse.runtimes.udp`` io, link, node and
  the agent driver: link emulation, the socket batching, decoding into packets),
  ``switch`` (the data plane, ``switchmodel``), ``python`` (the interpreter, its
  allocator and libc: object churn of every part above), and the kernel's share;
* the codec alone, in-process (no sockets): encoding one DATA packet, and decoding plus
  checking one received DATA datagram, us each.

``--trees DIR [DIR ...]`` runs the rounds in subprocesses, alternating the source trees
given (each with its own compiled build): the before/after comparison in one run, on the
same load.  Medians of ``--repeat`` rounds.

    python experiments/bench_udp_host.py --repeat 5
    python experiments/bench_udp_host.py --trees /tmp/before . --repeat 5 --perf
"""

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time

if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# where user-space CPU goes, by shared object (perf's dso), first match wins
CATEGORIES = (
    ("codec", ("fastcodec.", "isal", "libz.", "zlib.", "codec.")),
    ("switch", ("switchplane.", "switch.", "queue.", "pfc.", "forwarding.")),
    ("host path", ("hostplane.", "io.cpython", "link.cpython", "node.cpython",
                   "driver.cpython", "_heapq", "select.", "[vdso]")),
    ("agents", ("gse_host.", "sender.", "receiver.", "scheduler.", "entropy.", "bitmap.",
                "phases.", "interface.", "events.", "fifo.", "bits.", "timers.",
                "finished.", "packet.", "roce", "plain_host.", "dcqcn.", "fairq.")),
    ("python", ("libpython", "python3", "libc.", "ld-linux", "libm.")),
)


def category(dso):
    if dso.startswith("[kernel"):
        return "kernel"
    for name, keys in CATEGORIES:
        if any(k in dso for k in keys):
            return name
    return "other"


def perf_split(path):
    """{category: share of all samples} from ``perf report`` of ``path``."""
    r = subprocess.run(["perf", "report", "-i", path, "--no-children", "--sort", "dso",
                        "--stdio", "-q"], capture_output=True, text=True)
    shares = {}
    for line in r.stdout.splitlines():
        parts = line.split(None, 1)
        if len(parts) != 2 or not parts[0].endswith("%"):
            continue
        cat = category(parts[1].strip())
        shares[cat] = shares.get(cat, 0.0) + float(parts[0][:-1]) / 100
    return shares


def codec_costs(n=20000):
    """(us to encode a DATA packet, us to decode and check a received one), in-process."""
    from gse.wire.fastcodec import decode_header, encode_packet, payload_intact
    from gse.wire.packet import DATA, F_ECT, PRIO_DATA, new_packet
    pkts = [new_packet(DATA, 0, 1, 7, psn, psn & 0xFFFF, 4096, F_ECT, 1 << 30, 0,
                       PRIO_DATA, 0, 0, 0, PRIO_DATA) for psn in range(64)]
    t0 = time.process_time()
    for i in range(n):
        encode_packet(pkts[i & 63])
    enc = (time.process_time() - t0) / n * 1e6
    datas = [encode_packet(p) for p in pkts]
    t0 = time.process_time()
    for i in range(n):
        data = datas[i & 63]
        pkt = decode_header(data)
        payload_intact(pkt, data)
    dec = (time.process_time() - t0) / n * 1e6
    return enc, dec


def one_round(size, gbps, loop_name, perf):
    """One run of the stream in this process: its figures per data packet."""
    from gse.config import GseConfig
    from gse.runtimes.udp import dataplane
    from gse.runtimes.udp.config import udp_profile
    from gse.runtimes.udp.io import run_async
    from gse.runtimes.udp.network import UdpNetwork
    from gse.workloads.traffic import Message
    from topologies.star import star
    out = {}
    perf_file = None

    async def go():
        nonlocal perf_file
        topo = star(2, link_gbps=gbps)
        async with UdpNetwork(topo, [Message(1, 0, 1, size)],
                              config=udp_profile(GseConfig())) as net:
            proc = None
            if perf:
                perf_file = tempfile.mktemp(prefix="gse-host-", suffix=".perf")
                proc = subprocess.Popen(["perf", "record", "-F", "2999", "-o", perf_file,
                                         "-p", str(os.getpid())],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(0.5)               # perf attached before the run starts
            r0 = resource.getrusage(resource.RUSAGE_SELF)
            end = await net.run(timeout_s=120)
            r1 = resource.getrusage(resource.RUSAGE_SELF)
            if proc is not None:
                proc.send_signal(signal.SIGINT)
                proc.wait()
        res = net.result()
        s = res.summary
        if end != "done" or s["lost"] or s["udp"]["payload_errors"]:
            raise RuntimeError("the stream did not complete intact (%s)" % end)
        npkts = -(-size // 4096)
        fct_s = res.records[0].fct_ps() / 1e12
        user = (r1.ru_utime - r0.ru_utime) / npkts * 1e6
        system = (r1.ru_stime - r0.ru_stime) / npkts * 1e6
        out.update(dgram_per_s=npkts / fct_s, user_us=user, sys_us=system,
                   cpu_us=user + system, retransmits=s["retransmits"],
                   kernel_drops=s["udp"]["kernel_drops"],
                   host_datagrams=sum(n.endpoint.sent for n in net.hosts) / npkts,
                   dataplane=dataplane.AVAILABLE)

    run_async(go, loop_name)
    if perf_file is not None:
        split = perf_split(perf_file)
        os.unlink(perf_file)
        user_share = 1.0 - split.get("kernel", 0.0)
        out["perf"] = {k: round(v, 4) for k, v in sorted(split.items())}
        # user-space us per data packet by category (perf's shares of the rusage CPU)
        out["perf_us"] = {k: round(v * out["cpu_us"], 3) for k, v in split.items()}
        out["perf_user_share"] = round(user_share, 4)
    out["encode_us"], out["decode_us"] = codec_costs()
    return out


def child(args):
    print(json.dumps(one_round(args.size, args.link_gbps, args.loop, args.perf)))
    return 0


def run_tree(tree, args):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--size", str(args.size),
           "--link-gbps", str(args.link_gbps), "--loop", args.loop]
    if args.perf:
        cmd.append("--perf")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600,
                       cwd=os.path.abspath(tree))
    if r.returncode != 0:
        raise RuntimeError("round in %s failed: %s" % (tree, r.stderr.strip()[-2000:]))
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=20_000_000, help="message bytes")
    p.add_argument("--link-gbps", type=float, default=100.0)
    p.add_argument("--loop", default="asyncio", choices=("asyncio", "uvloop"))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--perf", action="store_true", help="split user-space CPU with perf")
    p.add_argument("--trees", nargs="+", metavar="DIR",
                   help="source trees to alternate, one subprocess per round and tree")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(args)
    trees = args.trees or [None]
    rounds = {t: [] for t in trees}
    for i in range(args.repeat):
        for t in trees:
            r = run_tree(t, args) if t is not None else one_round(
                args.size, args.link_gbps, args.loop, args.perf)
            rounds[t].append(r)
            print("round %d %-28s %6.0f data dgram/s, CPU %.2f us per data packet (user %.2f,"
                  " sys %.2f), retx %d" % (i, t or "this tree", r["dgram_per_s"], r["cpu_us"],
                                           r["user_us"], r["sys_us"], r["retransmits"]),
                  flush=True)
    med = statistics.median
    summary = {}
    for t in trees:
        rs = rounds[t]
        s = {k: round(med(r[k] for r in rs), 3) for k in
             ("dgram_per_s", "cpu_us", "user_us", "sys_us", "encode_us", "decode_us",
              "host_datagrams")}
        s["retransmits"] = [r["retransmits"] for r in rs]
        s["kernel_drops"] = [r["kernel_drops"] for r in rs]
        if args.perf:
            cats = sorted({k for r in rs for k in r["perf_us"]})
            s["perf_us"] = {k: round(med(r["perf_us"].get(k, 0.0) for r in rs), 3)
                            for k in cats}
        summary[t or "."] = s
        print("%-28s median of %d: %6.0f data dgram/s, CPU %.2f us per data packet (user "
              "%.2f, sys %.2f); codec alone: encode %.2f us, decode+check %.2f us; host "
              "datagrams per data packet %.2f" % (t or "this tree", len(rs), s["dgram_per_s"],
                                                  s["cpu_us"], s["user_us"], s["sys_us"],
                                                  s["encode_us"], s["decode_us"],
                                                  s["host_datagrams"]))
        if args.perf:
            print("%-28s CPU us per data packet by perf: %s" % (
                t or "this tree", ", ".join("%s %.2f" % kv for kv in
                                            sorted(s["perf_us"].items(), key=lambda kv: -kv[1]))))
    if len(trees) == 2:
        a, b = trees
        ratio = med(rounds[a][i]["cpu_us"] / rounds[b][i]["cpu_us"] for i in range(args.repeat))
        print("CPU per data packet, %s / %s: x%.3f (median of per-round ratios)"
              % (a, b, ratio))
        summary["cpu_ratio"] = round(ratio, 3)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"size": args.size, "link_gbps": args.link_gbps, "loop": args.loop,
                       "summary": summary, "rounds": {str(k): v for k, v in rounds.items()}},
                      f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
