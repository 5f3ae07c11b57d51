"""``gse traffic``: generate traffic and write it as an htsim connection matrix.

    gse traffic --k 8 --traffic incast --senders 32 --out incast.cm
"""

from gse.cli.common import (
    add_topology_options,
    add_traffic_options,
    topology_from_args,
    traffic_from_args,
)
from gse.workloads.cmfile import write_cm


def add_commands(sub):
    p = sub.add_parser("traffic", help="generate traffic and write it as a .cm file")
    add_topology_options(p)
    add_traffic_options(p)
    p.add_argument("--out", required=True, metavar="FILE.cm")
    return {"traffic": cmd_traffic}


def cmd_traffic(args):
    topo = topology_from_args(args)
    messages = traffic_from_args(args, topo)
    write_cm(args.out, len(topo.hosts), messages)
    print("wrote %d connections over %d nodes to %s" % (len(messages), len(topo.hosts),
                                                        args.out))
    return 0
