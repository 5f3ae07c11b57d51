"""htsim's connection-matrix format (``.cm``), read and written, so that one workload can be
run both in htsim and here.

    # comment
    Nodes 128
    Connections 3
    Triggers 1
    0->13 id 1 start 0 size 2000000 send_done_trigger 1
    5->13 id 2 start 1.5 size 2000000
    13->0 id 3 trigger 1 size 2000000
    trigger id 1 oneshot

``start`` is in microseconds and may be a decimal; it is converted to integer picoseconds
exactly (digit by digit, never through a float), and written back with just enough digits,
so ``format_cm`` -> ``parse_cm`` is exact.  (htsim's own mains truncate ``start`` to whole
microseconds; fractional starts are exact here only.)

What htsim's ``ConnectionMatrix`` reads (uet-htsim, ``datacenter/connection_matrix.cpp``):

* headers ``Nodes N``, ``Connections C`` (the number of connection lines), ``Triggers T``
  (the number of ``trigger id`` lines), ``Failures 0``;
* connection lines ``SRC->DST`` with ``id F`` (flow id, not 0; htsim's own writer omits it,
  an id is then assigned after the largest explicit one), ``start US`` or ``trigger N``
  (held until trigger N fires; ``trigger`` needs ``id`` earlier on the line and no
  ``start`` after it), ``size B``, ``send_done_trigger N`` (activate trigger N when the
  sender has the whole flow acknowledged), ``recv_done_trigger N`` (activate it when the
  receiver has the whole flow), ``msg [M]`` (another message on the connection of the same
  ``id``: htsim's connection reuse) and ``prio P`` (read and ignored here: counted in
  ``CmWorkload.ignored``);
* trigger lines ``trigger id N oneshot|multishot|barrier [count K]``: a ``oneshot`` trigger
  starts all its flows on its first activation; a ``multishot`` one starts the next of its
  flows, in file order, on each activation; a ``barrier`` starts all of them on its K-th.

Where htsim would abort or hang -- a oneshot trigger activated by more than one flow, a
barrier activated more or fewer times than its count, a multishot trigger with fewer
activations than flows, a trigger with flows but no activation, a referenced trigger never
defined, a trigger on a reused connection -- this reader says so with the line instead.
``failure`` lines are refused (not modelled).  Every error is a ``CmFileError`` naming the
file, the line and the text.

Messages sharing a connection (``msg``) get their own message ids here (the first keeps
the connection's id, the others ids above every id in the file; ``CmWorkload.flow_of``
maps them back).  htsim sends a reused connection's messages one after the other; here
they start at their own ``start`` and share the sender with its other messages.

Messages are returned sorted by ``(start_ps, msg_id)``, like every generator's output.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from gse.workloads.traffic import MAX_ID, MAX_SIZE, Message

TYPE_CHECKING = False   # typing's own, without importing typing (2.9 ms of a start)
if TYPE_CHECKING:
    from typing import Any

PS_PER_US = 1_000_000
MAX_START_PS = 2 ** 63 - 1

_PAIR_RE = re.compile(r"^([0-9]+)->([0-9]+)$")
_UINT_RE = re.compile(r"^[0-9]+$")
_DEC_RE = re.compile(r"^([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?$")

_UNSUPPORTED_OPTIONS = ("priority", "flowsize", "addon")
_UNSUPPORTED_LINES = ("failure",)
TRIGGER_KINDS = ("oneshot", "multishot", "barrier")


class CmFileError(ValueError):
    """A connection matrix this reader cannot use; names the file, line and offending text."""

    def __init__(self, name, lineno, text, problem):
        self.name = name
        self.lineno = lineno
        self.text = text
        self.problem = problem
        if lineno:
            msg = "%s:%d: %s: %r" % (name, lineno, problem, text)
        else:
            msg = "%s: %s" % (name, problem)
        super().__init__(msg)


def us_to_ps(text: str) -> int | None:
    """Exact picoseconds of a decimal microsecond string such as ``1.5`` or ``2e-6``.

    Returns None if ``text`` is not a plain non-negative decimal, or is not a whole number of
    picoseconds, or is absurdly large (over ~106 days).
    """
    m = _DEC_RE.match(text)
    if not m or not (m.group(1) or m.group(2)):
        return None
    whole, frac, exp = m.group(1) or "", m.group(2) or "", m.group(3)
    if exp and len(exp.lstrip("+-").lstrip("0")) > 6:
        return None                                       # exponent beyond any sane time
    digits = (whole + frac).lstrip("0")
    if not digits:
        return 0
    scale = 6 - len(frac) + (int(exp) if exp else 0)     # value_ps = digits * 10**scale
    trimmed = digits.rstrip("0")
    scale += len(digits) - len(trimmed)
    digits = trimmed
    if len(digits) > 40:
        return None                                       # more significant digits than ps
    if scale >= 0:
        if len(digits) + scale > 20:
            return None
        ps = int(digits) * 10 ** scale
    else:
        if -scale > len(digits) + 40:
            return None                                   # far below a picosecond
        n = int(digits)
        div = 10 ** -scale
        if n % div:
            return None
        ps = n // div
    return ps if ps <= MAX_START_PS else None


def ps_to_us(ps: int) -> str:
    """``ps`` as a decimal microsecond string with no lost digits: 1500000 -> "1.5"."""
    whole, frac = divmod(ps, PS_PER_US)
    if not frac:
        return str(whole)
    return "%d.%s" % (whole, ("%06d" % frac).rstrip("0"))


def _uint(name, lineno, line, what, token, lo, hi):
    if not _UINT_RE.match(token):
        raise CmFileError(name, lineno, line, "%s must be a whole number, got %r" % (what, token))
    if len(token.lstrip("0")) > 30:
        raise CmFileError(name, lineno, line, "%s must be in %d..%d, got %s"
                          % (what, lo, hi, token))
    value = int(token)
    if not lo <= value <= hi:
        raise CmFileError(name, lineno, line, "%s must be in %d..%d, got %d"
                          % (what, lo, hi, value))
    return value


class Trigger:
    """One ``trigger id N KIND [count K]`` line and what refers to it."""

    __slots__ = ("id", "kind", "count", "targets", "activators", "lineno")

    def __init__(self, tid, kind, count, lineno):
        self.id = tid
        self.kind = kind
        self.count = count            # barrier: the activation that fires it
        self.targets = []             # message ids started by it, in file order
        self.activators = []          # (message id, "send" or "recv") that activate it
        self.lineno = lineno

    def __repr__(self):
        return "Trigger(%d %s%s -> %s)" % (self.id, self.kind,
                                           " count %d" % self.count if self.count else "",
                                           self.targets)


class CmWorkload:
    """A connection matrix as data: ``messages`` start at their times, ``held`` wait for a
    trigger (``held_by``: message id -> trigger id), ``triggers`` (id -> Trigger),
    ``send_done``/``recv_done`` (message id -> [trigger ids] it activates), ``flow_of``
    (message id -> htsim flow id, for messages of reused connections) and ``ignored``
    (option -> count of what was read and not modelled)."""

    __slots__ = ("nodes", "messages", "held", "held_by", "triggers", "send_done",
                 "recv_done", "flow_of", "ignored", "name")

    def __init__(self, nodes: int, name: str) -> None:
        self.nodes = nodes
        self.name = name
        self.messages: list[Message] = []
        self.held: list[Message] = []
        self.held_by: dict[int, int] = {}
        self.triggers: dict[int, Trigger] = {}
        self.send_done: dict[int, list[int]] = {}
        self.recv_done: dict[int, list[int]] = {}
        self.flow_of: dict[int, int] = {}
        self.ignored: dict[str, int] = {}

    def summary(self) -> dict[str, Any]:
        kinds: dict[str, int] = {}
        for t in self.triggers.values():
            kinds[t.kind] = kinds.get(t.kind, 0) + 1
        return {"file": self.name, "nodes": self.nodes, "messages": len(self.messages),
                "held_by_triggers": len(self.held), "triggers": kinds,
                "reused_connection_messages": len(self.flow_of), "ignored": dict(self.ignored)}


def parse_cm(text: str, name: str = "<string>") -> tuple[int, list[Message]]:
    """(n_nodes, messages) from the text of a connection matrix without triggers (see
    ``parse_cm_workload`` for one with them)."""
    w = parse_cm_workload(text, name)
    if w.held or w.triggers:
        t = min(w.triggers.values(), key=lambda t: t.lineno)
        raise CmFileError(name, t.lineno, "trigger id %d %s" % (t.id, t.kind),
                          "this matrix starts flows by triggers; read it with "
                          "read_cm_workload (gse sim runs it)")
    return w.nodes, w.messages


def parse_cm_workload(text: str, name: str = "<string>") -> CmWorkload:
    """A ``CmWorkload`` from the text of a connection matrix; see the module docstring."""
    n_nodes = None
    declared: dict[str, Any] = {}                    # header -> (value, lineno)
    rows: list[Any] = []
    seen_ids: dict[int, tuple[int, int, int]] = {}   # flow id -> (lineno, src, dst)
    triggers: dict[int, Trigger] = {}
    refs: dict[int, tuple[int, str]] = {}   # trigger id -> first (lineno, line) referring to it
    ignored: dict[str, int] = {}
    for lineno, raw in enumerate(text.split("\n"), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        tokens = line.split()
        head = tokens[0]
        if head == "Nodes":
            if n_nodes is not None:
                raise CmFileError(name, lineno, line, "second Nodes line")
            if rows:
                raise CmFileError(name, lineno, line, "Nodes must come before the connections")
            if len(tokens) != 2:
                raise CmFileError(name, lineno, line, "expected 'Nodes N'")
            n_nodes = _uint(name, lineno, line, "Nodes", tokens[1], 1, MAX_ID)
        elif head in ("Connections", "Triggers", "Failures"):
            if head in declared:
                raise CmFileError(name, lineno, line, "second %s line" % head)
            if rows:
                raise CmFileError(name, lineno, line,
                                  "%s must come before the connections" % head)
            if len(tokens) != 2:
                raise CmFileError(name, lineno, line, "expected '%s N'" % head)
            declared[head] = (_uint(name, lineno, line, head, tokens[1], 0, 2 ** 63), lineno)
            if head == "Failures" and declared[head][0]:
                raise CmFileError(name, lineno, line, "failures are not supported by this "
                                  "reader (only 'Failures 0')")
        elif head in _UNSUPPORTED_LINES:
            raise CmFileError(name, lineno, line,
                              "%s lines are not supported by this reader" % head)
        elif head == "trigger":
            t = _trigger_line(name, lineno, line, tokens)
            if t.id in triggers:
                raise CmFileError(name, lineno, line, "trigger %d is defined twice (first on "
                                  "line %d)" % (t.id, triggers[t.id].lineno))
            triggers[t.id] = t
        elif "->" in head:
            if n_nodes is None:
                raise CmFileError(name, lineno, line, "connection before the 'Nodes N' line")
            if "Connections" not in declared:
                raise CmFileError(name, lineno, line,
                                  "connection before the 'Connections N' line")
            rows.append(_connection(name, lineno, line, tokens, n_nodes, seen_ids, refs,
                                    ignored))
        else:
            raise CmFileError(name, lineno, line, "unknown line (expected Nodes, Connections, "
                              "Triggers, a connection 'SRC->DST id I start US size BYTES' or "
                              "'trigger id N oneshot|multishot|barrier')")
    if n_nodes is None:
        raise CmFileError(name, 0, "", "no 'Nodes N' line")
    if "Connections" not in declared:
        raise CmFileError(name, 0, "", "no 'Connections N' line")
    count, at = declared["Connections"]
    if count != len(rows):
        raise CmFileError(name, at, "Connections %d" % count, "declares %d connections but "
                          "the file has %d (htsim refuses this too)" % (count, len(rows)))
    count, at = declared.get("Triggers", (0, 0))
    if count != len(triggers):
        raise CmFileError(name, at, "Triggers %d" % count, "declares %d triggers but the file "
                          "defines %d ('trigger id N ...' lines; htsim refuses this too)"
                          % (count, len(triggers)))
    for tid, (lineno, line) in sorted(refs.items(), key=lambda kv: kv[1][0]):
        if tid not in triggers:
            raise CmFileError(name, lineno, line, "trigger %d is used but never defined "
                              "('trigger id %d oneshot|multishot|barrier')" % (tid, tid))
    return _workload(name, n_nodes, rows, triggers, ignored)


def _trigger_line(name, lineno, line, tokens):
    if len(tokens) < 4 or tokens[1] != "id":
        raise CmFileError(name, lineno, line, "expected 'trigger id N oneshot|multishot|barrier"
                          " [count K]'")
    tid = _uint(name, lineno, line, "trigger id", tokens[2], 1, MAX_ID)
    kind = tokens[3]
    if kind not in TRIGGER_KINDS:
        raise CmFileError(name, lineno, line, "unknown trigger type %r (known: %s)"
                          % (kind, ", ".join(TRIGGER_KINDS)))
    count = None
    rest = tokens[4:]
    if rest:
        if len(rest) != 2 or rest[0] != "count":
            raise CmFileError(name, lineno, line, "after the trigger type only 'count K' may "
                              "follow")
        count = _uint(name, lineno, line, "count", rest[1], 1, MAX_ID)
    if kind == "barrier" and count is None:
        raise CmFileError(name, lineno, line, "a barrier trigger needs 'count K' (the "
                          "activation that fires it)")
    if kind != "barrier" and count is not None:
        raise CmFileError(name, lineno, line, "'count' is for barrier triggers only")
    return Trigger(tid, kind, count, lineno)


def _connection(name, lineno, line, tokens, n_nodes, seen_ids, refs, ignored):
    m = _PAIR_RE.match(tokens[0])
    if not m:
        raise CmFileError(name, lineno, line, "expected SRC->DST with no spaces, got %r"
                          % tokens[0])
    src, dst = int(m.group(1)), int(m.group(2))
    for what, h in (("source", src), ("destination", dst)):
        if h >= n_nodes:
            raise CmFileError(name, lineno, line, "%s node %d is not below Nodes %d"
                              % (what, h, n_nodes))
    if src == dst:
        raise CmFileError(name, lineno, line, "source and destination are both node %d" % src)
    opts = {}
    done_triggers = []
    i = 1
    while i < len(tokens):
        key = tokens[i]
        if key in _UNSUPPORTED_OPTIONS:
            raise CmFileError(name, lineno, line,
                              "connection option %r is not supported by this reader" % key)
        if key == "msg":                     # "msg" or "msg M" (M unused, as in htsim)
            if key in opts:
                raise CmFileError(name, lineno, line, "option 'msg' given twice")
            opts["msg"] = None
            if i + 1 < len(tokens) and _UINT_RE.match(tokens[i + 1]):
                opts["msg"] = tokens[i + 1]
                i += 1
            i += 1
            continue
        if key not in ("id", "start", "size", "trigger", "send_done_trigger",
                       "recv_done_trigger", "prio"):
            raise CmFileError(name, lineno, line, "unknown connection option %r" % key)
        if key in opts and key not in ("send_done_trigger", "recv_done_trigger"):
            raise CmFileError(name, lineno, line, "option %r given twice" % key)
        if i + 1 >= len(tokens):
            raise CmFileError(name, lineno, line, "option %r has no value" % key)
        value = tokens[i + 1]
        if key == "trigger":
            if "id" not in opts:
                raise CmFileError(name, lineno, line, "'trigger' needs the connection's 'id' "
                                  "earlier on the line (htsim asserts it)")
            tid = _uint(name, lineno, line, "trigger", value, 1, MAX_ID)
            refs.setdefault(tid, (lineno, line))
            opts["trigger"] = tid
        elif key in ("send_done_trigger", "recv_done_trigger"):
            tid = _uint(name, lineno, line, key, value, 1, MAX_ID)
            refs.setdefault(tid, (lineno, line))
            done_triggers.append(("send" if key == "send_done_trigger" else "recv", tid))
            opts[key] = tid
        elif key == "start" and "trigger" in opts:
            raise CmFileError(name, lineno, line, "'start' after 'trigger' (htsim refuses it: a "
                              "triggered connection has no start time)")
        elif key == "prio":
            _uint(name, lineno, line, "prio", value, 0, 2 ** 63)
            ignored["prio (htsim's priority; not modelled)"] = \
                ignored.get("prio (htsim's priority; not modelled)", 0) + 1
            opts[key] = value
        else:
            opts[key] = value
        i += 2
    mid = None
    if "id" in opts:
        mid = _uint(name, lineno, line, "id", opts["id"], 1, MAX_ID)
        if mid in seen_ids:
            first, fsrc, fdst = seen_ids[mid]
            if "msg" not in opts:
                raise CmFileError(name, lineno, line, "duplicate id %d (first on line %d); a "
                                  "further message on that connection says 'msg'"
                                  % (mid, first))
            if (fsrc, fdst) != (src, dst):
                raise CmFileError(name, lineno, line, "message on connection %d goes %d->%d but "
                                  "the connection (line %d) is %d->%d" % (mid, src, dst, first,
                                                                         fsrc, fdst))
        else:
            seen_ids[mid] = (lineno, src, dst)
    elif "msg" in opts:
        raise CmFileError(name, lineno, line, "'msg' needs the connection's 'id'")
    if "msg" in opts and ("trigger" in opts or done_triggers):
        raise CmFileError(name, lineno, line, "triggers on a reused connection ('msg'): htsim "
                          "aborts on them")
    start_ps = None
    if "trigger" not in opts:
        if "start" not in opts:
            raise CmFileError(name, lineno, line, "connection has no 'start' (or 'trigger')")
        start_ps = us_to_ps(opts["start"])
        if start_ps is None:
            raise CmFileError(name, lineno, line, "start must be a non-negative decimal number "
                              "of microseconds, a whole number of picoseconds, got %r"
                              % opts["start"])
    elif "start" in opts:
        ignored["start of a triggered connection (the trigger starts it)"] = \
            ignored.get("start of a triggered connection (the trigger starts it)", 0) + 1
    if "size" not in opts:
        raise CmFileError(name, lineno, line, "connection has no 'size'")
    size = _uint(name, lineno, line, "size", opts["size"], 1, MAX_SIZE)
    return (lineno, line, src, dst, mid, start_ps, size, opts.get("trigger"), done_triggers,
            "msg" in opts)


def _workload(name, n_nodes, rows, triggers, ignored):
    w = CmWorkload(n_nodes, name)
    w.triggers = triggers
    w.ignored = ignored
    explicit = {r[4] for r in rows if r[4] is not None}
    next_id = max(explicit, default=0) + 1
    used = set()
    for lineno, line, src, dst, fid, start_ps, size, trig, dones, _msg in rows:
        mid = fid
        if mid is None or mid in used:            # htsim's writer omits ids; msg reuses them
            if next_id > MAX_ID:
                raise CmFileError(name, lineno, line, "no id left to assign below 2**32")
            mid = next_id
            next_id += 1
            if fid is not None:
                w.flow_of[mid] = fid
        used.add(mid)
        if trig is None:
            w.messages.append(Message.trusted(mid, src, dst, size, start_ps))
        else:
            w.held.append(Message.trusted(mid, src, dst, size, 0))
            w.held_by[mid] = trig
            triggers[trig].targets.append(mid)
        for side, tid in dones:
            (w.send_done if side == "send" else w.recv_done).setdefault(mid, []).append(tid)
            triggers[tid].activators.append((mid, side))
    for t in sorted(triggers.values(), key=lambda t: t.lineno):
        _check_trigger(name, t)
    w.messages.sort(key=lambda m: (m.start_ps, m.msg_id))
    return w


def _check_trigger(name, t):
    """Refuse what htsim would abort on, or where flows would silently never start."""
    line = "trigger id %d %s" % (t.id, t.kind)
    n_act, n_tgt = len(t.activators), len(t.targets)
    if n_tgt and not n_act:
        raise CmFileError(name, t.lineno, line, "nothing activates trigger %d (no "
                          "send_done_trigger/recv_done_trigger %d), so its %d flow(s) would "
                          "never start" % (t.id, t.id, n_tgt))
    if t.kind == "oneshot" and n_act > 1:
        raise CmFileError(name, t.lineno, line, "oneshot trigger %d is activated by %d flows; "
                          "htsim aborts at its second activation (use barrier or multishot)"
                          % (t.id, n_act))
    if t.kind == "oneshot" and n_act and not n_tgt:
        raise CmFileError(name, t.lineno, line, "oneshot trigger %d starts no flow (htsim "
                          "aborts when it fires)" % t.id)
    if t.kind == "barrier" and n_act != t.count:
        raise CmFileError(name, t.lineno, line, "barrier trigger %d fires at activation %d but "
                          "%d flow(s) activate it (%s)" % (
                              t.id, t.count, n_act, "htsim asserts on the extra ones"
                              if n_act > t.count else "it would never fire"))
    if t.kind == "multishot" and n_act < n_tgt:
        raise CmFileError(name, t.lineno, line, "multishot trigger %d starts one flow per "
                          "activation but has %d flows and %d activations: the last would "
                          "never start" % (t.id, n_tgt, n_act))


def format_cm(n_nodes: int, messages: Sequence[Message]) -> str:
    """The text of a connection matrix for ``messages`` over ``n_nodes`` hosts, in the given
    order.  Raises ValueError (``CmFileError`` without a line) if htsim could not read it."""
    name = "format_cm"
    if isinstance(n_nodes, bool) or not isinstance(n_nodes, int) or not 1 <= n_nodes <= MAX_ID:
        raise CmFileError(name, 0, "", "n_nodes must be an integer in 1..2**32-1, got %r"
                          % (n_nodes,))
    out = ["Nodes %d" % n_nodes, "Connections %d" % len(messages)]
    seen = set()
    for m in messages:
        if not isinstance(m, Message):
            raise CmFileError(name, 0, "", "expected Message objects, got %r" % (m,))
        if m.msg_id == 0:
            raise CmFileError(name, 0, "", "message id 0 is not allowed in a .cm file "
                              "(htsim reserves it): %r" % (m,))
        if m.msg_id in seen:
            raise CmFileError(name, 0, "", "duplicate message id %d" % m.msg_id)
        seen.add(m.msg_id)
        if m.src >= n_nodes or m.dst >= n_nodes:
            raise CmFileError(name, 0, "", "%r has a host not below n_nodes %d" % (m, n_nodes))
        if m.start_ps > MAX_START_PS:
            raise CmFileError(name, 0, "", "%r starts too late to write" % (m,))
        out.append("%d->%d id %d start %s size %d"
                   % (m.src, m.dst, m.msg_id, ps_to_us(m.start_ps), m.size))
    out.append("")
    return "\n".join(out)


def _read_text(path):
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        lineno = data.count(b"\n", 0, e.start) + 1
        raise CmFileError(str(path), lineno, data[e.start:e.start + 16].decode("latin-1"),
                          "not UTF-8 text") from None
    return text


def read_cm(path: str | os.PathLike[str]) -> tuple[int, list[Message]]:
    """(n_nodes, messages) from the connection-matrix file at ``path`` (no triggers)."""
    return parse_cm(_read_text(path), name=str(path))


def read_cm_workload(path: str | os.PathLike[str]) -> CmWorkload:
    """The ``CmWorkload`` of the connection-matrix file at ``path``."""
    return parse_cm_workload(_read_text(path), name=str(path))


def write_cm(path: str | os.PathLike[str], n_nodes: int,
             messages: Sequence[Message]) -> None:
    """Write ``messages`` over ``n_nodes`` hosts to ``path`` as a connection matrix."""
    text = format_cm(n_nodes, messages)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
