"""The Chakra execution-trace schema (``et_def.proto``), decoded by hand.

A ``.et`` file is a stream of varint-length-prefixed protobuf messages: one
``GlobalMetadata``, then ``Node`` messages.  The layout read here is the one every public
Chakra writer has used since October 2023 (schema "0.0.4", relabelled "1.0.0" in 2026;
no wire change since):

* ``GlobalMetadata``: 1 ``version`` (string), 2 ``attr`` (repeated AttributeProto).  The
  converters (PyTorch -> Chakra, MSCCL -> Chakra, text -> Chakra) leave ``version`` empty and
  carry the schema as the attribute ``schema`` ("1.0.2-chakra.0.0.4", "1.0.1", ...).  Files
  written between the two commits of 2023-10-10 carry the attributes in field 1; they are
  told apart from a version string by decoding.
* ``Node``: 1 ``id``, 2 ``name``, 3 ``type`` (NodeType), 4 ``ctrl_deps`` and 5 ``data_deps``
  (repeated node ids), 6 ``start_time_micros``, 7 ``duration_micros``, 8 ``inputs`` and
  9 ``outputs`` (IOInfo), 10 ``attr`` (repeated AttributeProto).
* ``AttributeProto``: 1 ``name``, 2 ``doc_string``, and one value: 3 double, 5 float, 7 int32,
  9 int64, 11 uint32, 13 uint64, 15 sint32, 17 sint64, 19 fixed32, 21 fixed64, 23 sfixed32,
  25 sfixed64, 27 bool, 29 string, 31 bytes; each even number 4..32 is the ``*_list`` form
  (a message whose field 1 repeats the element).
* NodeType: 0 INVALID, 1 METADATA, 2 MEM_LOAD, 3 MEM_STORE, 4 COMP, 5 COMM_SEND,
  6 COMM_RECV, 7 COMM_COLL.  CollectiveCommType: 0 ALL_REDUCE, 1 REDUCE, 2 ALL_GATHER,
  3 GATHER, 4 SCATTER, 5 BROADCAST, 6 ALL_TO_ALL, 7 REDUCE_SCATTER, 8 REDUCE_SCATTER_BLOCK,
  9 BARRIER.

Schemas before 0.0.4 (2023: typed node fields, other NodeType numbers) are refused by
their version string rather than misread.  ``tests/test_chakra_proto.py`` checks this
decoder against the official ``et_def.proto`` compiled by ``protoc`` when the official
schema is at hand (opt-in: GSE_THIRD_PARTY_DIR).
"""

import struct

from gse.workloads.traces import protowire as pw
from gse.workloads.traces.common import TraceError

NODE_TYPES = {0: "INVALID_NODE", 1: "METADATA_NODE", 2: "MEM_LOAD_NODE",
              3: "MEM_STORE_NODE", 4: "COMP_NODE", 5: "COMM_SEND_NODE",
              6: "COMM_RECV_NODE", 7: "COMM_COLL_NODE"}
INVALID, METADATA, MEM_LOAD, MEM_STORE, COMP, SEND, RECV, COLL = range(8)
COMM_TYPES = {0: "all_reduce", 1: "reduce", 2: "all_gather", 3: "gather", 4: "scatter",
              5: "broadcast", 6: "all_to_all", 7: "reduce_scatter", 8: "reduce_scatter",
              9: "barrier"}
COMM_TYPE_OF = {"all_reduce": 0, "reduce": 1, "all_gather": 2, "gather": 3, "scatter": 4,
                "broadcast": 5, "all_to_all": 6, "reduce_scatter": 7}
