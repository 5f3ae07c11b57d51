"""Property tests: with any schedule of failures that leaves the fabric connected, every
message is delivered exactly once and intact, in GSE, GSE fabric mode and RoCE/PFC.

Schedules are drawn as ``--fail`` texts (so the parser is exercised too): link failures
with or without restore, switch failures, flapping links and gray failures on the
switch-to-switch links of a k=4 Fat-Tree, at random times, with random detection delays.
A schedule that would cut some host off at some moment is rejected (``assume``): then no
protocol can deliver, by any means.  "Never detected" is drawn for GSE only: a RoCE or
fabric-mode flow on a dead path has no other way out than the switches' reroute; and
then the schedule must leave every pair of hosts a live path among the equal-cost paths
the switches keep using (with nothing ever learnt, what is connected but unrouted stays
black-holed for every protocol).

Exactly once: the simulation raises on a second delivery.  Intact: every receiver
accepted exactly the messages' bytes, each once (``payload_bytes`` counts new payload only).
"""

import random

from hypothesis import assume, event, given
from hypothesis import strategies as st

from gse.config import GseConfig, RoceConfig
from gse.runtimes.sim.run import run_simulation
from gse.workloads.faults import build_schedule
from switchmodel.fabric import FabricConfig
from topologies import fat_tree
from topologies.routing import hosts_connected
from gse.workloads.traffic import Message, incast, permutation

TOPO = fat_tree(4)
N = len(TOPO.hosts)
US = 1_000_000
FABRIC_LINKS = [link.index for link in TOPO.links
                if TOPO.nodes[link.a].kind != "host" and TOPO.nodes[link.b].kind != "host"]
INNER = [TOPO.nodes[s].name for s in TOPO.switches if TOPO.nodes[s].kind != "edge"]


@st.composite
def workloads(draw):
    """Traffic still flowing when the failures come: 50-250 KB messages from time 0 (a
    permutation, an incast, or random pairs starting within 40 us)."""
    rng = random.Random(draw(st.integers(0, 2 ** 32)))
    size = draw(st.integers(50_000, 250_000))
    kind = draw(st.sampled_from(["permutation", "incast", "random"]))
    if kind == "permutation":
        return permutation(N, size, rng)
    if kind == "incast":
        return incast(N, draw(st.integers(2, 8)), size, rng)
    msgs = []
    for i in range(draw(st.integers(1, 12))):
        src, dst = rng.sample(range(N), 2)
        msgs.append(Message(i + 1, src, dst, rng.randrange(1, size), rng.randrange(40) * US))
    return msgs


@st.composite
def entries(draw, detected=True):
    at = draw(st.integers(0, 60))
    kind = draw(st.sampled_from(["link", "link", "switch", "flap", "gray"]))
    if kind == "switch":
        spec = "switch:%s@%dus" % (draw(st.sampled_from(INNER)), at)
    else:
        spec = "link:%d@%dus" % (draw(st.sampled_from(FABRIC_LINKS)), at)
    if kind == "flap":
        return spec + ",flap=%dus/%dus,until=%dus" % (
            draw(st.integers(1, 30)), draw(st.integers(1, 30)), at + draw(st.integers(1, 300)))
    if kind == "gray":
        spec += ",gray=%d%%" % draw(st.integers(1, 20))
    if draw(st.booleans()):
        spec += ",restore=%dus" % (at + draw(st.integers(1, 300)))
    if detected and kind != "gray" and draw(st.integers(0, 3)) == 0:
        spec += ",detect=%dus" % draw(st.integers(0, 200))
    return spec


def schedules(detected=True):
    return st.lists(entries(detected), min_size=1, max_size=4)


def routed_path_exists(down):
    """Every host reaches every other along next hops of the failure-free table that
    avoid ``down`` (what an entropy can pick when the switches never reroute)."""
    table = TOPO.next_hops
    for dst in TOPO.hosts:
        ok = {}

        def live(node):
            if node == dst:
                return True
            if node not in ok:
                ok[node] = False
                for port in table[node][dst]:
                    li = TOPO.nodes[node].ports[port]
                    if li not in down and live(TOPO.links[li].other(node)[0]):
                        ok[node] = True
                        break
            return ok[node]
        for src in TOPO.hosts:
            li = TOPO.nodes[src].ports[0]
            if src != dst and (li in down or not live(TOPO.links[li].other(src)[0])):
                return False
    return True


def deliverable(sched, detect_ps):
    if detect_ps < 0:
        return all(routed_path_exists(down) for _, down in sched.down_sets())
    return all(hosts_connected(TOPO, down) for _, down in sched.down_sets())


