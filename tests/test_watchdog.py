"""The no-progress watchdog (gse.metrics.stall): a run that can make no progress ends with
a report of what it waits for; a run that is merely long, idle for a while or starving one
sender while the others go on never does, and the watchdog never changes a run.

Times are the simulation's virtual clock.  The stuck runs carry an ``until_ps`` far beyond
the watchdog's span as a safety bound: without the watchdog they would run to it (or,
without it, for ever)."""

import json
import random

import pytest

from gse.agents.gse_host import GseHost
from gse.agents.roce_host import RoceHost
from gse.config import GseConfig, RoceConfig
from gse.metrics.stall import (REALTIME_MIN_SPAN_PS, SPAN_RTOS, StallWatch, default_span_ps,
                               describe_stall, last_change_ps)
from gse.protocols import default_config
from gse.runtimes.sim.run import run_simulation
from gse.workloads.collectives import Collective
from gse.workloads.faults import build_schedule
from gse.workloads.replay import replay
from gse.workloads.traffic import Message, incast, permutation
from topologies import fat_tree

TOPO = fat_tree(4)
DEAD = "tier:agg-core:100%@10us,detect=never"     # every path between pods dies, for good
BOUND_PS = 2_000_000_000_000                          # 2 s: a safety bound for stuck runs


def perm(size, start_ps=0):
    return permutation(16, size, random.Random(3), start_ps=start_ps)


@pytest.mark.parametrize("protocol", ["gse", "roce", "gse-fabric"])
def test_a_dead_fabric_ends_with_what_is_stuck(protocol):
    cfg = default_config(protocol)
    faults = build_schedule(TOPO, [DEAD])
    res = run_simulation(TOPO, perm(200_000), protocol, cfg, 1, until_ps=BOUND_PS,
                         faults=faults)
    s = res.summary
    assert s["end"] == "stalled" and s["complete"] is False
    st = s["stall"]
    lost = s["lost"]
    assert lost > 0 and st["unfinished"] == lost == sum(st["waiting"].values())
    assert st["waiting"].get("path", 0) > 0          # probes into dead links, unanswered
    span = default_span_ps(cfg)
    assert st["span_us"] * 1e6 == span == SPAN_RTOS * cfg.rto_max_ps
    # declared one span after the last look that saw progress, within one more look
    assert span <= (st["at_us"] - st["progress_seen_us"]) * 1e6 <= span + span // 4
    assert s["sim_time_us"] * 1e6 < 3 * span
    text = describe_stall(st)
    assert "waiting for a path" in text and "%d unfinished" % lost in text


def test_the_span_is_configurable_and_zero_turns_it_off():
    faults = build_schedule(TOPO, [DEAD])
    short = run_simulation(TOPO, perm(200_000), "gse", GseConfig(), 1, until_ps=BOUND_PS,
                           faults=faults, stall_ps=400_000_000)
    assert short.summary["end"] == "stalled"
    assert short.summary["stall"]["span_us"] == 400
    off = run_simulation(TOPO, perm(200_000), "gse", GseConfig(), 1, until_ps=50_000_000_000,
                         faults=faults, stall_ps=0)
    assert off.summary["end"] == "until" and "stall" not in off.summary
    assert off.summary["complete"] is False          # stopped with messages unfinished


class NoGrants(GseHost):
    """A receiver whose grant pacer never grants (a scheduler that stopped)."""

    __slots__ = ()

    def _on_pacer(self, now):
        return None


def test_a_receiver_that_never_grants_is_waiting_for_grants(monkeypatch):
    """REQUESTs arrive but no GRANT ever comes back: the messages wait for grants, not
    for a path."""
    cfg = GseConfig(unsched_bytes=0)
    msgs = [Message(1, 0, 5, 100_000), Message(2, 1, 5, 100_000)]
    monkeypatch.setattr("gse.runtimes.sim.run.host_factory", lambda protocol, config: (
        lambda addr, rng, gbps: NoGrants(addr, config, rng, gbps)))
    res = run_simulation(TOPO, msgs, "gse", cfg, 1, until_ps=BOUND_PS)
    st = res.summary["stall"]
    assert st["waiting"] == {"grant": 2} and st["hosts"] == 2


