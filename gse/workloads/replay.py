"""Replay collectives with their dependencies on the simulated network.

``replay(topo, collectives, protocol, ...)`` builds the same
``gse.runtimes.sim.network.Network`` as ``gse.runtimes.sim.run.run_simulation`` (through
``build_network``), expands every collective into its flows
(``gse.workloads.collectives.expand``) and starts each flow as a message when what it waits
for has happened, in simulated time:

* a flow waits for the flows of its own collective it depends on (a ring step for the
  previous step's chunk), delivered at the receiver, and for both its ranks to have
  *entered* the collective (NCCL's peers must both have launched it);
* rank r enters collective C at ``max(C.start, done(D) + lag)`` over C's dependencies D,
  where done(D) is when r's own part of D is finished (every flow from or to r delivered)
  if r takes part in D, and when all of D is finished otherwise.

Delivery is learnt by wrapping each ``HostNode.driver.on_delivered`` (the network's own
bookkeeping still runs first); new messages are always scheduled on the event queue, never
started from inside another host's callback.  Message ids count up per source host.

A trace with per-rank programs (Chakra: every rank's compute and communication nodes)
is run by ``gse.workloads.replay_programs.ProgramRunner`` instead: a rank enters a
collective when its program reaches the call, and its part's end lets the program go on.
Point to point is then eager, as ASTRA-sim runs Chakra's COMM_SEND/COMM_RECV: the flow
starts when the *sender* reaches the send, the send is done when the data is delivered,
the receive when the data has arrived and the receive was reached.  (Between collectives
of the project format, a send waits for both ranks, as NCCL's send/recv pair does.)

Per collective the result has its start (the first rank to enter), end (the last flow
delivered), completion time, algorithm bandwidth S/time and bus bandwidth (nccl-tests
factors, ``gse.workloads.collectives.bus_factor``).  The network summary is
``gse.metrics.records.summarize`` over every message, as ``gse sim`` reports it.
"""

import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from gse.metrics.records import MessageRecord, ideal_ps, summarize
from gse.protocols import PROTOCOLS, default_config
from gse.runtimes.sim.observe import Watchdog, mark_end, run_observed
from gse.runtimes.sim.faults import FaultInjector
from gse.runtimes.sim.run import DEFAULT_DETECT_PS, build_network, pfc_summary
from gse.runtimes.sim.sampler import Sampler
from gse.wire.packet import HEADER_BYTES
from gse.workloads.collectives import CollectiveError, bus_factor, check_trace, expand
from gse.workloads.replay_programs import COMPUTE_MODELS, ProgramRunner
from gse.workloads.traffic import MAX_SIZE, Message
from topologies.topology import serialisation_ps

if TYPE_CHECKING:
    from gse.protocols import ProtocolConfig
    from gse.metrics.records import MessageRecord
    from gse.metrics.timeseries import TimeSeries
    from gse.workloads.collectives import Collective
    from gse.workloads.faults import FaultSchedule
    from topologies.topology import Topology


class CollectiveResult:
    """Outcome of one collective: times in ps (-1 if it never started/finished)."""

    __slots__ = ("coll", "flows", "start_ps", "end_ps", "flows_done", "bytes_moved")

    def __init__(self, coll: "Collective", flows: int) -> None:
        self.coll = coll
        self.flows = flows
        self.start_ps = -1
        self.end_ps = -1
        self.flows_done = 0
        self.bytes_moved = 0

    @property
    def done(self) -> bool:
        return self.end_ps >= 0

    def time_ps(self) -> int | None:
        return self.end_ps - self.start_ps if self.done else None

    def algbw_gbps(self) -> float | None:
        t = self.time_ps()
        return self.coll.size * 8 / (t / 1e3) if t else None

    def busbw_gbps(self) -> float | None:
        a = self.algbw_gbps()
        return None if a is None else a * bus_factor(self.coll.op, len(self.coll.ranks))

    def as_dict(self):
        c = self.coll
        t = self.time_ps()
        d = {"id": c.id, "op": c.op, "algo": c.algo, "ranks": len(c.ranks), "bytes": c.size,
             "tag": c.tag, "flows": self.flows, "flows_done": self.flows_done,
             "done": self.done,
             "start_us": None if self.start_ps < 0 else round(self.start_ps / 1e6, 4),
             "end_us": None if not self.done else round(self.end_ps / 1e6, 4),
             "time_us": None if t is None else round(t / 1e6, 4)}
        if t:
            a = self.algbw_gbps()
            d["algbw_gbps"] = round(a, 4)
            d["busbw_gbps"] = round(a * bus_factor(c.op, len(c.ranks)), 4)
            d["busbw_GBps"] = round(d["busbw_gbps"] / 8, 4)    # nccl-tests' unit
        return d


