"""One simulation run: topology + traffic + protocol + config + seed -> summary and records.

The single entry point that the command line, the experiments and the tests share, so
that what a test asserts is what a user measures.
"""

import time

from gse.config import GseConfig
from gse.host import GseHost
from gse.metrics import MessageRecord, ideal_ps, summarize
from gse.packet import HEADER_BYTES
from gse.sim import Network
from switchmodel.queue import QueueConfig

PROTOCOLS = ("gse",)


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


def run_simulation(topo, messages, protocol="gse", config=None, seed=1, loss_rate=0.0,
                   corrupt_rate=0.0, until_ps=-1):
    if protocol not in PROTOCOLS:
        raise ValueError("unknown protocol %r (known: %s)" % (protocol, ", ".join(PROTOCOLS)))
    cfg = config if config is not None else GseConfig()
    for m in messages:
        if not (0 <= m.src < len(topo.hosts) and 0 <= m.dst < len(topo.hosts)):
            raise ValueError("message %d: host %d->%d but the topology has hosts 0..%d"
                             % (m.msg_id, m.src, m.dst, len(topo.hosts) - 1))

    def make_host(addr, rng, gbps):
        return GseHost(addr, cfg, rng, gbps)

    net = Network(topo, make_host, QueueConfig.from_gse(cfg), cfg.forwarding, seed,
                  loss_rate, corrupt_rate)
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
    summary = summarize(records, net.ports, [h.agent.counters() for h in net.hosts],
                        base_rtt, net.eq.now, net.eq.events, wall,
                        {"protocol": protocol, "seed": seed})
    return RunResult(summary, records, net)
