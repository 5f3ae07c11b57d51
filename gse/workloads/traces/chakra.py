"""MLCommons Chakra execution traces (``.et``): reader and writer, from the public schema.

A Chakra trace is one file per rank.  Each file is a stream of length-delimited protobuf
messages (``protowire``): a ``GlobalMetadata`` (field 1: schema version), then ``Node``
messages.  The fields used here, from ``et_def.proto`` (schema 0.0.4):

* Node: 1 id, 2 name, 3 type (NodeType), 4 ctrl_deps and 5 data_deps (repeated node ids),
  7 duration_micros, 10 attr (repeated AttributeProto); inputs, outputs and storage are
  skipped.
* AttributeProto: 1 name and one value field, e.g. 9 int64_val, 13 uint64_val,
  27 bool_val, 29 string_val, and the ``*_list`` forms (a message of repeated field 1).
* NodeType: 4 COMP, 5 COMM_SEND, 6 COMM_RECV, 7 COMM_COLL (others are skipped and
  counted).  A COMM_COLL node has the attributes ``comm_type`` (CollectiveCommType:
  0 ALL_REDUCE, 1 REDUCE, 2 ALL_GATHER, 3 GATHER, 4 SCATTER, 5 BROADCAST, 6 ALL_TO_ALL,
  7 REDUCE_SCATTER, 8 REDUCE_SCATTER_BLOCK, 9 BARRIER) and ``comm_size`` (bytes),
  optionally ``pg_name``; COMM_SEND has ``comm_dst``, COMM_RECV ``comm_src``, both
  ``comm_size`` and optionally ``comm_tag``.

Reading: a file's rank is the number in its name (``all_reduce.3.et``).  The nodes of a
rank form a DAG; every node that is not communication (compute, memory, metadata) and
every barrier is skipped and counted, but its duration is kept: a collective depends on
the nearest communication nodes above it, each with the longest chain of compute time in
between as the lag, and compute reachable from no communication node delays its start.
The k-th collective of process group ``pg_name`` on each rank is one collective whose
group is the ranks holding it (so give every rank's file); send and recv are matched by
(source, destination, tag, order).

Attributes the project writes beyond the schema's usual set, and reads when present:
``pg_ranks`` (int64 list: the group in ring order when it is not ascending), ``comm_root``
(root rank of broadcast/reduce/gather/scatter; default the group's first rank) and
``comm_algo`` (algorithm name).
"""

import os
import struct

from gse.workloads.collectives import ALGORITHMS, ROOTED, check_trace
from gse.workloads.traces import protowire as pw
from gse.workloads.traces.common import Call, Trace, TraceError, assemble, count, ranks_for_files

NODE_TYPES = {0: "INVALID_NODE", 1: "METADATA_NODE", 2: "MEM_LOAD_NODE",
              3: "MEM_STORE_NODE", 4: "COMP_NODE", 5: "COMM_SEND_NODE",
              6: "COMM_RECV_NODE", 7: "COMM_COLL_NODE", 8: "STORAGE_NODE", 9: "BATCH_NODE",
              10: "CHECKPOINT_NODE"}
COMP, SEND, RECV, COLL = 4, 5, 6, 7
COMM_TYPES = {0: "all_reduce", 1: "reduce", 2: "all_gather", 3: "gather", 4: "scatter",
              5: "broadcast", 6: "all_to_all", 7: "reduce_scatter", 8: "reduce_scatter",
              9: "barrier"}
COMM_TYPE_OF = {"all_reduce": 0, "reduce": 1, "all_gather": 2, "gather": 3, "scatter": 4,
                "broadcast": 5, "all_to_all": 6, "reduce_scatter": 7}
SCHEMA_VERSION = "0.0.4"

# AttributeProto value fields: number -> (wire storage, conversion).  List forms are the
# next field number (a message whose field 1 repeats the element).
_ATTR_SCALARS = {3: ("i64", "double"), 5: ("i32", "float"), 7: ("varint", "int"),
                 9: ("varint", "int"), 11: ("varint", "uint"), 13: ("varint", "uint"),
                 15: ("varint", "sint"), 17: ("varint", "sint"), 19: ("i32", "uint"),
                 21: ("i64", "uint"), 23: ("i32", "sfixed32"), 25: ("i64", "sfixed64"),
                 27: ("varint", "bool"), 29: ("len", "string"), 31: ("len", "bytes")}
