"""Two or more sans-I/O host agents on a direct wire, for short exact protocol tests.

In the spirit of aioquic's ``transfer``/``drop`` helpers: every host's NIC sends at
``gbps`` into a wire of fixed one-way ``delay_ps``; ``drop(pkt)`` returning True loses a
packet on the wire.  No switches, no randomness: what a test asserts is the agent alone.
The hosts are driven by ``gse.agents.driver.AgentDriver``, as in every runtime.
"""

import random
from functools import partial
from heapq import heappop, heappush

from gse.agents.driver import AgentDriver
from gse.agents.invariants import check_invariants
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
        self.completed = {}      # (src, msg_id) -> (retransmits, time)
        # each host through the runtimes' own loop (gse.agents.driver)
        self.drivers = [AgentDriver(host, self._on_delivered, partial(self._on_completed, i),
                                    partial(self._kick, i), partial(self._arm, i))
                        for i, host in enumerate(self.hosts)]

    def _at(self, t, what, host, pkt=None):
        self.seq += 1
        heappush(self.events, (t, self.seq, what, host, pkt))

    def start(self, src, msg_id, dst, size):
        self.drivers[src].start(msg_id, dst, size, self.now)
        check_invariants(self.hosts[src])

    def after(self, i):
        """What the runtime does after a test called host ``i``'s agent itself."""
        self.drivers[i].after(self.now)
        check_invariants(self.hosts[i])   # every step leaves the agent consistent (invariants.py)

    def _on_delivered(self, event):
        key = (event.src, event.msg_id)
        assert key not in self.delivered, "delivered twice"
        self.delivered[key] = event.time_ps

    def _on_completed(self, i, event):
        self.completed[(i, event.msg_id)] = (event.retransmits, event.time_ps)

    def _kick(self, i, now):
        """The NIC sends one packet at a time: the next when this one is on the wire."""
        if self.nic_free[i] > now:
            return
        pkt = self.hosts[i].poll(now)
        if pkt is not None:
            self.sent.append(pkt)
            done = now + wire_time_ps(pkt.size, self.mbps)
            self.nic_free[i] = done
            self._at(done, "nic", i)
            if not self.drop(pkt):
                self._at(done + self.delay, "rx", pkt.dst, pkt)

    def _arm(self, i, t, now):
        self._at(max(t, now), "timer", i, t)

    def run(self, until_ps=10**12):
        while self.events and self.events[0][0] <= until_ps:
            t, _, what, i, arg = heappop(self.events)
            self.now = t
            driver = self.drivers[i]
            if what == "rx":
                driver.receive(arg, t)
            elif what == "timer":
                driver.on_timer(arg, t)
            else:                # the NIC is free again
                driver.after(t)
            check_invariants(self.hosts[i])
        return self


def received_by_agents(agents_dir):
    """Every (src, msg_id, size) the receivers of a Mininet run wrote to their
    ``*.records.json`` files, sorted: compared with the offered messages it says
    "exactly once", from the receivers' own records rather than the summary."""
    import json
    import os
    got = []
    for name in os.listdir(agents_dir):
        if name.endswith(".records.json"):
            with open(os.path.join(agents_dir, name)) as f:
                rec = json.load(f)
            got += [(d["src"], d["msg_id"], d["size"]) for d in rec["received"]]
    return sorted(got)
