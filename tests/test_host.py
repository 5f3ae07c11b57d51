"""The GSE host agent alone, on a direct wire: exact loss-recovery stories."""

from harness import Wire

from gse.config import GseConfig
from gse.wire.packet import ACK, DATA, F_RETX, GRANT, NACK, REQUEST

MTU = 4096


def kinds(wire, kind):
    return [p for p in wire.sent if p.kind == kind]


def test_clean_transfer_scheduled_after_unscheduled_window():
    cfg = GseConfig(unsched_bytes=4 * MTU)
    w = Wire(config=cfg)
    w.start(0, 1, 1, 40 * MTU)
    w.run()
    assert (0, 1) in w.delivered
    data = kinds(w, DATA)
    assert len(data) == 40 and not any(p.flags & F_RETX for p in data)
    # The REQUEST goes first; grants pay for exactly the scheduled part.
    assert w.sent[0].kind == REQUEST and w.sent[0].credit == 36 * MTU
    assert sum(g.credit for g in kinds(w, GRANT)) == 36 * MTU
    assert w.hosts[0].out == {}              # sender state released


def test_no_unscheduled_window_waits_for_credit():
    w = Wire(config=GseConfig(unsched_bytes=0))
    w.start(0, 1, 1, 10 * MTU)
    w.run(1_500_000)                          # before any grant can be back
    assert kinds(w, DATA) == []
    w.run()
    assert (0, 1) in w.delivered


def test_trimmed_packet_is_nacked_and_resent_at_once():
    def trim_psn3(pkt):
        if pkt.kind == DATA and pkt.psn == 3 and not pkt.flags & F_RETX:
            pkt.trim()
        return False
    w = Wire(config=GseConfig(unsched_bytes=8 * MTU), drop=trim_psn3)
    w.start(0, 1, 1, 8 * MTU)
    w.run()
    nacks = kinds(w, NACK)
    assert [n.psn for n in nacks] == [3]
    resent = [p for p in kinds(w, DATA) if p.flags & F_RETX]
    assert [p.psn for p in resent] == [3]
    assert w.hosts[0].timeouts == 0           # recovered without waiting for the RTO
    assert (0, 1) in w.delivered


def test_tail_probe_then_rto_probes_with_exponential_backoff():
    drops = []

    def drop_three(pkt):
        if pkt.kind == DATA and len(drops) < 3:
            drops.append(pkt.ts)
            return True
        return False
    cfg = GseConfig()
    w = Wire(config=cfg, drop=drop_three)
    w.start(0, 1, 1, 1000)                    # one packet: only probes can recover it
    w.run()
    assert (0, 1) in w.delivered
    sends = [p.ts for p in kinds(w, DATA)]
    rto, pto = cfg.rto_ps, cfg.tlp_min_ps     # no RTT sample yet: the minimum PTO
    # tail probe after the PTO; the RTO counts from the oldest packet out (the probe),
    # then backs off to 2 x RTO
    assert sends == [0, pto, pto + rto, pto + 3 * rto]
    assert w.hosts[0].tail_probes == 1 and w.hosts[0].timeouts == 2


def test_lost_tail_costs_one_probe_not_a_window():
    lost = []

    def drop_last_once(pkt):
        if pkt.kind == DATA and pkt.psn == 7 and not lost:
            lost.append(pkt)
            return True
        return False
    w = Wire(config=GseConfig(unsched_bytes=8 * MTU), drop=drop_last_once)
    w.start(0, 1, 1, 8 * MTU)
    w.run()
    assert (0, 1) in w.delivered
    # psn 4..6 were received but not yet acknowledged (coalescing) when psn 7 was lost:
    # the tail-loss probe resends only the newest packet, long before any RTO.
    resent = [p for p in kinds(w, DATA) if p.flags & F_RETX]
    assert [p.psn for p in resent] == [7]
    assert w.hosts[0].timeouts == 0 and w.hosts[0].tail_probes == 1
    assert resent[0].ts < lost[0].ts + 3 * GseConfig().tlp_min_ps
    assert w.hosts[1].receiver.duplicates == 0


