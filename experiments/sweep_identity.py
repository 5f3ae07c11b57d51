#!/usr/bin/env python3
"""A 3 x 3 x 4 grid on a local two-worker Dask cluster against the same runs one by one.

    python experiments/sweep_identity.py                 # k=4 fat-tree, 200 KB permutation
    python experiments/sweep_identity.py --k 8 --size 2000000 --workers 2

Protocols (gse, roce, gse-fabric) x queue sizes (3) x seeds (4) = 36 runs: ``gse sweep``'s
runner on ``LocalCluster(n_workers=2)``, then every run again in this process, alone
(``gse.sweep.single.run_row``, what ``gse sim`` does).  Prints whether every figure of
every row is identical (all summary columns except the machine's: wall_s, run_s,
worker_rss_mib) and both wall times.  Figures are printed, never asserted.
"""

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gse.sweep.runner import LocalDask, run_sweep  # noqa: E402
from gse.sweep.single import SUMMARY_COLUMNS, WALL_COLUMNS, run_row  # noqa: E402
from gse.sweep.spec import parse_spec  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--size", type=int, default=200_000)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    spec = parse_spec({
        "name": "identity-3x3x4",
        "base": {"topology": "fat-tree", "k": args.k, "traffic": "permutation",
                 "size": args.size},
        "grid": {"protocol": ["gse", "roce", "gse-fabric"],
                 "set.queue_bytes": [65536, 131072, 262144],
                 "seed": [1, 2, 3, 4]}}, "identity-3x3x4")
    figures = [n for n, _t, _w in SUMMARY_COLUMNS if n not in WALL_COLUMNS]
    with tempfile.TemporaryDirectory() as tmp:
        with LocalDask(workers=args.workers) as dask:
            t0 = time.perf_counter()
            res = run_sweep(spec, os.path.join(tmp, "t"), client=dask.client)
            sweep_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    alone = [run_row(r.run_id, r.argv) for r in spec.runs()]
    single_s = time.perf_counter() - t0
    same = [all(a[n] == b[n] for n in figures) for a, b in zip(res.rows, alone)]
    ok = sum(1 for r in res.rows if r["status"] == "ok")
    print(json.dumps({"runs": len(res.rows), "ok": ok, "identical_rows": sum(same),
                      "all_identical": all(same) and len(same) == 36,
                      "columns_compared": len(figures), "sweep_s_2_workers": round(sweep_s, 2),
                      "one_by_one_s": round(single_s, 2)}, indent=1))
    return 0 if all(same) else 1


if __name__ == "__main__":
    sys.exit(main())
