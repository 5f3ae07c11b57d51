"""PyTorch execution traces (the JSON that ``torch.profiler.ExecutionTraceObserver`` writes,
one file per rank): reader for schemas 1.0.1 to 1.1.1 (the writer, for tests and samples,
is ``pytorch_et_writer``).

The document is ``{"schema", "pid", "time", "start_ts", "nodes": [...], "finish_ts"}``.
Schema 1.0.1 nodes have flat keys (``inputs`` is the list of values, ``input_types``...);
from 1.0.2 on a node is ``{id, name, ctrl_deps, inputs: {values, shapes, types}, outputs,
attrs: [{name, type, value}]}``.  A communication call is a ``record_param_comms`` node.
Its inputs are positional (PyTorch's ``RECORD_PARAM_COMMS_DATA``); a call that carries
data starts with its tensors, a data-less one (``wait``, ``barrier``, ``init``) does not:

====  =========================  ==========================  =============================
pos   1.0.1                      1.0.2                       1.0.3 and later
====  =========================  ==========================  =============================
 0    input tensor(s)            input tensor(s)             input tensor(s)
 1    seq                        seq                         seq
 2    process group (pointer)    process group (pointer)     [pg_name, pg_desc]
 3    rank                       rank                        rank
 4    collective name            collective name             collective name
 5,6  in/out split sizes         in/out split sizes          in/out split sizes
 7    --                         world size                  global_rank_start
 8,9  --                         --                          global_rank_stride, group size
====  =========================  ==========================  =============================

"rank" is the caller's rank for all-reduce, all-gather, all-to-all, reduce-scatter, wait
and barrier, the root for broadcast/reduce/gather/scatter, the peer for send and recv
(group-local).  From 1.1.0 the same facts are also attributes (``collective_name``,
``dtype``, ``in_msg_nelems``, ``out_msg_nelems``, ``pg_name``, ``pg_size``,
``global_rank_start``, ``global_rank_stride``); the reader takes the attributes when
present and the positions otherwise.  A tensor is ``[tensor_id, storage_id, offset, numel,
itemsize, device]``; sizes are numel x itemsize (or the attribute's element count x the
dtype's width), following nccl-tests: all-reduce, broadcast, reduce and all-to-all by the
input, all-gather and gather by the output, reduce-scatter and scatter by the input.

**Groups.**  The ``## process_group:init ##`` node (1.0.2 and later) holds the dump of
``pg_config_info``: ``[{"pg_name", "ranks", "group_size", ...}]`` where ``ranks: []``
means every rank ``0..group_size-1``.  Without it, a group is start, stride and size
(1.0.3+), else the world size (1.0.2's position 7, else ``world_size`` given by the user,
else the ranks whose files were given, which must be 0..N-1).  Pre-1.0.3 groups are
process-local pointers; they are named by the order they first appear in (the same in
every rank's file).  A ``world_size`` that contradicts the recorded groups is refused,
except over a single-GPU trace (groups of one rank), whose collectives it replays over
that many ranks, data-parallel.

**Uneven all-to-all.**  ``all_to_allv`` records its input and output split sizes (rows of
the tensor): a rank's input splits are the bytes it sends to each rank, replayed as
recorded (``common.uneven_splits``), and its output splits must agree with the senders'.

**Rank of a file.**  From the trace itself: the rank position of the calls that carry the
caller's rank (all of them must agree).  Only a trace with no such call falls back to the
number in the file name (noted in the summary), then to the order of the files.

Calls on one process group run in order on one NCCL stream: each depends on the previous
call of its group on that rank.  A rank without a file is assumed to make the same calls
as its group (SPMD), so one rank's trace is enough.  Operators, the ``nccl:*`` kernels and
data-less calls are skipped and counted; fields the replay does not use are counted in
``Trace.ignored``.
"""

import json
from collections.abc import Iterable
from typing import Any

from gse.workloads.collectives import ROOTED
from gse.workloads.traces.common import (TORCH_DTYPES, Call, Tally, Trace, TraceError, assemble,
                                         dtype_bytes, rank_from_path, rank_span)