SCHEMA_VERSION = "0.0.4"
# version strings of the layouts before 0.0.4 (eg_def.proto and its successors of 2023)
OLD_VERSIONS = ("0.0.1", "0.0.2", "0.0.3")

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
    """The fields of a Chakra Node, as decoded (``extra``: numbers of unknown fields)."""

    __slots__ = ("id", "name", "type", "ctrl_deps", "data_deps", "start_us", "duration_us",
                 "has_inputs", "has_outputs", "attrs", "extra", "record", "offset")

    def __init__(self, record, offset):
        self.id = 0
        self.name = ""
        self.type = 0
        self.ctrl_deps = []
        self.data_deps = []
        self.start_us = 0
        self.duration_us = 0
        self.has_inputs = False
        self.has_outputs = False
        self.attrs = {}
        self.extra = []
        self.record = record          # 1-based position in the stream (metadata is 1)
        self.offset = offset          # byte offset of its length prefix

    @property
    def deps(self):
        return self.data_deps + self.ctrl_deps

    def where(self):
        return "record %d (node id %d%s)" % (self.record, self.id,
                                              " %r" % self.name if self.name else "")


def decode_node(buf, record, offset):
    node = EtNode(record, offset)
    for field, wtype, raw, _ in pw.iter_fields(buf):
        if field == 1 and wtype == pw.VARINT:
            node.id = raw
        elif field == 2 and wtype == pw.LEN:
            node.name = raw.decode("utf-8")
        elif field == 3 and wtype == pw.VARINT:
            node.type = raw
        elif field == 4:
            node.ctrl_deps.extend(pw.unpack_repeated(wtype, raw, "varint"))
        elif field == 5:
            node.data_deps.extend(pw.unpack_repeated(wtype, raw, "varint"))
        elif field == 6 and wtype == pw.VARINT:
            node.start_us = raw
        elif field == 7 and wtype == pw.VARINT:
            node.duration_us = raw
        elif field == 8 and wtype == pw.LEN:
            node.has_inputs = True
        elif field == 9 and wtype == pw.LEN:
            node.has_outputs = True
        elif field == 10 and wtype == pw.LEN:
            name, value = decode_attr(raw)
            node.attrs[name] = value
        else:
            node.extra.append(field)
    return node


class EtMetadata:
    """A file's GlobalMetadata: ``version`` (field 1, or None), ``attrs`` and the schema the
    file says it follows (``schema``: the version, else the ``schema`` attribute)."""

    __slots__ = ("version", "attrs", "layout")

    def __init__(self):
        self.version = None
        self.attrs = {}
        self.layout = "0.0.4"          # how the metadata was laid out (for notes)

    @property
    def schema(self):
        if self.version:
            return self.version
        s = self.attrs.get("schema")
        return s if isinstance(s, str) and s else None


def _looks_like_attr(raw):
    """True if ``raw`` (field 1 of a GlobalMetadata) is an AttributeProto, not a string."""
    try:
        fields = list(pw.iter_fields(raw))
    except pw.WireError:
        return False
    if not fields or fields[0][0] != 1 or fields[0][1] != pw.LEN:
        return False
    try:
        name = fields[0][2].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return name.isprintable() and all(f in _ATTR_SCALARS or f - 1 in _ATTR_SCALARS or f == 2
                                      for f, _, _, _ in fields[1:]) and len(fields) > 1


def decode_metadata(msg):
    """An EtMetadata, or None if ``msg`` is not a GlobalMetadata (it looks like a Node)."""
    meta = EtMetadata()
    for field, wtype, raw, _ in pw.iter_fields(msg):
        if field == 1 and wtype == pw.LEN:
            if _looks_like_attr(raw):
                name, value = decode_attr(raw)
                meta.attrs[name] = value
                meta.layout = "attributes in field 1 (2023-10-10)"
            else:
                meta.version = raw.decode("utf-8")
        elif field == 2 and wtype == pw.LEN:
            name, value = decode_attr(raw)
            meta.attrs[name] = value
        else:
            return None               # a Node (id varint, type...) or something else
    return meta


