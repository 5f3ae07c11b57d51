"""The in-process simulation: integer-picosecond events (``eventq``), ports, links and
nodes (``network``), GSE fabric-mode leaves on the event queue (``fabric_nodes``), and
one run from topology, traffic, protocol and seed to summary (``run``)."""

from gse import _build

_build.activate(__path__, __name__)   # compiled modules first (gse/_build.py)
