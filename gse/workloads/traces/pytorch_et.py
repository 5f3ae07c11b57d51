"""PyTorch execution traces (the JSON that ``torch.profiler.ExecutionTraceObserver``
writes, one file per rank): reader, and a writer for tests and samples.

Read from the public description of the format (schema ``1.0.x``/``1.1.x-chakra.0.0.4``)::

    {"schema": "1.1.1-chakra.0.0.4", "pid": 7, "time": "...", "start_ts": 0,
     "nodes": [{"id": 5, "name": "record_param_comms", "ctrl_deps": 4,
                "inputs": {"values": [...], "shapes": [...], "types": [...]},
                "outputs": {...},
                "attrs": [{"name": "collective_name", "type": "string", "value": "allreduce"},
                          {"name": "dtype", "type": "string", "value": "Float"},
                          {"name": "in_msg_nelems", "type": "uint64", "value": 262144}, ...]}],
     "finish_ts": 0}

A communication call is a ``record_param_comms`` node with the attributes
``collective_name``, ``dtype``, ``in_msg_nelems``, ``out_msg_nelems``, ``pg_name``,
``pg_size``, ``global_rank_start`` and ``global_rank_stride``; the ranks of a process
group come from the ``## process_group:init ##`` node when it lists them (its first input
is a JSON list of ``{"pg_name", "ranks", ...}``), else from start, stride and size.
Every other node (operators, kernels, the ``nccl:*`` children, ``wait`` and ``barrier``
calls) is skipped and counted.

Sizes follow nccl-tests: all-reduce, broadcast, reduce and all-to-all use the input
element count, all-gather and gather the output (the gathered buffer), reduce-scatter and
scatter the input (the buffer before scattering).  An all-to-all with uneven splits is
replayed as an even one of the same total (noted).  Calls on one process group run in
order on one NCCL stream, so each depends on the previous call of its group on that rank;
the trace holds no compute durations to turn into lags.  Point to point (``send``,
``recv``) needs the peer, which the observer does not record as an attribute: the reader
takes ``dst_rank``/``src_rank`` when present (this module's writer adds them) and
otherwise skips the call with a note.  The file's rank is the number in its name; a rank
without a file is assumed to make the same calls as its group (SPMD).
"""

import json

from gse.workloads.collectives import ROOTED, check_trace
from gse.workloads.traces.common import (TORCH_DTYPES, Call, Trace, TraceError, assemble, count,
                                         dtype_bytes, ranks_for_files)

COLLECTIVES = {
    "allreduce": "all_reduce", "all_reduce": "all_reduce", "allreduce_coalesced": "all_reduce",
    "allreduce_coalesced_": "all_reduce",
    "reduce_scatter": "reduce_scatter", "_reduce_scatter_base": "reduce_scatter",
    "reduce_scatter_tensor": "reduce_scatter", "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "reduce_scatter_coalesced": "reduce_scatter",
    "allgather": "all_gather", "all_gather": "all_gather", "_allgather_base": "all_gather",
    "allgather_into_tensor_coalesced": "all_gather", "all_gather_into_tensor": "all_gather",
    "allgather_coalesced": "all_gather",
    "alltoall": "all_to_all", "alltoall_base": "all_to_all", "all_to_all": "all_to_all",
    "all_to_all_single": "all_to_all", "alltoallv": "all_to_all",
    "broadcast": "broadcast", "reduce": "reduce", "gather": "gather", "scatter": "scatter",
    "send": "send", "recv": "recv",
}
NO_DATA = ("wait", "barrier", "init", "")
PG_INIT = "## process_group:init ##"
OUTPUT_SIZED = ("all_gather", "gather")


def _load(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except json.JSONDecodeError as exc:
        raise TraceError(path, "line %d column %d" % (exc.lineno, exc.colno),
                         "invalid JSON: %s" % exc.msg) from None
    except UnicodeDecodeError:
        raise TraceError(path, None, "not UTF-8 JSON text") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list):
        raise TraceError(path, None, "not a PyTorch execution trace: expected a JSON object "
                         "with a \"nodes\" list")
    return doc


def _attrs(path, where, node):
    raw = node.get("attrs", [])
    if not isinstance(raw, list):
        raise TraceError(path, where, "attrs must be a list of {name, type, value}")
    out = {}
    for a in raw:
        if not isinstance(a, dict) or "name" not in a or "value" not in a:
            raise TraceError(path, where, "attribute %r lacks a name or a value" % (a,))
        out[a["name"]] = a["value"]
    return out