from gse.workloads.traces.sources import as_text, expand_sources

COLLECTIVES = {
    "allreduce": "all_reduce", "all_reduce": "all_reduce", "allreduce_coalesced": "all_reduce",
    "allreduce_coalesced_": "all_reduce",
    "reduce_scatter": "reduce_scatter", "_reduce_scatter_base": "reduce_scatter",
    "reduce_scatter_tensor": "reduce_scatter", "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "reduce_scatter_coalesced": "reduce_scatter",
    "allgather": "all_gather", "all_gather": "all_gather", "_allgather_base": "all_gather",
    "allgather_into_tensor_coalesced": "all_gather", "all_gather_into_tensor": "all_gather",
    "all_gather_into_tensor_coalesced": "all_gather", "allgather_coalesced": "all_gather",
    "alltoall": "all_to_all", "alltoall_base": "all_to_all", "all_to_all": "all_to_all",
    "all_to_all_single": "all_to_all", "alltoallv": "all_to_all", "all_to_allv": "all_to_all",
    "broadcast": "broadcast", "reduce": "reduce", "gather": "gather", "scatter": "scatter",
    "send": "send", "recv": "recv",
}
NO_DATA = ("wait", "barrier", "init", "")
PG_INIT = "## process_group:init ##"
OUTPUT_SIZED = ("all_gather", "gather")
CALLER_RANK = ("all_reduce", "all_gather", "all_to_all", "reduce_scatter")
USED_ATTRS = {"collective_name", "dtype", "in_msg_nelems", "out_msg_nelems", "in_split_size",
              "out_split_size", "global_rank_start", "global_rank_stride", "pg_name", "pg_size",
              "group_size", "world_size", "root_rank", "dst_rank", "src_rank", "tag"}
# tensor element types as the observer spells them -> the project's names
TENSOR_TYPES = {"float": "float32", "double": "float64", "half": "float16",
                "c10::half": "float16", "c10::bfloat16": "bfloat16", "bfloat16": "bfloat16",
                "long": "int64", "long int": "int64", "int": "int32", "short": "int16",
                "signed char": "int8", "unsigned char": "uint8", "bool": "bool",
                "c10::complex<float>": "complex64", "c10::complex<double>": "complex128"}


def _load(source):
    text = as_text(source)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(source.name, "line %d column %d" % (exc.lineno, exc.colno),
                         "invalid JSON: %s" % exc.msg) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list):
        if isinstance(doc, dict) and "traceEvents" in doc:
            raise TraceError(source.name, None, "a Kineto (profiler) trace, not an execution "
                             "trace; give the execution trace of the same run")
        raise TraceError(source.name, None, "not a PyTorch execution trace: expected a JSON "
                         "object with a \"nodes\" list")
    return doc


def _attrs(name, where, node):
    raw = node.get("attrs", [])
    if not isinstance(raw, list):
        raise TraceError(name, where, "attrs must be a list of {name, type, value}")
    out = {}
    for a in raw:
        if not isinstance(a, dict) or "name" not in a or "value" not in a:
            raise TraceError(name, where, "attribute %r lacks a name or a value" % (a,))
        out[a["name"]] = a["value"]
    return out


def _io(node, key):
    """(values, types) of a node's inputs or outputs, in either schema's layout."""
    io = node.get(key)
    if isinstance(io, dict):
        return io.get("values") or [], io.get("types") or []
    if isinstance(io, list):                                   # 1.0.1: flat keys
        return io, node.get(key[:-1] + "_types") or []
    return [], []


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _tensors(value):
    """The [tensor_id, storage_id, offset, numel, itemsize, device] tuples in ``value``."""
    if isinstance(value, list):
        if len(value) == 6 and all(_is_int(x) for x in value[:5]) and isinstance(value[5], str):
            return [value]
        out = []
        for v in value:
            out.extend(_tensors(v))
        return out
    return []


def _tensor_bytes(value):
    return sum(t[3] * t[4] for t in _tensors(value))


def _tensor_dtype(types):
    if not types or not isinstance(types[0], str):
        return None
    t = types[0]
    if "Tensor(" not in t:
        return None
    inner = t.split("Tensor(", 1)[1].split(")", 1)[0].strip().lower()
    return TENSOR_TYPES.get(inner)