def check(protocol, cfg, msgs, specs, detect_ps, seed):
    sched = build_schedule(TOPO, specs, seed=seed)
    assume(deliverable(sched, detect_ps))
    result = run_simulation(TOPO, msgs, protocol, cfg, seed, faults=sched,
                            detect_ps=detect_ps, until_ps=2_000_000 * US)
    s = result.summary
    assert s["lost"] == 0 and s["delivered"] == s["completed"] == len(msgs), specs
    accepted = sum(h.agent.receiver.payload_bytes for h in result.network.hosts)
    assert accepted == sum(m.size for m in msgs), specs
    for r in result.records:
        assert r.start_ps <= r.deliver_ps <= r.finish_ps
    event("packets lost to failures: %s" % ("yes" if sum(s["failures"]["drops"].values())
                                             else "no"))
    return s


DETECT = st.sampled_from([0, 10 * US, 100 * US, 1000 * US])


@given(workloads(), schedules(), DETECT, st.integers(0, 1000))
def test_gse_delivers_everything_through_any_connected_schedule(msgs, specs, detect, seed):
    check("gse", GseConfig(), msgs, specs, detect, seed)


@given(workloads(), schedules(detected=False), st.integers(0, 1000))
def test_gse_steers_around_failures_the_switches_never_learn(msgs, specs, seed):
    check("gse", GseConfig(), msgs, specs, -1, seed)


@given(workloads(), schedules(), DETECT, st.integers(0, 1000))
def test_roce_delivers_everything_through_any_connected_schedule(msgs, specs, detect, seed):
    check("roce", RoceConfig(), msgs, specs, detect, seed)


@given(workloads(), schedules(), DETECT, st.integers(0, 1000))
def test_fabric_mode_delivers_everything_through_any_connected_schedule(msgs, specs, detect,
                                                                        seed):
    check("gse-fabric", FabricConfig(), msgs, specs, detect, seed)


# -- the envelope: the largest fan-in, as many links dead as the fabric survives ----------

def _keep_core(c0):
    """The links through core ``c0`` that keep every pair of hosts connected: its link
    to each pod's aggregation switch above it, and every edge's link to that switch."""
    keep = set()
    for link in TOPO.links:
        names = {TOPO.nodes[link.a].name, TOPO.nodes[link.b].name}
        agg = [n for n in names if n.startswith("agg")]
        if not agg or int(agg[0].split("_")[1]) != c0 // 2:
            continue
        if "core%d" % c0 in names or any(n.startswith("edge") for n in names):
            keep.add(link.index)
    return keep


@st.composite
def envelope_schedules(draw):
    """Many links dead at once (up to all but one core's: 20 of the 32 fabric links),
    connected by construction (so nothing is rejected): every link except those through
    one surviving core and its aggregation switches may die, at random times, some
    restored."""
    keep = _keep_core(draw(st.integers(0, 3)))
    candidates = [li for li in FABRIC_LINKS if li not in keep]
    dead = draw(st.lists(st.sampled_from(candidates), min_size=len(candidates) // 2,
                         max_size=len(candidates), unique=True))
    specs = []
    for li in dead:
        at = draw(st.integers(0, 60))
        spec = "link:%d@%dus" % (li, at)
        if draw(st.integers(0, 3)) == 0:
            spec += ",restore=%dus" % (at + draw(st.integers(1, 300)))
        specs.append(spec)
    return specs


@st.composite
def largest_fan_in(draw):
    """An incast from every other host (15:1), or an all-to-all, of 20-120 KB messages."""
    rng = random.Random(draw(st.integers(0, 2 ** 32)))
    size = draw(st.integers(20_000, 120_000))
    if draw(st.booleans()):
        return incast(N, N - 1, size, rng)
    msgs = []
    for src in range(N):
        for dst in range(N):
            if src != dst:
                msgs.append(Message(len(msgs) + 1, src, dst, size // 8, 0))
    return msgs


@given(largest_fan_in(), envelope_schedules(), DETECT, st.integers(0, 1000))
def test_fabric_mode_delivers_at_the_envelope(msgs, specs, detect, seed):
    """Fabric mode at the envelope: the largest fan-in of the fabric with up to 20 of its
    32 fabric links dead (but connected), with leaf recovery and the congestion response."""
    s = check("gse-fabric", FabricConfig(), msgs, specs, detect, seed)
    assert s["fabric"]["voqs_live"] == 0 and s["fabric"]["sent_buffers_live"] == 0
