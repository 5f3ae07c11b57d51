"""Reading and checking a node configuration (``docs/agent-config.md``) before anything runs.

A node that starts with a value it cannot use fails later, far from the cause: an infinite
link rate overflows the serialiser, a message to itself or to a host that does not exist
waits out the whole timeout, a negative node id fails to encode every packet, a missing
output directory is found when the results are written.  ``check_node_config`` refuses
all of these at start-up with one ``ConfigError`` naming the file, the node and the field;
``check_outputs`` makes sure the result files can be written.  The schema's constants
(``FORMAT``, ``RUN_DEFAULTS``, ``UDP_PROTOCOLS``) live here and are re-exported by
``gse.runtimes.udp.config``, which builds the configurations.
"""

import json
import math
import os

from gse.config import PS_PER_US, ConfigError, fault_rates_error
from gse.protocols import default_config
from gse.runtimes.udp.io import LOOPS
from gse.runtimes.udp.kernel_host import check_kernel_section
from gse.wire import WIRE_PROFILES
from gse.wire.packet import HEADER_BYTES
from switchmodel.fabric_config import FabricConfig
from switchmodel.pfc import PfcConfig
from switchmodel.queue import QueueConfig

FORMAT = "gse-agent-config/1"

# Protocols a UDP node runs: the plain switch agent (Switch, OutputQueue, PFC) for gse
# and roce; for gse-fabric the leaf scheduler (gse.runtimes.udp.fabric) and spines that
# follow the leaves' paths.
UDP_PROTOCOLS = ("gse", "roce", "gse-fabric")

RUN_DEFAULTS = {
    "timeout_s": 60.0,         # wall-clock bound: the agent exits (and writes) by then
    "linger_s": 1.0,           # host: stay this long after its work is done and quiet
    "idle_exit_s": None,       # any node: exit after this long without a datagram
    # hosts: exit ("stalled") after this long without progress while messages are
    # unfinished (gse.metrics.stall); None: 4 x the protocol's rto_max_ps; 0: never
    "stall_s": None,
    "start_delay_s": 0.5,      # time 0 is this long after start-up ...
    "start_at_unix": None,     # ... or at this wall-clock instant (shared by all agents)
    "loop": "auto",            # auto | asyncio | uvloop
    "precise_timers": False,   # True: poll for sub-millisecond timers (a busy core)
    "rcvbuf_bytes": 4 * 1024 * 1024,
    "slack_ps": 20 * PS_PER_US,
    # a fault schedule triggered by the traffic: its times count from the origin (ps on
    # the run's clock) that the runner writes here when the trigger fires
    "fault_origin_file": None,
    # a runner's hand-shake: a host marks its work complete here (a file named after the
    # node) and exits only once the runner has written ALL (every host complete): until
    # then its peers may still need its final ACKs
    "done_dir": None,
}

MAX_ID = 2 ** 32 - 1           # ids and sizes are 32-bit fields on the wire
MIN_GBPS = 0.001               # the emulated links count in Mb/s


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


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _tuple(types):
    return types if isinstance(types, tuple) else (types,)


def _type_names(types):
    return " or ".join(t.__name__ for t in _tuple(types))


def _int(conf, key, where, lo, hi=MAX_ID, optional=False):
    """An integer field in [lo, hi] (JSON true/false are not integers)."""
    value = _need(conf, key, int, where, optional)
    if value is not None and not lo <= value <= hi:
        raise ConfigError("%s: field %r must be an integer in %d..%d, got %r"
                          % (where, key, lo, hi, value))
    return value


def _real(conf, key, where, lo, hi=math.inf, lo_open=False, optional=False):
    """A finite number in [lo, hi] (or (lo, hi] with ``lo_open``)."""
    value = _need(conf, key, (int, float), where, optional)
    if value is None:
        return None
    if not math.isfinite(value) or value > hi or value < lo or (lo_open and value == lo):
        raise ConfigError("%s: field %r must be a finite number %s %g%s, got %r"
                          % (where, key, ">" if lo_open else ">=", lo,
                             "" if hi == math.inf else " and <= %g" % hi, value))
    return value


