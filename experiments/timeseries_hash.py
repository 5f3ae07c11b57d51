#!/usr/bin/env python3
"""SHA-256 of sampled runs, to check that a change leaves the time series bit-identical.

    python experiments/timeseries_hash.py --root TREE --k 8
    GSE_PURE_PYTHON=1 python experiments/timeseries_hash.py --root TREE --k 4

For roce, gse and gse-fabric, sampled every 1 and 0.25 us, on the k-ary Fat-Tree's
permutation of 2 MB messages: one line each, the bins, the events and a digest of the
edges, every static and dynamic port and host column, the per-message results and the
summary (its timings left out).  Run it on two trees (or builds) and compare the lines.
"""

import argparse
import hashlib
import json
import random
import sys

TIMING = ("wall", "cpu", "rss", "_s")      # summary keys that are timings, not results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=".", help="the tree to run (default: here)")
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--protocols", default="roce,gse,gse-fabric")
    ap.add_argument("--sample-us", type=float, nargs="+", default=[1.0, 0.25])
    args = ap.parse_args()
    sys.path.insert(0, args.root)
    from gse import _build
    from gse.config import PS_PER_US
    from gse.protocols import default_config
    from gse.runtimes.sim.run import run_simulation
    from gse.workloads import traffic
    from topologies import fat_tree
    topo = fat_tree(args.k)
    msgs = traffic.permutation(len(topo.hosts), 2_000_000, random.Random("1/traffic"))
    for proto in args.protocols.split(","):
        for us in args.sample_us:
            res = run_simulation(topo, msgs, proto, default_config(proto), 1,
                                 sample_ps=int(round(us * PS_PER_US)))
            ts = res.timeseries
            h = hashlib.sha256(repr(ts.edges).encode())
            for group in (ts.ports, ts.port_values, ts.hosts, ts.host_values):
                for name in sorted(group):
                    h.update(name.encode())
                    h.update(repr(list(group[name])).encode())
            h.update(repr(res.per_message()).encode())
            summary = {key: v for key, v in res.summary.items()
                       if not any(t in key for t in TIMING)}
            h.update(json.dumps(summary, sort_keys=True, default=repr).encode())
            print(proto, us, ts.nbins, res.summary["events"], h.hexdigest()[:16],
                  "build=%s" % _build.build(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
