"""Kernel forwarding's plan as data (``--forwarding kernel``): routes, tc and sysctl
commands, the hosts' configuration and send path, the refusals.

Runs everywhere (no root, no Mininet): what ``gse.runtimes.mininet.kernel_forwarding``
computes before it touches the kernel, and the host side of
``gse.runtimes.udp.kernel_host``.  The runs themselves are in
tests/test_mininet_kernel.py.
"""

import ipaddress
import random
import re
import socket

import pytest

from gse.config import ConfigError, GseConfig
from gse.runtimes.mininet import kernel_forwarding as kf
from gse.runtimes.mininet.fabric import MininetFabric
from gse.runtimes.mininet.run import agent_configs, placement_groups, run_mininet
from gse.runtimes.udp import dataplane, kernel_host
from gse.runtimes.udp.config import check_node_config, max_datagram, udp_profile
from gse.wire.codec import encode
from gse.wire.packet import DATA, GRANT, PRIO_CONTROL, new_packet
from gse.workloads.traffic import permutation
from topologies.fattree import fat_tree


@pytest.fixture(scope="module")
def fab():
    return MininetFabric(fat_tree(4, link_gbps=0.1))     # the plan only: never started


def _owner(fab):
    """ip -> node id, over every interface of the plan."""
    out = {}
    for nid in range(len(fab.topo.nodes)):
        for _, ip, _ in fab.port_addresses(nid):
            out[ip] = nid
    return out


def test_next_hops_of_every_switch_are_the_topologys(fab):
    topo = fab.topo
    routes = kf.switch_routes(topo, fab.port_addresses)
    owner = _owner(fab)
    assert sorted(routes) == sorted(topo.switches)
    for nid, rows in routes.items():
        assert len(rows) == len(topo.hosts)
        intfs = [intf for intf, _, _ in fab.port_addresses(nid)]
        for h, (ip, hops) in enumerate(rows):
            assert ip == fab.port_addresses(h)[0][1]
            want = {topo.peer(nid, p)[0] for p in topo.next_hops[nid][h]}
            assert {owner[via] for via, _ in hops} == want
            for via, dev in hops:       # the hop leaves by the interface of its link
                p = intfs.index(dev)
                assert fab.port_addresses(nid)[p][2] == via
    # k=4: an edge sprays over 2 aggs toward another edge's hosts, an agg over 2 cores
    # toward another pod, a core has one way down
    first = {}
    for n in topo.switches:
        first.setdefault(topo.nodes[n].kind, n)
    assert topo.nodes[first["edge"]].name == "edge0_0"
    assert len(routes[first["edge"]][15][1]) == 2
    assert len(routes[first["edge"]][1][1]) == 1
    assert len(routes[first["agg"]][15][1]) == 2
    assert len(routes[first["core"]][15][1]) == 1