def _addr(value, where, lowest_port=0):
    """[ip, port]: a port to send to (``lowest_port`` 1) or to bind (0: the kernel's
    choice)."""
    if (not isinstance(value, list) or len(value) != 2 or not isinstance(value[0], str)
            or not isinstance(value[1], int) or isinstance(value[1], bool)
            or not lowest_port <= value[1] <= 65535):
        raise ConfigError("%s: address must be [ip, port] with port %d..65535, got %r"
                          % (where, lowest_port, value))


def check_node_config(conf, where="config"):
    """Check a node configuration completely; fill run defaults.  Returns ``conf``."""
    if not isinstance(conf, dict):
        raise ConfigError("%s: a node configuration is a JSON object" % where)
    fmt = conf.get("format")
    if fmt != FORMAT:
        raise ConfigError("%s: field 'format' must be %r, got %r" % (where, FORMAT, fmt))
    nid = _int(conf, "node", where, 0)
    name = _need(conf, "name", str, where)
    where = "%s (node %r)" % (where, name)
    role = _need(conf, "role", str, where)
    if role not in ("host", "switch"):
        raise ConfigError("%s: field 'role' must be 'host' or 'switch', got %r" % (where, role))
    n_hosts = _int(conf, "hosts", where, 1, optional=True)   # absent in older files
    if role == "host" and n_hosts is not None and nid >= n_hosts:
        raise ConfigError("%s: field 'node' of a host must be in 0..%d (hosts: %d), got %d"
                          % (where, n_hosts - 1, n_hosts, nid))
    _need(conf, "kind", str, where)
    _int(conf, "netns", where, 1, optional=True)     # a pid in whose namespace to bind
    _addr(_need(conf, "bind", list, where), where + " field 'bind'")
    lane = _need(conf, "pfc_bind", list, where, optional=True)   # PFC frames' own socket
    if lane is not None:
        _addr(lane, where + " field 'pfc_bind'")
    _need(conf, "seed", (int, str), where)
    _check_object(QueueConfig, _need(conf, "queue", dict, where), where + " field 'queue'")
    wire = conf.setdefault("wire", "gse")
    if wire not in WIRE_PROFILES:
        raise ConfigError("%s: field 'wire' must be one of %s, got %r"
                          % (where, ", ".join(WIRE_PROFILES), wire))
    if not HEADER_BYTES <= _need(conf, "max_datagram", int, where) <= 65535:
        raise ConfigError("%s: field 'max_datagram' must be %d..65535, got %r"
                          % (where, HEADER_BYTES, conf["max_datagram"]))
    _check_ports(conf, role, where)
    _check_run(conf, where)
    out = conf.setdefault("output", {})
    if not isinstance(out, dict):
        raise ConfigError("%s: field 'output' must be an object" % where)
    for key in ("counters", "records"):
        path = out.get(key)
        if path is not None and not isinstance(path, str):
            raise ConfigError("%s: field 'output.%s' must be a path or null, got %r"
                              % (where, key, path))
    secure = conf.get("secure")
    if secure is not None:
        if conf.get("fabric") or (conf.get("agent") or {}).get("protocol") == "gse-fabric":
            raise ConfigError("%s: field 'secure': fabric mode's leaves rewrite the DATA "
                              "headers hosts send; authenticated packets need gse or roce"
                              % where)
        _check_secure(secure, n_hosts, where)
    check_kernel_section(conf, where)
    if role == "host":
        _check_host(conf, nid, n_hosts, where)
    else:
        _check_switch(conf, n_hosts, where)
    return conf


