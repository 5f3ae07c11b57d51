"""Link failures and route updates in the UDP runtimes, as a node's configuration says.

The schedule (``gse.workloads.faults``) is turned into configuration by
``gse.runtimes.udp.config.node_configs``: each port of a failing link gets its timeline
(``faults``: ``[t_ps, "down" | "up" | "gray", drop fraction]``), each switch the changes of
its next-hop table and when the fabric learns them (``route_updates``: ``[t_ps,
[[host, [ports]], ...]]``).  ``install(driver, conf)`` puts both on the node's scheduler,
with times on the run's clock (time 0 is when the messages start):

* a port whose link goes **down** loses what waits in its queue (``queued``) and what it
  has put on the emulated wire but not yet sent (``in_flight``), releases PFC pauses across
  the link, and from then on drops what is routed to it or sent on it (``black_holed``);
  **up** ends that; **gray** drops the given share of what it sends (``gray``);
* a switch replaces the rows of its next-hop table as ``route_updates`` says.

In Mininet the links also fail for real (``ip link set ... down`` on the veth pair, by
the runner); the ports' timelines then stand for what a port sees of its own carrier.
The switches get ``route_updates`` as a routing protocol would give them.  Agents learn
nothing else: a host's transport sees losses and timeouts.

A schedule triggered by the traffic (``FaultSchedule.after_packets``) is installed only
when its trigger fires, with its times counted from that origin: both ports of each of
its links carry ``trigger_packets``, and a ``PacketTrigger`` fires once a node has sent
that many packets over its such ports.  In one process (``gse run --runtime udp``) it
installs every node's failures at once; among agent processes (Mininet) the agent whose
trigger fired writes the origin -- a wall-clock instant -- to the file that
``run.fault_origin_file`` names (``claim_origin``: the first writer wins), where the
other agents and the runner read it (``read_origin``) and place it on their own clocks.
"""

import json
import os
import random

from gse.wire.packet import PRIO_DATA, RESUME

CAUSES = ("in_flight", "queued", "black_holed", "gray")


class LinkFault:
    """The failure state of one emulated port (one direction of a link)."""

    __slots__ = ("port", "down", "downs", "gray", "rng", "in_flight", "queued",
                 "black_holed", "gray_drops", "events")

    def __init__(self, port, seed):
        self.port = port
        self.down = False
        self.downs = 0                  # entries holding the link down
        self.gray = 0.0
        self.rng = random.Random("%s/gray/%d/%d" % (seed, port.node, port.port))
        self.in_flight = self.queued = self.black_holed = self.gray_drops = 0
        self.events = 0

    def drops(self):
        """The port finished serialising a packet: is it lost on the link?"""
        if self.down:
            self.black_holed += 1
            return True
        if self.gray and self.rng.random() < self.gray:
            self.gray_drops += 1
            return True
        return False

    def event(self, t, item):
        action, value = item
        self.events += 1
        if action == "gray":
            self.gray = value
        elif action == "down":
            self.downs += 1
            if self.downs == 1:
                self.down = True
                self._fail(self.port.sched.now())
        elif action == "up":
            self.downs -= 1
            if self.downs == 0:
                self.down = False

    def _fail(self, now):
        port = self.port
        pfc = port.pfc
        for pkt in port.queue.flush():
            port.raw.pop(id(pkt), None)
            if pfc is not None and pkt.prio == PRIO_DATA and pfc.on_dequeue(pkt.ingress,
                                                                            pkt.size):
                port.owner.send_pfc(pkt.ingress, RESUME, now)
            self.queued += 1
        self.in_flight += len(port.wire)
        port.wire.clear()
        if port.queue.paused:
            port.resume(now)     # its RESUME can no longer come; do not wait out the quanta
        if pfc is not None and pfc.pausing[port.port]:
            pfc.pausing[port.port] = 0

    def stats(self):
        return {"in_flight": self.in_flight, "queued": self.queued,
                "black_holed": self.black_holed, "gray": self.gray_drops,
                "events": self.events}


class RouteUpdates:
    """A switch's next-hop table changing as the fabric learns of failures.

    In fabric mode the table is extended with a row per leaf, routed as the leaf's first
    host (``switchmodel.fabric_plan``): a change to that host's row is the leaf's too, and
    a leaf's VOQs start new containers on the new paths, as the simulation's
    ``gse.runtimes.sim.faults`` does (``_route_event``)."""

    __slots__ = ("switch", "applied", "entries", "leaf_rows", "agent")

    def __init__(self, switch, leaf_rows=None, agent=None):
        self.switch = switch
        self.applied = 0
        self.entries = 0
        self.leaf_rows = leaf_rows or {}   # host -> the leaves routed as that host
        self.agent = agent                 # a fabric leaf's FabricLeaf, else None

    def apply(self, t, rows):
        hops = self.switch.next_hops
        node = self.switch.node
        for host, ports in rows:
            hops[host] = row = tuple(ports)
            for leaf in self.leaf_rows.get(host, ()):
                if leaf != node:
                    hops[leaf] = row
        voqs = getattr(self.agent, "voqs", None)
        if voqs:
            for voq in voqs.values():
                voq.cont_left = 0
        self.applied += 1
        self.entries += len(rows)


