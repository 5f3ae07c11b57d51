#!/usr/bin/env python3
"""What a simulation costs before its first event: imports, topology, routes, configuration.

    python experiments/bench_startup.py                       # k=8, gse, roce, gse-fabric
    python experiments/bench_startup.py --k 16 --protocols gse --repeat 7 --importtime 15

Every measurement is its own process (so the imports are cold, as a user's ``gse sim``):
it times ``import gse.runtimes.sim.run``, then the steps of a k-ary Fat-Tree permutation
run up to the moment the event loop would start:

* ``import``: ``import gse.runtimes.sim.run`` (and the topology and traffic modules);
* ``topology``: ``fat_tree(k)``, graph and next-hop tables (``finalize``); ``next hops``
  is a second ``compute_next_hops()`` on the same graph, the routing part of it;
* ``traffic`` and ``config``: the permutation and ``default_config(protocol)``;
* ``network``: ``build_network`` (ports, queues, switches, agents);
* ``run set-up``: what ``run_simulation`` does after that and before the loop (records
  and their ideal FCTs, scheduling the messages, the watchdog), measured by an observer
  whose factory runs last before the loop;
* ``before 1st event``: import + topology + traffic + config + run set-up (``network``
  is part of the run set-up's span, which starts when ``run_simulation`` is called).

* ``cli sim``: what ``gse sim`` imports on top of that (``gse.cli.main``'s parser for
  the ``sim`` command), not counted in ``before 1st event``.

CPU time (``time.process_time``) of each step, the median over ``--repeat`` processes
(protocols alternate between processes; the machine is shared and noisy).  Modules are
imported as from an installed package, from their cached bytecode: the children run
with ``PYTHONDONTWRITEBYTECODE`` unset and a ``PYTHONPYCACHEPREFIX`` of their own, after
one warm-up process (``--no-pyc``: compile every module from source, every time).
``--root DIR`` measures the tree at DIR (another checkout, built or not) with this
script.  With ``--importtime N`` the N slowest modules of ``python -X importtime`` are
printed too.  Figures are printed, never asserted.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def child(root, protocol, k, size, seed):
    t0 = time.process_time()
    sys.path.insert(0, root)
    import random

    from gse import _build
    from gse.protocols import default_config
    from gse.runtimes.sim import run as sim_run
    from gse.workloads import traffic
    from topologies import fat_tree
    t_import = time.process_time()
    topo = fat_tree(k)
    t_topo = time.process_time()
    topo.compute_next_hops()
    t_hops = time.process_time()
    msgs = traffic.permutation(len(topo.hosts), size, random.Random("%s/traffic" % seed))
    t_traffic = time.process_time()
    cfg = default_config(protocol)
    t_config = time.process_time()
    marks = {}
    real_build = sim_run.build_network

    def timed_build(*args, **kw):
        net = real_build(*args, **kw)
        marks["network"] = time.process_time()
        return net

    class FirstEvent:
        """An observer that looks nowhere: its factory runs just before the loop."""
        next_stop = -1

        def __init__(self, _net):
            marks["loop"] = time.process_time()

        def at_stop(self, now):
            return None

        def close(self, now):
            pass

    sim_run.build_network = timed_build
    t_call = time.process_time()
    sim_run.run_simulation(topo, msgs, protocol, cfg, seed, until_ps=0,
                           observers=[FirstEvent])
    t_cli = time.process_time()
    from gse.cli import main as cli
    try:
        cli.build_parser(("gse.cli.sim",))
    except TypeError:           # a tree from before issue 30: gse sim loaded every command
        cli.build_parser()
    print(json.dumps({
        "cli sim": time.process_time() - t_cli,
        "build": _build.build(),
        "import": t_import - t0, "topology": t_topo - t_import, "next hops": t_hops - t_topo,
        "traffic": t_traffic - t_hops, "config": t_config - t_traffic,
        "network": marks["network"] - t_call, "run set-up": marks["loop"] - marks["network"],
        "before 1st event": (t_import - t0) + (t_topo - t_import) + (t_config - t_hops)
        + (marks["loop"] - t_call)}))


COLUMNS = ("import", "topology", "next hops", "traffic", "config", "network", "run set-up",
           "before 1st event", "cli sim")


def child_env(args):
    env = dict(os.environ)
    if not args.no_pyc:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = args.pycache
    return env


def spawn(protocol, args):
    out = subprocess.run([sys.executable, __file__, "--child", args.root, protocol,
                          str(args.k), str(args.size), str(args.seed)],
                         capture_output=True, text=True, check=True, cwd=args.root,
                         env=child_env(args))
    return json.loads(out.stdout.strip().splitlines()[-1])


def importtime(n, args):
    """The ``n`` modules whose own import time (``-X importtime``'s self column) is largest."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-c",
                          "import gse.runtimes.sim.run"],
                         capture_output=True, text=True, check=True, cwd=args.root,
                         env=child_env(args))
    rows = []
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, cumulative, name = line[len("import time:"):].split("|")
        rows.append((int(own), int(cumulative), name.rstrip()))
    total = sum(r[0] for r in rows)
    print("python -X importtime -c 'import gse.runtimes.sim.run': %d modules, %.1f ms in all"
          % (len(rows), total / 1000))
    for own, cumulative, name in sorted(rows, reverse=True)[:n]:
        print("  %8.2f ms self %8.2f ms cumulative  %s" % (own / 1000, cumulative / 1000,
                                                         name.strip()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--protocols", default="gse,roce,gse-fabric")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--size", type=int, default=2_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--importtime", type=int, default=0, metavar="N")
    ap.add_argument("--root", default=ROOT, help="the tree to measure (default: this one)")
    ap.add_argument("--no-pyc", action="store_true",
                    help="no cached bytecode: compile every module in every process")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        root, p, k, size, seed = args.child
        child(root, p, int(k), int(size), int(seed))
        return 0
    args.root = os.path.abspath(args.root)
    with tempfile.TemporaryDirectory() as pycache:
        args.pycache = pycache
        return measure(args)


def measure(args):
    protocols = args.protocols.split(",")
    if not args.no_pyc:
        spawn(protocols[0], args)         # writes the bytecode cache
    runs = {p: [] for p in protocols}
    for _ in range(args.repeat):
        for p in protocols:
            runs[p].append(spawn(p, args))
    print("%s: k=%d permutation of %d-byte messages: CPU ms before the first event, median "
          "of %d processes (build: %s, %s)"
          % (args.root, args.k, args.size, args.repeat, runs[protocols[0]][0]["build"],
             "no bytecode cache" if args.no_pyc else "cached bytecode"))
    print("%-11s" % "protocol" + "".join("%11s" % c[:10] for c in COLUMNS))
    for p in protocols:
        print("%-11s" % p + "".join("%11.1f" % (1000 * statistics.median(r[c] for r in runs[p]))
                                    for c in COLUMNS))
    if args.importtime:
        importtime(args.importtime, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
