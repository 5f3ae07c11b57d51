"""The agent driver (``gse.agents.driver``) alone, with a fake agent and a fake scheduler,
and the typed events (``gse.agents.events``) the real agents queue for it.

Every runtime drives its agents through this loop, so its rules are pinned here: events go
to the callbacks in the order they happened, the NIC is kicked exactly when the agent has
work, the timer is re-armed only for an earlier deadline, and a timer superseded by an
earlier one does nothing when it fires."""

import random

import pytest

from gse.agents.driver import AgentDriver, LeafAgentDriver
from gse.agents.events import MessageCompleted, MessageDelivered
from gse.agents.interface import HostAgent
from gse.protocols import default_config, host_factory
from gse.wire.packet import DATA, PRIO_DATA, Packet


class FakeAgent(HostAgent):
    """An agent whose every answer the test sets; it records the calls it gets."""

    def __init__(self):
        HostAgent.__init__(self, 0)
        self.calls = []
        self.work = False
        self.deadline = -1
        self.fail = None          # an exception the next call raises

    def _call(self, *what):
        self.calls.append(what)
        if self.fail is not None:
            exc, self.fail = self.fail, None
            raise exc

    def start_message(self, msg_id, dst, size, now):
        self._call("start", msg_id, now)

    def receive(self, pkt, now):
        self._call("receive", pkt.msg_id, now)

    def on_timer(self, now):
        self._call("timer", now)

    def has_work(self):
        return self.work

    def poll(self, now, data_ok=True):
        return None

    def next_deadline(self):
        return self.deadline

    def queue(self, event):
        self._events.append(event)


class Runtime:
    """A fake runtime: what the driver asked of it, in order."""

    def __init__(self):
        self.log = []

    def driver(self, agent, **kw):
        return AgentDriver(agent, lambda e: self.log.append(("delivered", e)),
                           lambda e: self.log.append(("completed", e)),
                           lambda now: self.log.append(("kick", now)),
                           lambda t, now: self.log.append(("arm", t, now)), **kw)

    def take(self):
        out, self.log = self.log, []
        return out


def pkt(msg_id=1):
    return Packet(DATA, 0, 1, msg_id=msg_id, psn=0, payload_len=100, msg_len=100,
                  prio=PRIO_DATA)


def test_events_reach_the_callbacks_in_the_order_they_happened():
    agent, rt = FakeAgent(), Runtime()
    d = rt.driver(agent)
    first = MessageDelivered(3, 7, 1000, 5)
    done = MessageCompleted(9, 2, 5)
    second = MessageDelivered(4, 8, 10, 5)
    for e in (first, done, second):
        agent.queue(e)
    d.receive(pkt(), 5)
    assert rt.take() == [("delivered", first), ("completed", done), ("delivered", second)]
    assert agent.next_event() is None          # all taken
    d.after(6)
    assert rt.take() == []


def test_the_nic_is_kicked_exactly_when_the_agent_has_work():
    agent, rt = FakeAgent(), Runtime()
    d = rt.driver(agent)
    d.start(1, 2, 100, 10)
    assert rt.take() == []
    agent.work = True
    d.start(2, 2, 100, 11)
    assert rt.take() == [("kick", 11)]
    d.after(12)                                # a NIC wake-up: still work
    assert rt.take() == [("kick", 12)]
    agent.work = False
    d.after(13)
    assert rt.take() == []


def test_the_timer_is_rearmed_only_for_an_earlier_deadline():
    agent, rt = FakeAgent(), Runtime()
    d = rt.driver(agent)
    d.after(0)
    assert rt.take() == [] and d.timer_at == -1           # no deadline: nothing armed
    agent.deadline = 100
    d.after(1)
    assert rt.take() == [("arm", 100, 1)] and d.timer_at == 100
    d.after(2)
    assert rt.take() == []                                # the same deadline: armed
    agent.deadline = 150
    d.after(3)
    assert rt.take() == [] and d.timer_at == 100          # later: the 100 timer covers it
    agent.deadline = 80
    d.after(4)
    assert rt.take() == [("arm", 80, 4)] and d.timer_at == 80
    agent.deadline = 70                                   # a deadline already past
    d.after(90)
    assert rt.take() == [("arm", 70, 90)]                 # the runtime runs it at once


def test_a_superseded_timer_does_nothing_and_the_armed_one_runs_the_agent():
    agent, rt = FakeAgent(), Runtime()
    d = rt.driver(agent)
    agent.deadline = 100
    d.after(0)
    agent.deadline = 50
    d.receive(pkt(), 10)
    assert rt.take() == [("arm", 100, 0), ("arm", 50, 10)]
    agent.calls.clear()
    agent.deadline = 200
    d.on_timer(50, 50)                        # the armed one: the agent runs, re-armed
    assert agent.calls == [("timer", 50)]
    assert rt.take() == [("arm", 200, 50)] and d.timer_at == 200
    d.on_timer(100, 100)                      # the first, superseded: nothing at all
    assert agent.calls == [("timer", 50)] and rt.take() == [] and d.timer_at == 200
    d.on_timer(200, 200)
    assert agent.calls[-1] == ("timer", 200) and d.timer_at == 200   # 200 is still due
    assert rt.take() == [("arm", 200, 200)]


