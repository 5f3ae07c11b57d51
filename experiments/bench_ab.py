#!/usr/bin/env python3
"""Two checkouts on one simulator scenario, in alternation: CPU, per-event cost, peak RSS.

    python experiments/bench_ab.py --base /path/to/main-clone --scenario perm-k16 --rounds 5
    python experiments/bench_ab.py --base-env GSE_HUGE_PAGES=0 --together --scenario perm-k32
    python experiments/bench_ab.py --base /work/main --scenario perm-k8 --protocol roce \
        --baseline htsim --rounds 8

Each round runs ``experiments/bench_sim.py --child`` once in the base checkout and once in
this one (the order alternating from round to round; ``--together``: both at once, for
long runs on a machine whose load moves), each in its own process under GNU time, so both
see the same machine load.  Without ``--base`` the base is this checkout, run with
``--base-env`` settings (e.g. a feature turned off).  It prints every run, the medians,
the per-round CPU ratios this / base and whether both ran the same events to the same
FCTs.  Build each checkout first (its compiled build is the one its own tree holds).
Printed, never asserted.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULT = ("events", "lost", "fct_p50_us", "fct_p99_us", "fct_max_us")


def start(tree, scenario, protocol, gnu_time, extra_env=(), baseline=None):
    env = dict(os.environ, PYTHONPATH=tree)
    env.pop("GSE_PURE_PYTHON", None)
    env.update(extra_env)
    proc = subprocess.Popen([gnu_time, "-v", sys.executable, "experiments/bench_sim.py",
                             "--child", "--scenario", scenario, "--seeds", "1",
                             "--protocol", protocol]
                            + (["--baseline", baseline] if baseline else []),
                            cwd=tree, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.load = os.getloadavg()[0]
    proc.tree = tree
    return proc


def finish(proc):
    stdout, stderr = proc.communicate()
    tree, load = proc.tree, proc.load
    out = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    if out.returncode != 0:
        raise SystemExit("%s: bench_sim failed:\n%s" % (tree, out.stderr[-2000:]))
    row = json.loads(out.stdout.strip().splitlines()[-1])
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr)
    if not m:
        raise SystemExit("%s is not GNU time (no maximum resident set size)" % proc.args[0])
    row.update(rss_mib=int(m.group(1)) / 1024, ns_event=row["cpu_s"] * 1e9 / row["events"],
               load=load)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", help="the other checkout (e.g. a clone of main; default: this "
                    "one, with --base-env)")
    ap.add_argument("--base-env", action="append", default=[], metavar="NAME=VALUE",
                    help="environment of the base side's runs (repeatable)")
    ap.add_argument("--together", action="store_true",
                    help="run the two sides of a round at once rather than one after the other")
    ap.add_argument("--scenario", default="perm-k16")
    ap.add_argument("--protocol", default="gse")
    ap.add_argument("--baseline", help="the RoCE profile (--protocol roce), as bench_sim.py's")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--time", default="/usr/bin/time", help="GNU time")
    args = ap.parse_args()
    this = os.path.dirname(HERE)
    trees = {"base": os.path.abspath(args.base or this), "this": this}
    envs = {"base": dict(kv.split("=", 1) for kv in args.base_env), "this": {}}
    if trees["base"] == this and not envs["base"]:
        ap.error("without --base, give --base-env: the two sides would be the same")
    rows = {"base": [], "this": []}
    for r in range(args.rounds):
        order = ("base", "this") if r % 2 == 0 else ("this", "base")
        if args.together:
            procs = [start(trees[n], args.scenario, args.protocol, args.time, envs[n],
                           args.baseline) for n in order]
            done = [finish(p) for p in procs]
        else:
            done = [finish(start(trees[n], args.scenario, args.protocol, args.time, envs[n],
                                 args.baseline)) for n in order]
        for name, row in zip(order, done):
            rows[name].append(row)
            print("round %d %-4s %s CPU %.3f s  %.0f ns/event  RSS %.1f MiB  events %d  "
                  "load %.1f" % (r, name, row["build"], row["cpu_s"], row["ns_event"],
                                 row["rss_mib"], row["events"], row["load"]), flush=True)
    for name in ("base", "this"):
        print("median %-4s CPU %.3f s  %.0f ns/event  RSS %.2f MiB" % (
            name, *(statistics.median(x[f] for x in rows[name])
                    for f in ("cpu_s", "ns_event", "rss_mib"))))
    ratios = sorted(t["cpu_s"] / b["cpu_s"] for b, t in zip(rows["base"], rows["this"]))
    print("CPU this/base per round: median %.3f (%.3f-%.3f)"
          % (statistics.median(ratios), ratios[0], ratios[-1]))
    same = all({k: b[k] for k in RESULT} == {k: t[k] for k in RESULT}
               for b, t in zip(rows["base"], rows["this"]))
    print("same events and FCTs:", same)
    return 0


if __name__ == "__main__":
    sys.exit(main())
