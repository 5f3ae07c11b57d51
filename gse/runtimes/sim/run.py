"""One simulation run: topology + traffic + protocol + config + seed -> summary and records.

The single entry point that the command line, the experiments and the tests share, so
that what a test asserts is what a user measures.  ``host_factory`` and ``build_network``
are the pieces other drivers (trace replay, other runtimes) reuse.

What only some runs use (the htsim-PFC fabric, the gse-fabric switches, failures,
triggers, pinned routes, the time series) is imported when a run asks for it, not with
this module: a plain run starts sooner (``experiments/bench_startup.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from gse.metrics.records import MessageRecord, RunResult, ideal_ps, summarize
from gse.protocols import default_config, host_factory, pfc_config, queue_config
from gse.runtimes.sim.network import Network
from gse.runtimes.sim.observe import Watchdog, mark_end, run_observed
from gse.wire.packet import HEADER_BYTES

TYPE_CHECKING = False   # typing's own, without importing typing (2.9 ms of a start)
if TYPE_CHECKING:
    from typing import Any
    from gse.protocols import ProtocolConfig as Config
    from gse.workloads.cmfile import CmWorkload
    from gse.workloads.faults import FaultSchedule
    from gse.workloads.traffic import Message
    from topologies.topology import Topology
    # builds an observer of gse.runtimes.sim.observe from the network once it exists
    ObserverFactory = Callable[[Network], Any]


def build_network(topo: "Topology", protocol: str, config: "Config", seed: int,
                  loss_rate: float = 0.0, corrupt_rate: float = 0.0) -> Network:
    switches = None
    if protocol == "gse-fabric":
        from gse.runtimes.sim.fabric_nodes import switch_factory
        switches = switch_factory(topo, config)
    pfc = pfc_config(protocol, config)
    parts = (topo, host_factory(protocol, config), queue_config(protocol, config),
             config.forwarding, seed, loss_rate, corrupt_rate, pfc)
    if pfc is None or pfc.model != "htsim":
        return Network(*parts, switch_node=switches)
    from gse.runtimes.sim import htsim_model
    return htsim_model.attach(Network(*parts, switch_node=switches,
                                      classes=htsim_model.CLASSES))


def pfc_summary(net: Network) -> dict[str, Any]:
    """PAUSE frames sent and time spent paused, over all ports (zero without PFC)."""
    now = net.eq.now
    pauses = overflows = peak = 0
    for sw in net.switches:
        if sw.pfc is not None:
            pauses += sw.pfc.pauses_sent
            overflows += sw.pfc.headroom_overflows
            peak = max(peak, sw.pfc.peak_ingress)
    paused = [p.paused_total_ps(now) for p in net.ports]
    return {"pfc_pauses": pauses, "paused_time_us": round(sum(paused) / 1e6, 3),
            "paused_time_max_port_us": round(max(paused, default=0) / 1e6, 3),
            "pfc_headroom_overflows": overflows, "pfc_peak_ingress_bytes": peak}


def route_summary(net: Network) -> dict[str, int]:
    """Packets switches dropped for want of a route: destination unknown, or known but
    unreachable (no next hop left after failures)."""
    unroutable = unreachable = 0
    for sn in net.switches:
        unroutable += sn.unroutable
        unreachable += sn.switch.unreachable
    return {"unroutable": unroutable, "unreachable": unreachable}


DEFAULT_DETECT_PS = 1_000_000_000      # 1 ms: switches learn of a failure this late


def run_simulation(topo: "Topology", messages: Sequence["Message"], protocol: str = "gse",
                   config: "Config | None" = None, seed: int = 1, loss_rate: float = 0.0,
                   corrupt_rate: float = 0.0, until_ps: int = -1, sample_ps: int = 0,
                   observers: Iterable["ObserverFactory"] = (),
                   triggers: "CmWorkload | None" = None, routes: Any = None,
                   trace_rates: bool = False, faults: "FaultSchedule | None" = None,
                   detect_ps: int = DEFAULT_DETECT_PS,
                   stall_ps: int | None = None) -> RunResult:
    """Run ``messages`` on ``topo``; returns a ``RunResult``.

    ``sample_ps`` > 0 samples queues, links and hosts every ``sample_ps`` of virtual time
    (``result.timeseries``, ``gse.metrics.timeseries``); ``observers`` are more
    observers of ``gse.runtimes.sim.observe`` (a progress bar, a capture), each built by
    ``make(net)`` from the network once it exists.  Neither changes what the run does.
    ``triggers``: a connection matrix's triggers (``gse.workloads.cmfile.CmWorkload``)
    whose held messages start when other messages complete (``gse.runtimes.sim.triggers``);
    ``messages`` are then its timed messages.
    ``routes``: pin flows to given paths (gse.runtimes.sim.routes), e.g. htsim's.
    ``trace_rates``: every RoCE host logs its DCQCN reaction points' rate changes
    (``result.network.hosts[i].agent.rate_log``, gse.metrics.rates).
    ``faults`` (a ``gse.workloads.faults.FaultSchedule``) fails links and switches as it
    says, the switches learning of each change ``detect_ps`` later (-1: never) unless an
    entry says otherwise; the summary's ``failures`` gives the counters of each entry.
    ``stall_ps``: the no-progress watchdog's span (``gse.metrics.stall``; None: its
    default, 4 x ``rto_max_ps``; 0: off): a run that completes, acknowledges and receives
    nothing for that long while messages are unfinished ends there.  The summary's
    ``end`` says how the run ended ("done", "until", "stalled", or an observer's reason),
    ``complete`` whether it ran to its end, and ``stall`` what a stalled run waited for."""
    cfg = config if config is not None else default_config(protocol)
    held = list(triggers.held) if triggers is not None else []
    for m in list(messages) + held:
        if not (0 <= m.src < len(topo.hosts) and 0 <= m.dst < len(topo.hosts)):
            raise ValueError("message %d: host %d->%d but the topology has hosts 0..%d"
                             % (m.msg_id, m.src, m.dst, len(topo.hosts) - 1))
    net = build_network(topo, protocol, cfg, seed, loss_rate, corrupt_rate)
    if routes:
        from gse.runtimes.sim.routes import pin_routes
        pin_routes(net, list(messages) + held, routes)
    if trace_rates:
        for h in net.hosts:
            if hasattr(h.agent, "rate_log"):
                h.agent.rate_log = {}
    injector = None
    if faults:
        from gse.runtimes.sim.faults import FaultInjector
        injector = FaultInjector(net, faults, detect_ps, seed)
    net.faults = injector
    cache: dict[tuple[int, int], tuple[int, int]] = {}
    records = [MessageRecord(m, ideal_ps(topo, m.src, m.dst, m.size, cfg.mtu, cache))
               for m in messages]
    trig = None
    if triggers is not None and (triggers.triggers or held):
        from gse.runtimes.sim.triggers import TriggerRun
        trig = TriggerRun(net, triggers, lambda m: records.append(
            MessageRecord(m, ideal_ps(topo, m.src, m.dst, m.size, cfg.mtu, cache))))
    net.schedule(messages)
    sampler = None
    if sample_ps > 0:
        from gse.runtimes.sim.sampler import Sampler
        sampler = Sampler(net, sample_ps)
    make_dog = Watchdog.factory(stall_ps, cfg, faults, detect_ps)
    dog = make_dog(net) if make_dog else None
    watching = [sampler, dog] + [make(net) for make in observers]
    wall0 = time.perf_counter()
    end = run_observed(net, until_ps, watching)
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
    extra.update(route_summary(net))
    if trig is not None:
        extra.update(trig.summary())
        ends = [r.finish_ps for r in records if r.finish_ps >= 0]
        extra["last_finish_us"] = round(max(ends) / 1e6, 4) if ends else None
    summary = summarize(records, net.ports, [h.agent.counters() for h in net.hosts],
                        base_rtt, net.eq.now, net.eq.events, wall, extra)
    summary["drops"] += summary["unroutable"]
    if injector is not None:
        summary["failures"] = injector.summary(records)
        summary["failures"]["detect_us"] = None if detect_ps < 0 else detect_ps / 1e6
        summary["drops"] += sum(summary["failures"]["drops"].values())
    if protocol == "gse-fabric":
        from gse.runtimes.sim.fabric_nodes import fabric_summary
        fabric_summary(net, summary)
    mark_end(summary, end, dog)
    result = RunResult(summary, records, net)
    if sampler is not None:
        result.timeseries = sampler.result({"protocol": protocol, "seed": seed})
    return result


def compare(topo: "Topology", messages: Sequence["Message"], configs: Mapping[str, "Config"],
            seed: int = 1, loss_rate: float = 0.0, corrupt_rate: float = 0.0,
            until_ps: int = -1, sample_ps: int = 0,
            observers: Mapping[str, Iterable["ObserverFactory"]] | None = None,
            triggers: "CmWorkload | None" = None, faults: "FaultSchedule | None" = None,
            detect_ps: int = DEFAULT_DETECT_PS,
            stall_ps: int | None = None) -> dict[str, RunResult]:
    """The same messages under every (protocol, config) of ``configs``: {protocol: RunResult}.

    ``observers``: ``{protocol: [make(net), ...]}`` (see ``run_simulation``)."""
    observers = observers or {}
    return {protocol: run_simulation(topo, messages, protocol=protocol, config=cfg,
                                     seed=seed, loss_rate=loss_rate, corrupt_rate=corrupt_rate,
                                     until_ps=until_ps, sample_ps=sample_ps,
                                     observers=observers.get(protocol, ()),
                                     triggers=triggers, faults=faults, detect_ps=detect_ps,
                                     stall_ps=stall_ps)
            for protocol, cfg in configs.items()}
