"""The fuzz targets (``tests/fuzz_targets.py``) under hypothesis: a small, repeatable subset of
what ``experiments/fuzz.py`` runs under atheris, plus every input that ever found a defect.

Hypothesis draws byte strings (and, for the decoder, valid datagrams with a few bits
flipped), so each run explores a little; the CI profile is derandomised (``conftest.py``)
and the suite stays deterministic.  The 10^6-input runs are an experiment, not a test.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fuzz_targets as ft
from gse.wire.codec import encode, payload_pattern

programs = st.binary(min_size=0, max_size=3000)


@st.composite
def datagrams(draw):
    """Valid encodings with a few bits flipped or bytes cut or added."""
    r = ft.Bytes(draw(st.binary(min_size=ft.FIELDS.size, max_size=ft.FIELDS.size)))
    pkt = ft.packet_from(r)
    if pkt.kind == 0 and not pkt.flags & 0x02:
        pkt.payload_len = draw(st.integers(0, 300))
        pkt.payload = payload_pattern(pkt.src, pkt.msg_id, pkt.psn, pkt.payload_len)
    data = bytearray(encode(pkt))
    for i in draw(st.lists(st.integers(0, len(data) * 8 - 1), max_size=3)):
        data[i // 8] ^= 1 << (i % 8)
    cut = draw(st.integers(-3, 3))
    if cut < 0:
        del data[cut:]
    elif cut:
        data += bytes(cut)
    return bytes(data)


@settings(max_examples=300)
@given(st.one_of(datagrams(), st.binary(max_size=200)))
def test_wire_decoders(data):
    ft.wire(data)


@pytest.mark.parametrize("target", ["gse_host", "roce_host", "plain_host"])
@pytest.mark.parametrize("small", [True, False])
def test_host_agents(target, small):
    @settings(max_examples=60)
    @given(programs)
    def run(data):
        ft.TARGETS[target](data, small)
    run()


@pytest.mark.parametrize("target", ["switch", "fabric_leaf"])
def test_switch_agents(target):
    @settings(max_examples=80)
    @given(programs)
    def run(data):
        ft.TARGETS[target](data)
    run()


@pytest.mark.parametrize("target, data", ft.REGRESSIONS)
def test_fuzzing_regressions(target, data):
    ft.TARGETS[target](data)
