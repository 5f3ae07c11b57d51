"""Recorded and generated traces of training collectives.

``load_trace(paths, fmt="auto")`` reads any supported format into a ``Trace`` (a list of
``gse.workloads.collectives.Collective`` plus what was read, skipped and ignored, and for
formats that record compute, the per-rank programs):

* ``jsonl``: the project's own JSON Lines format (``gse.workloads.traces.jsonl``, docs/traces.md);
* ``chakra``: MLCommons Chakra execution traces, one ``.et`` file per rank
  (``gse.workloads.traces.chakra``, on a hand-written protobuf decoder of ``et_def.proto``);
* ``pytorch``: PyTorch execution-trace JSON, one file per rank, schemas 1.0.1 to 1.1.1
  (``gse.workloads.traces.pytorch_et``).

Files are read as published: plain, gzip (``.json.gz``) or in a tar archive (``.tar.gz``,
``.tgz``: every rank's file in one archive); a directory stands for the trace files in it
(``gse.workloads.traces.sources``).  Errors are ``TraceError`` and name the file and the
record.
"""

import os
from collections.abc import Iterable

from gse.workloads.traces.chakra import read_chakra, write_chakra
from gse.workloads.traces.common import Trace, TraceError
from gse.workloads.traces.jsonl import read_jsonl, write_jsonl
from gse.workloads.traces.pytorch_et import read_pytorch_et
from gse.workloads.traces.pytorch_et_writer import write_pytorch_et
from gse.workloads.traces.sources import Source, expand_sources

FORMATS = ("auto", "jsonl", "chakra", "pytorch")

__all__ = ["FORMATS", "Source", "Trace", "TraceError", "detect_format", "expand_paths",
           "expand_sources", "load_trace", "read_chakra", "read_jsonl", "read_pytorch_et",
           "write_chakra", "write_jsonl", "write_pytorch_et"]


def expand_paths(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """The names of the trace files for the given paths (archive members as
    ``archive:member``)."""
    return [s.name for s in expand_sources(paths)]


def _json_kind(head):
    """What a JSON document that starts with ``head`` is, from its first keys."""
    text = head.decode("utf-8", "replace")
    if '"traceEvents"' in text or '"distributedInfo"' in text or '"deviceProperties"' in text:
        return "kineto"
    if '"workload_graph"' in text:
        return "feeder-json"
    if '"gse_trace"' in text or '"op"' in text.split("\n", 1)[0]:
        return "jsonl"
    if '"nodes"' in text or '"schema"' in text:
        return "pytorch"
    return "jsonl"


def detect_format(source: "str | os.PathLike[str] | Source") -> str:
    """The format of one file (a path or a ``Source``), from its name, then its bytes."""
    if not isinstance(source, Source):
        source = Source(source, source)
    name = source.name
    if name.endswith(".jsonl"):
        return "jsonl"
    if name.endswith((".et", ".et.gz")):
        return "chakra"
    text = source.head().lstrip()
    if not text.startswith(b"{"):
        return "chakra"                       # binary: length-prefixed protobuf
    return _json_kind(text)


_NOT_SUPPORTED = {
    "kineto": "a Kineto (PyTorch profiler) trace, not an execution trace: it records kernels "
              "and times but not the collectives' process groups; give the execution trace "
              "(the *_et.json file) of the same run",
    "feeder-json": "a Chakra feeder JSON graph (\"workload_graph\"), not a Chakra .et or an "
                   "execution trace: convert it to .et with Chakra's tools",
}


def load_trace(paths: "str | os.PathLike[str] | Iterable[str | os.PathLike[str]]",
               fmt: str = "auto", world_size: int | None = None) -> Trace:
    """A ``Trace`` from one project-format file, or the per-rank files of a recorded run.

    ``world_size``: the number of ranks of the run when the files are fewer and the trace
    does not say (one Chakra rank's file replayed as every rank's program).
    """
    if isinstance(paths, (str, bytes, os.PathLike)):    # (PathLike: has __fspath__)
        paths = [paths]
    sources = expand_sources(list(paths))
    if not sources:
        raise TraceError("(no files)", None, "no trace files given")
    if fmt not in FORMATS:
        raise ValueError("unknown trace format %r (known: %s)" % (fmt, ", ".join(FORMATS)))
    if world_size is not None and (isinstance(world_size, bool) or not isinstance(world_size, int)
                                   or world_size < 1):
        raise ValueError("world_size must be a positive integer, got %r" % (world_size,))
    if fmt == "auto":
        kinds = {s.name: detect_format(s) for s in sources}
        for name, kind in kinds.items():
            if kind in _NOT_SUPPORTED:
                raise TraceError(name, None, _NOT_SUPPORTED[kind])
        found = sorted(set(kinds.values()))
        if len(found) > 1:
            raise TraceError(sources[0].name, None, "the files mix formats (%s); give one trace"
                             % ", ".join("%s: %s" % kv for kv in sorted(kinds.items())))
        fmt = found[0]
    if fmt == "jsonl":
        if world_size is not None:
            raise ValueError("the world size is for recorded traces whose files are fewer than "
                             "their ranks (Chakra, PyTorch); a project-format trace lists "
                             "every rank")
        if len(sources) > 1:
            raise TraceError(sources[1].name, None, "a project-format trace is one file; got %d"
                             % len(sources))
        return read_jsonl(sources[0])
    if fmt == "chakra":
        return read_chakra(sources, world_size)
    return read_pytorch_et(sources, world_size)