def _int_attr(name, where, attrs, key, default=None):
    v = attrs.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise TraceError(name, where, "attribute %r must be an integer >= 0, got %r" % (key, v))
    return v


class _Comm:
    """One record_param_comms node, read from attributes and positions."""

    __slots__ = ("cname", "op", "rank_field", "pg", "start", "stride", "size", "world",
                 "in_bytes", "out_bytes", "dtype", "splits", "out_splits", "attrs", "where",
                 "node_id")


def _comm(name, where, node, pg_alias, tally):
    attrs = _attrs(name, where, node)
    values, types = _io(node, "inputs")
    data_form = bool(values) and not _is_int(values[0])
    base = 1 if data_form else 0

    def pos(k):
        return values[base + k] if base + k < len(values) else None

    c = _Comm()
    c.where = where
    c.node_id = node.get("id", 0) if _is_int(node.get("id", 0)) else 0
    c.attrs = attrs
    c.cname = attrs.get("collective_name", pos(3) if values else None)
    if c.cname is None:
        raise TraceError(name, where, "record_param_comms without a collective name (neither "
                         "the collective_name attribute nor a name at input %d)" % (base + 3))
    if not isinstance(c.cname, str):
        raise TraceError(name, where, "collective name %r is not a string" % (c.cname,))
    c.op = COLLECTIVES.get(c.cname)
    c.rank_field = pos(2) if _is_int(pos(2)) else None
    pg = attrs.get("pg_name")
    if pg is None:
        p = pos(1)
        if isinstance(p, list) and p and isinstance(p[0], str):
            pg = p[0]
        elif _is_int(p):
            pg = pg_alias.setdefault(p, "pg@%d" % len(pg_alias)) if data_form else None
    c.pg = None if pg is None else str(pg)
    extra = values[base + 6:] if values else []
    c.start = attrs.get("global_rank_start", extra[0] if len(extra) >= 3 else None)
    c.stride = attrs.get("global_rank_stride", extra[1] if len(extra) >= 3 else None)
    c.size = attrs.get("pg_size", attrs.get("group_size", extra[2] if len(extra) >= 3 else None))
    c.world = attrs.get("world_size", extra[0] if len(extra) == 1 else None)
    dname = attrs.get("dtype")
    c.dtype = TORCH_DTYPES.get(dname, dname) if dname is not None else _tensor_dtype(types)
    width = dtype_bytes(c.dtype)
    if dname is not None and width is None and c.cname not in NO_DATA:
        raise TraceError(name, where, "unknown dtype %r" % (dname,))
    if ("in_msg_nelems" in attrs or "out_msg_nelems" in attrs) and c.cname not in NO_DATA:
        if width is None:
            raise TraceError(name, where, "element counts without a known dtype (%r)" % (dname,))
        c.in_bytes = _int_attr(name, where, attrs, "in_msg_nelems", 0) * width
        c.out_bytes = _int_attr(name, where, attrs, "out_msg_nelems", 0) * width
    else:
        c.in_bytes = _tensor_bytes(values[0]) if data_form else 0
        c.out_bytes = _tensor_bytes(_io(node, "outputs")[0])
    c.splits = _split_list(attrs.get("in_split_size", pos(4)))
    c.out_splits = _split_list(attrs.get("out_split_size", pos(5)))
    for a in attrs:
        if a not in USED_ATTRS:
            tally.ignore("record_param_comms attr %r" % a)
    return c


