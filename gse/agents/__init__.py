"""The host agents: sans-I/O state machines, one per protocol.

An agent is handed a packet or a timer expiry together with ``now`` (integer picoseconds)
and hands back packets and one deadline (``gse.agents.interface.HostAgent``).  It never
reads a clock, opens a socket or sleeps, so the same object runs in the simulation, over
UDP and under Mininet.  Rules kept by ``tests/test_architecture.py``: nothing here
imports a runtime, the CLI, ``asyncio`` or ``socket``.

* GSE host (``gse_host``): ``sender``, ``receiver``, the receiver's credit ``scheduler``,
  path ``entropy`` selection and the receive ``bitmap``;
* RoCEv2 host (``roce_host``): ``roce_sender`` with its ``dcqcn`` rate controller,
  ``roce_receiver`` and the NIC scheduler ``roce_nic``;
* plain host (``plain_host``): the unchanged endpoint of GSE fabric mode.
"""

from gse import _build

_build.activate(__path__, __name__)   # compiled modules first (gse/_build.py)
