"""What every trace reader shares: the ``Trace`` it returns, errors with a place, data
types, and the assembly of per-rank calls into collectives.

Recorded traces (Chakra, PyTorch) hold one file per rank, and each file lists the calls
that rank made.  A collective is the same call seen on several ranks: ``assemble`` matches
the calls by a key the reader chooses (process group and sequence number within it, or
source, destination and tag for point to point), checks that the ranks agree on what was
called, and orders and numbers the collectives 1..n so that every dependency points to an
earlier one.
"""

import heapq
import os
import re

from gse.workloads.collectives import Collective, CollectiveError, chunks


class TraceError(ValueError):
    """A trace that cannot be read; the message names the file and the record."""

    def __init__(self, path, where, problem):
        self.path = path
        self.where = where
        if where:
            super().__init__("%s: %s: %s" % (path, where, problem))
        else:
            super().__init__("%s: %s" % (path, problem))


class Trace:
    """Collectives read from one or more files, with what was read, skipped and ignored.

    ``records`` counts the records read (lines, nodes); ``skipped`` counts, by kind, the
    records that are not communication (compute, memory, metadata) or carry no data
    (barrier, wait); ``ignored`` counts, by field, what the files say and the replay does
    not use (so that nothing is dropped silently); ``notes`` are approximations and
    assumptions the reader made.  ``programs`` ({rank: Program}, or None) are the per-rank
    node graphs of formats that record compute (Chakra): the replay then runs them node by
    node instead of the collectives' ``after`` lists.
    """

    __slots__ = ("collectives", "format", "sources", "records", "skipped", "notes", "name",
                 "ignored", "programs", "schemas")

    def __init__(self, collectives, format, sources, records=0, skipped=None, notes=None,
                 name=None, ignored=None, programs=None):
        self.collectives = list(collectives)
        self.format = format
        self.sources = list(sources)
        self.records = records
        self.skipped = dict(skipped or {})
        self.notes = list(notes or ())
        self.name = name
        self.ignored = dict(ignored or {})
        self.programs = programs
        self.schemas = []

    def ranks(self):
        """Every rank that takes part in some collective, ascending."""
        return sorted({r for c in self.collectives for r in c.ranks})

    def by_id(self):
        return {c.id: c for c in self.collectives}

    def summary(self):
        ops = {}
        for c in self.collectives:
            ops[c.op] = ops.get(c.op, 0) + 1
        out = {"format": self.format, "files": self.sources, "name": self.name,
               "records": self.records, "collectives": len(self.collectives),
               "by_op": ops, "ranks": len(self.ranks()),
               "skipped": dict(self.skipped), "skipped_total": sum(self.skipped.values()),
               "ignored": dict(self.ignored), "ignored_total": sum(self.ignored.values()),
               "notes": list(self.notes)}
        if self.schemas:
            out["schemas"] = list(self.schemas)
        if self.programs is not None:
            out["programs"] = program_summary(self.programs)
        return out

    def __repr__(self):
        return "Trace(%s, %d collectives from %d file(s), %d skipped)" % (
            self.format, len(self.collectives), len(self.sources), sum(self.skipped.values()))


def program_summary(programs):
    """Counts for reports: ranks, ops by kind, compute time per stream (the most loaded
    rank's), ranks that run a copy of another's program."""
    kinds = {}
    compute = {}
    mirrored = 0
    for prog in programs.values():
        if prog.mirror_of is not None:
            mirrored += 1
        for op in prog.ops:
            kinds[op.kind] = kinds.get(op.kind, 0) + 1
        for stream, ps in prog.compute_ps().items():
            compute[stream] = max(compute.get(stream, 0), ps)
    return {"ranks": len(programs), "ops": kinds, "mirrored_ranks": mirrored,
            "compute_us_max_rank": {k: round(v / 1e6, 4) for k, v in sorted(compute.items())}}


class Tally:
    """Counts of skipped records (by kind) and ignored fields (by name), for a Trace."""

    __slots__ = ("skipped", "ignored")

    def __init__(self):
        self.skipped = {}
        self.ignored = {}

    def skip(self, kind, n=1):
        self.skipped[kind] = self.skipped.get(kind, 0) + n

    def ignore(self, field, n=1):
        self.ignored[field] = self.ignored.get(field, 0) + n

    def skipped_total(self):
        return sum(self.skipped.values())


