"""The project's own trace format: JSON Lines, one record per collective call.

Documented in ``docs/traces.md``.  In short::

    {"gse_trace": 1, "name": "dp-step", "groups": {"world": "0-63"}}
    {"id": 1, "op": "all_reduce", "group": "world", "bytes": 4194304, "dtype": "float32",
     "start_us": 0, "tag": "bucket0"}
    {"id": 2, "op": "all_reduce", "ranks": "0-63", "count": 1048576, "dtype": "bfloat16",
     "after": [1], "start_us": 120, "tag": "bucket1"}
    {"id": 3, "op": "all_to_all", "ranks": [0, 8, 16, 24], "bytes": 1048576,
     "after": [[2, 15.5]], "algo": "direct"}

The header line is optional; blank lines and lines starting with ``#`` are ignored; keys
starting with ``_`` are comments.  Anything else unknown is an error (a typo must not
silently change an experiment).  A collective may start at ``start_us`` and once every
collective in ``after`` is done (``[id, lag_us]`` adds compute time after that one;
``delay_us`` is the lag of the plain ids).  ``after`` names earlier records only.
"""

import json
from collections.abc import Iterable
from typing import Any

from gse.workloads.collectives import (ALGORITHMS, MAX_RANK, OPS, ROOTED, Collective,
                                       CollectiveError, check_trace)
from gse.workloads.traces.common import Trace, TraceError, dtype_bytes

FORMAT_VERSION = 1
KEYS = {"id", "op", "ranks", "group", "bytes", "count", "dtype", "algo", "root", "start_us",
        "after", "delay_us", "tag", "chunk_bytes", "splits"}
HEADER_KEYS = {"gse_trace", "name", "groups", "ranks", "description"}


def parse_ranks(spec, where):
    """A rank list: JSON list of ints, or a string of ranges ``"0-7,16-23"`` (ascending
    within a range; ``"0-63/8"`` takes every 8th)."""
    if isinstance(spec, list):
        for r in spec:
            if isinstance(r, bool) or not isinstance(r, int) or r < 0:
                raise ValueError("%s: ranks must be integers >= 0, got %r" % (where, r))
        return list(spec)
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError("%s: ranks must be a list or a range string like \"0-7\", got %r"
                         % (where, spec))
    out = []
    for part in spec.split(","):
        part = part.strip()
        step = 1
        if "/" in part:
            part, _, s = part.partition("/")
            step = _int(s, where)
        if "-" in part:
            a, _, b = part.partition("-")
            lo, hi = _int(a, where), _int(b, where)
            if hi < lo or step < 1:
                raise ValueError("%s: bad rank range %r" % (where, part))
            out.extend(range(lo, hi + 1, step))
        else:
            out.append(_int(part, where))
    return out


def _int(text, where):
    try:
        v = int(text)
    except ValueError:
        raise ValueError("%s: %r is not a rank number" % (where, text)) from None
    if not 0 <= v < MAX_RANK:
        raise ValueError("%s: rank %d is not in 0..%d" % (where, v, MAX_RANK - 1))
    return v


