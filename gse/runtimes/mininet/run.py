"""A Mininet run (``gse run --runtime mininet``; ``gse.run`` of a Scenario with
``runtime="mininet"``, through ``gse.api.realtime``): every node of the fabric is a
``gse agent`` process in its own Mininet namespace, linked to its neighbours by veths
(one /31 per link).

    gse run --runtime mininet --k 4 --link-gbps 0.02 --traffic incast --senders 8 --size 100000

    from gse.runtimes.mininet.run import run_mininet
    result = run_mininet(fat_tree(4, link_gbps=0.02), messages, "roce", timeout_s=60)
    result.summary["lost"], result.summary["pfc_pauses"], result.summary["mininet"]

A run: lay the topology out (``gse.runtimes.mininet.fabric.MininetFabric``); write every
node's configuration (``gse.runtimes.udp.config.node_configs``, then each port's neighbour address
replaced by the neighbour's address on that link, every agent binding 0.0.0.0); start
``python -m gse agent --config NODE.json`` in every namespace with a shared time 0
(``run.start_at_unix``) far enough ahead for all of them to have bound their sockets;
wait until every host agent has exited (done: its messages acknowledged, the ones it
expects delivered, then ``linger_s`` quiet) or the wall-clock bound; SIGTERM the switch
agents (they write their counters on the way out); tear the network down; build the
summary of ``gse sim`` from the agents' files (``summarize_agent_outputs``), with a
``mininet`` section: set-up, start, run and tear-down times, exit codes, missing outputs,
and what was left behind (nothing, or it says what).

Agents run with coarse timers (one process per node; they outnumber the cores), 8 MiB
receive buffers, the protocol timers of ``udp_profile`` and the emulated links of
``gse.runtimes.udp.link``; see docs/mininet.md for the rates a machine sustains.
"""

import json
import os
import shutil
import sys
import tempfile
import time
from typing import Any

from gse.metrics.stall import default_span_ps, last_change_ps
from gse.protocols import default_config
from gse.runtimes.mininet.addressing import DEFAULT_IP_BASE
from gse.runtimes.mininet.environment import MininetUnavailable, mininet_unavailable
from gse.runtimes.mininet import kernel_forwarding as kfwd
from gse.runtimes.mininet.fabric import SOCKET_BUFFER_BYTES, MininetFabric
from gse.runtimes.mininet.system import guard, udp_bound, udp_in_datagrams
from gse.runtimes.udp.capture import plan as capture_plan
from gse.runtimes.udp.agent_process import ALL_DONE, EXIT_STALLED
from gse.runtimes.udp.config import (check_protocol, max_datagram, node_configs, pfc_lane_wanted,
                                     slowest_link_gbps, udp_profile, write_node_configs)
from gse.runtimes.udp.faults import read_origin
from gse.runtimes.udp.results import failure_summary, summarize_agent_outputs
from gse.workloads.faults import FaultSchedule, link_name
from gse.workloads.traffic import Message
from topologies.topology import Topology

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AGENT_PORT = 47000
POLL_S = 0.2
TRIGGER_POLL_S = 0.02  # how often the failures' origin is looked for until it is there
SWITCH_STOP_GRACE_S = 5.0
FAITHFUL_GBPS = 0.03   # a port's packet time (4,160 B) must exceed the ~1 ms timer tick
PLACEMENTS = ("node", "tier", "switches", "all")


class MininetRunResult:
    __slots__ = ("summary", "records", "work_dir")

    def __init__(self, summary: dict[str, Any], records: list[Any], work_dir: str | None) -> None:
        self.summary = summary
        self.records = records
        self.work_dir = work_dir        # None when the files were temporary (removed)


