"""Recorded and generated traces of training collectives.

``load_trace(paths, fmt="auto")`` reads any supported format into a ``Trace`` (a list of
``gse.workloads.collectives.Collective`` plus what was read and skipped):

* ``jsonl``: the project's own JSON Lines format (``gse.workloads.traces.jsonl``, docs/traces.md);
* ``chakra``: MLCommons Chakra execution traces, one ``.et`` file per rank
  (``gse.workloads.traces.chakra``, a hand-written protobuf decoder);
* ``pytorch``: PyTorch execution-trace JSON, one file per rank
  (``gse.workloads.traces.pytorch_et``).

A directory stands for the trace files in it (``*.et``, or ``*.json``).  Errors are
``TraceError`` and name the file and the record.
"""

import os

from gse.workloads.traces.chakra import read_chakra, write_chakra
from gse.workloads.traces.common import Trace, TraceError
from gse.workloads.traces.jsonl import read_jsonl, write_jsonl
from gse.workloads.traces.pytorch_et import read_pytorch_et, write_pytorch_et

FORMATS = ("auto", "jsonl", "chakra", "pytorch")

__all__ = ["FORMATS", "Trace", "TraceError", "detect_format", "expand_paths", "load_trace",
           "read_chakra", "read_jsonl", "read_pytorch_et", "write_chakra", "write_jsonl",
           "write_pytorch_et"]


def expand_paths(paths):
    """Files for the given paths: a directory becomes its ``.et`` (else ``.json``, else
    ``.jsonl``) files."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            names = sorted(os.listdir(p))
            for ext in (".et", ".json", ".jsonl"):
                found = [os.path.join(p, n) for n in names if n.endswith(ext)]
                if found:
                    out.extend(found)
                    break
            else:
                raise TraceError(p, None, "directory holds no .et, .json or .jsonl trace files")
        elif not os.path.exists(p):
            raise TraceError(p, None, "no such file")
        else:
            out.append(p)
    return out


def detect_format(path):
    """The format of one file, from its name and then its first bytes."""
    if path.endswith(".jsonl"):
        return "jsonl"
    if path.endswith(".et"):
        return "chakra"
    with open(path, "rb") as f:
        head = f.read(4096)
    text = head.lstrip()
    if not text.startswith(b"{"):
        return "chakra"                       # binary: length-prefixed protobuf
    if b'"gse_trace"' in head or b'"op"' in head.split(b"\n", 1)[0]:
        return "jsonl"
    return "pytorch" if b'"nodes"' in head or b'"schema"' in head else "jsonl"


def load_trace(paths, fmt="auto"):
    """A ``Trace`` from one project-format file, or the per-rank files of a recorded run."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = expand_paths([os.fspath(p) for p in paths])
    if not paths:
        raise TraceError("(no files)", None, "no trace files given")
    if fmt not in FORMATS:
        raise ValueError("unknown trace format %r (known: %s)" % (fmt, ", ".join(FORMATS)))
    if fmt == "auto":
        kinds = {p: detect_format(p) for p in paths}
        found = sorted(set(kinds.values()))
        if len(found) > 1:
            raise TraceError(paths[0], None, "the files mix formats (%s); give one trace"
                             % ", ".join("%s: %s" % kv for kv in sorted(kinds.items())))
        fmt = found[0]
    if fmt == "jsonl":
        if len(paths) > 1:
            raise TraceError(paths[1], None, "a project-format trace is one file; got %d"
                             % len(paths))
        return read_jsonl(paths[0])
    if fmt == "chakra":
        return read_chakra(paths)
    return read_pytorch_et(paths)
