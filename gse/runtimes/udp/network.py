"""The in-process UDP runtime: every host and switch of a topology on one event loop,
each behind its own UDP socket on the loopback range, real datagrams between them.

    result = run_udp(fat_tree(4, link_gbps=0.2), messages, "gse", seed=1, loss_rate=0.01)
    result.summary["lost"]          # the summary schema of gse sim

The nodes are the ones ``gse agent`` runs one per process (``gse.runtimes.udp.node``), built from
the same per-node configurations (``gse.runtimes.udp.config``), so what runs here is what runs on
Mininet or on real machines.  Links are emulated in the sending node (rate, delay,
buffer, loss, corruption); see ``docs/udp-runtime.md`` for the scale one process carries.

For tests, benchmarks and tools that must act while the fabric runs (inject datagrams,
cancel mid-run) ``UdpNetwork`` is an async context manager:

    async with UdpNetwork(topo, messages) as net:
        task = asyncio.ensure_future(net.run(timeout_s=30))
        ...                              # net.addresses: every node's (ip, port)
        await task
    result = net.result()
"""

import asyncio
import signal
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from gse.metrics.records import RunResult
from gse.metrics.stall import StallWatch, last_change_ps, look_at_hosts, span_of
from gse.protocols import default_config
from gse.runtimes.udp import capture, dataplane
from gse.runtimes.udp.config import (check_protocol, node_configs, pfc_lane_wanted,
                                     protocol_config, slowest_link_gbps, udp_profile)
from gse.runtimes.udp.io import (DEFAULT_RCVBUF, LANE_RCVBUF, Endpoint, Scheduler, loop_name,
                                 open_udp_socket, run_async)
from gse.runtimes.udp.build import build_node, open_lane
from gse.runtimes.udp.fabric import LeafDriver
from gse.runtimes.udp.faults import PacketTrigger, install as install_faults, trigger_ports
from gse.runtimes.udp.netns import kernel_drops
from gse.runtimes.udp.node import DEFAULT_SLACK_PS
from gse.runtimes.udp.results import (build_summary, failure_summary, message_records,
                                      udp_totals)

if TYPE_CHECKING:
    from gse.protocols import ProtocolConfig
    from gse.workloads.faults import FaultSchedule
    from gse.workloads.traffic import Message
    from topologies.topology import Topology

ADDRESSING = ("ports", "ips")
SETTLE_S = 10.0     # fabric mode, after the last ACK: longest wait with the leaves unchanged

def address_plan(topo: "Topology", addressing: str) -> list[tuple[str, int]]:
    """(ip, port) each node binds: ``ports`` = 127.0.0.1 with a kernel-chosen port per node;
    ``ips`` = its own address 127.78.x.y per node, kernel-chosen port."""
    if addressing == "ports":
        return [("127.0.0.1", 0)] * len(topo.nodes)
    if addressing == "ips":
        out = []
        for nid in range(len(topo.nodes)):
            n = nid + 1
            out.append(("127.78.%d.%d" % (n >> 8, n & 255), 0))
        return out
    raise ValueError("unknown addressing %r (known: %s)" % (addressing, ", ".join(ADDRESSING)))