def default_start_budget(n_nodes, n_processes=None):
    """Seconds from launching the agents to their shared time 0.

    An agent process takes ~0.2 s of CPU to import, read its configuration and bind (36
    agents of the k=4 Fat-Tree: 7 s of CPU, 2.5-6 s on two cores; the 232 of the pod
    Fat-Tree: 33 s), a further node in the same process (a grouped placement) little, so:
    2 s plus 0.35 s per process and 0.02 s per further node, per core.  Agents not up by
    time 0 are reported (``late_agents``); datagrams sent to them before then are lost and
    recovered like any loss.
    """
    cores = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                else (os.cpu_count() or 1))
    procs = n_nodes if n_processes is None else n_processes
    return round(2.0 + (0.35 * procs + 0.02 * (n_nodes - procs)) / cores, 1)


def placement_groups(topo, placement="node"):
    """The nodes of each agent process (lists of node ids), for ``placement``:

    * ``node``: a process per node (hosts and switches alike), the default;
    * ``tier``: a process per host, and one per switch tier (kind: edge, agg, core, ...);
    * ``switches``: a process per host, one process for every switch;
    * ``all``: one process for the whole fabric (every node still in its own namespace).

    Grouped nodes share a process's event loop and CPU time instead of passing every
    datagram hop between processes; their sockets stay in their own namespaces and their
    datagrams cross the veths as before (``gse.runtimes.udp.netns``)."""
    if placement not in PLACEMENTS:
        raise ValueError("unknown placement %r (known: %s)" % (placement, ", ".join(PLACEMENTS)))
    ids = range(len(topo.nodes))
    hosts = [n for n in ids if topo.nodes[n].kind == "host"]
    switches = [n for n in ids if topo.nodes[n].kind != "host"]
    if placement == "node":
        return [[n] for n in ids]
    if placement == "all":
        return [list(ids)]
    groups = [[h] for h in hosts]
    if placement == "switches":
        return groups + ([switches] if switches else [])
    tiers = {}
    for n in switches:
        tiers.setdefault(topo.nodes[n].kind, []).append(n)
    return groups + list(tiers.values())


def group_name(topo, group):
    """A process's name (its log file's): the node's, or what the group holds."""
    if len(group) == 1:
        return topo.nodes[group[0]].name
    kinds = sorted({topo.nodes[n].kind for n in group})
    if len(kinds) == 1:
        return "tier-%s" % kinds[0]
    return "switches" if "host" not in kinds else "all"


def agent_configs(fabric, messages, protocol, config, seed, loss_rate, corrupt_rate,
                  output_dir, run, port=AGENT_PORT, wire="gse", faults=None, detect_ps=-1,
                  secure_key_file=None):
    """Every node's ``gse agent`` configuration on ``fabric``: the node binds 0.0.0.0:port
    and reaches the neighbour on port p at the neighbour's own address on that link.
    With ``faults`` the switches get their route updates and every port of a failing
    link its timeline, as the port sees its carrier (a switch or NIC knows at once that
    its own port went down: it flushes it and releases PFC pauses across it), while the
    runner takes the veth pair down for real (``link_events``); gray failures exist only
    in the ports (a veth cannot drop a share of packets by itself)."""
    topo = fabric.topo
    lane = port + 1         # where protocol has PFC: every node's PFC lane (PAUSE, RESUME)
    lanes = ([("0.0.0.0", lane)] * len(topo.nodes)
             if pfc_lane_wanted(protocol, config) else None)
    confs = node_configs(topo, messages, protocol, config, seed,
                         [("0.0.0.0", port)] * len(topo.nodes), loss_rate, corrupt_rate,
                         output_dir=output_dir, run=run, wire=wire, faults=faults,
                         detect_ps=detect_ps, secure_key_file=secure_key_file,
                         pfc_lanes=lanes)
    for conf in confs:
        addrs = fabric.port_addresses(conf["node"])
        conf["bind"] = ["0.0.0.0", port]
        conf["interfaces"] = [{"port": p, "intf": intf, "ip": ip, "peer_ip": peer}
                              for p, (intf, ip, peer) in enumerate(addrs)]
        for pc in conf["ports"]:
            pc["peer_addr"] = [addrs[pc["port"]][2], port]
            if "peer_pfc_addr" in pc:
                pc["peer_pfc_addr"] = [addrs[pc["port"]][2], lane]
    return confs