def leaf_rows(conf):
    """host -> the leaves whose row of ``conf``'s extended table is that host's (fabric
    mode: a leaf is routed as its first host); empty outside fabric mode."""
    fabric = conf.get("fabric")
    if not fabric:
        return {}
    rows = {}
    seen = set()
    for host, leaf in enumerate(fabric["leaf_of"]):
        if leaf not in seen:
            seen.add(leaf)
            rows.setdefault(host, []).append(leaf)
    return rows


def install(driver, conf, origin_ps=0):
    """Schedule the failures of ``conf``'s ports and its route updates on ``driver``,
    their times counted from ``origin_ps`` on the run's clock (0: its time 0).

    Call it once the run's clock has started (``Scheduler.start_clock``): the times are
    on that clock, and an event scheduled before it would be measured from the wrong
    origin (it could fire while the node is still starting)."""
    sched = driver.sched
    seed = conf["seed"]
    for pc, port in zip(conf["ports"], driver.ports):
        timeline = pc.get("faults")
        if timeline:
            fault = port.fault = LinkFault(port, seed)
            for t, action, value in timeline:
                sched.at(origin_ps + t, fault.event, (action, value))
    widths = (conf.get("fabric") or {}).get("width_updates")
    agent = getattr(driver, "agent", None)
    if widths and hasattr(agent, "set_widths"):     # a fabric leaf: what it learns too
        for t, rows in widths:
            sched.at(origin_ps + t, _set_widths, (agent, rows))
    updates = conf.get("route_updates")
    if updates:
        route = driver.route_updates = RouteUpdates(driver.switch, leaf_rows(conf),
                                                    getattr(driver, "agent", None))
        for t, rows in updates:
            sched.at(origin_ps + t, route.apply, rows)


def has_faults(conf):
    """Does ``conf`` give its node failures or route updates to install?"""
    return (bool(conf.get("route_updates")) or any(pc.get("faults") for pc in conf["ports"])
            or bool((conf.get("fabric") or {}).get("width_updates")))


def _set_widths(_t, arg):
    """A fabric leaf learns the live paths beyond its uplinks (``FabricLeaf.set_widths``)."""
    agent, rows = arg
    agent.set_widths({host: tuple(w) for host, w in rows})


def trigger_ports(driver, conf):
    """``driver``'s ports that watch for a triggered schedule, and the packet count."""
    ports = [(port, pc["trigger_packets"]) for pc, port in zip(conf["ports"], driver.ports)
             if pc.get("trigger_packets")]
    return [p for p, _ in ports], (ports[0][1] if ports else None)


def claim_origin(path, origin_unix, who):
    """Write the origin (``{"origin_unix", "by"}``) unless someone already has: the file
    is linked into place, which fails if it exists, so the first trigger wins."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump({"origin_unix": origin_unix, "by": who}, f)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        os.remove(tmp)


def read_origin(path):
    """The origin written by ``claim_origin`` (a wall-clock instant, so that an agent whose
    clock started late still fails its links when the others do), or None while none is."""
    try:
        with open(path) as f:
            origin = json.load(f)["origin_unix"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return float(origin) if isinstance(origin, (int, float)) and origin > 0 else None


class PacketTrigger:
    """Fires ``fire(now)`` once the ports of one of ``groups`` (a node's ends of the
    schedule's links) have sent ``packets`` packets, looked at every ``every_ps`` of the
    run's clock."""

    __slots__ = ("sched", "groups", "packets", "fire", "every_ps", "fired_ps", "seen")

    def __init__(self, sched, groups, packets, fire, every_ps=1_000_000_000):
        self.sched = sched
        self.groups = groups
        self.packets = packets
        self.fire = fire
        self.every_ps = every_ps
        self.fired_ps = None
        self.seen = 0
        sched.at(sched.now(), self._look, None)

    def _look(self, t, _arg):
        if self.fired_ps is not None:
            return
        self.seen = max(sum(p.queue.counters.tx_packets for p in g) for g in self.groups)
        now = self.sched.now()
        if self.seen >= self.packets:
            self.fired_ps = now
            self.fire(now)
        else:
            self.sched.at(now + self.every_ps, self._look, None)

    def stop(self):
        """Another process's trigger fired first: stop looking."""
        if self.fired_ps is None:
            self.fired_ps = -1

    def stats(self):
        return {"fired_us": None if self.fired_ps is None or self.fired_ps < 0
                else self.fired_ps / 1e6, "packets_seen": self.seen}


def fault_totals(node_counters):
    """Packets the failures cost, by cause, summed over every port of every node."""
    total = dict.fromkeys(CAUSES, 0)
    for c in node_counters:
        for p in c.get("ports", ()):
            f = p.get("faults")
            if f:
                for cause in CAUSES:
                    total[cause] += f[cause]
    return total
