#!/usr/bin/env python3
"""Fluid bounds on the permutation's tail in the failure study (``experiments/failures.py``).

    python experiments/failure_bounds.py --seeds 1 2 3 4 5 6

k=8 Fat-Tree, a permutation of 2 MB messages (the study's, by seed), a share of the
aggregation-to-core links failed at 50 us (``--spec``, the study's ``25% core`` case), the
surviving links used from that instant (detection and repair take no time).  Each flow
runs at line rate until 50 us and at a constant rate after, so its FCT is the ideal one
plus the rest of its bytes' extra time at that rate; the table gives each bound's p99 FCT
and its ratio to ``--base-us``, the measured p99 without failure (fabric mode's by
default), per seed:

* ``pod``: a cross-pod flow gets at most its pods' surviving core links over the pods'
  cross-pod flows (the most damaged pod's share, the source's and the destination's);
* ``spray``: max-min fair rates (progressive filling) when each flow is split evenly
  over its live paths -- the cores whose links to both pods survive, each edge uplink
  weighted by the live paths beyond it -- which is what fabric mode's leaves do after a
  route update (the widths); edge, aggregation and core links all count;
* ``live/16``: each pair at its live paths over all 16 (``path_share_pacing``).

Figures only, nothing asserted.
"""

import argparse
import math
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from gse.workloads import traffic  # noqa: E402
from gse.workloads.faults import build_schedule  # noqa: E402
from switchmodel.fabric_maxmin import leaf_plan  # noqa: E402
from topologies import fat_tree  # noqa: E402

FAIL_US = 50.0
IDEAL_US = 176.5            # a cross-pod 2 MB message alone (docs/fabric-mode.md)
GBPS = 100.0
MTU, HEADER = 4096, 64
# fabric mode's p99 without failure, seeds 1-6 (experiments/failures.py, commit 6028574)
BASE_US = {1: 197.0, 2: 195.8, 3: 194.7, 4: 193.8, 5: 195.3, 6: 195.1}


def p99(values):
    v = sorted(values)
    return v[math.ceil(0.99 * len(v)) - 1]


def fct_us(rate, size):
    """Line rate until the failure, ``rate`` (a fraction of it) after."""
    tx = size / MTU * (MTU + HEADER) * 8 / (GBPS * 1000)
    left = max(0.0, tx - FAIL_US)
    return IDEAL_US + left * (1 / rate - 1)


def pods(topo):
    """node -> pod index for edge and aggregation switches (the hosts' edge's pod)."""
    pod, todo = {}, []
    for n in topo.nodes:
        if n.kind == "edge" and n.id not in pod:
            pod[n.id] = len(set(pod.values()))
            todo = [n.id]
            while todo:             # the pod: edges and aggs reachable without a core
                x = todo.pop()
                for port in range(len(topo.nodes[x].ports)):
                    y = topo.peer(x, port)[0]
                    if topo.nodes[y].kind in ("edge", "agg") and y not in pod:
                        pod[y] = pod[n.id]
                        todo.append(y)
    return pod


def bounds(topo, seed, spec, size):
    dead = set(build_schedule(topo, [spec], seed=seed).links())
    pod = pods(topo)
    up = {}                  # (pod, core) -> (agg, alive)
    for li, link in enumerate(topo.links):
        a, b = link.a, link.b
        if topo.nodes[a].kind == "core":
            a, b = b, a
        if topo.nodes[a].kind == "agg" and topo.nodes[b].kind == "core":
            up[(pod[a], b)] = (a, li not in dead)
    cores = sorted({c for _, c in up})
    edge = {h: topo.peer(h, 0)[0] for h in topo.hosts}
    msgs = traffic.permutation(len(topo.hosts), size, random.Random(seed))
    flows, live = [], []
    for m in msgs:
        p, q = pod[edge[m.src]], pod[edge[m.dst]]
        if p == q:
            flows.append(None)
            live.append(None)
            continue
        paths = [c for c in cores if up[(p, c)][1] and up[(q, c)][1]]
        share = {}
        for c in paths:
            for key in (("up", p, c), ("down", q, c), ("edge-up", edge[m.src], up[(p, c)][0]),
                        ("edge-down", up[(q, c)][0], edge[m.dst])):
                share[key] = share.get(key, 0.0) + 1.0 / len(paths)
        flows.append(share)
        live.append(len(paths))
    weighted = {mode: [fct_us(r, size) for r in maxmin(
        planned(msgs, flows, edge, pod, up, cores, mode))] for mode in ("all", "active")}
    n_pods = len(set(pod.values()))
    alive = [sum(1 for (p, _), (_, ok) in up.items() if p == x and ok) for x in range(n_pods)]
    cross = [0] * n_pods
    for m, f in zip(msgs, flows):
        if f is not None:
            cross[pod[edge[m.src]]] += 1
    rate_pod = [1.0 if f is None else min(1.0, alive[pod[edge[m.src]]] / cross[pod[edge[m.src]]],
                                           alive[pod[edge[m.dst]]] / cross[pod[edge[m.dst]]])
                for m, f in zip(msgs, flows)]
    full = len(cores)
    rate_live = [1.0 if k is None else min(1.0, k / full) for k in live]
    return ([fct_us(r, size) for r in rate_pod], [fct_us(r, size) for r in maxmin(flows)],
            [fct_us(r, size) for r in rate_live], weighted["all"], weighted["active"])


