"""The sampler reads only what changed (issue 30): its series equal a reading of everything.

``gse.runtimes.sim.sampler`` reads, per bin, the ports that were busy or paused at the
bin's start or turned so during it (they join its list, ``LinkPort.touch``) and the
receivers of the hosts a packet reached (``HostNode.touch``), and builds the dense table
after the run without numpy.  These tests run it beside a reference observer that reads
every counter of every port and every receiver at every stop, on runs that pause (PFC,
both PFC models), fail links and lose packets, and compare every value of every bin.
They run on both builds (the compiled sampler is C; its hooks are in the compiled ports).
"""

import pickle
import random

import pytest

from gse.config import BASELINES, PS_PER_US, RoceConfig
from gse.protocols import default_config
from gse.runtimes.sim.observe import run_observed
from gse.metrics.timeseries import PORT_DYNAMIC
from gse.runtimes.sim.run import build_network, run_simulation
from gse.runtimes.sim.sampler import Sampler
from gse.workloads.faults import FaultSchedule, parse_fault
from gse.workloads.traffic import incast, permutation
from topologies import fat_tree

TOPO = fat_tree(4)
N = len(TOPO.hosts)


class Everything:
    """Reads every port's and every host's totals at every stop: the reference."""

    def __init__(self, net, bin_ps):
        self.net = net
        self.bin_ps = bin_ps
        self.next_stop = bin_ps
        self.ports, self.hosts = [], []
        self.last = self.totals(0)

    def totals(self, now):
        ports = [(p.queue.data_bytes + p.queue.control_bytes, p.queue.counters.tx_bytes,
                  p.queue.counters.trims, p.queue.counters.drops,
                  p.queue.counters.ecn_marks, p.paused_total_ps(now), int(p.queue.paused))
                 for p in self.net.ports]
        hosts = [h.agent.receiver.payload_bytes for h in self.net.hosts]
        return ports, hosts

    def at_stop(self, now):
        ports, hosts = self.totals(now)
        last_ports, last_hosts = self.last
        self.ports.append([(c[0], c[1] - p[1], c[2] - p[2], c[3] - p[3], c[4] - p[4],
                            c[5] - p[5], c[6]) for c, p in zip(ports, last_ports)])
        self.hosts.append([c - p for c, p in zip(hosts, last_hosts)])
        self.last = ports, hosts
        self.next_stop = now + self.bin_ps

    def close(self, now):
        if self.ports and now > self.next_stop - self.bin_ps:
            self.at_stop(now)
        self.next_stop = -1


def sampled_and_reference(protocol, cfg, msgs, bin_ps, seed=3, faults=None, loss=0.0):
    net = build_network(TOPO, protocol, cfg, seed, loss_rate=loss)
    if faults is not None:
        from gse.runtimes.sim.faults import FaultInjector
        net.faults = FaultInjector(net, faults, 0, seed)
    net.schedule(msgs)
    sampler = Sampler(net, bin_ps)
    ref = Everything(net, bin_ps)
    run_observed(net, -1, [sampler, ref])
    return net, sampler.result(), ref


def assert_same(ts, ref):
    assert ts.nbins == len(ref.ports) == len(ref.hosts) > 5
    n, m = ts.nports, ts.nhosts
    v = ts.port_values
    names = ("queue_bytes", "tx_bytes", "trims", "drops", "ecn_marks", "paused_ps", "paused")
    for b, row in enumerate(ref.ports):
        for i, want in enumerate(row):
            k = b * n + i
            assert tuple(int(v[name][k]) for name in names) == want, (b, i)
            assert v["queue_peak_bytes"][k] >= want[0]
    rx = ts.host_values["rx_payload_bytes"]
    tx = ts.host_values["tx_bytes"]
    nic = [ts.port_index(h, 0) for h in range(m)]
    for b, row in enumerate(ref.hosts):
        assert [int(x) for x in rx[b * m:(b + 1) * m]] == row, b
        assert [int(x) for x in tx[b * m:(b + 1) * m]] == [
            int(v["tx_bytes"][b * n + nic[h]]) for h in range(m)], b


def mixed(seed):
    msgs = incast(N, 8, 300_000, random.Random(seed)) + permutation(
        N, 200_000, random.Random(seed + 1))
    for i, m in enumerate(msgs):
        m.msg_id = i
    return msgs


@pytest.mark.parametrize("protocol,bin_us", [("gse", 1), ("roce", 1), ("gse-fabric", 3),
                                             ("roce", 13)])
