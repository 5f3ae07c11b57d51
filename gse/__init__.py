"""GSE: a scheduled Ethernet transport (request/grant credit, packet spraying, trimming,
reordering, fast retransmission) beside a RoCEv2 + PFC baseline, on Fat-Tree fabrics."""

__version__ = "0.1.0"

from gse import _build

_build.activate(__path__)      # compiled hot paths unless GSE_PURE_PYTHON=1 (gse/_build.py)
