"""Failures in the UDP runtime: the schedule in the node configurations (each port's
timeline, each switch's route updates), played on real sockets.  Delivery and
correctness only, never speed."""

import random

import pytest

from gse.config import ConfigError, PS_PER_US
from gse.protocols import default_config
from gse.runtimes.udp import dataplane
from gse.runtimes.udp.config import (check_node_config, loopback_addresses, node_configs,
                                     udp_profile)
from gse.runtimes.udp.network import run_udp
from gse.runtimes.udp.node import SwitchDriver
from gse.workloads.faults import build_schedule
from gse.workloads.traffic import permutation
from topologies import fat_tree

MS = 1000 * PS_PER_US


def test_configs_carry_port_timelines_and_route_updates():
    topo = fat_tree(4)
    sched = build_schedule(topo, ["link:agg0_0-core0@5ms,restore=50ms",
                                  "link:agg1_0-core1@1ms,gray=2%"])
    confs = node_configs(topo, [], "gse", address_of=loopback_addresses(topo),
                         faults=sched, detect_ps=10 * MS)
    agg = confs[topo.node_id("agg0_0")]
    (li,) = sched.entries[0].links
    port = topo.nodes[agg["node"]].ports.index(li)
    assert agg["ports"][port]["faults"] == [[5 * MS, "down", 0], [50 * MS, "up", 0]]
    assert [t for t, _ in agg["route_updates"]] == [15 * MS, 60 * MS]
    down_rows = dict((h, ports) for h, ports in agg["route_updates"][0][1])
    assert all(port not in ports for ports in down_rows.values())
    core = confs[topo.node_id("core1")]
    assert [ev for p in core["ports"] for ev in p.get("faults", ())] == [[1 * MS, "gray", 0.02]]
    for c in confs:
        check_node_config(c, "%s.json" % c["name"])
    gray_only = build_schedule(topo, ["link:agg1_0-core1@1ms,gray=2%"])
    confs = node_configs(topo, [], "gse", address_of=loopback_addresses(topo),
                         faults=gray_only, detect_ps=10 * MS)
    assert not any("route_updates" in c for c in confs)           # gray: never learnt


@pytest.mark.parametrize("mutate, message", [
    (lambda c: c["ports"][3].update(faults=[[5, "off", 0]]), "faults[0]"),
    (lambda c: c["ports"][3].update(faults=[[-1, "down", 0]]), "faults[0]"),
    (lambda c: c.update(route_updates=[[5, [[99, [0]]]]]), "route_updates[0]"),
    (lambda c: c.update(route_updates=[[5, [[1, [9]]]]]), "route_updates[0]"),
    (lambda c: c.update(route_updates="soon"), "'route_updates' must be list"),
])
def test_fault_config_errors_name_the_field(mutate, message):
    topo = fat_tree(4)
    conf = node_configs(topo, [], address_of=loopback_addresses(topo))[24]   # an agg
    mutate(conf)
    with pytest.raises(ConfigError) as err:
        check_node_config(conf, "agg.json")
    assert message in str(err.value) and "agg.json" in str(err.value)


@pytest.mark.parametrize("protocol", ["gse", "roce"])
def test_links_fail_mid_run_over_udp_and_every_message_arrives(protocol):
    topo = fat_tree(4, link_gbps=0.1)
    msgs = permutation(16, 200_000, random.Random(2))     # ~17 ms of sending each
    # under RoCE the gray link may drop a RESUME: the PAUSE then ends by its quanta
    specs = ["link:agg0_0-core0@5ms", "switch:agg2_1@6ms,restore=60ms",
             "link:agg3_0-core1@2ms,gray=5%"]
    sched = build_schedule(topo, specs)
    cfg = udp_profile(default_config(protocol))
    result = run_udp(topo, msgs, protocol, cfg, seed=1, timeout_s=60.0, faults=sched,
                     detect_ps=10 * MS)
    s = result.summary
    assert s["udp"]["end"] == "done" and s["lost"] == 0
    assert s["delivered"] == s["completed"] == len(msgs)
    assert s["udp"]["duplicate_deliveries"] == 0 and s["udp"]["payload_errors"] == 0
    f = s["failures"]
    assert [len(e["links"]) for e in f["entries"]] == [1, 4, 1]
    # every port of a failing link saw its events, every switch its route updates; how
    # many packets they cost depends on how far the traffic got by then (a loaded
    # machine runs it slower in real time): test_link_fault_counts_what_it_drops
    events = [p.fault.events for n in result.network.nodes for p in n.ports
              if p.fault is not None]
    assert len(events) == 2 * 6 and all(events)
    assert f["route_updates"] > 0
    assert f["entries"][2]["black_holed"] == 0                  # gray: never dead
    # a switch whose rows changed but whose own links did not fail forwards on the
    # compiled data plane (it reads the rewritten rows in place), the others on Python
    moved = [n for n in result.network.nodes if isinstance(n, SwitchDriver)
             and n.route_updates is not None and n.route_updates.applied]
    assert any(all(p.fault is None for p in n.ports) for n in moved)
    for n in moved:
        plain = dataplane.enabled() and all(p.fault is None for p in n.ports)
        assert (n.plane is not None) == plain, n.name
    if dataplane.enabled():
        assert sum(n.plane.fast for n in moved if n.plane is not None) > 0


