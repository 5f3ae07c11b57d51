#!/usr/bin/env python3
"""Large incasts: is every message delivered, and how close is the last one to the bound?

Issue 24 (item 1): GSE stopped granting on a 127:1 incast of 2 MB (96 of 127 delivered by
16.6 ms, nothing more), on uet-htsim's ``incast_128.cm`` and ``incast_collateral_128.cm``
and on 100:1, wherever a sender's turn in the receiver's round robin came less often than
``request_timeout_ps``.  This runs those incasts in the simulation for GSE, GSE fabric
mode and RoCE/PFC and prints, per run, the messages delivered and the last completion
(FCT of the last message, from the common start) over the *receiver-bound ideal*: the
busiest receiver's downlink carrying every byte sent to it (payload and headers) back to
back, plus the largest base RTT to it.  A run is stopped at ``--until-x`` times that
ideal (a stalled run would otherwise probe for ever).

    python experiments/incast_liveness.py                      # 127:1 k=8 and 1,023:1 k=16
    python experiments/incast_liveness.py --scenario 127x2MB-k8 --protocol gse
    python experiments/incast_liveness.py --points             # also 100:1, 32:1 x 8 MB, 32:1
    GSE_THIRD_PARTY_DIR=DIR python experiments/incast_liveness.py --htsim   # + uet-htsim's

uet-htsim's connection matrices are not in the repository: ``--htsim`` reads them from
``$GSE_THIRD_PARTY_DIR/uet-htsim/htsim/sim/datacenter/connection_matrices/`` (the layout
tests/test_third_party.py uses), or ``--cm FILE`` names any ``.cm`` file (run on k=8).
Figures are printed, never asserted; the simulation is deterministic, so they repeat.
"""

import argparse
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from gse.metrics.records import receiver_bound_ps  # noqa: E402
from gse.protocols import default_config  # noqa: E402
from gse.runtimes.sim.run import run_simulation  # noqa: E402
from gse.workloads import traffic  # noqa: E402
from gse.workloads.cmfile import read_cm_workload  # noqa: E402
from topologies.fattree import fat_tree  # noqa: E402

KiB = 1024
# name -> (k, senders, size): the two figures first, then its other points
SCENARIOS = {
    "127x2MB-k8": (8, 127, 2_000_000),
    "1023x256KiB-k16": (16, 1023, 256 * KiB),
}
POINTS = {
    "100x2MB-k8": (8, 100, 2_000_000),
    "32x8MB-k8": (8, 32, 8_000_000),
    "32x2MB-k8": (8, 32, 2_000_000),
}
HTSIM_DIR = ("uet-htsim", "htsim", "sim", "datacenter", "connection_matrices")
HTSIM_FILES = ("incast_128.cm", "incast_collateral_128.cm")
PROTOCOLS = ("gse", "gse-fabric", "roce")


def run(name, topo, messages, protocol, seed, until_x):
    cfg = default_config(protocol)
    ideal = receiver_bound_ps(topo, messages, cfg.mtu)
    t0 = time.perf_counter()
    result = run_simulation(topo, messages, protocol, cfg, seed,
                            until_ps=int(ideal * until_x))
    wall = time.perf_counter() - t0
    recs = result.records
    done = [r for r in recs if r.completed]
    last = max((r.fct_ps() for r in done), default=0)
    counters = result.summary.get("host_counters", {})
    return {"scenario": name, "protocol": protocol, "seed": seed,
            "messages": len(recs), "delivered": sum(1 for r in recs if r.delivered),
            "completed": len(done),
            "last_fct_us": round(last / 1e6, 3), "ideal_us": round(ideal / 1e6, 3),
            "ratio": round(last / ideal, 4) if len(done) == len(recs) else None,
            "sim_end_us": result.summary["sim_time_us"], "wall_s": round(wall, 2),
            "regrants": counters.get("regrants"), "grant_holds": counters.get("grant_holds"),
            "requests": counters.get("requests")}


def workloads(args):
    """(name, topology, messages) of every run asked for."""
    names = list(args.scenario or SCENARIOS)
    if args.points:
        names += [n for n in POINTS if n not in names]
    topos = {}
    for name in names:
        k, senders, size = SCENARIOS.get(name) or POINTS[name]
        topo = topos.get(k) or topos.setdefault(k, fat_tree(k))
        rng = random.Random("%s/traffic" % args.seed)     # as `gse sim --seed`
        yield name, topo, traffic.incast(len(topo.hosts), senders, size, rng)
    files = list(args.cm or [])
    if args.htsim:
        root = os.environ.get("GSE_THIRD_PARTY_DIR")
        if not root:
            sys.exit("--htsim: set GSE_THIRD_PARTY_DIR (see tests/test_third_party.py)")
        files += [os.path.join(root, *HTSIM_DIR, f) for f in HTSIM_FILES]
    for path in files:
        if not os.path.exists(path):
            sys.exit("%s: no such file" % path)
        topo = topos.get(8) or topos.setdefault(8, fat_tree(8))
        yield os.path.basename(path), topo, read_cm_workload(path).messages


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", action="append", choices=sorted(SCENARIOS) + sorted(POINTS))
    ap.add_argument("--points", action="store_true", help="also the issue's other points")
    ap.add_argument("--htsim", action="store_true",
                    help="also uet-htsim's incast_128.cm and incast_collateral_128.cm")
    ap.add_argument("--cm", action="append", metavar="FILE", help="an htsim .cm file (k=8)")
    ap.add_argument("--protocol", action="append", choices=PROTOCOLS)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--until-x", type=float, default=3.0,
                    help="stop each run at this multiple of its ideal (default 3)")
    ap.add_argument("--json", help="also write the rows as JSON")
    args = ap.parse_args()
    cols = ("scenario", "protocol", "delivered", "messages", "last_fct_us", "ideal_us",
            "ratio", "wall_s")
    print("%-26s %-10s %9s %8s %12s %10s %7s %7s" % cols, flush=True)
    rows = []
    for name, topo, messages in workloads(args):
        for protocol in args.protocol or PROTOCOLS:
            row = run(name, topo, messages, protocol, args.seed, args.until_x)
            rows.append(row)
            print("%-26s %-10s %9d %8d %12.1f %10.1f %7s %7.1f"
                  % tuple(row[c] if row[c] is not None else "stall" for c in cols),
                  flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0 if all(r["delivered"] == r["messages"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
