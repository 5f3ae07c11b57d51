"""Switch queue thresholds: ECN between kmin and kmax, trimming, drop-tail; forwarding."""

import random

from gse.wire.packet import (ACK, DATA, F_ECN_CE, F_ECT, F_TRIMMED, HEADER_BYTES, PRIO_CONTROL,
                             PRIO_DATA, Packet, make_packet)
from switchmodel import DROPPED, ENQUEUED, TRIMMED, OutputQueue, QueueConfig, Switch


def data(psn=0, entropy=0, src=0, msg=1):
    return make_packet(kind=DATA, src=src, dst=1, msg_id=msg, psn=psn, entropy=entropy,
                       payload_len=4096, flags=F_ECT, msg_len=1 << 20, prio=PRIO_DATA)


def test_ecn_marks_only_between_thresholds():
    q = OutputQueue(QueueConfig(10**9, ecn=True, ecn_kmin=4160 * 10, ecn_kmax=4160 * 20,
                                ecn_pmax=1.0), random.Random(1))
    marks = []
    for i in range(40):
        p = data(i)
        assert q.enqueue(p) == ENQUEUED
        marks.append(bool(p.flags & F_ECN_CE))
    assert not any(marks[:10])           # occupancy <= kmin: never
    assert all(marks[19:])               # occupancy >= kmax: always (pmax = 1)
    assert 0 < sum(marks[10:19]) < 9     # in between: some
    assert q.counters.ecn_marks == sum(marks)


def test_trim_above_threshold_then_drop_when_control_full():
    cfg = QueueConfig(4160 * 4, control_queue_bytes=2 * HEADER_BYTES, trim=True,
                      trim_bytes=4160 * 2)
    q = OutputQueue(cfg, random.Random(1))
    results = [q.enqueue(data(i)) for i in range(5)]
    assert results == [ENQUEUED, ENQUEUED, TRIMMED, TRIMMED, DROPPED]
    assert q.counters.trims == 2 and q.counters.drops == 1
    # Trimmed headers leave first, at control priority, keeping the payload length.
    first = q.dequeue()
    assert first.flags & F_TRIMMED and first.size == HEADER_BYTES
    assert first.payload_len == 4096 and first.prio == PRIO_CONTROL
    assert q.dequeue().flags & F_TRIMMED
    assert q.dequeue().psn == 0 and q.dequeue().psn == 1 and q.dequeue() is None
    assert q.counters.peak_bytes == 2 * 4160 + 2 * HEADER_BYTES


def test_drop_tail_without_trimming():
    q = OutputQueue(QueueConfig(4160 * 3), random.Random(1))
    assert [q.enqueue(data(i)) for i in range(4)] == [ENQUEUED] * 3 + [DROPPED]
    ack = Packet(ACK, 1, 0, 1, 5)
    assert q.enqueue(ack) == ENQUEUED and q.dequeue() is ack   # control first


def test_spray_uses_every_path_and_ecmp_pins_a_flow():
    hops = [(0, 1, 2, 3)] * 4
    spray = Switch(10, "s", hops, 0x1234, "spray")
    used = {spray.route(data(i, entropy=i)) for i in range(256)}
    assert used == {0, 1, 2, 3}
    ecmp = Switch(10, "s", hops, 0x1234, "ecmp")
    assert len({ecmp.route(data(i, entropy=i)) for i in range(256)}) == 1
    assert len({ecmp.route(data(0, src=s, msg=s)) for s in range(64)}) == 4
    assert spray.route(Packet(DATA, 0, 99, 1, 0)) == -1 and spray.unroutable == 1


def test_entropy_recycling_prefers_clean_values_and_skips_penalised():
    from gse.agents.entropy import EntropySelector
    sel = EntropySelector(100, 8, penalty=8)
    first = [sel.next() for _ in range(4)]
    assert first == [100, 101, 102, 103]       # exploring from the base
    sel.recycle(101)
    sel.recycle(103)
    assert [sel.next(), sel.next()] == [101, 103]  # clean values come back first
    sel.penalise(104)
    assert sel.next() == 105                   # a penalised value is skipped while exploring
    assert 104 not in [sel.next() for _ in range(6)]


def test_the_counters_hold_the_bytes_queued_now_out_of_their_dict():
    """``counters.queued_bytes`` (what the sampler reads instead of the queue) equals the
    queue's bytes after every enqueue, trim, drop, dequeue, pause and flush, in both FIFO
    modes; ``as_dict`` (the runtimes' reports) leaves it out."""
    rng = random.Random(5)
    for priority in (True, False):
        cfg = QueueConfig(4160 * 6, control_queue_bytes=4 * HEADER_BYTES, trim=priority,
                          trim_bytes=4160 * 3, ecn=True, ecn_kmin=4160, ecn_kmax=4160 * 4,
                          control_priority=priority)
        q = OutputQueue(cfg, random.Random(1))
        seen = set()
        for i in range(400):
            step = rng.random()
            if step < 0.5:
                seen.add(q.enqueue(data(i)))
            elif step < 0.6:
                q.enqueue(make_packet(kind=ACK, src=1, dst=0, msg_id=1, psn=i,
                                      prio=PRIO_CONTROL))
            elif step < 0.65:
                q.paused = not q.paused
            elif step < 0.67:
                q.flush()
            else:
                q.dequeue()
            assert q.counters.queued_bytes == q.data_bytes + q.control_bytes
        assert DROPPED in seen and (TRIMMED in seen) == priority
        assert "queued_bytes" not in q.counters.as_dict()
        assert sorted(q.counters.as_dict()) == sorted(
            ["tx_bytes", "tx_packets", "drops", "trims", "ecn_marks", "peak_bytes"])