def planned(msgs, flows, edge, pod, up, cores, mode):
    """The flows split by the weights ``switchmodel.fabric_maxmin.leaf_plan`` gives each pair
    of edge switches (``plan_weights``: demand ``mode``, "all" pairs or the "active"
    ones), in the form ``maxmin`` takes."""
    def paths_of(a, b):
        p, q = pod[a], pod[b]
        return {c: (("edge-up", a, up[(p, c)][0]), ("up", p, c), ("down", q, c),
                    ("edge-down", up[(q, c)][0], b))
                for c in cores if up[(p, c)][1] and up[(q, c)][1]}
    edges = sorted(set(edge.values()))
    per_edge = sum(1 for h in edge if edge[h] == edges[0])
    demand = {}
    if mode == "all":
        for a in edges:
            others = [b for b in edges if pod[b] != pod[a]]
            for b in others:
                demand[(a, b)] = per_edge / len(others)
    else:
        for m, f in zip(msgs, flows):
            if f is not None:
                pair = (edge[m.src], edge[m.dst])
                demand[pair] = demand.get(pair, 0) + 1
    plan, _ = leaf_plan(demand, paths_of)
    out = []
    for m, f in zip(msgs, flows):
        if f is None:
            out.append(None)
            continue
        a, b = edge[m.src], edge[m.dst]
        weights = plan.get(a, {}).get(b)
        if weights is None:
            out.append(f)
            continue
        share = {}
        for c, links in paths_of(a, b).items():
            for link in links if weights[c] > 0 else ():
                share[link] = share.get(link, 0.0) + weights[c]
        out.append(share)
    return out


def maxmin(flows):
    """Max-min fair rates (at most 1) of flows given as {link: share of the flow's rate}."""
    rate = [1.0 if f is None else 0.0 for f in flows]
    frozen = [f is None for f in flows]
    while not all(frozen):
        used, load = {}, {}
        for i, f in enumerate(flows):
            if f is None:
                continue
            for link, w in f.items():
                if frozen[i]:
                    used[link] = used.get(link, 0.0) + w * rate[i]
                else:
                    load[link] = load.get(link, 0.0) + w
        level, tight = 1.0, None
        for link, w in load.items():
            t = (1.0 - used.get(link, 0.0)) / w
            if t < level:
                level, tight = t, link
        for i in range(len(flows)):
            if not frozen[i]:
                rate[i] = level
                if tight is None or tight in flows[i]:
                    frozen[i] = True
    return rate


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6])
    p.add_argument("--spec", default="tier:agg-core:25%%@%dus" % FAIL_US)
    p.add_argument("--base-us", type=float, nargs="+",
                   help="p99 without failure per seed (default: fabric mode's, seeds 1-6)")
    args = p.parse_args(argv)
    base = dict(zip(args.seeds, args.base_us)) if args.base_us else BASE_US
    topo = fat_tree(8)
    print("| seed | pod: p99 us (x base) | spray max-min | live/16 | planned, all pairs "
          "| planned, active pairs |")
    print("|---|---|---|---|---|---|")
    sums = [0.0] * 5
    for seed in args.seeds:
        if seed not in base:
            p.error("no p99 without failure for seed %d: give --base-us" % seed)
        cells = []
        for j, fcts in enumerate(bounds(topo, seed, args.spec, 2_000_000)):
            v = p99(fcts)
            sums[j] += v / base[seed]
            cells.append("%.1f (%.2f)" % (v, v / base[seed]))
        print("| %d | %s |" % (seed, " | ".join(cells)))
    print("| mean | %s |" % " | ".join("(%.2f)" % (s / len(args.seeds)) for s in sums))
    return 0


if __name__ == "__main__":
    sys.exit(main())