class Owner:
    def __init__(self):
        self.pfc = []

    def send_pfc(self, port, kind, now):
        self.pfc.append((port, kind))


def test_link_fault_counts_what_it_drops():
    """One emulated port, by hand: down flushes its queue (queued) and its emulated wire
    (in flight), releases a PAUSE, black-holes what it is given; gray drops a share."""
    import asyncio
    from gse.runtimes.udp.faults import LinkFault
    from gse.runtimes.udp.io import Scheduler
    from gse.runtimes.udp.link import EmulatedPort
    from gse.wire.packet import DATA, PRIO_DATA, make_packet
    from switchmodel.queue import OutputQueue, QueueConfig

    from udp_fakes import FakeEndpoint
    loop = asyncio.new_event_loop()
    try:
        sched = Scheduler(loop)
        sink = FakeEndpoint()
        port = EmulatedPort(sched, sink, ("127.0.0.1", 9), OutputQueue(
            QueueConfig(10 ** 9), random.Random(1)), 0.001, 10 * MS, 0, 0, 0, "agg", False)
        port.owner = Owner()
        fault = port.fault = LinkFault(port, 1)

        def pkt(psn):
            return make_packet(kind=DATA, src=0, dst=1, msg_id=1, psn=psn, payload_len=1000,
                               msg_len=10 ** 6, prio=PRIO_DATA)
        for psn in range(4):                  # one on the wire, three queued (1 Mb/s)
            port.offer(pkt(psn), None, 0)
        assert len(port.wire) == 1 and len(port.queue) == 3
        port.on_pfc(True, 0xFFFF, 0)
        fault.event(0, ("down", 0))
        assert (fault.in_flight, fault.queued) == (1, 3) and not port.queue.paused
        assert port.pause_until == -1 and port.pause_expiries == 0
        port.offer(pkt(9), None, 0)
        assert fault.black_holed == 1 and not port.wire and not sink.out
        fault.event(0, ("up", 0))
        fault.event(0, ("gray", 0.5))
        for psn in range(200):
            fault.drops()
        assert 60 < fault.gray_drops < 140 and fault.stats()["events"] == 3
        sched.close()
    finally:
        loop.close()


@pytest.mark.parametrize("protocol", ["gse", "roce"])
def test_a_failure_triggered_by_the_traffic_hits_traffic(protocol):
    """``after_packets``: the schedule starts when a node has sent that many packets over
    its links, not at a wall-clock offset that a loaded machine's late start can put
    before any traffic (issue 24); its times count from that origin."""
    topo = fat_tree(4, link_gbps=0.1)
    msgs = permutation(16, 200_000, random.Random(2))
    sched = build_schedule(topo, ["switch:core0@0ms,restore=20ms"], after_packets=20)
    cfg = udp_profile(default_config(protocol))
    result = run_udp(topo, msgs, protocol, cfg, seed=1, timeout_s=120.0, faults=sched,
                     detect_ps=5 * MS)
    s = result.summary
    assert s["udp"]["end"] == "done" and s["lost"] == 0
    assert s["delivered"] == s["completed"] == len(msgs)
    f = s["failures"]
    trigger = f["trigger"]
    assert trigger["after_packets"] == 20 and trigger["packets_seen"] >= 20
    assert trigger["fired_us"] > 0
    # the links went down at the origin and came back 20 ms later: every port of them
    # saw both events, and the switches learnt both changes
    events = [p.fault.events for n in result.network.nodes for p in n.ports
              if p.fault is not None]
    assert events == [2] * 8
    assert f["route_updates"] > 0


def test_a_triggered_schedule_is_refused_where_it_means_nothing():
    from gse.runtimes.sim.run import run_simulation
    from gse.workloads.faults import FaultSchedule
    topo = fat_tree(4)
    with pytest.raises(ValueError, match="--fail-after-packets"):
        build_schedule(topo, ["switch:core0@0ms"], after_packets=0)
    with pytest.raises(ValueError, match="--fail-after-packets"):
        FaultSchedule([], after_packets=True)
    sched = build_schedule(topo, ["switch:core0@0ms"], after_packets=5)
    with pytest.raises(ValueError, match="simulation"):
        run_simulation(topo, permutation(16, 10_000, random.Random(1)), "gse",
                       faults=sched)


def test_fail_after_packets_on_the_command_line(capsys):
    from gse.cli.main import main
    assert main(["run", "--k", "4", "--fail-after-packets", "5", "--quiet"]) == 2
    assert "--fail-after-packets needs a schedule" in capsys.readouterr().err
    with pytest.raises(SystemExit):                   # gse sim does not take it
        main(["sim", "--k", "4", "--fail", "switch:core0@0ms", "--fail-after-packets", "5"])
    assert "unrecognized arguments: --fail-after-packets" in capsys.readouterr().err
