"""MLCommons Chakra execution traces (``.et``, one file per rank): reader and writer.

The schema and its versions are decoded in ``chakra_schema``; this module turns each
rank's node graph into a ``Program`` (``gse.workloads.traces.program``) that the replay
runs node by node, as ASTRA-sim runs a Chakra trace:

* **Ranks.**  A file's rank is the number in its name: ``<prefix>.<rank>.et`` is Chakra's
  own convention (ASTRA-sim opens ``<prefix>.<npu id>.et``); a send's ``comm_src`` or a
  receive's ``comm_dst``, when present, must agree with it.
* **Dependencies.**  ``data_deps`` and ``ctrl_deps`` are both honoured (ASTRA-sim's feeder
  resolves both).  A dependency on a node that is not in the file (the PyTorch converter
  points at thread and root nodes it does not emit) or on the node itself is dropped and
  counted; ``ctrl_deps`` that close a cycle with the other dependencies (the converter's
  CPU operator <-> GPU kernel pairs) are dropped and counted; a cycle of ``data_deps``
  alone is an error.
* **Nodes.**  ``COMP_NODE``: ``duration_micros`` on the GPU stream, or the CPU stream when
  ``is_cpu_op`` is true.  ``COMM_COLL_NODE`` with ``comm_type``/``comm_size``: one rank's
  part of a collective; the k-th collective of process group ``pg_name`` on each rank is
  one collective, over the ranks whose files hold it, and a rank runs the collectives of
  one process group one at a time, in order (one NCCL communicator).  A ``COMM_COLL_NODE``
  without ``comm_type`` that runs on the CPU (the converter's ``c10d::*`` host calls) is
  replayed as CPU time and counted.  ``COMM_SEND_NODE``/``COMM_RECV_NODE``: the two sides
  of a transfer, matched by (source, destination, tag, order); the send starts when its
  own dependencies are met and the receive ends when the data has arrived (ASTRA-sim's
  eager point to point).  Barriers, metadata and memory nodes take no time; they are
  counted.
* **Ignored fields** are counted in ``Trace.ignored``: ``duration_micros`` of
  communication nodes (the network decides), ``start_time_micros``, ``inputs``/``outputs``,
  attributes the replay does not use, metadata attributes.

Attributes the project writes beyond the schema's usual set, and reads when present:
``pg_ranks`` (int64 list: the group in ring order when it is not ascending), ``comm_root``
(root rank of broadcast/reduce/gather/scatter; default the group's first rank) and
``comm_algo`` (algorithm name).
"""

import heapq
import os
from collections.abc import Iterable

from gse.workloads.collectives import ALGORITHMS, ROOTED, Collective, check_trace
from gse.workloads.traces.chakra_schema import (COLL, COMM_TYPE_OF, COMM_TYPES, COMP, NODE_TYPES,
                                                RECV, SCHEMA_VERSION, SEND, attr_record,
                                                metadata_record, node_record, read_et)
from gse.workloads.traces.common import (Call, Tally, Trace, TraceError, check_rank_files,
                                         ranks_for_files)
from gse.workloads.traces.program import (COMM, COMPUTE, PASS, Op, Program, assemble_programs,
                                          check_every_rank_communicates)
from gse.workloads.traces.sources import expand_sources

__all__ = ["COLL", "COMP", "RECV", "SEND", "attr_record", "metadata_record", "node_record",
           "rank_program", "read_chakra", "write_chakra"]

US = 1_000_000
USED_ATTRS = {
    COMP: {"is_cpu_op"},
    COLL: {"is_cpu_op", "comm_type", "comm_size", "pg_name", "pg_ranks", "comm_root",
           "comm_algo"},
    SEND: {"is_cpu_op", "comm_src", "comm_dst", "comm_size", "comm_tag"},
    RECV: {"is_cpu_op", "comm_src", "comm_dst", "comm_size", "comm_tag"},
}


def _attr_int(name, node, attr, required=True, default=None, signed=False):
    v = node.attrs.get(attr)
    if v is None:
        if required:
            raise TraceError(name, node.where(), "%s node without the %r attribute"
                             % (NODE_TYPES.get(node.type, node.type), attr))
        return default
    if isinstance(v, bool) or not isinstance(v, int) or (v < 0 and not signed):
        raise TraceError(name, node.where(), "attribute %r must be an integer >= 0, got %r"
                         % (attr, v))
    return v


def _sccs(n, succ):
    """Strongly connected components (iterative Tarjan): a component number per vertex."""
    index = [-1] * n
    low = [0] * n
    on = [False] * n
    comp = [-1] * n
    stack = []
    counter = 0
    ncomp = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on[v] = True
            recurse = False
            while i < len(succ[v]):
                w = succ[v][i]
                i += 1
                if index[w] < 0:
                    work.append((v, i))
                    work.append((w, 0))
                    recurse = True
                    break
                if on[w]:
                    low[v] = min(low[v], index[w])
            if recurse:
                continue
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    on[w] = False
                    comp[w] = ncomp
                    if w == v:
                        break
                ncomp += 1
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
    return comp


