"""Fabric mode: per-pair path weights the control plane computes when routes change.

After a quarter of a Fat-Tree's core links fail, a pair of leaves in two damaged pods keeps
only the cores whose links to *both* pods survive, while a pair with a healthy end keeps
many.  Sprayed evenly over their live paths (the widths), the pairs with many paths load
the few cores the damaged pairs must share as much as any other: the fluid max-min bound
of even spraying is 1.57x the run without failure on the mean of the study's seeds
(docs/fabric-mode.md, "What remains with a quarter of the core links").  Feedback per
path (CE marks, delays: ``fabric_weights``, ``fabric_delay``) did not steer the pairs
apart.  This module does it by design, where the widths already come from: the control
plane, which knows the routes, computes for every pair of leaves a weight per live path
(``split_maxmin``: progressive filling in which each increment of a pair's rate goes on
its path whose most loaded link is least loaded, a greedy max-min over paths) and tells
each leaf a weighted-ECMP table per destination leaf, as UCMP / BGP link-bandwidth tables
are pushed to real fabrics.  The leaf sprays in proportion (smooth weighted round robin,
``LeafPlan``), still skipping the paths it suspects.

The demand the computation fills is ``plan_weights``: ``"all"``, every ordered pair of
leaves, one host's worth split over the other leaves (traffic-oblivious, what a routing
protocol can do), or ``"active"``, the pairs the source leaves hold VOQs for, counted per
destination host (what GSE's leaves know: the source leaf's VOQs are its demand).  The
fluid bound of the study says which (``experiments/failure_bounds.py``: mean 2.15x with
"all", worse than even spraying's 1.57x, because weights fitted to an all-to-all load
the permutation's few pairs unevenly; 1.24x with "active", the pod-share bound).

The same computation gives each pair its max-min rate under those weights.  Weights
alone leave the rates to the destinations' ECN pacers, which load the planned paths past
what the plan assumed (seed 1: the planned links ran at 100% with 140 KB queues), so
``plan_pacing`` > 0 also paces each remote VOQ at that many times its pair's rate
(``LeafCongestion._share_hold``), and ``plan_floor`` keeps the destination's ECN
response from cutting a downlink below the planned rates of the flows it serves (marks
below them come from the failure's transient: repairs, queues it left).  With
``plan_suspects_ps`` the control plane also plans before the routes change, from the
paths the leaves suspect (``FaultInjector._poll_suspects``; off by default: it pays only
with a controller that hears every leaf within about 20 us).  The rest is on by default.
"""

__all__ = ["split_maxmin", "pair_paths", "leaf_plan", "infer_links", "LeafPlan"]

EPS = 1e-9


def split_maxmin(flows, step=1.0 / 64, capacity=1.0):
    """Weights per path for ``flows``, ``[(count, [links of path 0, links of path 1, ...])]``
    (``links``: hashable link names, each of ``capacity``): progressive filling, all flows
    raised together by ``step`` (times their count) a round, each increment placed on the
    flow's path whose most loaded link would be least loaded after it (ties: the first
    path); a flow stops when no path takes its increment, or at rate 1 (a host's line
    rate per count).  Returns ``([[weight per path]], [rate])``: the weights sum to 1
    (even for a flow that got nothing: it keeps even spraying), the rate is per count, a
    fraction of the line rate (the flow's max-min fair rate under these weights)."""
    if not 0 < step <= 1:
        raise ValueError("split_maxmin: step %r is not in (0, 1]" % (step,))
    load = {}
    alloc = [[0.0] * len(paths) for _, paths in flows]
    rate = [0.0] * len(flows)
    active = [i for i, (count, paths) in enumerate(flows) if paths and count > 0]
    while active:
        still = []
        for i in active:
            count, paths = flows[i]
            amount = step * count
            best, best_j = capacity + EPS, -1
            for j, links in enumerate(paths):
                top = 0.0
                for link in links:
                    x = load.get(link, 0.0)
                    if x > top:
                        top = x
                if top + amount < best:
                    best, best_j = top + amount, j
            if best_j < 0:
                continue                  # every path has a full link: the flow stops
            for link in paths[best_j]:
                load[link] = load.get(link, 0.0) + amount
            alloc[i][best_j] += amount
            rate[i] += step
            if rate[i] < 1.0 - EPS:
                still.append(i)
        active = still
    out = []
    for a in alloc:
        total = sum(a)
        out.append([x / total for x in a] if total > 0 else [1.0 / len(a)] * len(a)
                   if a else [])
    return out, [min(1.0, r) for r in rate]


