"""Kernel forwarding for Mininet runs (``--forwarding kernel``): no switch agent, the
switch namespaces route in the kernel.

Why: a switch agent receives and re-sends every datagram through the kernel's UDP path
(two system calls per hop, about 80% of a forwarder's CPU), so on a two-core machine the
agents stay faithful only at tens of Mb/s per link (docs/mininet.md).  Here every switch
namespace forwards IP itself:

* ``net.ipv4.ip_forward=1``, rp_filter off, ``net.ipv4.fib_multipath_hash_policy=1`` (the
  multipath hash over the 5-tuple), and one route per host address with the next hops of
  the topology's own routing (``topo.next_hops``, the rows every switch agent and the
  simulation forward by): ``ip route replace H/32 nexthop via A dev X nexthop via B dev
  Y``.  The sender's entropy travels in the UDP source port
  (``gse.runtimes.udp.kernel_host``), so the hash sprays packet by packet as the agents
  would (each entropy value one path, the kernel's hash seed per namespace the switch's
  salt: ``hash_seed``);
* each egress veth gets the link and its output queue (``queue_commands``): htb at the
  link's rate with a bucket of one packet; under it the control class (the hosts send
  control packets with IPTOS_LOWDELAY, a cls_bpf filter reads it) served before data,
  each class a byte FIFO with the simulated queue's limits; a size table takes the
  Ethernet, IP and UDP headers (42 bytes) off every packet, so rate and limits count the
  datagram's bytes as the simulated queue and link count a packet's;
* every veth gets a 9,000-byte MTU, so a 4,160-byte datagram crosses whole (the agents'
  datagrams are fragments on a 1,500-byte veth and reassembled by the receiving agent; a
  router forwards fragments one by one, and only the first carries the ports the hash
  needs);
* hosts route the address range via their leaf and keep their agents, whose emulated
  NIC paces what they send at the link's rate as in the simulation; their egress veth
  has the link's htb too, which re-paces what a late NIC timer sends at once.

What this mode does not model (``NOT_MODELLED``, in every summary and printed): PFC (the
kernel pauses nothing), ECN marking (no RED here), trimming (a full queue drops: GSE
recovers by RACK or its RTO instead of a NACK), and link delay (no netem: the
topologies' 1 us links are a few per cent of a packet time at these rates, e.g. 4,160 B
at 1 Gb/s take 33 us).  So it runs the GSE
endpoint protocol only (``KERNEL_PROTOCOLS``): RoCE/PFC without PFC, ECN and DCQCN, and
fabric mode without its leaf schedulers, would be other protocols under the same names.
"""

import re

from gse.protocols import queue_config
from gse.runtimes.udp.kernel_host import CATCHUP_PACKETS, CONTROL_TOS
from switchmodel.switch import tier_salt

FORWARDING = ("agents", "kernel")
KERNEL_PROTOCOLS = ("gse",)
NOT_MODELLED = ("PFC", "ECN", "trimming", "link delay")
LABEL = "kernel (no %s)" % ", ".join(NOT_MODELLED)
SPRAY_PORTS = 32           # send sockets per host: source ports port+1 .. port+32
FRAME_OVERHEAD = 42        # Ethernet 14 + IPv4 20 + UDP 8: what the size table takes off
JUMBO_MTU = 9000
BURST_SLACK = 64           # bytes over one datagram: tc's rounding of the bucket to ticks


def check_forwarding(forwarding, protocol, wire="gse", secure=False, faults=None,
                     loss_rate=0.0, corrupt_rate=0.0, pcap=None):
    """A ValueError naming ``--forwarding`` when a run cannot use it."""
    if forwarding not in FORWARDING:
        raise ValueError("--forwarding: unknown mode %r (known: %s)"
                         % (forwarding, ", ".join(FORWARDING)))
    if forwarding == "agents":
        return
    if protocol not in KERNEL_PROTOCOLS:
        raise ValueError(
            "--forwarding kernel runs --protocol gse only, not %r: the kernel's switches "
            "have no PFC, ECN marking, trimming or fabric-mode leaf scheduler, so RoCE/PFC "
            "and gse-fabric would be other protocols (use --forwarding agents)" % protocol)
    refused = [("--wire %s" % wire, wire != "gse"), ("--secure", bool(secure)),
               ("--fail (link failures)", bool(faults)),
               ("--loss/--corrupt", bool(loss_rate or corrupt_rate)), ("--pcap", bool(pcap))]
    bad = [name for name, on in refused if on]
    if bad:
        raise ValueError("--forwarding kernel: no switch agent emulates links or reads "
                         "packets there, so it cannot take %s (use --forwarding agents)"
                         % ", ".join(bad))


