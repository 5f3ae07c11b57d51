"""``gse agent --config NODE.json``: one host or switch of a fabric, over real UDP.

The program that the Mininet runtime starts in every node's namespace, and that a
deployment on real machines starts on every machine.  It binds the node's own address,
builds the node from its configuration (``docs/agent-config.md``), sends the host's
messages from time 0 on, and runs until

* a host: its messages are all acknowledged and the messages it expects all delivered,
  and then ``linger_s`` passed without a datagram (late retransmissions still get their
  ACK from a lingering receiver) -- exit "done";
* ``idle_exit_s`` (if set) passed without a datagram after the first -- exit "idle";
* SIGTERM or SIGINT -- exit "signal";
* ``timeout_s`` of wall time -- exit "timeout".

In every case it writes its counters (and a host its per-message records) as JSON before
it exits, closes its socket, and returns 0 if its own work is complete (a switch's always
is), 1 if not.  Configuration errors exit with 2 and one line naming the field.
"""

import argparse
import asyncio
import signal
import sys
import time

from gse.config import ConfigError
from gse.runtimes.udp.config import (check_node_config, check_outputs, load_node_config,
                                     protocol_config, write_json_atomic)
from gse.runtimes.udp.io import (Endpoint, Scheduler, kernel_drops, loop_name, open_udp_socket,
                                 run_async)
from gse.runtimes.udp import capture
from gse.runtimes.udp.build import build_node

COUNTERS_FORMAT = "gse-agent-counters/1"
RECORDS_FORMAT = "gse-agent-records/1"
POLL_S = 0.05


class Agent:
    """One node's life: open, start, wait for an end condition, write, close."""

    def __init__(self, conf):
        self.conf = conf
        self.run = conf["run"]
        self.sched = None
        self.endpoint = None
        self.node = None
        self.capture = None       # --pcap: gse.runtimes.udp.capture.NodeCapture
        self.exit = None
        self.stop = None
        self.wall0 = time.perf_counter()
        self.last_rx = None
        self.expect = {(m["src"], m["msg_id"]) for m in conf.get("expect", ())}
        self.my_messages = {m["msg_id"] for m in conf.get("messages", ())}

    async def main(self):
        loop = asyncio.get_running_loop()
        conf = self.conf
        self.stop = loop.create_future()
        installed = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, self._on_signal)
                installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass                # not the main thread: the caller handles signals
        self.sched = Scheduler(loop, self.run["precise_timers"])
        try:
            ip, port = conf["bind"]
            sock = open_udp_socket(ip, port, self.run["rcvbuf_bytes"],
                                   "node %r" % conf["name"])
        except BaseException:
            for sig in installed:
                loop.remove_signal_handler(sig)
            raise
        self.endpoint = Endpoint(sock, conf["name"])
        try:
            agent_cfg = protocol_config(conf) if conf["role"] == "host" else None
            self.node = build_node(conf, self.sched, self.endpoint, agent_cfg)
            handler = self.node.datagram
            if conf.get("pcap"):            # --pcap: this node's chosen ports
                self.capture = capture.attach(self.node, conf["pcap"])
                handler = self.capture.datagram

            def on_datagram(data, addr):
                self.last_rx = time.monotonic()
                handler(data, addr)
            await self.endpoint.start(on_datagram)
            self.sched.start_clock(self._start_delay_ns())
            if conf["role"] == "host":
                for m in conf["messages"]:
                    self.sched.at(m["start_ps"], self.node.start, _Msg(m))
            self.exit = await self._wait()
        except asyncio.CancelledError:
            self.exit = "cancelled"
            raise
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
            self._write()
            self.sched.close()
            await self.endpoint.close()
            if self.capture is not None:
                capture.close_all([self.capture], conf["pcap"]["dir"],
                                  "captures-%s.json" % conf["name"])
        return 0 if self.complete() else 1

    def _start_delay_ns(self):
        at = self.run["start_at_unix"]
        delay = (at - time.time()) if at is not None else self.run["start_delay_s"]
        return max(0, int(delay * 1e9))

    def _on_signal(self):
        if not self.stop.done():
            self.stop.set_result("signal")

    def complete(self):
        node = self.node
        if node is None:
            return False
        if self.conf["role"] != "host":
            return True
        return (all(mid in node.sent for mid in self.my_messages)
                and all(key in node.delivered for key in self.expect))

    async def _wait(self):
        run = self.run
        deadline = time.monotonic() + run["timeout_s"]
        done_at = None
        while True:
            now = time.monotonic()
            if now >= deadline:
                return "timeout"
            quiet = now - self.last_rx if self.last_rx is not None else None
            if self.conf["role"] == "host" and self.complete():
                done_at = done_at or now
                if now - done_at >= run["linger_s"] and (quiet is None
                                                          or quiet >= run["linger_s"]):
                    return "done"
            idle = run["idle_exit_s"]
            if idle is not None and quiet is not None and quiet >= idle:
                return "idle"
            try:
                return await asyncio.wait_for(asyncio.shield(self.stop),
                                              min(POLL_S, deadline - now))
            except asyncio.TimeoutError:
                pass

    def _write(self):
        conf = self.conf
        out = conf["output"]
        node = self.node
        now = self.sched.now() if self.sched else 0
        if out.get("counters"):
            if node is not None:
                c = node.counters(now)
            else:
                c = {"node": conf["node"], "name": conf["name"], "kind": conf["kind"],
                     "role": conf["role"], "ports": []}
            ep = self.endpoint
            drops = kernel_drops([ep.addr]) if ep is not None and not ep.closed else {}
            c.update({"format": COUNTERS_FORMAT, "exit": self.exit or "error",
                      "complete": self.complete(), "elapsed_ps": now,
                      "wall_s": round(time.perf_counter() - self.wall0, 3),
                      "loop": loop_name(asyncio.get_running_loop()),
                      "kernel_drops": sum(drops.values()),
                      "timer_events": self.sched.fired if self.sched else 0,
                      "timer_late": self.sched.lateness() if self.sched else {},
                      "errors": (self.sched.errors if self.sched else [])
                      + (ep.errors if ep is not None else [])})
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


def run_agent(conf, loop=None):
    """Run one node from a configuration dict (checked here); returns the exit code."""
    conf = check_node_config(conf)
    check_outputs(conf)
    agent = Agent(conf)
    return run_async(agent.main, loop or conf["run"]["loop"])


def add_arguments(p):
    p.add_argument("--config", required=True, metavar="NODE.json",
                   help="the node's configuration (docs/agent-config.md)")
    p.add_argument("--loop", choices=("auto", "asyncio", "uvloop"), default=None,
                   help="event loop (default: the configuration's run.loop)")
    p.add_argument("--timeout-s", type=float, default=None,
                   help="override run.timeout_s (wall-clock bound)")


def cmd_agent(args):
    try:
        conf = load_node_config(args.config)
        check_outputs(conf, args.config)
    except ConfigError as exc:
        print("gse agent: error: %s" % exc, file=sys.stderr)
        return 2
    if args.timeout_s is not None:
        conf["run"]["timeout_s"] = args.timeout_s
    try:
        return run_agent(conf, args.loop)
    except (ConfigError, ValueError, OSError) as exc:
        print("gse agent: error: %s: %s" % (args.config, exc), file=sys.stderr)
        return 2


def main(argv=None):
    p = argparse.ArgumentParser(prog="gse agent", description=__doc__.split("\n\n")[0])
    add_arguments(p)
    return cmd_agent(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
