"""Link and switch failures in the simulation: the schedule played on the event queue.

``FaultInjector(net, schedule, detect_ps, seed)`` (``gse.workloads.faults`` makes the
schedule) hangs a ``PortFault`` on both ports of every link the schedule touches, and on
every host NIC (to count retransmissions), and puts the schedule's events on the queue:

* **down**: the link's two ports drop what is on the wire (it arrives to nothing:
  ``in_flight``) and in their queues (``queued``), PFC pauses on the link are released
  (a paused port resumes, a switch stops pausing its neighbour across it), and from then
  on whatever is routed to or sent on the link is lost (``black_holed``) until the
  switches learn of it and route around it;
* **up**: the link carries again (nothing is routed to it until that is learnt);
* **gray**: the link stays up and is never detected, but drops a fraction of what it
  carries, both directions (``gray``);
* **detection**, ``detect_ps`` after each change (an entry's ``detect=`` overrides it):
  the switches learn the new state and recompute their routes for the next hops it
  touches only (``topologies.routing.Routes``); a switch left without a next hop toward
  a host drops what is sent there (counted ``unreachable`` by the switch).

Agents learn of none of this: a GSE sender sees losses and timeouts, a RoCE flow its
go-back-N.  Counters are kept per schedule entry (``entries``) and summed
(``summary()``); a message that lost a packet to an entry is *affected* by it, and the
retransmissions its sender makes from then on count as ``retransmitted`` for that entry.
"""

import random
from collections.abc import Iterable
from typing import Any

from gse.runtimes.sim.htsim_model import HtsimHostPort, HtsimSwitchPort
from gse.wire.packet import DATA, F_RETX, PRIO_DATA, RESUME
from gse.metrics.records import MessageRecord
from gse.workloads.faults import DOWN, GRAY, UP, FaultSchedule, link_name
from switchmodel.fabric_maxmin import infer_links, leaf_plan, pair_paths
from switchmodel.fabric_plan import uplink_widths

CAUSES = ("in_flight", "queued", "black_holed", "gray")
HTSIM_PORTS = (HtsimHostPort, HtsimSwitchPort)


class EntryStats:
    """What one schedule entry did to the run."""

    __slots__ = ("entry", "drops", "data_drops", "retransmitted", "affected", "detected_ps",
                 "route_changes", "pauses_released")

    def __init__(self, entry):
        self.entry = entry
        self.drops = dict.fromkeys(CAUSES, 0)
        self.data_drops = 0
        self.retransmitted = 0
        self.affected = set()          # (src, msg_id) of messages that lost a packet to it
        self.detected_ps = []          # when the switches learnt each of its changes
        self.route_changes = 0         # next-hop entries rewritten because of it
        self.pauses_released = 0


class PortFault:
    """The failure state of one port (one direction of a link).

    ``faulty``: the link is in the schedule (a watched host NIC that is not only counts
    retransmissions).  ``down`` counts the entries holding it down."""

    __slots__ = ("injector", "port", "link", "faulty", "down", "downs", "entry", "gray",
                 "gray_entry", "rng", "epoch", "eq", "delay", "target", "receive",
                 "peer_port", "is_host")

    def __init__(self, injector, port, link, faulty, seed):
        self.injector = injector
        self.port = port
        self.link = link
        self.faulty = faulty
        self.down = False
        self.downs = 0
        self.entry = None               # the entry that took it down (for counters)
        self.gray = 0.0
        self.gray_entry = None
        self.rng = random.Random("%s/gray/%d/%d" % (seed, port.node, port.port))
        self.epoch = 0                  # failures so far: what left before one is lost
        self.eq = port.eq
        self.delay = port.delay
        self.target = port.deliver      # the arrival as the event queue takes it
        self.receive = port.peer.receive  # ... and as a call
        self.peer_port = port.peer_port
        self.is_host = port.kind == "host"

    def carry(self, pkt, done):
        """``pkt`` finished serialising at ``done``: put it on the wire, or lose it."""
        if self.is_host and pkt.flags & F_RETX and pkt.kind == DATA:
            self.injector.retransmission(pkt)
        if not self.faulty:
            self.eq.at(done + self.delay, self.target, pkt, self.peer_port)
            return
        if self.down:
            self.injector.lost(self.entry, pkt, "black_holed")
            return
        if self.gray and self.rng.random() < self.gray:
            self.injector.lost(self.gray_entry, pkt, "gray")
            return
        self.eq.at(done + self.delay, self.arrive, pkt, self.epoch)

    def arrive(self, pkt, epoch):
        if epoch != self.epoch:         # the link failed while it was on the wire
            self.injector.lost(self.entry, pkt, "in_flight")
            return
        self.receive(pkt, self.peer_port)

    def black_hole(self, pkt):
        """Routed to this port while its link is down (the switch does not know yet)."""
        self.injector.lost(self.entry, pkt, "black_holed")


