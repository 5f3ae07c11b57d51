"""The real-time runtimes in the Python API (docs/api.md, "Runtimes: UDP and Mininet"):
a Scenario with ``runtime="udp"`` or ``"mininet"``, ``gse.run`` on it, and ``gse run`` as
that call.

``gse run``'s ``--json`` must equal ``gse.run(scenario).summary.to_dict()`` for the
Scenario its options describe.  Two runs over real sockets are two different runs, so the
comparison sets aside what the real clock and the kernel decide (``MEASURED``) and asserts
the rest equal: what was run (runtime, protocol, seed, topology, traffic, the protocol
config with its real-time timers) and what a correct run delivers (every message, none
lost, complete, ended "done").  Never wall-clock speed.
"""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gse
from gse.api.realtime import sim_twin
from gse.api.scenario import (GENERATORS, REAL_TIME_DEFAULTS, REAL_TIME_RUNTIMES, Scenario,
                              ScenarioError, runtime_options_defaults)
from gse.cli.main import build_parser, main
from gse.cli.run import run_scenario
from gse.protocols import PROTOCOLS
from gse.runtimes.mininet.environment import mininet_unavailable

# What two runs of one Scenario over real sockets measure differently, and why:
# - wall_s, events_per_s: the wall clock;
# - sim_time_us, fct_us, slowdown, goodput_gbps: the run's clock is real time, so every
#   completion time depends on how fast the machine ran the agents at that moment;
# - events, retransmits, ecn_marks, trims, drops, queue_drops, wire_drops, peak_queue_bytes,
#   host_counters, pfc_*, paused_time_*: how datagrams interleave through the event loop
#   and the kernel's socket buffers decides queue depths, hence marks, trims, pauses, the
#   retransmissions a late packet causes, and the ACKs and grants that come of them;
# - in the runtime's own section (udp, mininet): datagram and timer counts, timer
#   lateness, CPU seconds, kernel drops, and Mininet's set-up / start / tear-down times.
MEASURED = {"wall_s", "events_per_s", "sim_time_us", "fct_us", "slowdown", "goodput_gbps",
            "events", "retransmits", "ecn_marks", "trims", "drops", "queue_drops",
            "wire_drops", "peak_queue_bytes", "host_counters", "pfc_pauses",
            "pfc_pause_expiries", "pfc_peak_ingress_bytes", "pfc_headroom_overflows",
            "paused_time_us", "paused_time_max_port_us"}
# the runtime sections' fields that say what ran and how it ended (the rest is measured)
SECTION_FIXED = {"udp": ("addressing", "end", "nodes", "wire", "slack_us", "precise_timers",
                         "secure", "signal", "duplicate_deliveries", "payload_errors",
                         "malformed_total", "agent_errors", "unroutable", "errors"),
                 "mininet": ("nodes", "links", "placement", "processes", "end",
                             "missing_outputs", "left_behind", "fabric_errors")}


def key_paths(obj, prefix=""):
    """Every key path of a summary: the schema two runs share whatever they measured."""
    if not isinstance(obj, dict):
        return {prefix}
    out = set()
    for k, v in obj.items():
        out |= key_paths(v, "%s.%s" % (prefix, k) if prefix else k)
    return out


def fixed_part(summary):
    """The summary without what ``MEASURED`` and the sections' measured fields hold."""
    out = {k: v for k, v in summary.items() if k not in MEASURED and k not in SECTION_FIXED}
    for section, keys in SECTION_FIXED.items():
        if section in summary:
            out[section] = {k: summary[section].get(k) for k in keys}
    return out


def assert_same_run(cli, api):
    """``cli`` (gse run's --json) and ``api`` (gse.run's summary) describe the same run,
    and a correct one."""
    api = json.loads(json.dumps(api))          # as --json writes it (tuples as lists)
    assert key_paths(cli) == key_paths(api)
    assert fixed_part(cli) == fixed_part(api)
    for s in (cli, api):
        assert s["delivered"] == s["messages"] and s["lost"] == 0, s
        assert s["complete"] is True and s["end"] == "done"


def run_cli(tmp_path, argv):
    out = tmp_path / "cli.json"
    assert main(["run"] + argv + ["--quiet", "--json", str(out)]) == 0
    return json.loads(out.read_text())


