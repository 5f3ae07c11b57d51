"""What a GSE receiver gives a REQUEST it cannot yet trust (issue 19, item 4).

A REQUEST is 64 bytes anyone can send.  It must not allocate a receive bitmap (up to
128 KiB for a 4 GB message), must not hold state without bound, and a REQUEST nobody
follows up must not keep taking the downlink's credit from real messages.  Times are the
harness's virtual clock.
"""

import tracemalloc

from harness import Wire

from gse.config import GseConfig
from gse.wire.packet import DATA, F_RETX, GRANT, PRIO_CONTROL, PRIO_DATA, REQUEST, Packet

MTU = 4096
HUGE = 2 ** 32 - 1


def phantom(src, dst, msg_id, size=HUGE, retx=False, aux=0):
    """A REQUEST for a message that will never come: the largest size, all of it asked."""
    return Packet(REQUEST, src, dst, msg_id=msg_id, psn=1, flags=F_RETX if retx else 0,
                  msg_len=size, credit=size, aux=aux, prio=PRIO_CONTROL)


def flood(wire, dst, n, src=2, first_id=1_000_000, vary_src=False):
    host = wire.hosts[dst]
    for i in range(n):
        host.receive(phantom(src + i if vary_src else src, dst, first_id + i), wire.now)
    wire.after(dst)


def test_a_request_allocates_no_receive_bitmap():
    w = Wire(n_hosts=3)
    rx = w.hosts[1].receiver
    w.hosts[1].receive(phantom(2, 1, 7), 0)
    msg = rx.messages[(2, 7)]
    assert msg.bitmap is None, "a REQUEST alone must not allocate the receive bitmap"
    # its first DATA does
    w.hosts[1].receive(Packet(DATA, 2, 1, msg_id=7, psn=0, payload_len=MTU, msg_len=HUGE,
                              prio=PRIO_DATA), 10)
    assert msg.bitmap is not None and msg.bitmap.npkts == (HUGE + MTU - 1) // MTU
    assert rx.unproven == 0 and rx.unproven_of == {}


def test_phantom_requests_are_capped_per_peer_and_in_all():
    cfg = GseConfig()
    w = Wire(n_hosts=3, config=cfg)
    rx = w.hosts[1].receiver
    flood(w, 1, 1000)                                  # one source
    assert len(rx.messages) == cfg.max_requests_per_peer == 8
    assert rx.requests_refused == 1000 - 8
    cfg2 = GseConfig(max_requests=100)
    w2 = Wire(n_hosts=3, config=cfg2)
    rx2 = w2.hosts[1].receiver
    flood(w2, 1, 1000, src=10, vary_src=True)          # a source each (forged)
    assert len(rx2.messages) == 100 and rx2.requests_refused == 900
    assert w2.hosts[1].counters()["requests_refused"] == 900


def test_a_thousand_phantom_requests_cost_little_memory():
    """The issue measured 1,000 REQUESTs raising an agent's RSS by 128 MB (131 KB each)."""
    w = Wire(n_hosts=3, config=GseConfig(max_requests_per_peer=1000, max_requests=1000))
    rx = w.hosts[1].receiver
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        flood(w, 1, 1000, src=10, vary_src=True)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(rx.messages) == 1000                    # every one admitted ...
    assert grown < 1_000_000, grown                   # ... at well under 1 KB each


def honest_delivery_ps(phantoms, unsched=GseConfig().unsched_bytes, size=1_000_000):
    cfg = GseConfig(unsched_bytes=unsched)
    w = Wire(n_hosts=3, config=cfg)
    if phantoms:
        flood(w, 1, phantoms)
    w.start(0, 1, 1, size)
    w.run(10 ** 10)
    assert (0, 1) in w.delivered
    return w.delivered[(0, 1)], w, cfg


def test_phantom_requests_delay_an_honest_message_by_less_than_a_request_timeout():
    for unsched in (GseConfig().unsched_bytes, 0):
        clean, _, _ = honest_delivery_ps(0, unsched)
        flooded, w, cfg = honest_delivery_ps(1000, unsched)
        assert flooded - clean <= cfg.request_timeout_ps, (unsched, clean, flooded)
        rx = w.hosts[1].receiver
        # the phantoms were granted for half a request timeout at most, then forgotten
        assert rx.requests_expired == 8 and not rx.messages and rx.unproven == 0
        assert rx.scheduler.granted_bytes - (1_000_000 - w.hosts[0].config.unsched_bytes
                                             if unsched else 1_000_000) > 0
        assert w.hosts[2].unknown_grants > 0           # their grants went nowhere


