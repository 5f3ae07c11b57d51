"""The ``gse`` command line: one module per command under ``gse.cli``.

    gse sim ...        one protocol in the simulation           (gse.cli.sim)
    gse compare ...    several protocols on the same traffic    (gse.cli.compare)
    gse replay ...     a trace of training collectives          (gse.cli.replay)
    gse run ...        over real UDP or Mininet                 (gse.cli.run)
    gse agent ...      one node of a real fabric                (gse.cli.agent)
    gse traffic ...    write generated traffic as a .cm file    (gse.cli.traffic)
    gse topo ...       describe a topology                      (gse.cli.topo)
    gse plot ...       figures from a run's outputs             (gse.cli.plot)
    gse info           which build (compiled or pure) is active (gse.cli.info)
    gse sweep ...      a grid of simulations on Dask            (gse.cli.sweep)

Each command module has ``add_commands(subparsers) -> {name: handler}``.  A command line
naming a command imports that command's module alone (``COMMAND_MODULES``), not all of
them: ``gse sim`` does not load the UDP runtime, the trace readers or Dask's runner.
"""

import argparse
import gc
import importlib
import os
import signal
import sys

from gse import __version__, _build
from gse.config import ConfigError

COMMANDS = ("gse.cli.sim", "gse.cli.compare", "gse.cli.replay", "gse.cli.run",
            "gse.cli.agent", "gse.cli.traffic", "gse.cli.topo", "gse.cli.plot",
            "gse.cli.info", "gse.cli.sweep")
# command name -> the module that adds it (tests/test_startup.py checks it against COMMANDS)
COMMAND_MODULES = {"sim": "gse.cli.sim", "compare": "gse.cli.compare",
                   "replay": "gse.cli.replay", "run": "gse.cli.run",
                   "agent-configs": "gse.cli.run", "agent": "gse.cli.agent",
                   "traffic": "gse.cli.traffic", "topo": "gse.cli.topo",
                   "plot": "gse.cli.plot", "info": "gse.cli.info", "sweep": "gse.cli.sweep"}


def command_of(argv):
    """The command ``argv`` names: its first word that is not an option, unless ``-h``,
    ``--help`` or ``--version`` comes first (then None: every command is loaded, for the
    whole help); None too for a word that names no command (argparse then says so)."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMAND_MODULES else None
        if word in ("-h", "--help", "--version"):
            return None
    return None


def terminal_columns():
    """``shutil.get_terminal_size().columns`` without importing ``shutil`` (with its
    ``zlib``, ``bz2`` and ``lzma``: 2.5 ms of every start): ``$COLUMNS``, else stdout's
    terminal, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, as wide as the terminal (``terminal_columns``): argparse
    makes one per option it adds, and its own asks ``shutil`` the width."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        super().__init__(prog, indent_increment, max_help_position,
                         terminal_columns() - 2 if width is None else width)


class ArgumentParser(argparse.ArgumentParser):
    """An ``argparse.ArgumentParser`` with ``HelpFormatter`` by default (its commands'
    parsers are of its class, so theirs too)."""

    def __init__(self, *args, formatter_class=HelpFormatter, **kwargs):
        super().__init__(*args, formatter_class=formatter_class, **kwargs)


def build_parser(modules=COMMANDS):
    parser = ArgumentParser(prog="gse", description="GSE vs RoCEv2+PFC: simulate, "
                            "run over UDP or Mininet, replay training traces")
    parser.add_argument("--version", action="version",
                        version="gse %s, %s" % (__version__, _build.describe()))
    sub = parser.add_subparsers(dest="command", required=True)
    handlers = {}
    for name in modules:
        handlers.update(importlib.import_module(name).add_commands(sub))
    return parser, handlers


def parse(argv=None):
    """(args, handlers): the command's module loaded, ``argv`` parsed."""
    words = sys.argv[1:] if argv is None else argv
    command = command_of(words)
    parser, handlers = build_parser((COMMAND_MODULES[command],) if command else COMMANDS)
    return parser.parse_args(argv), handlers


def main(argv=None, parsed=None):
    """Run the command ``argv`` names (``parsed``: what ``parse(argv)`` returned)."""
    args, handlers = parse(argv) if parsed is None else parsed
    try:
        return handlers[args.command](args)
    except BrokenPipeError:
        # the reader went away (`gse info | head -2`): not an error of ours, so no message;
        # stdout goes to /dev/null so that the interpreter's final flush cannot fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except (ConfigError, ValueError, OSError, RuntimeError) as exc:
        print("gse: error: %s" % exc, file=sys.stderr)
        return 2


def entry(argv=None):
    """The process's entry point (the ``gse`` script, ``python -m gse`` and ``python -m
    gse.cli.main``): :func:`main`, then every object left is frozen (``gc.freeze``) so
    that the interpreter's exit does not run its final garbage collections over them
    (at k=8 29 M instructions, 1.5% of a RoCE run, docs/scale.md).  Only here, where
    the process ends: ``main`` itself is what in-process callers and the tests use.

    Why a freeze and not ``os._exit``: the exit still runs as ever (``atexit``
    handlers, modules torn down, objects freed by their reference counts, so files left
    open are flushed and closed, stdout and stderr flushed); only garbage in reference
    cycles among the frozen objects is not collected, as the memory goes with the
    process.  The commands close what they write before they return (``with``), and
    tests/test_cli.py checks a run's outputs through this entry, in a process.

    The collector is also off while the command's modules are imported and the options
    parsed (nothing there is garbage): its passes over the interpreter's objects as they
    grew were some 3 ms of a RoCE run's start-up (docs/scale.md)."""
    gc.disable()        # the command's modules loaded: no garbage, no collection passes
    try:
        parsed = parse(argv)
    finally:
        if gc.get_freeze_count() == 0:  # as gse.runtimes.sim.observe.promote_young
            gc.freeze()
            gc.unfreeze()
        gc.enable()
    code = main(argv, parsed)
    gc.freeze()
    return code


if __name__ == "__main__":
    sys.exit(entry())