def _us_to_ps(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value \
            or value < 0 or value == float("inf"):
        raise ValueError("%s must be a number of microseconds >= 0, got %r" % (name, value))
    return int(round(value * 1_000_000))


def _record(obj, groups):
    """A Collective from one parsed record (raises ValueError with the field)."""
    if not isinstance(obj, dict):
        raise ValueError("a record is a JSON object, got %s" % type(obj).__name__)
    unknown = sorted(k for k in obj if k not in KEYS and not k.startswith("_"))
    if unknown:
        raise ValueError("unknown key(s) %s (known: %s)" % (", ".join(map(repr, unknown)),
                                                           ", ".join(sorted(KEYS))))
    for k in ("id", "op"):
        if k not in obj:
            raise ValueError("missing %r" % k)
    cid = obj["id"]
    if isinstance(cid, bool) or not isinstance(cid, int) or cid < 0:
        raise ValueError("id must be an integer >= 0, got %r" % (cid,))
    op = obj["op"]
    if op not in OPS:
        raise ValueError("unknown op %r (known: %s)" % (op, ", ".join(OPS)))
    if ("ranks" in obj) == ("group" in obj):
        raise ValueError("give exactly one of 'ranks' and 'group'")
    if "group" in obj:
        if obj["group"] not in groups:
            raise ValueError("group %r is not defined in the header (known: %s)"
                             % (obj["group"], ", ".join(sorted(groups)) or "none"))
        ranks = groups[obj["group"]]
    else:
        ranks = parse_ranks(obj["ranks"], "ranks")
    dtype = obj.get("dtype")
    if dtype is not None and not isinstance(dtype, str):
        raise ValueError("dtype must be a string, got %r" % (dtype,))
    splits = obj.get("splits")
    if splits is not None and (not isinstance(splits, list)
                               or not all(isinstance(row, list) for row in splits)):
        raise ValueError("splits must be a list of rows, one per rank, of the bytes it sends "
                         "to each rank, got %r" % (splits,))
    if splits is not None and "bytes" not in obj and "count" not in obj:
        size = max((sum(r) for r in splits if all(isinstance(v, int) for v in r)), default=0)
    elif ("bytes" in obj) == ("count" in obj):
        raise ValueError("give exactly one of 'bytes' and 'count' (with 'dtype')")
    elif "bytes" in obj:
        size = obj["bytes"]
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError("bytes must be an integer >= 0, got %r" % (size,))
    else:
        n = obj["count"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError("count must be an integer >= 0, got %r" % (n,))
        width = dtype_bytes(dtype)
        if width is None:
            raise ValueError("count needs a known dtype, got %r" % (dtype,))
        size = n * width
    algo = obj.get("algo")
    if algo is not None and algo not in ALGORITHMS[op]:
        raise ValueError("%s has no algorithm %r (known: %s)"
                         % (op, algo, ", ".join(ALGORITHMS[op])))
    root = obj.get("root", ranks[0] if ranks else 0)
    if op not in ROOTED and "root" in obj:
        raise ValueError("'root' is only for %s" % ", ".join(ROOTED))
    start_ps = _us_to_ps(obj.get("start_us", 0), "start_us")
    delay = _us_to_ps(obj.get("delay_us", 0), "delay_us")
    after = []
    deps = obj.get("after", [])
    if not isinstance(deps, list):
        raise ValueError("after must be a list of ids or [id, lag_us], got %r" % (deps,))
    for d in deps:
        if isinstance(d, list) and len(d) == 2:
            dep, lag = d[0], _us_to_ps(d[1], "lag in after")
        else:
            dep, lag = d, delay
        if isinstance(dep, bool) or not isinstance(dep, int):
            raise ValueError("after: %r is not a collective id" % (d,))
        after.append((dep, lag))
    tag = obj.get("tag")
    if tag is not None and not isinstance(tag, str):
        raise ValueError("tag must be a string, got %r" % (tag,))
    return Collective(cid, op, ranks, size, algo=algo, root=root, after=after,
                      start_ps=start_ps, dtype=dtype, tag=tag, chunk_bytes=obj.get("chunk_bytes"),
                      splits=splits)


def read_jsonl(path: Any) -> Trace:
    """A ``Trace`` from a project-format file (a path, or a ``Source``: gzip or an archive
    member); errors name the file and line."""
    source = path if hasattr(path, "data") else None
    path = source.name if source is not None else path
    try:
        if source is not None:
            lines = source.data().decode("utf-8").splitlines()
        else:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
    except UnicodeDecodeError as exc:
        raise TraceError(path, None, "not UTF-8 text (%s); is it a Chakra .et file? "
                         "use --format chakra" % exc.reason) from None
    groups = {}
    name = None
    colls = []
    seen: dict[int, Any] = {}
    records = 0
    first = True
    for lineno, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        where = "line %d" % lineno
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TraceError(path, where, "invalid JSON at column %d: %s"
                             % (exc.colno, exc.msg)) from None
        records += 1
        if first and isinstance(obj, dict) and "gse_trace" in obj:
            first = False
            try:
                groups, name = _header(obj)
            except ValueError as exc:
                raise TraceError(path, where + " (header)", str(exc)) from None
            continue
        first = False
        try:
            c = _record(obj, groups)
            if c.id in seen:
                raise ValueError("id %d is already used (line %d)" % (c.id, seen[c.id]))
            for dep, _ in c.after:
                if dep not in seen:
                    raise ValueError("after: %d is not the id of an earlier record" % dep)
        except (ValueError, CollectiveError) as exc:
            rid = obj.get("id") if isinstance(obj, dict) else None
            raise TraceError(path, where + ("" if rid is None else " (id %r)" % (rid,)),
                             str(exc)) from None
        c.where = "%s: line %d" % (path, lineno)     # for errors found when it runs
        seen[c.id] = lineno
        colls.append(c)
    if not colls:
        raise TraceError(path, None, "no collective records")
    return Trace(colls, "jsonl", [path], records=records, name=name)


def _header(obj):
    unknown = sorted(k for k in obj if k not in HEADER_KEYS and not k.startswith("_"))
    if unknown:
        raise ValueError("unknown header key(s) %s" % ", ".join(map(repr, unknown)))
    if obj["gse_trace"] != FORMAT_VERSION:
        raise ValueError("gse_trace version %r; this reader knows version %d"
                         % (obj["gse_trace"], FORMAT_VERSION))
    groups = {}
    raw = obj.get("groups", {})
    if not isinstance(raw, dict):
        raise ValueError("groups must be an object {name: ranks}")
    for g, spec in raw.items():
        groups[g] = parse_ranks(spec, "group %r" % g)
    return groups, obj.get("name")


def _compress(ranks):
    """A rank list as the shortest faithful spelling: "a-b" when contiguous ascending."""
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return "%d-%d" % (ranks[0], ranks[-1])
    return list(ranks)


def write_jsonl(path: str, collectives: Iterable[Collective], name: str | None = None) -> None:
    """Write collectives in the project format (with a header naming the world group)."""
    colls = list(collectives)
    check_trace(colls)
    world = sorted({r for c in colls for r in c.ranks})
    header: dict[str, Any] = {"gse_trace": FORMAT_VERSION}
    if name:
        header["name"] = name
    groups = {}
    if world == list(range(len(world))):
        groups["world"] = world
        header["groups"] = {"world": _compress(world)}
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(header) + "\n")
        for c in colls:
            d = c.as_dict()
            if groups and list(c.ranks) == groups["world"]:
                del d["ranks"]
                d = {"id": d.pop("id"), "op": d.pop("op"), "group": "world", **d}
            else:
                d["ranks"] = _compress(list(c.ranks))
            f.write(json.dumps(d) + "\n")