def agent_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def link_events(topo, faults):
    """[(t_ps, link, up)]: the ``ip link set`` the runner does (gray failures excepted)."""
    out = []
    count = {}
    for t, li, action, _, _ in faults.link_events() if faults else ():
        if action == "down":
            count[li] = count.get(li, 0) + 1
            if count[li] == 1:
                out.append((t, li, False))
        elif action == "up":
            count[li] -= 1
            if count[li] == 0:
                out.append((t, li, True))
    return out


def run_mininet(topo: Topology, messages: list[Message], protocol: str = "gse",
                config: Any = None, seed: int = 1, loss_rate: float = 0.0,
                corrupt_rate: float = 0.0, timeout_s: float = 120.0, loop: str = "auto",
                slack_ps: int | None = None, out_dir: str | None = None,
                start_budget_s: float | None = None, linger_s: float = 1.0,
                ip_base: str = DEFAULT_IP_BASE, port: int = AGENT_PORT, progress: Any = None,
                label: str | None = None, wire: str = "gse", pcap: dict[str, Any] | None = None,
                placement: str = "node", precise_timers: bool = False,
                faults: FaultSchedule | None = None, detect_ps: int = -1,
                stall_s: float | None = None, secure_key_file: str | None = None,
                during: Any = None, forwarding: str = "agents") -> MininetRunResult:
    """One run of ``messages`` over ``topo`` laid out in Mininet; returns a
    ``MininetRunResult`` (summary in the schema of ``gse sim``, per-message records).

    ``faults`` (``gse.workloads.faults.FaultSchedule``, times on the agents' shared clock)
    takes links down and up for real, ``ip link set`` on both ends of the veth pair, at
    their times (the agents' ports see their carrier go, ``agent_configs``); the switch
    agents replace their routes ``detect_ps`` after each change (-1: never), as their
    configuration says; the hosts' transports see only loss.  A schedule triggered by the
    traffic (``faults.after_packets``) starts when an end of its trigger link has sent
    that many packets: that agent writes the origin (``run.fault_origin_file``), the
    other agents and the runner take their failures from there.

    ``timeout_s`` bounds the traffic (from time 0); the whole run, set-up and tear-down
    included, is bounded too (``guard``).  ``out_dir`` keeps every agent's configuration,
    log, counters and records (``<out_dir>/agents/``) and the network's state file;
    without it they go to a temporary folder that is removed.  ``progress(dict)`` is
    called about five times a second.  SIGTERM raises ``Terminated`` after tearing down.
    ``pcap``: ``{"dir", "spec", "budget", "snaplen"}``: each agent captures its chosen
    ports (``gse.runtimes.udp.capture``, docs/pcap.md).
    ``placement`` (``placement_groups``) says which nodes share an agent process;
    ``precise_timers`` has the agents wake for their timers to the microsecond
    (``gse.runtimes.udp.io.Scheduler``) instead of sleeping at least a millisecond.
    ``stall_s``: the host agents' no-progress watchdog (``run.stall_s``; 0: off; None:
    4 x ``rto_max_ps`` plus the fault schedule's last change plus the start budget: a
    switch agent that comes up late, as on a loaded machine, leaves the hosts that
    started on time nothing to talk to, which is not a stuck run).  Once a host agent has
    exited stalled the run cannot complete: the others get one more span to finish, then
    the run ends ("stalled"), and the summary's ``stall`` says what the hosts' unfinished
    messages waited for.
    ``secure_key_file``: authenticated packets (``--secure``, docs/hardening.md), the
    key file read by every agent in its namespace (one file system).  ``during(fabric,
    confs, start_at)`` starts programs of the caller's in the nodes' namespaces just
    before the agents (``experiments/secure_attacks_mininet.py``'s forger) and returns
    their ``Popen``s, which are stopped with the switches.
    ``forwarding="kernel"``: no switch agent, the switch namespaces forward in the kernel
    (``gse.runtimes.mininet.kernel_forwarding``: GSE only; the summary's ``forwarding``
    says what it does not model).
    """
    check_protocol(protocol)
    kfwd.check_forwarding(forwarding, protocol, wire, secure_key_file, faults, loss_rate,
                          corrupt_rate, pcap)
    kernel = forwarding == "kernel"
    reason = mininet_unavailable()
    if reason:
        raise MininetUnavailable(reason)
    if not messages:
        raise ValueError("the traffic has no messages")
    for m in messages:
        if not (0 <= m.src < len(topo.hosts) and 0 <= m.dst < len(topo.hosts)):
            raise ValueError("message %d: host %d->%d but the topology has hosts 0..%d"
                             % (m.msg_id, m.src, m.dst, len(topo.hosts) - 1))
    cfg = config if config is not None else udp_profile(default_config(protocol),
                                                        link_gbps=slowest_link_gbps(topo))
    n = len(topo.nodes)
    groups = placement_groups(topo, placement)
    if kernel:      # no switch agent: only the host processes start
        groups = kfwd.host_groups(topo, groups)
    budget = (default_start_budget(n, len(groups)) if start_budget_s is None
              else start_budget_s)
    work = os.path.abspath(out_dir) if out_dir else tempfile.mkdtemp(prefix="gse-mininet-")
    agents = os.path.join(work, "agents")
    os.makedirs(agents, exist_ok=True)
    bound = 60.0 + 0.1 * n + 2 * budget + timeout_s + linger_s + SWITCH_STOP_GRACE_S
    fabric = MininetFabric(topo, ip_base, state_path=os.path.join(work, "fabric.json"))
    run = _Run(fabric, protocol, progress, label)
    run.placement = placement
    run.precise = bool(precise_timers)
    if stall_s is None:
        stall_s = round((default_span_ps(cfg, True) + last_change_ps(faults, detect_ps)) / 1e12
                        + budget, 3)
    run.stall_grace_s = stall_s or None
    t_all = time.perf_counter()
    try:
        with guard(bound):
            try:
                run.phase("building")
                fabric.start()
                if kernel:
                    kf_setup = kfwd.set_up(fabric, protocol, cfg,
                                           max_datagram(wire, cfg.mtu, False), seed)
                run_opts = {"timeout_s": 0.0, "loop": loop, "precise_timers": precise_timers,
                            "rcvbuf_bytes": SOCKET_BUFFER_BYTES, "linger_s": linger_s}
                if slack_ps is not None:
                    run_opts["slack_ps"] = int(slack_ps)
                run_opts["stall_s"] = stall_s
                t_launch = time.time()
                start_at = t_launch + budget
                run_opts["start_at_unix"] = start_at
                run_opts["timeout_s"] = round(budget + timeout_s, 3)
                run_opts["done_dir"] = run.done_dir = os.path.join(agents, "done")
                shutil.rmtree(run.done_dir, ignore_errors=True)     # a previous run's
                os.makedirs(run.done_dir)
                if faults and faults.after_packets is not None:
                    run_opts["fault_origin_file"] = run.trigger_file = os.path.join(
                        agents, "fault-origin.json")
                    if os.path.exists(run.trigger_file):
                        os.remove(run.trigger_file)          # a previous run's
                    run.trigger = faults.after_packets
                confs = agent_configs(fabric, messages, protocol, cfg, seed, loss_rate,
                                      corrupt_rate, agents, run_opts, port, wire, faults,
                                      detect_ps, secure_key_file)
                if kernel:
                    confs = kfwd.hosts_only(topo, confs, fabric.port_addresses, port)
                if pcap:
                    os.makedirs(pcap["dir"], exist_ok=True)
                    chosen = capture_plan(topo, pcap)
                    for conf in confs:
                        if conf["node"] in chosen:
                            conf["pcap"] = chosen[conf["node"]]
                for group in groups:
                    if len(group) > 1:    # sockets opened in each node's own namespace
                        for nid in group:
                            confs[nid]["netns"] = fabric.nodes[nid].pid
                paths = write_node_configs(confs, os.path.join(agents, "conf"))
                run.link_events = link_events(topo, faults)
                if during is not None:            # before the agents: up by time 0
                    run.extra = list(during(fabric, confs, start_at) or ())
                run.launch(paths, groups, agents, start_at, port)
                run.wait(start_at, start_at + timeout_s + budget + linger_s + 5.0)
                if kernel:                  # the namespaces' counters, before they go
                    kf_stats = kfwd.switch_stats(fabric)
            finally:
                fabric.stop()
        run.phase("collecting")
        summary, records = _summarize(topo, messages, cfg, protocol, seed, confs, run, fabric,
                                      budget, ip_base, port, faults, detect_ps)
        summary["mininet"]["total_s"] = round(time.perf_counter() - t_all, 3)
        summary["mininet"]["forwarding"] = forwarding
        if kernel:
            kfwd.label_summary(summary, kf_setup, kf_stats)
        if out_dir:
            summary["mininet"]["work_dir"] = work
    finally:
        run.close()
        if not out_dir:
            shutil.rmtree(work, ignore_errors=True)
    return MininetRunResult(summary, records, work if out_dir else None)


