"""``gse agent --config NODE.json``: one host or switch of a fabric, over real UDP.

The program that the Mininet runtime starts in every node's namespace, and that a
deployment on real machines starts on every machine.  It binds the node's own address,
builds the node from its configuration (``docs/agent-config.md``), sends the host's
messages from time 0 on, and runs until

* a host: its messages are all acknowledged and the messages it expects all delivered,
  and then ``linger_s`` passed without a datagram (late retransmissions still get their
  ACK from a lingering receiver) -- exit "done".  With ``done_dir`` (a runner such as
  Mininet's), it marks its work complete there and also waits for the runner's ``ALL``
  (every host complete): a sender whose last ACK was lost -- to a failed link, say --
  still gets its final ACK however long the loss takes to repair;
* ``idle_exit_s`` (if set) passed without a datagram after the first -- exit "idle";
* SIGTERM or SIGINT -- exit "signal";
* ``timeout_s`` of wall time -- exit "timeout";
* its hosts' messages made no progress (nothing completed, acknowledged or received) for
  ``stall_s`` while some were unfinished (the no-progress watchdog, ``gse.metrics.stall``:
  by default 4 x the protocol's ``rto_max_ps``) -- exit "stalled".  The watchdog sees
  this process's hosts only: a sender that its receiver leaves without grants longer than
  that (an SRPT or FIFO receiver busy with others) looks stuck to it; raise ``stall_s``
  for such runs.

In every case it writes its counters (and a host its per-message records) as JSON before
it exits, closes its socket, and returns 0 if its own work is complete (a switch's always
is), ``EXIT_STALLED`` (3) if the watchdog ended it, 1 if not complete otherwise.  A host's
counters say what its unfinished messages wait for (``waiting``), and ``late_start_s``
how late the agent came up after the shared ``start_at_unix`` (its own start is then its
time 0).  Configuration errors exit with 2 and one line naming the field.
"""

import argparse
import asyncio
import os
import signal
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from gse.config import ConfigError
from gse.metrics.stall import StallWatch, default_span_ps, describe_stall, look_at_hosts
from gse.runtimes.udp import capture, dataplane, kernel_host
from gse.runtimes.udp.build import build_node, open_lane
from gse.runtimes.udp.config import (check_node_config, check_outputs, load_node_config,
                                     protocol_config, write_json_atomic)
from gse.runtimes.udp.io import LANE_RCVBUF, Endpoint, Scheduler, loop_name, run_async
from gse.runtimes.udp.netns import kernel_drops_in, open_udp_socket_in
from gse.runtimes.udp.faults import (PacketTrigger, claim_origin, has_faults,
                                     install as install_faults, read_origin, trigger_ports)

COUNTERS_FORMAT = "gse-agent-counters/1"
RECORDS_FORMAT = "gse-agent-records/1"
POLL_S = 0.05
ALL_DONE = "ALL"          # in run.done_dir: the runner saw every host complete
TRIGGER_EVERY_PS = 10 * 10 ** 9   # a trigger port's count is looked at every 10 ms
EXIT_STALLED = 3


