"""Where trace bytes come from: plain files, gzip files and tar archives, as published.

Recorded traces ship compressed: param's execution traces are ``.json.gz`` and
``.tar.gz`` (one archive holding every rank's file), Chakra's test traces ``.tar.gz`` or
``.tgz``.  ``expand_sources(paths)`` turns what the user names into ``Source`` objects --
a name for messages (``archive.tar.gz:dir/rank0.json`` for an archive member) and the
bytes -- so that every reader works on the files unmodified, never on an unpacked copy.

A directory stands for its trace files: the ``.et`` files if it holds any, else the
``.json`` (plain or gzip), else the ``.jsonl``, else its archives.  Archive members that
are not traces (an execution trace's Triton kernels, READMEs) are left out and counted in
``Source.skipped_members`` of the archive's sources.
"""

import gzip
import os
import tarfile
import zlib
from collections.abc import Iterable

from gse.workloads.traces.common import TraceError

GZIP_MAGIC = b"\x1f\x8b"
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")
TRACE_SUFFIXES = (".et", ".json", ".jsonl", ".json.gz", ".et.gz")
MAX_MEMBER_BYTES = 1 << 31          # a member larger than this is not a trace we can read


class Source:
    """One trace file: ``name`` (for messages), ``path`` (the file on disk it came from) and
    its bytes (``data()``, decompressed)."""

    __slots__ = ("name", "path", "_data", "skipped_members")

    def __init__(self, name, path, data=None):
        self.name = name
        self.path = path
        self._data = data
        self.skipped_members = 0

    def data(self):
        if self._data is None:
            self._data = _read_file(self.path)
        return self._data

    def head(self, n=4096):
        """The first bytes, without reading a whole plain file."""
        if self._data is not None:
            return self._data[:n]
        with open(self.path, "rb") as f:
            raw = f.read(n)
        if raw.startswith(GZIP_MAGIC):
            return self.data()[:n]
        return raw

    def __repr__(self):
        return "Source(%r)" % self.name


def _read_file(path):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise TraceError(path, None, "cannot read: %s" % exc.strerror) from None
    if raw.startswith(GZIP_MAGIC) and not _is_tar_name(path):
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceError(path, None, "a gzip file that does not decompress: %s" % exc) \
                from None
    return raw


def _is_tar_name(path):
    return path.endswith(ARCHIVE_SUFFIXES)


def _trace_name(name):
    return name.endswith(TRACE_SUFFIXES)


# what a damaged archive raises while it is read: tarfile's errors, a gzip stream that
# ends early (EOFError), bad compressed data (zlib.error), bad gzip framing (OSError)
_DAMAGED = (tarfile.TarError, EOFError, OSError, zlib.error)
END_BLOCK = 512                     # tar ends with zero blocks of this size (POSIX: two)


def _damaged(exc):
    return "the archive ends early or is damaged (truncated?): %s" % (
        str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


def _members(tar, path):
    """The archive's members, read to its end: a TraceError naming the last member read
    if the archive is cut short, including a plain tar cut between two members (its
    end-of-archive blocks are missing, which tarfile alone does not notice)."""
    members = []
    try:
        while True:
            m = tar.next()
            if m is None:
                break
            members.append(m)
        tar.fileobj.seek(tar.offset)
        tail = tar.fileobj.read(END_BLOCK)
    except _DAMAGED as exc:
        where = "in or after member %r" % members[-1].name if members else "in its first member"
        raise TraceError(path, where, _damaged(exc)) from None
    if members and (len(tail) < END_BLOCK or tail.strip(b"\0")):
        raise TraceError(path, "after member %r" % members[-1].name, "the archive ends "
                         "without tar's end-of-archive blocks: it is truncated (a member "
                         "may be missing)")
    return members


def archive_sources(path):
    """The trace members of a tar archive (gzip or plain), in name order.  A truncated or
    damaged archive is a TraceError naming the archive and the member."""
    try:
        tar = tarfile.open(path, "r:*")
    except _DAMAGED as exc:
        raise TraceError(path, None, "not a readable tar archive: %s" % exc) from None
    out = []
    skipped = 0
    with tar:
        members = sorted((m for m in _members(tar, path) if m.isfile()), key=lambda m: m.name)
        for m in members:
            base = os.path.basename(m.name)
            if base.startswith(".") or not _trace_name(base):
                skipped += 1
                continue
            name = "%s:%s" % (path, m.name)
            if m.size > MAX_MEMBER_BYTES:
                raise TraceError(name, None, "member of %d bytes is too large to be read"
                                 % m.size)
            try:
                raw = tar.extractfile(m).read()
            except _DAMAGED as exc:
                raise TraceError(name, None, _damaged(exc)) from None
            if raw.startswith(GZIP_MAGIC):
                try:
                    raw = gzip.decompress(raw)
                except (OSError, EOFError, zlib.error) as exc:
                    raise TraceError(name, None, "a gzip member that does not decompress: %s"
                                     % exc) from None
            out.append(Source(name, path, raw))
    if not out:
        raise TraceError(path, None, "the archive holds no trace files (.et, .json, .jsonl; "
                         "%d other member(s))" % skipped)
    for s in out:
        s.skipped_members = skipped
    return out


def _is_archive(path):
    """A tar archive by its name, or by its first bytes when the name says nothing (a file
    that cannot even be opened as one is read as a plain trace file, which names the
    problem)."""
    if _is_tar_name(path):
        return True
    if _trace_name(path):
        return False
    try:
        return tarfile.is_tarfile(path)
    except _DAMAGED:
        return False


def _directory(path):
    names = sorted(os.listdir(path))
    files = [n for n in names if os.path.isfile(os.path.join(path, n))]
    for suffixes in ((".et",), (".json", ".json.gz"), (".jsonl",), ARCHIVE_SUFFIXES):
        found = [os.path.join(path, n) for n in files if n.endswith(suffixes)
                 and not n.startswith(".")]
        if found:
            return found
    raise TraceError(path, None, "directory holds no .et, .json, .json.gz, .jsonl or archived "
                     "trace files")


def expand_sources(paths: Iterable[str | os.PathLike[str]]) -> list["Source"]:
    """``Source`` objects for the given files, directories and archives, in order."""
    out = []
    for p in paths:
        p = os.fspath(p)
        if os.path.isdir(p):
            files = _directory(p)
        elif not os.path.exists(p):
            raise TraceError(p, None, "no such file")
        else:
            files = [p]
        for f in files:
            if _is_archive(f):
                out.extend(archive_sources(f))
            else:
                out.append(Source(f, f))
    return out


def as_text(source):
    """The source's bytes as UTF-8 text (a TraceError naming it otherwise)."""
    try:
        return source.data().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceError(source.name, "at byte %d" % exc.start, "not UTF-8 text") from None