def test_routes_lead_every_packet_to_its_host_without_loops(fab):
    topo = fab.topo
    routes = kf.switch_routes(topo, fab.port_addresses)
    owner = _owner(fab)
    for src in range(len(topo.hosts)):
        leaf = topo.peer(src, 0)[0]
        for dst in range(len(topo.hosts)):
            if dst == src:
                continue
            ip = fab.port_addresses(dst)[0][1]
            frontier, hops = {leaf}, 0
            while frontier != {dst}:
                hops += 1
                assert hops <= 6, (src, dst, frontier)
                frontier = {owner[via] for n in frontier for via, _ in dict(routes[n])[ip]}
            assert hops == {0: 1, 1: 3, 2: 5}[(src // 2 != dst // 2) + (src // 4 != dst // 4)]


def test_route_commands():
    assert kf.route_command("10.0.0.1", [("10.1.0.1", "e-eth2")]) == \
        "ip route replace 10.0.0.1/32 via 10.1.0.1 dev e-eth2"
    assert kf.route_command("10.0.0.1", [("10.1.0.1", "e-eth2"), ("10.1.0.3", "e-eth3")]) == \
        ("ip route replace 10.0.0.1/32 nexthop via 10.1.0.1 dev e-eth2 "
         "nexthop via 10.1.0.3 dev e-eth3")


def test_switch_commands_set_sysctls_mtu_queues_and_every_route(fab):
    topo = fab.topo
    cmds = kf.switch_commands(topo, fab.port_addresses, 178_450, 4160, seed=7)
    assert sorted(cmds) == sorted(topo.switches)
    seeds = {}
    for nid, lines in cmds.items():
        sysctl = lines[0]
        for setting in ("net.ipv4.ip_forward=1", "net.ipv4.fib_multipath_hash_policy=1",
                        "net.ipv4.conf.all.rp_filter=0"):
            assert setting in sysctl
        for intf, _, _ in fab.port_addresses(nid):
            assert "net.ipv4.conf.%s.rp_filter=0" % intf in sysctl
            assert "ip link set dev %s mtu 9000" % intf in lines
            tc = [x for x in lines if x.startswith("tc ") and " dev %s " % intf in x]
            assert tc == kf.queue_commands(intf, 0.1, 4160, 178_450, 178_450)
        seeds[topo.nodes[nid].kind] = re.search(r"hash_seed=(\d+)", sysctl).group(1)
        assert sum(x.startswith("ip route replace") for x in lines) == len(topo.hosts)
    # one seed per tier, none 0 (the kernel's one seed would polarise the tiers)
    assert len(set(seeds.values())) == 3 and "0" not in seeds.values()
    assert kf.hash_seed(7, "edge") != kf.hash_seed(8, "edge")


def test_queue_commands_a_link_with_a_control_class_first():
    assert kf.queue_commands("x", 0.0125, 4160, 1000, 300) == [
        "tc qdisc replace dev x root handle 1: stab overhead -42 linklayer ethernet htb "
        "default 20 r2q 1",
        "tc class add dev x parent 1: classid 1:1 htb rate 12500kbit ceil 12500kbit "
        "burst 4224 cburst 4224 quantum 4224 prio 0",
        "tc class add dev x parent 1:1 classid 1:10 htb rate 12500kbit ceil 12500kbit "
        "burst 4224 cburst 4224 quantum 4224 prio 0",
        "tc class add dev x parent 1:1 classid 1:20 htb rate 8kbit ceil 12500kbit "
        "burst 4224 cburst 4224 quantum 4224 prio 1",
        "tc qdisc add dev x parent 1:10 handle 11: bfifo limit 300",
        "tc qdisc add dev x parent 1:20 handle 12: bfifo limit 1000",
        'tc filter add dev x parent 1: bpf bytecode "5,48 0 0 15,84 0 0 252,21 0 1 16,'
        '6 0 0 4294967295,6 0 0 0" classid 1:10']
    with pytest.raises(ValueError, match="interface x: link rate"):
        kf.queue_commands("x", 1e-7, 4160, 1000, 300)


def _run_cbpf(code, frame):
    """The classic BPF of ``CONTROL_FILTER`` over ``frame`` (its four opcodes)."""
    prog = [tuple(int(x) for x in ins.split()) for ins in code.split(",")[1:]]
    assert len(prog) == int(code.split(",")[0])
    a = pc = 0
    while True:
        op, jt, jf, k = prog[pc]
        if op == 48:            # ldb [k]
            a = frame[k]
        elif op == 84:          # and #k
            a &= k
        elif op == 21:          # jeq #k
            pc += jt if a == k else jf
        elif op == 6:           # ret #k
            return k
        pc += 1


def test_control_filter_matches_the_control_tos_only():
    for tos, want in ((0x10, 0xFFFFFFFF), (0x11, 0xFFFFFFFF), (0x12, 0xFFFFFFFF),
                      (0, 0), (0x20, 0), (0x14, 0)):
        frame = bytes(14) + bytes([0x45, tos]) + bytes(26)
        assert _run_cbpf(kf.CONTROL_FILTER, frame) == want, hex(tos)


def test_hosts_route_the_range_via_their_leaf(fab):
    cmds = kf.host_commands(fab.topo, fab.port_addresses, "198.18.0.0/15", 4160)
    assert sorted(cmds) == list(range(16))
    intf, _, leaf = fab.port_addresses(3)[0]
    assert cmds[3] == (["ip link set dev %s mtu 9000" % intf]
                       + kf.queue_commands(intf, 0.1, 4160, 2 * 66 * 4160, 2 * 66 * 4160)
                       + ["ip route replace 198.18.0.0/15 via %s dev %s" % (leaf, intf)])
    assert ipaddress.ip_address(leaf) in ipaddress.ip_network("198.18.0.0/15")


def test_only_gse_endpoint_mode_runs_on_kernel_forwarding():
    kf.check_forwarding("agents", "roce")
    kf.check_forwarding("kernel", "gse")
    for protocol in ("roce", "gse-fabric"):
        with pytest.raises(ValueError, match="--forwarding kernel runs --protocol gse only"):
            kf.check_forwarding("kernel", protocol)
    with pytest.raises(ValueError, match="--forwarding: unknown mode 'xdp'"):
        kf.check_forwarding("xdp", "gse")
    for kwargs, what in (({"secure": "k"}, "--secure"), ({"faults": object()}, "--fail"),
                         ({"loss_rate": 0.01}, "--loss"), ({"pcap": {"dir": "x"}}, "--pcap"),
                         ({"wire": "uet"}, "--wire uet")):
        with pytest.raises(ValueError, match="cannot take %s" % re.escape(what)):
            kf.check_forwarding("kernel", "gse", **kwargs)
    # the run refuses before it needs Mininet or root
    with pytest.raises(ValueError, match="--forwarding kernel"):
        run_mininet(fat_tree(4, link_gbps=0.01), permutation(16, 1000, random.Random(1)),
                    "roce", forwarding="kernel")


def test_hosts_get_their_kernel_section_and_no_switch_starts(fab):
    topo = fab.topo
    cfg = udp_profile(GseConfig())
    confs = agent_configs(fab, permutation(16, 10_000, random.Random(1)), "gse", cfg, 1,
                          0.0, 0.0, "/tmp/out", {"timeout_s": 5.0})
    hosts = kf.hosts_only(topo, confs, fab.port_addresses, 47000)
    assert [c["node"] for c in hosts] == list(range(16))
    for conf in hosts:
        k = conf["kernel"]
        assert k["src_ports"] == [47001, kf.SPRAY_PORTS]
        assert k["hosts"] == [[fab.port_addresses(h)[0][1], 47000] for h in range(16)]
        check_node_config(conf, "test")
        assert dataplane.conf_allows_host(conf)   # its plane sends from the entropy's socket
    for placement in ("node", "tier", "switches", "all"):
        groups = kf.host_groups(topo, placement_groups(topo, placement))
        assert sorted(n for g in groups for n in g) == list(range(16))


def test_kernel_section_is_checked():
    conf = {"role": "host", "hosts": 2, "kernel": {"hosts": [["10.0.0.1", 1]],
                                                   "src_ports": [5000, 4]}}
    with pytest.raises(ConfigError, match="kernel.hosts"):
        kernel_host.check_kernel_section(conf, "n")
    conf["kernel"]["hosts"].append(["10.0.0.2", "x"])
    with pytest.raises(ConfigError, match=r"kernel.hosts\[1\]"):
        kernel_host.check_kernel_section(conf, "n")
    conf["kernel"]["hosts"][1] = ["10.0.0.2", 7]
    kernel_host.check_kernel_section(conf, "n")
    for bad in ([5000, 0], [65535, 2], [5000], "x"):
        conf["kernel"]["src_ports"] = bad
        with pytest.raises(ConfigError, match="kernel.src_ports"):
            kernel_host.check_kernel_section(conf, "n")
    conf["kernel"]["src_ports"] = [5000, 4]
    with pytest.raises(ConfigError, match="for hosts"):
        kernel_host.check_kernel_section(dict(conf, role="switch"), "n")
    with pytest.raises(ConfigError, match="GSE wire profile only"):
        kernel_host.check_kernel_section(dict(conf, secure={"x": 1}), "n")


class _Ep:
    def __init__(self):
        self.got = []
        self.sent = self.send_blocked = self.send_errors = 0

    def send(self, data, addr):
        self.got.append((data, addr))
        self.sent += 1


def test_sender_addresses_the_destination_from_the_entropys_socket():
    eps = [_Ep() for _ in range(4)]
    ctl = [_Ep() for _ in range(4)]
    hosts = [("10.0.0.%d" % i, 47000) for i in range(3)]
    sender = kernel_host.KernelSender(eps, hosts, ctl)
    for entropy, dst in ((0, 1), (5, 2), (7, 0), (65535, 2)):
        pkt = new_packet(DATA, 1, dst, 3, 0, entropy, 16, 0, 16, 0, 0, 0, 0, 0, 0)
        sender.send(encode(pkt), ("192.0.2.1", 47000))
        data, addr = eps[entropy % 4].got[-1]
        assert addr == hosts[dst] and data == encode(pkt)
    assert [len(e.got) for e in eps] == [1, 1, 0, 2]
    pkt = new_packet(DATA, 1, 9, 3, 0, 0, 16, 0, 16, 0, 0, 0, 0, 0, 0)   # host 9: none
    sender.send(encode(pkt), None)
    sender.send(b"short", None)
    assert sender.bad == 2 and sender.totals()["sent"] == 4
    # a control-class packet: the same entropy's socket of the control set
    grant = new_packet(GRANT, 1, 2, 3, 0, 6, 0, 0, 16, 4096, 0, 0, 0, 0, PRIO_CONTROL)
    sender.send(encode(grant), None)
    assert ctl[2].got == [(encode(grant), hosts[2])] and sender.totals()["sent"] == 5
    assert all(not e.got for e in ctl[:2] + ctl[3:])


class _Driver:
    def __init__(self):
        self.nic = type("Nic", (), {})()
        self.nic.ep = object()
        self.nic.send = None
        self.nic.mbps = 100
        self.nic.catchup = 0
        self.endpoint = None
        self.port_of = {("198.18.0.1", 47000): 0}


def test_install_knows_every_hosts_send_ports_as_the_one_port():
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    base = 20000 + probe.getsockname()[1] % 20000      # some free-looking ports
    probe.close()
    conf = {"name": "h0", "kernel": {"hosts": [["10.0.0.1", 47000], ["10.0.0.3", 47000]],
                                     "src_ports": [base, 3]}, "mtu_wire_bytes": 4160}
    drv = _Driver()
    try:
        sender = kernel_host.install(drv, conf)
    except ConfigError as exc:                 # a port taken by something else
        pytest.skip(str(exc))
    try:
        assert drv.nic.ep is None and drv.nic.send == sender.send
        assert drv.nic.catchup == kernel_host.CATCHUP_PACKETS * 332_800_000  # 4160 B: 332.8 us
        assert len(sender.endpoints) == len(sender.control) == 3
        for socks in (sender.endpoints, sender.control):   # the same ports (SO_REUSEPORT)
            assert [ep.sock.getsockname()[1] for ep in socks] == [base, base + 1, base + 2]
        for ep in sender.all_endpoints():     # the kernel doubles what it is asked for
            got = ep.sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
            assert got >= min(kernel_host.SEND_BUFFER_BYTES, _wmem_max()), got
        for ep in sender.control:
            assert ep.sock.getsockopt(socket.IPPROTO_IP, socket.IP_TOS) == 0x10
            assert ep.sock.getsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY) == 6
        assert sender.endpoints[0].sock.getsockopt(socket.IPPROTO_IP, socket.IP_TOS) == 0
        for ip in ("10.0.0.1", "10.0.0.3"):
            for port in range(base, base + 3):
                assert drv.port_of[(ip, port)] == 0
        assert ("10.0.0.1", 47000) not in drv.port_of     # anything else stays foreign
    finally:
        sender.close()


def _wmem_max():
    try:
        with open("/proc/sys/net/core/wmem_max") as f:
            return int(f.read())
    except OSError:
        return 0


def test_qdisc_and_snmp_counters_are_read():
    text = ("qdisc htb 1: dev edge0_0-eth0 root refcnt 2 r2q 1 default 0x20 "
            "direct_packets_stat 0\n Sent 420000 bytes 100 pkt (dropped 3, overlimits 12 "
            "requeues 0) \n backlog 0b 0p requeues 0\n"
            "qdisc bfifo 11: dev edge0_0-eth0 parent 1:10 limit 178450b\n"
            " Sent 640 bytes 10 pkt (dropped 1, overlimits 0 requeues 0) \n"
            "qdisc bfifo 12: dev edge0_0-eth0 parent 1:20 limit 178450b\n"
            " Sent 419360 bytes 90 pkt (dropped 2, overlimits 0 requeues 0) \n"
            "qdisc noqueue 0: dev lo root refcnt 2 \n Sent 0 bytes 0 pkt (dropped 0, "
            "overlimits 0 requeues 0) \n backlog 0b 0p requeues 0\n"
            "qdisc htb 1: dev edge0_0-eth1 root refcnt 2 r2q 1 default 0x20 "
            "direct_packets_stat 0\n Sent 84 bytes 2 pkt (dropped 0, overlimits 0 "
            "requeues 0) \n")
    assert kf.parse_qdisc_stats(text) == {
        "edge0_0-eth0": {"sent_bytes": 420000, "sent_packets": 100, "dropped": 3,
                         "control_packets": 10, "control_dropped": 1},
        "edge0_0-eth1": {"sent_bytes": 84, "sent_packets": 2, "dropped": 0}}
    snmp = ("Ip: Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors ForwDatagrams "
            "InDiscards OutDiscards OutNoRoutes ReasmFails FragFails\n"
            "Ip: 1 64 500 0 2 490 0 1 0 0 0\n")
    got = kf.parse_snmp_ip(snmp)
    assert got["InAddrErrors"] == 2 and got["OutDiscards"] == 1 and sum(got.values()) == 3
    assert kf.parse_snmp_ip("") == {}


def test_summary_is_labelled_with_what_the_mode_does_not_model():
    s = {"drops": 1, "queue_drops": 0}
    kf.label_summary(s, {"queue_limit_bytes": 10}, {"queue_drops": 4, "ip_drops": 0,
                                                     "forwarded_packets": 9,
                                                     "by_switch": {}})
    assert s["forwarding"] == "kernel (no PFC, ECN, trimming, link delay)"
    assert s["drops"] == 5 and s["queue_drops"] == 4
    assert s["kernel_forwarding"]["not_modelled"] == list(kf.NOT_MODELLED)
    assert max_datagram("gse", 4096) + kf.BURST_SLACK == 4224
