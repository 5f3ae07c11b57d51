"""The ``--sample-us`` observer: queues, links, hosts and PFC of a simulated network per bin.

An observer of ``gse.runtimes.sim.observe``: at every multiple of the bin of virtual
time it reads counters the simulation keeps anyway (queue bytes, bytes sent, trims,
drops, ECN marks, paused time, the receivers' accepted payload) and schedules nothing, so
a sampled run executes the same events as an unsampled one and its results are
bit-identical; a run without sampling pays nothing but a ``None`` test where a port
turns busy or paused.  The one thing it touches is each queue's running peak: it resets
``counters.peak_bytes`` to the occupancy at every bin's end, so that the counter at the
next is the bin's peak, and puts back the run's peak when the run ends (the summary's
``peak_queue_bytes`` are unchanged).

Reading in O(ports that changed): a port idle at a bin's end (empty, not serialising,
not paused) has nothing to report until it turns busy or paused, which only
``LinkPort.transmit`` and a PAUSE do (``busy_until`` and ``paused_since`` are set nowhere
else); so the sampler hands such a port its ``watch`` list, the port joins it at that
moment (``LinkPort.touch``), and a bin reads only the ports still busy at the previous
bin's end and those that joined since: a few dozen of the 768 ports of a k=8 Fat-Tree in
RoCE's long tail, instead of all of them every bin.  Likewise a host's accepted payload
changes only when a packet reaches it: a host node joins its ``watch`` list then
(``HostNode.touch``), and a bin reads the receivers of those hosts alone.

Compiled (``cython/gse/runtimes/sim/sampler.pxd``): a bin is C field reads written as
rows into ``array('q')`` chunks, and the dense table is built from them by C loops, each
column when it is first read (``DenseColumns``), without numpy (whose import alone cost
more than sampling a run).
What the values mean and the tables they become: ``gse.metrics.timeseries`` and
docs/timeseries.md.
"""

from array import array
from collections.abc import Mapping
from typing import Any

try:
    import cython  # only for the directives of sample(): no-ops in pure Python
    cython.compiled
except (ImportError, AttributeError):
    from gse import _no_cython as cython

from gse.agents.receiver import ReceiverSide
from gse.agents.roce_receiver import RoceReceiver
from gse.metrics.timeseries import PORT_DYNAMIC, TimeSeries, port_static


NPORT = len(PORT_DYNAMIC)          # values per port per bin, in the order of PORT_DYNAMIC
ROW = NPORT + 1                    # a stored row: the port's index, then its values
CHUNK = 1 << 17                    # values per storage chunk (1 MiB)
PREV = 6                           # what sample() keeps per port between bins


