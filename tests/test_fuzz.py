"""The fuzz targets (``tests/fuzz_targets.py``) under hypothesis: a small, repeatable subset of
what ``experiments/fuzz.py`` runs under atheris, plus every input that ever found a defect.

Hypothesis draws byte strings (and, for the decoder, valid datagrams with a few bits
flipped), so each run explores a little; the CI profile is derandomised (``conftest.py``)
and the suite stays deterministic.  Random bytes rarely make a coherent story (a whole
message, a forged source that then finishes one), so the host agents are also fed
programs built field by field: every header field drawn at its full wire width, its
edges first (0, 2^31 - 1, 2^31, 2^32 - 1 for the 32-bit fields, 2^63 and 2^64 - 1 for
``ts`` and ``sack_bits``, 0xFFFF for the entropy), and complete messages from any source
and id the wire can carry.  The 10^6-input runs are an experiment, not a test.
"""

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fuzz_targets as ft
from gse import _build
from gse.wire.codec import encode, payload_pattern
from gse.wire.packet import DATA, F_LAST, MAX_KIND, REQUEST

programs = st.binary(min_size=0, max_size=3000)
FUZZ = os.path.join(_build.ROOT, "experiments", "fuzz.py")


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("_gse_fuzz_experiment", FUZZ)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ATHERIS_MISSING = _fuzz_module().atheris_missing()


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


def _width(bits):
    top = (1 << bits) - 1
    edges = sorted({0, 1, 2, 3, 4, top >> 1, (top >> 1) + 1, top - 1, top})
    return st.one_of(st.sampled_from(edges), st.integers(0, top))


U16, U32, U64 = _width(16), _width(32), _width(64)
MTU = 4096                  # every protocol's default payload per packet


@st.composite
def any_packet(draw):
    """One packet, every field at its full width; addresses as given (``RAW_*``)."""
    raw = draw(st.sampled_from([ft.RAW_SRC | ft.RAW_DST, ft.RAW_SRC, 0]))
    return ft.op_packet((draw(st.integers(0, MAX_KIND)), draw(st.integers(0, 0x3F)),
                         draw(U32), draw(U32), draw(U32), draw(U32), draw(U16), draw(U16),
                         draw(U32), draw(U32), draw(U32), draw(U32), draw(U64), draw(U64),
                         draw(st.integers(0, 1))), raw)


@st.composite
def whole_message(draw):
    """Every DATA packet of one message (after its REQUEST, sometimes) from any source
    and id the wire carries, to this host (address 1) or elsewhere, in order or not."""
    src, msg_id, entropy, ts = draw(U32), draw(U32), draw(U16), draw(U64)
    raw = ft.RAW_SRC | ft.RAW_DST
    dst = 1 if draw(st.booleans()) else draw(U32)
    npkts = draw(st.integers(1, 4))
    size = (npkts - 1) * MTU + draw(st.integers(1, MTU))
    steps = []
    if draw(st.booleans()):
        steps.append(ft.op_packet((REQUEST, 0, src, dst, msg_id, 0, entropy, 0, size, size,
                                   0, 0, 0, ts, 1), raw))
    for psn in draw(st.permutations(range(npkts))) if draw(st.booleans()) else range(npkts):
        length = MTU if psn < npkts - 1 else size - (npkts - 1) * MTU
        steps.append(ft.op_packet((DATA, F_LAST if psn == npkts - 1 else 0, src, dst, msg_id,
                                   psn, entropy, length, size, size, 0, 0, 0, ts, 0), raw))
    return b"".join(steps)


full_width_programs = st.lists(st.one_of(
    any_packet(), whole_message(),
    st.builds(ft.op_time, st.integers(0, (1 << 20) - 1)),
    st.builds(ft.op_start, st.integers(0, 255), st.integers(0, 3), U32),
    st.builds(ft.op_poll, st.integers(0, 15), st.booleans())), max_size=12).map(b"".join)


@pytest.mark.parametrize("target", ["gse_host", "roce_host", "plain_host"])
@pytest.mark.parametrize("small", [True, False])
def test_host_agents_at_full_field_widths(target, small):
    """A forged source finishing a message once crashed the RoCE and plain hosts (its
    id did not fit the finished-id store); random bytes never found it here."""
    @settings(max_examples=150)
    @given(full_width_programs)
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


# -- atheris: a short coverage-guided run of every target, in the build of this pass --------

SHORT_RUNS = 2000       # inputs per target: about 10 s per target on one busy core


@pytest.mark.skipif(ATHERIS_MISSING is not None, reason=str(ATHERIS_MISSING))
def test_a_short_atheris_run_of_every_target_finds_nothing(tmp_path):
    """What the fuzzing campaign does, briefly, so that a change that lets one packet
    crash an agent is caught when it lands.  Each target starts from its seeds (the
    regressions and coherent programs, ``fuzz_targets.seeds``); a crash's input is in
    the message: add it to ``REGRESSIONS``."""
    out = tmp_path / "fuzz.json"
    cmd = [sys.executable, FUZZ, "--runs", str(SHORT_RUNS), "--artifacts", str(tmp_path),
           "--json", str(out)]
    if _build.build() == "compiled":
        cmd.append("--compiled")
    proc = subprocess.run(cmd, cwd=_build.ROOT, capture_output=True, text=True, timeout=1800)
    results = json.loads(out.read_text())
    bad = {}
    for r in results:
        if r["crashes"] or r["exit"]:
            log = (tmp_path / (r["target"] + ".log")).read_text(errors="replace")
            inputs = {n: (tmp_path / r["target"] / n).read_bytes().hex() for n in r["crashes"]}
            bad[r["target"]] = (r["exit"], inputs, log[-3000:])
    assert not bad and proc.returncode == 0, (proc.stdout, proc.stderr, bad)
    assert {r["target"] for r in results} == set(ft.TARGETS)
    assert all(r["runs"] == SHORT_RUNS for r in results), results


def test_without_atheris_the_experiment_says_so_at_once(tmp_path):
    """Not a table of failed runs whose logs hold ModuleNotFoundError: one line saying
    what is missing and how to get it, exit 2, nothing run."""
    code = ("import runpy, sys; sys.modules['atheris'] = None; "
            "sys.argv = ['fuzz.py', '--runs', '10', '--artifacts', %r]; "
            "runpy.run_path(%r, run_name='__main__')" % (str(tmp_path / "art"), FUZZ))
    proc = subprocess.run([sys.executable, "-c", code], cwd=_build.ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "atheris is not installed" in proc.stderr and "./dev fuzz" in proc.stderr
    assert "pip install -e '.[fuzz]'" in proc.stderr
    assert proc.stdout == "" and not (tmp_path / "art").exists()