class FaultInjector:
    """A schedule of failures played on a ``Network`` (see the module docstring)."""

    def __init__(self, net: Any, schedule: FaultSchedule, detect_ps: int, seed: int = 1) -> None:
        if getattr(schedule, "after_packets", None) is not None:
            raise ValueError("a fault schedule triggered by the traffic (--fail-after-packets) "
                             "is for the UDP and Mininet runtimes: the simulation's clock is "
                             "the traffic's, give the failure's time")
        if any(isinstance(p, HTSIM_PORTS) for p in net.ports):
            raise ValueError("link failures are not modelled in the htsim PFC model (its "
                             "ports and pipes are htsim's); use the default RoCE model")
        self.net = net
        self.schedule = schedule
        self.detect_ps = detect_ps
        topo = net.topo
        self.stats = [EntryStats(e) for e in schedule.entries]
        self.by_link: dict[int, list[PortFault]] = {}   # link -> [PortFault, PortFault]
        faulty = set(schedule.links())
        for port in net.ports:
            li = topo.nodes[port.node].ports[port.port]
            if li in faulty or port.kind == "host":
                pf = PortFault(self, port, li, li in faulty, seed)
                port.fault = pf
                if li in faulty:
                    self.by_link.setdefault(li, []).append(pf)
        self.fabric_rows = self._fabric_rows(net)
        self.plan_mode = ""             # fabric leaves' plan_weights (one setting for all)
        for sn in net.switches:
            cfg = getattr(getattr(sn, "agent", None), "cfg", None)
            self.plan_mode = self.plan_mode or getattr(cfg, "plan_weights", "")
        self.plan_pending = False
        self.plan_poll = 0              # plan_suspects_ps: poll the leaves' suspected paths
        self.plan_seen: frozenset = frozenset()
        for sn in net.switches:
            cfg = getattr(getattr(sn, "agent", None), "cfg", None)
            self.plan_poll = self.plan_poll or getattr(cfg, "plan_suspects_ps", 0)
        self.plan_infer = 0             # plan_infer_links: dead links from all the reports
        self.plan_keep = False
        self.plan_hold = False
        for sn in net.switches:
            cfg = getattr(getattr(sn, "agent", None), "cfg", None)
            self.plan_infer = self.plan_infer or getattr(cfg, "plan_infer_links", 0)
            self.plan_keep = self.plan_keep or bool(getattr(cfg, "plan_infer_keep", 0))
            self.plan_hold = self.plan_hold or bool(getattr(cfg, "plan_suspects_keep", 0))
        self.plan_keep = bool(self.plan_keep and self.plan_infer)
        self.plan_dead: frozenset = frozenset()  # the links inferred since the last route change
        self.plan_routed = 0            # ... which was then
        self.plan_held: frozenset = frozenset()  # plan_suspects_keep: the reports until then
        self.plan_routed_once = False       # ... a route change learnt
        if self.plan_mode and self.plan_poll:
            net.eq.at(self.plan_poll, self._poll_suspects, None, 0)
        self.gossip_cache: dict = {}    # plan_gossip_ps: (routes, reports) -> the plan
        self.gossip_live: dict = {}     # ... (leaf, dst leaf) -> its live paths
        if self.plan_mode:              # the leaves plan themselves (fabric_gossip)
            for sn in net.switches:
                if hasattr(getattr(sn, "agent", None), "set_gossip"):
                    sn.agent.set_gossip(self)
        eq = net.eq
        for t, li, action, value, idx in schedule.link_events():
            eq.at(t, self._link_event, (li, action, value), idx)
        for t, idx, changes in schedule.route_timeline(topo, detect_ps):
            eq.at(t, self._route_event, changes, idx)

    # -- the links ------------------------------------------------------------------------

    def _link_event(self, what, idx):
        li, action, value = what
        stats = self.stats[idx]
        now = self.net.eq.now
        for pf in self.by_link[li]:
            if action == GRAY:
                pf.gray = value
                pf.gray_entry = stats if value else None
            elif action == DOWN:
                pf.downs += 1
                if pf.downs == 1:
                    pf.down = True
                    pf.entry = stats
                    pf.epoch += 1
                    self._fail_port(pf, stats, now)
            elif action == UP:
                pf.downs -= 1
                if pf.downs == 0:
                    pf.down = False

    def _fail_port(self, pf, stats, now):
        port = pf.port
        pfc = port.pfc
        owner = port.owner
        for pkt in port.queue.flush():
            if pfc is not None and pkt.prio == PRIO_DATA:
                if pfc.on_dequeue(pkt.ingress, pkt.size):
                    owner.send_pfc(pkt.ingress, RESUME)
            self.lost(stats, pkt, "queued")
        if port.queue.paused:           # held by a neighbour that can no longer resume it
            port.resume(now)
            stats.pauses_released += 1
        if pfc is not None and pfc.pausing[port.port]:
            pfc.pausing[port.port] = 0  # no more PAUSE refreshes across a dead link
            stats.pauses_released += 1

    # -- what the switches learn ----------------------------------------------------------

    def _route_event(self, changes, idx):
        """The switches learnt of a change: their tables take ``changes``."""
        stats = self.stats[idx]
        stats.detected_ps.append(self.net.eq.now)
        stats.route_changes += len(changes)
        nodes = self.net.nodes
        touched = set()
        for u, h, hops in changes:
            switch = nodes[u].switch
            switch.next_hops[h] = hops
            for leaf in self.fabric_rows.get(h, ()):
                if leaf != u:
                    switch.next_hops[leaf] = hops
            touched.add(u)
        for u in touched:               # fabric leaves: start new containers on new paths
            agent = getattr(nodes[u], "agent", None)
            voqs = getattr(agent, "voqs", None)
            if voqs:
                for voq in voqs.values():
                    voq.cont_left = 0
        self.plan_dead = frozenset()    # the routes changed: what was inferred is stale
        self.plan_held = frozenset()    # ... and the path keys reported name other links
        self.plan_routed_once = True        # (from now on the routes avoid what was learnt)
        self.plan_routed = self.net.eq.now
        if self.fabric_rows:            # fabric leaves: the live paths beyond each uplink
            self._tell_widths(nodes)
            if self.plan_mode and not self.plan_pending:    # once the instant's changes
                self.plan_pending = True                    # are all in: the weights
                self.net.eq.at(self.net.eq.now, self._tell_plan, None, idx)

    def _tell_plan(self, _a, _idx):
        """``plan_weights``: the control plane's weight per live path of every pair of
        leaves (``switchmodel.fabric_maxmin.leaf_plan``) over the demand of
        ``plan_weights``, told to each leaf as its weighted-ECMP table."""
        self.plan_pending = False
        topo = self.net.topo
        agents = {sn.switch.node: sn.agent for sn in self.net.switches
                  if hasattr(getattr(sn, "agent", None), "set_plan")}
        nodes = self.net.nodes
        leaf_of, first = topo_leaf_first(topo)
        demand = {}
        if self.plan_mode == "all":
            for a in agents:
                others = [b for b in agents if b != a]
                hosts = sum(1 for x in leaf_of if x == a)
                for b in others:
                    demand[(a, b)] = hosts / len(others)
        else:
            for a, agent in agents.items():
                for dst in set(agent.voqs) | set(agent.sent_bufs):
                    b = leaf_of[dst]
                    if b != a and b in agents:
                        demand[(a, b)] = demand.get((a, b), 0) + 1

        def hops_of(node, host):
            return nodes[node].switch.next_hops[host]

        now = self.net.eq.now
        live = {}

        def live_of(a, b):
            if (a, b) not in live:
                live[(a, b)] = pair_paths(a, b, first[b], hops_of,
                                          lambda n, p: topo.peer(n, p)[0],
                                          agents[a].spine_fanout)
            return live[(a, b)]
        dead = ()
        if self.plan_infer:
            dead = self._inferred(agents, live_of, now)
            if self.plan_keep:          # plan_infer_keep: what was inferred stays until
                dead = dead | self.plan_dead                  # the routes change
            self.plan_dead = self.plan_dead | dead

        held = self.plan_held

        def paths_of(a, b):
            paths = live_of(a, b)
            if self.plan_poll and agents[a].suspects.get(b):    # the leaf's lost paths
                paths = {k: v for k, v in paths.items()
                         if not agents[a]._suspected(b, k, now)}
            if held:                    # plan_suspects_keep: reported since the routes changed
                paths = {k: v for k, v in paths.items() if (a, b, k) not in held}
            if dead:                    # ... and those through the links inferred dead
                kept = {k: v for k, v in paths.items() if not any(x in dead for x in v)}
                paths = kept or paths   # (none left: its own suspects alone decide)
            return paths
        step = min(agent.cfg.plan_step for agent in agents.values())
        if not any(agent.widths for agent in agents.values()) and not dead and not held and not (
                self.plan_poll and self._suspect_set(agents, now)):
            demand = {}                 # the fabric is whole again (no uneven widths): no plan
        plan, rates = leaf_plan(demand, paths_of, step)
        if not any(r < 1.0 - 1e-6 for row in rates.values() for r in row.values()):
            rates = {}                  # no pair has a bottleneck: nothing to pace or floor
        inbound = {}
        for a, row in rates.items():
            for b, rate in row.items():
                inbound.setdefault(b, {})[a] = rate
        for a, agent in agents.items():
            agent.set_plan(plan.get(a, {}), rates.get(a, {}), inbound.get(a, {}))

    def plan(self, reports):
        """``plan_gossip_ps``: the plan a leaf computes from the reports it heard,
        ``((origin leaf, ((dst leaf, hosts, suspected path keys), ...)), ...)``, over the
        routes in force (``switchmodel.fabric_gossip``): ``leaf_plan`` over the reported
        demand, each pair without the paths it suspects; None when no report suspects a
        path, or once the routes changed (the control plane's plan, from what the routing
        detected, is in force).  The same reports give the same plan (computed once)."""
        if self.plan_routed_once or not any(keys for _, rep in reports for _, _, keys in rep):
            return None
        key = (self.plan_routed, reports)
        got = self.gossip_cache.get(key)
        if got is not None:
            return got
        agents = {sn.switch.node: sn.agent for sn in self.net.switches
                  if hasattr(getattr(sn, "agent", None), "set_plan")}
        if self.gossip_live.get("routed") != self.plan_routed:
            self.gossip_live = {"routed": self.plan_routed}
        topo, nodes, live = self.net.topo, self.net.nodes, self.gossip_live
        first = topo_leaf_first(topo)[1]
        demand, lost = {}, {}
        for a, rep in reports:
            for b, hosts, keys in rep:
                if a in agents and b in agents and a != b:
                    demand[(a, b)] = hosts
                    lost[(a, b)] = keys

        def paths_of(a, b):
            if (a, b) not in live:
                live[(a, b)] = pair_paths(a, b, first[b],
                                          lambda n, h: nodes[n].switch.next_hops[h],
                                          lambda n, p: topo.peer(n, p)[0],
                                          agents[a].spine_fanout)
            keys = lost[(a, b)]
            return {k: v for k, v in live[(a, b)].items() if k not in keys}
        step = min(agent.cfg.plan_step for agent in agents.values())
        plan, rates = leaf_plan(demand, paths_of, step)
        if not any(r < 1.0 - 1e-6 for row in rates.values() for r in row.values()):
            rates = {}                  # no pair has a bottleneck: nothing to pace or floor
        got = self.gossip_cache[key] = (plan, rates)
        return got

    def _tell_widths(self, nodes):
        """What a routing protocol carrying link bandwidth tells each fabric leaf: how
        many next hops the switch beyond each of its uplinks keeps toward every host
        (``switchmodel.fabric_plan.uplink_widths``)."""
        topo = self.net.topo
        n_hosts = len(topo.hosts)
        for sn in self.net.switches:
            agent = getattr(sn, "agent", None)
            if agent is None or not hasattr(agent, "set_widths"):
                continue
            leaf = sn.switch.node
            local = agent.host_ports

            def beyond(port, h, leaf=leaf):
                peer = topo.peer(leaf, port)[0]
                if topo.nodes[peer].kind == "host":
                    return agent.spine_fanout
                return len(nodes[peer].switch.next_hops[h])
            rows = sn.switch.next_hops
            agent.set_widths(uplink_widths(
                [() if h in local else rows[h] for h in range(n_hosts)], beyond, n_hosts,
                agent.spine_fanout))

    def _inferred(self, agents, live_of, now):
        """``plan_infer_links``: the links the leaves' suspected paths point at, all pairs
        together (``switchmodel.fabric_maxmin.infer_links``); a suspecting pair's other
        live paths count as carrying, the links inferred since the last route change
        come first (the tie-breaks)."""
        suspected, working, pairs = [], [], set()
        for a, b, k in sorted(self._suspect_set(agents, now)):
            if agents[a].suspects[b][k][1] < self.plan_routed:
                continue                # lost before the routes changed: k meant other links
            path = live_of(a, b).get(k)
            if path is not None:
                suspected.append(path)
                pairs.add((a, b))
        for a, b in sorted(pairs):
            for k, path in sorted(live_of(a, b).items()):
                if not agents[a]._suspected(b, k, now):
                    working.append(path)
        return frozenset(infer_links(suspected, working, self.plan_dead, self.plan_infer))

    def _suspect_set(self, agents, now):
        return frozenset((a, b, k) for a, agent in agents.items()
                         for b, paths in agent.suspects.items()
                         for k, entry in paths.items() if entry[0] > now)

    def _poll_suspects(self, _a, idx):
        """``plan_suspects_ps`` (an experiment): the leaves report the paths they suspect
        and the control plane plans again when that set changed (before any route change
        is learnt)."""
        eq = self.net.eq
        agents = {sn.switch.node: sn.agent for sn in self.net.switches
                  if hasattr(getattr(sn, "agent", None), "set_plan")}
        seen = self._suspect_set(agents, eq.now)
        if self.plan_hold and not self.plan_routed_once:  # plan_suspects_keep: a report stays
            seen = self.plan_held = self.plan_held | seen   # until the routes first change
        if seen != self.plan_seen and (seen or self.plan_seen):
            self.plan_seen = seen
            self._tell_plan(None, idx)
        if eq.pending():
            eq.at(eq.now + self.plan_poll, self._poll_suspects, None, idx)

    @staticmethod
    def _fabric_rows(net):
        """host -> the leaves whose row in an extended (fabric mode) table is that host's."""
        rows = {}
        n_hosts = len(net.topo.hosts)
        for sn in net.switches:
            if len(sn.switch.next_hops) > n_hosts:     # extended: fabric mode
                first = {}
                for h in net.topo.hosts:
                    leaf = net.topo.peer(h, 0)[0]
                    first.setdefault(leaf, h)
                for leaf, h in first.items():
                    rows.setdefault(h, []).append(leaf)
                break
        return rows

    # -- counting -------------------------------------------------------------------------

    def lost(self, stats, pkt, cause):
        stats.drops[cause] += 1
        if pkt.kind == DATA:
            stats.data_drops += 1
            if pkt.src < len(self.net.hosts):
                stats.affected.add((pkt.src, pkt.msg_id))

    def retransmission(self, pkt):
        key = (pkt.src, pkt.msg_id)
        for stats in self.stats:
            if key in stats.affected:
                stats.retransmitted += 1
                return

    def drops(self) -> dict[str, int]:
        """Packets lost to failures, by cause, over every entry."""
        total = dict.fromkeys(CAUSES, 0)
        for stats in self.stats:
            for cause, n in stats.drops.items():
                total[cause] += n
        return total

    def summary(self, records: Iterable[MessageRecord] | None = None) -> dict[str, Any]:
        """JSON-ready: one dict per entry, and the totals.  With the run's ``records``,
        each entry says when its affected messages finished."""
        topo = self.net.topo
        done: dict[tuple[int, int], MessageRecord] = {}
        if records is not None:
            done = {(r.src, r.msg_id): r for r in records}
        entries = []
        for stats in self.stats:
            e = stats.entry
            d = e.describe(topo)
            d.update({"lost_on_link": stats.drops["in_flight"] + stats.drops["queued"]})
            d.update(stats.drops)
            d["data_packets_lost"] = stats.data_drops
            d["retransmitted"] = stats.retransmitted
            d["affected_messages"] = len(stats.affected)
            d["detected_us"] = [round(t / 1e6, 3) for t in stats.detected_ps]
            d["route_changes"] = stats.route_changes
            d["pauses_released"] = stats.pauses_released
            finished = [done[k].finish_ps for k in stats.affected
                        if k in done and done[k].finish_ps >= 0]
            if finished:
                d["affected_done_us"] = [round((min(finished) - e.at_ps) / 1e6, 3),
                                         round((max(finished) - e.at_ps) / 1e6, 3)]
            unfinished = sum(1 for k in stats.affected
                             if k not in done or done[k].finish_ps < 0)
            d["affected_unfinished"] = unfinished
            entries.append(d)
        return {"entries": entries, "drops": self.drops(),
                "links": [link_name(topo, li) for li in self.schedule.links()]}


def topo_leaf_first(topo):
    """(leaf of each host, {leaf: its first host}) of ``topo``'s hosts."""
    leaf_of = [topo.peer(h, 0)[0] for h in topo.hosts]
    first = {}
    for h, leaf in enumerate(leaf_of):
        first.setdefault(leaf, h)
    return leaf_of, first
