"""The UDP runtime: the same agents behind real UDP sockets, links emulated in the agents.

``io`` (loops, sockets, epoll reader, real-time timers), ``link`` (emulated egress ports
and the header fast paths), ``node`` (host and switch nodes), ``config`` (per-node
configuration files), ``network`` (every node on one loop: ``run_udp``),
``agent_process`` (one node per process: ``gse agent``), ``results`` (summaries in the
schema of ``gse sim``)."""

from gse import _build

_build.activate(__path__, __name__)   # compiled modules first (gse/_build.py)
