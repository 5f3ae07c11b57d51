"""Running per-rank programs (``gse.workloads.traces.program``) during a replay.

A recorded Chakra trace says what each rank computed, for how long and on which processor,
and what it communicated, node by node.  ``ProgramRunner`` walks every rank's program on
the replay's event queue:

* an op becomes ready when every op it depends on is done;
* a compute op runs for its duration (times ``compute_scale``).  **Compute model**
  ``streams`` (the default): each rank has one GPU stream and one CPU stream, each running
  one op at a time, the ready ops in the order they became ready (then program order) --
  as ASTRA-sim runs one GPU kernel and one CPU operator at a time per NPU.  ``unlimited``:
  every compute op runs as soon as it is ready, in parallel with any other;
* a communication op *enters* its collective (``Replayer._enter``) and is done when the
  rank's part of it is (``Replayer._rank_done``): every flow from or to the rank
  delivered; for a point-to-point transfer the send is done when its data is delivered and
  the receive when the data has arrived and the receive was posted, whichever is later;
* a pass-through op is done as soon as it is ready.

Completions of communication are handed back through an event at the same instant, so a
chain of ops that take no time never recurses.
"""

import heapq

from gse.workloads.traces.program import COMM, COMPUTE

COMPUTE_MODELS = ("streams", "unlimited")


class _Rank:
    __slots__ = ("prog", "waiting", "users", "done_at", "left", "busy", "queue", "end_ps")

    def __init__(self, prog):
        ops = prog.ops
        self.prog = prog
        self.waiting = [len(op.deps) for op in ops]
        self.users = [[] for _ in ops]
        for i, op in enumerate(ops):
            for d in op.deps:
                self.users[d].append(i)
        self.done_at = [-1] * len(ops)
        self.left = len(ops)
        self.busy = {}
        self.queue = {}
        self.end_ps = 0


class ProgramRunner:
    """Drives the programs of ``replayer`` (a ``gse.workloads.replay.Replayer``)."""

    def __init__(self, replayer, programs, compute_model="streams", compute_scale=1.0):
        if compute_model not in COMPUTE_MODELS:
            raise ValueError("unknown compute model %r (known: %s)"
                             % (compute_model, ", ".join(COMPUTE_MODELS)))
        self.rp = replayer
        self.eq = replayer.net.eq
        self.streams = compute_model == "streams"
        self.scale = float(compute_scale)
        self.ranks = {r: _Rank(p) for r, p in programs.items()}
        self.op_of = {}                      # (collective id, rank) -> op index
        for r, rs in self.ranks.items():
            for i, op in enumerate(rs.prog.ops):
                if op.kind == COMM:
                    self.op_of[(op.coll, r)] = i
        self.compute_ps = {}                 # stream -> compute time run, all ranks

    def start(self):
        for r, rs in sorted(self.ranks.items()):
            for i, w in enumerate(rs.waiting):
                if w == 0:
                    self._ready(r, i, 0)

    # -- ops ------------------------------------------------------------------------------

    def _ready(self, r, i, t):
        rs = self.ranks[r]
        op = rs.prog.ops[i]
        if op.kind == COMPUTE:
            dur = int(op.dur_ps * self.scale)
            if not self.streams:
                self._run(r, i, t, dur)
            elif rs.busy.get(op.stream):
                heapq.heappush(rs.queue.setdefault(op.stream, []), (t, i))
            else:
                rs.busy[op.stream] = True
                self._run(r, i, t, dur)
        elif op.kind == COMM:
            st = self.rp.by_id[op.coll]
            self.rp._enter(st, st.pos_of[r], t)
        else:
            self._finish(r, i, t)

    def _run(self, r, i, t, dur):
        op = self.ranks[r].prog.ops[i]
        self.compute_ps[op.stream] = self.compute_ps.get(op.stream, 0) + dur
        self.eq.at(t + dur, self._compute_done, r, i)

    def _compute_done(self, r, i):
        now = self.eq.now
        rs = self.ranks[r]
        if self.streams:
            stream = rs.prog.ops[i].stream
            q = rs.queue.get(stream)
            if q:
                _, j = heapq.heappop(q)
                self._run(r, j, now, int(rs.prog.ops[j].dur_ps * self.scale))
            else:
                rs.busy[stream] = False
        self._finish(r, i, now)

    def comm_done(self, st, pos, t):
        """Rank ``pos`` of collective state ``st`` finished its part at ``t``."""
        r = st.coll.ranks[pos]
        self.eq.at(t, self._comm_event, r, self.op_of[(st.coll.id, r)])

    def _comm_event(self, r, i):
        self._finish(r, i, self.eq.now)

    def _finish(self, r, i, t):
        work = [(r, i)]
        while work:
            r, i = work.pop()
            rs = self.ranks[r]
            rs.done_at[i] = t
            rs.left -= 1
            if t > rs.end_ps:
                rs.end_ps = t
            for u in rs.users[i]:
                rs.waiting[u] -= 1
                if rs.waiting[u]:
                    continue
                op = rs.prog.ops[u]
                if op.kind == COMM or op.kind == COMPUTE:
                    self._ready(r, u, t)
                else:
                    work.append((r, u))

    # -- results --------------------------------------------------------------------------

    def unfinished(self):
        """{rank: ops not done} for ranks whose program did not finish."""
        return {r: rs.left for r, rs in self.ranks.items() if rs.left}

    def summary(self):
        ends = [rs.end_ps for rs in self.ranks.values()]
        done = sum(1 for rs in self.ranks.values() if rs.left == 0)
        return {"ranks": len(self.ranks), "ranks_done": done,
                "ops_not_done": sum(rs.left for rs in self.ranks.values()),
                "end_us": round(max(ends, default=0) / 1e6, 4),
                "first_rank_end_us": round(min(ends, default=0) / 1e6, 4),
                "compute_us": {s: round(ps / 1e6, 4)
                               for s, ps in sorted(self.compute_ps.items())}}

    def end_ps(self):
        return max((rs.end_ps for rs in self.ranks.values()), default=0)