_WIRE_OF = {"varint": pw.VARINT, "i64": pw.I64, "i32": pw.I32, "len": pw.LEN}


def _convert(conv, raw):
    if conv == "int":
        return pw.to_signed64(raw)
    if conv == "uint":
        return raw
    if conv == "sint":
        return pw.zigzag_decode(raw)
    if conv == "bool":
        return bool(raw)
    if conv == "double":
        return struct.unpack("<d", struct.pack("<Q", raw))[0]
    if conv == "float":
        return struct.unpack("<f", struct.pack("<I", raw))[0]
    if conv == "sfixed32":
        return raw - (1 << 32) if raw >= 1 << 31 else raw
    if conv == "sfixed64":
        return raw - (1 << 64) if raw >= 1 << 63 else raw
    if conv == "string":
        return raw.decode("utf-8")
    return raw


def decode_attr(buf):
    """(name, value) of one AttributeProto."""
    name = ""
    value = None
    for field, wtype, raw, at in pw.iter_fields(buf):
        if field == 1 and wtype == pw.LEN:
            name = raw.decode("utf-8")
        elif field == 2:
            continue
        elif field in _ATTR_SCALARS:
            storage, conv = _ATTR_SCALARS[field]
            if wtype != _WIRE_OF[storage]:
                raise pw.WireError("attribute value field %d has wire type %d" % (field, wtype),
                                   at)
            value = _convert(conv, raw)
        elif field - 1 in _ATTR_SCALARS and wtype == pw.LEN:
            storage, conv = _ATTR_SCALARS[field - 1]
            value = []
            for f2, w2, raw2, _ in pw.iter_fields(raw):
                if f2 != 1:
                    continue
                if storage == "len":
                    value.append(_convert(conv, raw2))
                else:
                    value.extend(_convert(conv, v) for v in pw.unpack_repeated(w2, raw2, storage))
    return name, value


class EtNode:
    """The fields of a Chakra Node that replay needs."""

    __slots__ = ("id", "name", "type", "deps", "duration_us", "attrs", "record", "offset")

    def __init__(self, record, offset):
        self.id = 0
        self.name = ""
        self.type = 0
        self.deps = []
        self.duration_us = 0
        self.attrs = {}
        self.record = record          # 1-based position in the stream (metadata is 1)
        self.offset = offset          # byte offset of its length prefix


def decode_node(buf, record, offset):
    node = EtNode(record, offset)
    for field, wtype, raw, _ in pw.iter_fields(buf):
        if field == 1 and wtype == pw.VARINT:
            node.id = raw
        elif field == 2 and wtype == pw.LEN:
            node.name = raw.decode("utf-8")
        elif field == 3 and wtype == pw.VARINT:
            node.type = raw
        elif field in (4, 5):
            node.deps.extend(pw.unpack_repeated(wtype, raw, "varint"))
        elif field == 7 and wtype == pw.VARINT:
            node.duration_us = raw
        elif field == 10 and wtype == pw.LEN:
            name, value = decode_attr(raw)
            node.attrs[name] = value
    return node


def read_et_file(path):
    """(schema version, [EtNode]) of one ``.et`` file."""
    with open(path, "rb") as f:
        data = f.read()
    if not data:
        raise TraceError(path, None, "empty file (a Chakra trace starts with its metadata)")
    try:
        messages = pw.split_stream(data)
    except pw.WireError as exc:
        raise TraceError(path, "at byte %d" % exc.offset,
                         "not a length-delimited protobuf stream: %s" % exc) from None
    version = None
    nodes = []
    for i, (offset, msg) in enumerate(messages, 1):
        where = "record %d (byte %d)" % (i, offset)
        try:
            if i == 1:
                for field, wtype, raw, _ in pw.iter_fields(msg):
                    if field == 1 and wtype == pw.LEN:
                        version = raw.decode("utf-8")
            else:
                nodes.append(decode_node(msg, i, offset))
        except pw.WireError as exc:
            raise TraceError(path, where, "malformed protobuf: %s within the record"
                             % exc) from None
        except UnicodeDecodeError:
            raise TraceError(path, where, "a string field is not UTF-8") from None
    if version is None:
        raise TraceError(path, "record 1", "the first message is not a GlobalMetadata with a "
                         "schema version; is this a Chakra .et file?")
    return version, nodes


