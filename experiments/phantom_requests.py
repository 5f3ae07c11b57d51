"""Phantom REQUESTs over real UDP: what they cost a receiver's memory and its honest flows.

Issue 19 (item 4): one 64-byte REQUEST used to allocate a 131 KB receive bitmap and a
credit demand that never expired; 1,000 of them raised an agent's RSS by 128 MB and
stalled a real flow for 60 s.  This runs the k=4 Fat-Tree permutation over the in-process
UDP runtime and, once the honest messages are under way, sends ``--phantoms`` REQUESTs to
one receiver from its edge switch's own socket (the one address that host accepts
datagrams from), each for a different message id of the largest size (2^32 - 1 bytes,
all of it asked as credit), from one forged source host or from ``--sources`` of them.
Reported per run: the process's RSS just before the flood and after the run (and its peak),
the receiver's counters (refused, expired, held), and the honest message into the flooded
receiver: its delivery time beside the same run without the flood, and by how much it
was delayed, in request timeouts.  Real time: the clean runs themselves vary by a few ms.

    python experiments/phantom_requests.py                  # 1,000 phantoms, 3 pairs of runs
    python experiments/phantom_requests.py --sources 15 --json out.json
"""

import argparse
import asyncio
import json
import os
import random
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from gse.runtimes.udp.io import run_async  # noqa: E402
from gse.runtimes.udp.network import UdpNetwork  # noqa: E402
from gse.wire.codec import encode  # noqa: E402
from gse.wire.packet import PRIO_CONTROL, REQUEST, Packet  # noqa: E402
from gse.workloads import traffic  # noqa: E402
from topologies.fattree import fat_tree  # noqa: E402

HUGE = 2 ** 32 - 1


def rss_kb(field="VmRSS"):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


async def one_run(args, flood, seed):
    topo = fat_tree(4, link_gbps=args.gbps)
    msgs = traffic.permutation(len(topo.hosts), args.size, random.Random(seed))
    victim = args.victim
    honest = [m for m in msgs if m.dst == victim][0]
    out = {"flood": flood}
    async with UdpNetwork(topo, msgs, seed=seed) as net:
        task = asyncio.ensure_future(net.run(timeout_s=args.timeout_s))
        await asyncio.sleep(args.delay_s)              # the honest messages under way
        host_node = net.hosts[victim]
        edge = topo.peer(topo.hosts[victim], 0)[0]
        out["rss_before_kb"] = rss_kb()
        if flood:
            rng = random.Random(seed)
            sources = [h for h in range(len(topo.hosts)) if h != victim][:args.sources]
            ep = net.endpoints[edge]
            for i in range(args.phantoms):
                pkt = Packet(REQUEST, sources[i % len(sources)], victim,
                             msg_id=rng.getrandbits(31) | (1 << 31), psn=1, msg_len=HUGE,
                             credit=HUGE, prio=PRIO_CONTROL)
                ep.send(encode(pkt), net.addresses[topo.hosts[victim]])
                if i % 64 == 63:
                    await asyncio.sleep(0)             # let the receiver drain its socket
        await task
    res = net.result()
    out["rss_after_kb"] = rss_kb()
    out["rss_peak_kb"] = rss_kb("VmHWM")
    rec = [r for r in res.records if r.src == honest.src and r.msg_id == honest.msg_id][0]
    out["honest_deliver_ms"] = rec.deliver_ps / 1e9 if rec.deliver_ps > 0 else None
    out["end"] = res.summary["udp"]["end"]
    out["lost"] = res.summary["lost"]
    c = host_node.agent.counters()
    for key in ("requests_refused", "requests_expired", "grant_holds", "grants"):
        out[key] = c.get(key)
    out["inbound_state"] = len(host_node.agent.receiver.messages)
    out["request_timeout_ms"] = net.config.request_timeout_ps / 1e9
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--phantoms", type=int, default=1000)
    p.add_argument("--sources", type=int, default=1, help="forged source hosts (1..15)")
    p.add_argument("--victim", type=int, default=5, help="the flooded receiver host")
    p.add_argument("--size", type=int, default=1_000_000, help="honest message bytes")
    p.add_argument("--gbps", type=float, default=0.1)
    p.add_argument("--delay-s", type=float, default=0.005,
                   help="flood this long after the honest messages start")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--timeout-s", type=float, default=120.0)
    p.add_argument("--json", help="write every run's figures here")
    args = p.parse_args(argv)
    runs = []
    for r in range(args.repeat):
        for flood in (False, True):
            out = run_async(lambda: one_run(args, flood, 7 + r), "auto")
            out["repeat"] = r
            runs.append(out)
            print(json.dumps(out, sort_keys=True))
    pairs = [(a, b) for a, b in zip(runs[::2], runs[1::2])]
    delays = [b["honest_deliver_ms"] - a["honest_deliver_ms"] for a, b in pairs
              if a["honest_deliver_ms"] and b["honest_deliver_ms"]]
    growth = [(b["rss_after_kb"] - b["rss_before_kb"]) / 1024 for _, b in pairs]
    timeout_ms = runs[0]["request_timeout_ms"]
    print("phantoms %d from %d source(s): RSS growth MB %s; honest delay ms %s "
          "(median %.1f = %.2f request timeouts of %.0f ms); lost %s"
          % (args.phantoms, args.sources, ["%.2f" % g for g in growth],
             ["%.1f" % d for d in delays], statistics.median(delays) if delays else -1,
             (statistics.median(delays) / timeout_ms) if delays else -1, timeout_ms,
             [b["lost"] for _, b in pairs]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "runs": runs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
