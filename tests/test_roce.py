"""The RoCEv2 baseline alone: go-back-N, NAK, RTO, CNP pacing, DCQCN, PFC accounting."""

import pytest
from harness import Wire

from gse.agents.dcqcn import Dcqcn
from gse.config import ConfigError, RoceConfig
from gse.wire.packet import ACK, CNP, DATA, F_ECN_CE, F_RETX, NACK
from switchmodel.pfc import PfcConfig, PfcState

MTU = 4096


def sent(w, kind):
    return [p for p in w.sent if p.kind == kind]


def roce(**kw):
    return RoceConfig(**kw)


def test_clean_transfer_is_in_order_without_naks():
    w = Wire(protocol="roce", config=roce(dcqcn=False))
    w.start(0, 1, 1, 50 * MTU)
    w.run()
    assert (0, 1) in w.delivered
    assert [p.psn for p in sent(w, DATA)] == list(range(50))
    assert sent(w, NACK) == [] and w.hosts[1].receiver.ooo_discarded == 0
    assert sent(w, ACK)[-1].psn == 50


def test_go_back_n_after_a_loss():
    def drop_psn3(pkt):
        return pkt.kind == DATA and pkt.psn == 3 and not pkt.flags & F_RETX
    w = Wire(protocol="roce", config=roce(dcqcn=False), drop=drop_psn3)
    w.start(0, 1, 1, 20 * MTU)
    w.run()
    assert (0, 1) in w.delivered
    naks = sent(w, NACK)
    assert [n.psn for n in naks] == [3]                  # one NAK per hole
    resent = [p.psn for p in sent(w, DATA) if p.flags & F_RETX]
    assert resent[0] == 3 and resent == list(range(3, 3 + len(resent)))
    assert w.hosts[1].receiver.ooo_discarded >= 1                 # later packets were thrown away
    assert w.hosts[0].sender.retransmit_bytes == len(resent) * MTU


def test_lost_tail_recovered_by_rto():
    lost = []

    def drop_last(pkt):
        if pkt.kind == DATA and pkt.psn == 9 and not lost:
            lost.append(pkt)
            return True
        return False
    cfg = roce(dcqcn=False)
    w = Wire(protocol="roce", config=cfg, drop=drop_last)
    w.start(0, 1, 1, 10 * MTU)
    w.run()
    assert (0, 1) in w.delivered and w.hosts[0].sender.timeouts == 1


def test_cnp_at_most_once_per_interval_and_dcqcn_slows_the_sender():
    def mark_all(pkt):
        if pkt.kind == DATA:
            pkt.flags |= F_ECN_CE
        return False
    cfg = roce()
    w = Wire(protocol="roce", config=cfg, drop=mark_all)
    w.start(0, 1, 1, 2000 * MTU)                         # ~660 us at line rate
    w.run()
    assert (0, 1) in w.delivered
    cnps = [p.ts for p in sent(w, CNP)]
    assert len(cnps) >= 2
    assert all(b - a >= cfg.cnp_interval_ps for a, b in zip(cnps, cnps[1:]))
    # The limiter spaced the data out: slower than line rate.
    data = sent(w, DATA)
    assert data[-1].ts - data[0].ts > 2 * 2000 * (MTU + 64) * 8 * 10


def test_dcqcn_cut_and_recovery():
    cfg = roce()
    cc = Dcqcn(100_000, cfg)
    cc.on_cnp(0)
    assert cc.rc == pytest.approx(50_000) and cc.rt == 100_000   # alpha = 1: halve
    rates = []
    t = 0
    for _ in range(200):
        t = cc.next_deadline()
        if t < 0:
            break
        cc.on_timer(t)
        rates.append(cc.rc)
    assert all(b >= a for a, b in zip(rates, rates[1:]))        # no CNP: only increases
    assert max(rates) <= 100_000
    assert cc.alpha < 1.0                                       # alpha decays without CNPs


def test_pfc_pause_at_xoff_resume_at_xon_and_dynamic_threshold():
    st = PfcState(PfcConfig(xoff_bytes=10_000, xon_gap_bytes=4_000, headroom_bytes=8_000), 2)
    assert [st.on_enqueue(0, 4000) for _ in range(3)] == [False, False, True]
    assert st.on_enqueue(0, 4000) is False and st.headroom_overflows == 0
    assert st.on_enqueue(0, 4000) is False and st.headroom_overflows == 1
    # 20,000 queued; RESUME once at or below XON = 10,000 - 4,000
    assert [st.on_dequeue(0, 4000) for _ in range(4)] == [False, False, False, True]
    assert st.pauses_sent == 1 and st.resumes_sent == 1
    dyn = PfcState(PfcConfig(xoff_bytes=0, dynamic_alpha=0.125, buffer_bytes=80_000), 2)
    assert dyn.xoff() == 10_000
    dyn.on_enqueue(1, 40_000)                   # a full port shrinks everyone's threshold
    assert dyn.xoff() == 5_000 and dyn.pausing[1]