def test_grants_for_unknown_messages_are_counted():
    w = Wire(n_hosts=2)
    h0 = w.hosts[0]
    h0.receive(Packet(GRANT, 1, 0, msg_id=99, credit=MTU, prio=PRIO_CONTROL), 0)
    assert h0.unknown_grants == 1 and h0.counters()["unknown_grants"] == 1


def test_an_expired_request_is_recreated_with_the_credit_its_sender_holds():
    cfg = GseConfig(unsched_bytes=0)
    w = Wire(n_hosts=3, config=cfg)
    h1 = w.hosts[1]
    rx = h1.receiver
    h1.receive(phantom(2, 1, 5, size=100 * MTU), 0)
    w.after(1)
    w.run(cfg.request_timeout_ps * 2)                   # granted, no data, expired
    granted = rx.scheduler.granted_bytes
    assert granted > 0 and rx.requests_expired == 1 and (2, 5) not in rx.messages
    # the sender was starved (its grants were lost, say) and asks again with what it has
    h1.receive(phantom(2, 1, 5, size=100 * MTU, retx=True, aux=granted), w.now)
    demand = rx.messages[(2, 5)].demand
    assert demand.granted_total == granted and demand.wanted() == 100 * MTU - granted


def test_an_honest_unscheduled_free_message_survives_a_lost_first_grant():
    """Its REQUEST is unproven until data comes; losing its grants must not strand it."""
    lost = []

    def drop_first_grants(pkt):
        if pkt.kind == GRANT and len(lost) < 3:
            lost.append(pkt)
            return True
        return False
    w = Wire(config=GseConfig(unsched_bytes=0), drop=drop_first_grants)
    w.start(0, 1, 1, 20 * MTU)
    w.run(10 ** 10)
    assert (0, 1) in w.delivered and len(lost) == 3


def test_a_stalled_message_is_held_then_resumed_by_its_data():
    """A proven message whose granted data stops coming stops taking grants."""
    cfg = GseConfig(unsched_bytes=0)
    stall = {"on": False}

    def drop_data_while_stalled(pkt):
        return stall["on"] and pkt.kind == DATA
    w = Wire(config=cfg, drop=drop_data_while_stalled)
    w.start(0, 1, 1, 400 * MTU)
    w.run(20_000_000)                                   # well under way
    sched = w.hosts[1].receiver.scheduler
    stall["on"] = True
    w.run(w.now + 3 * cfg.request_timeout_ps)
    assert sched.holds >= 1
    granted = sched.granted_bytes
    w.run(w.now + 3 * cfg.request_timeout_ps)
    assert sched.granted_bytes == granted               # nothing granted while held
    stall["on"] = False
    w.run(10 ** 11)
    assert (0, 1) in w.delivered


def test_finished_message_ids_are_bounded_in_number_and_time():
    """Issue 19 item 5: ``receiver.finished`` kept every delivered message's id for ever
    (20,000 entries after a 20,000-message run)."""
    from gse.agents.receiver import FINISHED_HOLD
    cfg = GseConfig(max_finished=50)
    w = Wire(config=cfg)
    rx = w.hosts[1].receiver
    for i in range(200):
        w.start(0, i, 1, 1000)
        w.run(w.now + 5_000_000)
    assert len(w.delivered) == 200
    assert len(rx.finished) == 50
    assert (0, 199) in rx.finished and (0, 0) not in rx.finished   # the oldest forgotten
    # a late duplicate of a remembered message still gets its final ACK, not a delivery
    late = Packet(DATA, 0, 1, msg_id=199, psn=0, payload_len=1000, msg_len=1000,
                  prio=PRIO_DATA)
    w.hosts[1].receive(late, w.now)
    assert rx.duplicates == 1 and w.hosts[1].next_event() is None and not rx.messages
    # time: once 4 x rto_max has passed, the next delivery forgets them all
    w.now += FINISHED_HOLD * cfg.rto_max_ps + 1
    w.start(0, 1000, 1, 1000)
    w.run(w.now + 5_000_000)
    assert list(rx.finished) == [(0, 1000)]