def _split_list(value):
    """An all-to-all's split sizes (a list, or its JSON text in 1.1.x attributes)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    return value if isinstance(value, list) and all(_is_int(v) for v in value) else []


def _split_bytes(name, c, splits, nbytes, n, what):
    """Split sizes (in rows of the tensor) as bytes per rank of the group, or None."""
    if not splits:
        return None
    if len(splits) != n:
        raise TraceError(name, c.where, "all-to-all %s split sizes %r name %d ranks but its "
                         "process group has %d" % (what, splits, len(splits), n))
    rows = sum(splits)
    if (rows == 0) != (nbytes == 0) or (rows and nbytes % rows):
        raise TraceError(name, c.where, "all-to-all %s split sizes %r (%d rows) do not divide "
                         "its %d bytes" % (what, splits, rows, nbytes))
    return [v * (nbytes // rows) if rows else 0 for v in splits]


def _pg_table(name, doc):
    """({pg_name: [ranks]}, {backend id: pg_name}) from the process-group init node
    (``ranks: []``: all of ``group_size``; 1.0.2 records name a group by its backend id)."""
    table = {}
    backend = {}
    for node in doc["nodes"]:
        if not isinstance(node, dict) or node.get("name") != PG_INIT:
            continue
        values, _ = _io(node, "inputs")
        if not values:
            continue
        text = values[0]
        try:
            groups = json.loads(text) if isinstance(text, str) else text
        except ValueError:
            raise TraceError(name, "node id %r" % node.get("id"), "process-group init input "
                             "is not JSON") from None
        if isinstance(groups, dict):
            groups = list(groups.values())
        for g in groups if isinstance(groups, list) else ():
            if not isinstance(g, dict) or "pg_name" not in g:
                continue
            if _is_int(g.get("backend_id")):
                backend[g["backend_id"]] = str(g["pg_name"])
            ranks = g.get("ranks")
            size = g.get("group_size", g.get("pg_size"))
            if isinstance(ranks, list) and ranks:
                table[str(g["pg_name"])] = [int(r) for r in ranks]
            elif _is_int(size) and size > 0:
                table[str(g["pg_name"])] = list(range(size))
    return table, backend


class _File:
    __slots__ = ("source", "comms", "pgs", "rank", "how", "records")


def _scan(source, tally):
    doc = _load(source)
    f = _File()
    f.source = source
    f.pgs, backend = _pg_table(source.name, doc)
    f.records = len(doc["nodes"])
    for key in doc:
        if key not in ("schema", "nodes"):
            tally.ignore("trace field %r" % key)
    pg_alias = dict(backend)         # group pointers -> names (the init node's, else by order)
    rpc = []
    for i, node in enumerate(doc["nodes"]):
        where = "nodes[%d]" % i
        if not isinstance(node, dict) or "name" not in node:
            raise TraceError(source.name, where, "a node is an object with at least \"id\" and "
                             "\"name\", got %r" % (node if not isinstance(node, dict)
                                                   else sorted(node),))
        nm = node["name"]
        if nm != "record_param_comms":
            tally.skip("nccl kernel nodes" if str(nm).startswith("nccl:") else
                       "process group init" if nm == PG_INIT else "operator/other nodes")
            continue
        nid = node.get("id", 0)
        rpc.append((nid if _is_int(nid) else 0, i, node))
    rpc.sort(key=lambda x: (x[0], x[1]))           # record ids grow in call order
    f.comms = [_comm(source.name, "nodes[%d] (id %r)" % (i, node.get("id")), node, pg_alias,
                     tally) for _, i, node in rpc]
    return f


def _file_rank(f):
    """(rank, how) from the calls that record the caller's rank, or (None, None)."""
    found = {}
    for c in f.comms:
        if c.rank_field is None or c.rank_field < 0:
            continue
        if c.cname in ("wait", "barrier"):
            rank = c.rank_field
        elif c.op in CALLER_RANK:
            group = f.pgs.get(c.pg) if c.pg is not None else None
            rank = group[c.rank_field] if group and c.rank_field < len(group) else c.rank_field
        else:
            continue
        found.setdefault(rank, c.where)
    if len(found) > 1:
        (r1, w1), (r2, w2) = sorted(found.items())[:2]
        raise TraceError(f.source.name, None, "the calls disagree on this file's rank: %d at %s, "
                         "%d at %s" % (r1, w1, r2, w2))
    if found:
        return next(iter(found)), "the calls' rank position"
    return None, None