class UdpNetwork:
    """A topology's nodes on the running loop; ``open``, ``run``, ``close``, ``result``."""

    def __init__(self, topo, messages, protocol="gse", config=None, seed=1, loss_rate=0.0,
                 corrupt_rate=0.0, addressing="ports", slack_ps=DEFAULT_SLACK_PS,
                 precise_timers=True, rcvbuf_bytes=DEFAULT_RCVBUF, wire="gse", pcap=None,
                 progress=None, secure_key_file=None, faults=None, detect_ps=-1,
                 stall_ps=None):
        check_protocol(protocol)
        self.secure_key_file = secure_key_file
        self.topo = topo
        self.wire = wire
        self.messages = list(messages)
        self.protocol = protocol
        self.config = (config if config is not None else
                       udp_profile(default_config(protocol), link_gbps=slowest_link_gbps(topo)))
        self.seed = seed
        self.loss_rate = loss_rate
        self.corrupt_rate = corrupt_rate
        self.addressing = addressing
        self.slack_ps = slack_ps
        self.precise = precise_timers
        self.rcvbuf = rcvbuf_bytes
        self.faults = faults
        self.detect_ps = detect_ps
        self.plan = address_plan(topo, addressing)
        # --pcap: {"dir", "spec", "budget", "snaplen"} (gse.runtimes.udp.capture)
        self.pcap = pcap
        self.pcap_plan = capture.plan(topo, pcap) if pcap else {}
        self.captures = []
        # progress(done, status): messages completed at their sender, after each one
        self.progress = progress
        self.sched = None
        self.endpoints = []
        self.lane_socks = []       # PFC lanes' sockets, by node (when the protocol has PFC)
        self.lanes = []            # ... and their endpoints, once started
        self.nodes = []
        self.hosts = []
        self.addresses = []
        self.delivered = {}        # (src, msg_id) -> ps at the receiver
        self.sender_done = {}      # (src, msg_id) -> (retransmits, ps at the sender)
        self.outstanding = 0
        self.done = None
        self.end = "not run"
        self.elapsed_ps = 0
        self.wall_s = 0.0
        self.kernel_drops = None
        self.loop_name = None
        self.opened = False
        self.signal = None         # the signal that stopped the run, by name
        self.confs = []
        self.trigger = None        # PacketTrigger of a schedule triggered by the traffic
        # the no-progress watchdog (gse.metrics.stall) on the run's clock: None its
        # default span (4 x rto_max_ps: 4 s with the real-time timers), 0 off
        self.stall_ps = stall_ps
        self.stall = None          # its report, when it ended the run

    async def __aenter__(self):
        await self.open()
        return self

    async def __aexit__(self, *exc):
        await self.close()
        return False

    async def open(self):
        """Bind every node's socket, build the nodes, start receiving."""
        loop = asyncio.get_running_loop()
        self.loop_name = loop_name(loop)
        self.sched = Scheduler(loop, self.precise)
        self.opened = True
        topo = self.topo
        try:
            for nid, (ip, port) in enumerate(self.plan):
                sock = open_udp_socket(ip, port, self.rcvbuf, "node %s" % topo.nodes[nid].name)
                self.endpoints.append(Endpoint(sock, topo.nodes[nid].name))
            self.addresses = [ep.addr for ep in self.endpoints]
            lanes = None
            if pfc_lane_wanted(self.protocol, self.config):
                # PFC lanes: a second socket per node, on its address, port of the kernel's
                for nid, (ip, _) in enumerate(self.plan):
                    self.lane_socks.append(open_udp_socket(
                        ip, 0, LANE_RCVBUF, "node %s PFC lane" % topo.nodes[nid].name))
                lanes = [list(sock.getsockname()[:2]) for sock in self.lane_socks]
            run = {"slack_ps": self.slack_ps, "precise_timers": self.precise,
                   "rcvbuf_bytes": self.rcvbuf}
            confs = node_configs(topo, self.messages, self.protocol, self.config, self.seed,
                                 [list(a) for a in self.addresses], self.loss_rate,
                                 self.corrupt_rate, run=run, wire=self.wire,
                                 secure_key_file=self.secure_key_file,
                                 faults=self.faults, detect_ps=self.detect_ps,
                                 pfc_lanes=lanes)
            agent_cfg = None
            self.confs = confs
            for conf, ep in zip(confs, self.endpoints):
                if conf["role"] == "host" and agent_cfg is None:
                    agent_cfg = protocol_config(conf)
                node = build_node(conf, self.sched, ep, agent_cfg, self._on_delivered,
                                  self._on_sent)
                self.nodes.append(node)
                if conf["role"] == "host":
                    self.hosts.append(node)
            for node, ep, conf in zip(self.nodes, self.endpoints, confs):
                callback = node.datagram
                lane_callback = node.lane_datagram
                if node.node in self.pcap_plan:
                    cap = capture.attach(node, self.pcap_plan[node.node])
                    self.captures.append(cap)
                    callback = cap.datagram
                    lane_callback = cap.lane_datagram
                elif dataplane.conf_allows(conf):
                    dataplane.attach(node)      # the switch's per-packet path in C
                elif dataplane.conf_allows_host(conf):
                    dataplane.attach_host(node)     # the host's packet path in C
                await ep.start(callback)
                if conf.get("pfc_bind") is not None:    # PAUSE and RESUME: the lane
                    lane = open_lane(node, conf, self.lane_socks[node.node])
                    self.lanes.append(lane)
                    await lane.start(lane_callback)
        except BaseException:
            await self.close()
            raise

    def _on_delivered(self, src, msg_id, size, t):
        key = (src, msg_id)
        if key not in self.delivered:
            self.delivered[key] = t
            self._progress()

    def _on_sent(self, src, msg_id, retransmits, t):
        key = (src, msg_id)
        if key not in self.sender_done:
            self.sender_done[key] = (retransmits, t)
            self._progress()

    def _progress(self):
        if self.progress is not None:
            self.progress(len(self.sender_done), "%d delivered" % len(self.delivered))
        self.outstanding -= 1
        if self.outstanding <= 0 and self.done is not None and not self.done.done():
            self.done.set_result("done")

    def _install_faults(self, origin_ps):
        for node, conf in zip(self.nodes, self.confs):
            install_faults(node, conf, origin_ps)

    def _until(self, _t, _arg):
        if not self.done.done():
            self.done.set_result("until")

    def _on_signal(self, sig):
        if self.done is not None and not self.done.done():
            self.signal = signal.Signals(sig).name
            self.done.set_result("signal")

    async def run(self, until_ps=-1, timeout_s=60.0, stop_signals=()):
        """Start the messages and wait until every one is delivered and acknowledged, the
        clock passes ``until_ps``, ``timeout_s`` of wall time pass, nothing completes, is
        acknowledged or received for the watchdog's span while messages are unfinished,
        or one of ``stop_signals`` arrives (e.g. SIGINT, SIGTERM: the run stops as at a
        timeout, and ``result()`` is what was delivered so far).  Returns why it stopped:
        "done", "until", "timeout", "stalled" or "signal"."""
        if not self.nodes:
            raise RuntimeError("UdpNetwork.run before open()")
        loop = asyncio.get_running_loop()
        self.done = loop.create_future()
        installed = []
        for sig in stop_signals:
            try:
                loop.add_signal_handler(sig, self._on_signal, sig)
                installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass                    # not the main thread: the caller handles signals
        self.outstanding = 2 * len(self.messages)
        sched = self.sched
        sched.start_clock()
        if self.faults and self.faults.after_packets is not None:
            groups = [trigger_ports(node, conf)[0] for node, conf in zip(self.nodes, self.confs)]
            self.trigger = PacketTrigger(sched, [g for g in groups if g],
                                         self.faults.after_packets, self._install_faults)
        else:
            self._install_faults(0)
        wall0 = time.perf_counter()
        for m in self.messages:
            sched.at(m.start_ps, self.hosts[m.src].start, m)
        if until_ps >= 0:
            sched.at(until_ps, self._until, None)
        if not self.messages:
            self.done.set_result("done")
        try:
            await self._wait(loop, timeout_s)
            self.end = self.done.result() if self.done.done() else "timeout"
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
            self.elapsed_ps = sched.now()
            self.wall_s = time.perf_counter() - wall0
            if not self.done.done():
                self.done.cancel()
        if self.end == "done":
            await self._settle(wall0 + timeout_s)
        return self.end

    async def _wait(self, loop, timeout_s):
        """Until the run ends or ``timeout_s`` pass, the watchdog looking at the hosts
        every quarter of its span (``gse.metrics.stall``)."""
        deadline = loop.time() + timeout_s
        span = span_of(self.stall_ps, self.config, realtime=True)
        watch = (StallWatch(span, last_change_ps(self.faults, self.detect_ps), realtime=True)
                 if span else None)
        agents = [h.agent for h in self.hosts]
        while not self.done.done():
            left = deadline - loop.time()
            if left <= 0:
                return
            await asyncio.wait({self.done}, timeout=(min(left, watch.check_ps / 1e12)
                                                     if watch else left))
            if watch is not None and not self.done.done():
                self.stall = look_at_hosts(watch, self.sched.now(), agents)
                if self.stall is not None:
                    self.done.set_result("stalled")

    async def _settle(self, deadline):
        """Fabric mode: once every message is done, let the leaves drain what is left in
        their queues (go-back-N resends that crossed the last ACK), so that the run ends
        with no VOQ, demand or reorder buffer live (``fabric.leaves_idle``): until the
        fabric is quiet -- every leaf idle, nothing on an emulated wire or in a port's
        queue, and no datagram received across a turn of the loop (one still in a socket
        would be) -- bounded by the run's deadline and by ``SETTLE_S`` without any change.
        A fixed 2 s, or the leaves' idleness alone, did not hold on a loaded machine: a
        late resend reached a leaf after it."""
        leaves = [n.agent for n in self.nodes if isinstance(n, LeafDriver)]
        if not leaves:
            return
        ports = [p for n in self.nodes for p in n.ports]
        held = None
        quiet_until = 0.0
        while True:
            now = time.perf_counter()
            state = (sum(n.datagrams for n in self.nodes),
                     [(len(lf.voqs), len(lf.demands), len(lf.reorders), lf.voq_bytes,
                       lf.reorder_bytes, sum(1 for d in lf.downlinks.values() if d.active))
                      for lf in leaves])
            if (state == held and all(lf.idle() for lf in leaves)
                    and not any(p.wire or p.queue.data_bytes or p.queue.control_bytes
                                for p in ports)):
                return
            if state != held:
                held, quiet_until = state, now + SETTLE_S
            if now >= deadline or now >= quiet_until:
                return
            await asyncio.sleep(0.01)

    async def close(self):
        """Stop the timers and close every socket; idempotent, safe after a failed open."""
        if self.endpoints and self.kernel_drops is None:
            self.kernel_drops = sum(kernel_drops(
                [ep.addr for ep in self.endpoints + self.lanes if not ep.closed]).values())
        if self.sched is not None:
            self.sched.close()
        await asyncio.gather(*(ep.close() for ep in self.endpoints + self.lanes),
                             return_exceptions=True)
        started = {lane.fd for lane in self.lanes}
        for sock in self.lane_socks:
            if sock.fileno() >= 0 and sock.fileno() not in started:
                sock.close()            # bound, never started (a failed open)
        if self.sched is not None:
            self.sched.close()          # again: datagrams handled while closing may arm
        if self.captures:
            captures, self.captures = self.captures, []
            capture.close_all(captures, self.pcap["dir"])

    def errors(self) -> list[Any]:
        """Bugs seen while running (empty in a healthy run)."""
        out = list(self.sched.errors) if self.sched else []
        for ep in self.endpoints + self.lanes:
            out.extend(ep.errors)
        return out

    def node_counters(self):
        out = []
        for n in self.nodes:
            c = n.counters(self.elapsed_ps)
            plane = dataplane.counters(n)
            if plane is not None:       # the switch forwarded on the compiled data plane
                c["dataplane"] = plane
            plane = dataplane.host_counters(n)
            if plane is not None:       # the host's packets took the compiled path
                c["hostplane"] = plane
            out.append(c)
        return out

    def result(self) -> RunResult:
        """Summary (the schema of ``gse sim``) and per-message records."""
        cfg = self.config
        records = message_records(self.topo, self.messages, cfg.mtu)
        for r in records:
            key = (r.src, r.msg_id)
            r.deliver_ps = self.delivered.get(key, -1)
            done = self.sender_done.get(key)
            if done is not None:
                r.retransmits, r.finish_ps = done
        counters = self.node_counters()
        udp = udp_totals(counters, self.kernel_drops or 0)
        udp.update({"loop": self.loop_name, "addressing": self.addressing, "wire": self.wire,
                    "end": self.end, "signal": self.signal,
                    "secure": self.secure_key_file is not None,
                    "nodes": len(self.nodes), "timer_events": self.sched.fired,
                    "timer_late": self.sched.lateness(),
                    "slack_us": self.slack_ps / 1e6, "precise_timers": self.precise,
                    "errors": self.errors()})
        ports = [p for n in self.nodes for p in n.ports]
        extra = {"protocol": self.protocol, "seed": self.seed, "runtime": "udp"}
        summary = build_summary(self.topo, records, ports, counters,
                                [h.agent.counters() for h in self.hosts], cfg,
                                self.elapsed_ps, self.wall_s, extra, udp)
        # a run stopped early (timeout, signal, --until-us, the watchdog) is a partial
        # result: say so
        summary["complete"] = self.end == "done"
        summary["end"] = self.end
        if self.stall is not None:
            summary["stall"] = self.stall
        if self.faults:
            failure_summary(summary, self.topo, self.faults, counters, self.detect_ps,
                            self.trigger.stats() if self.trigger is not None else None)
        return RunResult(summary, records, self)