def host_address(port_addresses, host):
    """A host's own address: the one on its link (``port_addresses(nid)`` of the fabric)."""
    return port_addresses(host)[0][1]


def switch_routes(topo, port_addresses):
    """``{switch: [(host ip, [(next-hop ip, interface), ...]), ...]}``: per switch, the
    next hops toward every host, from ``topo.next_hops`` (the simulation's rows)."""
    hosts = [host_address(port_addresses, h) for h in range(len(topo.hosts))]
    out = {}
    for nid in topo.switches:
        addrs = port_addresses(nid)
        row = topo.next_hops[nid]
        routes = []
        for h, ip in enumerate(hosts):
            ports = row[h]
            if not ports:
                raise ValueError("switch %s has no route to host %d" % (topo.nodes[nid].name, h))
            routes.append((ip, [(addrs[p][2], addrs[p][0]) for p in ports]))
        out[nid] = routes
    return out


def route_command(ip, hops):
    """``ip route replace`` of one host address over its next hops."""
    if len(hops) == 1:
        return "ip route replace %s/32 via %s dev %s" % (ip, hops[0][0], hops[0][1])
    return "ip route replace %s/32 %s" % (ip, " ".join("nexthop via %s dev %s" % hop
                                                        for hop in hops))


# The control class's filter (cls_bpf, classic BPF over the frame from its Ethernet
# header): the IPv4 TOS byte (offset 15) without its ECN bits is CONTROL_TOS -> the
# control class, else no match (the default class, data).
CONTROL_FILTER = "5,48 0 0 15,84 0 0 252,21 0 1 %d,6 0 0 4294967295,6 0 0 0" % CONTROL_TOS


def queue_commands(intf, gbps, max_datagram, data_bytes, control_bytes):
    """A link and its output queue on an egress veth, from what this kernel has (htb,
    bfifo, cls_bpf): htb at ``gbps`` with a bucket of one datagram; under it the control
    class (the hosts send control packets with ``CONTROL_TOS``: ``CONTROL_FILTER``)
    served first at up to the whole rate, data taking what control leaves; each class a
    byte FIFO with the simulated queue's limits (``control_queue_bytes``,
    ``queue_bytes``): drop-tail, not the simulation's trimming.  A size table takes the
    Ethernet, IP and UDP headers off every packet, so rate and limits count a datagram's
    bytes as the simulated link and queue count a packet's."""
    kbit = int(round(gbps * 1_000_000))
    if kbit <= 0:
        raise ValueError("interface %s: link rate %r Gb/s is below 1 kb/s" % (intf, gbps))
    b = max_datagram + BURST_SLACK
    cls = ("tc class add dev %s parent %s classid %s htb rate %dkbit ceil %dkbit burst %d "
           "cburst %d quantum %d prio %d")
    return ["tc qdisc replace dev %s root handle 1: stab overhead -%d linklayer ethernet "
            "htb default 20 r2q 1" % (intf, FRAME_OVERHEAD),
            cls % (intf, "1:", "1:1", kbit, kbit, b, b, b, 0),
            cls % (intf, "1:1", "1:10", kbit, kbit, b, b, b, 0),
            cls % (intf, "1:1", "1:20", min(8, kbit), kbit, b, b, b, 1),
            "tc qdisc add dev %s parent 1:10 handle 11: bfifo limit %d" % (intf, control_bytes),
            "tc qdisc add dev %s parent 1:20 handle 12: bfifo limit %d" % (intf, data_bytes),
            "tc filter add dev %s parent 1: bpf bytecode \"%s\" classid 1:10"
            % (intf, CONTROL_FILTER)]


