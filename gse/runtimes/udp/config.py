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

from gse import protocols
from gse.config import PS_PER_US, ConfigError
from gse.protocols import PROTOCOLS, default_config, pfc_config, queue_config
from gse.wire import WIRE_PROFILES, uet
from gse.wire.packet import HEADER_BYTES
from switchmodel.switch import tier_salt

FORMAT = "gse-agent-config/1"

# Protocols whose switches are the plain switch agent (Switch, OutputQueue, PFC), which is
# what a UDP node runs.  gse-fabric's leaves run a scheduler of their own
# (gse.runtimes.sim.fabric_nodes) that has no UDP node yet.
UDP_PROTOCOLS = ("gse", "roce")


def udp_protocols():
    """The protocols of ``gse.protocols.PROTOCOLS`` that the UDP runtimes can run."""
    return tuple(p for p in PROTOCOLS if p in UDP_PROTOCOLS)


def check_protocol(protocol):
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
}

RUN_DEFAULTS = {
    "timeout_s": 60.0,         # wall-clock bound: the agent exits (and writes) by then
    "linger_s": 1.0,           # host: stay this long after its work is done and quiet
    "idle_exit_s": None,       # any node: exit after this long without a datagram
    "start_delay_s": 0.5,      # time 0 is this long after start-up ...
    "start_at_unix": None,     # ... or at this wall-clock instant (shared by all agents)
    "loop": "auto",            # auto | asyncio | uvloop
    "precise_timers": False,   # True: poll for sub-millisecond timers (a busy core)
    "rcvbuf_bytes": 4 * 1024 * 1024,
    "slack_ps": 20 * PS_PER_US,
}


def udp_profile(config, keep=()):
    """Set the real-time protocol timers (``UDP_TIMERS``) on ``config`` in place, except
    the names in ``keep`` (what the user set explicitly).  Returns ``config``."""
    for name, value in UDP_TIMERS.items():
        if name in config.__slots__ and name not in keep:
            setattr(config, name, value)
    if "rto_max_ps" in config.__slots__ and config.rto_max_ps < config.rto_ps:
        config.rto_max_ps = config.rto_ps
    config.validate()
    return config


def loopback_addresses(topo, base="127.77.0.0", port=47000):
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


def check_wire(wire, protocol, mtu):
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


def max_datagram(wire, mtu):
    """The largest datagram of a wire profile at ``mtu``."""
    return mtu + (uet.MAX_OVERHEAD if wire == "uet" else HEADER_BYTES)


def node_configs(topo, messages, protocol="gse", config=None, seed=1, address_of=None,
                 loss_rate=0.0, corrupt_rate=0.0, output_dir=None, run=None, wire="gse"):
    """The configuration of every node of ``topo`` (a list indexed by node id).

    ``address_of`` maps a node id to its (ip, port): a callable, a list or a dict (default
    ``loopback_addresses(topo)``).  ``messages`` are split by source host (what it sends)
    and destination (what it expects).  ``output_dir`` gives every node
    ``<dir>/<name>.counters.json`` and, for hosts, ``<dir>/<name>.records.json``.
    ``run`` overrides entries of ``RUN_DEFAULTS``.
    """
    check_protocol(protocol)
    cfg = config if config is not None else default_config(protocol)
    check_wire(wire, protocol, cfg.mtu)
    if not 0.0 <= loss_rate < 1.0 or not 0.0 <= corrupt_rate < 1.0:
        raise ConfigError("loss and corruption rates must be in [0, 1), got %r, %r"
                          % (loss_rate, corrupt_rate))
    if address_of is None:
        address_of = loopback_addresses(topo)
    run_opts = dict(RUN_DEFAULTS)
    for key, value in (run or {}).items():
        if key not in RUN_DEFAULTS:
            raise ConfigError("unknown run option %r (known: %s)"
                              % (key, ", ".join(sorted(RUN_DEFAULTS))))
        run_opts[key] = value
    n_hosts = len(topo.hosts)
    sends = [[] for _ in range(n_hosts)]
    expects = [[] for _ in range(n_hosts)]
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
    out = []
    for nid, node in enumerate(topo.nodes):
        ports = []
        for pidx, lidx in enumerate(node.ports):
            link = topo.links[lidx]
            peer, peer_port = topo.peer(nid, pidx)
            ports.append({"port": pidx, "peer": peer, "peer_name": topo.nodes[peer].name,
                          "peer_port": peer_port, "peer_addr": addrs[peer],
                          "gbps": link.gbps, "delay_ps": link.delay_ps,
                          "loss": loss_rate, "corrupt": corrupt_rate,
                          "faces_host": topo.nodes[peer].kind == "host"})
        conf = {"format": FORMAT, "node": nid, "name": node.name, "kind": node.kind,
                "role": "host" if node.kind == "host" else "switch",
                "bind": addrs[nid], "ports": ports, "seed": seed, "queue": queue,
                "run": dict(run_opts), "output": {"counters": None, "records": None},
                "max_datagram": max_datagram(wire, cfg.mtu), "wire": wire}
        if output_dir is not None:
            conf["output"]["counters"] = os.path.join(output_dir, node.name + ".counters.json")
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
        out.append(conf)
    return out