class _Run:
    """The agent processes of one run: launch, watch, stop; the progress line's numbers.
    Process ``g`` runs the nodes of ``groups[g]`` (``placement_groups``)."""

    def __init__(self, fabric, protocol, progress, label):
        self.fabric = fabric
        self.protocol = protocol
        self.progress = progress
        self.label = label or protocol
        self.groups = []           # g -> node ids of process g
        self.procs = {}            # g -> Popen
        self.exit_at = {}          # g -> unix time of exit
        self.ready_s = None
        self.late = []
        self.end = "not run"
        self.wall_s = 0.0
        self.t_launch = None
        self.start_at = None
        self.stage = "starting"
        self.datagrams = 0
        self.port = AGENT_PORT
        self.agents_dir = None
        self.placement = "node"
        self.precise = False
        self.link_events = []      # (t_ps, link, up) still to do
        self.links_done = []       # (t_ps, link, up, seconds late, error) done
        self.done_dir = None       # hosts mark their work complete here (run.done_dir)
        self.all_done = False
        self.trigger = None        # packets: a schedule the traffic starts (its origin file)
        self.trigger_file = None
        self.origin_s = 0.0        # the link events' origin, after time 0 (None: not yet)
        self.stall_grace_s = None  # after a host agent stalled, the others' last span
        self.stalled_at = None
        self.extra = []            # the caller's programs (run_mininet's ``during``)

    def phase(self, name):
        self.stage = name
        self._report(force=True)

    def launch(self, paths, groups, agents, start_at, port):
        self.port = port
        self.t_launch = time.time()
        self.start_at = start_at
        self.groups = [list(g) for g in groups]
        self.agents_dir = agents
        env = agent_env()
        for g, group in enumerate(self.groups):
            argv = [sys.executable, "-m", "gse.runtimes.udp.agent_process"]
            for nid in group:
                argv += ["--config", paths[nid]]
            self.procs[g] = self.fabric.popen(group[0], argv, log_path=self.log_path(g),
                                              env=env, cwd=ROOT)
        self.stage = "starting"

    def log_path(self, g):
        return os.path.join(self.agents_dir, group_name(self.fabric.topo, self.groups[g])
                            + ".log")

    def host_groups(self):
        kinds = self.fabric.topo.nodes
        return [g for g in self.procs if any(kinds[n].kind == "host" for n in self.groups[g])]

    def _bound(self, nid):
        return udp_bound(self.fabric.nodes[nid].pid, self.port)

    def _look_at_trigger(self, start_at):
        """Has an agent written the origin of the failures?  Then time them from it."""
        origin = read_origin(self.trigger_file)
        if origin is not None:
            self.origin_s = max(0.0, origin - start_at)

    def _look_at_hosts(self):
        """Every host complete?  Then let them go (``ALL``): until then each stays, to
        answer its peers' late retransmissions with the final ACK."""
        nodes = self.fabric.topo.nodes
        marked = set(os.listdir(self.done_dir))
        if all(nodes[n].name in marked for g in self.host_groups() for n in self.groups[g]
               if nodes[n].kind == "host"):
            with open(os.path.join(self.done_dir, ALL_DONE), "w"):
                pass
            self.all_done = True

    def trigger_stats(self):
        if self.trigger is None:
            return None
        by = None
        if self.origin_s is not None:
            with open(self.trigger_file) as f:
                by = json.load(f).get("by")
        return {"fired_us": None if self.origin_s is None else round(self.origin_s * 1e6, 1),
                "by": by}

    def wait(self, start_at, deadline):
        if self.trigger is not None:
            self.origin_s = None
        hosts = self.host_groups()
        pending_ready = {nid for group in self.groups for nid in group}
        owner = {nid: g for g, group in enumerate(self.groups) for nid in group}
        while True:
            now = time.time()
            for g, p in self.procs.items():
                if g not in self.exit_at and p.poll() is not None:
                    self.exit_at[g] = now
                    if p.returncode == 2:
                        raise RuntimeError("agent %s: configuration refused: %s"
                                           % (group_name(self.fabric.topo, self.groups[g]),
                                              self.log_tail(g)))
            if pending_ready:
                pending_ready = {nid for nid in pending_ready
                                 if owner[nid] not in self.exit_at and not self._bound(nid)}
                if not pending_ready:
                    self.ready_s = now - self.t_launch
                elif now >= start_at and not self.late:
                    self.late = sorted(self.fabric.topo.nodes[nid].name
                                       for nid in pending_ready)
            if now >= start_at:
                self.stage = "running"
            if self.origin_s is None:
                self._look_at_trigger(start_at)
            origin = None if self.origin_s is None else start_at + self.origin_s
            while (origin is not None and self.link_events
                   and now >= origin + self.link_events[0][0] / 1e12):
                t, li, up = self.link_events.pop(0)
                error = self.fabric.set_link(li, up)
                late = time.time() - (origin + t / 1e12)
                self.links_done.append((t, li, up, round(late, 3), error))
            if not self.all_done and self.done_dir is not None:
                self._look_at_hosts()
            done = [g for g in hosts if g in self.exit_at]
            stalled = any(self.procs[g].returncode == EXIT_STALLED for g in done)
            if stalled and self.stalled_at is None:
                self.stalled_at = now
            if len(done) == len(hosts):
                codes = [self.procs[g].returncode for g in hosts]
                self.end = ("done" if all(c == 0 for c in codes) else
                            "stalled" if stalled else "incomplete")
                break
            if stalled and now - self.stalled_at >= (self.stall_grace_s or 0.0):
                self.end = "stalled"        # the run cannot complete: no more waiting
                break
            if now >= deadline:
                self.end = "timeout"
                break
            self._report()
            nap = POLL_S
            if self.origin_s is None:
                nap = TRIGGER_POLL_S
            elif self.link_events:
                nap = min(nap, max(0.0, origin + self.link_events[0][0] / 1e12 - now))
            time.sleep(nap)
        last = max((self.exit_at[g] for g in hosts if g in self.exit_at),
                   default=time.time())
        self.wall_s = max(0.0, min(last, time.time()) - start_at)
        self.stage = "stopping"
        self._report(force=True)
        # switches (and, after a timeout, anything still running): SIGTERM, they write
        self.fabric.terminate_programs([p for p in list(self.procs.values()) + self.extra
                                        if p.poll() is None], SWITCH_STOP_GRACE_S)
        for g in self.procs:
            self.exit_at.setdefault(g, time.time())

    def log_tail(self, g, lines=3):
        try:
            with open(self.log_path(g), errors="replace") as f:
                return " | ".join(f.read().strip().splitlines()[-lines:])
        except OSError:
            return "(no log)"

    _last_report = 0.0

    def _report(self, force=False):
        if self.progress is None:
            return
        now = time.time()
        if not force and now - self._last_report < 0.2:
            return
        self._last_report = now
        hosts = self.host_groups()
        datagrams = self.datagrams
        if self.fabric.started and not self.fabric.stopped and self.procs:
            datagrams = self.datagrams = sum(udp_in_datagrams(h.pid)
                                             for h in self.fabric.nodes)
        nodes = [nid for group in self.groups for nid in group]
        ready = (len(nodes) if self.ready_s is not None else
                 sum(1 for g, group in enumerate(self.groups) for nid in group
                     if g in self.procs and g not in self.exit_at
                     and self.procs[g].poll() is None and self._bound(nid)))
        self.progress({"label": self.label, "stage": self.stage,
                       "t_s": (now - self.start_at) if self.start_at else 0.0,
                       "agents": len(nodes), "ready": ready,
                       "hosts": len(hosts),
                       "hosts_done": sum(1 for g in hosts if g in self.exit_at),
                       "datagrams": datagrams})

    def close(self):
        if self.progress is not None:
            self.progress(None)            # end of the progress line


