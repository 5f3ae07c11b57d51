"""The ``--sample-us`` observer: queues, links, hosts and PFC of a simulated network per bin.

An observer of ``gse.runtimes.sim.observe``: at every multiple of the bin of virtual
time it reads counters the simulation keeps anyway (queue bytes, bytes sent, trims,
drops, ECN marks, paused time, the receivers' accepted payload) and schedules nothing, so
a sampled run executes the same events as an unsampled one and its results are
bit-identical; a run without sampling pays nothing but a ``None`` test where a port
turns busy or paused.  What it touches of the simulation's is each queue's running peak:
it resets ``counters.peak_bytes`` to the occupancy at every bin's end, so that the
counter at the next is the bin's peak, and puts back the run's peak when the run ends
(the summary's ``peak_queue_bytes`` are unchanged); and it keeps what it last read of a
port in the ``s_*`` fields of the port's counters and of the port, which nothing else
reads.

Reading in O(ports that changed): a port idle at a bin's end (empty, not serialising,
not paused) has nothing to report until it turns busy or paused, which only
``LinkPort.transmit`` and a PAUSE do (``busy_until`` and ``paused_since`` are set nowhere
else); so the sampler hands such a port its list of busy ports (as the port's
``watch``), the port joins it at that moment (``LinkPort.touch``), and a bin reads only
the ports of that list, those still busy at the previous bin's end and those that joined
since: a few dozen of the 768 ports of a k=8 Fat-Tree in
RoCE's long tail, instead of all of them every bin.  Likewise a host's accepted payload
changes only when a packet reaches it: a host node joins its ``watch`` list then
(``HostNode.touch``), and a bin reads the receivers of those hosts alone.

Compiled (``cython/gse/runtimes/sim/sampler.pxd``): the sampler is an extension type and
a bin is one C call, field reads written as sparse rows (``sample``) into ``array('q')``
chunks; the dense table is built from them by C loops, each column when it is first read
(``DenseColumns``), without numpy (whose import alone cost more than sampling a run).
A bin's cost is cache misses on the ports it reads (two lines of a busy port, which is
its queue and its counters, unless something rarer happened there), and what it writes:
docs/timeseries.md ("Cost") says how both are kept small.  What the values mean and
the tables they become: ``gse.metrics.timeseries`` and docs/timeseries.md.
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
from gse.runtimes.sim.network import HostNode, LinkPort


NPORT = len(PORT_DYNAMIC)          # values per port per bin, in the order of PORT_DYNAMIC
HEAD = 3                           # a stored bin starts (bin, port words, host pairs)
CHUNK = 1 << 16                    # values per storage chunk (512 KiB)
POP = array("q", [bin(x).count("1") for x in range(256)])   # values in a row of mask x
# A row's last value, and a host's growth, below NARROW is stored in the high half of the
# row's head (its low half: the port's index << 8 | the mask) or of the host's word (the
# host in its low half), not in a word of its own: a value stored is never 0, so a head
# whose high half is 0 has its values all after it, exact for any value.  A RoCE run at
# 1 us stores about a third fewer words so (fewer fresh pages, each a page fault).
NARROW = 1 << 31
MAX_INDEX = 1 << 24                # the port indices a head's low half holds
# The compiled sample() asks the CPU to fetch the first two lines of the ports a few
# places ahead in its list (a port is its queue and its counters, one object), gse_prefetch_port
# of sampler.pxd (__builtin_prefetch, on a borrowed pointer: gse_prefetch.h): the misses
# on them overlap instead of following one another.  The pure build never calls it.
PREFETCH = cython.compiled
# Compiled, a new storage chunk is an array('q') that is not zero-filled (cpython.array's
# clone(..., False), declared in sampler.pxd): sample() writes every word that is read
# back (up to the chunk's end), and zero-filling 512 KiB (array * n: memcpy of a growing
# prefix) cost more instructions than all the writes to it, and evicted lines.  The pure
# build zero-fills.
RAW_CHUNKS = cython.compiled
WORDS = array("q")                 # (the type clone() copies)


@cython.boundscheck(False)
@cython.wraparound(False)
def _rarer(port, since, now, out, k):
    """A flagged port's rarer values (``sample``): a rarer value or the pause state
    changed since the last bin's end.  Writes the non-zero ones of (paused, paused time,
    trims, drops, marks) from ``out[k]``, and the bits of the row's mask they set after
    them (at ``out[k']``, where the row's next value or the next row goes); returns k'.
    The paused time at the last bin's end was kept as Q if the port was not paused then,
    as Q - then - 1 (negative: Q <= then) if it was, which stays exact while it is (Q
    grows with the clock), so that ``sample`` reads nothing of a port paused all the
    bin (``s_flag`` 2)."""
    mask = 0
    v = port.s_paused
    if v < 0:
        v += since + 1
    if port.paused_since >= 0:
        q = port.paused_ps + now - port.paused_since
        port.s_paused = q - now - 1
        port.s_flag = 2
        out[k] = 1
        k += 1
        mask = 8
    else:
        q = port.paused_ps
        port.s_paused = q
        port.s_flag = 0
    if q != v:
        out[k] = q - v
        k += 1
        mask |= 16
    v = port.trims
    if v != port.s_trims:
        out[k] = v - port.s_trims
        k += 1
        mask |= 32
        port.s_trims = v
    v = port.drops
    if v != port.s_drops:
        out[k] = v - port.s_drops
        k += 1
        mask |= 64
        port.s_drops = v
    v = port.ecn_marks
    if v != port.s_ecn:
        out[k] = v - port.s_ecn
        k += 1
        mask |= 128
        port.s_ecn = v
    out[k] = mask
    return k


@cython.boundscheck(False)   # every index below is within the chunk (the caller checks
@cython.wraparound(False)    # that a whole bin fits), busy (w <= x) or prev (a host's)
def sample(busy, hosts, receivers, since, now, b, out, pos, prev):
    """Bin ``b``, from ``since`` to ``now``, written into ``out`` from ``pos``: its
    head (``b``, the number of words of port rows, the number of words of hosts), a row
    for every port with anything to report, then a word (two if the value is 2**31 or
    more: ``NARROW``) for every host whose accepted payload grew, the host and the
    growth; returns the position after them.

    The ports read are those of ``busy``: the ports busy or paused at ``since``, then
    those that turned so since (``LinkPort.touch`` appends them: their ``watch`` is this
    very list); every other port was idle for the whole bin.  ``busy`` keeps, in place
    and in the same order, the ports still busy or paused at ``now`` (the next bin's),
    and the others get it back as their ``watch``.  One list compacted in place, not
    three (busy, joined since, and the next bin's) emptied and re-grown every bin: no
    ``realloc`` per doubling, and what a port's reference is dropped from was read in
    this bin (in the cache), not a bin ago.  ``hosts``: the host nodes that received a
    packet in the bin (``HostNode.touch``; every host at the first bin), the only ones
    whose receivers are read (the others accepted nothing); they get it back as their
    ``watch``, and it is emptied.

    A row is one word, the port's index shifted left by 8 with a bit per value of
    ``PORT_DYNAMIC`` that is not zero, then those values in that order (``POP[mask]`` of
    them; the last in the high half of the first word instead when it is below
    ``NARROW``); a port whose values are all zero (idle, nothing queued, not paused) gets
    none.
    Most values of a busy port are zero in a bin (no pause, trim, drop or mark), so a
    row is about 3 words, not 9, and a bin's writes (and so its cost to the caches and in
    page faults) are a third.

    What a busy port's row needs at every bin is the first two cache lines of the
    compiled build's port, which is its queue and its counters: the queue's bytes and
    peak, the bytes sent, this sampler's total ``s_tx``, its copy of the port's index
    ``s_index`` and ``s_flag``, which the simulation sets to 1 where a rarer value
    changed (a drop, trim or ECN mark, a PAUSE or a RESUME: ``_rarer`` reads them then,
    and this sampler's totals of them, the port's ``s_*``) and this sampler to 2 for a
    port paused at the bin's end (paused all the next bin unless it is set to 1 again:
    nothing more to read), and ``s_peak``, the run's peak.  The fourth line
    (``busy_until``) is read when the port holds nothing, is not paused and sent nothing
    in the bin, and the fifth when it turns idle (to hand it its ``watch``).
    ``prev`` holds each host's
    accepted payload at the previous bin's end."""
    k = pos + HEAD
    n = len(busy)
    w = 0                             # busy[:w]: the ports kept for the next bin
    for x in range(n):
        if PREFETCH:                  # (compiled) fetch the line the ports ahead will read
            if x + 4 < n:
                gse_prefetch_port(busy, x + 4)
        port = cython.cast(LinkPort, busy[x])     # (every one is: no type test)
        # the port is its queue's counters (it derives from them): its own fields, the
        # queue's bytes now (queued_bytes) among them, in its first two lines
        o = port.queued_bytes
        p = port.peak_bytes
        if p > port.s_peak:
            port.s_peak = p
        port.peak_bytes = o
        v = port.tx_bytes
        tx = v - port.s_tx
        port.s_tx = v
        r = k
        k += 1
        mask = 0
        if o:
            out[k] = o
            k += 1
            mask = 1
        if p:
            out[k] = p
            k += 1
            mask |= 2
        if tx:
            out[k] = tx
            k += 1
            mask |= 4
        paused = 0
        f = port.s_flag
        if f == 2:
            # paused at the last bin's end and nothing changed since (a PAUSE, a RESUME, a
            # drop, trim or mark would have set the flag to 1): paused all the bin
            paused = 1
            out[k] = 1
            out[k + 1] = now - since
            k += 2
            mask |= 24
        elif f:
            k = _rarer(port, since, now, out, k)
            mask |= out[k]            # (_rarer's mask, past the values it wrote)
            paused = mask & 8
        if mask:
            v = out[k - 1]            # the row's last value, in its head's high half if
            if 0 < v < NARROW:        # it fits (a value stored is never 0)
                k -= 1
                out[r] = (v << 32) | (port.s_index << 8) | mask
            else:
                out[r] = (port.s_index << 8) | mask
        else:
            k = r
        # kept if it may have something to report at the next bin: it holds packets, is
        # paused, sent in this bin (it may still be sending: read again, it reports
        # nothing more than it has), or is sending (its fourth line, read only then)
        if o or tx or paused or port.busy_until > now:
            if w != x:
                busy[w] = port        # (drops busy[w]'s reference: read in this bin)
            w += 1
        else:
            port.watch = busy
    del busy[w:]                      # (a list shrinks only below half its room)
    out[pos] = b
    out[pos + 1] = k - pos - HEAD
    r = k
    for x in range(len(hosts)):
        node = cython.cast(HostNode, hosts[x])    # (every one is: no type test)
        h = node.index
        rv = receivers[h]
        if isinstance(rv, ReceiverSide):          # (compiled: a C field, not a getattr)
            gr = cython.cast(ReceiverSide, rv)    # (tested: no second type test)
            v = gr.payload_bytes
        elif isinstance(rv, RoceReceiver):
            rr = cython.cast(RoceReceiver, rv)
            v = rr.payload_bytes
        else:
            v = rv.payload_bytes
        node.watch = hosts
        if v != prev[h]:
            tx = v - prev[h]
            if 0 < tx < NARROW:       # one word: the growth in the high half
                out[k] = (tx << 32) | h
                k += 1
            else:                     # two: the host, then the growth
                out[k] = h
                out[k + 1] = tx
                k += 2
            prev[h] = v
    del hosts[:]
    out[pos + 2] = k - r
    return k


@cython.boundscheck(False)
@cython.wraparound(False)
def scatter(chunk, end, n, f, col):
    """Value ``f`` of the port rows stored in ``chunk`` (up to ``end``) into the dense
    column ``col`` (row ``b * n + port``; the others stay 0)."""
    below = (1 << f) - 1
    pop = POP
    k = 0
    while k < end:
        base = chunk[k] * n
        stop = k + HEAD + chunk[k + 1]
        last = stop + chunk[k + 2]
        k += HEAD
        while k < stop:
            w = chunk[k]
            mask = w & 255
            hi = w >> 32              # the row's last value, if it is there (not 0)
            j = pop[mask]
            if (mask >> f) & 1:
                if hi and (mask >> (f + 1)) == 0:
                    col[base + ((w >> 8) & 0xFFFFFF)] = hi
                else:
                    col[base + ((w >> 8) & 0xFFFFFF)] = chunk[k + 1 + pop[mask & below]]
            k += 1 + j
            if hi:
                k -= 1
        k = last


@cython.boundscheck(False)
@cython.wraparound(False)
def scatter_hosts(chunk, end, m, col):
    """The host pairs stored in ``chunk`` (up to ``end``) into the dense column ``col``
    (row ``b * m + host``; the others stay 0)."""
    k = 0
    while k < end:
        base = chunk[k] * m
        s = k + HEAD + chunk[k + 1]
        k = s + chunk[k + 2]
        while s < k:
            w = chunk[s]
            if w >> 32:               # one word: the growth in the high half
                col[base + (w & 0xFFFFFFFF)] = w >> 32
                s += 1
            else:
                col[base + w] = chunk[s + 1]
                s += 2


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

    One sampler per network at a time: it keeps the ports' ``watch`` until it closes.
    Compiled, it is an extension type whose per-bin state is C fields: a bin costs a C
    call to ``sample`` on views of the current chunk and of ``prev`` taken once (taking
    a view of an array per call, as a plain class must, was most of a quiet bin's cost)."""

    __slots__ = ("ports", "hosts", "bin_ps", "next_stop", "edges", "since", "topo",
                 "receivers", "nic_index", "host_gbps", "prev", "pview", "n", "busy",
                 "host_busy", "most", "chunks", "ends", "out", "view", "size", "pos",
                 "closed")

    def __init__(self, net: Any, bin_ps: int, start_ps: int = 0) -> None:
        if bin_ps <= 0:
            raise ValueError("the sampling interval must be positive, got %r ps" % (bin_ps,))
        self.ports = list(net.ports)
        self.hosts = list(net.hosts)
        if len(self.ports) > MAX_INDEX or len(self.hosts) > MAX_INDEX:
            raise ValueError("the sampler stores at most %d ports and hosts, the network has "
                             "%d ports and %d hosts" % (MAX_INDEX, len(self.ports),
                                                         len(self.hosts)))
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
        self.since = start_ps
        self.topo = net.topo
        self.receivers = [h.agent.receiver for h in net.hosts]
        self.nic_index = array("q", [h.nic.index for h in net.hosts])
        self.host_gbps = [h.nic.mbps / 1000.0 for h in net.hosts]
        for p in self.ports:
            c = p.queue.counters
            if p.counters is not c:
                raise ValueError("port %d's counters are not its queue's (replaced after the "
                                 "network was built?)" % (p.index,))
            c.s_tx = c.tx_bytes
            c.s_peak = c.peak_bytes
            c.s_flag = 1                  # (the first bin reads every port in full)
            c.s_index = p.index
            p.s_trims = c.trims
            p.s_drops = c.drops
            p.s_ecn = c.ecn_marks
            p.s_paused = p.paused_total_ps(start_ps)
        self.prev = array("q", [r.payload_bytes for r in self.receivers])
        self.pview = self.prev                # (compiled: a typed view, taken once)
        self.n = len(self.ports)
        self.busy: list[Any] = list(self.ports)   # the ports the next bin reads (all at
        #                                           first; those turning busy join it)
        self.host_busy: list[Any] = list(self.hosts)   # the hosts to read (all at first,
        #                                                then those a packet reached)
        # a bin at most (and a word: _rarer's mask after the last port's values)
        self.most = HEAD + (1 + NPORT) * self.n + 2 * len(self.receivers) + 1
        self.chunks: list[array] = []
        self.ends: list[int] = []             # the used length of each chunk
        self.out = array("q")
        self.view = self.out                  # (compiled: a typed view of the chunk)
        self.size = 0                         # its length
        self.pos = 0
        self.closed = False

    def at_stop(self, now: int) -> None:
        self._sample(now)
        self.next_stop = now + self.bin_ps

    def run_bins(self, eq: Any, limit: int) -> bool:
        """Run ``eq`` (the network's event queue: ``Network.run`` is its ``run``) a bin at
        a time, sampling at each bin's end, while that end is before ``limit`` (the next
        stop of another observer, or the run's end; -1 for none); True if the queue
        drained.  What ``observe.run_observed`` does for any observer, without its Python
        loop per bin."""
        while self.next_stop >= eq.now and (limit < 0 or self.next_stop < limit):
            stop = self.next_stop
            if eq.run(stop):
                return True
            self.at_stop(stop)
        return False

    def close(self, now: int) -> None:
        if self.closed:
            return
        if now > self.since:
            self._sample(now)             # the last, partial bin
        for h in self.hosts:
            h.watch = None
        for p in self.ports:
            p.watch = None
            c = p.counters
            if c.s_peak > c.peak_bytes:
                c.peak_bytes = c.s_peak   # the run's peak, as the summary reports it
            if c.s_flag == 2:
                c.s_flag = 0              # (read as paused: nothing left unread)
        if self.chunks:
            self.ends[len(self.ends) - 1] = self.pos
            last = self.out
            self.out = array("q")
            self.view = self.out          # (an array with a view cannot shrink)
            self.size = 0
            del last[self.pos:]           # words never written (compiled: not zeroed)
        self.busy = []
        self.host_busy = []
        self.next_stop = -1
        self.closed = True

    def _sample(self, now):
        if self.size - self.pos < self.most:
            full = self.out
            self.size = max(CHUNK, self.most)
            if RAW_CHUNKS:
                self.out = clone(WORDS, self.size, False)
            else:
                self.out = array("q", [0]) * self.size
            self.view = self.out
            if self.chunks:
                self.ends[len(self.ends) - 1] = self.pos
                # a stored chunk ends at its last row: the words past it were never
                # written (compiled, not even zeroed), and would be kept and pickled
                del full[self.pos:]
            self.chunks.append(self.out)
            self.ends.append(0)
            self.pos = 0
        self.pos = sample(self.busy, self.host_busy, self.receivers, self.since, now,
                          len(self.edges) - 1, self.view, self.pos, self.pview)
        self.since = now
        self.edges.append(now)

    def result(self, meta: Mapping[str, Any] | None = None) -> TimeSeries:
        """The ``TimeSeries`` sampled so far (call after the run): every port and host in
        every bin (the idle ports' zeros filled in, column by column as they are read:
        ``DenseColumns``)."""
        n = self.n
        m = len(self.receivers)
        ends = list(self.ends)
        if ends:
            ends[len(ends) - 1] = self.pos
        bins = Bins(self.chunks, ends, n, m, len(self.edges) - 1, self.nic_index)
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
    and a pair for each host that received, in chunks (``sample``); ``column`` builds
    (once) a dense column from them, one value per port or host per bin (row ``b * n +
    i``)."""

    def __init__(self, chunks: list[array], ends: list[int], n: int, m: int, nb: int,
                 nic_index: array) -> None:
        self.chunks = chunks
        self.ends = ends
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
            for chunk, end in zip(self.chunks, self.ends):
                scatter(chunk, end, n, f, col)
            return col
        col = array("q", [0]) * (m * nb)
        if name == "tx_bytes":                # a host's: its NIC's
            gather(self.column("port", "tx_bytes"), n, nb, self.nic_index, col)
            return col
        for chunk, end in zip(self.chunks, self.ends):
            scatter_hosts(chunk, end, m, col)
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