def write_node_configs(configs, directory):
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


def load_node_config(path):
    """Read and check one node's configuration; ``ConfigError`` names the file and field."""
    try:
        with open(path) as f:
            conf = json.load(f)
    except OSError as exc:
        raise ConfigError("%s: cannot read: %s" % (path, exc.strerror or exc)) from None
    except ValueError as exc:
        raise ConfigError("%s: not JSON: %s" % (path, exc)) from None
    return check_node_config(conf, path)


def _need(conf, key, types, where, optional=False):
    if key not in conf:
        if optional:
            return None
        raise ConfigError("%s: missing field %r" % (where, key))
    value = conf[key]
    if not isinstance(value, types) or isinstance(value, bool) and bool not in _tuple(types):
        raise ConfigError("%s: field %r must be %s, got %r"
                          % (where, key, _type_names(types), value))
    return value


def _tuple(types):
    return types if isinstance(types, tuple) else (types,)


def _type_names(types):
    return " or ".join(t.__name__ for t in _tuple(types))


def _addr(value, where):
    if (not isinstance(value, list) or len(value) != 2 or not isinstance(value[0], str)
            or not isinstance(value[1], int) or not 0 <= value[1] <= 65535):
        raise ConfigError("%s: address must be [ip, port], got %r" % (where, value))


