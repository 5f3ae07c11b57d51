"""The switch agent: output-queued ports (ECN, trimming, drop-tail) and forwarding."""

from gse import _build

_build.activate(__path__, __name__)   # before the imports below (gse/_build.py)

from switchmodel.queue import (DROPPED, ENQUEUED, TRIMMED, OutputQueue,  # noqa: E402
                               PortCounters, QueueConfig)
from switchmodel.switch import Switch, mix32  # noqa: E402

__all__ = ["DROPPED", "ENQUEUED", "OutputQueue", "QueueConfig", "TRIMMED", "PortCounters",
           "Switch", "mix32"]
