"""PyTorch execution traces written as the observer would record the calls (for tests and
samples; the reader is ``gse.workloads.traces.pytorch_et``).

Only what the format can say is written: the order of calls within a process group, no
lags or start times.  An uneven all-to-all writes its split sizes (``in_split_size``,
``out_split_size``, in elements), as PyTorch records ``all_to_allv``.
"""

import json
from collections.abc import Iterable
from typing import Any

from gse.workloads.collectives import ROOTED, Collective, check_trace
from gse.workloads.traces.common import TORCH_DTYPES, dtype_bytes
from gse.workloads.traces.pytorch_et import OUTPUT_SIZED, PG_INIT

_TORCH_NAME = {v: k for k, v in TORCH_DTYPES.items()}
_WRITE_NAME = {"all_reduce": "allreduce", "reduce_scatter": "_reduce_scatter_base",
               "all_gather": "_allgather_base", "all_to_all": "all_to_all",
               "broadcast": "broadcast", "reduce": "reduce", "gather": "gather",
               "scatter": "scatter"}


def write_pytorch_et(prefix: str, collectives: Iterable[Collective]) -> list[str]:
    """One ``<prefix>.<rank>.json`` per rank, as the observer would record the calls.

    Only what the format can say is kept: the order of calls within a process group, no
    lags or start times (refused when present, as are dependencies across groups).
    """
    colls = list(collectives)
    check_trace(colls)
    groups: dict[tuple[int, ...], Any] = {}
    last: dict[Any, Any] = {}
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
                split_in, split_out = [], []
                if c.splits is not None:
                    split_in, split_out = _splits(c, rank, width, dname)
                    n_in, n_out = sum(split_in), sum(split_out)
                attrs = {"collective_name": _WRITE_NAME[c.op], "dtype": dname,
                         "in_msg_nelems": n_in, "out_msg_nelems": n_out,
                         "in_split_size": json.dumps(split_in),
                         "out_split_size": json.dumps(split_out),
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


def _splits(c, rank, width, dname):
    """An uneven all-to-all's (input, output) split sizes of ``rank``, in elements."""
    i = c.ranks.index(rank)
    row, col = c.splits[i], [r[i] for r in c.splits]
    if any(v % width for v in row + tuple(col)):
        raise ValueError("collective %d: split sizes %r are not whole numbers of %s"
                         % (c.id, [list(r) for r in c.splits], dname))
    return [v // width for v in row], [v // width for v in col]


def _type_name(v):
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "uint64"
    return "string"
