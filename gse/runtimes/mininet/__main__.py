"""``python -m gse.runtimes.mininet``: build a topology in Mininet, ping every link, tear it
down, and print the times (or check a state file for leftovers)."""

import argparse
import json
import sys
import time

from gse.runtimes.mininet.addressing import DEFAULT_IP_BASE
from gse.runtimes.mininet.environment import mininet_unavailable
from gse.runtimes.mininet.fabric import MininetFabric
from gse.runtimes.mininet.system import guard, left_behind
from topologies.registry import add_topology_options, build_topology


def main(argv=None):
    """Build a topology in Mininet, ping across every link, tear it down; print times."""
    p = argparse.ArgumentParser(prog="python -m gse.runtimes.mininet",
                                description=main.__doc__)
    add_topology_options(p)
    p.set_defaults(k=4)
    p.add_argument("--ip-base", default=DEFAULT_IP_BASE)
    p.add_argument("--no-ping", action="store_true", help="build and tear down only")
    p.add_argument("--check", metavar="STATE.json",
                   help="only report what a network's state file says is left behind")
    args = p.parse_args(argv)
    if args.check:
        with open(args.check) as f:
            left = left_behind(json.load(f))
        print(json.dumps(left or {"left_behind": "nothing"}))
        return 1 if left else 0
    reason = mininet_unavailable()
    if reason:
        print("mininet: %s" % reason, file=sys.stderr)
        return 2
    topo = build_topology(args)
    fab = MininetFabric(topo, args.ip_base)
    failed = 0
    with guard(600):
        try:
            fab.start()
            print("built %d nodes, %d links in %.2f s"
                  % (len(topo.nodes), len(topo.links), fab.setup_s))
            if not args.no_ping:
                t0 = time.perf_counter()
                for la in fab.plan:
                    out = fab.nodes[la.a].cmd("ping -c1 -W1 -q %s >/dev/null; echo $?"
                                              % la.ip_b)
                    if out.strip().splitlines()[-1:] != ["0"]:
                        failed += 1
                        print("link %d %s -> %s: no answer" % (la.index, la.intf_a, la.intf_b))
                print("pinged %d links in %.2f s: %d failed"
                      % (len(fab.plan), time.perf_counter() - t0, failed))
        finally:
            fab.stop()
    left = fab.left_behind()
    print("torn down in %.2f s; left behind: %s" % (fab.teardown_s, left or "nothing"))
    return 1 if failed or left or fab.errors else 0


if __name__ == "__main__":
    sys.exit(main())
