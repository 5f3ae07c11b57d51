"""Topologies as plain data: nodes, links with rate and delay, equal-cost next hops."""

from topologies.topology import (
    KINDS, PS_PER_NS, SWITCH_KINDS, Link, Node, Topology, TopologyError, serialisation_ps,
)
from topologies.fattree import MAX_K, fat_tree, host_pod, node_pod
from topologies.star import star

__all__ = [
    "KINDS", "MAX_K", "PS_PER_NS", "SWITCH_KINDS", "Link", "Node", "Topology", "TopologyError",
    "fat_tree", "host_pod", "node_pod", "serialisation_ps", "star",
]
