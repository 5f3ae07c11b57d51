"""htsim's connection-matrix format (``.cm``), read and written, so that one workload can be
run both in htsim and here.

    # comment
    Nodes 128
    Connections 2
    0->13 id 1 start 0 size 2000000
    5->13 id 2 start 1.5 size 2000000

``start`` is in microseconds and may be a decimal; it is converted to integer picoseconds
exactly (digit by digit, never through a float), and written back with just enough digits,
so ``format_cm`` -> ``parse_cm`` is exact.  (htsim's own mains truncate ``start`` to whole
microseconds; fractional starts are exact here only.)

Supported subset: the ``Nodes`` and ``Connections`` headers, ``Triggers 0`` / ``Failures 0``
headers, and connection lines with ``id``, ``start`` and ``size`` (``start`` and ``size``
required).  A missing ``id`` (htsim's own writer omits it) is assigned after the largest
explicit id, in line order.  Everything else htsim knows -- ``trigger`` and ``failure``
lines, the ``trigger``, ``send_done_trigger``, ``recv_done_trigger``, ``prio``/``priority``,
``flowsize`` and ``addon`` options -- is refused with a ``CmFileError`` naming the file, the
line and the text, rather than silently run as a different workload.

Messages are returned sorted by ``(start_ps, msg_id)``, like every generator's output.
"""

import re

from gse.workloads.traffic import MAX_ID, MAX_SIZE, Message

PS_PER_US = 1_000_000
MAX_START_PS = 2 ** 63 - 1

_PAIR_RE = re.compile(r"^([0-9]+)->([0-9]+)$")
_UINT_RE = re.compile(r"^[0-9]+$")
_DEC_RE = re.compile(r"^([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?$")

_UNSUPPORTED_OPTIONS = ("trigger", "send_done_trigger", "recv_done_trigger", "prio",
                        "priority", "flowsize", "addon")
_UNSUPPORTED_LINES = ("trigger", "failure")


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


def us_to_ps(text):
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


def ps_to_us(ps):
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


def parse_cm(text, name="<string>"):
    """(n_nodes, messages) from the text of a connection matrix; see the module docstring."""
    n_nodes = None
    declared = None
    declared_line = 0
    rows = []                      # (lineno, line, src, dst, id or None, start_ps, size)
    seen_ids = {}
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
        elif head == "Connections":
            if declared is not None:
                raise CmFileError(name, lineno, line, "second Connections line")
            if rows:
                raise CmFileError(name, lineno, line,
                                  "Connections must come before the connections")
            if len(tokens) != 2:
                raise CmFileError(name, lineno, line, "expected 'Connections N'")
            declared = _uint(name, lineno, line, "Connections", tokens[1], 0, 2 ** 63)
            declared_line = lineno
        elif head in ("Triggers", "Failures"):
            if len(tokens) != 2 or tokens[1] != "0":
                raise CmFileError(name, lineno, line, "%s are not supported by this reader "
                                  "(only '%s 0')" % (head.lower(), head))
        elif head in _UNSUPPORTED_LINES:
            raise CmFileError(name, lineno, line,
                              "%s lines are not supported by this reader" % head)
        elif "->" in head:
            rows.append(_connection(name, lineno, line, tokens, n_nodes, declared, seen_ids))
        else:
            raise CmFileError(name, lineno, line, "unknown line (expected Nodes, Connections "
                              "or a connection 'SRC->DST id I start US size BYTES')")
    if n_nodes is None:
        raise CmFileError(name, 0, "", "no 'Nodes N' line")
    if declared is None:
        raise CmFileError(name, 0, "", "no 'Connections N' line")
    if declared != len(rows):
        raise CmFileError(name, declared_line, "Connections %d" % declared,
                          "declares %d connections but the file has %d"
                          % (declared, len(rows)))
    next_id = max(seen_ids, default=0) + 1
    messages = []
    for lineno, line, src, dst, mid, start_ps, size in rows:
        if mid is None:
            if next_id > MAX_ID:
                raise CmFileError(name, lineno, line, "no id left to assign below 2**32")
            mid = next_id
            next_id += 1
        messages.append(Message.trusted(mid, src, dst, size, start_ps))
    messages.sort(key=lambda m: (m.start_ps, m.msg_id))
    return n_nodes, messages


def _connection(name, lineno, line, tokens, n_nodes, declared, seen_ids):
    if n_nodes is None:
        raise CmFileError(name, lineno, line, "connection before the 'Nodes N' line")
    if declared is None:
        raise CmFileError(name, lineno, line, "connection before the 'Connections N' line")
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
    i = 1
    while i < len(tokens):
        key = tokens[i]
        if key in _UNSUPPORTED_OPTIONS:
            raise CmFileError(name, lineno, line,
                              "connection option %r is not supported by this reader" % key)
        if key not in ("id", "start", "size"):
            raise CmFileError(name, lineno, line, "unknown connection option %r" % key)
        if key in opts:
            raise CmFileError(name, lineno, line, "option %r given twice" % key)
        if i + 1 >= len(tokens):
            raise CmFileError(name, lineno, line, "option %r has no value" % key)
        opts[key] = tokens[i + 1]
        i += 2
    mid = None
    if "id" in opts:
        mid = _uint(name, lineno, line, "id", opts["id"], 1, MAX_ID)
        if mid in seen_ids:
            raise CmFileError(name, lineno, line, "duplicate id %d (first on line %d)"
                              % (mid, seen_ids[mid]))
        seen_ids[mid] = lineno
    if "start" not in opts:
        raise CmFileError(name, lineno, line, "connection has no 'start'")
    start_ps = us_to_ps(opts["start"])
    if start_ps is None:
        raise CmFileError(name, lineno, line, "start must be a non-negative decimal number of "
                          "microseconds, a whole number of picoseconds, got %r" % opts["start"])
    if "size" not in opts:
        raise CmFileError(name, lineno, line, "connection has no 'size'")
    size = _uint(name, lineno, line, "size", opts["size"], 1, MAX_SIZE)
    return lineno, line, src, dst, mid, start_ps, size


def format_cm(n_nodes, messages):
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


def read_cm(path):
    """(n_nodes, messages) from the connection-matrix file at ``path``."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        lineno = data.count(b"\n", 0, e.start) + 1
        raise CmFileError(str(path), lineno, data[e.start:e.start + 16].decode("latin-1"),
                          "not UTF-8 text") from None
    return parse_cm(text, name=str(path))


def write_cm(path, n_nodes, messages):
    """Write ``messages`` over ``n_nodes`` hosts to ``path`` as a connection matrix."""
    text = format_cm(n_nodes, messages)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
