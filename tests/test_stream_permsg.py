"""The per-message helpers of the stream driver and the GSE host give what they replace:
``chunk_index`` the ring's chunk order of ``gse.workloads.collectives``, ``randbelow``
the numbers of ``random.Random.randrange`` from the same state, ``phases.enter`` (a C
field and a bit mask compiled) the transitions of its table and no other (both builds)."""

import random

import pytest

from gse.agents import phases
from gse.agents.gse_host import randbelow
from gse.agents.receiver import InMsg
from gse.workloads.collectives import Collective, expand
from gse.workloads.stream import OPS, RingPhase, chunk_index


def _reference_chunk(op, n, pos, step):
    """The formula the stream driver had before ``chunk_index`` (RingPhase.chunk)."""
    if op == "all_reduce":
        return (pos - step) % n if step < n - 1 else (pos + 1 - (step - (n - 1))) % n
    if op == "reduce_scatter":
        return (pos - step - 1) % n
    return (pos - step) % n


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("n", [2, 3, 8, 13])
def test_chunk_index_is_the_ring_order(op, n):
    steps = 2 * (n - 1) if op == "all_reduce" else n - 1
    for pos in range(n):
        for step in range(steps):
            assert chunk_index(OPS.index(op), n, pos, step) == _reference_chunk(op, n, pos,
                                                                                step)


@pytest.mark.parametrize("op", OPS)
def test_ring_phase_chunks_add_up_to_the_expanded_collective(op):
    ring = RingPhase(op, [tuple(range(5))], 1000 * 5 + 3)      # uneven chunks
    sent = sum(ring.chunk(pos, step) for pos in range(5) for step in range(ring.steps))
    assert sent == expand(Collective(0, op, range(5), 1000 * 5 + 3)).bytes_sent()


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 64, 100, 65535, 2 ** 40 + 3])
def test_randbelow_draws_what_randrange_draws(n):
    a, b = random.Random(n), random.Random(n)
    assert [randbelow(a, n) for _ in range(500)] == [b.randrange(n) for _ in range(500)]
    assert a.getstate() == b.getstate()


def test_randbelow_asks_another_generator_its_own_randrange():
    class Dice:
        def randrange(self, n):
            return n - 1
    assert randbelow(Dice(), 6) == 5
    with pytest.raises(ValueError):
        randbelow(random.Random(1), 0)


def test_phase_masks_are_the_transition_table():
    for old in range(len(phases.ALLOWED)):
        allowed = phases.TRANSITIONS.get(old, frozenset())
        assert {q for q in range(16) if phases.ALLOWED[old] >> q & 1} == allowed


@pytest.mark.parametrize("bad", [phases.SENDING, phases.RECEIVING, phases.UNPROVEN, 15, 16,
                                 99, -1])
def test_enter_refuses_what_the_table_does_not_allow(bad):
    msg = InMsg(3, 7, 1000, 4096, 1, 0)
    assert msg.phase == phases.RECEIVING
    with pytest.raises(phases.PhaseError, match="message 7 from 3: RECEIVING -> "):
        phases.enter(msg, bad)
    assert msg.phase == phases.RECEIVING          # unchanged
    phases.enter(msg, phases.DELIVERED)
    assert msg.phase == phases.DELIVERED
    with pytest.raises(phases.PhaseError, match="DELIVERED -> DROPPED"):
        phases.enter(msg, phases.DROPPED)           # a final phase stays final
