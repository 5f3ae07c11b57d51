"""Fabric mode: the leaves plan among themselves, before the routes change.

With slow failure detection (the study's 1 ms) the control plane's plan
(``switchmodel.fabric_maxmin``) comes after the traffic: until the routes change, the
leaves only skip the paths they suspect and spray evenly over the rest, whose fluid bound
is already 1.57x the run without failure on the study's mean (docs/fabric-mode.md, "What
remains with a quarter of the core links").  A controller that reads every leaf's
suspected paths and re-plans closes that gap only if it is fast: every 5-20 us it gives
1.52, every 50-100 us 1.95-1.98, and even a controller that knows the dead links exactly
(an oracle, not a report) gives 1.67 when its first plan comes 50 us after the failure.

``plan_gossip_ps`` (> 0) does the same computation at every leaf, from what the leaves
tell each other (a report of its own when it changes, sent to every leaf; or in the
control messages they already exchange), as a link-state protocol floods its state, at the
leaves' own round-trip scale:

* **Report.** While a leaf suspects a path (or has heard a report), it keeps a report of
  its own: per destination leaf it holds traffic for, the number of destination hosts
  (its demand, as the control plane's ``plan_weights="active"`` counts it) and the paths
  it suspects toward it.  It is refreshed at most every ``plan_gossip_ps`` and stamped
  with the time it changed (its version).
* **Exchange.**  With ``plan_gossip_flood`` (on) a leaf whose report changed sends it to
  every other leaf at once, in a leaf ACK for no host (``REPORT_ID``) of 8 bytes per
  report and 5 per destination leaf beyond the header.  Off, every leaf control message
  toward another leaf carries the reports (its own and those it heard) newer than what
  it last sent that leaf, relayed one hop per message (measured: too late, too heavy).
* **Plan.** At the first message of every ``plan_gossip_ps`` epoch a leaf computes the
  control plane's plan (``fabric_maxmin.leaf_plan``: max-min weights and rates over the
  reporting pairs' live paths, each pair without the paths it suspects) and takes its
  own row: weights for its spray, rates for its VOQs' pacing, the floor of its
  downlinks' ECN response.  Leaves that heard the same reports compute the same plan.
  When no report names a suspected path any more, or once the routes changed, the leaf
  goes back to what the control plane told it (and stops reporting).

The leaves need the topology and the routes to map a path key to its links
(``pair_paths``), which the simulation's fault injector provides (``set_gossip``); the
wire encoding of the reports exists only in the simulation, as the plan itself (the UDP
and Mininet runtimes have no fault injector: no planner, no report, their runs unchanged).
Without a failure no leaf suspects anything, nothing is reported and nothing changes.  On
by default (5 us): it takes 1 ms detection with a quarter of the core links to 1.56 on the
study's mean.  While a leaf reports, a path it suspects stays so for ``gossip_suspect_ps``
(2 ms, past the routing's 1 ms detection) instead of ``path_suspect_ps`` (500 us): with
the shorter suspicions the plans gave the dead paths weight again before the routes
changed and the ring all-reduce took 2-3% longer (docs/fabric-mode.md, "The leaves plan
among themselves").
"""

from gse.wire.packet import ACK, PRIO_CONTROL, make_packet

__all__ = ["LeafGossip", "REPORT_BYTES", "PAIR_BYTES", "REPORT_ID"]

REPORT_ID = -1                    # a leaf ACK for no host: a message of reports alone

REPORT_BYTES = 8                  # a report's origin leaf and version
PAIR_BYTES = 5                    # per destination leaf: its id, demand, 16-bit path mask


