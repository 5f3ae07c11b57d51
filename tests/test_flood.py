"""The flood test, small and in one process (``experiments/flood.py`` is the 10^6-datagram
version with one process per agent): while the k=4 permutation runs over real UDP, every
node gets hostile datagrams -- random bytes, truncated headers, forged REQUEST, GRANT,
ACK and DATA for live and dead message ids -- sent from its neighbours' own sockets (so
they pass the neighbour check, as a forger with a raw socket's would) and from a stranger's.
With authenticated packets every real message arrives exactly once and intact, and every
forged datagram is counted by the reason it was refused (issue 15)."""

import asyncio
import os
import random
import socket
import sys

import pytest

pytest.importorskip("cryptography")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "experiments"))

import flood  # noqa: E402

from gse.runtimes.udp.io import run_async  # noqa: E402
from gse.runtimes.udp.network import UdpNetwork  # noqa: E402
from gse.workloads import traffic  # noqa: E402
from topologies.fattree import fat_tree  # noqa: E402

ROUNDS = 20                       # x 36 nodes x 6 kinds = 4,320 forged datagrams


def test_a_flood_of_forged_datagrams_is_counted_and_real_messages_arrive(tmp_path):
    keyfile = tmp_path / "domain.key"
    keyfile.write_bytes(bytes(random.Random(9).getrandbits(8) for _ in range(32)))
    topo = fat_tree(4, link_gbps=0.05)
    msgs = traffic.permutation(16, 64 * 1024, random.Random(9))
    live = [(m.src, m.dst, m.msg_id, m.size) for m in msgs]
    rng = random.Random(9)
    sent = {"neighbour": 0, "stranger": 0, "malformed": 0}

    async def scenario():
        async with UdpNetwork(topo, msgs, seed=9, secure_key_file=str(keyfile)) as net:
            task = asyncio.ensure_future(net.run(timeout_s=60))
            stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                for r in range(ROUNDS):
                    for kind in flood.KINDS:
                        for nid, node in enumerate(net.nodes):
                            data = flood.forged(rng, kind, nid, live, 16)
                            to = net.addresses[nid]
                            if kind in ("random", "truncated"):
                                sent["malformed"] += 1
                                stranger.sendto(data, to)
                            elif r % 4 == 0:
                                sent["stranger"] += 1
                                stranger.sendto(data, to)
                            else:                    # from a neighbour's own socket
                                sent["neighbour"] += 1
                                peer = node.ports[rng.randrange(len(node.ports))].peer
                                net.endpoints[peer].send(data, to)
                    await asyncio.sleep(0.002)
            finally:
                stranger.close()
            await task
            for _ in range(50):                      # let what is still on its way arrive
                await asyncio.sleep(0.02)
        return net

    net = run_async(scenario, "auto")
    s = net.result().summary
    u = s["udp"]
    assert u["end"] == "done" and s["lost"] == 0 and s["delivered"] == 16
    assert u["payload_errors"] == 0 and u["duplicate_deliveries"] == 0 and u["errors"] == []
    sc = u["secure_counters"]
    assert sc["auth_failed"] == sc["replayed"] == 0
    # every forged datagram counted once, by its reason (none lost in a kernel buffer here)
    assert u["kernel_drops"] == 0
    assert u["foreign"] == sent["stranger"]
    assert u["malformed_total"] - s["corrupted"] == sent["malformed"]
    forwarded = sc["unauthenticated"] + u["unroutable"]
    dropped_on_the_way = s["queue_drops"]       # forged packets a switch queue dropped
    assert forwarded <= sent["neighbour"] <= forwarded + dropped_on_the_way
    for node in net.hosts:                      # and no agent holds forged state
        assert not node.agent.receiver.messages
