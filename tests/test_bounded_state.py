"""Every agent's state stays bounded whatever arrives (issue 15, bounded state).

Well-formed but hostile packets -- DATA for millions of message ids, 4 GB messages, forged
sources -- used to allocate state without limit.  Each limit has a documented default
(``GseConfig``, ``RoceConfig``, ``FabricConfig``) and a counter per refusal, and the
messages of honest peers keep flowing while it bites.  Times are the virtual clock.
"""

from harness import Wire

from gse.config import GseConfig, RoceConfig
from gse.wire.packet import DATA, F_UNSCHED, PRIO_CONTROL, PRIO_DATA, REQUEST, Packet, make_packet
from switchmodel.fabric import FabricConfig, FabricLeaf
from switchmodel.switch import Switch

MTU = 4096
HUGE = 2 ** 32 - 1


def forged_data(src, dst, msg_id, size=HUGE, psn=0):
    return Packet(DATA, src, dst, msg_id=msg_id, psn=psn, payload_len=MTU, msg_len=size,
                  prio=PRIO_DATA)


def test_gse_inbound_messages_are_capped_per_peer_and_in_all():
    cfg = GseConfig()
    w = Wire(n_hosts=3, config=cfg)
    h1 = w.hosts[1]
    rx = h1.receiver
    for i in range(1000):
        h1.receive(forged_data(2, 1, 10 ** 6 + i, size=100 * MTU), 0)
    assert len(rx.messages) == rx.inbound == cfg.max_inbound_per_peer == 256
    assert rx.inbound_refused == 1000 - 256 and h1.counters()["inbound_refused"] == 744
    cfg2 = GseConfig(max_inbound=300)
    w2 = Wire(n_hosts=3, config=cfg2)
    h = w2.hosts[1]
    for i in range(1000):
        h.receive(forged_data(10 + i, 1, 7, size=100 * MTU), 0)
    assert h.receiver.inbound == 300 and h.receiver.inbound_refused == 700


def test_gse_reassembly_memory_is_bounded_and_idle_state_goes_first():
    cfg = GseConfig(max_reassembly_bytes=2 * 1024 * 1024)
    w = Wire(n_hosts=3, config=cfg)
    h1 = w.hosts[1]
    rx = h1.receiver
    for i in range(100):                      # 4 GB messages: 128 KiB of bitmap each
        h1.receive(forged_data(2 + i % 50, 1, i), 0)
    assert rx.reassembly <= cfg.max_reassembly_bytes and rx.inbound == 15
    assert rx.inbound_refused == 85
    # an honest message is refused too while the forged state is young ...
    later = 4 * cfg.rto_max_ps + 1
    h1.receive(forged_data(0, 1, 1), later // 2)
    assert (0, 1) not in rx.messages
    # ... and admitted once that state has been idle for 4 x rto_max
    h1.receive(forged_data(0, 1, 1), later)
    assert (0, 1) in rx.messages and rx.inbound_expired == 15 and rx.inbound == 1


def test_an_honest_message_is_delivered_through_a_flood_of_forged_state():
    """A flood of forged REQUESTs and DATA (one source, then many) fills the limits; the
    honest sender's message still arrives, and nothing grows past its bound."""
    cfg = GseConfig()
    w = Wire(n_hosts=3, config=cfg, drop=lambda p: p.dst >= 3)   # replies to forged ids
    h1 = w.hosts[1]
    for i in range(5000):
        src = 2 if i % 2 else 3 + i
        pkt = (forged_data(src, 1, i, size=HUGE) if i % 3 else
               Packet(REQUEST, src, 1, msg_id=i, psn=1, msg_len=HUGE, credit=HUGE,
                      prio=PRIO_CONTROL))
        h1.receive(pkt, 0)
    rx = h1.receiver
    assert rx.inbound <= cfg.max_inbound and rx.reassembly <= cfg.max_reassembly_bytes
    assert rx.unproven <= cfg.max_requests and len(rx.messages) <= 5000
    w.after(1)
    w.start(0, 1, 1, 1_000_000)
    w.run(10 ** 11)
    assert (0, 1) in w.delivered


def test_roce_incoming_flows_and_finished_ids_are_bounded():
    cfg = RoceConfig(max_inbound_per_peer=10, max_inbound=15, max_finished=5)
    w = Wire(n_hosts=3, config=cfg, protocol="roce")
    h1 = w.hosts[1]
    for i in range(50):
        h1.receive(forged_data(2 + i % 2, 1, i, size=10 * MTU), 0)
    assert len(h1.receiver.incoming) == 15 and h1.receiver.inbound_refused == 35
    h1.receive(forged_data(0, 1, 99, size=0), 0)      # no length: no flow
    assert (0, 99) not in h1.receiver.incoming
    w2 = Wire(config=RoceConfig(max_finished=5), protocol="roce")
    for i in range(20):
        w2.start(0, i, 1, 1000)
        w2.run(w2.now + 50_000_000)
    assert len(w2.delivered) == 20 and len(w2.hosts[1].receiver.finished) == 5


def leaf(cfg):
    leaf_of = [10, 10, 11, 11]
    rows = [(2, 3)] * 12
    rows[0], rows[1], rows[10] = (0,), (1,), ()
    sw = Switch(10, "leaf10", rows, 0x1234, "spray")
    return FabricLeaf(10, cfg, sw, {0: 0, 1: 1}, {0: 100.0, 1: 100.0}, leaf_of)


def test_fabric_leaf_refuses_forged_sources_and_bounds_its_reorder_buffers():
    cfg = FabricConfig(reorder_buffer_bytes=10 * (MTU + 64))
    lf = leaf(cfg)
    # a REQUEST from a source no GRANT could reach, and DATA from no host of the fabric
    lf.receive(make_packet(kind=REQUEST, src=999, dst=10, psn=1, credit=10 ** 6), 2, 0)
    lf.receive(make_packet(kind=DATA, src=77, dst=0, msg_id=1, payload_len=MTU,
                           msg_len=10 * MTU, aux=5, prio=PRIO_DATA), 2, 0)
    assert lf.stray == 2 and not lf.demands and not lf.reorders
    # fabric packets far ahead of their sequence: held up to the buffer's bound
    for seq in range(100, 200):
        lf.receive(make_packet(kind=DATA, src=2, dst=0, msg_id=1, payload_len=MTU,
                               msg_len=10 * MTU, aux=seq, prio=PRIO_DATA), 2, 0)
    assert lf.reorder_bytes <= cfg.reorder_buffer_bytes and lf.reorder_drops == 90
    assert lf.counters()["reorder_drops"] == 90
    assert F_UNSCHED                                   # (flags exist for forged packets)
