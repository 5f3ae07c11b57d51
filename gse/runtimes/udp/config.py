"""Per-node configurations of the UDP runtimes (format in ``docs/agent-config.md``).

One JSON object describes one node completely: its role, its own address, every port
with the neighbour and the neighbour's address on it, the link parameters, the switch's
next-hop table or the host's agent configuration and messages, and where to write its
results.  ``gse agent --config NODE.json`` runs exactly one such node; the in-process
runtime (``gse.runtimes.udp.network``) builds all of them from the same objects; the
Mininet runtime and deployments on real machines call ``node_configs`` with their own addresses.
"""

import json
import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gse import protocols
from gse.config import PS_PER_US, ConfigError, fault_rates_error
from gse.protocols import PROTOCOLS, default_config, pfc_config, queue_config
from gse.metrics.stall import default_span_ps, last_change_ps
from gse.runtimes.udp.config_check import (FORMAT, RUN_DEFAULTS, UDP_PROTOCOLS,  # noqa: F401
                                           check_node_config, check_outputs,
                                           load_node_config, protocol_config)
from gse.wire import WIRE_PROFILES, uet
from gse.wire.codec import SEC_TAG, SEC_TRAILER
from gse.wire.packet import HEADER_BYTES
from switchmodel.fabric_plan import (attachments, extended_routes, leaf_routes, spine_fanout,
                                     uplink_widths)
from switchmodel.queue import QueueConfig
from switchmodel.switch import tier_salt

if TYPE_CHECKING:
    from gse.protocols import ProtocolConfig as Config
    from gse.workloads.faults import FaultSchedule
    from gse.workloads.traffic import Message
    from topologies.topology import Topology


PFC_LANE_ENV = "GSE_PFC_LANE"


def pfc_lane_wanted(protocol: str, config: Any) -> bool:
    """Give the nodes PFC lanes (``node_configs``' ``pfc_lanes``)?  Where the protocol runs
    PFC, unless the environment says ``GSE_PFC_LANE=0`` (frames then share the data
    socket, as before lanes existed)."""
    if os.environ.get(PFC_LANE_ENV, "1").strip() in ("0", "no", "off", "false"):
        return False
    return pfc_config(protocol, config if config is not None
                      else default_config(protocol)) is not None


def udp_protocols() -> tuple[str, ...]:
    """The protocols of ``gse.protocols.PROTOCOLS`` that the UDP runtimes can run."""
    return tuple(p for p in PROTOCOLS if p in UDP_PROTOCOLS)


def check_protocol(protocol: str) -> None:
    protocols.check_protocol(protocol)
    if protocol not in UDP_PROTOCOLS:
        raise ValueError("protocol %r needs switch agents the UDP runtime does not run "
                         "(it runs: %s)" % (protocol, ", ".join(udp_protocols())))


# Protocol timers for real time.  The simulated defaults (RTO 100 us, ...) are fractions
# of one loop iteration here: a Python process needs tens of microseconds per hop and its
# timers fire with millisecond granularity, so an RTT through five hops is of the order of
# a millisecond, and several when the process is busy; packets sprayed over parallel paths
# through a busy loop arrive up to a few milliseconds out of order, hence the reorder
# window; packets of one message arrive tens of microseconds apart at best, so a 10 us
# ACK delay would acknowledge every packet.  Applied to the fields a config has and the
# user did not set (``udp_profile``).
UDP_TIMERS = {
    "rto_ps": 30_000 * PS_PER_US,
    "rto_max_ps": 1_000_000 * PS_PER_US,
    "request_timeout_ps": 30_000 * PS_PER_US,
    "reorder_window_ps": 10_000 * PS_PER_US,
    "tlp_min_ps": 5_000 * PS_PER_US,        # tail-loss probe no sooner than this
    "ack_delay_ps": 2_000 * PS_PER_US,      # longest an ACK is held for coalescing
    # fabric mode: a hole at the destination leaf is skipped after this (sprayed packets
    # through busy processes are milliseconds apart, as for reorder_window_ps)
    "reorder_timeout_ps": 10_000 * PS_PER_US,
    # ... and the leaves' own loss recovery, on the same scale: NACK a hole after 10 ms, resend
    # the unacknowledged after 20 ms, give a hole up at 25 ms (below the hosts' 30 ms RTO)
    "leaf_ack_delay_ps": 2_000 * PS_PER_US,
    "leaf_nack_timeout_ps": 10_000 * PS_PER_US,
    "leaf_rto_ps": 20_000 * PS_PER_US,
    "leaf_repair_timeout_ps": 25_000 * PS_PER_US,
    "path_suspect_ps": 100_000 * PS_PER_US,
    # ... and their congestion response: a pacer's step is about one such RTT
    "pacer_window_ps": 2_000 * PS_PER_US,
}

