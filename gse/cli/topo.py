"""``gse topo``: a topology's size, tiers and base RTT, as JSON.

    gse topo --k 8
    gse topo --topology spine-leaf-rail --servers 8
"""

import json

from gse.cli.common import add_topology_options, topology_from_args
from gse.wire.packet import HEADER_BYTES


def add_commands(sub):
    p = sub.add_parser("topo", help="describe a topology")
    add_topology_options(p)
    return {"topo": cmd_topo}


def cmd_topo(args):
    topo = topology_from_args(args)
    info = topo.summary()
    info["max_base_rtt_us"] = topo.max_base_rtt_ps(4096 + HEADER_BYTES, HEADER_BYTES) / 1e6
    print(json.dumps(info, indent=2, sort_keys=True))
    return 0
