"""Small compiled containers that agents, switches and runtimes share: the FIFO ring
(``gse.common.fifo``) and 64-bit window helpers (``gse.common.bits``)."""

from gse import _build

_build.activate(__path__, __name__)   # compiled modules first (gse/_build.py)
