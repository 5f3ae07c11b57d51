"""Time series (``--sample-us``): sampling changes nothing, and every bin adds up.

The sampler skips ports it can prove idle and stores only busy ones, so these tests check
it against a naive observer that reads every counter of every port at every stop, and
check conservation: the bins of a port sum to its counters at the end of the run, the
bins' peaks to the summary's peaks, the hosts' bins to the payload delivered.
"""

import json
import os
import random

import pytest

from gse.cli.main import main
from gse.config import PS_PER_US
from gse.metrics.timeseries import HOST_SCHEMA, PORT_SCHEMA, TimeSeries
from gse.protocols import default_config
from gse.runtimes.sim.observe import run_observed
from gse.runtimes.sim.run import build_network, run_simulation
from gse.runtimes.sim.sampler import Sampler
from gse.workloads.traffic import incast, permutation
from topologies import fat_tree

TOPO = fat_tree(4)
N = len(TOPO.hosts)


def comparable(summary):
    return {k: v for k, v in summary.items() if k not in ("wall_s", "events_per_s")}


class Naive:
    """Reads every counter of every port at every stop (what the sampler must equal)."""

    def __init__(self, net, bin_ps):
        self.net = net
        self.bin_ps = bin_ps
        self.next_stop = bin_ps
        self.rows = []
        self.last = self.totals(0)

    def totals(self, now):
        return [(p.queue.backlog(), p.queue.counters.tx_bytes, p.queue.counters.trims,
                 p.queue.counters.drops, p.queue.counters.ecn_marks, p.paused_total_ps(now),
                 p.queue.paused) for p in self.net.ports]

    def at_stop(self, now):
        cur = self.totals(now)
        self.rows.append([(c[0], c[1] - p[1], c[2] - p[2], c[3] - p[3], c[4] - p[4],
                           c[5] - p[5], c[6]) for c, p in zip(cur, self.last)])
        self.last = cur
        self.next_stop = now + self.bin_ps

    def close(self, now):
        if self.rows and now > self.next_stop - self.bin_ps:
            self.at_stop(now)
        self.next_stop = -1


@pytest.mark.parametrize("protocol", ["gse", "roce", "gse-fabric"])
def test_sampling_changes_nothing(protocol):
    msgs = incast(N, 6, 400_000, random.Random(2)) + permutation(N, 300_000,
                                                                 random.Random(3))
    for i, m in enumerate(msgs):
        m.msg_id = i
    cfg = default_config(protocol)
    plain = run_simulation(TOPO, msgs, protocol, cfg, 5)
    sampled = run_simulation(TOPO, msgs, protocol, cfg, 5, sample_ps=PS_PER_US)
    assert plain.per_message() == sampled.per_message()
    assert comparable(plain.summary) == comparable(sampled.summary)
    assert plain.timeseries is None and sampled.timeseries is not None


@pytest.mark.parametrize("protocol,bin_us", [("gse", 1), ("roce", 2.5), ("gse-fabric", 7)])
def test_sampler_equals_a_naive_reading_of_every_port(protocol, bin_us):
    msgs = incast(N, 8, 300_000, random.Random(7))
    net = build_network(TOPO, protocol, default_config(protocol), 3)
    net.schedule(msgs)
    bin_ps = int(bin_us * PS_PER_US)
    sampler = Sampler(net, bin_ps)
    naive = Naive(net, bin_ps)
    run_observed(net, -1, [sampler, naive])
    ts = sampler.result()
    assert ts.nbins == len(naive.rows) > 10
    n = ts.nports
    v = ts.port_values
    for b, row in enumerate(naive.rows):
        for i, (occ, tx, trims, drops, ecn, paused_ps, paused) in enumerate(row):
            k = b * n + i
            assert (v["queue_bytes"][k], v["tx_bytes"][k], v["trims"][k], v["drops"][k],
                    v["ecn_marks"][k], v["paused_ps"][k], bool(v["paused"][k])) == (
                occ, tx, trims, drops, ecn, paused_ps, paused), (b, i)
            assert v["queue_peak_bytes"][k] >= occ


@pytest.mark.parametrize("protocol", ["gse", "roce"])
def test_bins_add_up_to_the_run(protocol):
    msgs = incast(N, 10, 500_000, random.Random(1))
    cfg = default_config(protocol)
    if protocol == "gse":
        cfg.trim_bytes = 20_000            # trims in an incast
    res = run_simulation(TOPO, msgs, protocol, cfg, 2, sample_ps=3 * PS_PER_US)
    ts = res.timeseries
    net = res.network
    end = net.eq.now
    assert ts.edges[0] == 0 and ts.edges[-1] == end
    assert all(b - a == 3 * PS_PER_US for a, b in zip(ts.edges, ts.edges[1:-1]))
    assert 0 < ts.edges[-1] - ts.edges[-2] <= 3 * PS_PER_US
    trims = paused = 0
    for port in net.ports:
        c = port.queue.counters
        assert sum(ts.port_series(port.node, port.port, "tx_bytes")) == c.tx_bytes
        assert sum(ts.port_series(port.node, port.port, "trims")) == c.trims
        assert sum(ts.port_series(port.node, port.port, "drops")) == c.drops
        assert sum(ts.port_series(port.node, port.port, "ecn_marks")) == c.ecn_marks
        assert sum(ts.port_series(port.node, port.port, "paused_ps")) == \
            port.paused_total_ps(end)
        assert max(ts.port_series(port.node, port.port, "queue_peak_bytes")) == c.peak_bytes
        trims += c.trims
        paused += port.paused_total_ps(end)
    if protocol == "gse":
        assert trims > 0
    else:
        assert paused > 0
    delivered = sum(r.size for r in res.records if r.delivered)
    rx = sum(sum(ts.host_series(h, "rx_payload_bytes")) for h in range(N))
    assert rx == delivered
    nic = sum(sum(ts.host_series(h, "tx_bytes")) for h in range(N))
    assert nic == sum(net.hosts[h].nic.queue.counters.tx_bytes for h in range(N))
    # the receiver of the incast: its goodput never above its link (plus the one packet a
    # bin may gain at its edge: bytes count when they arrive), its bytes all there
    dst = msgs[0].dst
    good = ts.host_goodput_gbps(dst)
    one_packet = cfg.mtu * 8 / (3 * PS_PER_US) * 1000.0
    assert max(good[:-1]) <= 100.0 + one_packet + 1e-9 and sum(good) > 0
    tot = ts.total_goodput_gbps()
    assert len(tot) == ts.nbins and abs(sum(tot) - sum(good)) < 1e-6