def _check_secure(secure, n_hosts, where):
    """``"secure": {"key_file": PATH, "salt": HEX, "epoch": N}``: authenticated packets
    under the run's session (gse.runtimes.udp.secure_keys)."""
    sw = where + " field 'secure'"
    if not isinstance(secure, dict):
        raise ConfigError("%s: must be an object {\"key_file\": PATH, \"salt\": HEX, "
                          "\"epoch\": N} or null" % sw)
    path = _need(secure, "key_file", str, sw)
    if n_hosts is None:
        raise ConfigError("%s: needs the field 'hosts' (the hosts of the fabric)" % sw)
    salt = secure.get("salt")
    if "salt" not in secure or "epoch" not in secure:
        raise ConfigError("%s: no session (fields 'salt' and 'epoch'): a configuration "
                          "written before issue 25; write the configurations again" % sw)
    try:
        ok = isinstance(salt, str) and len(bytes.fromhex(salt)) == 16
    except ValueError:
        ok = False
    if not ok:
        raise ConfigError("%s: field 'salt' must be 32 hexadecimal digits, got %r"
                          % (sw, salt))
    _int(secure, "epoch", sw, 1, 2 ** 63 - 1)
    from gse.runtimes.udp.secure_keys import aead, load_domain_key
    try:
        load_domain_key(path)
        aead()
    except ConfigError as exc:
        raise ConfigError("%s: %s" % (sw, exc)) from None


def _check_object(cls, fields, where):
    """Fields that construct ``cls`` (QueueConfig, PfcConfig) without complaint."""
    try:
        cls(**fields)
    except (TypeError, ValueError) as exc:
        raise ConfigError("%s: %s" % (where, exc)) from None


def _check_ports(conf, role, where):
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
        _int(p, "peer", pw, 0)
        _int(p, "peer_port", pw, 0)
        _addr(_need(p, "peer_addr", list, pw), pw + " field 'peer_addr'", 1)
        peer_lane = _need(p, "peer_pfc_addr", list, pw, optional=True)
        if peer_lane is not None:
            _addr(peer_lane, pw + " field 'peer_pfc_addr'", 1)
        _real(p, "gbps", pw, MIN_GBPS)
        _int(p, "delay_ps", pw, 0, 2 ** 63 - 1)
        loss = _real(p, "loss", pw, 0.0, 1.0, optional=True) or 0.0
        corrupt = _real(p, "corrupt", pw, 0.0, 1.0, optional=True) or 0.0
        problem = fault_rates_error(loss, corrupt, "'loss'", "'corrupt'")
        if problem:
            raise ConfigError("%s: %s" % (pw, problem))
        for j, ev in enumerate(_need(p, "faults", list, pw, optional=True) or ()):
            if (not isinstance(ev, list) or len(ev) != 3 or not _is_int(ev[0]) or ev[0] < 0
                    or ev[1] not in ("down", "up", "gray")
                    or not isinstance(ev[2], (int, float)) or isinstance(ev[2], bool)
                    or not 0 <= ev[2] <= 1):
                raise ConfigError("%s: faults[%d] must be [t_ps >= 0, \"down\" | \"up\" | "
                                  "\"gray\", drop fraction 0..1], got %r" % (pw, j, ev))
        _int(p, "trigger_packets", pw, 1, optional=True)
        _need(p, "faces_host", bool, pw)
        _int(p, "pfc_quanta", pw, 0, 65535, optional=True)   # absent: PFC frames refused


def _check_run(conf, where):
    run = conf.setdefault("run", {})
    if not isinstance(run, dict):
        raise ConfigError("%s: field 'run' must be an object" % where)
    for key in run:
        if key not in RUN_DEFAULTS:
            raise ConfigError("%s: unknown run option %r (known: %s)"
                              % (where, key, ", ".join(sorted(RUN_DEFAULTS))))
    for key, value in RUN_DEFAULTS.items():
        run.setdefault(key, value)
    rw = where + " field 'run'"
    _real(run, "timeout_s", rw, 0.0, lo_open=True)
    _real(run, "linger_s", rw, 0.0)
    _real(run, "start_delay_s", rw, 0.0)
    if run["idle_exit_s"] is not None:
        _real(run, "idle_exit_s", rw, 0.0, lo_open=True)
    if run["stall_s"] is not None:
        _real(run, "stall_s", rw, 0.0)
    if run["start_at_unix"] is not None:
        _real(run, "start_at_unix", rw, 0.0)
    if run["loop"] not in LOOPS:
        raise ConfigError("%s: option 'loop' must be one of %s, got %r"
                          % (rw, ", ".join(LOOPS), run["loop"]))
    _need(run, "precise_timers", bool, rw)
    _int(run, "rcvbuf_bytes", rw, 0, 2 ** 31 - 1)
    _int(run, "slack_ps", rw, 0, 2 ** 63 - 1)
    for key in ("fault_origin_file", "done_dir"):
        if run[key] is not None and not _need(run, key, str, rw):
            raise ConfigError("%s: option %r must be a path or null" % (rw, key))