class LeafGossip:
    """The leaves' reports and their own plan, mixed into ``FabricLeaf``."""

    __slots__ = ()

    def _init_gossip(self, cfg):
        self.gossip_ps = cfg.plan_gossip_ps
        self.gossip_lag = cfg.plan_gossip_lag_ps
        self.gossip = None        # the planner (set_gossip); None: off
        self.gview = {}           # origin leaf -> [(version, report), ...] oldest first
        self.gsent = {}           # peer leaf -> {origin: newest version sent}
        self.gown_at = 0          # next refresh of the leaf's own report
        self.gepoch = -1          # the epoch of the plan in force
        self.gplanned = False     # the leaf's own plan is in force
        self.gplan_got = None     # ... which is this planner's answer
        self.plan_told = None     # what the control plane last told (set_plan)
        self.gossip_flood = bool(cfg.plan_gossip_flood)
        self.gleaves = sorted(set(self.leaf_of))
        self.gossip_bytes = self.gossip_plans = 0

    def set_gossip(self, planner):
        """``plan_gossip_ps``: ``planner.plan(reports)`` gives ``(plan, rates)`` as
        ``fabric_maxmin.leaf_plan`` does for ``reports``, ``((origin, report), ...)``, or
        None when no report names a suspected path."""
        if self.gossip_ps > 0 and self.recovery and self.leaf_paths:
            self.gossip = planner

    def _gossiping(self):
        """Reporting (until the routes change): suspicions last ``gossip_suspect_ps``
        (``_suspect``), and a trimmed packet's NACK clears no
        suspicion: it names the trimmed packet alone, and the packets below it that it does
        not name may be lost on a dead path, not delivered (read as delivered, they cleared
        dead paths that the reports then gave to every leaf's plan as live)."""
        return self.gossip is not None and not self.gossip.plan_routed_once

    def _heard(self, pkt, now):
        """A leaf's control message arrived: answer along its path, take its reports;
        whether it was a report alone (nothing else to do with it)."""
        self.echo[pkt.src] = (pkt.entropy, now)     # its path works: answer on it
        if self.gossip is None:
            return False
        entries = pkt.payload
        if entries.__class__ is tuple:
            view = self.gview
            for origin, version, report in entries:
                if origin == self.node:
                    continue
                hist = view.get(origin)
                if hist is None:
                    view[origin] = [(version, report)]
                elif hist[-1][0] < version:
                    hist.append((version, report))
                elif all(v != version for v, _ in hist):
                    hist.append((version, report))
                    hist.sort(key=lambda e: e[0])
        if self.gview or self.suspects:
            self._gossip_own(now)
            if now // self.gossip_ps != self.gepoch:
                self._gossip_plan(now)
        return pkt.kind == ACK and pkt.msg_id == REPORT_ID

    def _gossip_out(self, pkt, now):
        """A control message toward the leaf ``pkt.dst``: carry the reports it has not had."""
        if not self.gview and not self.suspects:
            return
        if self.gossip_flood:             # the leaf's own report, told to every leaf
            if pkt.msg_id == REPORT_ID and pkt.kind == ACK:
                version, report = self.gview[self.node][-1]
                pkt.payload = ((self.node, version, report),)
                size = REPORT_BYTES + PAIR_BYTES * len(report)
                pkt.size += size
                self.gossip_bytes += pkt.size
            return
        self._gossip_own(now)
        sent = self.gsent.setdefault(pkt.dst, {})
        out = []
        size = 0
        for origin, hist in self.gview.items():
            if origin == pkt.dst:
                continue
            last = sent.get(origin, -1)
            for version, report in hist:
                if version > last:
                    out.append((origin, version, report))
                    size += REPORT_BYTES + PAIR_BYTES * len(report)
            sent[origin] = hist[-1][0]
        if out:
            pkt.payload = tuple(out)
            pkt.size += size
            self.gossip_bytes += size

    def _gossip_own(self, now):
        """Refresh the leaf's own report (at most every ``plan_gossip_ps``; no more once
        the routes changed: the control plane's plan is in force)."""
        if now < self.gown_at or self.gossip.plan_routed_once:
            return
        self.gown_at = now + self.gossip_ps
        demand = {}
        leaf_of = self.leaf_of
        for dst in set(self.voqs) | set(self.sent_bufs):
            b = leaf_of[dst]
            if b != self.node:
                demand[b] = demand.get(b, 0) + 1
        report = []
        for b in sorted(demand):
            keys = ()
            if b in self.suspects:
                keys = tuple(k for k in sorted(self.suspects[b])
                             if self._suspected(b, k, now))
            report.append((b, demand[b], keys))
        report = tuple(report)
        hist = self.gview.get(self.node)
        if hist is None:
            if not any(r[2] for r in report) and not self.gview:
                return                    # nothing suspected, nothing heard: stay silent
            self.gview[self.node] = [(now, report)]
        elif hist[-1][1] != report:
            hist.append((now, report))
        else:
            return
        if self.gossip_flood:             # tell every other leaf at once
            for leaf in self.gleaves:
                if leaf != self.node:
                    self._route(make_packet(kind=ACK, src=self.node, dst=leaf,
                                            msg_id=REPORT_ID, ts=now, prio=PRIO_CONTROL))

    def _gossip_plan(self, now):
        """Plan from the reports of every origin as they stood ``plan_gossip_lag_ps``
        before this epoch began (so that leaves which heard the same reports agree), and
        take the leaf's own row."""
        period = self.gossip_ps
        self.gepoch = now // period
        cut = self.gepoch * period - self.gossip_lag
        reports = []
        for origin, hist in self.gview.items():
            keep = None
            for i, (version, report) in enumerate(hist):
                if version > cut:
                    break
                keep = i
            if keep is not None:
                reports.append((origin, hist[keep][1]))
                if keep > 0:
                    del hist[:keep]       # older versions are no longer needed
        got = self.gossip.plan(tuple(sorted(reports))) if reports else None
        if got is None:                   # no suspected path: the control plane's plan
            if self.gplanned:             # again (or none)
                self.gplanned = False
                self.gplan_got = None
                told = self.plan_told or ({}, {}, {})
                self.set_plan(*told, local=True)
            return
        if got is self.gplan_got:
            return                        # the same plan: its spray goes on as it was
        self.gplan_got = got
        plan, rates = got
        me = self.node
        inbound = {a: row[me] for a, row in rates.items() if me in row}
        self.gplanned = True
        self.gossip_plans += 1
        self.set_plan(plan.get(me, {}), rates.get(me, {}), inbound, local=True)
