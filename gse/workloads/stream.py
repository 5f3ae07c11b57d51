"""Collectives at 10k-GPU scale: every rank a small state machine, not a DAG of flows.

``gse.workloads.replay`` expands a collective into all of its flows and their
dependencies before it starts: right for traces, but a ring all-reduce over the 1,280
servers of one rail is 3.3 M flows, and the seed's fabric has eight rails.  Here a
collective is a sequence of *phases* run by every rank; in a phase each rank belongs to
one group and knows from its position what it sends next, so the state is a few
integers per rank plus the messages in flight.  A finished message leaves only its
figures, in flat arrays (``Log``).

Phases:

* ``RingPhase(op, groups, size)``: each group is a ring (in its order) running a ring
  ``all_reduce`` (2(n-1) steps), ``reduce_scatter`` or ``all_gather`` (n-1 steps) of a
  ``size``-byte buffer, exactly as ``gse.workloads.collectives`` cuts it: in step s the
  rank at position i sends one chunk to position i+1, once it has the chunk of step s-1
  from position i-1.
* ``PairwisePhase(groups, size, window)``: an all-to-all inside each group, ``size``
  bytes to every peer, in NCCL's pairwise rounds: in round d (1..n-1) the rank at
  position i sends to position i+d; at most ``window`` of its sends are in flight (NCCL
  progresses a bounded number of peers at once), ``window=None`` means all at once.

A rank enters phase p+1 when its own part of phase p is done (everything it sent and
everything it receives in p delivered), and a message starts when its source has what it
needs and its destination has entered the phase (both peers launched it), as in
``gse.workloads.replay``.  Messages are started from events, never from inside another
host's callback.  A message's id encodes (phase, index): ``(p + 1) << 24 | k``.

``hierarchical_all_reduce`` builds NCCL's all-reduce on a rail-optimised fabric: a ring
reduce-scatter inside every server (across its rails: the cross-rail step), one ring
all-reduce of S/rails per rail over the servers, a ring all-gather inside every server.
``StreamRun(topo, phases, protocol, ...).run()`` returns a ``StreamResult`` with the
network summary (the keys of ``gse sim``'s), per-phase times and bus bandwidth against
the bound of an idle fabric (``ring_bound_ps``).
"""

import math
import time
from array import array
from collections.abc import Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from gse.common.handler import Handler
from gse.metrics.records import summarize, wire_bytes
from gse.protocols import PROTOCOLS, default_config
from gse.runtimes.sim.eventq import event_target
from gse.runtimes.sim.observe import Watchdog, mark_end, run_observed
from gse.runtimes.sim.run import build_network, pfc_summary
from gse.wire.linkrate import wire_time_ps
from gse.wire.packet import HEADER_BYTES
from gse.workloads.collectives import bus_factor, chunks
from topologies.topology import serialisation_ps

if TYPE_CHECKING:
    from topologies.topology import Topology

SHIFT = 24
INDEX = (1 << SHIFT) - 1


OPS = ("all_reduce", "reduce_scatter", "all_gather")   # RingPhase.opcode: the index here


def chunk_index(op: int, n: int, pos: int, step: int) -> int:
    """Which of the ``n`` chunks the rank at ``pos`` of a ring sends in ``step``, for the
    ring collective ``OPS[op]`` (as ``gse.workloads.collectives`` cuts it)."""
    if op == 0:
        if step < n - 1:
            return (pos - step) % n
        return (pos + 1 - (step - (n - 1))) % n
    if op == 1:
        return (pos - step - 1) % n
    return (pos - step) % n


class RingPhase:
    """A ring collective in every group (see the module docstring)."""

    kind = "ring"

    def __init__(self, op: str, groups: Iterable[Iterable[int]], size: int,
                 name: str | None = None) -> None:
        if op not in OPS:
            raise ValueError("ring phase: op must be all_reduce, reduce_scatter or "
                             "all_gather, got %r" % (op,))
        self.op = op
        self.opcode = OPS.index(op)
        self.groups = [tuple(g) for g in groups]
        n = len(self.groups[0])
        if n < 2 or any(len(g) != n for g in self.groups):
            raise ValueError("ring phase: every group needs the same size >= 2")
        self.n = n
        self.size = size
        self.steps = 2 * (n - 1) if op == "all_reduce" else n - 1
        self.sizes = chunks(size, n)
        self.name = name or "%s ring x%d of %d" % (op, len(self.groups), n)

    def sends(self):
        return self.steps

    def chunk(self, pos, step):
        return self.sizes[chunk_index(self.opcode, self.n, pos, step)]

    def bytes_per_rank(self):
        return sum(self.chunk(0, s) for s in range(self.steps))