def _check_host(conf, nid, n_hosts, where):
    agent = _need(conf, "agent", dict, where)
    aw = where + " field 'agent'"
    protocol = _need(agent, "protocol", str, aw)
    if protocol not in UDP_PROTOCOLS:
        raise ConfigError("%s: protocol %r is not one the UDP runtime runs (%s)"
                          % (aw, protocol, ", ".join(UDP_PROTOCOLS)))
    _need(agent, "params", dict, aw)
    try:
        protocol_config(conf)
    except ConfigError as exc:
        raise ConfigError("%s: field 'agent.params': %s" % (where, exc)) from None
    _int(conf, "mtu_wire_bytes", where, HEADER_BYTES + 1, 65535)
    top = MAX_ID if n_hosts is None else n_hosts - 1
    seen = {}
    for i, m in enumerate(_need(conf, "messages", list, where)):
        mw = "%s message %d" % (where, i)
        if not isinstance(m, dict):
            raise ConfigError("%s: a message is a JSON object" % mw)
        mid = _int(m, "msg_id", mw, 0)
        _int(m, "dst", mw, 0, top)
        if m["dst"] == nid:
            raise ConfigError("%s: field 'dst' is this host itself (%d)" % (mw, nid))
        _int(m, "size", mw, 1)
        _int(m, "start_ps", mw, 0, 2 ** 63 - 1)
        if mid in seen:
            raise ConfigError("%s: field 'msg_id' %d is also message %d's" % (mw, mid, seen[mid]))
        seen[mid] = i
    seen = {}
    for i, m in enumerate(_need(conf, "expect", list, where)):
        ew = "%s expected message %d" % (where, i)
        if not isinstance(m, dict):
            raise ConfigError("%s: an expected message is a JSON object" % ew)
        _int(m, "src", ew, 0, top)
        if m["src"] == nid:
            raise ConfigError("%s: field 'src' is this host itself (%d)" % (ew, nid))
        key = (m["src"], _int(m, "msg_id", ew, 0))
        _int(m, "size", ew, 1)
        if key in seen:
            raise ConfigError("%s: (src, msg_id) %r is also expected message %d's"
                              % (ew, key, seen[key]))
        seen[key] = i


def _check_switch(conf, n_hosts, where):
    ports = conf["ports"]
    hops = _need(conf, "next_hops", list, where)
    if n_hosts is not None and len(hops) != n_hosts:
        raise ConfigError("%s: field 'next_hops' needs a row per host (%d), got %d"
                          % (where, n_hosts, len(hops)))
    for h, row in enumerate(hops):
        if (not isinstance(row, list) or
                not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < len(ports)
                        for x in row)):
            raise ConfigError("%s: next_hops[%d] must list local ports 0..%d, got %r"
                              % (where, h, len(ports) - 1, row))
        if not row:
            raise ConfigError("%s: next_hops[%d] is empty: host %d is unreachable from "
                              "this switch (list at least one local port)"
                              % (where, h, h))
    if _need(conf, "forwarding", str, where) not in ("spray", "ecmp"):
        raise ConfigError("%s: field 'forwarding' must be 'spray' or 'ecmp', got %r"
                          % (where, conf["forwarding"]))
    _int(conf, "salt", where, 0)
    _int(conf, "switch_latency_ps", where, 0, 2 ** 63 - 1, optional=True)
    for j, up in enumerate(_need(conf, "route_updates", list, where, optional=True) or ()):
        ok = isinstance(up, list) and len(up) == 2 and _is_int(up[0]) and up[0] >= 0
        for row in up[1] if ok and isinstance(up[1], list) else [None]:
            if not (isinstance(row, list) and len(row) == 2 and _is_int(row[0])
                    and 0 <= row[0] < len(hops) and isinstance(row[1], list)
                    and all(_is_int(x) and 0 <= x < len(ports) for x in row[1])):
                ok = False
        if not ok:
            raise ConfigError("%s: route_updates[%d] must be [t_ps >= 0, [[host, [local "
                              "ports]], ...]] (hosts 0..%d, ports 0..%d), got %r"
                              % (where, j, len(hops) - 1, len(ports) - 1, up))
    pfc = conf.get("pfc")
    if pfc is not None:
        if not isinstance(pfc, dict):
            raise ConfigError("%s: field 'pfc' must be an object or null" % where)
        _check_object(PfcConfig, pfc, where + " field 'pfc'")
    if conf.get("fabric") is not None:
        _check_fabric(conf["fabric"], len(ports), len(hops), where + " field 'fabric'")


