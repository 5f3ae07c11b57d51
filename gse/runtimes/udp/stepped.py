"""A scheduler on a clock its caller moves, for driving the UDP packet paths without an
event loop: the data-plane and host-path tests compare the compiled paths with the Python
ones step by step, and ``experiments/bench_kernel_host.py`` times a host's packet path
without the loop's wake-ups in the figure."""

from heapq import heappop

from gse.runtimes.udp.io import Scheduler


class SteppedScheduler(Scheduler):
    """``now`` reads ``t``; events wait in the heap until ``advance`` fires them."""

    def __init__(self):
        Scheduler.__init__(self, None, True)
        self.t = 0

    def now(self):
        return self.t

    def _arm(self, t):
        pass

    def advance(self, t):
        self.t = t
        while self.heap and self.heap[0][0] <= t:
            when, _, fn, arg = heappop(self.heap)
            fn(when, arg)