def check_node_config(conf, where="config"):
    """Check the structure of a node configuration; fill run defaults.  Returns ``conf``."""
    if not isinstance(conf, dict):
        raise ConfigError("%s: a node configuration is a JSON object" % where)
    fmt = conf.get("format")
    if fmt != FORMAT:
        raise ConfigError("%s: field 'format' must be %r, got %r" % (where, FORMAT, fmt))
    _need(conf, "node", int, where)
    name = _need(conf, "name", str, where)
    where = "%s (node %r)" % (where, name)
    role = _need(conf, "role", str, where)
    if role not in ("host", "switch"):
        raise ConfigError("%s: field 'role' must be 'host' or 'switch', got %r" % (where, role))
    _need(conf, "kind", str, where)
    _addr(_need(conf, "bind", list, where), where + " field 'bind'")
    _need(conf, "seed", (int, str), where)
    _need(conf, "queue", dict, where)
    wire = conf.setdefault("wire", "gse")
    if wire not in WIRE_PROFILES:
        raise ConfigError("%s: field 'wire' must be one of %s, got %r"
                          % (where, ", ".join(WIRE_PROFILES), wire))
    if not HEADER_BYTES <= _need(conf, "max_datagram", int, where) <= 65535:
        raise ConfigError("%s: field 'max_datagram' must be %d..65535, got %r"
                          % (where, HEADER_BYTES, conf["max_datagram"]))
    ports = _need(conf, "ports", list, where)
    if not ports or (role == "host" and len(ports) != 1):
        raise ConfigError("%s: a %s needs %s port(s), got %d"
                          % (where, role, "exactly 1" if role == "host" else ">= 1",
                             len(ports)))
    for i, p in enumerate(ports):
        pw = "%s port %d" % (where, i)
        if not isinstance(p, dict):
            raise ConfigError("%s: a port is a JSON object" % pw)
        if _need(p, "port", int, pw) != i:
            raise ConfigError("%s: ports must be listed in order, found port %r"
                              % (pw, p["port"]))
        _need(p, "peer", int, pw)
        _need(p, "peer_port", int, pw)
        _addr(_need(p, "peer_addr", list, pw), pw + " field 'peer_addr'")
        if not _need(p, "gbps", (int, float), pw) > 0:
            raise ConfigError("%s: field 'gbps' must be > 0" % pw)
        if _need(p, "delay_ps", int, pw) < 0:
            raise ConfigError("%s: field 'delay_ps' must be >= 0" % pw)
        for key in ("loss", "corrupt"):
            v = _need(p, key, (int, float), pw, optional=True)
            if v is not None and not 0 <= v < 1:
                raise ConfigError("%s: field %r must be in [0, 1), got %r" % (pw, key, v))
        _need(p, "faces_host", bool, pw)
    run = conf.setdefault("run", {})
    if not isinstance(run, dict):
        raise ConfigError("%s: field 'run' must be an object" % where)
    for key in run:
        if key not in RUN_DEFAULTS:
            raise ConfigError("%s: unknown run option %r (known: %s)"
                              % (where, key, ", ".join(sorted(RUN_DEFAULTS))))
    for key, value in RUN_DEFAULTS.items():
        run.setdefault(key, value)
    out = conf.setdefault("output", {})
    if not isinstance(out, dict):
        raise ConfigError("%s: field 'output' must be an object" % where)
    if role == "host":
        agent = _need(conf, "agent", dict, where)
        _need(agent, "protocol", str, where + " field 'agent'")
        _need(agent, "params", dict, where + " field 'agent'")
        _need(conf, "mtu_wire_bytes", int, where)
        for i, m in enumerate(_need(conf, "messages", list, where)):
            mw = "%s message %d" % (where, i)
            for key in ("msg_id", "dst", "size", "start_ps"):
                _need(m, key, int, mw)
        for i, m in enumerate(_need(conf, "expect", list, where)):
            for key in ("src", "msg_id", "size"):
                _need(m, key, int, "%s expected message %d" % (where, i))
    else:
        hops = _need(conf, "next_hops", list, where)
        for h, row in enumerate(hops):
            if (not isinstance(row, list) or
                    not all(isinstance(x, int) and not isinstance(x, bool)
                            and 0 <= x < len(ports) for x in row)):
                raise ConfigError("%s: next_hops[%d] must list local ports 0..%d, got %r"
                                  % (where, h, len(ports) - 1, row))
            if not row:
                raise ConfigError("%s: next_hops[%d] is empty: host %d is unreachable from "
                                  "this switch (list at least one local port)"
                                  % (where, h, h))
        _need(conf, "forwarding", str, where)
        _need(conf, "salt", int, where)
        pfc = conf.get("pfc")
        if pfc is not None and not isinstance(pfc, dict):
            raise ConfigError("%s: field 'pfc' must be an object or null" % where)
    return conf


def protocol_config(conf):
    """The host agent's config object (GseConfig, RoceConfig) from a host's ``agent``."""
    agent = conf["agent"]
    cfg = default_config(agent["protocol"])
    for name, value in agent["params"].items():
        cfg.set(name, value)
    cfg.validate()
    return cfg