def hash_seed(seed, kind):
    """The multipath hash seed of a switch tier: the agents' tier salt, never 0 (0 is the
    kernel's own seed, one for every namespace: an edge and the agg it chose would then
    hash a packet alike, and each agg would send all it gets up to one core)."""
    return (tier_salt(seed, kind) & 0xFFFFFFFF) or 1


def switch_commands(topo, port_addresses, queue_bytes, max_datagram, seed=1,
                    control_bytes=None):
    """``{switch: [shell command, ...]}``: sysctls, MTUs, every port's link and queue
    (``queue_commands``), routes."""
    control_bytes = queue_bytes if control_bytes is None else control_bytes
    routes = switch_routes(topo, port_addresses)
    out = {}
    for nid in topo.switches:
        intfs = [intf for intf, _, _ in port_addresses(nid)]
        cmds = ["sysctl -q -w net.ipv4.ip_forward=1 net.ipv4.fib_multipath_hash_policy=1 "
                "net.ipv4.fib_multipath_hash_seed=%d " % hash_seed(seed, topo.nodes[nid].kind)
                + "net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 "
                + " ".join("net.ipv4.conf.%s.rp_filter=0" % i for i in intfs)]
        for p, intf in enumerate(intfs):
            gbps = topo.links[topo.nodes[nid].ports[p]].gbps
            cmds.append("ip link set dev %s mtu %d" % (intf, JUMBO_MTU))
            cmds.extend(queue_commands(intf, gbps, max_datagram, queue_bytes, control_bytes))
        cmds.extend(route_command(ip, hops) for ip, hops in routes[nid])
        out[nid] = cmds
    return out


def host_commands(topo, port_addresses, ip_base, max_datagram):
    """``{host: [shell command, ...]}``: the MTU, the link's htb (what a late NIC timer
    sends at once goes on at the link's pace: ``gse.runtimes.udp.kernel_host``; room for
    twice the NIC's catch-up, since the simulated NIC queues nothing), and the address
    range via the leaf."""
    queue_bytes = 2 * (CATCHUP_PACKETS + 2) * max_datagram
    out = {}
    for h in range(len(topo.hosts)):
        intf, _, leaf = port_addresses(h)[0]
        gbps = topo.links[topo.nodes[h].ports[0]].gbps
        out[h] = (["ip link set dev %s mtu %d" % (intf, JUMBO_MTU)]
                  + queue_commands(intf, gbps, max_datagram, queue_bytes, queue_bytes)
                  + ["ip route replace %s via %s dev %s" % (ip_base, leaf, intf)])
    return out


def kernel_sections(topo, port_addresses, port):
    """Every host's ``kernel`` configuration section (``gse.runtimes.udp.kernel_host``)."""
    hosts = [[host_address(port_addresses, h), port] for h in range(len(topo.hosts))]
    return {h: {"hosts": hosts, "src_ports": [port + 1, SPRAY_PORTS]}
            for h in range(len(topo.hosts))}


def set_up(fabric, protocol, cfg, max_datagram, seed=1):
    """Put kernel forwarding in place on a started ``MininetFabric``; raises with the
    node's name and the command's output when one fails."""
    topo = fabric.topo
    qc = queue_config(protocol, cfg)
    queue_bytes = qc.queue_bytes
    plan = dict(switch_commands(topo, fabric.port_addresses, queue_bytes, max_datagram, seed,
                                qc.control_queue_bytes))
    plan.update(host_commands(topo, fabric.port_addresses, fabric.ip_base, max_datagram))
    for nid, cmds in sorted(plan.items()):
        node = fabric.nodes[nid]
        for cmd in cmds:
            out = node.cmd(cmd + " 2>&1; echo rc=$?").strip()
            if not out.endswith("rc=0"):
                raise RuntimeError("--forwarding kernel: node %s: %r failed: %s"
                                   % (node.name, cmd, out))
    return {"queue_limit_bytes": queue_bytes, "control_limit_bytes": qc.control_queue_bytes,
            "spray_ports": SPRAY_PORTS, "mtu": JUMBO_MTU,
            "routes": len(topo.hosts) * len(topo.switches)}


