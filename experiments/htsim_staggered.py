#!/usr/bin/env python3
"""Staggered, mixed-size workloads for htsim's ``htsim_roce`` and the ``htsim`` profile.

    python experiments/htsim_staggered.py gen --seed 1 --out stag400_s1.cm
        [--flows 400 --hosts 128 --min-size 4000 --max-size 8000000 --span-us 200
         --start-digits 3]
    htsim_roce -nodes 128 -tm stag400_s1.cm -strat ecmp_host -paths 1 -mtu 4150 -end 20000 \
        -o /dev/null > stag400_s1.log
    python experiments/htsim_staggered.py import --cm stag400_s1.cm --log stag400_s1.log \
        --command "htsim_roce ..." --date 2026-12-04 \
        --workload "gen --seed 1 ..." --out experiments/data/htsim_roce/stag400_s1.json

``gen`` draws ``--flows`` flows between distinct hosts (every (source, destination) pair
at most once, because htsim names a flow's completion only by ``Roce_SRC_DST``), sizes
log-uniform in [min, max] bytes, start times uniform over [0, span) µs written with
``--start-digits`` decimals, ids 1..N in start order; seeded, so a seed names a workload.

``seeds`` sets htsim's FCT percentiles over its own seeds (``htsim_roce -seed N``: its
ECMP hash) beside the ``htsim`` profile's over the project's (``run_simulation(seed=N)``),
each flow's FCT counted from the start htsim ran it at (below)::

    python experiments/htsim_staggered.py seeds --cm stag400_s1.cm --logs seed*.log \
        --seeds 1 2 3 4 5 6 7 8 9 10

``flows`` replays a stored run on htsim's routes, flow by flow, with the starts htsim ran
or (``--exact-starts``) the .cm's own, as ``gse sim --traffic-file`` reads them::

    python experiments/htsim_staggered.py flows --cm stag400_s1.cm \
        --stored experiments/data/htsim_roce/stag400_s1.json [--exact-starts]

htsim_roce starts a flow at its ``start`` truncated to whole microseconds
(datacenter/connection_matrix.cpp:754-755 stores the float in an integer, roce.cpp:134 reads
that as microseconds), so ``seeds`` and ``import`` give the project the truncated starts,
which htsim ran; ``--exact-starts`` runs the .cm's own starts instead.

``import`` turns htsim's output into the stored format of experiments/data/htsim_roce/
(read by experiments/validate_htsim_roce.py and tests/test_htsim_model.py): the flows with
the starts htsim ran, each flow's ``finished at`` time, and the path each flow's data and
ACKs took.  htsim prints no paths; the runs stored here come from a build with one print
added to ``FatTreeSwitch::receivePacket`` (datacenter/fat_tree_switch.cpp, after
``getNextHop``; "data" when the packet's type is ``ROCE``, else "ack"; a static set of the
(switch type, switch id, flow id, data|ack) already printed), once per such key::

    ROUTE <flow id> <data|ack> <switch type 1|2|3> <switch id>

in the order packets first reach each switch.  htsim's ToR ``t`` is ``edge{t//4}_{t%4}``
of ``topologies.fat_tree(8)``, its aggregation ``a`` is ``agg{a//4}_{a%4}`` and its core
``c`` (joined to every pod's aggregation ``c % 4``) is ``core{(c%4)*4 + c//4}``.  The
print changes nothing else: the stored busy-host run is reproduced by such a build to the
last digit, paths included.
"""

import argparse
import json
import math
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gse.config import roce_baseline  # noqa: E402
from gse.runtimes.sim.run import run_simulation  # noqa: E402
from gse.workloads.cmfile import read_cm, write_cm  # noqa: E402
from gse.workloads.traffic import Message  # noqa: E402
from topologies import fat_tree  # noqa: E402

HTSIM = "github:ultraethernet/uet-htsim 40ccb0526bb6297eeb22ab33f9934fb35278dbaf"
K = 8
HALF = K // 2


def staggered(seed, flows=400, hosts=128, min_size=4000, max_size=8_000_000, span_us=200,
              start_digits=3):
    """The workload of ``gen``: a list of Messages, ids 1..flows in start order."""
    if flows > hosts * (hosts - 1):
        raise ValueError("%d flows need more than the %d distinct pairs of %d hosts"
                         % (flows, hosts * (hosts - 1), hosts))
    rng = random.Random(seed)
    pairs = set()
    drawn = []
    while len(drawn) < flows:
        src, dst = rng.randrange(hosts), rng.randrange(hosts)
        if src == dst or (src, dst) in pairs:
            continue
        pairs.add((src, dst))
        size = round(min_size * (max_size / min_size) ** rng.random())
        start_us = round(rng.random() * span_us, start_digits)
        drawn.append((round(start_us * 10 ** start_digits), src, dst, size))
    drawn.sort()
    scale = 1_000_000 // 10 ** start_digits
    return [Message(i, src, dst, size, start * scale)
            for i, (start, src, dst, size) in enumerate(drawn, 1)]