@cython.boundscheck(False)   # every index below is within the chunk (the caller checks
@cython.wraparound(False)    # that a whole bin fits) or within prev and run_peak
def sample(ports, hosts, receivers, since, now, out, pos, prev, run_peak, busy, watch,
           host_watch):
    """One bin, from ``since`` to ``now``: a row for every port of ``ports`` with
    anything to report, then every host's new accepted payload, written into ``out`` from
    ``pos``; returns the position after them.

    ``ports``: the ports that may have something to report (busy or paused at ``since``,
    or turned so since); every other port was idle for the whole bin.  Those still busy
    or paused at ``now`` go into ``busy`` (read again next bin); the others get ``watch``,
    the list they join when they turn busy again (``LinkPort.touch``).  ``hosts``: the
    host nodes that received a packet in the bin (``HostNode.touch``), the only ones whose
    receivers are read (the others accepted nothing: 0); they get ``host_watch`` back.

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
    for x in range(n):
        port = ports[x]
        i = port.index
        j = PREV * i
        if (prev[j + 5] == 0 and port.busy_until <= since and port.paused_since < 0
                and port.paused_ps == prev[j + 4]):
            port.watch = watch
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
        if o or port.busy_until > now or port.paused_since >= 0:
            busy.append(port)
        else:
            port.watch = watch
    m = len(receivers)
    base = len(prev) - m
    for h in range(m):
        out[k + h] = 0
    for x in range(len(hosts)):
        node = hosts[x]
        h = node.index
        r = receivers[h]
        if isinstance(r, ReceiverSide):       # (compiled: a C field, not a getattr)
            gr = r
            v = gr.payload_bytes
        elif isinstance(r, RoceReceiver):
            rr = r
            v = rr.payload_bytes
        else:
            v = r.payload_bytes
        out[k + h] = v - prev[base + h]
        prev[base + h] = v
        node.watch = host_watch
    k += m
    return k


@cython.boundscheck(False)
@cython.wraparound(False)
def scatter(chunk, spans, m, n, f, col):
    """Value ``f`` of the rows stored in ``chunk`` into the dense column ``col`` (row
    ``b * n + port``); ``spans``: (bin, start, end) of each bin stored in ``chunk``, its
    ``m`` host values last."""
    for s in range(0, len(spans), 3):
        base = spans[s] * n
        end = spans[s + 2] - m
        for k in range(spans[s + 1], end, ROW):
            col[base + chunk[k]] = chunk[k + 1 + f]


@cython.boundscheck(False)
@cython.wraparound(False)
def gather(col, n, nb, index, out):
    """``out[b * len(index) + h] = col[b * n + index[h]]`` for every bin ``b``."""
    m = len(index)
    for b in range(nb):
        for h in range(m):
            out[b * m + h] = col[b * n + index[h]]


class Sampler:
    """Samples ``net`` (a ``gse.runtimes.sim.network.Network``) every ``bin_ps``.

    One sampler per network at a time: it keeps the ports' ``watch`` until it closes."""

    def __init__(self, net: Any, bin_ps: int, start_ps: int = 0) -> None:
        if bin_ps <= 0:
            raise ValueError("the sampling interval must be positive, got %r ps" % (bin_ps,))
        self.ports = list(net.ports)
        self.hosts = list(net.hosts)
        for what, items in (("port", self.ports), ("host", self.hosts)):
            for i, p in enumerate(items):
                if p.index != i:
                    raise ValueError("%s %d of the network says it is %s %d (changed after "
                                     "the network was built?)" % (what, i, what, p.index))
                if p.watch is not None:
                    raise ValueError("%s %d is watched by another sampler: one sampler per "
                                     "network at a time" % (what, i))
        self.bin_ps = bin_ps
        self.next_stop = start_ps + bin_ps
        self.edges = [start_ps]
        self.topo = net.topo
        self.receivers = [h.agent.receiver for h in net.hosts]
        self.nic_index = array("q", [h.nic.index for h in net.hosts])
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
        self.busy: list[Any] = list(self.ports)   # the ports the next bin reads, with
        self.watch: list[Any] = []                # those that turn busy in the meantime
        self.host_busy: list[Any] = list(self.hosts)   # the hosts to read (all at first),
        self.host_watch: list[Any] = []           # and those a packet reaches meanwhile
        self.most = ROW * self.n + len(self.receivers)   # one bin at its largest
        self.chunks: list[array] = []
        self.pos = 0
        self.spans: list[array] = []          # per chunk: (bin, start, end) of its bins
        self.closed = False

    def at_stop(self, now: int) -> None:
        self._sample(now)
        self.next_stop = now + self.bin_ps

    def close(self, now: int) -> None:
        if self.closed:
            return
        if now > self.edges[len(self.edges) - 1]:
            self._sample(now)             # the last, partial bin
        for h in self.hosts:
            h.watch = None
        for p, peak in zip(self.ports, self.run_peak):
            p.watch = None
            c = p.queue.counters
            if peak > c.peak_bytes:
                c.peak_bytes = peak       # the run's peak, as the summary reports it
        self.busy = []
        self.watch = []
        self.host_busy = []
        self.host_watch = []
        self.next_stop = -1
        self.closed = True

    def _sample(self, now):
        chunks = self.chunks
        if not chunks or len(chunks[len(chunks) - 1]) - self.pos < self.most:
            chunks.append(array("q", [0]) * max(CHUNK, self.most))   # (one write, not two)
            self.spans.append(array("q"))
            self.pos = 0
        start = self.pos
        since = self.edges[len(self.edges) - 1]
        watch = self.watch
        ports = self.busy + watch if watch else self.busy
        del watch[:]                      # (the ports hold this very list)
        self.busy = []
        host_watch = self.host_watch
        hosts = self.host_busy + host_watch if host_watch else self.host_busy
        del host_watch[:]
        self.host_busy = []
        self.pos = sample(ports, hosts, self.receivers, since, now, chunks[len(chunks) - 1],
                          start, self.prev, self.run_peak, self.busy, watch, host_watch)
        self.spans[len(self.spans) - 1].extend((len(self.edges) - 1, start, self.pos))
        self.edges.append(now)

    def result(self, meta: Mapping[str, Any] | None = None) -> TimeSeries:
        """The ``TimeSeries`` sampled so far (call after the run): every port and host in
        every bin (the idle ports' zeros filled in, column by column as they are read:
        ``DenseColumns``)."""
        n = self.n
        m = len(self.receivers)
        bins = Bins(self.chunks, self.spans, n, m, len(self.edges) - 1, self.nic_index)
        info = {"bin_ps": self.bin_ps, "ports": n, "hosts": m}
        info.update(meta or {})
        topo = self.topo
        hosts = {"host": list(range(m)),
                 "host_name": [topo.nodes[h].name for h in topo.hosts],
                 "link_gbps": self.host_gbps}
        return TimeSeries(self.edges, port_static(topo, self.ports),
                          DenseColumns(bins, "port", [name for name, _ in PORT_DYNAMIC]),
                          hosts, DenseColumns(bins, "host", ["rx_payload_bytes", "tx_bytes"]),
                          info)


