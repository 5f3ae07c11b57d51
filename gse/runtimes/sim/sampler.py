"""The ``--sample-us`` observer: queues, links, hosts and PFC of a simulated network per bin.

An observer of ``gse.runtimes.sim.observe``: at every multiple of the bin of virtual
time it reads counters the simulation keeps anyway (queue bytes, bytes sent, trims,
drops, ECN marks, paused time, the receivers' accepted payload) and schedules nothing, so
a sampled run executes the same events as an unsampled one and its results are
bit-identical; a run without sampling pays nothing.  The one thing it touches is each
queue's running peak: it resets ``counters.peak_bytes`` to the occupancy at every bin's
end, so that the counter at the next is the bin's peak, and puts back the run's peak when
the run ends (the summary's ``peak_queue_bytes`` are unchanged).

Compiled (``cython/gse/runtimes/sim/sampler.pxd``): reading 768 ports of a k=8 Fat-Tree
every microsecond is C field reads written into ``array('q')`` blocks, one block per
column per bin.  What the values mean and the tables they become:
``gse.metrics.timeseries`` and docs/timeseries.md.
"""

from array import array
from collections.abc import Mapping
from typing import Any

try:
    import cython  # only for the directives of sample(): no-ops in pure Python
    cython.compiled
except (ImportError, AttributeError):
    from gse import _no_cython as cython

from gse.metrics.timeseries import PORT_DYNAMIC, TimeSeries, port_static


NPORT = len(PORT_DYNAMIC)          # values per port per bin, in the order of PORT_DYNAMIC
ROW = NPORT + 1                    # a stored row: the port's index, then its values
CHUNK = 1 << 17                    # values per storage chunk (1 MiB)
PREV = 6                           # what sample() keeps per port between bins


@cython.boundscheck(False)   # every index below is within the chunk (the caller checks
@cython.wraparound(False)    # that a whole bin fits) or within prev and run_peak
def sample(ports, receivers, since, now, out, pos, prev, run_peak):
    """One bin, from ``since`` to ``now``: a row for every port with anything to report,
    then every host's accepted payload, written into ``out`` from ``pos``; returns the
    position after them.

    A row is the port's index and its ``NPORT`` values; a port whose values are all zero
    (idle, nothing queued, not paused) gets none, which keeps a long run's memory and
    writes (and so its cost) to the ports that are busy.  ``prev`` holds, per port, the
    totals at the previous bin's end (tx bytes, trims, drops, ECN marks, paused ps) and
    the queue's bytes then, then one total per host; ``run_peak`` every queue's peak so
    far.

    A port that was empty at ``since``, has not been serialising since (``busy_until``),
    and was not paused is idle for the whole bin: nothing can have been queued, trimmed,
    dropped or marked there (a packet reaching an idle, unpaused port is sent at once),
    so it is skipped after reading the port alone, not its queue and counters."""
    n = len(ports)
    k = pos
    for i in range(n):
        port = ports[i]
        j = PREV * i
        if (prev[j + 5] == 0 and port.busy_until <= since and port.paused_since < 0
                and port.paused_ps == prev[j + 4]):
            continue
        q = port.queue
        c = q.counters
        o = q.data_bytes + q.control_bytes
        prev[j + 5] = o
        p = c.peak_bytes
        if p > run_peak[i]:
            run_peak[i] = p
        c.peak_bytes = o
        v = c.tx_bytes
        tx = v - prev[j]
        prev[j] = v
        if q.paused:
            paused = 1
            v = port.paused_ps + now - port.paused_since
        else:
            paused = 0
            v = port.paused_ps
        pps = v - prev[j + 4]
        prev[j + 4] = v
        v = c.trims
        trims = v - prev[j + 1]
        prev[j + 1] = v
        v = c.drops
        drops = v - prev[j + 2]
        prev[j + 2] = v
        v = c.ecn_marks
        ecn = v - prev[j + 3]
        prev[j + 3] = v
        if p or tx or paused or pps or trims or drops or ecn:
            out[k] = i
            out[k + 1] = o
            out[k + 2] = p
            out[k + 3] = tx
            out[k + 4] = paused
            out[k + 5] = pps
            out[k + 6] = trims
            out[k + 7] = drops
            out[k + 8] = ecn
            k += ROW
    base = PREV * n
    m = len(receivers)
    for h in range(m):
        v = receivers[h].payload_bytes
        out[k] = v - prev[base + h]
        prev[base + h] = v
        k += 1
    return k