def _recorded_group(c, f):
    """(ranks, how the trace says them) of a call's process group, or (None, None)."""
    if c.pg in f.pgs:
        return f.pgs[c.pg], "the process-group init node"
    if _is_int(c.size) and c.size > 0:
        start = c.start if _is_int(c.start) and c.start >= 0 else 0
        stride = c.stride if _is_int(c.stride) and c.stride > 0 else 1
        return [start + k * stride for k in range(c.size)], "the group size of its calls"
    if _is_int(c.world) and c.world > 0:
        return list(range(c.world)), "the world size of its calls"
    return None, None


def _group(name, c, f, world):
    ranks, _ = _recorded_group(c, f)
    if ranks is not None:
        return ranks
    if world:
        if list(world) != list(range(len(world))):
            missing = min(set(range(max(world) + 1)) - set(world))
            raise TraceError(name, c.where, "the trace does not say which ranks process group "
                             "%r has, and the files given are ranks %s: rank %d has no file; "
                             "give every rank's file, or the world size"
                             % (c.pg, rank_span(world), missing))
        return list(world)
    raise TraceError(name, c.where, "the trace does not say which ranks process group %r has "
                     "(no process-group init node, no group size); give every rank's file or "
                     "the world size" % (c.pg,))


def _calls(f, world, tally, notes, dp_world=None):
    name = f.source.name
    rank = f.rank
    calls = []
    last_in_pg = {}
    seq = {}
    for c in f.comms:
        if c.cname in NO_DATA:
            tally.skip("record_param_comms %s (no data)" % (c.cname or "unnamed"))
            continue
        if c.op is None:
            raise TraceError(name, c.where, "unknown collective_name %r (known: %s)"
                             % (c.cname, ", ".join(sorted(COLLECTIVES))))
        ranks = list(dp_world) if dp_world else _group(name, c, f, world)
        if c.op in ("send", "recv"):
            peer_key = "dst_rank" if c.op == "send" else "src_rank"
            if peer_key in c.attrs:
                peer = _int_attr(name, c.where, c.attrs, peer_key)
            elif c.rank_field is not None and 0 <= c.rank_field < len(ranks):
                peer = ranks[c.rank_field]
            else:
                tally.skip("record_param_comms %s without a peer" % c.op)
                notes.append("%s: %s: %s skipped: the trace does not name the peer"
                             % (name, c.where, c.op))
                continue
            src, dst = (rank, peer) if c.op == "send" else (peer, rank)
            tag = c.attrs.get("tag", 0)
            k = seq.get(("p2p", src, dst, tag), 0)
            seq[("p2p", src, dst, tag)] = k + 1
            size = c.in_bytes if c.op == "send" else (c.out_bytes or c.in_bytes)
            calls.append(Call(("p2p", src, dst, tag, k), "send", size, name, c.where,
                              ranks=(src, dst), dtype=c.dtype, node_id=c.node_id))
            continue
        if rank not in ranks:
            raise TraceError(name, c.where, "process group %r has ranks %r, not this file's rank "
                             "%d (%s)" % (c.pg, ranks, rank, f.how))
        size = c.out_bytes if c.op in OUTPUT_SIZED else c.in_bytes
        splits = None
        if c.op == "all_to_all" and not dp_world:
            splits = (_split_bytes(name, c, c.splits, c.in_bytes, len(ranks), "input"),
                      _split_bytes(name, c, c.out_splits, c.out_bytes, len(ranks), "output"))
            if splits == (None, None):
                splits = None                   # all_to_all_single without splits: even
        root = None
        if c.op in ROOTED:
            if "root_rank" in c.attrs:
                root = _int_attr(name, c.where, c.attrs, "root_rank")
            elif c.rank_field is not None and 0 <= c.rank_field < len(ranks):
                root = ranks[c.rank_field]
            else:
                root = ranks[0]
        pg = c.pg or ""
        k = seq.get(("coll", pg), 0)
        seq[("coll", pg)] = k + 1
        deps = [(last_in_pg[pg], 0)] if pg in last_in_pg else []
        last_in_pg[pg] = len(calls)
        calls.append(Call(("coll", pg, k), c.op, size, name, c.where, root=root,
                          ranks=tuple(ranks), deps=deps, dtype=c.dtype, node_id=c.node_id,
                          splits=splits))
    return calls