def count(skipped, kind):
    skipped[kind] = skipped.get(kind, 0) + 1


# Bytes per element, by the names the formats use (lower case; PyTorch's "Float" etc.).
DTYPE_BYTES = {
    "float32": 4, "float": 4, "fp32": 4, "float16": 2, "half": 2, "fp16": 2,
    "bfloat16": 2, "bf16": 2, "float64": 8, "double": 8, "float8_e4m3fn": 1,
    "float8_e5m2": 1, "fp8": 1, "int8": 1, "char": 1, "uint8": 1, "byte": 1, "bool": 1,
    "int16": 2, "short": 2, "int32": 4, "int": 4, "int64": 8, "long": 8,
    "complex64": 8, "complexfloat": 8, "complex128": 16, "complexdouble": 16,
}

# PyTorch's ScalarType names as the execution trace writes them -> the project's names.
TORCH_DTYPES = {
    "Float": "float32", "Half": "float16", "BFloat16": "bfloat16", "Double": "float64",
    "Int": "int32", "Long": "int64", "Short": "int16", "Char": "int8", "Byte": "uint8",
    "Bool": "bool", "ComplexFloat": "complex64", "ComplexDouble": "complex128",
    "Float8_e4m3fn": "float8_e4m3fn", "Float8_e5m2": "float8_e5m2",
}


def dtype_bytes(name):
    """Bytes per element of a data type name, or None if unknown."""
    if not isinstance(name, str):
        return None
    low = name.strip().lower()
    for prefix in ("c10::", "torch.", "at::"):
        if low.startswith(prefix):
            low = low[len(prefix):]
    return DTYPE_BYTES.get(low)


def rank_from_path(path):
    """The rank a per-rank trace file belongs to, from its name (``x.3.et``, ``rank3.json``,
    ``trace_rank_3.json``): the last number in the base name, or None."""
    base = os.path.basename(path)
    stem = base.split(".et")[0] if base.endswith(".et") else os.path.splitext(base)[0]
    nums = re.findall(r"\d+", stem)
    return int(nums[-1]) if nums else None


def ranks_for_files(paths):
    """{path: rank}: from the file names, or the argument order if a name has no number."""
    ranks = [rank_from_path(p) for p in paths]
    if any(r is None for r in ranks) or len(set(ranks)) != len(ranks):
        if len(paths) > 1 and any(r is not None for r in ranks) and len(set(ranks)) != len(ranks):
            seen = {}
            for p, r in zip(paths, ranks):
                if r is not None and r in seen:
                    raise TraceError(p, None, "rank %d (from the file name) is also the rank of "
                                     "%s; give each rank's file once" % (r, seen[r]))
                seen[r] = p
        return {p: i for i, p in enumerate(paths)}
    return dict(zip(paths, ranks))


NPUS = re.compile(r"(?<![0-9])([0-9]+)npus(?![a-z])")


def check_rank_files(calls_by_rank):
    """A trace of one file per rank (Chakra) must hold every rank's file, and only those.

    Its collectives name no group: the group of a call is the ranks whose files hold it,
    so a missing or extra file would silently change every collective's size.  Refused:
    rank numbers that are not 0..N-1 (a gap is a missing file), and a file count that
    disagrees with the NPU count the trace's own node names state (ASTRA-sim's
    microbenchmarks name theirs ``all_reduce_8npus_1MB``)."""
    ranks = sorted(calls_by_rank)
    path = next((c.path for r in ranks for c in calls_by_rank[r]), None) or "(trace)"
    for i, r in enumerate(ranks):
        if r != i:
            raise TraceError(path, None, "the rank files are ranks %s but rank %d has none; "
                             "give the file of every rank, 0..N-1"
                             % (rank_span(ranks), i))
    stated = {}
    for r in ranks:
        for c in calls_by_rank[r]:
            m = NPUS.search(c.tag or "")
            if m:
                stated.setdefault(int(m.group(1)), (c.path, c.where, c.tag))
    if len(stated) == 1:
        npus, (p, where, tag) = next(iter(stated.items()))
        if npus != len(ranks):
            raise TraceError(p, where, "node %r says %d NPUs but %d rank files were given "
                             "(ranks %s); give exactly the files of one run"
                             % (tag, npus, len(ranks), rank_span(ranks)))


