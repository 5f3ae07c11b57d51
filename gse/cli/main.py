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

Each command module has ``add_commands(subparsers) -> {name: handler}``.
"""

import argparse
import importlib
import sys

from gse import __version__, _build
from gse.config import ConfigError

COMMANDS = ("gse.cli.sim", "gse.cli.compare", "gse.cli.replay", "gse.cli.run",
            "gse.cli.agent", "gse.cli.traffic", "gse.cli.topo", "gse.cli.plot",
            "gse.cli.info", "gse.cli.sweep")


def build_parser():
    parser = argparse.ArgumentParser(prog="gse", description="GSE vs RoCEv2+PFC: simulate, "
                                     "run over UDP or Mininet, replay training traces")
    parser.add_argument("--version", action="version",
                        version="gse %s, %s" % (__version__, _build.describe()))
    sub = parser.add_subparsers(dest="command", required=True)
    handlers = {}
    for name in COMMANDS:
        handlers.update(importlib.import_module(name).add_commands(sub))
    return parser, handlers


def main(argv=None):
    parser, handlers = build_parser()
    args = parser.parse_args(argv)
    try:
        return handlers[args.command](args)
    except (ConfigError, ValueError, OSError, RuntimeError) as exc:
        print("gse: error: %s" % exc, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
