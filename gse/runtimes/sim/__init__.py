"""The in-process simulation: integer-picosecond events (``eventq``), ports, links and
nodes (``network``), GSE fabric-mode leaves on the event queue (``fabric_nodes``), and
one run from topology, traffic, protocol and seed to summary (``run``)."""

import os

from gse import _build

_build.activate(__path__, __name__)   # compiled modules first (gse/_build.py)

if os.environ.get("GSE_HUGE_PAGES", "").strip().lower() not in ("0", "false", "no"):
    # before the first network is built: its objects are the events' working set
    # (gse.runtimes.sim.eventq.huge_pages; the pure build leaves memory as it is)
    from gse.runtimes.sim.eventq import huge_pages

    # the raw allocator's blocks too only when asked: faster, but their size classes keep
    # what they outgrow (docs/scale.md, "What grows with the fabric")
    huge_pages(blocks=os.environ.get("GSE_HUGE_BLOCKS", "").strip().lower()
               in ("1", "true", "yes"))
