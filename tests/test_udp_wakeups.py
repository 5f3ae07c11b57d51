"""Wake-ups per packet of the UDP runtime's emulated links (issue 27: RoCE incast at 0.4 Gb/s).

A datagram leaves at its departure (end of serialisation plus delay) minus the slack.
When a packet lasts longer than the slack, that release comes ``slack - delay`` before the
next packet's turn, and a busy port woke its process twice per packet: to release packet
k, then to start packet k+1.  A switch port (Python path and compiled data plane alike)
and a host NIC now start the next packet at the release, its virtual start unchanged: one
wake-up per packet.  The clocks are moved by hand (no waiting), so the counts are exact.
"""

import asyncio
from types import SimpleNamespace

import pytest

from gse.protocols import default_config
from gse.runtimes.udp.build import build_node
from gse.runtimes.udp.config import loopback_addresses, node_configs, udp_profile
from gse.wire.codec import decode
from gse.wire.linkrate import wire_time_ps
from gse.wire.packet import DATA
from switchmodel.queue import QueueConfig
from test_udp_dataplane import Rig, StepScheduler, data
from test_udp_pfc import tiny_topology
from udp_fakes import FakeEndpoint

PACKETS = 8


def step(sched):
    """Move the clock to the earliest event and fire what fell due: one wake-up."""
    sched.advance(sched.heap[0][0])


def test_a_host_nic_at_line_rate_wakes_once_per_packet():
    """A RoCE host at 0.02 Gb/s (a 4,160-byte packet lasts 1.664 ms, the slack is 20 us)
    sends a message: one wake-up per packet (15 for 8 packets before), and no datagram
    leaves earlier than its departure minus the slack."""
    topo = tiny_topology()
    cfg = udp_profile(default_config("roce"))
    conf = node_configs(topo, [], "roce", cfg, address_of=loopback_addresses(topo))[0]
    loop = asyncio.new_event_loop()
    sched = StepScheduler()
    ep = FakeEndpoint()
    try:
        host = build_node(conf, sched, ep, cfg)
        nic = host.nic
        host.start(0, SimpleNamespace(msg_id=1, dst=1, size=20 * 4096))
        sent_at, wakes = [], 0
        while len(sent_at) < PACKETS and sched.heap and wakes < 100:
            step(sched)
            wakes += 1
            n = sum(1 for d, _ in ep.out if decode(d).kind == DATA)
            sent_at += [sched.t] * (n - len(sent_at))
        assert len(sent_at) == PACKETS
        assert wakes <= PACKETS + 1, "%d wake-ups for %d packets" % (wakes, PACKETS)
        t_pkt = wire_time_ps(4160, nic.mbps)
        for k, t in enumerate(sent_at):
            depart = (k + 1) * t_pkt + nic.delay
            assert depart - nic.slack <= t <= depart, (k, t, depart)
    finally:
        sched.close()
        loop.close()


@pytest.mark.parametrize("plane", [False, True])
def test_a_busy_switch_port_wakes_once_per_packet(plane):
    """Eight 4,096-byte packets queued at a 0.05 Gb/s port: one wake-up per packet on the
    Python path and on the compiled data plane, the datagrams in order and unchanged."""
    from gse.runtimes.udp import dataplane
    if plane and not dataplane.AVAILABLE:
        pytest.skip("the data plane is compiled only (pure build)")
    rig = Rig(QueueConfig(200_000, 8_000), 0.05, plane=plane)
    try:
        sent = [data(0, 1, psn, payload=4096) for psn in range(PACKETS)]
        for d in sent:
            rig.peers[0].sendto(d, rig.sock.getsockname())
        rig.read()
        got, wakes = list(rig.received()[1]), 0
        while len(got) < PACKETS and rig.sched.heap and wakes < 100:
            step(rig.sched)
            wakes += 1
            got += rig.received()[1]
        assert got == sent
        assert wakes <= PACKETS, "%d wake-ups for %d packets" % (wakes, PACKETS)
    finally:
        rig.close()