class Agent:
    """One process's nodes -- usually one -- and their life: open, start, wait for an end
    condition, write, close.  Several nodes (a grouped placement under Mininet) share the
    process's event loop and scheduler; each has its own socket, in its own network
    namespace when its configuration names one (``netns``: a pid living there)."""

    def __init__(self, confs):
        self.confs = [confs] if isinstance(confs, dict) else list(confs)
        self.conf = self.confs[0]
        self.run = self.conf["run"]       # run options: the first node's (shared by all)
        self.sched = None
        self.endpoints = []
        self.lane_socks = {}      # node index -> its PFC lane's socket, until started
        self.lanes = []           # the PFC lanes' endpoints (gse.runtimes.udp.build.open_lane)
        self.nodes = []
        self.captures = []        # --pcap: gse.runtimes.udp.capture.NodeCapture per node
        self.exit = None
        self.stop = None
        self.wall0 = time.perf_counter()
        self.last_rx = None
        self.hosts = [c for c in self.confs if c["role"] == "host"]
        self.fault_origin_ps = None    # when this process's failures were installed
        self.t0_unix = None            # the wall-clock instant of this process's time 0
        self.trigger = None            # PacketTrigger: this process holds the trigger link
        self.late_start_s = 0.0   # how late it came up after run.start_at_unix
        self.watch = None         # the no-progress watchdog (gse.metrics.stall)
        self.stall = None         # its report, when it ended the run
        self.senders = {}         # node index -> KernelSender (kernel forwarding's hosts)

    @property
    def node(self):
        return self.nodes[0] if self.nodes else None

    async def main(self):
        loop = asyncio.get_running_loop()
        self.stop = loop.create_future()
        installed = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, self._on_signal)
                installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass                # not the main thread: the caller handles signals
        # agents share cores: precise timers wake the loop by timerfd rather than polling
        self.sched = Scheduler(loop, self.run["precise_timers"], "timerfd")
        try:
            for conf in self.confs:
                ip, port = conf["bind"]
                if conf.get("pfc_bind") is not None:    # its PFC lane (PAUSE, RESUME),
                    lip, lport = conf["pfc_bind"]        # bound before the data socket
                    self.lane_socks[len(self.endpoints)] = open_udp_socket_in(
                        conf.get("netns"), lip, lport, LANE_RCVBUF,
                        "node %r PFC lane" % conf["name"])
                sock = open_udp_socket_in(conf.get("netns"), ip, port,
                                          self.run["rcvbuf_bytes"], "node %r" % conf["name"])
                self.endpoints.append(Endpoint(sock, conf["name"]))
        except BaseException:
            for sig in installed:
                loop.remove_signal_handler(sig)
            for ep in self.endpoints:
                ep.sock.close()
            for sock in self.lane_socks.values():
                sock.close()
            raise
        try:
            agent_cfg = None
            for conf, ep in zip(self.confs, self.endpoints):
                if conf["role"] == "host":
                    agent_cfg = protocol_config(conf)
                self.nodes.append(build_node(conf, self.sched, ep, agent_cfg))
            for i, (conf, node, ep) in enumerate(zip(self.confs, self.nodes, self.endpoints)):
                handler = node.datagram
                lane_handler = node.lane_datagram
                if conf.get("kernel"):          # switches forward in the kernel: to hosts
                    self.senders[i] = kernel_host.install(node, conf)
                if conf.get("pcap"):            # --pcap: this node's chosen ports
                    cap = capture.attach(node, conf["pcap"])
                    self.captures.append((cap, conf))
                    handler = cap.datagram
                    lane_handler = cap.lane_datagram

                elif dataplane.conf_allows(conf):   # the switch's per-packet path in C
                    dataplane.attach(node, self._mark_rx)
                elif dataplane.conf_allows_host(conf):  # the host's packet path in C
                    dataplane.attach_host(node, self._mark_rx, kernel_host.plane_args(
                        self.senders.get(i), conf))

                def on_datagram(data, addr, handler=handler):
                    self.last_rx = time.monotonic()
                    handler(data, addr)
                await ep.start(on_datagram)
                if i in self.lane_socks:
                    lane = open_lane(node, conf, self.lane_socks.pop(i))
                    self.lanes.append(lane)
                    await lane.start(partial(on_datagram, handler=lane_handler))
            delay_ns = self._start_delay_ns()
            self.t0_unix = time.time() + delay_ns / 1e9
            self.sched.start_clock(delay_ns)
            at = self.run["start_at_unix"]
            if at is not None and self.late_start_s > 0:   # time 0 its own: on the shared
                for node in self.nodes:                     # clock, the PFC frames' lag
                    node.clock_offset_ps = int((self.t0_unix - at) * 1e12)
            if self.run["fault_origin_file"] is None:
                self._install_faults(0)         # times on the clock just started
            else:
                self._watch_trigger()
            self.watch = self._watchdog()
            for conf, node in zip(self.confs, self.nodes):
                if conf["role"] == "host":
                    for m in conf["messages"]:
                        self.sched.at(m["start_ps"], node.start, _Msg(m))
            self.exit = await self._wait()
        except asyncio.CancelledError:
            self.exit = "cancelled"
            raise
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
            self._write()
            self.sched.close()
            for ep in self.endpoints + self.lanes:
                await ep.close()
            for sock in self.lane_socks.values():
                sock.close()            # bound, never started
            for sender in self.senders.values():
                sender.close()
            for cap, conf in self.captures:
                capture.close_all([cap], conf["pcap"]["dir"], "captures-%s.json" % conf["name"])
        if self.exit == "stalled":
            return EXIT_STALLED
        return 0 if self.complete() else 1

    def _mark_rx(self):
        self.last_rx = time.monotonic()

    def _install_faults(self, origin_ps):
        self.fault_origin_ps = origin_ps
        for conf, node in zip(self.confs, self.nodes):
            install_faults(node, conf, origin_ps)

    def _watch_trigger(self):
        """This process's nodes at an end of the schedule's links: watch what they send
        over them (each node on its own)."""
        groups, packets = [], None
        for conf, node in zip(self.confs, self.nodes):
            mine, n = trigger_ports(node, conf)
            if mine:
                groups.append(mine)
                packets = n
        if groups:
            self.trigger = PacketTrigger(self.sched, groups, packets, self._triggered,
                                         TRIGGER_EVERY_PS)

    def _triggered(self, now):
        claim_origin(self.run["fault_origin_file"], self.t0_unix + now / 1e12,
                     "+".join(c["name"] for c in self.confs))
        self._fault_origin()

    def _fault_origin(self):
        """A schedule triggered by the traffic: install it once the runner has written
        its origin (looked for at every turn of ``_wait``)."""
        if self.fault_origin_ps is None and self.nodes:
            origin = read_origin(self.run["fault_origin_file"])
            if origin is not None:      # a wall-clock instant, on this agent's clock
                if self.trigger is not None:
                    self.trigger.stop()
                self._install_faults(max(0, int((origin - self.t0_unix) * 1e12)))

    def _start_delay_ns(self):
        at = self.run["start_at_unix"]
        delay = (at - time.time()) if at is not None else self.run["start_delay_s"]
        if delay < 0:             # up after the shared time 0: its own start is time 0
            self.late_start_s = round(-delay, 3)
            print("gse agent: %s: warning: started %.3f s after run.start_at_unix; its "
                  "time 0 is its own start" % (self._names(), -delay), file=sys.stderr)
        return max(0, int(delay * 1e9))

    def _names(self):
        return ", ".join(c["name"] for c in self.confs)

    def _host_agents(self):
        return [node.agent for conf, node in zip(self.confs, self.nodes)
                if conf["role"] == "host"]

    def _watchdog(self):
        """The watchdog over this process's hosts, or None (no hosts, or stall_s 0)."""
        agents = self._host_agents()
        if not agents:
            return None
        stall_s = self.run["stall_s"]
        if stall_s is None:
            span = max(default_span_ps(protocol_config(c), True) for c in self.hosts)
        else:
            span = int(round(stall_s * 1e12))
        return StallWatch(span, realtime=True) if span > 0 else None

    def _on_signal(self):
        if not self.stop.done():
            self.stop.set_result("signal")

    def complete(self):
        """Every host of this process has its messages acknowledged and the messages it
        expects delivered (a switch's work is always complete)."""
        if len(self.nodes) < len(self.confs):
            return False
        return all(self._host_complete(conf, node)
                   for conf, node in zip(self.confs, self.nodes) if conf["role"] == "host")

    @staticmethod
    def _host_complete(conf, node):
        return (all(m["msg_id"] in node.sent for m in conf["messages"])
                and all((m["src"], m["msg_id"]) in node.delivered for m in conf["expect"]))

    async def _wait(self):
        run = self.run
        deadline = time.monotonic() + run["timeout_s"]
        done_at = None
        watch = (run["fault_origin_file"] is not None
                 and any(has_faults(c) for c in self.confs))
        look_at = 0.0
        agents = self._host_agents()
        while True:
            now = time.monotonic()
            if now >= deadline:
                return "timeout"
            if watch:
                self._fault_origin()
            if self.watch is not None and now >= look_at:
                look_at = now + self.watch.check_ps / 1e12
                self.stall = look_at_hosts(self.watch, self.sched.now(), agents)
                if self.stall is not None:
                    print("gse agent: %s: error: %s" % (self._names(),
                                                       describe_stall(self.stall)),
                          file=sys.stderr)
                    return "stalled"
            quiet = now - self.last_rx if self.last_rx is not None else None
            if self.hosts and self.complete():
                if done_at is None:
                    done_at = now
                    self._mark_done()
                if (now - done_at >= run["linger_s"] and (quiet is None
                                                          or quiet >= run["linger_s"])
                        and self._all_done()):
                    return "done"
            idle = run["idle_exit_s"]
            if idle is not None and quiet is not None and quiet >= idle:
                return "idle"
            try:
                return await asyncio.wait_for(asyncio.shield(self.stop),
                                              min(POLL_S, deadline - now))
            except asyncio.TimeoutError:
                pass

    def _mark_done(self):
        """Tell the runner (``done_dir``) that this process's hosts are complete."""
        folder = self.run["done_dir"]
        if folder is not None:
            for conf in self.hosts:
                with open(os.path.join(folder, conf["name"]), "w"):
                    pass

    def _all_done(self):
        folder = self.run["done_dir"]
        return folder is None or os.path.exists(os.path.join(folder, ALL_DONE))

    def _write(self):
        now = self.sched.now() if self.sched else 0
        loop = loop_name(asyncio.get_running_loop())
        for i, conf in enumerate(self.confs):
            out = conf["output"]
            node = self.nodes[i] if i < len(self.nodes) else None
            ep = self.endpoints[i] if i < len(self.endpoints) else None
            if out.get("counters"):
                if node is not None:
                    c = node.counters(now)
                else:
                    c = {"node": conf["node"], "name": conf["name"], "kind": conf["kind"],
                         "role": conf["role"], "ports": []}
                lane = getattr(node, "lane", None)
                drops = (kernel_drops_in(conf.get("netns"), [ep.addr] + (
                    [lane.addr] if lane is not None and not lane.closed else []))
                         if ep is not None and not ep.closed else {})
                complete = (node is not None and (conf["role"] != "host"
                                                  or self._host_complete(conf, node)))
                plane = dataplane.counters(node) if node is not None else None
                if plane is not None:   # the switch forwarded on the compiled data plane
                    c["dataplane"] = plane
                plane = dataplane.host_counters(node) if node is not None else None
                if plane is not None:   # the host's packets took the compiled path
                    c["hostplane"] = plane
                if i in self.senders:   # kernel forwarding: what the send sockets did
                    sends = self.senders[i].totals()
                    for key, n in sends.items():
                        c[key] = c.get(key, 0) + n
                    c["kernel_send"] = dict(sends, unsendable=self.senders[i].bad)
                if node is not None and conf["role"] == "host":
                    c["waiting"] = node.agent.waiting()     # its unfinished messages
                    if self.stall is not None:
                        c["stall"] = self.stall
                c.update({"format": COUNTERS_FORMAT, "exit": self.exit or "error",
                          "complete": complete, "elapsed_ps": now,
                          "late_start_s": self.late_start_s,
                          "wall_s": round(time.perf_counter() - self.wall0, 3),
                          "loop": loop, "kernel_drops": sum(drops.values()),
                          "process_nodes": len(self.confs),
                          # the scheduler is the process's: its figures go with the first
                          "cpu_s": round(time.process_time(), 3) if i == 0 else 0.0,
                          "fault_origin_ps": self.fault_origin_ps,
                          "fault_trigger": (self.trigger.stats() if self.trigger is not None
                                            and i == 0 else None),
                          "timer_events": self.sched.fired if self.sched and i == 0 else 0,
                          "timer_late": self.sched.lateness() if self.sched and i == 0
                          else {},
                          "errors": ((self.sched.errors if self.sched and i == 0 else [])
                                     + (ep.errors if ep is not None else [])
                                     + (lane.errors if lane is not None else []))})
                write_json_atomic(out["counters"], c)
            if out.get("records") and conf["role"] == "host" and node is not None:
                rec = node.records()
                rec["format"] = RECORDS_FORMAT
                write_json_atomic(out["records"], rec)