def test_the_counters_are_flagged_exactly_when_a_rarer_counter_changes():
    """``counters.s_flag`` (what tells the sampler to read drops, trims and ECN marks, in
    the compiled object's next line) is set by every operation that changes one of them
    and by no other, in both FIFO modes and with marks on enqueue and on dequeue."""
    rng = random.Random(7)
    for priority, on_dequeue in ((True, False), (False, False), (False, True)):
        cfg = QueueConfig(4160 * 6, control_queue_bytes=4 * HEADER_BYTES, trim=priority,
                          trim_bytes=4160 * 3, ecn=True, ecn_kmin=4160, ecn_kmax=4160 * 4,
                          control_priority=priority)
        cfg.ecn_on_dequeue = on_dequeue
        q = OutputQueue(cfg, random.Random(1))
        c = q.counters
        flagged = unflagged = 0
        for i in range(600):
            before = (c.drops, c.trims, c.ecn_marks)
            step = rng.random()
            if step < 0.55:
                q.enqueue(data(i))
            elif step < 0.65:
                q.enqueue(make_packet(kind=ACK, src=1, dst=0, msg_id=1, psn=i,
                                      prio=PRIO_CONTROL))
            elif step < 0.67:
                q.flush()
            else:
                q.dequeue()
            changed = (c.drops, c.trims, c.ecn_marks) != before
            assert c.s_flag == int(changed), (i, before)
            flagged += changed
            unflagged += not changed
            c.s_flag = 0                  # as the sampler does when it has read them
        assert flagged > 20 and unflagged > 20
        assert c.drops and c.ecn_marks and bool(c.trims) == priority


def test_the_linked_fifos_keep_order_and_references_through_any_mix_of_operations():
    # the compiled build links at the tail through a C pointer without a reference
    # (switchmodel/gse_qlink.h): the order, the queue's contents and every packet's
    # reference count must be those of a plain FIFO after any mix of enqueues,
    # dequeues, emptyings and flushes, in both classes
    import sys
    from collections import deque
    rng = random.Random(11)
    q = OutputQueue(QueueConfig(10**9, control_priority=True), random.Random(1))
    pkts = [data(i) if i % 3 else Packet(ACK, 1, 0, 1, i) for i in range(60)]
    base = [sys.getrefcount(p) for p in pkts]
    ctrl, dat = deque(), deque()
    for step in range(3000):
        r = rng.random()
        if r < 0.5:
            p = pkts[rng.randrange(len(pkts))]
            if p in ctrl or p in dat:
                continue
            assert q.enqueue(p) == ENQUEUED
            (dat if p.kind == DATA else ctrl).append(p)
        elif r < 0.98:
            want = ctrl.popleft() if ctrl else dat.popleft() if dat else None
            assert q.dequeue() is want
        else:
            assert q.flush() == list(ctrl) + list(dat)
            ctrl.clear()
            dat.clear()
        assert q.packets() == list(ctrl) + list(dat)
        assert len(q) == len(ctrl) + len(dat)
    while q.dequeue() is not None:
        pass
    del p, want                          # the loop's own references
    ctrl.clear()
    dat.clear()
    assert [sys.getrefcount(p) for p in pkts] == base
    assert all(p.qnext is None for p in pkts)


def test_a_simulated_port_is_its_queue_and_its_counters():
    """A network's ports count into themselves (issue 31: one object per port), the event
    queue's Handler is the one the queue derives from, and what a port counts is what its
    dequeues and straight transmissions sent."""
    from gse.common.handler import Handler
    from gse.config import GseConfig
    from gse.runtimes.sim import eventq
    from gse.runtimes.sim.network import LinkPort
    from gse.runtimes.sim.run import build_network
    from gse.workloads import traffic
    from switchmodel.queue import PortCounters
    from topologies import fat_tree

    assert eventq.Handler is Handler
    assert issubclass(LinkPort, OutputQueue) and issubclass(OutputQueue, PortCounters)
    assert issubclass(PortCounters, Handler)
    q = OutputQueue(QueueConfig(10**6), random.Random(1))
    assert q.counters is q
    topo = fat_tree(4)
    net = build_network(topo, "gse", GseConfig(), 1)
    net.schedule(traffic.permutation(len(topo.hosts), 100_000, random.Random(1)))
    net.run()
    assert len(net.records) == len(topo.hosts)
    for port in net.ports:
        assert port.queue is port and port.counters is port
        assert port.queued_bytes == 0 and not port.has_packets()
    sent = sum(port.tx_bytes for port in net.ports)
    assert sent > 16 * 100_000                 # every message crossed at least its NIC
    assert sum(port.tx_packets for port in net.ports) > 0