def test_messages_that_start_late_are_not_a_stall():
    cfg = GseConfig()
    late = 10 * default_span_ps(cfg)                 # nothing unfinished until then
    res = run_simulation(TOPO, perm(200_000, start_ps=late), "gse", cfg, 1)
    s = res.summary
    assert s["end"] == "done" and s["complete"] is True and "stall" not in s
    assert s["lost"] == 0 and s["sim_time_us"] * 1e6 > late


def test_a_gap_with_nothing_in_flight_is_not_a_stall():
    cfg = GseConfig()
    gap = 3 * default_span_ps(cfg)
    msgs = [Message(1, 0, 9, 50_000), Message(2, 9, 0, 50_000, start_ps=gap)]
    res = run_simulation(TOPO, msgs, "gse", cfg, 1)
    assert res.summary["end"] == "done" and res.summary["lost"] == 0


def test_a_compute_phase_of_a_replay_is_not_a_stall():
    cfg = GseConfig()
    lag = 3 * default_span_ps(cfg)                   # compute between two all-reduces
    colls = [Collective(1, "all_reduce", range(4), 400_000),
             Collective(2, "all_reduce", range(4), 400_000, after=[(1, lag)])]
    res = replay(TOPO, colls, "gse", cfg, 1)
    s = res.summary
    assert s["end"] == "done" and s["collectives_done"] == 2 and "stall" not in s
    assert s["replay_time_us"] * 1e6 > lag


@pytest.mark.parametrize("protocol", ["gse", "roce"])
def test_a_long_message_is_not_a_stall(protocol):
    cfg = default_config(protocol)
    span = 400_000_000                               # 400 us, far below the message's time
    res = run_simulation(TOPO, [Message(1, 0, 12, 20_000_000)], protocol, cfg, 1,
                         stall_ps=span)
    s = res.summary
    assert s["end"] == "done" and s["lost"] == 0 and s["fct_us"]["max"] * 1e6 > 4 * span


def test_a_sender_starved_while_others_progress_is_not_a_stall():
    """SRPT serves the short messages first: the long one gets no grant for longer than
    the span, but the run as a whole moves on."""
    cfg = GseConfig(policy="srpt", unsched_bytes=0)
    msgs = incast(16, 5, 1_000_000, random.Random(2), receiver=0)
    msgs[-1] = Message(msgs[-1].msg_id, msgs[-1].src, 0, 3_000_000)
    span = 100_000_000                               # 100 us
    res = run_simulation(TOPO, msgs, "gse", cfg, 1, stall_ps=span)
    s = res.summary
    assert s["end"] == "done" and s["lost"] == 0
    short_done = max(r.finish_ps for r in res.records if r.size == 1_000_000)
    long_done = max(r.finish_ps for r in res.records if r.size == 3_000_000)
    assert short_done > 3 * span and long_done > short_done   # it waited them out


def test_the_watchdog_never_changes_a_run():
    msgs = perm(4_000_000)
    looked = run_simulation(TOPO, msgs, "gse", GseConfig(), 1, stall_ps=120_000_000)
    plain = run_simulation(TOPO, msgs, "gse", GseConfig(), 1, stall_ps=0)
    assert looked.summary["end"] == plain.summary["end"] == "done"
    assert looked.per_message() == plain.per_message()
    assert looked.summary["events"] == plain.summary["events"]


def test_the_span_waits_out_the_failures_last_change():
    faults = build_schedule(TOPO, ["tier:agg-core:100%@10us,restore=9ms"])
    assert last_change_ps(faults, 1_000_000_000) == 10_000_000_000   # restore + detect
    res = run_simulation(TOPO, perm(200_000), "gse", GseConfig(), 1, faults=faults)
    assert res.summary["end"] == "done" and res.summary["lost"] == 0