class _Msg:
    __slots__ = ("msg_id", "dst", "size", "start_ps")

    def __init__(self, m):
        self.msg_id = m["msg_id"]
        self.dst = m["dst"]
        self.size = m["size"]
        self.start_ps = m["start_ps"]


def check_together(confs: Sequence[Mapping[str, Any]],
                   wheres: Sequence[str] | None = None) -> None:
    """Nodes of one process must be distinct: two configurations of one node (the same
    ``node`` id or ``name``), or two nodes writing the same output file, would overwrite
    each other's results.  ``ConfigError`` names both files."""
    wheres = wheres or ["config %d" % i for i in range(len(confs))]
    seen: dict[tuple[str, Any], tuple[int, str]] = {}
    for i, (conf, where) in enumerate(zip(confs, wheres)):
        keys = [("node", conf["node"]), ("name", conf["name"])]
        keys += [("output file", path) for path in (conf.get("output") or {}).values()
                 if path]
        for what, value in keys:
            if what == "output file":
                value = os.path.abspath(value)
            other = seen.get((what, value))
            if other is not None and other[0] != i:
                raise ConfigError("%s and %s: both configure %s %r in one process (their "
                                  "results would overwrite each other)"
                                  % (other[1], where, what, value))
            seen.setdefault((what, value), (i, where))