class ReplayResult:
    __slots__ = ("summary", "collectives", "records", "network", "timeseries")

    def __init__(self, summary: dict[str, Any], collectives: list[CollectiveResult],
                 records: list["MessageRecord"], network: Any,
                 timeseries: "TimeSeries | None" = None) -> None:
        self.summary = summary
        self.collectives = collectives     # [CollectiveResult] in trace order
        self.records = records             # [MessageRecord] in start order
        self.network = network
        self.timeseries = timeseries       # gse.metrics.timeseries.TimeSeries if sampled


class _State:
    """Run-time bookkeeping of one collective."""

    __slots__ = ("res", "coll", "plan", "hosts", "pos_of", "flow_wait", "flow_ready",
                 "flow_users", "flows_of_pos", "rank_left", "rank_wait", "rank_ready",
                 "rank_entered", "left", "rank_users", "global_users", "eager")

    def __init__(self, coll, plan, hosts, eager=False):
        n = len(coll.ranks)
        self.res = CollectiveResult(coll, len(plan))
        self.coll = coll
        self.plan = plan
        self.hosts = hosts                                  # position -> host id
        self.pos_of = {r: i for i, r in enumerate(coll.ranks)}
        self.eager = eager          # point to point: only the sender's entry gates the flow
        gates = 1 if eager else 2                           # entry of src (and dst)
        self.flow_wait = [len(d) + gates for d in plan.deps]
        self.flow_ready = [0] * len(plan)
        self.flow_users = [[] for _ in range(len(plan))]
        self.flows_of_pos = [[] for _ in range(n)]
        for f, deps in enumerate(plan.deps):
            for d in deps:
                self.flow_users[d].append(f)
            self.flows_of_pos[plan.src[f]].append(f)
            self.flows_of_pos[plan.dst[f]].append(f)
        self.rank_left = [len(x) for x in self.flows_of_pos]
        self.rank_wait = [len(coll.after)] * n
        self.rank_ready = [coll.start_ps] * n
        self.rank_entered = [-1] * n
        self.left = len(plan)
        self.rank_users = [[] for _ in range(n)]            # [(state, pos, lag)]
        self.global_users = []                              # [(state, pos, lag)]