def test_stall_watch_counts_only_time_with_work_unfinished():
    w = StallWatch(100)
    assert w.check_ps == 25
    assert not w.look(0, 1, (0, 0))
    assert not w.look(99, 1, (0, 0))
    assert w.look(100, 1, (0, 0))                    # a span with nothing moving
    w = StallWatch(100)
    for t in range(0, 1000, 25):                     # nothing unfinished: idle, not stuck
        assert not w.look(t, 0, (0, 0))
    assert not w.look(1050, 1, (0, 0)) and not w.look(1100, 1, (1, 0))
    assert w.look(1200, 1, (1, 0))
    with pytest.raises(ValueError):
        StallWatch(0)


def test_a_real_clock_watch_does_not_count_time_it_was_not_run():
    # looks every 25 ps; a process descheduled on a loaded machine looks late: the time it
    # did not watch starts the span again, on the simulation's clock it would not
    w = StallWatch(100, realtime=True)
    assert not w.look(0, 1, (0, 0)) and not w.look(25, 1, (0, 0))
    assert not w.look(150, 1, (0, 0))                # 125 ps late: not run, not stuck
    assert w.unwatched == 1
    for t in (175, 200, 225):
        assert not w.look(t, 1, (0, 0))
    assert w.look(250, 1, (0, 0))                    # a watched span with nothing moving
    v = StallWatch(100)
    assert not v.look(0, 1, (0, 0)) and not v.look(25, 1, (0, 0))
    assert v.look(150, 1, (0, 0)) and v.unwatched == 0


def test_a_real_clock_span_is_at_least_a_second():
    assert default_span_ps(GseConfig()) == 6_400_000_000            # 4 x 1.6 ms
    assert default_span_ps(GseConfig(), realtime=True) == REALTIME_MIN_SPAN_PS == 10 ** 12
    assert default_span_ps(RoceConfig()) == 64_000_000_000                # 4 x 16 ms
    assert default_span_ps(RoceConfig(rto_max_ps=10 ** 12), realtime=True) == 4 * 10 ** 12


def test_agents_report_progress_and_what_they_wait_for():
    g = GseHost(0, GseConfig(unsched_bytes=0), random.Random(1), 100)
    assert g.progress() == (0, 0) and g.waiting() == {}
    g.start_message(1, 5, 40_000, 0)
    assert g.progress() == (1, 0) and g.waiting() == {"grant": 1}
    small = GseHost(1, GseConfig(), random.Random(1), 100)
    small.start_message(1, 5, 8_192, 0)
    assert small.waiting() == {"send": 1}
    while small.poll(0) is not None:
        pass
    assert small.waiting() == {"ack": 1}
    t = small.next_deadline()
    while 0 <= t < 10 * small.config.rto_ps:         # RTOs with no answer
        small.on_timer(t)
        while small.poll(t) is not None:
            pass
        t = small.next_deadline()
    assert small.waiting() == {"path": 1}
    r = RoceHost(2, RoceConfig(), random.Random(1), 100)
    r.start_message(1, 5, 8_192, 0)
    assert r.progress() == (1, 0) and r.waiting() == {"send": 1}
    while r.poll(0) is not None:
        pass
    assert r.waiting() == {"ack": 1}


def test_a_stuck_run_with_a_progress_bar_or_quiet(tmp_path, capsys):
    import io
    from gse.cli.main import main
    from gse.cli.progress import Progress

    class Tty(io.StringIO):
        def isatty(self):
            return True
    out = Tty()
    with Progress(True, out) as progress:
        res = run_simulation(TOPO, perm(200_000), "gse", GseConfig(), 1, until_ps=BOUND_PS,
                             faults=build_schedule(TOPO, [DEAD]),
                             observers=[progress.sim("gse", 16)])
    assert res.summary["end"] == "stalled" and "events/s" in out.getvalue()
    path = tmp_path / "s.json"
    rc = main(["sim", "--k", "4", "--size", "200000", "--fail", DEAD, "--quiet",
               "--json", str(path)])
    cap = capsys.readouterr()
    assert rc == 1 and cap.out == ""
    assert cap.err.startswith("gse sim: error: no progress for 6.4 ms of the run's clock")
    assert "waiting for a path" in cap.err
    assert json.loads(path.read_text())["stall"]["span_us"] == 6400