def test_every_value_of_every_bin_equals_a_full_reading(protocol, bin_us):
    _, ts, ref = sampled_and_reference(protocol, default_config(protocol), mixed(4),
                                       int(bin_us * PS_PER_US))
    assert_same(ts, ref)


def test_the_htsim_pfc_model_is_sampled_as_fully_read():
    """Its ports set busy_until and pause in code of their own (htsim_model)."""
    cfg = RoceConfig(**BASELINES["htsim"])
    net, ts, ref = sampled_and_reference("roce", cfg, mixed(6), 2 * PS_PER_US)
    assert sum(p.pauses_received for p in net.ports) > 0       # it did pause
    assert_same(ts, ref)


def test_pfc_pauses_are_sampled_as_fully_read():
    cfg = default_config("roce")
    msgs = incast(N, 12, 400_000, random.Random(9))
    net, ts, ref = sampled_and_reference("roce", cfg, msgs, PS_PER_US // 2)
    assert sum(p.pauses_received for p in net.ports) > 0
    assert any(ts.port_values["paused"])
    # and pauses that last whole bins (read from the port's flag alone: s_flag 2)
    n, paused, pps = ts.nports, ts.port_values["paused"], ts.port_values["paused_ps"]
    assert any(paused[k] and paused[k - n] and pps[k] == PS_PER_US // 2
               for k in range(n, len(paused)))
    assert_same(ts, ref)


@pytest.mark.parametrize("protocol", ["roce", "gse"])
def test_the_runs_peak_of_every_queue_is_put_back_when_the_sampler_closes(protocol):
    """The sampler resets each queue's peak at every bin (its bins' peaks) and puts the
    run's back when it closes: the summary's peaks are those of the run without it, each
    the greatest of its bins' peaks, and every bin's peak is at least the queue's bytes
    at its end and at its start."""
    def peaks(sampled):
        net = build_network(TOPO, protocol, default_config(protocol), 5)
        net.schedule(mixed(8))
        sampler = Sampler(net, PS_PER_US // 4) if sampled else None
        run_observed(net, -1, [sampler])
        return [p.counters.peak_bytes for p in net.ports], sampler
    want, _ = peaks(False)
    got, sampler = peaks(True)
    assert got == want and max(want) > 0
    ts = sampler.result()
    n, q, top = ts.nports, ts.port_values["queue_bytes"], ts.port_values["queue_peak_bytes"]
    assert all(top[k] >= q[k] for k in range(len(q)))
    assert all(top[k] >= q[k - n] for k in range(n, len(q)))
    assert [max(top[i::n]) for i in range(n)] == want      # (sampled from the start)


def test_lost_packets_and_a_failed_link_are_sampled_as_fully_read():
    faults = FaultSchedule([parse_fault("link:agg0_0-core0@20us,restore=60us", TOPO)])
    net, ts, ref = sampled_and_reference("gse", default_config("gse"), mixed(11),
                                         PS_PER_US, faults=faults, loss=0.01)
    assert sum(p.wire_drops for p in net.ports) > 0
    assert_same(ts, ref)


@pytest.mark.parametrize("protocol,what", [("gse", "trims"), ("roce", "ecn_marks")])
def test_the_rarer_values_are_read_when_their_counters_are_flagged(protocol, what):
    """A bin reads a port's drops, trims, ECN marks and pause totals only when its
    counters are flagged (``s_flag``, set where one of them changes) or it is paused:
    runs where they change are read as fully, and when the sampler has closed no
    counters are left flagged (a change at a port it was not reading would be)."""
    net, ts, ref = sampled_and_reference(protocol, default_config(protocol), mixed(4),
                                         PS_PER_US)
    assert sum(getattr(p.counters, what) for p in net.ports) > 0
    assert_same(ts, ref)
    assert not any(p.counters.s_flag for p in net.ports)
    assert not any(p.paused_since >= 0 for p in net.ports)


def test_a_network_has_one_sampler_at_a_time_and_is_left_unwatched():
    net = build_network(TOPO, "gse", default_config("gse"), 1)
    net.schedule(mixed(2))
    sampler = Sampler(net, PS_PER_US)
    run_observed(net, 30 * PS_PER_US, [sampler])
    assert sampler.closed
    assert all(p.watch is None for p in net.ports)
    assert all(h.watch is None for h in net.hosts)
    net.ports[3].watch = []                     # as an open sampler leaves it
    with pytest.raises(ValueError, match="port 3 is watched by another sampler"):
        Sampler(net, PS_PER_US)
    net.ports[3].watch = None
    net.ports[3].index = 7
    with pytest.raises(ValueError, match="port 3 of the network says it is port 7"):
        Sampler(net, PS_PER_US)


def test_the_sampler_reads_fewer_ports_than_the_fabric_has_in_a_quiet_tail():
    """One long flow in a k=4 fabric: after the first bin, only the ports its packets and
    its ACKs take (sprayed over the paths) are read, not the 48 ports (what makes sampling
    cheap)."""
    msgs = permutation(N, 2_000_000, random.Random(1))[:1]
    net = build_network(TOPO, "gse", default_config("gse"), 1)
    net.schedule(msgs)
    sampler = Sampler(net, PS_PER_US)
    run_observed(net, 20 * PS_PER_US, [])
    sampler.at_stop(20 * PS_PER_US)
    read_later = []
    for t in range(21, 60):
        net.run(t * PS_PER_US)
        read_later.append(len(sampler.busy))
        sampler.at_stop(t * PS_PER_US)
    sampler.close(net.eq.now)
    assert 0 < max(read_later) < len(net.ports) // 2


def test_the_columns_are_built_when_read_and_the_series_pickles():
    res = run_simulation(TOPO, mixed(3), "roce", default_config("roce"), 1,
                         sample_ps=PS_PER_US)
    ts = res.timeseries
    values = ts.port_values
    assert list(values) == [name for name, _ in PORT_DYNAMIC] and len(values) == 8
    assert list(ts.host_values) == ["rx_payload_bytes", "tx_bytes"]
    assert values["tx_bytes"] is values["tx_bytes"]            # built once
    assert len(values["queue_bytes"]) == ts.nbins * ts.nports
    with pytest.raises(KeyError):
        values["utilisation"]                                   # derived, not stored
    back = pickle.loads(pickle.dumps(ts))
    for name in values:
        assert list(back.port_values[name]) == list(values[name])
    for name in ts.host_values:
        assert list(back.host_values[name]) == list(ts.host_values[name])
    assert sum(ts.host_values["rx_payload_bytes"]) == sum(
        h.agent.receiver.payload_bytes for h in res.network.hosts) > 0


def test_the_stored_chunks_end_at_their_last_row_and_pickle_the_same_every_run():
    """A chunk is not zero-filled in the compiled build: what lies past its last row
    was never written, so a closed sampler keeps (and pickles) only the rows."""
    def run():
        net = build_network(TOPO, "roce", default_config("roce"), 1)
        net.schedule(permutation(N, 400_000, random.Random(4)))
        sampler = Sampler(net, PS_PER_US // 20)          # several chunks
        run_observed(net, -1, [sampler])
        return sampler
    one, two = run(), run()
    assert len(one.chunks) > 1
    assert [len(c) for c in one.chunks] == one.ends
    assert pickle.dumps(one.result()) == pickle.dumps(two.result())


def test_a_stored_row_holds_its_last_value_in_its_head_only_when_it_fits():
    """``sample`` stores a row's last value (and a host's growth) in the high half of its
    head word (of its word) when it is below 2**31, in a word of its own otherwise: the
    columns read back both forms exactly (hand-built rows, as no simulated bin sends 2 GiB)."""
    from array import array
    from gse.runtimes.sim.sampler import Bins
    big, narrow = (1 << 40) + 5, (1 << 31) - 1
    n, m = 5, 3
    rows = [(3 << 8) | 0b101, 7, big,                    # values 0 and 2, both in words
            (narrow << 32) | (4 << 8) | 0b110, 9,          # 1 a word, 2 in the head
            (11 << 32) | (1 << 8) | 0b100]                 # 2 alone, in the head
    hosts = [(narrow << 32) | 2,                           # host 2 grew by 2**31 - 1
             1, 1 << 31]                                   # host 1 by 2**31: two words
    chunk = array("q", [1, len(rows), len(hosts)] + rows + hosts)
    bins = Bins([array("q", [0, 0, 0]), chunk], [3, len(chunk)], n, m, 2,
                array("q", range(m)))
    names = [name for name, _ in PORT_DYNAMIC]
    assert list(bins.column("port", names[0])) == [0] * n + [0, 0, 0, 7, 0]
    assert list(bins.column("port", names[1])) == [0] * n + [0, 0, 0, 0, 9]
    assert list(bins.column("port", names[2])) == [0] * n + [0, 11, 0, big, narrow]
    for name in names[3:]:
        assert list(bins.column("port", name)) == [0] * (2 * n)
    assert list(bins.column("host", "rx_payload_bytes")) == [0] * m + [0, 1 << 31, narrow]