def test_sack_fast_retransmit_without_timeout():
    def drop_psn5(pkt):
        return pkt.kind == DATA and pkt.psn == 5 and not pkt.flags & F_RETX
    cfg = GseConfig(unsched_bytes=0)
    w = Wire(config=cfg, drop=drop_psn5)
    w.start(0, 1, 1, 400 * MTU)              # long enough for 30 us of later packets
    w.run()
    assert (0, 1) in w.delivered
    assert w.hosts[0].timeouts == 0 and w.hosts[0].fast_retx_bytes == MTU
    assert [p.psn for p in kinds(w, DATA) if p.flags & F_RETX] == [5]


def test_lost_request_and_lost_grants_are_repaired():
    dropped = {"req": 0, "grant": 0}

    def drop_control(pkt):
        if pkt.kind == REQUEST and dropped["req"] == 0:
            dropped["req"] += 1
            return True
        if pkt.kind == GRANT and dropped["grant"] < 3:
            dropped["grant"] += 1
            return True
        return False
    w = Wire(config=GseConfig(unsched_bytes=0), drop=drop_control)
    w.start(0, 1, 1, 20 * MTU)
    w.run()
    assert (0, 1) in w.delivered
    assert dropped == {"req": 1, "grant": 3}
    assert len(kinds(w, REQUEST)) >= 2


def test_duplicates_are_not_delivered_twice_and_late_packets_get_a_final_ack():
    w = Wire(config=GseConfig(unsched_bytes=4 * MTU))
    w.start(0, 1, 1, 4 * MTU)
    w.run()
    first = kinds(w, DATA)[0]
    acks_before = len(kinds(w, ACK))
    w.hosts[1].receive(first, w.now)          # a late duplicate
    w.after(1)
    w.run()
    assert len(w.delivered) == 1 and w.hosts[1].receiver.duplicates == 1
    assert len(kinds(w, ACK)) == acks_before + 1


def test_corrupt_packets_are_counted_and_dropped():
    seen = []

    def corrupt_first(pkt):
        if pkt.kind == DATA and not seen:
            seen.append(pkt)
            pkt.corrupt = True
        return False
    w = Wire(config=GseConfig(unsched_bytes=4 * MTU), drop=corrupt_first)
    w.start(0, 1, 1, 4 * MTU)
    w.run()
    assert w.hosts[1].malformed == 1 and (0, 1) in w.delivered


def test_bad_message_arguments_refused():
    import pytest
    w = Wire()
    with pytest.raises(ValueError, match="itself"):
        w.start(0, 1, 0, 100)
    with pytest.raises(ValueError, match="size"):
        w.start(0, 2, 1, 0)
    w.start(0, 3, 1, 100)
    with pytest.raises(ValueError, match="already in use"):
        w.start(0, 3, 1, 100)


def test_two_probes_queued_together_both_go_without_credit():
    """An RTO probe and a tail probe can be owed at once: each is a credit-free send."""
    from gse.agents.sender import OutMsg
    cfg = GseConfig(unsched_bytes=4 * MTU)
    msg = OutMsg(1, 0, 1, 4 * MTU, MTU, cfg.unsched_bytes, 7, cfg, 0)
    sent = [msg.next_packet(t) for t in range(4)]
    assert msg.on_timeout() == 0          # oldest outstanding
    assert msg.probe_tail() == 3          # newest outstanding
    assert msg.credit == 0 and msg.can_send()
    assert [msg.next_packet(10).psn, msg.next_packet(11).psn] == [3, 0]
    assert not msg.can_send() and msg.probe == 0
    # a retransmission stranded without credit is released by the next timeout
    msg.mark_lost(1)
    assert not msg.can_send() and msg.on_timeout() == 1 and msg.can_send()
    assert sent[0].psn == 0