def rank_span(ranks):
    """Ranks for a message: "0..7" when contiguous, else listed."""
    ranks = list(ranks)
    if ranks and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return "%d..%d" % (ranks[0], ranks[-1])
    return ", ".join(map(str, ranks))


class Call:
    """One rank's record of one collective call, before the ranks are matched."""

    __slots__ = ("key", "op", "size", "root", "ranks", "algo", "deps", "start_ps", "dtype",
                 "tag", "node_id", "path", "where", "splits")

    def __init__(self, key, op, size, path, where, root=None, ranks=None, algo=None,
                 deps=(), start_ps=0, dtype=None, tag=None, node_id=0, splits=None):
        self.key = key
        self.op = op
        self.size = size
        self.root = root
        self.ranks = ranks        # explicit group in ring order, or None: the ranks seen
        self.algo = algo
        self.deps = list(deps)    # [(index of an earlier call of this rank, lag ps)]
        self.start_ps = start_ps
        self.dtype = dtype
        self.tag = tag
        self.node_id = node_id
        self.path = path
        self.where = where
        self.splits = splits      # uneven all-to-all: (bytes sent to, bytes received from
        #                           each rank of the group), either None if not recorded


def uneven_splits(seen, group):
    """(size, splits, note) of an all-to-all from its ranks' calls: (``Call.size``, None,
    None) when the recorded split sizes are even or absent, else the largest send buffer
    and the matrix ``splits[i][j]`` (bytes from group position i to position j).

    A rank's row is its recorded input splits; a rank's output splits (what it receives
    from each rank) must agree with the senders' rows.  A rank of the group whose input
    splits are not recorded (no file) sends what the receivers' output splits say, else
    what the first recorded rank sends (SPMD), and the note says so."""
    calls = {r: c for r, _, c in seen if c.splits is not None}
    if not calls:
        return seen[0][2].size, None, None
    n = len(group)
    rep_rank, rep_call = next(((r, c) for r, c in calls.items() if c.splits[0] is not None),
                              (seen[0][0], seen[0][2]))
    rep_row = rep_call.splits[0] if rep_call.splits is not None and rep_call.splits[0] \
        else chunks(rep_call.size, n)
    rows = [None] * n
    for i, r in enumerate(group):
        if r in calls and calls[r].splits[0] is not None:
            rows[i] = list(calls[r].splits[0])
    copied = []
    for i, r in enumerate(group):
        if rows[i] is not None:
            continue
        row = []
        for j, rj in enumerate(group):
            col = calls[rj].splits[1] if rj in calls else None
            row.append(col[i] if col is not None else rep_row[j])
        rows[i] = row
        copied.append(r)
    for j, rj in enumerate(group):
        c = calls.get(rj)
        col = c.splits[1] if c is not None else None
        if col is None:
            continue
        for i, ri in enumerate(group):
            if ri in calls and rows[i][j] != col[i]:
                raise TraceError(c.path, c.where, "rank %d's all-to-all receives %d bytes from "
                                 "rank %d (its output splits) but rank %d's call sends it %d "
                                 "(%s, %s)" % (rj, col[i], ri, ri, rows[i][j], calls[ri].path,
                                               calls[ri].where))
    flat = {v for row in rows for v in row}
    if len(flat) == 1:
        return sum(rows[0]), None, None
    note = None
    if copied:
        note = ("%s: %s: what ranks %s send in this uneven all-to-all is not recorded (no "
                "file): taken from the receivers' output splits, else from rank %d's (SPMD)"
                % (rep_call.path, rep_call.where, rank_span(copied), rep_rank))
    return max(sum(row) for row in rows), tuple(tuple(row) for row in rows), note