def _attr_int(path, node, name, required=True, default=None):
    v = node.attrs.get(name)
    where = "record %d (node id %d %r)" % (node.record, node.id, node.name)
    if v is None:
        if required:
            raise TraceError(path, where, "%s node without the %r attribute"
                             % (NODE_TYPES.get(node.type, node.type), name))
        return default
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise TraceError(path, where, "attribute %r must be an integer >= 0, got %r" % (name, v))
    return v


def rank_calls(path, rank, nodes, skipped):
    """The Calls of one rank, in dependency order, with lags from the compute between."""
    by_id = {}
    for n in nodes:
        if n.id in by_id:
            raise TraceError(path, "record %d" % n.record, "node id %d is also record %d"
                             % (n.id, by_id[n.id].record))
        by_id[n.id] = n
    parents = {}
    users = {n.id: [] for n in nodes}
    for n in nodes:
        ps = []
        for d in n.deps:
            if d not in by_id:
                raise TraceError(path, "record %d (node id %d)" % (n.record, n.id),
                                 "depends on node %d, which is not in the file" % d)
            if d != n.id and d not in ps:
                ps.append(d)
                users[d].append(n.id)
        parents[n.id] = ps
    waiting = {nid: len(ps) for nid, ps in parents.items()}
    ready = [n.id for n in nodes if waiting[n.id] == 0]
    order = []
    while ready:                       # Kahn, keeping file order among ready nodes
        ready.sort(key=lambda i: by_id[i].record)
        nid = ready.pop(0)
        order.append(nid)
        for u in users[nid]:
            waiting[u] -= 1
            if waiting[u] == 0:
                ready.append(u)
    if len(order) != len(nodes):
        stuck = next(n for n in nodes if waiting[n.id] > 0)
        raise TraceError(path, "record %d (node id %d)" % (stuck.record, stuck.id),
                         "the node dependencies form a cycle")
    reach = {}                         # node -> {comm node: lag ps}
    root = {}                          # node -> compute ps from the start, or None
    calls = []
    call_of = {}
    seq = {}
    for nid in order:
        n = by_id[nid]
        r = {}
        base = 0 if not parents[nid] else None
        for p in parents[nid]:
            if p in call_of:
                r[p] = max(r.get(p, 0), 0)
                continue
            dur = by_id[p].duration_us * 1_000_000
            for a, lag in reach[p].items():
                if lag + dur > r.get(a, -1):
                    r[a] = lag + dur
            if root[p] is not None and (base is None or root[p] + dur > base):
                base = root[p] + dur
        call = _call(path, rank, n, seq, skipped)
        if call is None:
            reach[nid] = r
            root[nid] = base
            continue
        call.deps = [(call_of[a], lag) for a, lag in r.items()]
        call.start_ps = base or 0
        call_of[nid] = len(calls)
        calls.append(call)
        reach[nid] = {}
        root[nid] = None
    return calls


def _call(path, rank, n, seq, skipped):
    """A Call for a communication node, or None (counted in ``skipped``)."""
    where = "record %d (node id %d)" % (n.record, n.id)
    if n.type == COLL:
        ctype = _attr_int(path, n, "comm_type")
        op = COMM_TYPES.get(ctype)
        if op is None:
            raise TraceError(path, where, "unknown comm_type %d" % ctype)
        if op == "barrier":
            count(skipped, "COMM_COLL_NODE barrier (no data)")
            return None
        size = _attr_int(path, n, "comm_size")
        pg = n.attrs.get("pg_name") or ""
        k = seq.get(("coll", pg), 0)
        seq[("coll", pg)] = k + 1
        ranks = n.attrs.get("pg_ranks")
        if ranks is not None:
            if not isinstance(ranks, list) or rank not in ranks:
                raise TraceError(path, where, "pg_ranks %r must list this file's rank %d"
                                 % (ranks, rank))
            ranks = tuple(ranks)
        algo = n.attrs.get("comm_algo")
        if algo is not None and algo not in ALGORITHMS[op]:
            raise TraceError(path, where, "comm_algo %r is not an algorithm of %s" % (algo, op))
        root = _attr_int(path, n, "comm_root", required=False) if op in ROOTED else None
        return Call(("coll", pg, k), op, size, path, where, root=root, ranks=ranks, algo=algo,
                    tag=n.name or None, node_id=n.id)
    if n.type in (SEND, RECV):
        size = _attr_int(path, n, "comm_size")
        tag = _attr_int(path, n, "comm_tag", required=False, default=0)
        if n.type == SEND:
            src, dst = rank, _attr_int(path, n, "comm_dst")
        else:
            src, dst = _attr_int(path, n, "comm_src"), rank
        if src == dst:
            raise TraceError(path, where, "send/recv between rank %d and itself" % rank)
        k = seq.get(("p2p", src, dst, tag), 0)
        seq[("p2p", src, dst, tag)] = k + 1
        return Call(("p2p", src, dst, tag, k), "send", size, path, where, ranks=(src, dst),
                    tag=n.name or None, node_id=n.id)
    count(skipped, NODE_TYPES.get(n.type, "node type %d" % n.type))
    return None