def read_et(source):
    """(EtMetadata, [EtNode]) of one ``.et`` source (``gse.workloads.traces.sources``)."""
    name = source.name
    data = source.data()
    if not data:
        raise TraceError(name, None, "empty file (a Chakra trace starts with its metadata)")
    try:
        messages = pw.split_stream(data)
    except pw.WireError as exc:
        raise TraceError(name, "at byte %d" % exc.offset,
                         "not a length-delimited protobuf stream: %s" % exc) from None
    meta = None
    nodes = []
    for i, (offset, msg) in enumerate(messages, 1):
        where = "record %d (byte %d)" % (i, offset)
        try:
            if i == 1:
                meta = decode_metadata(msg)
                if meta is None:
                    raise TraceError(name, "record 1", "the first message is not a "
                                     "GlobalMetadata (fields 1 version, 2 attr); is this a "
                                     "Chakra .et file?")
                version = meta.schema or ""
                if version.split("-")[0] in OLD_VERSIONS:
                    raise TraceError(name, "record 1", "schema %r is a Chakra layout from before "
                                     "0.0.4 (2023), with other node fields and type numbers; "
                                     "convert it with a current Chakra" % version)
            else:
                nodes.append(decode_node(msg, i, offset))
        except pw.WireError as exc:
            raise TraceError(name, where, "malformed protobuf: %s within the record"
                             % exc) from None
        except UnicodeDecodeError:
            raise TraceError(name, where, "a string field is not UTF-8") from None
    return meta, nodes


# -- encoding (writers and hand-made test traces) -------------------------------------------

def attr_body(name, value, kind=None):
    """One AttributeProto.  By default bool -> bool_val, int -> int64_val, str -> string_val,
    list of int -> int64_list, list of bool -> bool_list; ``kind`` names another value field
    ("int32", "uint64", ...) as converters write them."""
    body = pw.f_string(1, name)
    if kind is not None:
        body += _typed(kind, value)
    elif isinstance(value, bool):
        body += pw.f_varint(27, 1 if value else 0)
    elif isinstance(value, int):
        body += pw.f_varint(9, value)
    elif isinstance(value, str):
        body += pw.f_string(29, value)
    elif isinstance(value, (list, tuple)) and value and all(isinstance(v, bool) for v in value):
        body += pw.f_bytes(28, pw.f_packed_varints(1, [int(v) for v in value]))
    elif isinstance(value, (list, tuple)):
        body += pw.f_bytes(10, pw.f_packed_varints(1, list(value)))
    else:
        raise TypeError("attribute %r: cannot encode %r" % (name, value))
    return body


def attr_record(name, value, kind=None):
    """One Node.attr field (field 10) holding ``attr_body(name, value, kind)``."""
    return pw.f_bytes(10, attr_body(name, value, kind))


_TYPED = {"int32": 7, "int64": 9, "uint32": 11, "uint64": 13, "sint32": 15, "sint64": 17,
          "bool": 27, "string": 29}


def _typed(kind, value):
    field = _TYPED[kind]
    if kind == "string":
        return pw.f_string(field, value)
    if kind in ("sint32", "sint64"):
        return pw.f_varint(field, pw.zigzag_encode(value))
    return pw.f_varint(field, int(value))


def node_record(nid, name, ntype, deps=(), duration_us=0, attrs=None, ctrl_deps=(),
                start_us=0, typed=None):
    """One framed Node message (for writers and hand-made test traces).  ``deps`` are
    data_deps; ``typed`` maps attribute names to the value field to use ("int32", ...)."""
    body = pw.f_varint(1, nid) if nid else b""
    body += pw.f_string(2, name) + pw.f_varint(3, ntype)
    body += pw.f_packed_varints(4, list(ctrl_deps))
    body += pw.f_packed_varints(5, list(deps))
    if start_us:
        body += pw.f_varint(6, start_us)
    if duration_us:
        body += pw.f_varint(7, duration_us)
    typed = typed or {}
    for k, v in (attrs or {}).items():
        body += attr_record(k, v, typed.get(k))
    return pw.delimited(body)


def metadata_record(version=SCHEMA_VERSION, attrs=None):
    """The framed GlobalMetadata that starts every file: ``version`` in field 1 (as the
    Chakra generator writes it; None or "" leaves it out, as the converters do) and
    ``attrs`` in field 2 (the converters' ``schema``, ``input_file``...)."""
    body = pw.f_string(1, version) if version else b""
    for k, v in (attrs or {}).items():
        body += pw.f_bytes(2, attr_body(k, v))
    return pw.delimited(body)
