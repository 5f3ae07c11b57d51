"""Per-rank programs: what each rank of a recorded run did, node by node, in order.

A Chakra trace is a dependency graph per rank: compute kernels with durations, on the GPU
or the CPU, and communication calls.  Replaying it faithfully means running each rank's
graph -- a node starts when the nodes it depends on are done and its stream is free -- and
letting the network decide how long the communication takes.  A ``Program`` is one rank's
graph reduced to what the replay needs: ``Op`` objects in a dependency order.

* ``COMPUTE``: ``dur_ps`` on ``stream`` ("gpu" or "cpu"; the replay's compute model says
  whether a stream runs one op at a time).
* ``COMM``: one rank's part of a collective (``coll``, the collective's id once assembled);
  ``role`` is "send" or "recv" for the two sides of a point-to-point transfer.
* ``PASS``: a node that takes no time and moves no data (metadata, memory, barriers);
  dependencies pass through it.

``assemble_programs`` matches the ranks' communication calls into ``Collective`` objects
(the same matching as the collective-level readers: process group and order, or source,
destination, tag and order), gives ranks without a file a copy of another rank's program
when asked to (SPMD), and checks that the whole run cannot deadlock: every op must be
reachable in the graph of every rank's dependencies joined by the collectives (all ranks
enter a collective before any finishes) and the transfers (a send starts on its own; the
receive finishes after the send started).
"""

import heapq

from gse.workloads.collectives import Collective, CollectiveError
from gse.workloads.traces.common import TraceError, rank_span

COMPUTE, COMM, PASS = "compute", "comm", "pass"


class Op:
    """One node of a rank's program (see the module docstring)."""

    __slots__ = ("kind", "stream", "dur_ps", "deps", "call", "coll", "role", "node_id",
                 "where")

    def __init__(self, kind, deps=(), stream=None, dur_ps=0, call=None, role=None,
                 node_id=0, where=None):
        self.kind = kind
        self.stream = stream
        self.dur_ps = dur_ps
        self.deps = list(deps)        # indices of earlier ops of the same program
        self.call = call              # COMM: the rank's Call (key, op, size, ...)
        self.coll = None              # COMM: the collective id, set by assemble_programs
        self.role = role              # COMM: None, "send" or "recv"
        self.node_id = node_id
        self.where = where

    def __repr__(self):
        extra = ("%s %d ps" % (self.stream, self.dur_ps) if self.kind == COMPUTE else
                 "coll %s %s" % (self.coll, self.role or "") if self.kind == COMM else "")
        return "Op(%s %s deps=%s)" % (self.kind, extra, self.deps)


class Program:
    """One rank's ops, each depending only on earlier ones."""

    __slots__ = ("rank", "ops", "path", "mirror_of")

    def __init__(self, rank, ops, path, mirror_of=None):
        self.rank = rank
        self.ops = ops
        self.path = path
        self.mirror_of = mirror_of      # the rank whose program this copies (SPMD), or None

    def compute_ps(self):
        """{stream: total compute time} of this rank."""
        out = {}
        for op in self.ops:
            if op.kind == COMPUTE:
                out[op.stream] = out.get(op.stream, 0) + op.dur_ps
        return out

    def __repr__(self):
        return "Program(rank %d, %d ops)" % (self.rank, len(self.ops))


def _mirror(src, rank, coll_ranks):
    """Rank ``rank``'s program as a copy of ``src``: communication it takes no part in
    (other groups, point to point) becomes PASS."""
    ops = []
    for op in src.ops:
        if op.kind == COMM and (op.role is not None or rank not in coll_ranks[op.call.key]):
            ops.append(Op(PASS, op.deps, node_id=op.node_id, where=op.where))
        else:
            ops.append(Op(op.kind, op.deps, op.stream, op.dur_ps, op.call, op.role, op.node_id,
                          op.where))
    return Program(rank, ops, src.path, mirror_of=src.rank)


def _check_agree(seen):
    r0, _, c0 = seen[0]
    for r, _, c in seen[1:]:
        for what, a, b in (("op", c0.op, c.op), ("bytes", c0.size, c.size),
                           ("root", c0.root, c.root), ("ranks", c0.ranks, c.ranks)):
            if a != b:
                raise TraceError(c.path, c.where, "rank %d's call does not match rank %d's "
                                 "(%s, %s): %s %r vs %r" % (r, r0, c0.path, c0.where, what, b,
                                                           a))