class Bins:
    """What a ``Sampler`` stored: per bin, a row for each port with something to report
    and every host's value, in chunks; ``column`` builds (once) a dense column from them,
    one value per port or host per bin (row ``b * n + i``)."""

    def __init__(self, chunks: list[array], spans: list[array], n: int, m: int, nb: int,
                 nic_index: array) -> None:
        self.chunks = chunks
        self.spans = spans
        self.n = n
        self.m = m
        self.nb = nb
        self.nic_index = nic_index
        self.built: dict[tuple[str, str], array] = {}

    def column(self, kind: str, name: str) -> array:
        key = (kind, name)
        col = self.built.get(key)
        if col is None:
            col = self._build(kind, name)
            self.built[key] = col
        return col

    def _build(self, kind, name):
        n, m, nb = self.n, self.m, self.nb
        if kind == "port":
            f = [p for p, _ in PORT_DYNAMIC].index(name)
            col = array("q", [0]) * (n * nb)
            for chunk, spans in zip(self.chunks, self.spans):
                scatter(chunk, spans, m, n, f, col)
            return col
        if name == "tx_bytes":                # a host's: its NIC's
            col = array("q", [0]) * (m * nb)
            gather(self.column("port", "tx_bytes"), n, nb, self.nic_index, col)
            return col
        col = array("q")
        for chunk, spans in zip(self.chunks, self.spans):
            for s in range(0, len(spans), 3):
                col.extend(chunk[spans[s + 2] - m:spans[s + 2]])
        return col


class DenseColumns(Mapping):
    """``{column: array('q')}`` of a sampled run, each column built from ``Bins`` when
    first read.  A run sampled every microsecond stores a few rows per bin, but its dense
    table is 8 x bins x ports values (98 MB for the 2 ms of RoCE on a k=8 Fat-Tree): what
    reads a column pays for it, a run that reads none pays nothing."""

    def __init__(self, bins: Bins, kind: str, names: list[str]) -> None:
        self.bins = bins
        self.kind = kind
        self.names = names

    def __getitem__(self, name: str) -> array:
        if name not in self.names:
            raise KeyError(name)
        return self.bins.column(self.kind, name)

    def __iter__(self):
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)