def test_roce_uplink_queues_show_in_the_series_as_in_the_summary():
    msgs = incast(N, 12, 400_000, random.Random(4))
    res = run_simulation(TOPO, msgs, "roce", default_config("roce"), 1,
                         sample_ps=PS_PER_US)
    table = res.timeseries.port_table()
    peak = res.summary["peak_queue_bytes"]
    for tier in ("edge", "agg", "core"):
        seen = [p for p, t in zip(table["queue_peak_bytes"], table["tier"]) if t == tier]
        assert max(seen) == peak[tier]


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_write_and_read_back(tmp_path, fmt):
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    msgs = permutation(N, 200_000, random.Random(5))
    ts = run_simulation(TOPO, msgs, "roce", default_config("roce"), 1,
                        sample_ps=2 * PS_PER_US).timeseries
    ports_path, hosts_path = ts.write(str(tmp_path), fmt)
    assert os.path.basename(ports_path) == "ports.%s" % fmt
    back = TimeSeries.read(str(tmp_path))
    assert back.edges == ts.edges and back.nbins == ts.nbins
    for name in ts.port_values:
        assert [int(x) for x in back.port_values[name]] == [int(x) for x in
                                                             ts.port_values[name]]
    for h in range(N):
        assert back.host_goodput_gbps(h) == pytest.approx(ts.host_goodput_gbps(h))
    node, port = ts.ports["node"][20], ts.ports["port"][20]
    assert back.port_series(node, port, "utilisation") == pytest.approx(
        ts.port_series(node, port, "utilisation"))
    table = ts.port_table()
    assert list(table) == [name for name, _ in PORT_SCHEMA]
    assert len(table["bin"]) == ts.nbins * ts.nports
    assert list(ts.host_table()) == [name for name, _ in HOST_SCHEMA]
    assert max(table["utilisation"]) <= 1.0 + 0.5   # a packet started near a bin's end


def test_bad_interval_refused():
    net = build_network(TOPO, "gse", default_config("gse"), 1)
    with pytest.raises(ValueError, match="positive"):
        Sampler(net, 0)
    with pytest.raises(SystemExit):
        main(["sim", "--k", "4", "--sample-us", "x"])
    assert main(["sim", "--k", "4", "--sample-us", "-1", "--quiet"]) == 2


def test_cli_writes_the_series(tmp_path, capsys):
    out = tmp_path / "ts"
    rc = main(["sim", "--k", "4", "--size", "100000", "--protocol", "roce",
               "--sample-us", "5", "--timeseries", str(out), "--timeseries-format", "csv"])
    assert rc == 0
    assert "time series" in capsys.readouterr().out
    assert sorted(os.listdir(out)) == ["hosts.csv", "hosts.meta.json", "ports.csv",
                                       "ports.meta.json", "summary.json"]
    ts = TimeSeries.read(str(out))
    summary = json.loads((out / "summary.json").read_text())
    assert ts.edges[-1] == round(summary["sim_time_us"] * PS_PER_US) or \
        abs(ts.edges[-1] / PS_PER_US - summary["sim_time_us"]) < 1e-3
    rc = main(["compare", "--k", "4", "--size", "100000", "--protocols", "gse,roce",
               "--sample-us", "5", "--timeseries", str(tmp_path / "cmp"), "--quiet",
               "--timeseries-format", "csv"])
    assert rc == 0
    assert sorted(os.listdir(tmp_path / "cmp")) == ["gse", "roce"]


def test_replay_samples_too(tmp_path):
    trace = os.path.join(os.path.dirname(__file__), "data", "all_reduce_8npus_1MB.jsonl")
    out = tmp_path / "rep"
    rc = main(["replay", trace, "--k", "4", "--sample-us", "2", "--timeseries", str(out),
               "--timeseries-format", "csv", "--quiet"])
    assert rc == 0
    ts = TimeSeries.read(str(out))
    summary = json.loads((out / "summary.json").read_text())
    assert ts.nbins >= 2 and ts.nhosts == N
    delivered = sum(sum(ts.host_series(h, "rx_payload_bytes")) for h in range(N))
    assert delivered > 0 and summary["collectives_done"] == summary["collectives_total"]
