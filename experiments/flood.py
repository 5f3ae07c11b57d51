"""A flood of hostile datagrams at every agent of a running fabric (issue 15, flood test).

The k=4 Fat-Tree permutation runs as 36 ``gse agent`` processes on loopback addresses
while a separate sender floods their ports with ``--datagrams`` datagrams, round robin
over the agents, in equal parts: random bytes, truncated headers, and forged well-formed
REQUEST, GRANT, ACK and DATA (right payload pattern, right checksum) for live and dead
message ids.  With ``--spoof`` (root: a raw socket) each forged datagram carries the
address of a neighbour of the agent it is sent to, so it passes the runtime's
neighbour check and reaches the agents' own defences; otherwise it comes from the
flooder's own address (counted ``foreign``).  ``--secure KEYFILE`` runs the fabric with
authenticated packets.

Reported: whether every real message was delivered exactly once and intact, each
agent's RSS before the flood and at its peak (the growth is bounded by
``RSS_BOUND_MB``, docs/hardening.md), and every forged datagram by the reason it was
refused (malformed by reason, foreign, unauthenticated / auth_failed / replayed /
unknown_source, or the agents' own counters: stray, unknown GRANTs, refused REQUESTs,
refused DATA), with the kernel's receive-buffer drops.

    sudo python experiments/flood.py --spoof --secure domain.key --datagrams 1000000
    python experiments/flood.py --datagrams 100000 --json flood.json
"""

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from gse.config import GseConfig  # noqa: E402
from gse.runtimes.udp.config import (loopback_addresses, node_configs, udp_profile,  # noqa: E402
                                     write_node_configs)
from gse.runtimes.udp.netns import ip_udp, kernel_drops  # noqa: E402
from gse.wire.codec import encode, payload_pattern  # noqa: E402
from gse.wire.packet import (ACK, DATA, GRANT, PRIO_CONTROL, PRIO_DATA, REQUEST,  # noqa: E402
                             Packet)
from gse.workloads import traffic  # noqa: E402
from topologies.fattree import fat_tree  # noqa: E402

RSS_BOUND_MB = 16          # documented bound on an agent's RSS growth during a flood
KINDS = ("random", "truncated", "request", "grant", "ack", "data")