def htsim_starts(messages):
    """``messages`` starting when htsim_roce starts them: at whole microseconds."""
    return [Message(m.msg_id, m.src, m.dst, m.size, m.start_ps // 1_000_000 * 1_000_000)
            for m in messages]


def percentiles(fcts):
    """p50, p99 and max of a list of FCTs (nearest rank, as gse.metrics)."""
    v = sorted(fcts)
    return tuple(v[max(1, math.ceil(p * len(v))) - 1] for p in (0.5, 0.99, 1.0))


def seeds(cm, logs, our_seeds, exact=False):
    """Rows (who, seed, p50, p99, max) of htsim's runs (logs) and of the profile's."""
    _, msgs = read_cm(cm)
    ran = msgs if exact else htsim_starts(msgs)
    start = {m.msg_id: m.start_ps / 1e6 for m in ran}
    rows = []
    for path in logs:
        finished, _ = parse_log(path, msgs)
        rows.append(("htsim", path) + percentiles([finished[i] - start[i] for i in finished]))
    for seed in our_seeds:
        res = run_simulation(fat_tree(K), ran, "roce", roce_baseline("htsim"), seed)
        if res.summary["lost"]:
            raise SystemExit("seed %d: %d messages lost" % (seed, res.summary["lost"]))
        rows.append(("here", "seed %d" % seed) + percentiles(
            [(r.finish_ps - r.start_ps) / 1e6 for r in res.records]))
    return rows


def flows(cm, stored_path, exact=False):
    """Per-flow agreement of the profile with a stored run, on htsim's routes: (median and
    largest |FCT here / htsim - 1|, flows within 0.005 µs, (p99, max) here, (p99, max) in
    htsim), every FCT counted from the .cm's start."""
    _, msgs = read_cm(cm)
    with open(stored_path) as f:
        ref = json.load(f)
    finished = {int(k): v for k, v in ref["finished_us"].items()}
    routes = [(r[0], r[1], r[2:]) for r in ref["routes"]]
    res = run_simulation(fat_tree(K), msgs if exact else htsim_starts(msgs), "roce",
                         roce_baseline("htsim"), 1, routes=routes)
    start = {m.msg_id: m.start_ps / 1e6 for m in msgs}
    here = {r.msg_id: r.finish_ps / 1e6 - start[r.msg_id] for r in res.records}
    theirs = {i: t - start[i] for i, t in finished.items()}
    rel = sorted(abs(here[i] / theirs[i] - 1) for i in theirs)
    close = sum(abs(here[i] - theirs[i]) <= 0.005 for i in theirs)
    p = percentiles(here.values())
    q = percentiles(theirs.values())
    return rel[(len(rel) - 1) // 2], rel[-1], close, p[1:], q[1:]


def switch_name(kind, ident):
    """A switch of htsim's k=8 fat tree by the name ``topologies.fat_tree(8)`` gives it."""
    if kind == 1:
        return "edge%d_%d" % (ident // HALF, ident % HALF)
    if kind == 2:
        return "agg%d_%d" % (ident // HALF, ident % HALF)
    if kind == 3:
        return "core%d" % ((ident % HALF) * HALF + ident // HALF)
    raise ValueError("switch type %r is not 1 (ToR), 2 (aggregation) or 3 (core)" % kind)


_FINISHED = re.compile(r"^Flow Roce_(\d+)_(\d+) \d+ finished at (\S+)")


def parse_log(path, messages):
    """(finished_us by flow id, routes) from the output of ``htsim_roce`` with the print."""
    by_pair = {}
    for m in messages:
        if (m.src, m.dst) in by_pair:
            raise ValueError("flows %d and %d share %d->%d: htsim's output cannot tell them "
                             "apart" % (by_pair[(m.src, m.dst)], m.msg_id, m.src, m.dst))
        by_pair[(m.src, m.dst)] = m.msg_id
    finished, hops = {}, {}
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            if line.startswith("ROUTE "):
                _, fid, direction, kind, ident = line.split()
                hops.setdefault((int(fid), direction), []).append(
                    switch_name(int(kind), int(ident)))
                continue
            m = _FINISHED.match(line)
            if m:
                fid = by_pair.get((int(m.group(1)), int(m.group(2))))
                if fid is None or fid in finished:
                    raise ValueError("%s:%d: %r names no flow of the .cm, or one twice"
                                     % (path, lineno, line.strip()))
                finished[fid] = float(m.group(3))
    missing = sorted(set(by_pair.values()) - set(finished))
    if missing:
        raise ValueError("%s: %d flows never finished (first: %s); raise -end"
                         % (path, len(missing), missing[:5]))
    # a flow within one ToR crosses one switch and has no choice to pin
    routes = [[fid, direction] + path for (fid, direction), path in sorted(hops.items())
              if len(path) > 1]
    return finished, routes


def stored(messages, finished, routes, command, date, workload):
    """The JSON text of experiments/data/htsim_roce/ for one run (``messages`` with the
    starts htsim ran)."""
    lines = ["{",
             '"htsim": %s,' % json.dumps(HTSIM + ", htsim_roce built with its CMake "
                                         "(Release, -O3) and the ROUTE print"),
             '"command": %s,' % json.dumps(command),
             '"date": %s,' % json.dumps(date),
             '"workload": %s,' % json.dumps(workload),
             '"note": %s,' % json.dumps(
                 "messages: [id, src, dst, bytes, start us if not 0], the start as htsim_roce "
                 "ran it: the .cm's start truncated to whole microseconds "
                 "(connection_matrix.cpp:754-755, roce.cpp:134); finished_us: "
                 "each flow's 'finished at' time as htsim prints it (6 significant digits), "
                 "from the start of the run. routes: [flow id, data|ack, switch, ...], the "
                 "switches each flow's data and ACKs crossed (htsim's per-switch ECMP), in "
                 "the node names of topologies.fat_tree(8); made by "
                 "experiments/htsim_staggered.py"),
             '"messages": [']
    rows = []
    for m in messages:
        row = [m.msg_id, m.src, m.dst, m.size]
        if m.start_ps:
            row.append(m.start_ps / 1e6)
        rows.append(json.dumps(row))
    lines.append(",\n".join(rows))
    lines.append("],")
    lines.append('"finished_us": {%s},' % ", ".join(
        '"%d": %s' % (fid, repr(finished[fid])) for fid in sorted(finished)))
    lines.append('"routes": [')
    lines.append(",\n".join(json.dumps(r) for r in routes))
    lines.append("]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen", help="write a staggered, mixed-size workload as a .cm file")
    g.add_argument("--seed", type=int, required=True)
    g.add_argument("--out", required=True)
    g.add_argument("--flows", type=int, default=400)
    g.add_argument("--hosts", type=int, default=128)
    g.add_argument("--min-size", type=int, default=4000)
    g.add_argument("--max-size", type=int, default=8_000_000)
    g.add_argument("--span-us", type=float, default=200)
    g.add_argument("--start-digits", type=int, default=3,
                   help="decimals of the start times (0: whole microseconds)")
    c = sub.add_parser("seeds", help="FCT p50/p99/max: htsim's seeds beside the profile's")
    c.add_argument("--cm", required=True)
    c.add_argument("--logs", nargs="+", required=True, help="htsim_roce outputs, a seed each")
    c.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    c.add_argument("--exact-starts", action="store_true",
                   help="the profile runs the .cm's starts, not htsim's truncated ones")
    fl = sub.add_parser("flows", help="a stored run replayed on htsim's routes, flow by flow")
    fl.add_argument("--cm", required=True)
    fl.add_argument("--stored", required=True, help="experiments/data/htsim_roce/NAME.json")
    fl.add_argument("--exact-starts", action="store_true",
                    help="the .cm's starts, not htsim's truncated ones")
    i = sub.add_parser("import", help="store an htsim_roce run of a .cm as JSON")
    i.add_argument("--cm", required=True)
    i.add_argument("--log", required=True, help="htsim_roce's standard output")
    i.add_argument("--command", required=True, help="the command that ran htsim")
    i.add_argument("--date", required=True)
    i.add_argument("--workload", required=True, help="how the .cm was made")
    i.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.cmd == "gen":
        msgs = staggered(args.seed, args.flows, args.hosts, args.min_size, args.max_size,
                         args.span_us, args.start_digits)
        write_cm(args.out, args.hosts, msgs)
        print("%s: %d flows, %d B, last start %.3f us" % (
            args.out, len(msgs), sum(m.size for m in msgs), msgs[-1].start_ps / 1e6))
        return 0
    if args.cmd == "seeds":
        rows = seeds(args.cm, args.logs, args.seeds, args.exact_starts)
        print("%-6s %-28s %9s %9s %9s" % ("", "run", "p50 us", "p99 us", "max us"))
        for who, run, p50, p99, top in rows:
            print("%-6s %-28s %9.1f %9.1f %9.1f" % (who, os.path.basename(run), p50, p99, top))
        for who in ("htsim", "here"):
            mine = [r for r in rows if r[0] == who]
            print("%-6s p99 %.1f-%.1f, max %.1f-%.1f over %d runs" % (
                who, min(r[3] for r in mine), max(r[3] for r in mine),
                min(r[4] for r in mine), max(r[4] for r in mine), len(mine)))
        return 0
    if args.cmd == "flows":
        med, top, close, here, theirs = flows(args.cm, args.stored, args.exact_starts)
        print("%s, %s starts, htsim's routes: |FCT here / htsim - 1| median %.4f%%, max "
              "%.4f%%; %d flows within 0.005 us" % (os.path.basename(args.stored),
                                                   "the .cm's" if args.exact_starts
                                                   else "htsim's", 100 * med, 100 * top,
                                                   close))
        print("p99 / max FCT us (from the .cm's starts): here %.3f / %.3f, htsim %.3f / %.3f"
              % (here + theirs))
        return 0
    _, msgs = read_cm(args.cm)
    msgs = sorted(msgs, key=lambda m: m.msg_id)
    finished, routes = parse_log(args.log, msgs)
    with open(args.out, "w") as f:
        f.write(stored(htsim_starts(msgs), finished, routes, args.command, args.date,
                       args.workload))
    print("%s: %d flows, %d routes" % (args.out, len(finished), len(routes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