def test_bad_roce_parameters_refused():
    with pytest.raises(ConfigError, match="pfc_xon_bytes"):
        RoceConfig(pfc_xon_bytes=10**6)
    with pytest.raises(ConfigError, match="dcqcn_g"):
        RoceConfig(dcqcn_g=2)


# -- named deadlines, step by step (aioquic's test_connect_with_loss_1 style) ----------------

def _ack(cum, now, src=1, dst=0, msg_id=1):
    from gse.wire.packet import PRIO_CONTROL, new_packet
    return new_packet(ACK, src, dst, msg_id, cum, 0, 0, 0, 4 * MTU, 0, 0, 0, 0, now,
                      PRIO_CONTROL)


def _named(h):
    return sorted((kind, t) for kind, _, t in h.deadlines())


def test_deadlines_name_the_rto_and_an_ack_after_a_backed_off_timeout_brings_it_forward():
    """After a timeout (backoff 2) an ACK restarts the RTO at one rto_ps: the timer must
    fall due then, not at the backed-off deadline it replaced (a deadline moved earlier
    needs its own heap entry)."""
    import random

    from gse.agents.roce_host import RoceHost
    cfg = roce(dcqcn=False)
    rto = cfg.rto_ps
    h = RoceHost(0, cfg, random.Random(1), 100.0)
    assert h.next_deadline() == -1 and h.deadlines() == []
    h.start_message(1, 1, 4 * MTU, 0)
    assert [h.poll(0).psn for _ in range(4)] == [0, 1, 2, 3] and h.poll(0) is None
    assert _named(h) == [("rto", rto)] and h.next_deadline() == rto
    h.on_timer(rto)                                  # nothing acknowledged: time out
    assert h.counters()["timeouts"] == 1 and _named(h) == [("rto", 3 * rto)]
    assert h.next_deadline() == 3 * rto
    assert h.poll(rto).psn == 0                      # go back to una
    h.receive(_ack(1, rto + 10), rto + 10)           # progress: backoff off, 1 x rto
    assert _named(h) == [("rto", 2 * rto + 10)] and h.next_deadline() == 2 * rto + 10
    h.on_timer(2 * rto + 10)                         # psn 1.. still out: time out again
    assert h.counters()["timeouts"] == 2 and h.out[1].next_psn == 1
    assert _named(h) == [("rto", 4 * rto + 10)]
    h.on_timer(3 * rto)                              # the replaced entry: skipped
    assert h.counters()["timeouts"] == 2 and h.next_deadline() == 4 * rto + 10
    h.receive(_ack(4, 3 * rto), 3 * rto)             # all acknowledged
    from gse.agents.events import MessageCompleted
    assert h.next_event() == MessageCompleted(1, 1, 3 * rto) and h.next_event() is None
    assert h.deadlines() == []


def test_deadlines_cover_pacers_dcqcn_and_cnp_ticks():
    """Every armed deadline is named and the heap falls due no later than the earliest."""
    import random

    from gse.agents.roce_host import RoceHost
    cfg = roce(nic_scheduler="htsim", cnp_pacing="grid")
    h = RoceHost(0, cfg, random.Random(1), 100.0)
    h.start_message(1, 1, 8 * MTU, 0)
    h.poll(0)
    kinds = {kind for kind, _ in _named(h)}
    assert kinds == {"rto", "gen"}
    assert h.next_deadline() <= min(t for _, t in _named(h))
    from gse.wire.packet import PRIO_DATA, new_packet
    h.receive(new_packet(DATA, 2, 0, 7, 0, 5, MTU, F_ECN_CE, 4 * MTU, 0, 0, 0, 0, 0,
                         PRIO_DATA), 0)
    assert ("cnp", cfg.cnp_interval_ps) in _named(h)
    h.receive(new_packet(CNP, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, PRIO_DATA), 10)
    assert "dcqcn" in {kind for kind, _ in _named(h)}
    assert h.next_deadline() <= min(t for _, t in _named(h))
