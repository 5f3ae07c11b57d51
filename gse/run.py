"""One simulation run: topology + traffic + protocol + config + seed -> summary and records.

The single entry point that the command line, the experiments and the tests share, so
that what a test asserts is what a user measures.  ``host_factory`` and ``build_network``
are the pieces other drivers (trace replay, other runtimes) reuse.
"""

import time

from gse.config import GseConfig, RoceConfig
from gse.host import GseHost
from gse.metrics import MessageRecord, ideal_ps, summarize
from gse.packet import HEADER_BYTES
from gse.plain_host import PlainHost
from gse.roce import RoceHost
from gse.sim import Network
from switchmodel.fabric import FabricConfig
from switchmodel.fabric_sim import fabric_summary, switch_factory
from switchmodel.pfc import PfcConfig
from switchmodel.queue import QueueConfig

# gse-fabric: plain RoCE-like hosts, the leaves schedule (docs/fabric-mode.md)
PROTOCOLS = ("gse", "roce", "gse-fabric")


class RunResult:
    __slots__ = ("summary", "records", "network")

    def __init__(self, summary, records, network):
        self.summary = summary
        self.records = records
        self.network = network

    def per_message(self):
        """Comparable per-message outcome, for determinism checks and golden runs."""
        return [(r.src, r.msg_id, r.deliver_ps, r.finish_ps, r.retransmits)
                for r in self.records]


def default_config(protocol):
    if protocol == "gse":
        return GseConfig()
    if protocol == "roce":
        return RoceConfig()
    if protocol == "gse-fabric":
        return FabricConfig()
    raise ValueError("unknown protocol %r (known: %s)" % (protocol, ", ".join(PROTOCOLS)))


def host_factory(protocol, config):
    """``make_host(addr, rng, downlink_gbps)`` for the protocol's sans-I/O host agent."""
    cls = {"gse": GseHost, "roce": RoceHost, "gse-fabric": PlainHost}.get(protocol)
    if cls is None:
        raise ValueError("unknown protocol %r (known: %s)" % (protocol, ", ".join(PROTOCOLS)))

    def make_host(addr, rng, gbps):
        return cls(addr, config, rng, gbps)
    return make_host


def queue_config(protocol, config):
    """Switch egress queues as the protocol expects them."""
    if protocol == "gse":
        return QueueConfig.from_gse(config)
    if protocol == "gse-fabric":      # drop-tail, no trimming (plain hosts), no ECN
        return QueueConfig(config.queue_bytes, config.control_queue_bytes)
    limit = config.switch_buffer_bytes if config.pfc else config.queue_bytes
    return QueueConfig(limit, limit, False, None, config.ecn, config.ecn_kmin_bytes,
                       config.ecn_kmax_bytes, config.ecn_pmax_pct / 100.0)


def pfc_config(protocol, config):
    if protocol != "roce" or not config.pfc:
        return None
    return PfcConfig(config.pfc_xoff_bytes, config.pfc_xoff_bytes - config.pfc_xon_bytes,
                     config.pfc_headroom_bytes, config.pfc_dynamic_alpha,
                     config.switch_buffer_bytes, config.pfc_pause_quanta)


def build_network(topo, protocol, config, seed, loss_rate=0.0, corrupt_rate=0.0):
    switches = switch_factory(topo, config) if protocol == "gse-fabric" else None
    return Network(topo, host_factory(protocol, config), queue_config(protocol, config),
                   config.forwarding, seed, loss_rate, corrupt_rate,
                   pfc_config(protocol, config), switch_node=switches)


def pfc_summary(net):
    """PAUSE frames sent and time spent paused, over all ports (zero without PFC)."""
    now = net.eq.now
    pauses = overflows = 0
    for sw in net.switches:
        if sw.pfc is not None:
            pauses += sw.pfc.pauses_sent
            overflows += sw.pfc.headroom_overflows
    paused = [p.paused_total_ps(now) for p in net.ports]
    return {"pfc_pauses": pauses, "paused_time_us": round(sum(paused) / 1e6, 3),
            "paused_time_max_port_us": round(max(paused, default=0) / 1e6, 3),
            "pfc_headroom_overflows": overflows}


def run_simulation(topo, messages, protocol="gse", config=None, seed=1, loss_rate=0.0,
                   corrupt_rate=0.0, until_ps=-1):
    cfg = config if config is not None else default_config(protocol)
    for m in messages:
        if not (0 <= m.src < len(topo.hosts) and 0 <= m.dst < len(topo.hosts)):
            raise ValueError("message %d: host %d->%d but the topology has hosts 0..%d"
                             % (m.msg_id, m.src, m.dst, len(topo.hosts) - 1))
    net = build_network(topo, protocol, cfg, seed, loss_rate, corrupt_rate)
    cache = {}
    records = [MessageRecord(m, ideal_ps(topo, m.src, m.dst, m.size, cfg.mtu, cache))
               for m in messages]
    net.schedule(messages)
    wall0 = time.perf_counter()
    net.run(until_ps)
    wall = time.perf_counter() - wall0
    for r in records:
        key = (r.src, r.msg_id)
        r.deliver_ps = net.records.get(key, -1)
        done = net.sender_done.get(key)
        if done is not None:
            r.retransmits, r.finish_ps = done
    base_rtt = topo.max_base_rtt_ps(cfg.mtu + HEADER_BYTES, HEADER_BYTES)
    extra = {"protocol": protocol, "seed": seed}
    extra.update(pfc_summary(net))
    summary = summarize(records, net.ports, [h.agent.counters() for h in net.hosts],
                        base_rtt, net.eq.now, net.eq.events, wall, extra)
    if protocol == "gse-fabric":
        fabric_summary(net, summary)
    return RunResult(summary, records, net)