def assemble(calls_by_rank, fmt, need_all_ranks):
    """(collectives, notes) from {rank: [Call]} (each list in the rank's own issue order).

    ``need_all_ranks``: the group of a call without explicit ``ranks`` is the set of ranks
    whose files hold it, so it must appear in at least two files (Chakra); with explicit
    ranks (PyTorch process groups) a rank without a file is assumed to make the same calls.
    """
    inst = {}                                   # key -> [(rank, position, Call)]
    order = []
    notes = []
    for rank in sorted(calls_by_rank):
        for pos, call in enumerate(calls_by_rank[rank]):
            lst = inst.get(call.key)
            if lst is None:
                lst = inst[call.key] = []
                order.append(call.key)
            lst.append((rank, pos, call))
    groups = {}
    for key in order:
        seen = inst[key]
        r0, _, c0 = seen[0]
        for r, _, c in seen[1:]:
            for what, a, b in (("op", c0.op, c.op), ("bytes", c0.size, c.size),
                               ("root", c0.root, c.root), ("ranks", c0.ranks, c.ranks)):
                if a != b and not (what == "bytes" and c.splits is not None):
                    raise TraceError(c.path, c.where, "rank %d's call does not match rank %d's "
                                     "(%s, %s): %s %r vs %r" % (r, r0, c0.path, c0.where, what,
                                                               b, a))
        present = [r for r, _, _ in seen]
        if c0.ranks is not None:
            missing = [r for r in present if r not in c0.ranks]
            if missing:
                raise TraceError(c0.path, c0.where, "rank %d has this call but is not in its "
                                 "group %r" % (missing[0], list(c0.ranks)))
            group = tuple(c0.ranks)
            lacking = [r for r in group if calls_by_rank.get(r) and r not in present]
            if lacking:
                r = lacking[0]
                raise TraceError(c0.path, c0.where, "rank %d's file (%s) does not hold this %s "
                                 "of its group %s, which rank %d's file holds: files of "
                                 "different runs, or one cut short?" % (
                                     r, calls_by_rank[r][0].path, c0.op, rank_span(group), r0))
        else:
            group = tuple(present)
            if need_all_ranks and len(group) < 2 and c0.op != "send":
                raise TraceError(c0.path, c0.where, "this %s appears only in rank %d's file; "
                                 "give the file of every rank (one per rank)" % (c0.op, r0))
        groups[key] = group
    # order: dependencies first; ties by the smallest node id, then rank and position
    index = {key: i for i, key in enumerate(order)}
    deps = {key: {} for key in order}
    for rank, calls in calls_by_rank.items():
        for call in calls:
            d = deps[call.key]
            for j, lag in call.deps:
                dk = calls[j].key
                if dk == call.key:
                    continue
                d[dk] = max(d.get(dk, 0), lag)
    waiting = {key: len(deps[key]) for key in order}
    users = {key: [] for key in order}
    for key in order:
        for dk in deps[key]:
            users[dk].append(key)

    def prio(key):
        seen = inst[key]
        return (min(c.node_id for _, _, c in seen), min(r for r, _, _ in seen),
                min(p for _, p, _ in seen), index[key])

    heap = [(prio(k), k) for k in order if waiting[k] == 0]
    heapq.heapify(heap)
    ids = {}
    out = []
    while heap:
        _, key = heapq.heappop(heap)
        ids[key] = len(out) + 1
        out.append(key)
        for u in users[key]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(heap, (prio(u), u))
    if len(out) != len(order):
        stuck = [k for k in order if k not in ids][0]
        _, _, c = inst[stuck][0]
        raise TraceError(c.path, c.where, "the dependencies between ranks form a cycle "
                         "through this call")
    colls = []
    for key in out:
        seen = inst[key]
        c0 = seen[0][2]
        size, splits = c0.size, None
        if c0.op == "all_to_all":
            size, splits, note = uneven_splits(seen, groups[key])
            if note:
                notes.append(note)
        try:
            colls.append(Collective(
                ids[key], c0.op, groups[key], size, algo=c0.algo, splits=splits,
                root=c0.root if c0.root is not None else groups[key][0],
                after=sorted((ids[dk], lag) for dk, lag in deps[key].items()),
                start_ps=max(c.start_ps for _, _, c in seen), dtype=c0.dtype, tag=c0.tag,
                where="%s: %s" % (c0.path, c0.where)))
        except CollectiveError as exc:
            raise TraceError(c0.path, c0.where, str(exc)) from None
    return colls, notes
