"""The FIFO of the hot paths: ``collections.deque`` itself in the pure-Python build.

The hot modules (switch queues, host control and send rings, retransmission queues,
recycled entropies, the credit scheduler's round robin) take their FIFO from
here.  The compiled build replaces it by ``cython/gse/common/fifo.pyx``, a ring buffer whose
operations the compiled modules call directly, with deque's behaviour for everything they
use (append, appendleft, pop, popleft, remove, rotate, clear, extend, len, truth,
indexing, iteration both ways, ``in``); ``tests/test_compiled_containers.py`` compares the two.
"""

from collections import deque as Fifo

__all__ = ["Fifo"]
