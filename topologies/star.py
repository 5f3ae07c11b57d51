"""One switch and ``hosts`` hosts on it: the single-switch fabric of the HPCC authors' ns-3
simulator (its mix/topology.txt: one switch, 100 Gb/s, 1 us links), on which DCQCN's
incast and fairness runs are made (experiments/validate_dcqcn.py)."""

from topologies.fattree import _check_number, _ns_to_ps
from topologies.topology import Topology, TopologyError


def star(hosts, link_gbps=100.0, link_delay_ns=1000, switch_latency_ns=0):
    """Hosts ``h0 .. h{hosts-1}`` (ids ``0 .. hosts-1``), each on port ``i`` of switch ``sw``."""
    if isinstance(hosts, bool) or not isinstance(hosts, int) or hosts < 2:
        raise TopologyError("star: hosts must be an integer >= 2, got %r" % (hosts,))
    _check_number("link_gbps", link_gbps, positive=True)
    _check_number("link_delay_ns", link_delay_ns, positive=False)
    _check_number("switch_latency_ns", switch_latency_ns, positive=False)
    delay_ps = _ns_to_ps("link_delay_ns", link_delay_ns)
    topo = Topology("star(%d)" % hosts,
                    switch_latency_ps=_ns_to_ps("switch_latency_ns", switch_latency_ns))
    for h in range(hosts):
        topo.add_node("h%d" % h, "host", 0)
    sw = topo.add_node("sw", "edge", 1)
    for h in range(hosts):
        topo.add_link(h, sw, float(link_gbps), delay_ps)
    topo.meta.update(kind="star", hosts=hosts)
    return topo.finalize()