def _check_members(programs, inst, groups):
    """Without a world size, a collective that names no ranks is over the ranks whose
    files hold it.  A process group's collectives are then all over the same ranks: a
    rank whose file holds some of them and not the others (a file cut short) would
    silently shrink the later ones, so it is refused, naming the rank, its file and the
    first call it lacks."""
    members = {}
    for key, seen in inst.items():
        if seen[0][2].ranks is None and key[0] == "coll":
            members.setdefault(key[1], set()).update(r for r, _, _ in seen)
    for key in sorted((k for k in inst if k[0] == "coll" and k[1] in members),
                      key=lambda k: (k[1], k[2])):
        absent = sorted(members[key[1]] - set(groups[key]))
        if absent:
            r = absent[0]
            c0 = inst[key][0][2]
            held = sum(1 for k in inst if k[:2] == key[:2] and r in groups[k])
            raise TraceError(c0.path, c0.where, "rank %d's file (%s) does not hold this %s, "
                             "collective %d of process group %r, which ranks %s hold; it holds "
                             "%d of the group's collectives (a file cut short?): give the whole "
                             "file of every rank" % (r, programs[r].path, c0.op, key[2] + 1,
                                                     key[1], rank_span(groups[key]), held))


def check_every_rank_communicates(programs, empty_only=False):
    """A rank's file that takes part in no communication of the run is refused (a file cut
    to its metadata, or the file of another run): its rank would silently drop out of
    every collective.  ``empty_only``: refuse only files without any node (checked before
    the calls are matched, whose errors would otherwise speak of the other ranks)."""
    silent = [r for r in sorted(programs) if programs[r].mirror_of is None
              and not any(op.kind == COMM for op in programs[r].ops)
              and not (empty_only and programs[r].ops)]
    if silent and len(silent) < len(programs):
        r = silent[0]
        prog = programs[r]
        held = ("no nodes, only its metadata" if not prog.ops else
                "%d node(s) but no communication node" % len(prog.ops))
        raise TraceError(prog.path, None, "rank %d's file holds %s, while the other ranks' "
                         "files communicate: rank %d would take part in no collective; give the "
                         "whole file of every rank (a truncated file?)" % (r, held, r))


def assemble_programs(programs, world=None):
    """(collectives, programs) from {rank: Program} whose COMM ops carry Calls.

    ``world``: the ranks of the run when the trace says (or the user gives) more than the
    files hold -- the ranks without a file then run a copy of the lowest rank's program.
    Without it, a collective's group is the ranks whose files hold it (so at least two).
    """
    programs = dict(programs)
    inst = {}                                   # key -> [(rank, op index, Call)]
    first = {}
    for rank in sorted(programs):
        for i, op in enumerate(programs[rank].ops):
            if op.kind != COMM:
                continue
            key = op.call.key
            if key not in inst:
                inst[key] = []
                first[key] = (op.call.node_id, i, rank, len(first))
            elif (op.call.node_id, i) < first[key][:2]:
                first[key] = (op.call.node_id, i) + first[key][2:]
            inst[key].append((rank, i, op.call))
    world = sorted(set(world)) if world else None
    groups = {}
    for key, seen in inst.items():
        _check_agree(seen)
        c0 = seen[0][2]
        present = [r for r, _, _ in seen]
        if c0.ranks is not None:
            group = tuple(c0.ranks)
            missing = [r for r in present if r not in group]
            if missing:
                raise TraceError(c0.path, c0.where, "rank %d has this call but is not in its "
                                 "group %r" % (missing[0], list(group)))
        elif world is not None:
            group = tuple(world)
        else:
            group = tuple(present)
            if len(group) < 2:
                raise TraceError(c0.path, c0.where, "this %s appears only in rank %d's file; "
                                 "give the file of every rank (one per rank), or the number "
                                 "of ranks (--world-size) to replay one rank's file as the "
                                 "program of every rank" % (c0.op, present[0]))
        groups[key] = group
    if world is None:
        _check_members(programs, inst, groups)
    for key, seen in inst.items():             # both sides of a transfer must be there
        c0 = seen[0][2]
        if c0.op != "send":
            continue
        src, dst = c0.ranks
        roles = {programs[r].ops[i].role for r, i, _ in seen}
        for side, rank in (("send", src), ("recv", dst)):
            if side in roles:
                continue
            if rank not in programs:
                raise TraceError(c0.path, c0.where, "a transfer from rank %d to rank %d, but "
                                 "rank %d has no file (give the file of every rank)"
                                 % (src, dst, rank))
            if side == "recv":
                what = "rank %d's send to rank %d has no matching receive" % (src, dst)
            else:
                what = "rank %d's receive from rank %d has no matching send" % (dst, src)
            raise TraceError(c0.path, c0.where, "%s in rank %d's file (%s)"
                             % (what, rank, programs[rank].path))
    needed = sorted({r for g in groups.values() for r in g} - set(programs))
    if needed and world is None:
        key = next(k for k in inst if set(groups[k]) & set(needed))
        c0 = inst[key][0][2]
        raise TraceError(c0.path, c0.where, "rank %d is in this %s's group %r but has no file; "
                         "give the file of every rank, or the number of ranks (--world-size) to "
                         "replay the files' programs on the others"
                         % (needed[0], c0.op, list(groups[key])))
    if needed:
        rep = programs[min(programs)]
        for r in needed:
            programs[r] = _mirror(rep, r, groups)
    order = sorted(inst, key=lambda k: first[k])      # by node id, then program position
    ids = {key: n for n, key in enumerate(order, 1)}
    colls = []
    for key in order:
        seen = inst[key]
        c0 = next((c for r, i, c in seen if programs[r].ops[i].role == "send"), seen[0][2])
        group = groups[key]
        try:
            colls.append(Collective(ids[key], c0.op, group, c0.size, algo=c0.algo,
                                    root=c0.root if c0.root is not None else group[0],
                                    dtype=c0.dtype, tag=c0.tag))
        except CollectiveError as exc:
            raise TraceError(c0.path, c0.where, str(exc)) from None
    for prog in programs.values():
        for op in prog.ops:
            if op.kind == COMM:
                op.coll = ids[op.call.key]
    check_deadlock(programs, colls)
    return colls, programs