# Fabric mode's loss recovery between the leaves (switchmodel/fabric_recovery.py), over real
# sockets too (issue 28, part 2).  Its timers are in real time above, but on a slow emulated
# link one packet takes milliseconds (13 ms at Mininet's 2.5 Mb/s), so a leaf RTO of 20 ms
# resends what is merely queued, over and over: ``udp_profile`` raises them to a number of
# packet times of the slowest link (``PACKET_TIME_FLOORS``).  ``--set leaf_recovery=0``
# turns recovery off: the leaves then skip a hole after reorder_timeout_ps and the hosts'
# go-back-N repairs it.
UDP_FABRIC = {"leaf_recovery": True}

# Fabric mode's timers as numbers of packet times of the slowest link (a full packet and
# its 64-byte header on the wire), where that is longer than ``UDP_TIMERS``' value: ACK
# coalescing two packets, a hole NACKed after 20 (the sprayed paths' skew through busy
# processes), the source leaf's resend after 40 and a hole given up after 80, the plain
# hosts' go-back-N RTO after 120 (above the leaves' repair, so that the leaves repair
# first), the pacers' window eight.  The hosts' RTO ceiling is at least 8 RTOs.
PACKET_TIME_FLOORS = {
    "leaf_ack_delay_ps": 2,
    "leaf_nack_timeout_ps": 20,
    "leaf_rto_ps": 40,
    "leaf_repair_timeout_ps": 80,
    "rto_ps": 120,
    "pacer_window_ps": 8,
}


def packet_time_ps(config: "Config", gbps: float) -> int:
    """Picoseconds one full packet (payload and 64-byte header) takes on a ``gbps`` link."""
    if not gbps > 0:
        raise ConfigError("link rate must be a positive number of Gb/s, got %r" % (gbps,))
    bits = (config.mtu + HEADER_BYTES) * 8
    return bits * 1_000_000_000 // max(1, round(gbps * 1_000_000))   # bits / kb/s = ms


def slowest_link_gbps(topo: "Topology") -> float:
    """The rate of the topology's slowest link: what bounds a packet's time on a path."""
    return min(link.gbps for link in topo.links)


# Fewer control datagrams per data packet over real sockets, where the protocol allows:
# every datagram costs a process a system call and a wake-up per hop whatever its size (a
# 64-byte ACK about what a 4 KB DATA packet does), so a GSE receiver coalesces ACKs over
# 64 KiB (its ACK delay above still bounds how stale one gets; a packet that fills a
# reordering hole is still acknowledged at once, without which the sender's RACK declares
# sprayed packets lost that are merely late) and grants 16 packets per GRANT instead of 4.
# One GSE stream through 5 hops then sends 1.29 datagrams per data packet instead of 1.54
# (experiments/bench_udp.py).  Not RoCE's nor fabric mode's go-back-N hosts: they ACK by
# bytes only, and an incast at tens of Mb/s would hold their ACKs past the RTO; nor the
# fabric leaves' grants, which would stretch the wait of a VOQ the same way.  Applied to
# GSE configs only, like the timers to the fields the user did not set.
UDP_COALESCING = {
    "ack_every_bytes": 64 * 1024,
    "credit_bytes": 16 * 4096,               # payload bytes per GRANT
}


