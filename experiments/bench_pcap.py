#!/usr/bin/env python3
"""What a pcap capture costs, and whether dpkt's frame construction is the bottleneck.

    python experiments/bench_pcap.py                 # k=8 GSE permutation, ToR uplinks

Runs the k=8 permutation (2 MB, GSE) three ways: without capture, capturing every ToR
uplink (``--pcap-ports tier:edge:up``, no budget) with the project's frames
(``gse.metrics.pcap.frame``: headers packed with ``struct``), and the same with frames
built by dpkt's packet classes (Ethernet/IP/UDP objects, checksums by dpkt).  Prints the
run's wall time, packets written and the cost per packet.  Figures are printed, never
asserted.  Run it under ``flock /tmp/gse-bench.lock`` on a shared machine.
"""

import json
import os
import random
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def dpkt_frame(datagram, ip_src, ip_dst, mac_src, mac_dst, sport=47000, dport=47000):
    import dpkt
    udp = dpkt.udp.UDP(sport=sport, dport=dport, data=datagram)
    udp.ulen = 8 + len(datagram)
    ip = dpkt.ip.IP(src=ip_src, dst=ip_dst, p=dpkt.ip.IP_PROTO_UDP, ttl=64, data=udp)
    ip.len = 20 + udp.ulen
    return bytes(dpkt.ethernet.Ethernet(src=mac_src, dst=mac_dst,
                                        type=dpkt.ethernet.ETH_TYPE_IP, data=ip))


def run(kind, spec):
    from gse.protocols import default_config
    from gse.runtimes.sim import capture
    from gse.runtimes.sim.run import run_simulation
    from gse.workloads import traffic
    from topologies import fat_tree
    topo = fat_tree(8)
    msgs = traffic.permutation(len(topo.hosts), 2_000_000, random.Random("1/traffic"))
    d = tempfile.mkdtemp(prefix="gse-bench-pcap-")
    observers = []
    if kind != "none":
        if kind == "dpkt":
            capture.frame = dpkt_frame
        observers = [capture.SimCapture.factory(d, spec, 10 ** 9)]
    t0 = time.perf_counter()
    run_simulation(topo, msgs, "gse", default_config("gse"), 1, observers=observers)
    wall = time.perf_counter() - t0
    packets = 0
    if kind != "none":
        with open(os.path.join(d, "captures.json")) as f:
            packets = sum(e["packets"] for e in json.load(f)["interfaces"])
    return wall, packets


def main():
    spec = sys.argv[1] if len(sys.argv) > 1 else "tier:edge:up"
    if len(sys.argv) > 2:                     # child: one run, JSON on stdout
        print(json.dumps(run(sys.argv[2], spec)))
        return 0
    import subprocess
    res = {}
    for kind in ("none", "struct", "dpkt"):
        out = subprocess.run([sys.executable, __file__, spec, kind], capture_output=True,
                             text=True, check=True)
        res[kind] = json.loads(out.stdout.strip().splitlines()[-1])
    base = res["none"][0]
    print("k=8 GSE permutation, capturing %s" % spec)
    print("%-8s %8s %9s %12s" % ("frames", "wall s", "packets", "us/packet"))
    for kind, (wall, packets) in res.items():
        per = (wall - base) / packets * 1e6 if packets else 0.0
        print("%-8s %8.2f %9d %12.1f" % (kind, wall, packets, per))
    return 0


if __name__ == "__main__":
    sys.exit(main())
