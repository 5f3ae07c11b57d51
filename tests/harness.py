"""Two or more sans-I/O host agents on a direct wire, for short exact protocol tests.

In the spirit of aioquic's ``transfer``/``drop`` helpers: every host's NIC sends at
``gbps`` into a wire of fixed one-way ``delay_ps``; ``drop(pkt)`` returning True loses a
packet on the wire.  No switches, no randomness: what a test asserts is the agent alone.
"""

import random
from heapq import heappop, heappush

from gse.agents.invariants import check_agent
from gse.protocols import default_config, host_factory
from gse.wire.linkrate import wire_time_ps


class Wire:
    def __init__(self, n_hosts=2, config=None, gbps=100.0, delay_ps=1_000_000, drop=None,
                 protocol="gse"):
        self.config = config or default_config(protocol)
        make = host_factory(protocol, self.config)
        self.hosts = [make(i, random.Random(i), gbps) for i in range(n_hosts)]
        self.mbps = int(gbps * 1000)
        self.delay = delay_ps
        self.drop = drop or (lambda pkt: False)
        self.now = 0
        self.events = []
        self.seq = 0
        self.nic_free = [0] * n_hosts
        self.sent = []           # every packet put on the wire, in order
        self.delivered = {}      # (src, msg_id) -> time

    def _at(self, t, what, host, pkt=None):
        self.seq += 1
        heappush(self.events, (t, self.seq, what, host, pkt))

    def start(self, src, msg_id, dst, size):
        self.hosts[src].start_message(msg_id, dst, size, self.now)
        self._service(src)

    def _service(self, i):
        host = self.hosts[i]
        for src, msg_id, size, t in host.receiver.delivered:
            assert (src, msg_id) not in self.delivered, "delivered twice"
            self.delivered[(src, msg_id)] = t
        host.receiver.delivered.clear()
        if self.nic_free[i] <= self.now:
            pkt = host.poll(self.now)
            if pkt is not None:
                self.sent.append(pkt)
                done = self.now + wire_time_ps(pkt.size, self.mbps)
                self.nic_free[i] = done
                self._at(done, "nic", i)
                if not self.drop(pkt):
                    self._at(done + self.delay, "rx", pkt.dst, pkt)
        check_agent(host)        # every step leaves the agent consistent (invariants.py)
        t = host.next_deadline()
        if t >= 0:
            self._at(max(t, self.now), "timer", i)

    def run(self, until_ps=10**12):
        while self.events and self.events[0][0] <= until_ps:
            t, _, what, i, pkt = heappop(self.events)
            self.now = t
            if what == "rx":
                self.hosts[i].receive(pkt, t)
            elif what == "timer":
                if self.hosts[i].next_deadline() > t or self.hosts[i].next_deadline() < 0:
                    continue
                self.hosts[i].on_timer(t)
            self._service(i)
        return self
