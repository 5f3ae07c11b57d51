"""Switch.route by its flat tables (``Switch._flatten``) against the tuple it reads in
``hops_to``: the same port and the same counts for every destination, entropy and flow."""

import random

import pytest

from gse.wire.packet import DATA, F_ECT, PRIO_DATA, make_packet
from switchmodel import Switch
from switchmodel.switch import mix32
from topologies.fattree import fat_tree
from topologies.podfattree import pod_fat_tree
from topologies.spineleaf import spine_leaf_rail

FLOW_K_SRC = 0x9E3779B1     # switchmodel.switch's (C constants in the compiled build)
FLOW_K_DST = 0x7FEB352D


def packet(dst, entropy, src, msg):
    return make_packet(kind=DATA, src=src, dst=dst, msg_id=msg, psn=0, entropy=entropy,
                       payload_len=1024, flags=F_ECT, msg_len=1 << 20, prio=PRIO_DATA)


def reference(sw, pkt):
    """What route returned before the flat tables: (port, counter that counts it)."""
    hops = sw.hops_to(pkt.dst)
    if hops is None:
        return -1, "unroutable"
    if len(hops) == 0:
        return -1, "unreachable"
    if len(hops) == 1:
        return hops[0], "forwarded"
    if sw.spray:
        key = pkt.entropy ^ sw.salt
    else:
        key = ((pkt.src * FLOW_K_SRC + pkt.dst * FLOW_K_DST + pkt.msg_id) ^ sw.salt) \
            & 0xFFFFFFFFFFFFFFFF
    return hops[mix32(key) % len(hops)], "forwarded"


def check(sw, n_dst, rng, packets=400):
    for _ in range(packets):
        pkt = packet(rng.randrange(-2, n_dst + 2), rng.getrandbits(16),
                     rng.randrange(n_dst or 1), rng.getrandbits(20))
        port, counter = reference(sw, pkt)
        before = (sw.forwarded, sw.unroutable, sw.unreachable)
        assert sw.route(pkt) == port, (sw.name, pkt.dst, pkt.entropy)
        after = (sw.forwarded, sw.unroutable, sw.unreachable)
        which = ("forwarded", "unroutable", "unreachable").index(counter)
        assert [a - b for a, b in zip(after, before)] == [int(i == which) for i in range(3)]


@pytest.mark.parametrize("make", [
    lambda: fat_tree(4),
    lambda: fat_tree(8),
    lambda: spine_leaf_rail(servers=8, nics_per_server=4, groups=2, spines=2),
    lambda: pod_fat_tree(pods=2, groups_per_pod=2, servers_per_group=2, nics_per_server=2),
])
@pytest.mark.parametrize("forwarding", ["spray", "ecmp"])
def test_flat_route_is_the_tuples_route_on_every_switch(make, forwarding):
    topo = make()
    rng = random.Random(7)
    for nid in topo.switches:
        sw = Switch(nid, topo.nodes[nid].name, topo.next_hops[nid], rng.getrandbits(32),
                    forwarding)
        assert sw.flat
        check(sw, len(topo.hosts), rng)


def test_a_written_entry_is_routed_by_the_tuples_and_a_new_table_flattened():
    topo = fat_tree(4)
    rng = random.Random(3)
    nid = topo.switches[0]
    sw = Switch(nid, "edge", topo.next_hops[nid], 99, "spray")
    sw.next_hops[5] = (1,)             # a route recomputed after a failure
    sw.next_hops[6] = ()               # cut off
    check(sw, len(topo.hosts), rng)
    assert sw.route(packet(5, 0, 0, 0)) == 1
    assert sw.route(packet(6, 0, 0, 0)) == -1 and sw.unreachable >= 1
    # a table written by hand: one group per destination, empty and repeated tuples
    sw.next_hops = [(2, 3), (0,), (), (2, 3), (1, 2, 3), (3,)]
    assert sw.flat and not sw.overrides
    check(sw, 6, rng)
    assert [sw.route(packet(d, 5, 0, 0)) for d in (1, 2, 5)] == [0, -1, 3]


def test_tables_it_cannot_flatten_are_routed_by_the_tuples():
    rng = random.Random(5)
    sw = Switch(1, "big", [(40000,), (1, 40001), (2,)], 0, "ecmp")
    assert not sw.flat
    check(sw, 3, rng)
    assert sw.route(packet(0, 0, 0, 0)) == 40000