def host_groups(topo, groups):
    """The agent processes' groups without their switches (no switch agent runs)."""
    kept = [[n for n in g if topo.nodes[n].kind == "host"] for g in groups]
    return [g for g in kept if g]


def hosts_only(topo, confs, port_addresses, port):
    """The hosts' configurations (node ids 0..hosts-1), each with its ``kernel``
    section: what a kernel-forwarding run starts."""
    sections = kernel_sections(topo, port_addresses, port)
    hosts = confs[:len(topo.hosts)]
    for conf in hosts:
        if conf["role"] != "host":
            raise ValueError("node %s: hosts must be the topology's first nodes"
                             % conf["name"])
        conf["kernel"] = sections[conf["node"]]
    return hosts


_QDISC = re.compile(r"qdisc (\S+) (\S+) dev (\S+) .*?\n\s*Sent (\d+) bytes (\d+) pkt "
                    r"\(dropped (\d+), overlimits (\d+)", re.S)


def parse_qdisc_stats(text):
    """``tc -s qdisc show`` -> ``{interface: {"sent_bytes", "sent_packets", "dropped",
    "control_packets", "control_dropped"}}`` of the queues ``queue_commands`` made: the
    root's counters (every class) and the control class's (handle 11:)."""
    out = {}
    control = {}
    for kind, handle, dev, sent_b, sent_p, dropped, _ in _QDISC.findall(text):
        if kind == "htb" and handle == "1:":
            out[dev] = {"sent_bytes": int(sent_b), "sent_packets": int(sent_p),
                        "dropped": int(dropped)}
        elif kind == "bfifo" and handle == "11:":
            control[dev] = (int(sent_p), int(dropped))
    for dev, (sent, dropped) in control.items():
        if dev in out:
            out[dev]["control_packets"] = sent
            out[dev]["control_dropped"] = dropped
    return out


_SNMP_IP = ("InHdrErrors", "InAddrErrors", "OutNoRoutes", "InDiscards", "OutDiscards",
            "ReasmFails", "FragFails")


def parse_snmp_ip(text):
    """The IP drop counters of ``/proc/net/snmp`` (``_SNMP_IP``) as a dict."""
    lines = [line.split() for line in text.splitlines() if line.startswith("Ip:")]
    if len(lines) < 2:
        return {}
    values = dict(zip(lines[0][1:], lines[1][1:]))
    return {k: int(values[k]) for k in _SNMP_IP if k in values}


def switch_stats(fabric):
    """Per switch namespace: its queues' counters and the kernel's IP drops, before
    tear-down.
    ``{"queue_drops", "forwarded_packets", "ip_drops", "by_switch": {name: {...}}}``."""
    topo = fabric.topo
    by_switch = {}
    drops = sent = ip_drops = control_drops = 0
    for nid in topo.switches:
        node = fabric.nodes[nid]
        qd = parse_qdisc_stats(node.cmd("tc -s qdisc show"))
        try:
            with open("/proc/%d/net/snmp" % node.pid) as f:
                ip = parse_snmp_ip(f.read())
        except OSError:
            ip = {}
        d = sum(v["dropped"] for v in qd.values())
        drops += d
        control_drops += sum(v.get("control_dropped", 0) for v in qd.values())
        sent += sum(v["sent_packets"] for v in qd.values())
        ip_drops += sum(ip.values())
        by_switch[node.name] = {"queue_drops": d, "ports": qd, "ip": ip}
    return {"queue_drops": drops, "control_drops": control_drops, "forwarded_packets": sent,
            "ip_drops": ip_drops, "by_switch": by_switch}


def label_summary(summary, setup, stats):
    """The summary of a kernel-forwarding run: ``forwarding`` (what it does not model),
    the htb drops counted as queue drops, the namespaces' counters under
    ``kernel_forwarding``."""
    summary["forwarding"] = LABEL
    summary["drops"] = summary.get("drops", 0) + stats["queue_drops"]
    summary["queue_drops"] = summary.get("queue_drops", 0) + stats["queue_drops"]
    summary["kernel_forwarding"] = dict(setup, not_modelled=list(NOT_MODELLED), **stats)
    return summary