def pair_paths(leaf, dst_leaf, host, hops_of, peer, fanout, limit=16):
    """``{path key: (links)}`` of the live paths from ``leaf`` toward ``host`` (a host of
    ``dst_leaf``) as fabric mode sprays them: the leaf picks uplink ``port`` (key ``port *
    256 + choice``), every switch beyond takes ``hops[choice % len(hops)]`` (byte 1 of
    the entropy, ``FabricSpine``), with ``choice`` below the first switch's live next
    hops (at most ``fanout``: the widths).  Links are ``(node, port)``, the direction out
    of ``node``.  ``hops_of(node, host)``: its next hops; ``peer(node, port)``: the node
    beyond.  A path that meets a switch without a route is left out."""
    out = {}
    for port in hops_of(leaf, host):
        first = peer(leaf, port)
        width = min(fanout, len(hops_of(first, host)))
        for choice in range(width):
            links = [(leaf, port)]
            node = first
            for _ in range(limit):
                if node == dst_leaf:
                    break
                hops = hops_of(node, host)
                if not hops:
                    break
                p = hops[choice % len(hops)]
                links.append((node, p))
                node = peer(node, p)
            if node == dst_leaf:
                out[port * 256 + choice] = tuple(links)
    return out


def leaf_plan(demand, paths_of, step=1.0 / 64):
    """``({leaf: {dst leaf: {path key: weight}}}, {leaf: {dst leaf: rate}})`` from
    ``demand``, ``{(leaf, dst leaf): count}``, and ``paths_of(leaf, dst leaf)``
    (``pair_paths``): the weights of a pair sum to 1, its rate is per count (a host's
    share of the line rate, ``split_maxmin``).  Pairs with no live path are left out;
    a pair with one has no weights but a rate."""
    keys, flows = [], []
    for pair in sorted(demand):
        paths = paths_of(*pair)
        if not paths:
            continue
        order = sorted(paths)
        keys.append((pair, order))
        flows.append((demand[pair], [paths[k] for k in order]))
    plan, rates = {}, {}
    for (pair, order), weights, rate in zip(keys, *split_maxmin(flows, step)):
        if len(order) > 1:
            plan.setdefault(pair[0], {})[pair[1]] = dict(zip(order, weights))
        rates.setdefault(pair[0], {})[pair[1]] = rate
    return plan, rates


def infer_links(suspected, working=(), prior=(), least=1):
    """The links that explain ``suspected``, an iterable of paths (each a tuple of links)
    that lost packets, as boolean network tomography does (007, NetBouncer): greedy set
    cover, repeatedly the link lying on the most suspected paths not yet explained (ties:
    a link on none of the paths of ``working``, thought to carry, then the least link in
    sorted order), until every suspected path is explained; the links of ``prior``
    (inferred before) come first while they explain any, so a hypothesis stays as its
    paths' reports expire one by one.  Any other link must explain at least ``least``
    of them (a leaf also suspects a path for a congestion drop or a late packet: a
    single report is noise), and lie on fewer paths of ``working`` than of
    ``suspected`` (a congested link loses some of the paths through it, a dead one
    all); the paths no such link explains are left unexplained.
    Returns the sorted list of the links picked.
    Deterministic: nothing depends on a set's order."""
    paths = sorted(set(tuple(p) for p in suspected if p))
    good = {}                             # link -> the working paths on it
    for p in working:
        for link in p:
            good[link] = good.get(link, 0) + 1
    prior = set(prior)
    on = {}                               # link -> indexes of the unexplained paths on it
    for i, p in enumerate(paths):
        for link in p:
            on.setdefault(link, set()).add(i)
    for link in sorted(on):               # carrying as many paths as it lost: not dead
        if link not in prior and good.get(link, 0) >= len(on[link]):
            del on[link]
    left = set(range(len(paths)))
    picked = []
    while left and on:
        best = max(sorted(on), key=lambda link: (link in prior, len(on[link]),
                                                 link not in good))
        if best not in prior and len(on[best]) < least:
            break
        picked.append(best)
        done = on.pop(best)
        left -= done
        for link in list(on):
            on[link] -= done
            if not on[link]:
                del on[link]
    return sorted(picked)