class Replayer:
    """One replay on one network (see the module docstring)."""

    def __init__(self, topo, collectives, protocol="gse", config=None, seed=1, loss_rate=0.0,
                 corrupt_rate=0.0, rank_hosts=None, compute_scale=1.0, programs=None,
                 compute_model="streams", faults=None, detect_ps=DEFAULT_DETECT_PS):
        if protocol not in PROTOCOLS:
            raise ValueError("unknown protocol %r (known: %s)" % (protocol, ", ".join(PROTOCOLS)))
        colls = list(collectives)
        if not colls:
            raise ValueError("nothing to replay: the trace has no collectives")
        check_trace(colls)
        if not compute_scale >= 0 or compute_scale == float("inf"):
            raise ValueError("compute_scale must be a number >= 0, got %r" % (compute_scale,))
        if compute_model not in COMPUTE_MODELS:
            raise ValueError("unknown compute model %r (known: %s)"
                             % (compute_model, ", ".join(COMPUTE_MODELS)))
        self.compute_model = compute_model
        self.compute_scale = float(compute_scale)
        self.topo = topo
        self.protocol = protocol
        self.cfg = config if config is not None else default_config(protocol)
        self.seed = seed
        n_hosts = len(topo.hosts)
        ranks = sorted({r for c in colls for r in c.ranks})
        if rank_hosts is None:
            rank_hosts = {r: r for r in ranks}
        elif isinstance(rank_hosts, (list, tuple)):
            rank_hosts = dict(enumerate(rank_hosts))
        for r in ranks:
            h = rank_hosts.get(r)
            if h is None:
                raise ValueError("%s: rank %d has no host (the rank map covers %d ranks)"
                                 % (_first_with(colls, r), r, len(rank_hosts)))
            if not 0 <= h < n_hosts:
                raise ValueError("%s: rank %d maps to host %d but %r has hosts 0..%d (give a "
                                 "bigger topology or a rank map)"
                                 % (_first_with(colls, r), r, h, topo.name, n_hosts - 1))
        used = [rank_hosts[r] for r in ranks]
        if len(set(used)) != len(used):
            raise ValueError("two ranks map to the same host; each rank needs its own NIC")
        self.rank_hosts = rank_hosts
        self.net = build_network(topo, protocol, self.cfg, seed, loss_rate, corrupt_rate)
        self.faults = FaultInjector(self.net, faults, detect_ps, seed) if faults else None
        self.net.faults = self.faults
        self.detect_ps = detect_ps
        self.states = []
        by_id = {}
        scale = float(compute_scale)
        for c in colls:
            try:
                plan = expand(c)
            except CollectiveError as exc:
                raise CollectiveError("collective %d: %s" % (c.id, exc)) from None
            for s in plan.size:
                if s > MAX_SIZE:
                    raise CollectiveError("collective %d: a flow of %d bytes exceeds a message's "
                                          "2^32-1 limit" % (c.id, s))
            st = _State(c, plan, [rank_hosts[r] for r in c.ranks],
                        eager=programs is not None and c.op == "send")
            if scale != 1.0:
                st.rank_ready = [int(c.start_ps * scale)] * len(c.ranks)
            self.states.append(st)
            by_id[c.id] = st
            for dep, lag in c.after:
                d = by_id[dep]
                lag = int(lag * scale)
                for pos, r in enumerate(c.ranks):
                    if r in d.pos_of:
                        d.rank_users[d.pos_of[r]].append((st, pos, lag))
                    else:
                        d.global_users.append((st, pos, lag))
        self.by_id = by_id
        self.runner = None
        if programs is not None:
            for c in colls:
                if c.after or c.start_ps:
                    raise ValueError("collective %d: with per-rank programs, what a collective "
                                     "waits for is in the programs, not in 'after'" % c.id)
            self.runner = ProgramRunner(self, programs, compute_model, scale)
        self.next_id = [0] * n_hosts
        self.flow_of = {}                  # (src host, msg id) -> (state, flow)
        self.records = []
        self.cache = {}
        for hn in self.net.hosts:
            hn.driver.on_delivered = self._wrap(hn.driver.on_delivered)

    def _wrap(self, inner):
        def on_delivered(event):
            inner(event)
            hit = self.flow_of.pop((event.src, event.msg_id), None)
            if hit is not None:
                self._flow_done(hit[0], hit[1], event.time_ps)
        return on_delivered

    # -- the dependency walk ------------------------------------------------------------

    def _enter(self, st, pos, t):
        """Rank ``pos`` of ``st`` enters the collective at time t."""
        st.rank_entered[pos] = t
        if st.res.start_ps < 0 or t < st.res.start_ps:
            st.res.start_ps = t
        if not st.flows_of_pos[pos]:
            self._rank_done(st, pos, t)
            if st.left == 0 and st.res.end_ps < 0 and all(e >= 0 for e in st.rank_entered):
                self._coll_done(st, t)
        elif st.eager and st.rank_left[pos] == 0:
            self._rank_done(st, pos, t)       # a receive posted after its data arrived
        for f in st.flows_of_pos[pos]:
            if st.eager and st.plan.src[f] != pos:
                continue                      # the receiver's entry does not gate the flow
            self._flow_cond(st, f, t)

    def _flow_cond(self, st, f, t):
        if t > st.flow_ready[f]:
            st.flow_ready[f] = t
        st.flow_wait[f] -= 1
        if st.flow_wait[f] == 0:
            self.net.eq.at(st.flow_ready[f], self._start_flow, st, f)

    def _start_flow(self, st, f):
        now = self.net.eq.now
        plan = st.plan
        size = plan.size[f]
        if size == 0:
            self._flow_done(st, f, now)
            return
        src, dst = st.hosts[plan.src[f]], st.hosts[plan.dst[f]]
        self.next_id[src] += 1
        mid = self.next_id[src]
        msg = Message.trusted(mid, src, dst, size, now)
        self.records.append(MessageRecord(msg, ideal_ps(self.topo, src, dst, size, self.cfg.mtu,
                                                        self.cache)))
        self.flow_of[(src, mid)] = (st, f)
        self.net.hosts[src].start(msg, None)

    def _flow_done(self, st, f, t):
        st.left -= 1
        st.res.flows_done += 1
        st.res.bytes_moved += st.plan.size[f]
        for pos in (st.plan.src[f], st.plan.dst[f]):
            st.rank_left[pos] -= 1
            if st.rank_left[pos] == 0 and (not st.eager or st.rank_entered[pos] >= 0):
                self._rank_done(st, pos, t)
        for u in st.flow_users[f]:
            self._flow_cond(st, u, t)
        if st.left == 0:
            self._coll_done(st, t)

    def _rank_done(self, st, pos, t):
        if self.runner is not None:
            self.runner.comm_done(st, pos, t)
        for user, upos, lag in st.rank_users[pos]:
            self._dep_met(user, upos, t + lag)

    def _coll_done(self, st, t):
        st.res.end_ps = t
        for user, upos, lag in st.global_users:
            self._dep_met(user, upos, t + lag)

    def _dep_met(self, st, pos, t):
        if t > st.rank_ready[pos]:
            st.rank_ready[pos] = t
        st.rank_wait[pos] -= 1
        if st.rank_wait[pos] == 0:
            t = st.rank_ready[pos]
            if t > self.net.eq.now:
                self.net.eq.at(t, self._enter_event, st, pos)
            else:
                self._enter(st, pos, t)

    def _enter_event(self, st, pos):
        self._enter(st, pos, self.net.eq.now)

    # -- running ------------------------------------------------------------------------

    def run(self, until_ps=-1, sample_ps=0, observers=(), stall_ps=None):
        """Replay to the end (or ``until_ps``); ``sample_ps``, ``observers`` and
        ``stall_ps`` (the no-progress watchdog: a compute phase with nothing in flight is
        never a stall) as in ``gse.runtimes.sim.run.run_simulation``."""
        net = self.net
        if self.runner is not None:
            self.runner.start()
        else:
            for st in self.states:
                for pos in range(len(st.coll.ranks)):
                    if st.rank_wait[pos] == 0:
                        net.eq.at(st.rank_ready[pos], self._enter_event, st, pos)
        sampler = Sampler(net, sample_ps) if sample_ps > 0 else None
        make_dog = Watchdog.factory(stall_ps, self.cfg, self.faults and self.faults.schedule,
                                    self.detect_ps)
        dog = make_dog(net) if make_dog else None
        watching = [sampler, dog] + [make(net) for make in observers]
        wall0 = time.perf_counter()
        end = run_observed(net, until_ps, watching)
        wall = time.perf_counter() - wall0
        for r in self.records:
            key = (r.src, r.msg_id)
            r.deliver_ps = net.records.get(key, -1)
            done = net.sender_done.get(key)
            if done is not None:
                r.retransmits, r.finish_ps = done
        cfg = self.cfg
        base_rtt = self.topo.max_base_rtt_ps(cfg.mtu + HEADER_BYTES, HEADER_BYTES)
        extra = {"protocol": self.protocol, "seed": self.seed}
        extra.update(pfc_summary(net))
        summary = summarize(self.records, net.ports, [h.agent.counters() for h in net.hosts],
                            base_rtt, net.eq.now, net.eq.events, wall, extra)
        if self.faults is not None:
            summary["failures"] = self.faults.summary(self.records)
            summary["failures"]["detect_us"] = (None if self.detect_ps < 0
                                                else self.detect_ps / 1e6)
            summary["drops"] += sum(summary["failures"]["drops"].values())
        results = [st.res for st in self.states]
        summary["collectives"] = [r.as_dict() for r in results]
        summary["collectives_done"] = sum(1 for r in results if r.done)
        summary["collectives_total"] = len(results)
        end_ps = max((r.end_ps for r in results), default=0)
        if self.runner is not None:
            summary["programs"] = self.runner.summary()
            summary["compute_model"] = self.compute_model
            end_ps = max(end_ps, self.runner.end_ps())
        summary["compute_scale"] = self.compute_scale
        summary["replay_time_us"] = round(end_ps / 1e6, 4)
        mark_end(summary, end, dog)
        ts = None if sampler is None else sampler.result({"protocol": self.protocol,
                                                          "seed": self.seed})
        return ReplayResult(summary, results, self.records, net, ts)