async def run_udp_async(topo, messages, protocol="gse", config=None, seed=1, loss_rate=0.0,
                        corrupt_rate=0.0, until_ps=-1, timeout_s=60.0, addressing="ports",
                        slack_ps=DEFAULT_SLACK_PS, precise_timers=True,
                        rcvbuf_bytes=DEFAULT_RCVBUF, wire="gse", pcap=None, progress=None,
                        stop_signals=(), secure_key_file=None, faults=None, detect_ps=-1,
                        stall_ps=None):
    net = UdpNetwork(topo, messages, protocol, config, seed, loss_rate, corrupt_rate,
                     addressing, slack_ps, precise_timers, rcvbuf_bytes, wire, pcap,
                     progress, secure_key_file, faults, detect_ps, stall_ps)
    async with net:
        await net.run(until_ps, timeout_s, stop_signals)
    return net.result()


def run_udp(topo: "Topology", messages: Sequence["Message"], protocol: str = "gse",
            config: "ProtocolConfig | None" = None, seed: int = 1,
            loss_rate: float = 0.0, corrupt_rate: float = 0.0, until_ps: int = -1,
            timeout_s: float = 60.0, loop: str = "auto", addressing: str = "ports",
            slack_ps: int = DEFAULT_SLACK_PS, precise_timers: bool = True,
            rcvbuf_bytes: int = DEFAULT_RCVBUF, wire: str = "gse",
            pcap: dict[str, Any] | None = None,
            progress: Callable[..., Any] | None = None,
            secure_key_file: str | None = None, faults: "FaultSchedule | None" = None,
            detect_ps: int = -1, stall_ps: int | None = None) -> RunResult:
    """One run over real UDP on a fresh event loop (``loop``: auto, asyncio, uvloop).
    ``wire``: the encoding on the wire, "gse" (the project's header) or "uet" (UET 1.0
    PDS/SES headers, ``gse.wire.uet``).

    ``config`` is used as given; None means the protocol's defaults with the real-time
    timers of ``gse.runtimes.udp.config.udp_profile``.  ``pcap``: ``{"dir", "spec",
    "budget", "snaplen"}`` captures (docs/pcap.md); ``progress(done, status)`` is called
    as messages complete (the progress bar of ``gse run``).  Returns a
    ``gse.metrics.records.RunResult``.
    In the main thread SIGINT and SIGTERM stop the run the way a timeout does: the result
    holds what was delivered so far, with ``summary["complete"]`` False and
    ``summary["udp"]["end"]`` "signal" (``["signal"]`` names it).
    ``faults`` fails links as the schedule says (times on the run's clock), the switches
    learning of each change ``detect_ps`` later.  ``stall_ps``: the no-progress
    watchdog's span on the run's clock (``gse.metrics.stall``; None: 4 x ``rto_max_ps``,
    0: off); a run it ends has ``summary["end"]`` "stalled" and ``summary["stall"]``.
    """
    for m in messages:
        if not (0 <= m.src < len(topo.hosts) and 0 <= m.dst < len(topo.hosts)):
            raise ValueError("message %d: host %d->%d but the topology has hosts 0..%d"
                             % (m.msg_id, m.src, m.dst, len(topo.hosts) - 1))
    signals = ((signal.SIGINT, signal.SIGTERM)
               if threading.current_thread() is threading.main_thread() else ())
    return run_async(lambda: run_udp_async(
        topo, messages, protocol, config, seed, loss_rate, corrupt_rate, until_ps, timeout_s,
        addressing, slack_ps, precise_timers, rcvbuf_bytes, wire, pcap, progress, signals,
        secure_key_file, faults, detect_ps, stall_ps),
        loop)
