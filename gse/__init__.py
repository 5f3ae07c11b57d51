"""GSE: a scheduled Ethernet transport (request/grant credit, packet spraying, trimming,
reordering, fast retransmission) beside a RoCEv2 + PFC baseline, on Fat-Tree fabrics."""

__version__ = "0.1.0"