def read_chakra(paths):
    """A ``Trace`` from the per-rank ``.et`` files of one run."""
    paths = list(paths)
    rank_of = ranks_for_files(paths)
    skipped = {}
    calls = {}
    records = 0
    versions = set()
    for path in paths:
        version, nodes = read_et_file(path)
        versions.add(version)
        records += len(nodes)
        calls[rank_of[path]] = rank_calls(path, rank_of[path], nodes, skipped)
    notes = []
    if versions - {SCHEMA_VERSION}:
        notes.append("schema version(s) %s; this reader follows %s"
                     % (", ".join(sorted(versions)), SCHEMA_VERSION))
    colls = assemble(calls, "chakra", need_all_ranks=True)
    if not colls:
        raise TraceError(paths[0], None, "no communication nodes in %d file(s) (%d nodes "
                         "skipped)" % (len(paths), sum(skipped.values())))
    return Trace(colls, "chakra", paths, records=records, skipped=skipped, notes=notes)


# -- writing --------------------------------------------------------------------------------

def attr_record(name, value):
    """One Node.attr field: bool -> bool_val, int -> int64_val, str -> string_val,
    list of int -> int64_list."""
    body = pw.f_string(1, name)
    if isinstance(value, bool):
        body += pw.f_varint(27, 1 if value else 0)
    elif isinstance(value, int):
        body += pw.f_varint(9, value)
    elif isinstance(value, str):
        body += pw.f_string(29, value)
    elif isinstance(value, (list, tuple)):
        body += pw.f_bytes(10, pw.f_packed_varints(1, list(value)))
    else:
        raise TypeError("attribute %r: cannot encode %r" % (name, value))
    return pw.f_bytes(10, body)


def node_record(nid, name, ntype, deps=(), duration_us=0, attrs=None, ctrl_deps=()):
    """One framed Node message (for writers and hand-made test traces)."""
    body = pw.f_varint(1, nid) if nid else b""
    body += pw.f_string(2, name) + pw.f_varint(3, ntype)
    body += pw.f_packed_varints(4, list(ctrl_deps))
    body += pw.f_packed_varints(5, list(deps))
    if duration_us:
        body += pw.f_varint(7, duration_us)
    for k, v in (attrs or {}).items():
        body += attr_record(k, v)
    return pw.delimited(body)


def metadata_record(version=SCHEMA_VERSION):
    """The framed GlobalMetadata that starts every file."""
    return pw.delimited(pw.f_string(1, version))


def _whole_us(ps, what):
    if ps % 1_000_000:
        raise ValueError("%s of %d ps is not a whole number of microseconds, which Chakra's "
                         "duration_micros cannot hold" % (what, ps))
    return ps // 1_000_000


def write_chakra(prefix, collectives):
    """Write one ``<prefix>.<rank>.et`` per rank; returns the paths.

    Every collective becomes a communication node (node id = collective id) in the file of
    each of its ranks; a lag or a start time becomes a COMP node with that duration.  A
    dependency on a collective the rank does not take part in cannot be said in Chakra's
    per-rank graphs and is refused.
    """
    colls = list(collectives)
    check_trace(colls)
    by_id = {c.id: c for c in colls}
    world = sorted({r for c in colls for r in c.ranks})
    next_id = [max(by_id) + 1]
    pg_names = {}
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
            attrs = {"is_cpu_op": False, "comm_type": COMM_TYPE_OF[c.op], "comm_size": c.size}
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
