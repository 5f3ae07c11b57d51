"""``--secure`` over Mininet, under the attacks of issue 25 (``experiments/
secure_attacks_mininet.py``): a forger inside the nodes' namespaces sends every packet
kind from a neighbour's real address on the link, PAUSE frames at their 32-bit maximum,
replays of what the edge switches send their hosts, and an earlier run's capture made
with the same key file.  Every honest message arrives exactly once, intact and at its
size; every injected datagram is counted where it arrived; none is accepted (the hosts
opened exactly the genuine datagrams seen leaving their edge switches).  Needs root and
Mininet; correctness only, never speed."""

import os
import random
import sys

import pytest

pytest.importorskip("cryptography")

from gse.runtimes.mininet.environment import mininet_unavailable  # noqa: E402

REASON = mininet_unavailable()
pytestmark = pytest.mark.skipif(REASON is not None, reason="Mininet: %s" % REASON)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "experiments"))

import secure_attacks  # noqa: E402
import secure_attacks_mininet as attacks  # noqa: E402

GBPS = 0.0025                  # as tests/test_mininet_fattree.py


def key_file(tmp_path):
    path = tmp_path / "domain.key"
    path.write_text(bytes(random.Random(25).getrandbits(8) for _ in range(32)).hex() + "\n")
    return str(path)


def check(r):
    assert secure_attacks.honest(r), r
    assert r["injected"]["send_errors"] == 0 and r["sniff_drops"] == 0, r
    assert r["never_up"] == [], r                  # (the forger waits for every agent)
    assert r["counted"] == r["injected"]["total"] and r["accepted"] == 0, r
    if r["field_ready_after_time_0_s"] <= 0:       # its packet sockets saw the whole run
        assert r["opened"] == r["genuine_to_hosts"], r
        assert r["pfc_taken"] == r["genuine_pfc"], r


def test_forgeries_replays_and_an_earlier_runs_capture_are_refused_in_mininet(tmp_path):
    r = attacks.suite(key_file(tmp_path), "gse", "gse", ("forge", "pause", "replay", "earlier"),
                      40_000, GBPS, 1, str(tmp_path / "runs"))
    check(r)
    e2e = r["refused_e2e"]
    assert e2e["unauthenticated"] == e2e["auth_failed"] == 16 * 7
    assert r["injected"]["replayed"] > 0 and e2e["replayed"] == r["injected"]["replayed"]
    assert r["injected"]["earlier_run"] > 0
    assert e2e["stale_epoch"] == r["injected"]["earlier_run"]
    assert r["refused_pfc"] == {"pfc_off": 16 * 4 + 80}        # GSE runs with PFC off


@pytest.mark.slow
def test_roce_pause_frames_must_authenticate_per_link_in_mininet(tmp_path):
    r = attacks.suite(key_file(tmp_path), "roce", "gse", ("forge", "pause", "replay"),
                      40_000, GBPS, 1, str(tmp_path / "runs"))
    check(r)
    assert r["refused_pfc"] == {"pfc_off": 16, "unauthenticated": 32 + 64, "auth_failed": 32}
