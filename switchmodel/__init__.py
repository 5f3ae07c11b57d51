"""The switch agent: output-queued ports (ECN, trimming, drop-tail) and forwarding."""

from switchmodel.queue import (DROPPED, ENQUEUED, OutputQueue, QueueConfig, TRIMMED,
                               PortCounters)
from switchmodel.switch import Switch, mix32

__all__ = ["DROPPED", "ENQUEUED", "OutputQueue", "QueueConfig", "TRIMMED", "PortCounters",
           "Switch", "mix32"]