def _first_with(colls, rank):
    """The first collective over ``rank``, described with the file and line it came from."""
    return next(c.describe() for c in colls if rank in c.ranks)


def replay(topo: "Topology", collectives: Any, protocol: str = "gse",
           config: "ProtocolConfig | None" = None, seed: int = 1,
           loss_rate: float = 0.0, corrupt_rate: float = 0.0,
           rank_hosts: Sequence[int] | None = None, until_ps: int = -1,
           compute_scale: float = 1.0, sample_ps: int = 0, observers: Iterable[Any] = (),
           compute_model: str = "streams", programs: Any = None,
           faults: "FaultSchedule | None" = None, detect_ps: int = DEFAULT_DETECT_PS,
           stall_ps: int | None = None) -> ReplayResult:
    """Replay ``collectives`` (a list, or a ``Trace``: its per-rank programs, if it has
    them, drive the replay) and return a ``ReplayResult``; ``faults`` and ``detect_ps``
    as in ``gse.runtimes.sim.run.run_simulation``."""
    colls = getattr(collectives, "collectives", collectives)
    if programs is None:
        programs = getattr(collectives, "programs", None)
    return Replayer(topo, colls, protocol, config, seed, loss_rate, corrupt_rate, rank_hosts,
                    compute_scale, programs, compute_model, faults, detect_ps).run(
                        until_ps, sample_ps, observers, stall_ps)