def test_agent_errors_go_to_on_error_and_the_loop_goes_on():
    agent, rt = FakeAgent(), Runtime()
    errors = []
    d = rt.driver(agent, on_error=lambda what, exc: errors.append((what, str(exc))))
    agent.work = True
    agent.fail = ValueError("bad")
    d.start(4, 2, 100, 1)
    assert errors == [("start message 4", "bad")] and rt.take() == [("kick", 1)]
    agent.fail = ValueError("worse")
    d.receive(pkt(9), 2)
    assert errors[-1][0].startswith("receive ") and rt.take() == [("kick", 2)]
    agent.deadline = 5
    d.after(3)
    agent.fail = KeyError("late")
    d.on_timer(5, 5)
    assert errors[-1][0] == "timer" and d.timer_at == 5
    plain = rt.driver(FakeAgent())            # without on_error: the exception is a bug
    plain.agent.fail = ValueError("bad")
    with pytest.raises(ValueError):
        plain.start(1, 2, 3, 0)


def test_a_subclass_supplies_the_nic_and_the_timer():
    class Sub(AgentDriver):
        def __init__(self, agent):
            AgentDriver.__init__(self, agent)
            self.seen = []

        def kick_nic(self, now):
            self.seen.append(("kick", now))

        def arm_timer(self, t, now):
            self.seen.append(("arm", t, now))

    agent = FakeAgent()
    agent.work = True
    agent.deadline = 30
    agent.queue(MessageDelivered(1, 2, 3, 4))    # no callback: dropped, never an error
    d = Sub(agent)
    d.start(1, 2, 3, 4)
    assert d.seen == [("kick", 4), ("arm", 30, 4)] and agent.next_event() is None


class FakeLeaf:
    def __init__(self):
        self.out = []
        self.pfc_out = []
        self.deadline = -1
        self.calls = []

    def receive(self, pkt, in_port, now):
        self.calls.append(("receive", in_port, now))
        self.out += [(2, pkt), (0, pkt)]

    def on_timer(self, now):
        self.calls.append(("timer", now))
        self.pfc_out.append((1, 9))

    def next_deadline(self):
        return self.deadline


def test_the_leaf_driver_drains_out_and_pfc_out_and_keeps_one_timer():
    leaf, log = FakeLeaf(), []
    d = LeafAgentDriver(leaf, lambda port, p, now: log.append(("offer", port, p.msg_id, now)),
                        lambda port, kind, now: log.append(("pfc", port, kind, now)),
                        lambda t, now: log.append(("arm", t, now)))
    leaf.deadline = 40
    d.receive(pkt(5), 3, 10)
    assert log == [("offer", 2, 5, 10), ("offer", 0, 5, 10), ("arm", 40, 10)]
    assert leaf.out == [] and leaf.calls == [("receive", 3, 10)]
    log.clear()
    leaf.deadline = 20
    d.after(11)
    assert log == [("arm", 20, 11)]
    log.clear()
    d.on_timer(40, 40)                        # superseded by 20
    assert log == [] and leaf.calls == [("receive", 3, 10)]
    leaf.deadline = 60
    d.on_timer(20, 20)
    assert log == [("pfc", 1, 9, 20), ("arm", 60, 20)] and leaf.pfc_out == []


# -- the real agents' events ----------------------------------------------------------------

def exchange(a, b, until=10**10):
    """Two agents back to back, no delay, their timers honoured: until both are quiet."""
    now = 0
    while now < until:
        moved = False
        for src, dst in ((a, b), (b, a)):
            p = src.poll(now)
            while p is not None:
                dst.receive(p, now)
                moved = True
                p = src.poll(now)
        if moved:
            continue
        due = [t for t in (a.next_deadline(), b.next_deadline()) if t >= 0]
        if not due:
            return now
        now = max(now, min(due))
        for h in (a, b):
            if 0 <= h.next_deadline() <= now:
                h.on_timer(now)
    return now


@pytest.mark.parametrize("protocol", ["gse", "roce"])
def test_next_event_yields_the_typed_events_of_a_message(protocol):
    make = host_factory(protocol, default_config(protocol))
    a, b = make(0, random.Random(0), 100.0), make(1, random.Random(1), 100.0)
    assert a.next_event() is None
    a.start_message(7, 1, 3000, 0)
    exchange(a, b)
    got = b.next_event()
    assert type(got) is MessageDelivered
    assert (got.src, got.msg_id, got.size) == (0, 7, 3000) and got.time_ps >= 0
    assert b.next_event() is None
    done = a.next_event()
    assert type(done) is MessageCompleted
    assert (done.msg_id, done.retransmits) == (7, 0) and done.time_ps >= got.time_ps
    assert a.next_event() is None


def test_events_compare_by_value_and_say_what_they_are():
    assert MessageDelivered(1, 2, 3, 4) == MessageDelivered(1, 2, 3, 4)
    assert MessageDelivered(1, 2, 3, 4) != MessageDelivered(1, 2, 3, 5)
    assert MessageCompleted(2, 0, 4) != MessageDelivered(1, 2, 3, 4)
    assert repr(MessageCompleted(2, 1, 4)) == "MessageCompleted(msg_id=2, retransmits=1, time_ps=4)"