# -- gse run is gse.run ----------------------------------------------------------------------

UDP_CASES = [
    (["--runtime", "udp", "--k", "4", "--link-gbps", "0.1", "--traffic", "incast",
      "--senders", "4", "--size", "50000", "--seed", "3"],
     dict(runtime="udp", topology={"name": "fat-tree", "k": 4, "link_gbps": 0.1},
          workload={"kind": "incast", "senders": 4, "size": 50_000}, seed=3), 4),
    (["--runtime", "udp", "--traffic", "permutation", "--size", "30000", "--protocol",
      "roce", "--set", "mtu=2048", "--addressing", "ips", "--timeout-s", "90"],
     dict(runtime="udp", workload={"kind": "permutation", "size": 30_000},
          protocols=["roce"], overrides=["mtu=2048"],
          runtime_options={"addressing": "ips", "timeout_s": 90}), 16),
]


@pytest.mark.parametrize("argv, fields, messages", UDP_CASES, ids=["incast", "permutation"])
def test_gse_run_udp_json_is_the_run_summary(tmp_path, argv, fields, messages):
    scenario = Scenario(**fields)
    assert run_scenario(build_parser()[0].parse_args(["run"] + argv)) == scenario
    cli = run_cli(tmp_path, argv)
    result = gse.run(scenario)
    assert_same_run(cli, result.summary.to_dict())
    assert result.summary.messages == messages and result.summary.runtime == "udp"
    assert result.timeseries is None            # the simulation samples; real time does not
    table = result.records_table()
    assert table.num_rows == messages and all(table.column("completed").to_pylist())
    # the real-time timers, but what --set set stays set
    assert result.summary.config["rto_ps"] == 30_000_000_000
    if scenario.protocol == "roce":
        assert result.summary.config["mtu"] == 2048 and result.summary.baseline == "deployed"
    # the same run in the simulation, with the same configs: what it measures is the
    # reference the real-time figures are read against
    twin = gse.run(sim_twin(scenario)).summary
    for key in ("config", "topology", "traffic", "messages", "delivered", "lost"):
        assert twin[key] == result.summary[key], key


def test_compare_runs_each_protocol_over_udp():
    s = Scenario(runtime="udp", workload={"kind": "incast", "senders": 3, "size": 20_000})
    results = gse.compare(s, protocols=["roce", "gse"])
    assert list(results) == ["roce", "gse"]
    for p, r in results.items():
        assert r.protocol == p == r.summary.protocol and r.summary.delivered == 3


def test_failure_metrics_over_udp():
    s = Scenario(runtime="udp", workload={"kind": "permutation", "size": 30_000},
                 failures=["link:agg0_0-core0@0us"], detect_us=500)
    r = gse.run(s)
    assert r.summary.delivered == 16 and r.summary.lost == 0
    f = r.summary.failures
    assert len(f["entries"]) == 1 and f["detect_us"] == 500 and f["route_updates"] > 0


def test_runtime_options_reach_the_runtime(tmp_path):
    """A capture and a failure schedule started by the traffic, from the options alone."""
    pcap = tmp_path / "pcap"
    s = Scenario(runtime="udp", workload={"kind": "permutation", "size": 20_000},
                 failures=["link:agg0_0-core0@0us"],
                 runtime_options={"pcap": str(pcap), "pcap_ports": "host:0",
                                  "fail_after_packets": 5, "wire": "uet"})
    r = gse.run(s)
    assert r.summary.delivered == 16 and r.summary.udp["wire"] == "uet"
    assert r.summary.failures["trigger"]["after_packets"] == 5
    assert [p.suffix for p in pcap.iterdir()].count(".pcap") >= 1


# -- gse run's defaults are the Scenario's ---------------------------------------------------

@pytest.mark.parametrize("runtime", REAL_TIME_RUNTIMES)
def test_gse_runs_defaults_are_a_real_time_scenarios(runtime):
    args = build_parser()[0].parse_args(["run", "--runtime", runtime])
    s = Scenario(runtime=runtime)
    assert run_scenario(args) == s
    assert s.topology["k"] == 4 and s.topology["link_gbps"] == 0.1
    assert s.workload["size"] == 200_000 and s.workload["senders"] == 8
    assert s.runtime_options == runtime_options_defaults(runtime)