class Sampler:
    """Samples ``net`` (a ``gse.runtimes.sim.network.Network``) every ``bin_ps``."""

    def __init__(self, net: Any, bin_ps: int, start_ps: int = 0) -> None:
        if bin_ps <= 0:
            raise ValueError("the sampling interval must be positive, got %r ps" % (bin_ps,))
        self.bin_ps = bin_ps
        self.next_stop = start_ps + bin_ps
        self.edges = [start_ps]
        self.ports = list(net.ports)
        self.topo = net.topo
        self.receivers = [h.agent.receiver for h in net.hosts]
        self.nic_index = [self.ports.index(h.nic) for h in net.hosts]
        self.host_gbps = [h.nic.mbps / 1000.0 for h in net.hosts]
        self.run_peak = array("q", [p.queue.counters.peak_bytes for p in self.ports])
        prev: list[int] = []
        for p in self.ports:
            c = p.queue.counters
            prev += [c.tx_bytes, c.trims, c.drops, c.ecn_marks, p.paused_total_ps(start_ps),
                     -1]          # (unknown occupancy: the first bin reads every port)
        prev += [r.payload_bytes for r in self.receivers]
        self.prev = array("q", prev)
        self.n = len(self.ports)
        self.most = ROW * self.n + len(self.receivers)   # one bin at its largest
        self.chunks: list[array] = []
        self.pos = 0
        self.spans: list[tuple[int, int, int]] = []          # per bin: (chunk, start, end)
        self.closed = False

    def at_stop(self, now: int) -> None:
        self._sample(now)
        self.next_stop = now + self.bin_ps

    def close(self, now: int) -> None:
        if self.closed:
            return
        if now > self.edges[len(self.edges) - 1]:
            self._sample(now)             # the last, partial bin
        for p, peak in zip(self.ports, self.run_peak):
            c = p.queue.counters
            if peak > c.peak_bytes:
                c.peak_bytes = peak       # the run's peak, as the summary reports it
        self.next_stop = -1
        self.closed = True

    def _sample(self, now):
        chunks = self.chunks
        if not chunks or len(chunks[len(chunks) - 1]) - self.pos < self.most:
            chunks.append(array("q", bytes(8 * max(CHUNK, self.most))))
            self.pos = 0
        start = self.pos
        since = self.edges[len(self.edges) - 1]
        self.pos = sample(self.ports, self.receivers, since, now, chunks[len(chunks) - 1],
                          start, self.prev, self.run_peak)
        self.spans.append((len(chunks) - 1, start, self.pos))
        self.edges.append(now)

    def result(self, meta: Mapping[str, Any] | None = None) -> TimeSeries:
        """The ``TimeSeries`` sampled so far (call after the run): every port and host in
        every bin (the idle ports' zeros filled in)."""
        n = self.n
        m = len(self.receivers)
        nb = len(self.spans)
        try:
            import numpy
        except ImportError:
            numpy = None  # type: ignore[assignment]  # (then the pure-Python expansion)
        if numpy is not None:
            cols, rx = self._expand_numpy(numpy, n, m, nb)
        else:
            cols, rx = self._expand(n, m, nb)
        sent = cols[2]
        tx = array("q", [int(sent[b * n + i]) for b in range(nb) for i in self.nic_index])
        info = {"bin_ps": self.bin_ps, "ports": n, "hosts": m}
        info.update(meta or {})
        topo = self.topo
        hosts = {"host": list(range(m)),
                 "host_name": [topo.nodes[h].name for h in topo.hosts],
                 "link_gbps": self.host_gbps}
        values = {name: col for (name, _), col in zip(PORT_DYNAMIC, cols)}
        return TimeSeries(self.edges, port_static(topo, self.ports), values, hosts,
                          {"rx_payload_bytes": rx, "tx_bytes": tx}, info)

    def _expand_numpy(self, np, n, m, nb):
        rows, bins, rx = [], [], []
        views = [np.frombuffer(c, dtype=np.int64) for c in self.chunks]
        for b, (c, start, end) in enumerate(self.spans):
            chunk = views[c]
            r = chunk[start:end - m].reshape(-1, ROW)
            rows.append(r)
            bins.append(np.full(len(r), b, dtype=np.int64))
            rx.append(chunk[end - m:end])
        dense = np.zeros((NPORT, nb * n), dtype=np.int64)
        if rows:
            r = np.concatenate(rows)
            dense[:, np.concatenate(bins) * n + r[:, 0]] = r[:, 1:].T
        rx = array("q", np.concatenate(rx).tobytes()) if rx else array("q")
        return [dense[f] for f in range(NPORT)], rx

    def _expand(self, n, m, nb):
        cols = [array("q", bytes(8 * n * nb)) for _ in range(NPORT)]
        rx = array("q")
        for b, (c, start, end) in enumerate(self.spans):
            chunk = self.chunks[c]
            base = b * n
            for k in range(start, end - m, ROW):
                at = base + chunk[k]
                for f in range(NPORT):
                    cols[f][at] = chunk[k + 1 + f]
            rx.extend(chunk[end - m:end])
        return cols, rx