class PairwisePhase:
    """An all-to-all in every group, in pairwise rounds (see the module docstring)."""

    kind = "pairwise"

    def __init__(self, groups: Iterable[Iterable[int]], size: int, window: int | None = None,
                 name: str | None = None) -> None:
        self.groups = [tuple(g) for g in groups]
        n = len(self.groups[0])
        if n < 2 or any(len(g) != n for g in self.groups):
            raise ValueError("pairwise phase: every group needs the same size >= 2")
        self.n = n
        self.size = size
        self.window = n - 1 if window is None else max(1, min(window, n - 1))
        self.name = name or "all-to-all x%d of %d, window %d" % (len(self.groups), n,
                                                                 self.window)

    def sends(self):
        return self.n - 1

    def bytes_per_rank(self):
        return self.size * (self.n - 1)


def hierarchical_all_reduce(servers: int, rails: int, size: int) -> list[RingPhase]:
    """NCCL's all-reduce of ``size`` bytes per rank on a rail-optimised fabric: rank
    ``s * rails + r`` is NIC r of server s.  Reduce-scatter across each server's rails,
    a ring all-reduce of size/rails per rail, all-gather across each server's rails."""
    local = [tuple(s * rails + r for r in range(rails)) for s in range(servers)]
    rail = [tuple(s * rails + r for s in range(servers)) for r in range(rails)]
    return [RingPhase("reduce_scatter", local, size, "cross-rail reduce-scatter"),
            RingPhase("all_reduce", rail, size // rails, "rail ring all-reduce"),
            RingPhase("all_gather", local, size, "cross-rail all-gather")]


class Log:
    """Per-message figures in flat arrays (``-1``: not yet)."""

    __slots__ = ("start", "deliver", "finish", "ideal", "retx", "size")

    def __init__(self, n):
        self.start = array("q", [-1]) * n
        self.deliver = array("q", [-1]) * n
        self.finish = array("q", [-1]) * n
        self.ideal = array("q", [0]) * n
        self.retx = array("i", [0]) * n
        self.size = array("i", [0]) * n

    def __len__(self):
        return len(self.start)


def _stats(log):
    """(delivered, bytes delivered, fct ps, slowdowns, goodputs Gb/s) of the messages whose
    sender saw the last ACK; numpy when installed (26 M messages), else plain Python."""
    try:
        import numpy as np
    except ImportError:
        np = None
    if np is not None:
        start = np.frombuffer(log.start, dtype=np.int64)
        deliver = np.frombuffer(log.deliver, dtype=np.int64)
        finish = np.frombuffer(log.finish, dtype=np.int64)
        ideal = np.frombuffer(log.ideal, dtype=np.int64)
        size = np.frombuffer(log.size, dtype=np.int32).astype(np.int64)
        got = deliver >= 0
        done = finish >= 0
        fct = (finish - start)[done]
        slow = fct / np.maximum(ideal[done], 1)
        good = size[done] * 8 / np.maximum(fct, 1) * 1e3
        return int(got.sum()), int(size[got].sum()), fct, slow, good
    fct, slow, good = [], [], []
    delivered = nbytes = 0
    for r in range(len(log)):
        if log.deliver[r] >= 0:
            delivered += 1
            nbytes += log.size[r]
        if log.finish[r] >= 0:
            t = log.finish[r] - log.start[r]
            fct.append(t)
            slow.append(t / max(log.ideal[r], 1))
            good.append(log.size[r] * 8 / max(t, 1) * 1e3)
    return delivered, nbytes, fct, slow, good


def _percentiles(values, qs):
    """(nearest-rank percentiles as ``gse.metrics.records.percentile``, min, max)."""
    arr = sorted(values) if isinstance(values, list) else values.copy()
    if not isinstance(values, list):
        arr.sort()
    n = len(arr)
    if not n:
        return [None] * len(qs), None, None
    out = [float(arr[min(max(1, math.ceil(q / 100.0 * n)), n) - 1]) for q in qs]
    return out, float(arr[0]), float(arr[-1])


class StreamResult:
    __slots__ = ("summary", "phases", "log", "network", "run")

    def __init__(self, summary, phases, log, network, run):
        self.summary = summary
        self.phases = phases        # [dict] per phase: start/end us, time, bytes
        self.log = log
        self.network = network
        self.run = run              # the StreamRun (per-rank entry and done times)


class StreamRun(Handler):
    """One run of ``phases`` on a fresh network (see the module docstring).

    Compiled (cython/gse/workloads/stream.pxd), the state read on every message is C
    integers in flat arrays: per phase (sends per rank, first log row, ring or not, ranks
    per group, window, chunk sizes) and per (phase, host) (``order``: the group members
    in order, ``slot``: where the host's group starts in it, ``where``: its position),
    so a message's destination and size are computed, not looked up in Python objects.
    A message is started by an event whose arguments are its source and its id: the
    queue calls ``fire``, a C method (``event_target``)."""

    __slots__ = ("topo", "phases", "protocol", "cfg", "seed", "n", "group", "pos", "base",
                 "sends", "is_ring", "width", "window", "psize", "opcode", "coff", "csize",
                 "order", "slot", "where", "log", "l_start", "l_deliver", "l_finish",
                 "l_ideal", "l_retx", "l_size", "ranks", "phase_of", "entered", "next_k",
                 "recv", "acked", "flying", "waiters", "enter_ps", "done_ps", "net", "eq",
                 "hosts", "mtu", "ideal_size", "ideal_ps", "start_fn", "enter_fn", "zero_fn")

    def __init__(self, topo, phases, protocol="gse", config=None, seed=1):
        if protocol not in PROTOCOLS:
            raise ValueError("unknown protocol %r (known: %s)" % (protocol, ", ".join(PROTOCOLS)))
        if len(phases) >= (1 << (31 - SHIFT)):
            raise ValueError("too many phases")
        self.topo = topo
        self.phases = list(phases)
        self.protocol = protocol
        self.cfg = config if config is not None else default_config(protocol)
        self.seed = seed
        n = len(topo.hosts)
        self.n = n
        np_ = len(self.phases)
        # per phase: each host's group and position (lists of arrays, as tests read them)
        self.group = []
        self.pos = []
        # per phase, flat: first log row, sends per rank, ring or not, ranks per group,
        # window (pairwise), bytes per send (pairwise), ring op and first chunk size
        self.base = array("q", [0]) * np_
        self.sends = array("q", [ph.sends() for ph in self.phases])
        self.is_ring = array("q", [ph.kind == "ring" for ph in self.phases])
        self.width = array("q", [ph.n for ph in self.phases])
        self.window = array("q", [getattr(ph, "window", 0) for ph in self.phases])
        self.psize = array("q", [ph.size for ph in self.phases])
        self.opcode = array("q", [getattr(ph, "opcode", 0) for ph in self.phases])
        self.coff = array("q", [0]) * np_
        csize = []
        # per (phase, host) at p * n + h, flat
        self.order = array("q", [-1]) * (np_ * n)
        self.slot = array("q", [0]) * (np_ * n)
        self.where = array("q", [0]) * (np_ * n)
        total = 0
        for p, ph in enumerate(self.phases):
            g = array("i", [-1]) * n
            pos = array("i", [0]) * n
            at = 0
            for gi, members in enumerate(ph.groups):
                for i, h in enumerate(members):
                    if not 0 <= h < n:
                        raise ValueError("phase %d: host %d outside 0..%d" % (p, h, n - 1))
                    if g[h] >= 0:
                        raise ValueError("phase %d: host %d is in two groups" % (p, h))
                    g[h] = gi
                    pos[h] = i
                    self.order[p * n + at + i] = h
                    self.slot[p * n + h] = at
                    self.where[p * n + h] = i
                at += ph.n
            self.group.append(g)
            self.pos.append(pos)
            self.base[p] = total
            total += n * ph.sends()           # rows: host h's k-th send of phase p
            self.coff[p] = len(csize)
            if ph.kind == "ring":
                csize.extend(ph.sizes)
        self.csize = array("q", csize or [0])
        self.log = Log(total)
        log = self.log
        self.l_start, self.l_deliver, self.l_finish = log.start, log.deliver, log.finish
        self.l_ideal, self.l_retx, self.l_size = log.ideal, log.retx, log.size
        self.ranks = sorted({h for ph in self.phases for grp in ph.groups for h in grp})
        # per host, for its current phase
        self.phase_of = array("q", [-1]) * n
        self.entered = array("q", [0]) * n
        self.next_k = array("q", [0]) * n
        self.recv = array("q", [0]) * n
        self.acked = array("q", [0]) * n      # its sends delivered
        self.flying = array("q", [0]) * n     # pairwise: its sends in flight
        self.waiters = {}                     # host -> hosts whose next send waits for it
        self.enter_ps = [array("q", [-1]) * n for _ in self.phases]
        self.done_ps = [array("q", [-1]) * n for _ in self.phases]
        self.net = build_network(topo, protocol, self.cfg, seed)
        self.eq = self.net.eq
        self.hosts = self.net.hosts
        for h, hn in enumerate(self.net.hosts):
            hn.driver.on_delivered = partial(self._on_delivered_event, h)
            hn.driver.on_completed = partial(self._sent, hn.agent.addr)
        self.mtu = self.cfg.mtu
        # ring phases: the ideal FCT of each rank's (at most two) chunk sizes, cached
        self.ideal_size = array("q", [-1]) * (2 * np_ * n)
        self.ideal_ps = array("q", [0]) * (2 * np_ * n)
        # the events' callables, bound once
        self.start_fn = event_target(self, self._start)
        self.enter_fn = self._enter_event
        self.zero_fn = self._zero_done

    # -- the ranks' state machines --------------------------------------------------------

    def _enter(self, h, p):
        now = self.eq.now
        self.phase_of[h] = p
        self.entered[h] = 1
        self.next_k[h] = 0
        self.recv[h] = 0
        self.acked[h] = 0
        self.flying[h] = 0
        self.enter_ps[p][h] = now
        self._try_send(h)
        waiting = self.waiters.pop(h, None)
        if waiting:
            for w in waiting:
                self._try_send(w)

    def _enter_event(self, h, p):
        self._enter(h, p)

    def _dst(self, h, p, k):
        """The destination of host ``h``'s send ``k`` in phase ``p``: its ring successor,
        or in pairwise round k + 1 the member k + 1 places on."""
        i = p * self.n + h
        m = self.width[p]
        step = 1 if self.is_ring[p] else k + 1
        return self.order[p * self.n + self.slot[i] + (self.where[i] + step) % m]

    def _try_send(self, h):
        if not self.entered[h]:
            return
        p = self.phase_of[h]
        k = self.next_k[h]
        if self.is_ring[p]:
            if k >= self.sends[p] or self.recv[h] < k:
                return
            dst = self._dst(h, p, k)
            if not (self.entered[dst] and self.phase_of[dst] == p):
                self.waiters.setdefault(dst, []).append(h)
                return
            self.next_k[h] = k + 1
            c = chunk_index(self.opcode[p], self.width[p], self.where[p * self.n + h], k)
            self._launch(h, dst, p, k, self.csize[self.coff[p] + c])
            return
        last = self.width[p] - 1
        while self.flying[h] < self.window[p] and k < last:
            dst = self._dst(h, p, k)
            if not (self.entered[dst] and self.phase_of[dst] == p):
                self.waiters.setdefault(dst, []).append(h)
                return
            k += 1
            self.next_k[h] = k
            self.flying[h] += 1
            self._launch(h, dst, p, k - 1, self.psize[p])

    def _launch(self, h, dst, p, k, size):
        row = self.base[p] + h * self.sends[p] + k
        mid = ((p + 1) << SHIFT) | k
        now = self.eq.now
        self.l_start[row] = now
        self.l_size[row] = size
        if size == 0:
            self.l_ideal[row] = 1
            self.eq.at(now, self.zero_fn, h, mid)
            return
        ideal = -1
        if self.is_ring[p]:
            # a ring's rank sends one or two sizes to one peer per phase: two slots each
            at = 2 * (p * self.n + h)
            if self.ideal_size[at] == size:
                ideal = self.ideal_ps[at]
            elif self.ideal_size[at + 1] == size:
                ideal = self.ideal_ps[at + 1]
            else:
                ideal = self._ideal_of(h, dst, size)
                if self.ideal_size[at] < 0:
                    self.ideal_size[at] = size
                    self.ideal_ps[at] = ideal
                elif self.ideal_size[at + 1] < 0:
                    self.ideal_size[at + 1] = size
                    self.ideal_ps[at + 1] = ideal
        else:
            ideal = self._ideal_of(h, dst, size)
        self.l_ideal[row] = ideal
        self.eq.at(now, self.start_fn, h, mid)

    def fire(self, a, b):
        self._start(a, b)

    def _start(self, h, mid):
        """Message ``mid`` of ``h`` starts (as ``HostNode.start``): its destination from
        the phase, its size from the log."""
        p = (mid >> SHIFT) - 1
        k = mid & INDEX
        node = self.hosts[h]
        node.driver.start(mid, self._dst(h, p, k),
                          self.l_size[self.base[p] + h * self.sends[p] + k], self.eq.now)

    def _zero_done(self, h, mid):
        p = (mid >> SHIFT) - 1
        self._on_delivered(self._dst(h, p, mid & INDEX), h, mid, self.eq.now)

    def _ideal_of(self, src, dst, size):
        """The message's ideal FCT (``gse.metrics.records.ideal_ps``); the topology keeps
        the paths per pair of attachment switches."""
        topo = self.topo
        rtt = topo.base_rtt_ps(src, dst, self.mtu + HEADER_BYTES, HEADER_BYTES)
        mbps = int(round(topo.bottleneck_gbps(src, dst) * 1000))
        return rtt + wire_time_ps(wire_bytes(size, self.mtu), mbps)

    def _on_delivered_event(self, dst, event):
        self._on_delivered(dst, event.src, event.msg_id, event.time_ps)

    def _on_delivered(self, dst, src, mid, now):
        p = (mid >> SHIFT) - 1
        k = mid & INDEX
        sends = self.sends[p]
        row = self.base[p] + src * sends + k
        if self.l_deliver[row] >= 0:
            raise AssertionError("message %d->%d %d delivered twice" % (src, dst, mid))
        self.l_deliver[row] = now
        self.recv[dst] += 1
        self.acked[src] += 1
        if self.is_ring[p]:
            self._try_send(dst)
        else:
            self.flying[src] -= 1
            self._try_send(src)
        if self.acked[src] == sends and self.recv[src] == sends:
            self._check_done(src, p)
        if dst != src and self.acked[dst] == sends and self.recv[dst] == sends:
            self._check_done(dst, p)

    def _check_done(self, h, p):
        if self.phase_of[h] == p and self.entered[h] and self.acked[h] == self.sends[p] \
                and self.recv[h] == self.sends[p]:
            self.entered[h] = 0
            now = self.eq.now
            self.done_ps[p][h] = now
            if p + 1 < len(self.phases):
                self.phase_of[h] = p + 1
                self.eq.at(now, self.enter_fn, h, p + 1)

    def _sent(self, src, event):
        mid = event.msg_id
        p = (mid >> SHIFT) - 1
        row = self.base[p] + src * self.sends[p] + (mid & INDEX)
        self.l_finish[row] = event.time_ps
        if event.retransmits:
            self.l_retx[row] = event.retransmits

    # -- running --------------------------------------------------------------------------

    def run(self, until_ps: int = -1, observers: Iterable[Any] = (),
            stall_ps: int | None = None) -> "StreamResult":
        """Run the phases (to ``until_ps`` at most); ``observers`` and ``stall_ps`` (the
        no-progress watchdog) as in ``gse.runtimes.sim.run.run_simulation``."""
        for h in self.ranks:
            if self.group[0][h] >= 0:
                self.eq.at(0, self.enter_fn, h, 0)
        make_dog = Watchdog.factory(stall_ps, self.cfg)
        dog = make_dog(self.net) if make_dog else None
        watching = [dog] + [make(self.net) for make in observers]
        wall0 = time.perf_counter()
        end = run_observed(self.net, until_ps, watching)
        wall = time.perf_counter() - wall0
        summary = mark_end(self._summary(wall), end, dog)
        return StreamResult(summary, self._phase_results(), self.log, self.net, self)

    def _phase_results(self):
        out = []
        for p, ph in enumerate(self.phases):
            members = [h for grp in ph.groups for h in grp]
            enters = [self.enter_ps[p][h] for h in members]
            dones = [self.done_ps[p][h] for h in members]
            finished = all(d >= 0 for d in dones)
            start = min((e for e in enters if e >= 0), default=-1)
            end = max(dones) if finished else -1
            out.append({"phase": ph.name, "kind": ph.kind, "groups": len(ph.groups),
                        "ranks_per_group": ph.n, "bytes_per_rank": ph.bytes_per_rank(),
                        "done": finished, "start_us": start / 1e6 if start >= 0 else None,
                        "end_us": end / 1e6 if finished else None,
                        "time_us": (end - start) / 1e6 if finished and start >= 0 else None})
        return out

    def _summary(self, wall):
        net, log = self.net, self.log
        cfg = self.cfg
        base_rtt = self.topo.max_base_rtt_ps(cfg.mtu + HEADER_BYTES, HEADER_BYTES)
        extra = {"protocol": self.protocol, "seed": self.seed}
        extra.update(pfc_summary(net))
        s = summarize([], net.ports, [h.agent.counters() for h in net.hosts], base_rtt,
                      net.eq.now, net.eq.events, wall, extra)
        n = len(log)
        delivered, nbytes, fct, slow, good = _stats(log)
        (p50, p99, p999), lo, hi = _percentiles(fct, (50, 99, 99.9))
        (s50, s99), _slo, shi = _percentiles(slow, (50, 99))
        (g50,), glo, _ghi = _percentiles(good, (50,))
        def us(v):
            return None if v is None else round(v / 1e6, 3)

        def rnd(v):
            return None if v is None else round(v, 4)

        s.update({"messages": n, "delivered": delivered, "lost": n - delivered,
                  "completed": int(len(fct)),
                  "fct_us": {"p50": us(p50), "p99": us(p99), "p999": us(p999), "max": us(hi),
                             "min": us(lo)},
                  "slowdown": {"p50": rnd(s50), "p99": rnd(s99), "max": rnd(shi)},
                  "goodput_gbps": {"p50": rnd(g50), "min": rnd(glo)}})
        ends = [self.done_ps[-1][h] for h in self.ranks
                if self.group[-1][h] >= 0]
        s["collective_done"] = bool(ends) and all(e >= 0 for e in ends)
        s["collective_time_us"] = max(ends) / 1e6 if s["collective_done"] else None
        s["bytes_delivered"] = nbytes
        s["bytes_offered"] = sum(log.size)
        if self.protocol == "gse-fabric":
            from gse.runtimes.sim.fabric_nodes import fabric_summary
            fabric_summary(net, s)
        return s


def ring_hop_ps(topo: "Topology", src: int, dst: int, chunk: int, mtu: int) -> int:
    """What a chunk of ``chunk`` bytes takes from NIC to NIC on an idle fabric: its first
    packet store-and-forward over every link of the path (propagation, serialisation,
    switch latency), the rest of it behind at the path's slowest rate."""
    links = topo.path_links(src, dst)
    first = min(chunk, mtu) + HEADER_BYTES
    t = topo.switch_latency_ps * (len(links) - 1)
    t += sum(link.delay_ps + serialisation_ps(first, link.gbps) for link in links)
    rest = wire_bytes(chunk, mtu) - first
    if rest > 0:
        t += serialisation_ps(rest, min(link.gbps for link in links))
    return t


def phase_bound_ps(topo: "Topology", phase: RingPhase, mtu: int) -> int:
    """A lower bound on a ring phase's time on an idle fabric: steps one after the other,
    each the NIC-to-NIC time of its chunk (the smaller of the phase's two chunk sizes).
    Step s of a rank waits for step s-1 of the rank before it, so the last step ends a
    chain of consecutive hops around the ring: at least ``steps`` times the ring's mean
    hop; the slowest ring of the phase counts."""
    if phase.kind != "ring":
        raise ValueError("only ring phases have a closed-form bound")
    chunk = min(phase.sizes)
    worst: float = 0
    for members in phase.groups:
        n = len(members)
        hop = sum(ring_hop_ps(topo, members[i], members[(i + 1) % n], chunk, mtu)
                  for i in range(n)) / n
        worst = max(worst, phase.steps * hop)
    return int(worst)


def bound_busbw(topo: "Topology", phases: Sequence[RingPhase], size: int, n_ranks: int,
                mtu: int) -> tuple[int, float]:
    """(bound ps, bus bandwidth Gb/s at the bound) of an all-reduce of ``size`` bytes per
    rank run as ``phases`` (ring phases only) on an idle fabric."""
    t = sum(phase_bound_ps(topo, ph, mtu) for ph in phases)
    return t, size * 8 / (t / 1e3) * bus_factor("all_reduce", n_ranks)