def test_a_real_time_default_fills_only_what_was_not_given():
    s = Scenario(runtime="udp", topology={"name": "fat-tree", "k": 8},
                 workload={"kind": "incast", "size": 1000})
    assert s.topology["k"] == 8 and s.topology["link_gbps"] == 0.1
    assert s.workload["size"] == 1000 and s.workload["senders"] == 8
    sim = s.replace(runtime="sim")               # the same run, in the simulation
    assert sim.topology == s.topology and sim.workload == s.workload
    assert sim.runtime_options == {}
    mn = s.replace(runtime="mininet")            # the options both runtimes take stay
    assert set(mn.runtime_options) == set(runtime_options_defaults("mininet"))
    assert Scenario(runtime="udp", workload={"kind": "cm", "path": "x.cm"}).workload == \
        {"kind": "cm", "path": "x.cm"}


# -- errors --------------------------------------------------------------------------------

@pytest.mark.parametrize("fields, located", [
    (dict(runtime="udp", runtime_options={"loop": "tokio"}),
     "scenario.runtime_options.loop: expected one of auto, asyncio, uvloop, got 'tokio'"),
    (dict(runtime="udp", runtime_options={"placement": "all"}),
     "scenario.runtime_options.placement: expected one of the options of runtime udp"),
    (dict(runtime="mininet", runtime_options={"addressing": "ips"}),
     "scenario.runtime_options.addressing: expected one of the options of runtime mininet"),
    (dict(runtime_options={"wire": "uet"}),
     "scenario.runtime_options.wire: expected no option: runtime sim takes none"),
    (dict(runtime="udp", runtime_options={"timeout_s": 0}),
     "scenario.runtime_options.timeout_s: expected a finite number > 0"),
    (dict(runtime="udp", runtime_options={"coarse_timers": "yes"}),
     "scenario.runtime_options.coarse_timers: expected true or false"),
    (dict(runtime="mininet", runtime_options={"fail_after_packets": 0}),
     "scenario.runtime_options.fail_after_packets: expected an integer >= 1 or null"),
    (dict(runtime="udp", runtime_options=["loop"]),
     "scenario.runtime_options: expected a table (dict)"),
    (dict(runtime="udp", sample_us=10.0),
     "scenario.sample_us: expected null for runtime udp"),
    (dict(runtime="mininet", until_us=10.0),
     "scenario.until_us: expected null for runtime mininet"),
])
def test_a_bad_runtime_option_is_named_with_its_value(fields, located):
    with pytest.raises(ScenarioError) as e:
        Scenario(**fields)
    assert located in str(e.value)


def test_gse_run_reports_a_bad_runtime_option_as_the_scenarios(capsys):
    assert main(["run", "--runtime", "udp", "--timeout-s", "-1", "--quiet"]) == 2
    assert "scenario.runtime_options.timeout_s: expected a finite number > 0" in \
        capsys.readouterr().err


def test_observers_are_the_simulations(tmp_path):
    with pytest.raises(ValueError, match="observers watch a simulation"):
        gse.run(Scenario(runtime="udp"), observers=[object()])
    with pytest.raises(ValueError, match="prepare and run_protocol run the simulation"):
        gse.api.runner.prepare(Scenario(runtime="udp"))


def test_mininet_unavailable_says_why(monkeypatch):
    from gse.runtimes.mininet import environment
    monkeypatch.setattr(environment, "_UNAVAILABLE", ["Mininet needs root (namespaces, "
                                                      "veths); run as root (CI does)"])
    with pytest.raises(environment.MininetUnavailable,
                       match="runtime mininet: Mininet needs root"):
        gse.run(Scenario(runtime="mininet"))


# -- a real-time scenario round-trips through JSON -------------------------------------------