def _int_attr(path, where, attrs, name, default=None):
    v = attrs.get(name, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise TraceError(path, where, "attribute %r must be an integer >= 0, got %r"
                         % (name, v))
    return v


def _pg_table(path, doc):
    """{pg_name: [ranks]} from the process-group init node, when it lists them."""
    table = {}
    for i, node in enumerate(doc["nodes"]):
        if not isinstance(node, dict) or node.get("name") != PG_INIT:
            continue
        inputs = node.get("inputs")
        values = inputs.get("values") if isinstance(inputs, dict) else inputs
        if not isinstance(values, list) or not values:
            continue
        text = values[0]
        try:
            groups = json.loads(text) if isinstance(text, str) else text
        except ValueError:
            continue
        if isinstance(groups, dict):
            groups = list(groups.values())
        for g in groups if isinstance(groups, list) else ():
            if isinstance(g, dict) and "pg_name" in g and isinstance(g.get("ranks"), list):
                table[str(g["pg_name"])] = [int(r) for r in g["ranks"]]
    return table


def rank_calls(path, rank, doc, skipped, notes):
    pgs = _pg_table(path, doc)
    calls = []
    last_in_pg = {}
    seq = {}
    for i, node in enumerate(doc["nodes"]):
        where = "nodes[%d]" % i
        if not isinstance(node, dict) or "name" not in node:
            raise TraceError(path, where, "a node is an object with at least \"id\" and "
                             "\"name\", got %r" % (node if not isinstance(node, dict)
                                                   else sorted(node),))
        name = node["name"]
        if name != "record_param_comms":
            count(skipped, "nccl kernel nodes" if str(name).startswith("nccl:") else
                  "process group init" if name == PG_INIT else "operator/other nodes")
            continue
        where = "nodes[%d] (id %r)" % (i, node.get("id"))
        attrs = _attrs(path, where, node)
        if "collective_name" not in attrs:
            raise TraceError(path, where, "record_param_comms without a collective_name "
                             "attribute (execution traces from PyTorch >= 2.4 carry it)")
        cname = attrs["collective_name"]
        if cname in NO_DATA:
            count(skipped, "record_param_comms %s (no data)" % (cname or "unnamed"))
            continue
        op = COLLECTIVES.get(cname)
        if op is None:
            raise TraceError(path, where, "unknown collective_name %r (known: %s)"
                             % (cname, ", ".join(sorted(COLLECTIVES))))
        dname = attrs.get("dtype")
        width = dtype_bytes(TORCH_DTYPES.get(dname, dname))
        if width is None:
            raise TraceError(path, where, "unknown dtype %r" % (dname,))
        n_in = _int_attr(path, where, attrs, "in_msg_nelems", 0)
        n_out = _int_attr(path, where, attrs, "out_msg_nelems", 0)
        pg = str(attrs.get("pg_name", "0"))
        if pg in pgs:
            ranks = pgs[pg]
        else:
            size = _int_attr(path, where, attrs, "pg_size",
                             attrs.get("group_size", attrs.get("world_size")))
            start = _int_attr(path, where, attrs, "global_rank_start", 0)
            stride = _int_attr(path, where, attrs, "global_rank_stride", 1) or 1
            ranks = [start + k * stride for k in range(size)]
        if op in ("send", "recv"):
            peer_key = "dst_rank" if op == "send" else "src_rank"
            if peer_key not in attrs:
                count(skipped, "record_param_comms %s without a peer" % op)
                notes.append("%s: %s: %s skipped: the trace does not name the peer"
                             % (path, where, op))
                continue
            peer = _int_attr(path, where, attrs, peer_key)
            src, dst = (rank, peer) if op == "send" else (peer, rank)
            tag = attrs.get("tag", 0)
            k = seq.get(("p2p", src, dst, tag), 0)
            seq[("p2p", src, dst, tag)] = k + 1
            calls.append(Call(("p2p", src, dst, tag, k), "send",
                              (n_in if op == "send" else n_out or n_in) * width, path, where,
                              ranks=(src, dst), dtype=TORCH_DTYPES.get(dname, dname),
                              node_id=_node_id(node)))
            continue
        if rank not in ranks:
            raise TraceError(path, where, "process group %r has ranks %r, not this file's "
                             "rank %d" % (pg, ranks, rank))
        elems = n_out if op in OUTPUT_SIZED else n_in
        if op == "all_to_all":
            splits = attrs.get("in_split_size") or []
            if isinstance(splits, str):
                try:
                    splits = json.loads(splits)
                except ValueError:
                    splits = []
            if isinstance(splits, list) and len(set(splits)) > 1:
                notes.append("%s: %s: uneven all-to-all splits replayed as even" % (path, where))
        root = attrs.get("root_rank", ranks[0]) if op in ROOTED else None
        k = seq.get(("coll", pg), 0)
        seq[("coll", pg)] = k + 1
        deps = [(last_in_pg[pg], 0)] if pg in last_in_pg else []
        last_in_pg[pg] = len(calls)
        calls.append(Call(("coll", pg, k), op, elems * width, path, where, root=root,
                          ranks=tuple(ranks), deps=deps, dtype=TORCH_DTYPES.get(dname, dname),
                          node_id=_node_id(node)))
    return calls


def _node_id(node):
    v = node.get("id", 0)
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def read_pytorch_et(paths):
    """A ``Trace`` from per-rank PyTorch execution-trace JSON files."""
    paths = list(paths)
    rank_of = ranks_for_files(paths)
    skipped = {}
    notes = []
    calls = {}
    records = 0
    for path in paths:
        doc = _load(path)
        records += len(doc["nodes"])
        calls[rank_of[path]] = rank_calls(path, rank_of[path], doc, skipped, notes)
    colls = assemble(calls, "pytorch", need_all_ranks=False)
    if not colls:
        raise TraceError(paths[0], None, "no record_param_comms nodes with data in %d file(s) "
                         "(%d nodes skipped)" % (len(paths), sum(skipped.values())))
    return Trace(colls, "pytorch", paths, records=records, skipped=skipped, notes=notes)


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