def _world(files, world_size, notes):
    """The ranks a single-GPU trace (its process groups record one rank) is replayed over,
    data-parallel, when ``world_size`` asks for more; None otherwise.  A world size that
    contradicts the groups the trace records is refused: it would be ignored."""
    recorded = {}
    for f in files:
        if world_size is not None and f.rank >= world_size:
            raise TraceError(f.source.name, None, "rank %d (from %s) is not below the world "
                             "size %d" % (f.rank, f.how, world_size))
        for c in f.comms:
            if c.op is not None and c.cname not in NO_DATA:
                ranks, how = _recorded_group(c, f)
                if ranks:
                    recorded.setdefault(max(ranks) + 1, (f.source.name, c, how, ranks))
    if world_size is None or not recorded:
        return None
    size = max(recorded)
    name, c, how, ranks = recorded[size]
    if size == 1 and world_size > 1:
        notes.append("%s: the trace records a world of one rank (a single-GPU run): its "
                     "collectives are replayed over ranks 0..%d (--world-size %d), "
                     "data-parallel, every rank making rank 0's calls"
                     % (name, world_size - 1, world_size))
        return range(world_size)
    if size != world_size:
        raise TraceError(name, c.where, "the world size %d contradicts the trace: process group "
                         "%r has ranks %s (from %s), a world of %d; the world size is for traces "
                         "that do not record their groups, or that record one rank (replayed "
                         "data-parallel)" % (world_size, c.pg, rank_span(ranks), how, size))
    return None


def read_pytorch_et(sources: Iterable[Any], world_size: int | None = None) -> Trace:
    """A ``Trace`` from per-rank PyTorch execution traces (paths or ``Source`` objects)."""
    sources = [s if hasattr(s, "data") else expand_sources([s])[0] for s in sources]
    tally = Tally()
    notes = []
    files = [_scan(s, tally) for s in sources]
    by_rank: dict[int, Any] = {}
    unranked = []
    for f in files:
        f.rank, f.how = _file_rank(f)
        if f.rank is None:
            unranked.append(f)
    for i, f in enumerate(unranked):
        r = rank_from_path(f.source.name)
        if r is not None:
            f.rank, f.how = r, "the number in the file name"
        else:
            f.rank, f.how = i, "the order of the files"
        notes.append("%s: the trace records no rank; rank %d from %s" % (f.source.name, f.rank,
                                                                           f.how))
    for f in files:
        if f.rank in by_rank:
            raise TraceError(f.source.name, None, "rank %d (from %s) is also the rank of %s; "
                             "give each rank's file once" % (f.rank, f.how,
                                                            by_rank[f.rank].source.name))
        by_rank[f.rank] = f
    dp_world = _world(files, world_size, notes)
    world = range(world_size) if world_size is not None else (
        sorted(by_rank) if len(by_rank) > 1 else None)
    calls = {rank: _calls(f, world, tally, notes, dp_world) for rank, f in by_rank.items()}
    silent = sorted(r for r, cs in calls.items() if not cs)
    if silent and len(silent) < len(calls):
        f = by_rank[silent[0]]
        raise TraceError(f.source.name, None, "rank %d's file holds no communication call with "
                         "data (%d nodes), while the other ranks' files do: rank %d would take "
                         "part in no collective; give the whole file of every rank"
                         % (f.rank, f.records, f.rank))
    colls, more = assemble(calls, "pytorch", need_all_ranks=False)
    notes.extend(more)
    if not colls:
        raise TraceError(sources[0].name, None, "no record_param_comms nodes with data in %d "
                         "file(s) (%d nodes skipped)" % (len(sources), tally.skipped_total()))
    if all(len(c.ranks) == 1 for c in colls):
        notes.append("every collective is over one rank (the trace records a world of one "
                     "rank: a single-GPU run), so nothing crosses the network; give the world "
                     "size (--world-size N) to replay them over N ranks, data-parallel")
    return Trace(colls, "pytorch", [s.name for s in sources],
                 records=sum(f.records for f in files), skipped=tally.skipped, notes=notes,
                 ignored=tally.ignored)