def ring_bound_ps(topo: "Topology", ring_hosts: Sequence[int], size: int,
                  mtu: int = 4096) -> tuple[int, int]:
    """(bound ps, one-way ps) of a ring all-reduce on an idle non-blocking fabric: the
    acceptance figure 2(N-1)/N x S / rate + 2(N-1) x the base one-way latency.

    The one-way latency of a hop is what one full packet takes from NIC to NIC: per link
    its propagation plus the serialisation of one packet (store and forward), plus each
    switch's latency.  A chunk travels 2(N-1) consecutive ring hops, so with unequal hops
    (a fat-tree ring crossing edges and pods) the mean over the ring's hops is the right
    "base one-way latency"; on a fabric where every hop is alike it is that hop.  The rate
    is the slowest host link.
    """
    n = len(ring_hosts)
    rate = min(topo.host_link(h).gbps for h in ring_hosts)
    total = sum(hop_one_way_ps(topo, h, ring_hosts[(i + 1) % n], mtu)
                for i, h in enumerate(ring_hosts))
    one_way = total / n
    bound = 2 * (n - 1) / n * size * 8 * 1000 / rate + 2 * (n - 1) * one_way
    return int(round(bound)), int(round(one_way))


def hop_one_way_ps(topo: "Topology", src: int, dst: int, mtu: int = 4096) -> int:
    """What one full packet takes from host ``src``'s NIC to host ``dst``'s on an idle
    fabric: per link its propagation and the packet's serialisation (store and forward),
    plus each switch's latency."""
    links = topo.path_links(src, dst)
    return topo.switch_latency_ps * (len(links) - 1) + sum(
        link.delay_ps + serialisation_ps(mtu + HEADER_BYTES, link.gbps) for link in links)