def options_for(runtime):
    common = {"wire": st.sampled_from(["gse", "uet"]), "timeout_s": st.floats(0.001, 1e4),
              "loop": st.sampled_from(["auto", "asyncio", "uvloop"]),
              "slack_us": st.floats(0, 1e3), "secure": st.none() | st.just("keys.hex"),
              "fail_after_packets": st.none() | st.integers(1, 10 ** 6),
              "pcap": st.none() | st.text(min_size=1, max_size=10),
              "pcap_ports": st.sampled_from(["all", "host:3", "tier:edge:up"]),
              "pcap_budget": st.integers(1, 10 ** 6), "pcap_snaplen": st.integers(1, 65535)}
    if runtime == "udp":
        common.update(addressing=st.sampled_from(["ports", "ips"]), coarse_timers=st.booleans())
    else:
        common.update(placement=st.sampled_from(["node", "tier", "switches", "all"]),
                      precise_timers=st.booleans(),
                      forwarding=st.sampled_from(["agents", "kernel"]))
    return st.fixed_dictionaries({}, optional=common)


finite = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)


@st.composite
def real_time_scenarios(draw):
    runtime = draw(st.sampled_from(REAL_TIME_RUNTIMES))
    return Scenario(
        runtime=runtime, runtime_options=draw(options_for(runtime)),
        topology=draw(st.fixed_dictionaries(
            {"name": st.sampled_from(["fat-tree", "star", "spine-leaf-rail"])},
            optional={"k": st.integers(0, 64), "link_gbps": st.floats(0.001, 10.0)})),
        workload=draw(st.one_of(
            st.fixed_dictionaries({"kind": st.sampled_from(GENERATORS)},
                                  optional={"size": st.integers(1, 10 ** 9),
                                            "senders": st.integers(1, 64),
                                            "start_us": finite}),
            st.builds(lambda p: {"kind": "cm", "path": p}, st.text(min_size=1, max_size=20)))),
        protocols=draw(st.lists(st.sampled_from(PROTOCOLS), min_size=1, max_size=3)),
        overrides=draw(st.lists(st.sampled_from(["mtu=2048", "gse.rto_ps=1000000"]),
                                max_size=2)),
        loss=draw(st.floats(0, 1)), seed=draw(st.integers(-10 ** 9, 10 ** 9)),
        failures=draw(st.lists(st.just("link:agg0_0-core0@50us"), max_size=1)),
        detect_us=draw(st.just("never") | finite), stall_us=draw(st.none() | finite),
        until_us=None if runtime == "mininet" else draw(st.none() | finite))


@settings(max_examples=200, deadline=None)
@given(real_time_scenarios())
def test_a_real_time_scenario_round_trips_through_json_unchanged(s):
    text = s.to_json()
    back = Scenario.from_json(text)
    assert back == s and back.to_json() == text
    assert set(back.runtime_options) == set(runtime_options_defaults(s.runtime))
    if s.workload["kind"] in GENERATORS:
        assert set(REAL_TIME_DEFAULTS["workload"]) <= set(back.workload)


# -- Mininet ---------------------------------------------------------------------------------

MININET = mininet_unavailable()


@pytest.mark.skipif(MININET is not None, reason="Mininet: %s" % MININET)
def test_gse_run_mininet_json_is_the_run_summary(tmp_path):
    """Slow (two Mininet runs of a k=4 Fat-Tree, ~1 min): at the calibrated rate
    (tests/mininet_calibration.py), hosts' agents each in a process, the switches in one."""
    from mininet_calibration import GBPS
    argv = ["--runtime", "mininet", "--link-gbps", str(GBPS), "--traffic", "incast",
            "--senders", "4", "--size", "20000", "--placement", "switches"]
    s = Scenario(runtime="mininet", topology={"link_gbps": GBPS},
                 workload={"kind": "incast", "senders": 4, "size": 20_000},
                 runtime_options={"placement": "switches"})
    assert run_scenario(build_parser()[0].parse_args(["run"] + argv)) == s
    cli = run_cli(tmp_path, argv)
    r = gse.run(s)
    assert_same_run(cli, r.summary.to_dict())
    mn = r.summary.mininet
    assert r.summary.runtime == "mininet" and mn["placement"] == "switches"
    assert mn["processes"] == 17 and mn["left_behind"] == {} and mn["fabric_errors"] == []
    assert r.records_table().num_rows == 4