def run_agent(confs: dict[str, Any] | Iterable[dict[str, Any]], loop: str | None = None) -> int:
    """Run one node (a configuration dict) or several in this process (a list of them;
    checked here); returns the exit code."""
    confs = [confs] if isinstance(confs, dict) else list(confs)
    confs = [check_node_config(c) for c in confs]
    check_together(confs)
    for c in confs:
        check_outputs(c)
    agent = Agent(confs)
    return run_async(agent.main, loop or confs[0]["run"]["loop"])


def add_arguments(p):
    p.add_argument("--config", required=True, metavar="NODE.json", action="append",
                   help="the node's configuration (docs/agent-config.md); repeat it to run "
                        "several nodes in this process (each in its 'netns', if given)")
    p.add_argument("--loop", choices=("auto", "asyncio", "uvloop"), default=None,
                   help="event loop (default: the configuration's run.loop)")
    p.add_argument("--timeout-s", type=float, default=None,
                   help="override run.timeout_s (wall-clock bound)")


def cmd_agent(args):
    paths = args.config if isinstance(args.config, list) else [args.config]
    try:
        confs = []
        for path in paths:
            confs.append(load_node_config(path))
            check_outputs(confs[-1], path)
        check_together(confs, paths)
    except ConfigError as exc:
        print("gse agent: error: %s" % exc, file=sys.stderr)
        return 2
    for conf in confs:
        if args.timeout_s is not None:
            conf["run"]["timeout_s"] = args.timeout_s
    try:
        return run_agent(confs, args.loop)
    except (ConfigError, ValueError, OSError) as exc:
        print("gse agent: error: %s: %s" % (", ".join(paths), exc), file=sys.stderr)
        return 2


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="gse agent", description=__doc__.split("\n\n")[0])
    add_arguments(p)
    return cmd_agent(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
