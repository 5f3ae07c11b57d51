"""The credit scheduler never grants faster than its downlink, under any demand pattern."""

from hypothesis import given
from hypothesis import strategies as st

from gse.agents.scheduler import CreditScheduler, Demand, wire_ps


def drive(sched, demands, adds):
    """Run the pacer: demand arrives per ``adds`` (time, index, bytes); grant when due."""
    adds = sorted(adds)
    grants = []
    t = 0
    i = 0
    while i < len(adds) or sched.armed:
        if i < len(adds) and (not sched.armed or adds[i][0] <= sched.next_time):
            t = max(t, adds[i][0])
            _, idx, nbytes = adds[i]
            sched.add_need(demands[idx], nbytes, t)
            i += 1
            continue
        t = max(t, sched.next_time)
        got = sched.grant(t)
        if got:
            grants.append((t, got[0], got[1]))
    return grants


@given(st.sampled_from(["rr", "srpt"]),
       st.lists(st.tuples(st.integers(0, 10**8), st.integers(0, 4),
                          st.integers(1, 300_000)), min_size=1, max_size=30))
def test_never_grants_beyond_rate(policy, adds):
    mtu, gbps = 4096, 100.0
    sched = CreditScheduler(gbps, 1.0, mtu, 4 * mtu, policy)
    demands = [Demand(i, i) for i in range(5)]
    grants = drive(sched, demands, adds)
    # Each grant's wire time passes before the next may go: rate is never exceeded.
    for (t0, _, b0), (t1, _, _) in zip(grants, grants[1:]):
        assert t1 - t0 >= wire_ps(b0, mtu, 100_000)
    # Every byte asked for is granted exactly once, none more.
    for i, d in enumerate(demands):
        asked = sum(b for _, idx, b in adds if idx == i)
        assert d.granted_total == asked == sum(b for _, dd, b in grants if dd is d)
    assert all(b <= 4 * mtu for _, _, b in grants)


def test_round_robin_alternates_and_srpt_prefers_short():
    for policy, expect in (("rr", [0, 1, 0, 1]), ("srpt", [1, 1, 0, 0])):
        sched = CreditScheduler(100.0, 1.0, 4096, 4096, policy)
        d = [Demand(0, 0), Demand(1, 1)]
        sched.add_need(d[0], 4 * 4096, 0)
        sched.add_need(d[1], 2 * 4096, 0)
        order = []
        t = 0
        while sched.armed:
            t = sched.next_time
            order.append(sched.grant(t)[0].key)
        assert order[:4] == expect


def test_grant_before_due_time_is_an_error():
    import pytest
    sched = CreditScheduler(100.0, 1.0, 4096, 4096, "rr")
    d = Demand(0, 0)
    sched.add_need(d, 3 * 4096, 0)
    sched.grant(0)
    with pytest.raises(ValueError, match="before its time"):
        sched.grant(1)