def forged(rng, kind, target, live, n_hosts):
    """One hostile datagram for node ``target``; ``live``: (src, dst, msg_id, size)."""
    if kind == "random":
        return bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 200)))
    src, dst, msg_id, size = rng.choice(live)
    if rng.random() < 0.5:                                  # a dead message id
        msg_id = rng.getrandbits(32)
        src, dst = rng.randrange(n_hosts), rng.randrange(n_hosts)
    if kind == "request":
        pkt = Packet(REQUEST, src, dst, msg_id=msg_id, psn=1, msg_len=2 ** 32 - 1,
                     credit=2 ** 32 - 1, prio=PRIO_CONTROL)
    elif kind == "grant":
        pkt = Packet(GRANT, dst, src, msg_id=msg_id, credit=65536, aux=rng.getrandbits(32),
                     prio=PRIO_CONTROL)
    elif kind == "ack":
        pkt = Packet(ACK, dst, src, msg_id=msg_id, psn=(size + 4095) // 4096,
                     msg_len=size, prio=PRIO_CONTROL)       # "all of it arrived"
    else:
        psn = rng.randrange(max(1, size // 4096))
        pkt = Packet(DATA, src, dst, msg_id=msg_id, psn=psn, payload_len=1024,
                     msg_len=size, prio=PRIO_DATA)
        pkt.payload = payload_pattern(src, msg_id, psn, 1024)
    data = encode(pkt)
    if kind == "truncated":
        return data[:rng.randrange(1, 64)]
    return data


def rss_kb(pid, field="VmRSS"):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datagrams", type=int, default=100_000)
    p.add_argument("--size", type=int, default=400_000, help="real message bytes")
    p.add_argument("--gbps", type=float, default=0.05)
    p.add_argument("--spoof", action="store_true",
                   help="forge the neighbours' source addresses (raw socket: root)")
    p.add_argument("--secure", metavar="KEYFILE", help="run the fabric with --secure")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout-s", type=float, default=300.0)
    p.add_argument("--rate", type=int, default=20_000, help="flood datagrams per second")
    p.add_argument("--keep", metavar="DIR", help="keep configurations and outputs here")
    p.add_argument("--json", help="write the figures here")
    args = p.parse_args(argv)

    topo = fat_tree(4, link_gbps=args.gbps)
    n_hosts = len(topo.hosts)
    msgs = traffic.permutation(n_hosts, args.size, random.Random(args.seed))
    live = [(m.src, m.dst, m.msg_id, m.size) for m in msgs]
    work = args.keep or tempfile.mkdtemp(prefix="gse-flood-")
    os.makedirs(work, exist_ok=True)
    addrs = loopback_addresses(topo, "127.91.0.0", 47600)
    start_at = time.time() + 20.0             # every agent is up well before time 0
    confs = node_configs(topo, msgs, "gse", udp_profile(GseConfig()), args.seed, addrs,
                         output_dir=work, secure_key_file=args.secure,
                         run={"timeout_s": args.timeout_s, "start_at_unix": start_at,
                              "linger_s": 2.0})
    paths = write_node_configs(confs, work)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = [subprocess.Popen([sys.executable, "-m", "gse", "agent", "--config", path],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE) for path in paths]
    rss0 = {}
    sent = {k: 0 for k in KINDS}
    try:
        bound = []
        while len(bound) < len(confs) and time.time() < start_at:
            time.sleep(0.1)
            bound = kernel_drops([tuple(c["bind"]) for c in confs])   # sockets that exist
        if len(bound) < len(confs):
            raise RuntimeError("only %d of %d agents bound their sockets in time"
                               % (len(bound), len(confs)))
        while time.time() < start_at - 0.2:       # flood from (about) time 0 on
            time.sleep(0.05)
        rss0 = {c["name"]: rss_kb(pr.pid) for c, pr in zip(confs, procs)}
        rng = random.Random(args.seed)
        if args.spoof:
            out = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
            out.setsockopt(socket.IPPROTO_IP, socket.IP_HDRINCL, 1)
        else:
            out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        t0 = time.time()
        for i in range(args.datagrams):
            conf = confs[i % len(confs)]
            kind = KINDS[(i // len(confs)) % len(KINDS)]
            data = forged(rng, kind, conf["node"], live, n_hosts)
            dst = tuple(conf["bind"])
            if args.spoof:
                neighbour = tuple(conf["ports"][rng.randrange(len(conf["ports"]))]["peer_addr"])
                out.sendto(ip_udp(neighbour, dst, data), (dst[0], 0))
            else:
                out.sendto(data, dst)
            sent[kind] += 1
            if i % 200 == 199:                   # pace: about --rate per second
                lag = t0 + (i + 1) / args.rate - time.time()
                if lag > 0:
                    time.sleep(lag)
        flood_s = time.time() - t0
        out.close()
        peak = {}
        while any(pr.poll() is None for pr in procs):
            for c, pr in zip(confs, procs):
                if pr.poll() is None:
                    peak[c["name"]] = max(peak.get(c["name"], 0), rss_kb(pr.pid, "VmHWM"))
            time.sleep(0.2)
    finally:
        for pr in procs:
            if pr.poll() is None:
                pr.terminate()
        for pr in procs:
            try:
                pr.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pr.kill()
    counters = []
    for c in confs:
        with open(c["output"]["counters"]) as f:
            counters.append(json.load(f))
    delivered, intact = {}, True
    for c in confs:
        if c["role"] == "host":
            with open(c["output"]["records"]) as f:
                rec = json.load(f)
            for r in rec["received"]:
                key = (r["src"], r["msg_id"])
                delivered[key] = delivered.get(key, 0) + 1
    real = {(m.src, m.msg_id) for m in msgs}
    reasons = {}

    def add(name, n):
        if n:
            reasons[name] = reasons.get(name, 0) + n
    for c in counters:
        for r, n in c["malformed"].items():
            add("malformed/" + r, n)
        add("foreign", c["foreign"])
        add("payload_errors", c.get("payload_errors", 0))
        add("kernel_drops", c.get("kernel_drops", 0))
        for k, n in c.get("secure", {}).items():
            if k not in ("sealed", "opened"):
                add("secure/" + k, n)
        a = c.get("agent", {})
        for k in ("stray", "unknown_grants", "requests_refused", "inbound_refused",
                  "duplicates"):
            add("agent/" + k, a.get(k, 0))
        intact = intact and c.get("payload_errors", 0) == 0 and c.get("duplicate_deliveries",
                                                                        0) == 0
    growth = {name: (peak.get(name, 0) - rss0.get(name, 0)) / 1024 for name in rss0}
    res = {"datagrams": args.datagrams, "spoof": args.spoof, "secure": bool(args.secure),
           "flood_s": round(flood_s, 1), "sent_by_kind": sent,
           "real_messages": len(real),
           "delivered_once": sum(1 for k in real if delivered.get(k) == 1),
           "delivered_twice": sum(1 for k in real if delivered.get(k, 0) > 1),
           "lost": sum(1 for k in real if k not in delivered), "intact": intact,
           "rss_before_mb_max": round(max(rss0.values()) / 1024, 1),
           "rss_peak_mb_max": round(max(peak.values(), default=0) / 1024, 1),
           "rss_growth_mb_max": round(max(growth.values()), 1), "rss_bound_mb": RSS_BOUND_MB,
           "counted_by_reason": reasons, "exits": sorted({c.get("exit") for c in counters})}
    print(json.dumps(res, indent=1, sort_keys=True))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1, sort_keys=True)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    ok = (res["lost"] == 0 and res["delivered_twice"] == 0 and intact
          and res["rss_growth_mb_max"] <= RSS_BOUND_MB)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