def udp_profile(config: "Config", keep: Collection[str] = (),
                coalesce: bool = True, link_gbps: float | None = None) -> "Config":
    """Set the real-time protocol timers (``UDP_TIMERS``, with fabric mode's ``UDP_FABRIC``)
    and, with ``coalesce``, the coalescing of control packets (``UDP_COALESCING``) on
    ``config`` in place, except the names in ``keep`` (what the user set explicitly).
    ``link_gbps`` (the slowest link's rate, ``slowest_link_gbps``): fabric mode's timers
    are at least ``PACKET_TIME_FLOORS`` packet times of it.  Returns ``config``."""
    values = dict(UDP_TIMERS, **UDP_FABRIC)
    if coalesce and "ack_delay_ps" in config.__slots__:    # (GSE: see UDP_COALESCING)
        values.update(UDP_COALESCING)
    if link_gbps is not None and "leaf_rto_ps" in config.__slots__:   # fabric mode
        pkt = packet_time_ps(config, link_gbps)
        for name, packets in PACKET_TIME_FLOORS.items():
            values[name] = max(values[name], packets * pkt)
        values["rto_max_ps"] = max(values["rto_max_ps"], 8 * values["rto_ps"])
    for name, value in values.items():
        if name in config.__slots__ and name not in keep:
            setattr(config, name, value)
    if "rto_max_ps" in config.__slots__ and config.rto_max_ps < config.rto_ps:
        config.rto_max_ps = config.rto_ps
    config.validate()
    return config


def loopback_addresses(topo: "Topology", base: str = "127.77.0.0",
                       port: int = 47000) -> list[tuple[str, int]]:
    """One loopback address per node, all on ``port``: node n is base + n + 1.

    127.0.0.0/8 is routed to ``lo`` on Linux, so these need no set-up; use them when the
    addresses must be known before the agents start (separate processes).
    """
    a, b, c, d = (int(x) for x in base.split("."))
    if a != 127:
        raise ConfigError("loopback_addresses: base %r is not in 127.0.0.0/8" % base)
    start = (b << 16) | (c << 8) | d
    out = []
    for nid in range(len(topo.nodes)):
        n = start + nid + 1
        if n >= 1 << 24:
            raise ConfigError("loopback_addresses: %d nodes do not fit above %s"
                              % (len(topo.nodes), base))
        out.append(("127.%d.%d.%d" % (n >> 16, (n >> 8) & 255, n & 255), port))
    return out


def _address(address_of, nid, name):
    addr = address_of(nid) if callable(address_of) else address_of[nid]
    try:
        ip, port = addr
    except (TypeError, ValueError):
        raise ConfigError("node %r: address must be (ip, port), got %r" % (name, addr)) from None
    if not isinstance(ip, str) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError("node %r: address must be (ip str, port 0..65535), got %r"
                          % (name, addr))
    return [ip, port]


def check_wire(wire: str, protocol: str, mtu: int) -> None:
    """``wire`` (a ``gse.wire.WIRE_PROFILES`` name) can carry ``protocol`` at ``mtu``."""
    if wire not in WIRE_PROFILES:
        raise ConfigError("unknown wire profile %r (known: %s)" % (wire, ", ".join(WIRE_PROFILES)))
    if wire == "uet":
        if protocol != "gse":
            raise ConfigError("the UET wire profile carries the GSE protocol (its DATA, ACK, "
                              "NACK, REQUEST and GRANT); %r sends packets UET has no form for"
                              % protocol)
        if mtu > uet.MAX_PAYLOAD_LENGTH:
            raise ConfigError("the UET wire profile needs mtu <= %d (SES payload_length is 14 "
                              "bits), got %d" % (uet.MAX_PAYLOAD_LENGTH, mtu))


def max_datagram(wire: str, mtu: int, secure: bool = False) -> int:
    """The largest datagram of a wire profile at ``mtu`` (``secure``: with the security
    sublayer's header, counter and tags)."""
    extra = 0
    if secure:
        extra = uet.SECURE_OVERHEAD if wire == "uet" else SEC_TRAILER + SEC_TAG
    return mtu + (uet.MAX_OVERHEAD if wire == "uet" else HEADER_BYTES) + extra