def check_deadlock(programs, collectives):
    """Raise a TraceError naming a communication call that can never happen.

    Events: every op's end, and every COMM op's entry.  An op ends after its dependencies
    end; a COMM op enters after its dependencies end.  A collective ends on every rank once
    every rank entered it; a transfer ends at the sender once the sender entered, and at the
    receiver once both entered.  Kahn's algorithm over these events; what it cannot reach is
    in (or behind) a cycle.
    """
    by_id = {c.id: c for c in collectives}
    index = {}
    n = 0
    for rank in sorted(programs):
        for i in range(len(programs[rank].ops)):
            index[(rank, i, "end")] = n
            index[(rank, i, "in")] = n + 1
            n += 2
    gate = {}                                  # collective id -> event id "all entered"
    for c in collectives:
        if c.op != "send":
            gate[c.id] = n
            n += 1
    succ = [[] for _ in range(n)]
    indeg = [0] * n

    def edge(a, b):
        succ[a].append(b)
        indeg[b] += 1

    members = {}
    for rank, prog in programs.items():
        for i, op in enumerate(prog.ops):
            end, entry = index[(rank, i, "end")], index[(rank, i, "in")]
            for d in op.deps:
                edge(index[(rank, d, "end")], entry)
            if op.kind != COMM:
                edge(entry, end)
                continue
            members.setdefault(op.coll, []).append((rank, i, op.role))
    for cid, mem in members.items():
        c = by_id[cid]
        if c.op != "send":
            g = gate[cid]
            for rank, i, _ in mem:
                edge(index[(rank, i, "in")], g)
                edge(g, index[(rank, i, "end")])
            continue
        send = [(r, i) for r, i, role in mem if role != "recv"]
        recv = [(r, i) for r, i, role in mem if role == "recv"]
        for r, i in send:
            edge(index[(r, i, "in")], index[(r, i, "end")])
            for r2, i2 in recv:
                edge(index[(r, i, "in")], index[(r2, i2, "end")])
        for r2, i2 in recv:
            edge(index[(r2, i2, "in")], index[(r2, i2, "end")])
    ready = [k for k in range(n) if indeg[k] == 0]
    heapq.heapify(ready)
    done = 0
    while ready:
        k = heapq.heappop(ready)
        done += 1
        for s in succ[k]:
            indeg[s] -= 1
            if indeg[s] == 0:
                heapq.heappush(ready, s)
    if done == n:
        return
    for rank in sorted(programs):
        prog = programs[rank]
        for i, op in enumerate(prog.ops):
            if op.kind == COMM and indeg[index[(rank, i, "in")]] > 0:
                raise TraceError(op.call.path, op.call.where, "this call can never start: the "
                                 "ranks' dependencies and their collectives form a cycle "
                                 "(a deadlock in the recorded run)")
    for rank in sorted(programs):
        for i, op in enumerate(programs[rank].ops):
            if indeg[index[(rank, i, "end")]] > 0:
                raise TraceError(programs[rank].path, op.where, "this node can never run: "
                                 "the dependencies form a cycle through a collective")
    raise TraceError("(trace)", None, "the dependencies form a cycle")
