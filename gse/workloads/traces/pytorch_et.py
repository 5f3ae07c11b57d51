"""PyTorch execution traces (the JSON that ``torch.profiler.ExecutionTraceObserver`` writes,
one file per rank): reader for schemas 1.0.1 to 1.1.1, and a writer for tests and samples.

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
else the ranks whose files were given).  Pre-1.0.3 groups are process-local pointers;
they are named by the order they first appear in (the same in every rank's file).

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

from gse.workloads.collectives import ROOTED, check_trace
from gse.workloads.traces.common import (TORCH_DTYPES, Call, Tally, Trace, TraceError, assemble,
                                         dtype_bytes, rank_from_path)
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
                 "in_bytes", "out_bytes", "dtype", "splits", "attrs", "where", "node_id")


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
    splits = attrs.get("in_split_size", pos(4))
    if isinstance(splits, str):
        try:
            splits = json.loads(splits)
        except ValueError:
            splits = []
    c.splits = splits if isinstance(splits, list) else []
    for a in attrs:
        if a not in USED_ATTRS:
            tally.ignore("record_param_comms attr %r" % a)
    return c


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


def _group(name, c, f, world):
    if c.pg in f.pgs:
        return f.pgs[c.pg]
    if _is_int(c.size) and c.size > 0:
        start = c.start if _is_int(c.start) and c.start >= 0 else 0
        stride = c.stride if _is_int(c.stride) and c.stride > 0 else 1
        return [start + k * stride for k in range(c.size)]
    if _is_int(c.world) and c.world > 0:
        return list(range(c.world))
    if world:
        return list(world)
    raise TraceError(name, c.where, "the trace does not say which ranks process group %r has "
                     "(no process-group init node, no group size); give every rank's file or "
                     "the world size" % (c.pg,))


def _calls(f, world, tally, notes):
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
        ranks = _group(name, c, f, world)
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
        if c.op == "all_to_all" and len(set(c.splits)) > 1:
            notes.append("%s: %s: uneven all-to-all splits replayed as even" % (name, c.where))
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
                          ranks=tuple(ranks), deps=deps, dtype=c.dtype, node_id=c.node_id))
    return calls


def read_pytorch_et(sources, world_size=None):
    """A ``Trace`` from per-rank PyTorch execution traces (paths or ``Source`` objects)."""
    sources = [s if hasattr(s, "data") else expand_sources([s])[0] for s in sources]
    tally = Tally()
    notes = []
    files = [_scan(s, tally) for s in sources]
    by_rank = {}
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
    world = range(world_size) if world_size is not None else (
        sorted(by_rank) if len(by_rank) > 1 else None)
    calls = {rank: _calls(f, world, tally, notes) for rank, f in by_rank.items()}
    colls = assemble(calls, "pytorch", need_all_ranks=False)
    if not colls:
        raise TraceError(sources[0].name, None, "no record_param_comms nodes with data in %d "
                         "file(s) (%d nodes skipped)" % (len(sources), tally.skipped_total()))
    return Trace(colls, "pytorch", [s.name for s in sources],
                 records=sum(f.records for f in files), skipped=tally.skipped, notes=notes,
                 ignored=tally.ignored)


# -- writing --------------------------------------------------------------------------------

_TORCH_NAME = {v: k for k, v in TORCH_DTYPES.items()}
_WRITE_NAME = {"all_reduce": "allreduce", "reduce_scatter": "_reduce_scatter_base",
               "all_gather": "_allgather_base", "all_to_all": "all_to_all",
               "broadcast": "broadcast", "reduce": "reduce", "gather": "gather",
               "scatter": "scatter"}


def write_pytorch_et(prefix, collectives):
    """One ``<prefix>.<rank>.json`` per rank, as the observer would record the calls.

    Only what the format can say is kept: the order of calls within a process group, no
    lags or start times (refused when present, as are dependencies across groups).
    """
    colls = list(collectives)
    check_trace(colls)
    groups = {}
    last = {}
    for c in colls:
        if c.start_ps:
            raise ValueError("collective %d: a start time cannot be written to a PyTorch ET"
                             % c.id)
        if c.op != "send":
            name = groups.setdefault(tuple(c.ranks), str(len(groups)))
            want = [(last[name], 0)] if name in last else []
            if sorted(c.after) != want:
                raise ValueError("collective %d: a PyTorch ET only says that a call follows "
                                 "the previous one of its process group (%s), not %r"
                                 % (c.id, want, list(c.after)))
            last[name] = c.id
    world = sorted({r for c in colls for r in c.ranks})
    pg_list = [{"pg_name": name, "pg_desc": "default_pg" if name == "0" else "pg" + name,
                "backend_config": "cuda:nccl", "pg_size": len(ranks), "ranks": list(ranks)}
               for ranks, name in groups.items()]
    paths = []
    for rank in world:
        nodes = [{"id": 2, "name": PG_INIT, "ctrl_deps": 1,
                  "inputs": {"values": [json.dumps(pg_list)], "shapes": [[]],
                             "types": ["String"]},
                  "outputs": {"values": [], "shapes": [], "types": []}, "attrs": []}]
        for c in colls:
            if rank not in c.ranks:
                continue
            dname = _TORCH_NAME.get(c.dtype or "uint8", "Byte")
            width = dtype_bytes(TORCH_DTYPES[dname])
            if c.size % width:
                raise ValueError("collective %d: %d bytes is not a whole number of %s"
                                 % (c.id, c.size, dname))
            n = len(c.ranks)
            elems = c.size // width
            nid = 10 * c.id + 10
            nodes.append({"id": nid - 1, "name": "c10d::%s_" % c.op, "ctrl_deps": 1,
                          "inputs": {"values": [], "shapes": [], "types": []},
                          "outputs": {"values": [], "shapes": [], "types": []}, "attrs": []})
            if c.op == "send":
                src, dst = c.ranks
                attrs = {"collective_name": "send" if rank == src else "recv",
                         "dtype": dname, "in_msg_nelems": elems, "out_msg_nelems": elems,
                         ("dst_rank" if rank == src else "src_rank"): dst if rank == src
                         else src, "tag": c.id}
            else:
                name = groups[tuple(c.ranks)]
                n_in = elems // n if c.op in OUTPUT_SIZED else elems
                n_out = elems // n if c.op in ("reduce_scatter", "scatter") else elems
                if (c.op in OUTPUT_SIZED or c.op in ("reduce_scatter", "scatter")) and elems % n:
                    raise ValueError("collective %d: %d elements do not split over %d ranks"
                                     % (c.id, elems, n))
                stride = (c.ranks[1] - c.ranks[0]) if n > 1 else 1
                attrs = {"collective_name": _WRITE_NAME[c.op], "dtype": dname,
                         "in_msg_nelems": n_in, "out_msg_nelems": n_out,
                         "in_split_size": "[]", "out_split_size": "[]",
                         "global_rank_start": c.ranks[0], "global_rank_stride": max(stride, 1),
                         "pg_name": name, "pg_desc": "default_pg" if name == "0" else "pg" + name,
                         "pg_size": n}
                if c.op in ROOTED:
                    attrs["root_rank"] = c.root
            nodes.append({"id": nid, "name": "record_param_comms", "ctrl_deps": nid - 1,
                          "inputs": {"values": [], "shapes": [], "types": []},
                          "outputs": {"values": [], "shapes": [], "types": []},
                          "attrs": [{"name": k, "type": _type_name(v), "value": v}
                                    for k, v in attrs.items()]})
            nodes.append({"id": nid + 1, "name": "nccl:%s" % c.op, "ctrl_deps": nid,
                          "inputs": {"values": [], "shapes": [], "types": []},
                          "outputs": {"values": [], "shapes": [], "types": []}, "attrs": []})
        doc = {"schema": "1.1.1-chakra.0.0.4", "pid": 1000 + rank, "time": "2025-01-01 00:00:00",
               "start_ts": 0, "nodes": nodes + [
                   {"id": 1, "name": "[pytorch|profiler|execution_trace|process]",
                    "ctrl_deps": 1, "inputs": {"values": [], "shapes": [], "types": []},
                    "outputs": {"values": [], "shapes": [], "types": []}, "attrs": []}],
               "finish_ts": 0}
        path = "%s.%d.json" % (prefix, rank)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        paths.append(path)
    return paths


def _type_name(v):
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "uint64"
    return "string"