def pfc_limits(protocol, cfg):
    """(host port, switch port facing a switch): the most quanta a PAUSE arriving there
    may hold -- what the neighbour's configuration sends -- or 0 where none may come (PFC
    off; a switch's port facing a host, since hosts never pause)."""
    if protocol == "gse-fabric":        # the leaves pause their hosts, no one pauses a leaf
        return cfg.pause_quanta, 0
    pc = pfc_config(protocol, cfg)
    if pc is None:
        return 0, 0
    return pc.pause_quanta, pc.pause_quanta


def node_configs(topo: "Topology", messages: Sequence["Message"], protocol: str = "gse",
                 config: Any = None, seed: int = 1, address_of: Any = None,
                 loss_rate: float = 0.0, corrupt_rate: float = 0.0,
                 output_dir: str | None = None, run: Mapping[str, Any] | None = None,
                 wire: str = "gse", secure_key_file: str | None = None,
                 faults: "FaultSchedule | None" = None, detect_ps: int = -1,
                 link_faults: bool = True,
                 pfc_lanes: Any = None) -> list[dict[str, Any]]:
    """The configuration of every node of ``topo`` (a list indexed by node id).

    ``address_of`` maps a node id to its (ip, port): a callable, a list or a dict (default
    ``loopback_addresses(topo)``).  ``messages`` are split by source host (what it sends)
    and destination (what it expects).  ``output_dir`` gives every node
    ``<dir>/<name>.counters.json`` and, for hosts, ``<dir>/<name>.records.json``.
    ``run`` overrides entries of ``RUN_DEFAULTS``.  ``secure_key_file``: the hosts
    authenticate their packets with the domain key in that file (``gse.runtimes.udp.secure``),
    as do switches their PFC frames, under a new session (a fresh salt and the next epoch of
    the key file: ``gse.runtimes.udp.secure_keys.new_session``).
    ``faults`` (a ``gse.workloads.faults.FaultSchedule``) gives each switch its
    ``route_updates`` (as the switches learn of each change, ``detect_ps`` later; -1:
    never) and, with ``link_faults``, each port of a failing link its ``faults`` timeline
    (what the port sees of its link; in Mininet the runner also takes the link down for
    real).  A schedule triggered by the traffic (``faults.after_packets``) puts
    ``trigger_packets`` on both ports of each of its links: the schedule starts once a
    node has sent that many packets over its such ports
    (``gse.runtimes.udp.faults.PacketTrigger``).
    With ``faults`` and no ``stall_s`` in ``run``, the hosts' no-progress watchdog
    waits the schedule's last change out on top of its default span.
    ``pfc_lanes`` (as ``address_of``; None: none) gives every node of a protocol with PFC
    a second address, its PFC lane (``pfc_bind``): a socket of its own for PAUSE and
    RESUME, read before the data socket, and every port the lane of its neighbour
    (``peer_pfc_addr``), where the port sends the PFC frames it makes (from its data
    socket, so the receiver knows the ingress port by the source address as for data).
    """
    check_protocol(protocol)
    cfg: Any = config if config is not None else default_config(protocol)  # per protocol
    check_wire(wire, protocol, cfg.mtu)
    problem = fault_rates_error(loss_rate, corrupt_rate)
    if problem:
        raise ConfigError(problem)
    if address_of is None:
        address_of = loopback_addresses(topo)
    run_opts = dict(RUN_DEFAULTS)
    for key, value in (run or {}).items():
        if key not in RUN_DEFAULTS:
            raise ConfigError("unknown run option %r (known: %s)"
                              % (key, ", ".join(sorted(RUN_DEFAULTS))))
        run_opts[key] = value
    if faults and run_opts["stall_s"] is None:
        run_opts["stall_s"] = (default_span_ps(cfg, True)
                               + last_change_ps(faults, detect_ps)) / 1e12
    n_hosts = len(topo.hosts)
    sends: list[list[Any]] = [[] for _ in range(n_hosts)]
    expects: list[list[Any]] = [[] for _ in range(n_hosts)]
    for m in messages:
        if not (0 <= m.src < n_hosts and 0 <= m.dst < n_hosts):
            raise ConfigError("message %d: host %d->%d but the topology has hosts 0..%d"
                              % (m.msg_id, m.src, m.dst, n_hosts - 1))
        sends[m.src].append({"msg_id": m.msg_id, "dst": m.dst, "size": m.size,
                             "start_ps": m.start_ps})
        expects[m.dst].append({"src": m.src, "msg_id": m.msg_id, "size": m.size})
    if getattr(cfg, "pfc_model", "802.1qbb") != "802.1qbb":
        raise ConfigError("pfc_model %r is a model of the simulation runtime only; over UDP "
                          "and Mininet PFC is 802.1Qbb's (--set pfc_model=802.1qbb)"
                          % cfg.pfc_model)
    qc = queue_config(protocol, cfg)
    queue = {name: getattr(qc, name) for name in qc.__slots__}
    pc = pfc_config(protocol, cfg)
    pfc = None if pc is None else {name: getattr(pc, name) for name in pc.__slots__}
    addrs = [_address(address_of, nid, node.name) for nid, node in enumerate(topo.nodes)]
    lanes = None
    if pfc_lanes is not None and pc is not None:
        lanes = [_address(pfc_lanes, nid, node.name) for nid, node in enumerate(topo.nodes)]
    fabric = protocol == "gse-fabric"
    if fabric:
        leaf_of, leaves = attachments(topo)
        tables = extended_routes(topo, leaf_of, leaves)
        deep = QueueConfig(cfg.leaf_queue_bytes, cfg.leaf_queue_bytes)
        leaf_queue = {name: getattr(deep, name) for name in deep.__slots__}
    port_faults, route_updates = _fault_timelines(topo, faults, detect_ps, link_faults)
    width_updates = (_width_timelines(topo, faults, detect_ps, leaf_of, leaves, tables)
                     if fabric and faults else {})
    trigger = {}
    if faults and faults.after_packets is not None:
        for li in faults.links():
            link = topo.links[li]
            trigger[(link.a, link.a_port)] = trigger[(link.b, link.b_port)] = \
                faults.after_packets
    host_pfc, switch_pfc = pfc_limits(protocol, cfg)
    session = None
    if secure_key_file is not None:
        if fabric:
            raise ConfigError("--secure: fabric mode's leaves rewrite the DATA headers "
                              "hosts send; authenticated packets need gse or roce")
        from gse.runtimes.udp.secure_keys import new_session
        session = new_session(secure_key_file)
    out = []
    for nid, node in enumerate(topo.nodes):
        ports = []
        for pidx, lidx in enumerate(node.ports):
            link = topo.links[lidx]
            peer, peer_port = topo.peer(nid, pidx)
            faces_host = topo.nodes[peer].kind == "host"
            ports.append({"port": pidx, "peer": peer, "peer_name": topo.nodes[peer].name,
                          "peer_port": peer_port, "peer_addr": addrs[peer],
                          "gbps": link.gbps, "delay_ps": link.delay_ps,
                          "loss": loss_rate, "corrupt": corrupt_rate,
                          "faces_host": faces_host,
                          "pfc_quanta": (host_pfc if node.kind == "host" else
                                         0 if faces_host else switch_pfc)})
            if lanes is not None:
                ports[-1]["peer_pfc_addr"] = lanes[peer]
            timeline = port_faults.get((nid, pidx))
            if timeline:
                ports[-1]["faults"] = timeline
            if (nid, pidx) in trigger:
                ports[-1]["trigger_packets"] = trigger[(nid, pidx)]
        conf = {"format": FORMAT, "node": nid, "name": node.name, "kind": node.kind,
                "role": "host" if node.kind == "host" else "switch", "hosts": n_hosts,
                "bind": addrs[nid], "ports": ports, "seed": seed, "queue": queue,
                "run": dict(run_opts), "output": {"counters": None, "records": None},
                "max_datagram": max_datagram(wire, cfg.mtu, session is not None),
                "wire": wire}
        if lanes is not None:
            conf["pfc_bind"] = lanes[nid]
        if output_dir is not None:
            conf["output"]["counters"] = os.path.join(output_dir, node.name + ".counters.json")
        if session is not None and (node.kind == "host" or pfc is not None):
            conf["secure"] = dict(session)     # hosts, and switches that send PFC frames
        if node.kind == "host":
            conf["agent"] = {"protocol": protocol, "params": cfg.as_dict()}
            conf["mtu_wire_bytes"] = cfg.mtu + HEADER_BYTES
            conf["messages"] = sorted(sends[nid], key=lambda m: (m["start_ps"], m["msg_id"]))
            conf["expect"] = expects[nid]
            if output_dir is not None:
                conf["output"]["records"] = os.path.join(output_dir,
                                                         node.name + ".records.json")
        else:
            conf["next_hops"] = [list(h) for h in topo.next_hops[nid][:n_hosts]]
            conf["forwarding"] = cfg.forwarding
            conf["salt"] = tier_salt(seed, node.kind)
            conf["switch_latency_ps"] = topo.switch_latency_ps
            conf["pfc"] = pfc
            if fabric:
                leaf = nid in leaves
                conf["fabric"] = {
                    "role": "leaf" if leaf else "spine", "params": cfg.as_dict(),
                    "nodes": len(topo.nodes), "leaf_of": leaf_of,
                    "leaf_routes": [[lf, list(ports)] for lf, ports in
                                    sorted(leaf_routes(topo, nid, leaf_of, leaves).items())]}
                if leaf:                  # a leaf's egress queues draw on its deep buffer
                    conf["queue"] = leaf_queue
                    # the spines' choices, as the simulation's leaves count them, so that
                    # a dead spine uplink is a path of its own, not its whole uplink
                    conf["fabric"]["spine_fanout"] = spine_fanout(topo, nid, tables)
                    if width_updates.get(nid):  # what the leaf learns with the routes
                        conf["fabric"]["width_updates"] = width_updates[nid]
            if nid in route_updates:
                conf["route_updates"] = route_updates[nid]
        out.append(check_node_config(conf, "node %s" % node.name))
    return out