class LeafPlan:
    """The leaf's side, mixed into ``FabricLeaf``: the weighted-ECMP table the control
    plane told it (``set_plan``) and the spray over it (``_plan_path``)."""

    __slots__ = ()

    def set_plan(self, table, rates=None, inbound=None, local=False):
        """``{dst leaf: {path key: weight}}`` (replaces the previous table) and, with
        ``plan_pacing`` > 0, ``{dst leaf: rate}``, the pair's max-min rate per host (a
        fraction of the line rate); kept only with leaf recovery and ``paths="leaf"``
        (the leaf names the path).  Each entry keeps a smooth weighted round robin's
        current value.  The rates pace each remote VOQ, at ``plan_pacing`` times its
        pair's rate (``LeafCongestion._share_hold``); a pair the plan gives the line rate
        too with ``plan_pace_all`` (a margin for the queues the failure left), else only
        the pairs with a bottleneck (a rate below 1).  With ``plan_floor``,
        ``inbound``, ``{src leaf: rate}`` of the pairs toward this leaf, is the floor of
        its downlinks' ECN response (``_plan_floor``).  ``local``: the leaf's own plan
        (``fabric_gossip``), not the control plane's (which it keeps to go back to)."""
        if not local:
            self.plan_told = (table, rates, inbound)
        if self.recovery and self.leaf_paths:
            self.plan = {d: {k: [w, 0.0] for k, w in sorted(t.items()) if w > 0}
                         for d, t in table.items()}
            self.plan_sets += 1
            if self.plan_pacing > 0 and rates is not None:
                every = self.plan_pace_all
                self.plan_rates = {d: min(1.0, r * self.plan_pacing)
                                   if every or r < 1.0 - 1e-6 else 1.0
                                   for d, r in rates.items()}
                self.share_pacing = True
            if self.plan_floor_on and inbound is not None:
                self.plan_inbound = {s: r * self.plan_pacing for s, r in inbound.items()}

    def _plan_path(self, dst, dst_leaf, now, avoid):
        """(port, entropy) of the next path toward ``dst`` by the weights (smooth weighted
        round robin: every eligible path gains its weight, the one with the most is taken
        and loses their total), skipping ``avoid`` and the paths the leaf suspects; None when
        no table applies (no plan for ``dst_leaf``, a path no longer in the leaf's row,
        or every path suspected: the even walk decides)."""
        table = self.plan.get(dst_leaf)
        if not table:
            return None
        hops = self.switch.next_hops[dst]
        best = None
        total = 0.0
        for key, entry in table.items():
            if key == avoid or (self.suspects and self._suspected(dst_leaf, key, now)):
                continue                  # (a skipped path earns nothing meanwhile)
            entry[1] += entry[0]
            total += entry[0]
            if best is None or entry[1] > best[1]:
                best = entry
                best_key = key
        if best is None:
            return None
        best[1] -= total
        port, choice = divmod(best_key, 256)
        if port not in hops:
            return None                   # (stale: the leaf's row changed since)
        self.plan_picks += 1
        return port, hops.index(port) | (choice << 8)

    def _plan_floor(self, dl):
        """The floor of downlink ``dl``'s ECN response with ``plan_floor``: the planned
        rates of the flows that want its credit (each ``plan_pacing`` times its pair's),
        summed, at most 1; below it the control plane's computation says the links can
        carry them, so marks below it are a transient's (the failure's repairs, queues
        it left), not a rate to settle at."""
        total = 0.0
        inbound = self.plan_inbound
        for d in dl.active:
            total += inbound.get(d.src_leaf, 0.0)
        return total if total < 1.0 else 1.0
