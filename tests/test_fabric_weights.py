"""Fabric mode: per-path weights from echoed CE marks (``path_weights``,
``switchmodel.fabric_weights``), step by step with the two hand-driven leaves of
``tests/test_fabric_leaf.py`` (S: node 10, D: node 11, uplinks on ports 2 and 3, one path
beyond each)."""

import pytest

from test_fabric_leaf import UP, D, S, US, take
from test_fabric_recovery import deliver, granted_burst, leaf, to_host

from gse.config import ConfigError
from gse.wire.packet import ACK, F_ECN_CE
from switchmodel.fabric import FabricConfig


def marked_run(k):
    """S sprays 8 packets to host 2; the ones on uplink UP[0] come CE-marked; D's leaf ACK
    goes back to S.  The leaves and the ACK."""
    s, d = leaf(S, path_weights=k), leaf(D, path_weights=k)
    sent = granted_burst(s, d, 8)
    marked = []
    for port, p in sent:
        if port == UP[0]:
            p.flags |= F_ECN_CE
            marked.append(p.aux)
    deliver(d, sent, 10 * US)
    (_, ack), = take(d, ACK)                 # 8 in order: ACKed at once
    s.receive(ack, 2, 11 * US)
    return s, d, marked, ack


def test_the_destination_echoes_which_packets_came_marked():
    s, d, marked, ack = marked_run(4)
    assert ack.psn == 9 and len(marked) == 4
    assert ack.sack_bits == sum(1 << (ack.psn - 1 - seq) for seq in marked)
    assert d.marked_seqs == {}               # forgotten once echoed
    assert to_host(d) == list(range(8))      # the host sees its data, CE cleared
    table = s.scores[D]
    hot, cold = table[UP[0] * 256][0], table[UP[1] * 256][0]
    assert hot == pytest.approx(1 - (1 - 1 / 8) ** 4) and cold == 0.0
    assert s.weight_samples == 8 and s.idle()


def test_without_path_weights_nothing_is_echoed_or_scored():
    s, d, _, ack = marked_run(0)
    assert ack.sack_bits == 0 and s.scores == {} and d.marked_seqs == {}


@pytest.mark.parametrize("k", [0, 4])
def test_new_sprays_move_off_the_path_that_marked(k):
    """The test that fails without the mechanism: after the marks, S's next 32 packets to
    the same leaf favour the unmarked uplink (deficit round robin by the weights), but
    still use the marked one (a weight, not a ban); evenly without ``path_weights``."""
    s, d, _, _ = marked_run(k)
    again = []
    for i in range(4):                       # (no ACK between: the scores stay)
        again += granted_burst(s, d, 8, now=(20 + 20 * i) * US)
    on = {port: sum(1 for p, _ in again if p == port) for port in UP}
    if k:
        w = 1 / (1 + k * (1 - (1 - 1 / 8) ** 4))            # the marked path's weight
        assert on[UP[0]] == pytest.approx(32 * w / (1 + w), abs=1)
        assert 0 < on[UP[0]] < on[UP[1]] and s.weight_skips > 0
    else:
        assert on == {UP[0]: 16, UP[1]: 16} and s.weight_skips == 0


def test_path_weights_and_hot_skips_are_exclusive_and_checked():
    for kw in (dict(path_weights=1, path_hot_skips=4), dict(path_weights=-1),
               dict(path_weight_gain=0), dict(path_weight_gain=1.5)):
        with pytest.raises(ConfigError):
            FabricConfig(**kw).validate()
    FabricConfig(path_weights=4, path_weight_gain=0.5).validate()