def _order(nodes, edges, name, what):
    """Node positions in a dependency order (file order among ready nodes), or a
    TraceError naming a node on a cycle."""
    n = len(nodes)
    succ = [[] for _ in range(n)]
    indeg = [0] * n
    for a, b in edges:
        succ[a].append(b)
        indeg[b] += 1
    ready = [i for i in range(n) if indeg[i] == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        i = heapq.heappop(ready)
        out.append(i)
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(ready, j)
    if len(out) != n:
        stuck = next(i for i in range(n) if indeg[i] > 0)
        raise TraceError(name, nodes[stuck].where(), "the node %s form a cycle" % what)
    return out


def _dependencies(name, nodes, tally, notes):
    """The dependency edges (parent position, child position) the replay honours."""
    pos = {}
    for i, nd in enumerate(nodes):
        if nd.id in pos:
            raise TraceError(name, "record %d" % nd.record, "node id %d is also record %d"
                             % (nd.id, nodes[pos[nd.id]].record))
        pos[nd.id] = i
    data, ctrl = set(), set()
    dangling = None
    for i, nd in enumerate(nodes):
        for field, deps, into in (("data_deps", nd.data_deps, data),
                                  ("ctrl_deps", nd.ctrl_deps, ctrl)):
            for d in deps:
                if d == nd.id:
                    tally.ignore("%s on the node itself (dropped)" % field)
                elif d not in pos:
                    tally.ignore("%s on nodes not in the file (dropped)" % field)
                    if dangling is None:
                        dangling = "%s: %s depends on node %d, which is not in the file" % (
                            name, nd.where(), d)
                else:
                    into.add((pos[d], i))
    if dangling:
        notes.append(dangling + " (such dependencies are dropped and counted)")
    _order(nodes, sorted(data), name, "data_deps")          # data_deps alone: a DAG
    ctrl -= data
    edges = data | ctrl
    succ = [[] for _ in nodes]
    for a, b in edges:
        succ[a].append(b)
    comp = _sccs(len(nodes), succ)
    size = {}
    for c in comp:
        size[c] = size.get(c, 0) + 1
    for a, b in list(ctrl):
        if comp[a] == comp[b] and size[comp[a]] > 1:
            edges.discard((a, b))
            tally.ignore("ctrl_deps closing a cycle with other dependencies (dropped)")
    return sorted(edges)


def rank_program(name, rank, nodes, tally, notes):
    """The ``Program`` of one rank's nodes (see the module docstring)."""
    edges = _dependencies(name, nodes, tally, notes)
    order = _order(nodes, edges, name, "dependencies")
    parents = [[] for _ in nodes]
    for a, b in edges:
        parents[b].append(a)
    op_of = {}
    ops = []
    seq = {}
    last_in_pg = {}
    for i in order:
        nd = nodes[i]
        deps = sorted(op_of[p] for p in parents[i])
        op = _op(name, rank, nd, deps, seq, tally)
        if op.kind == COMM and op.role is None:
            pg = op.call.key[1]
            if pg in last_in_pg and last_in_pg[pg] not in op.deps:
                op.deps.append(last_in_pg[pg])    # one communicator: in order
            last_in_pg[pg] = len(ops)
        op_of[i] = len(ops)
        ops.append(op)
    return Program(rank, ops, name)


def _count_fields(nd, tally, comm):
    used = USED_ATTRS.get(nd.type, ())
    for a in nd.attrs:
        if a not in used:
            tally.ignore("attr %r" % a)
    if nd.start_us:
        tally.ignore("start_time_micros (the replay computes start times)")
    if nd.has_inputs or nd.has_outputs:
        tally.ignore("inputs/outputs (tensor descriptions)")
    if comm and nd.duration_us:
        tally.ignore("duration_micros of communication nodes (the network decides)")
    for f in nd.extra:
        tally.ignore("Node field %d (not in et_def.proto)" % f)


def _op(name, rank, nd, deps, seq, tally):
    where = nd.where()
    kind = nd.type
    cpu = nd.attrs.get("is_cpu_op") is True
    if kind == COMP:
        _count_fields(nd, tally, False)
        return Op(COMPUTE, deps, "cpu" if cpu else "gpu", nd.duration_us * US, node_id=nd.id,
                  where=where)
    if kind == COLL:
        if "comm_type" not in nd.attrs and cpu:
            tally.skip("COMM_COLL_NODE on the CPU without comm_type (replayed as CPU time)")
            return Op(COMPUTE, deps, "cpu", nd.duration_us * US, node_id=nd.id, where=where)
        ctype = _attr_int(name, nd, "comm_type")
        op = COMM_TYPES.get(ctype)
        if op is None:
            raise TraceError(name, where, "unknown comm_type %d" % ctype)
        if op == "barrier":
            tally.skip("COMM_COLL_NODE barrier (no data)")
            return Op(PASS, deps, node_id=nd.id, where=where)
        _count_fields(nd, tally, True)
        size = _attr_int(name, nd, "comm_size")
        pg = nd.attrs.get("pg_name") or ""
        if not isinstance(pg, str):
            raise TraceError(name, where, "pg_name must be a string, got %r" % (pg,))
        k = seq.get(("coll", pg), 0)
        seq[("coll", pg)] = k + 1
        ranks = nd.attrs.get("pg_ranks")
        if ranks is not None:
            if not isinstance(ranks, list) or rank not in ranks:
                raise TraceError(name, where, "pg_ranks %r must list this file's rank %d"
                                 % (ranks, rank))
            ranks = tuple(ranks)
        algo = nd.attrs.get("comm_algo")
        if algo is not None and algo not in ALGORITHMS[op]:
            raise TraceError(name, where, "comm_algo %r is not an algorithm of %s" % (algo, op))
        root = _attr_int(name, nd, "comm_root", required=False) if op in ROOTED else None
        call = Call(("coll", pg, k), op, size, name, where, root=root, ranks=ranks, algo=algo,
                    tag=nd.name or None, node_id=nd.id)
        return Op(COMM, deps, call=call, node_id=nd.id, where=where)
    if kind in (SEND, RECV):
        _count_fields(nd, tally, True)
        size = _attr_int(name, nd, "comm_size")
        tag = _attr_int(name, nd, "comm_tag", required=False, default=0, signed=True)
        if kind == SEND:
            src, dst = _attr_int(name, nd, "comm_src", False, rank), _attr_int(name, nd,
                                                                               "comm_dst")
            mine = src
        else:
            src, dst = _attr_int(name, nd, "comm_src"), _attr_int(name, nd, "comm_dst", False,
                                                                  rank)
            mine = dst
        if mine != rank:
            raise TraceError(name, where, "%s says it runs on rank %d but this file is rank %d "
                             "(from its name)" % (NODE_TYPES[kind], mine, rank))
        if src == dst:
            raise TraceError(name, where, "send/recv between rank %d and itself" % rank)
        k = seq.get(("p2p", src, dst, tag), 0)
        seq[("p2p", src, dst, tag)] = k + 1
        call = Call(("p2p", src, dst, tag, k), "send", size, name, where, ranks=(src, dst),
                    tag=nd.name or None, node_id=nd.id)
        return Op(COMM, deps, call=call, role="send" if kind == SEND else "recv",
                  node_id=nd.id, where=where)
    tally.skip(NODE_TYPES.get(kind, "node type %d" % kind))
    return Op(PASS, deps, node_id=nd.id, where=where)


def read_chakra(sources, world_size=None):
    """A ``Trace`` (with per-rank programs) from the per-rank ``.et`` files of one run.

    ``sources``: paths or ``gse.workloads.traces.sources.Source`` objects.  ``world_size``:
    the number of ranks when the files are fewer (one rank's file of an SPMD run): a
    collective without ``pg_ranks`` is then over ranks 0..world_size-1, and the ranks
    without a file run a copy of the lowest rank's program.
    """
    sources = [s if hasattr(s, "data") else expand_sources([s])[0] for s in sources]
    names = [s.name for s in sources]
    rank_of = ranks_for_files(names)
    tally = Tally()
    notes = []
    programs = {}
    records = 0
    schemas = set()
    for src in sources:
        meta, nodes = read_et(src)
        schemas.add(meta.schema or "(none)")
        for a in meta.attrs:
            if a != "schema":
                tally.ignore("GlobalMetadata attr %r" % a)
        records += len(nodes)
        rank = rank_of[src.name]
        if world_size is not None and rank >= world_size:
            raise TraceError(src.name, None, "rank %d (from the file name) is not below the "
                             "world size %d" % (rank, world_size))
        programs[rank] = rank_program(src.name, rank, nodes, tally, notes)
    known = [s for s in schemas if s.split("-")[0] in ("0.0.4", "1.0.0") or
             s.endswith(("chakra.0.0.4", "chakra.1.0.0"))]
    if set(schemas) - set(known):
        notes.append("schema(s) %s read with the Chakra %s layout (the only one since "
                     "2023-10)" % (", ".join(sorted(set(schemas) - set(known))),
                                   SCHEMA_VERSION))
    world = range(world_size) if world_size is not None else None
    if world is None:                  # the groups are the files: all of them, no more
        check_rank_files({r: [op.call for op in p.ops if op.kind == COMM]
                          for r, p in programs.items()})
    if not any(op.kind == COMM for p in programs.values() for op in p.ops):
        raise TraceError(names[0], None, "no communication nodes in %d file(s) (%d nodes "
                         "skipped)" % (len(names), tally.skipped_total()))
    check_every_rank_communicates(programs, empty_only=True)
    colls, programs = assemble_programs(programs, world)
    check_every_rank_communicates(programs)
    mirrored = sorted(r for r, p in programs.items() if p.mirror_of is not None)
    if mirrored:
        notes.append("ranks %s have no file: they run rank %d's program (--world-size %d)"
                     % (_ranges(mirrored), programs[mirrored[0]].mirror_of, world_size))
    t = Trace(colls, "chakra", names, records=records, skipped=tally.skipped, notes=notes,
              ignored=tally.ignored, programs=programs)
    t.schemas = sorted(schemas)
    return t


def _ranges(ranks):
    out = []
    start = prev = ranks[0]
    for r in ranks[1:] + [None]:
        if r is not None and r == prev + 1:
            prev = r
            continue
        out.append(str(start) if start == prev else "%d-%d" % (start, prev))
        if r is not None:
            start = prev = r
    return ",".join(out)


# -- writing --------------------------------------------------------------------------------

def _whole_us(ps, what):
    if ps % US:
        raise ValueError("%s of %d ps is not a whole number of microseconds, which Chakra's "
                         "duration_micros cannot hold" % (what, ps))
    return ps // US


def write_chakra(prefix: str, collectives: Iterable[Collective]) -> list[str]:
    """Write one ``<prefix>.<rank>.et`` per rank; returns the paths.

    Every collective becomes a communication node (node id = collective id) in the file of
    each of its ranks; a lag or a start time becomes a GPU COMP node with that duration.  A
    dependency on a collective the rank does not take part in cannot be said in Chakra's
    per-rank graphs and is refused.
    """
    colls = list(collectives)
    check_trace(colls)
    for c in colls:
        if c.splits is not None:
            raise ValueError("collective %d: an uneven all-to-all cannot be written to Chakra "
                             "(comm_size is one size for every rank)" % c.id)
    by_id = {c.id: c for c in colls}
    world = sorted({r for c in colls for r in c.ranks})
    next_id = [max(by_id) + 1]
    pg_names: dict[tuple[int, ...], str] = {}
    paths = []
    d = os.path.dirname(prefix)
    if d:
        os.makedirs(d, exist_ok=True)
    for rank in world:
        out = [metadata_record()]

        def comp(deps, us, what):
            nid = next_id[0]
            next_id[0] += 1
            out.append(node_record(nid, what, COMP, deps, us, {"is_cpu_op": False}))
            return nid

        for c in colls:
            if rank not in c.ranks:
                continue
            deps = []
            if c.start_ps:
                deps.append(comp([], _whole_us(c.start_ps, "collective %d start" % c.id),
                                 "compute before %d" % c.id))
            for dep, lag in c.after:
                if rank not in by_id[dep].ranks:
                    raise ValueError("collective %d on rank %d depends on collective %d, in "
                                     "which rank %d takes no part: Chakra's per-rank graph "
                                     "cannot say that" % (c.id, rank, dep, rank))
                deps.append(comp([dep], _whole_us(lag, "lag of %d after %d" % (c.id, dep)),
                                 "compute %d->%d" % (dep, c.id)) if lag else dep)
            name = c.tag or "%s_%d" % (c.op, c.id)
            if c.op == "send":
                src, dst = c.ranks
                peer = ("comm_dst", dst) if rank == src else ("comm_src", src)
                out.append(node_record(c.id, name, SEND if rank == src else RECV, deps, 0,
                                       {peer[0]: peer[1], "comm_size": c.size,
                                        "comm_tag": c.id}))
                continue
            attrs: dict[str, object] = {"is_cpu_op": False, "comm_type": COMM_TYPE_OF[c.op],
                                        "comm_size": c.size}
            if sorted(c.ranks) != world:
                key = tuple(sorted(c.ranks))
                attrs["pg_name"] = pg_names.setdefault(key, str(len(pg_names) + 1))
            if list(c.ranks) != sorted(c.ranks):
                attrs["pg_ranks"] = list(c.ranks)
            if c.op in ROOTED:
                attrs["comm_root"] = c.root
            if c.algo != ALGORITHMS[c.op][0]:
                attrs["comm_algo"] = c.algo
            out.append(node_record(c.id, name, COLL, deps, 0, attrs))
        path = "%s.%d.et" % (prefix, rank)
        with open(path, "wb") as f:
            f.write(b"".join(out))
        paths.append(path)
    return paths