def _fault_timelines(topo, faults, detect_ps, link_faults):
    """({(node, port): [[t, action, value]]}, {switch: [[t, [[host, [ports]]]]]})."""
    if not faults:
        return {}, {}
    ports = {}
    if link_faults:
        for key, events in faults.port_timeline(topo).items():
            ports[key] = [[t, action, value] for t, action, value, _ in events]
    routes = {}
    for t, _, changes in faults.route_timeline(topo, detect_ps):
        rows = {}
        for switch, host, hops in changes:
            rows.setdefault(switch, []).append([host, list(hops)])
        for switch, r in rows.items():
            routes.setdefault(switch, []).append([t, r])
    return ports, routes


def _width_timelines(topo, faults, detect_ps, leaf_of, leaves, tables):
    """{leaf: [[t, [[host, [widths]]]]]}: what each fabric leaf learns as the routes change
    (the live paths beyond each uplink, ``switchmodel.fabric_plan.uplink_widths``), as
    the simulation tells its leaves (``gse.runtimes.sim.faults``); an entry replaces the
    leaf's widths (empty: all paths live again)."""
    n_hosts = len(topo.hosts)
    rows = {s: [tuple(r) for r in topo.next_hops[s][:n_hosts]] for s in topo.switches}
    fanout = {leaf: spine_fanout(topo, leaf, tables) for leaf in leaves}
    last = {leaf: [] for leaf in leaves}
    out = {}
    for t, _, changes in faults.route_timeline(topo, detect_ps):
        for switch, host, hops in changes:
            rows[switch][host] = tuple(hops)
        for leaf in leaves:
            def beyond(port, h, leaf=leaf):
                peer = topo.peer(leaf, port)[0]
                return len(rows[peer][h]) if peer in rows else fanout[leaf]
            mine = [() if leaf_of[h] == leaf else rows[leaf][h] for h in range(n_hosts)]
            w = [[h, list(v)] for h, v in sorted(
                uplink_widths(mine, beyond, n_hosts, fanout[leaf]).items())]
            if w != last[leaf]:
                last[leaf] = w
                out.setdefault(leaf, []).append([t, w])
    return out


def write_node_configs(configs: Iterable[Mapping[str, Any]], directory: str) -> list[str]:
    """Write each config as ``<directory>/<name>.json``; returns the paths by node id."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for conf in configs:
        path = os.path.join(directory, conf["name"] + ".json")
        write_json_atomic(path, conf)
        paths.append(path)
    return paths


def write_json_atomic(path, obj):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)
