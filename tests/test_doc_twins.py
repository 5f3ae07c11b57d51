"""Every README example has its Python twin in docs/api.md (issue 29's target).

The examples are the command lines of README.md's shell code blocks.  A twin is a comment
line ``# gse ...`` in a ``python`` block of docs/api.md, spelling the same command, above
the Python that does what it does.  Commands are compared as words (``shlex``): quoting,
spacing and trailing comments do not matter; ``./dev gse X``, ``./dev compare`` and
``./dev sim`` are the ``gse`` commands they run (``./dev`` only sets up the environment).
"""

import ast
import os
import re
import shlex

from gse import _build

ROOT = _build.ROOT
README = os.path.join(ROOT, "README.md")
API_DOC = os.path.join(ROOT, "docs", "api.md")

# ./dev's commands that run a gse command with the same options (the `dev` script)
DEV_ALIASES = {"compare": ["gse", "compare"], "sim": ["gse", "sim"], "gse": ["gse"]}

# Only `gse` commands have a Python meaning: a run, a topology, a traffic file.  The other
# programs of the examples are tools around the project, with no twin by this rule: the
# test runner and fuzzer (`./dev test`, `./dev fuzz`), Mininet as root (`sudo ./dev
# mininet`), scripts that are Python already (`python experiments/...`), installers
# (`pip`, `apt-get`) and viewers (`tshark`).

# Twins pending: a README command whose API does not exist yet would be listed here
# (none today); the test fails if one is both listed and twinned in docs/api.md.
TWINS_PENDING: set[str] = set()


def _blocks(path, langs):
    with open(path) as f:
        text = f.read()
    return [m.group(2) for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)
            if m.group(1) in langs]


def _words(line, where):
    try:
        return shlex.split(line, comments=True)
    except ValueError as exc:
        raise AssertionError("%s: cannot read %r as a command: %s" % (where, line, exc))


def normal(words):
    """The ``gse`` command a command line runs, as one string; None if it is no gse command."""
    if words[:1] == ["./dev"] and len(words) > 1 and words[1] in DEV_ALIASES:
        words = DEV_ALIASES[words[1]] + words[2:]
    if words[:1] != ["gse"]:
        return None
    return shlex.join(words)


def readme_commands():
    """{normalised gse command: README line} for every gse command of its shell blocks."""
    out = {}
    for block in _blocks(README, ("sh", "bash", "shell", "console")):
        for line in block.replace("\\\n", " ").splitlines():
            words = _words(line.lstrip("$ "), "README.md")
            cmd = normal(words) if words else None
            if cmd:
                out[cmd] = line.strip()
    return out


def api_twins():
    """The normalised commands named by a ``# gse ...`` comment in docs/api.md's Python."""
    out = set()
    for block in _blocks(API_DOC, ("python",)):
        for line in block.splitlines():
            m = re.match(r"\s*#\s*(gse\s.*|gse)$", line)
            if m:
                out.add(normal(_words(m.group(1), "docs/api.md")))
    return out


def test_the_readme_has_gse_commands_to_twin():
    cmds = readme_commands()
    # the README's opening command, and commands of several kinds, are found
    assert "gse compare" in cmds
    assert any(c.startswith("gse sim ") for c in cmds)
    assert any(c.startswith("gse replay ") for c in cmds)
    assert normal(["./dev", "test"]) is None and normal(["python", "x.py"]) is None


def test_every_readme_command_has_its_python_twin():
    twins = api_twins()
    missing = sorted(line for cmd, line in readme_commands().items()
                     if cmd not in twins and cmd not in TWINS_PENDING)
    assert not missing, ("README commands without a Python twin in docs/api.md (a "
                         "'# gse ...' comment over its code): %s" % missing)


def test_the_pending_twins_are_still_readme_commands_and_still_pending():
    cmds = readme_commands()
    twins = api_twins()
    gone = sorted(TWINS_PENDING - set(cmds))
    assert not gone, "no longer in the README, drop from TWINS_PENDING: %s" % gone
    done = sorted(TWINS_PENDING & twins)
    assert not done, "twinned in docs/api.md now, drop from TWINS_PENDING: %s" % done


def test_the_twins_are_python():
    for i, block in enumerate(_blocks(API_DOC, ("python",))):
        try:
            ast.parse(block)
        except SyntaxError as exc:
            raise AssertionError("docs/api.md python block %d: %s" % (i + 1, exc))
