"""Addresses of a topology laid out in Mininet: one /31 per link, interface names that fit
Linux's 15 characters, and the MAC of every interface (static neighbour entries, no ARP).
"""

import ipaddress

from topologies.topology import TopologyError

DEFAULT_IP_BASE = "198.18.0.0/15"      # RFC 2544's benchmarking range: never a real host
IFNAME_MAX = 15                         # Linux IFNAMSIZ - 1


class LinkAddress:
    """One link laid out: the /31 and MAC and interface name of each end."""

    __slots__ = ("index", "a", "a_port", "b", "b_port", "ip_a", "ip_b", "mac_a", "mac_b",
                 "intf_a", "intf_b")

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}


def interface_names(topo):
    """``names[nid][port]``: ``<node>-eth<port>``, or ``n<id>-eth<port>`` when the node's
    name is too long for Linux (15 characters)."""
    out = []
    for nid, node in enumerate(topo.nodes):
        stem = node.name
        longest = len("%s-eth%d" % (stem, max(len(node.ports) - 1, 0)))
        if longest > IFNAME_MAX or not stem.replace("_", "").isalnum():
            stem = "n%d" % nid
        out.append(["%s-eth%d" % (stem, p) for p in range(len(node.ports))])
    return out


def address_plan(topo, ip_base=DEFAULT_IP_BASE):
    """One /31 per link from ``ip_base``: link i has base + 2i (end a) and base + 2i + 1
    (end b); MACs 02:47:xx:xx:xx:xx from the same number.  Returns a list by link index."""
    try:
        net = ipaddress.IPv4Network(ip_base, strict=False)
    except ValueError as exc:
        raise TopologyError("ip base %r: %s" % (ip_base, exc)) from None
    need = 2 * len(topo.links)
    if need > net.num_addresses:
        raise TopologyError("ip base %s has %d addresses; %d links need %d"
                            % (net, net.num_addresses, len(topo.links), need))
    base = int(net.network_address)
    names = interface_names(topo)
    plan = []
    for link in topo.links:
        la = LinkAddress()
        la.index, la.a, la.a_port, la.b, la.b_port = (link.index, link.a, link.a_port,
                                                      link.b, link.b_port)
        n = 2 * link.index
        la.ip_a = str(ipaddress.IPv4Address(base + n))
        la.ip_b = str(ipaddress.IPv4Address(base + n + 1))
        la.mac_a, la.mac_b = _mac(n), _mac(n + 1)
        la.intf_a = names[link.a][link.a_port]
        la.intf_b = names[link.b][link.b_port]
        plan.append(la)
    return plan


def _mac(n):
    return "02:47:%02x:%02x:%02x:%02x" % ((n >> 24) & 255, (n >> 16) & 255, (n >> 8) & 255,
                                          n & 255)
