"""Property test over real sockets (issue 28, part 2): fabric mode (``gse-fabric``) on the
in-process UDP runtime (loopback), leaf recovery on (its default, ``UDP_FABRIC``), under
generated failure schedules that leave the fabric connected, delivers every message
exactly once and intact.

The twin of ``test_fabric_mode_delivers_everything_through_any_connected_schedule``
(``tests/test_failure_properties.py``): its link, switch, flapping and gray failures on
the switch-to-switch links of a k=4 Fat-Tree, with or without restore and per-entry
detection, drawn as ``--fail`` texts, but in milliseconds (the links run at 0.1 Gb/s, a
4 KB packet takes ~0.33 ms per hop, a message a few ms) so they fall while the few small
messages are in flight.  As there, a schedule that cuts a host off at some moment is
rejected, and the switches always learn of a change (detection after 0, 2 or 10 ms, or
an entry's own ``detect=``), as in the simulation's fabric-mode test.  The runtime's own
checks decide:
no duplicate delivery, no payload error, nothing lost, the run done, every message
received once, the leaves holding nothing at the end.  Delivery and correctness only,
never wall-clock speed; a handful of derandomized examples, so CI stays affordable.
"""

import random

from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from gse.config import PS_PER_US
from gse.protocols import default_config
from gse.runtimes.udp.config import UDP_FABRIC, udp_profile
from gse.runtimes.udp.network import run_udp
from gse.workloads.faults import build_schedule
from gse.workloads.traffic import Message
from test_failure_properties import FABRIC_LINKS, INNER, deliverable
from topologies import fat_tree

GBPS = 0.1
TOPO = fat_tree(4, link_gbps=GBPS)
N = len(TOPO.hosts)
MS = 1000 * PS_PER_US


@st.composite
def small_workloads(draw):
    """2-12 messages of 4-60 KB between random pairs, starting within 3 ms (each takes
    0.3-5 ms on a 0.1 Gb/s link: still flowing when the failures come)."""
    rng = random.Random(draw(st.integers(0, 2 ** 32)))
    msgs = []
    for i in range(draw(st.integers(2, 12))):
        src, dst = rng.sample(range(N), 2)
        msgs.append(Message(i + 1, src, dst, rng.randrange(4_000, 60_000),
                            rng.randrange(4) * MS))
    return msgs


@st.composite
def entries(draw):
    """One ``--fail`` entry, as ``test_failure_properties.entries`` draws it, in ms."""
    at = draw(st.integers(0, 8))
    kind = draw(st.sampled_from(["link", "link", "switch", "flap", "gray"]))
    if kind == "switch":
        spec = "switch:%s@%dms" % (draw(st.sampled_from(INNER)), at)
    else:
        spec = "link:%d@%dms" % (draw(st.sampled_from(FABRIC_LINKS)), at)
    if kind == "flap":
        return spec + ",flap=%dms/%dms,until=%dms" % (
            draw(st.integers(1, 3)), draw(st.integers(1, 3)), at + draw(st.integers(1, 20)))
    if kind == "gray":
        spec += ",gray=%d%%" % draw(st.integers(1, 20))
    if draw(st.booleans()):
        spec += ",restore=%dms" % (at + draw(st.integers(1, 20)))
    if kind != "gray" and draw(st.integers(0, 3)) == 0:
        spec += ",detect=%dms" % draw(st.integers(0, 10))
    return spec


DETECT = st.sampled_from([0, 2 * MS, 10 * MS])


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(small_workloads(), st.lists(entries(), min_size=1, max_size=4), DETECT,
       st.integers(0, 1000))
def test_udp_fabric_mode_delivers_everything_through_any_connected_schedule(msgs, specs,
                                                                            detect, seed):
    sched = build_schedule(TOPO, specs, seed=seed)
    assume(deliverable(sched, detect))
    cfg = udp_profile(default_config("gse-fabric"), link_gbps=GBPS)
    assert cfg.leaf_recovery == UDP_FABRIC["leaf_recovery"]          # the runtime's default
    result = run_udp(TOPO, msgs, "gse-fabric", cfg, seed=seed, timeout_s=60.0,
                     faults=sched, detect_ps=detect)
    s = result.summary
    u = s["udp"]
    assert u["end"] == "done" and s["lost"] == 0, (specs, u)
    assert s["delivered"] == s["completed"] == len(msgs), specs
    assert u["duplicate_deliveries"] == 0 and u["payload_errors"] == 0, (specs, u)
    assert u["errors"] == [] and u["agent_errors"] == 0 and u["malformed_total"] == 0, u
    got = sorted((src, mid) for h in result.network.hosts for src, mid in h.delivered)
    assert got == sorted((m.src, m.msg_id) for m in msgs), specs
    f = s["fabric"]
    assert f["leaves_idle"] == f["leaves"] == 8, (specs, f)          # nothing held at the end
    assert f["voqs_live"] == 0 and f["bad_frames"] == 0 and f["sent_buffers_live"] == 0, f
    drops = sum(s["failures"]["drops"].values()) if "drops" in s["failures"] else None
    event("packets lost to failures: %s" % ("yes" if drops else "no"))
    event("leaf resends: %s" % ("yes" if f["leaf_resends"] else "no"))