def _summarize(topo, messages, cfg, protocol, seed, confs, run, fabric, budget, ip_base,
               port, faults=None, detect_ps=-1):
    counter_files, record_files, missing = [], [], []
    for conf in confs:
        for key in ("counters", "records"):
            path = conf["output"].get(key)
            if not path:
                continue
            if os.path.exists(path):
                (counter_files if key == "counters" else record_files).append(path)
            else:
                missing.append(os.path.basename(path))
    summary, records = summarize_agent_outputs(
        topo, messages, cfg, counter_files, record_files, protocol, seed, run.wall_s,
        {"runtime": "mininet"})
    counters = []
    for path in counter_files:
        with open(path) as f:
            counters.append(json.load(f))
    # a process's scheduler is reported with its first node: weigh by its events
    late = [(c.get("timer_late"), c.get("timer_events", 0)) for c in counters
            if c.get("timer_late")]
    events = sum(n for _, n in late)
    errors = [e for c in counters for e in c.get("errors", [])]
    udp = summary["udp"]
    udp.update({"loop": sorted({c.get("loop", "?") for c in counters}), "end": run.end,
                "addressing": "mininet: one /31 per link, agents bind 0.0.0.0:%d" % port,
                "nodes": len(topo.nodes),
                "timer_late": {"mean_us": round(sum(x.get("mean_us", 0) * n for x, n in late)
                                                / max(1, events), 1),
                               "max_us": max((x.get("max_us", 0) for x, _ in late), default=0),
                               "over_1ms": sum(x.get("over_1ms", 0) for x, _ in late)},
                "precise_timers": run.precise, "errors": errors[:20],
                "cpu_s": round(sum(c.get("cpu_s", 0.0) for c in counters), 3)})
    codes = {}
    for p in run.procs.values():
        key = str(p.returncode)
        codes[key] = codes.get(key, 0) + 1
    summary["end"] = run.end
    summary["complete"] = run.end == "done"
    summary["mininet"] = {
        "nodes": len(topo.nodes), "links": len(topo.links), "ip_base": ip_base, "port": port,
        "setup_s": _r(fabric.setup_s), "start_budget_s": budget,
        "agents_ready_s": _r(run.ready_s), "late_agents": run.late,
        "run_s": _r(run.wall_s), "teardown_s": _r(fabric.teardown_s),
        "placement": run.placement, "processes": len(run.procs),
        "end": run.end, "exit_codes": codes, "missing_outputs": missing,
        "left_behind": fabric.left_behind(), "fabric_errors": fabric.errors,
    }
    if faults:
        trigger = run.trigger_stats()
        if trigger is not None:     # what the trigger link's ends saw (the largest count)
            seen = [c["fault_trigger"]["packets_seen"] for c in counters
                    if c.get("fault_trigger")]
            trigger["packets_seen"] = max(seen) if seen else None
        failure_summary(summary, topo, faults, counters, detect_ps, trigger)
        summary["failures"]["ip_link"] = [
            {"t_us": t / 1e6, "link": link_name(topo, li), "up": up, "late_s": late,
             "error": error} for t, li, up, late, error in run.links_done]
        summary["failures"]["ip_link_not_done"] = len(run.link_events)
    return summary, records


def _r(x):
    return None if x is None else round(x, 3)