def _check_fabric(fabric, n_ports, n_hosts, where):
    """A fabric-mode switch's section: its role, the leaves' routes and the parameters."""
    if not isinstance(fabric, dict):
        raise ConfigError("%s: must be an object or null" % where)
    role = _need(fabric, "role", str, where)
    if role not in ("leaf", "spine"):
        raise ConfigError("%s: field 'role' must be 'leaf' or 'spine', got %r" % (where, role))
    try:
        FabricConfig(**_need(fabric, "params", dict, where))
    except (TypeError, ValueError) as exc:
        raise ConfigError("%s: field 'params': %s" % (where, exc)) from None
    nodes = _int(fabric, "nodes", where, n_hosts + 1)
    leaf_of = _need(fabric, "leaf_of", list, where)
    if len(leaf_of) != n_hosts or not all(isinstance(x, int) and n_hosts <= x < nodes
                                          for x in leaf_of):
        raise ConfigError("%s: field 'leaf_of' must name a switch (%d..%d) for each of the "
                          "%d hosts, got %r" % (where, n_hosts, nodes - 1, n_hosts, leaf_of))
    for j, up in enumerate(_need(fabric, "width_updates", list, where, optional=True) or ()):
        ok = isinstance(up, list) and len(up) == 2 and _is_int(up[0]) and up[0] >= 0 \
            and isinstance(up[1], list)
        for row in up[1] if ok else ():
            if not (isinstance(row, list) and len(row) == 2 and _is_int(row[0])
                    and 0 <= row[0] < n_hosts and isinstance(row[1], list)
                    and all(_is_int(x) and 0 <= x <= 256 for x in row[1])):
                ok = False
        if not ok:
            raise ConfigError("%s: width_updates[%d] must be [t_ps >= 0, [[host, [widths]], "
                              "...]], got %r" % (where, j, up))
    fanout = fabric.get("spine_fanout", 1)
    if not isinstance(fanout, int) or isinstance(fanout, bool) or not 1 <= fanout <= 256:
        raise ConfigError("%s: field 'spine_fanout' must be an integer 1..256, got %r"
                          % (where, fanout))
    for i, item in enumerate(_need(fabric, "leaf_routes", list, where)):
        if (not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], int)
                or not n_hosts <= item[0] < nodes or not isinstance(item[1], list) or not item[1]
                or not all(isinstance(p, int) and 0 <= p < n_ports for p in item[1])):
            raise ConfigError("%s: leaf_routes[%d] must be [leaf id, [local ports]], got %r"
                              % (where, i, item))


def check_outputs(conf, where="config"):
    """The result files of ``conf`` can be written: their directories exist and are
    writable.  Checked at start-up, not discovered when the results are due."""
    for key in ("counters", "records"):
        path = (conf.get("output") or {}).get(key)
        if not path:
            continue
        d = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(d):
            raise ConfigError("%s: field 'output.%s': directory %s does not exist"
                              % (where, key, d))
        if not os.access(d, os.W_OK):
            raise ConfigError("%s: field 'output.%s': directory %s is not writable"
                              % (where, key, d))


def protocol_config(conf):
    """The host agent's config object (GseConfig, RoceConfig) from a host's ``agent``."""
    agent = conf["agent"]
    cfg = default_config(agent["protocol"])
    for name, value in agent["params"].items():
        cfg.set(name, value)
    cfg.validate()
    return cfg
