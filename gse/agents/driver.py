"""The one loop every runtime drives a sans-I/O agent with.

An agent (``gse.agents.interface.HostAgent``) only answers calls; what a runtime must do
after each call is always the same, and is here once: take the agent's events
(``next_event()``) to the runtime's callbacks, kick the NIC if the agent has something to
send, and keep one timer armed at the agent's ``next_deadline()``.  The timer rule is the
one every runtime used before it was shared, and the simulator's event count depends on it:
re-arm only when the new deadline is earlier than the armed one (a later deadline finds
the earlier timer firing first, a call that re-arms), and when a timer fires for a deadline
that is no longer the armed one (an earlier one superseded it), do nothing.

What differs between runtimes is supplied, as constructor callables or by a subclass
overriding the hooks (the compiled runtimes do the latter, so that the simulator calls its
NIC and event queue as C methods):

* ``kick_nic(now)``: the NIC may send (``kick``);
* ``arm_timer(t, now)``: call ``on_timer(t, ...)`` at time ``t`` (``arm``); ``t`` may be
  in the past, the runtime then runs it as soon as it can;
* ``on_error(what, exc)``: if given, an exception of the agent is reported to it and the
  loop goes on (the UDP runtimes, which must not die of one bad datagram); without it,
  exceptions propagate (the simulator and the tests, where they are bugs).

``LeafAgentDriver`` is the same loop for a fabric leaf (``switchmodel.fabric.FabricLeaf``),
whose output is a list of ``(port, packet)`` to offer and PAUSE/RESUME frames to send to its
hosts instead of events and a NIC.
"""

from gse.agents.events import MessageDelivered

__all__ = ["AgentDriver", "LeafAgentDriver"]


class Driver:
    """What both drivers share: one timer armed at the agent's ``next_deadline()`` by the
    rule above, and the agent's exceptions reported or propagated.  ``after(now)`` is what
    follows every call into the agent."""

    __slots__ = ("agent", "timer_at", "arm", "on_error")

    def __init__(self, agent, arm=None, on_error=None):
        self.agent = agent
        self.timer_at = -1                  # the deadline the armed timer is for, -1: none
        self.arm = arm                      # fn(t, now), unless arm_timer is overridden
        self.on_error = on_error            # fn(what, exc), or None: exceptions propagate

    def on_timer(self, t, now):
        """The timer armed for deadline ``t`` fired at ``now``: ignored if an earlier
        deadline superseded it."""
        if t != self.timer_at:
            return
        self.timer_at = -1
        if self.on_error is None:
            self.call_timer(now)
        else:
            try:
                self.call_timer(now)
            except Exception as exc:
                self.on_error("timer", exc)
        self.after(now)

    def call_timer(self, now):
        """The agent's ``on_timer`` (a typed call in the compiled host driver)."""
        self.agent.on_timer(now)

    def after(self, now):
        raise NotImplementedError

    def rearm(self, t, now):
        """Arm the timer at the agent's deadline ``t`` if it is earlier than the armed
        one."""
        if t >= 0 and (self.timer_at < 0 or t < self.timer_at):
            self.timer_at = t
            self.arm_timer(t, now)

    def arm_timer(self, t, now):
        """Have ``on_timer(t, ...)`` called at ``t`` (as soon as possible if past)."""
        self.arm(t, now)


class AgentDriver(Driver):
    """Drives one host agent: calls in, events to ``on_delivered`` / ``on_completed``
    (each called with the event), the NIC kicked, one timer."""

    __slots__ = ("on_delivered", "on_completed", "kick")

    def __init__(self, agent, on_delivered=None, on_completed=None, kick=None, arm=None,
                 on_error=None):
        Driver.__init__(self, agent, arm, on_error)
        self.on_delivered = on_delivered    # fn(MessageDelivered), or None
        self.on_completed = on_completed    # fn(MessageCompleted), or None
        self.kick = kick                    # fn(now), unless kick_nic is overridden

    # -- the calls into the agent ---------------------------------------------------------

    def start(self, msg_id, dst, size, now):
        """The application has a message for ``dst``."""
        agent = self.agent
        if self.on_error is None:
            agent.start_message(msg_id, dst, size, now)
        else:
            try:
                agent.start_message(msg_id, dst, size, now)
            except Exception as exc:
                self.on_error("start message %d" % msg_id, exc)
        self.after(now)

    def receive(self, pkt, now):
        """A packet arrived for the agent."""
        agent = self.agent           # typed: the compiled build calls it as a C method
        if self.on_error is None:
            agent.receive(pkt, now)
        else:
            try:
                agent.receive(pkt, now)
            except Exception as exc:
                self.on_error("receive %r" % (pkt,), exc)
        self.after(now)

    def after(self, now):
        """What follows every call into the agent (and the NIC's own wake-ups, after which
        a poll may have moved the agent's deadline)."""
        agent = self.agent
        if len(agent._events) > 0:   # only after a message was delivered or completed
            event = agent.next_event()
            while event is not None:
                if isinstance(event, MessageDelivered):
                    if self.on_delivered is not None:
                        self.on_delivered(event)
                elif self.on_completed is not None:
                    self.on_completed(event)
                event = agent.next_event()
        if agent.has_work():
            self.kick_nic(now)
        self.rearm(agent.next_deadline(), now)

    def call_timer(self, now):
        agent = self.agent
        agent.on_timer(now)

    # -- what the runtime supplies --------------------------------------------------------

    def kick_nic(self, now):
        """The agent has something to send: the NIC may pull it."""
        self.kick(now)


class LeafAgentDriver(Driver):
    """Drives one fabric leaf agent: packets in (with their ingress port), its ``out``
    offered to ports, its ``pfc_out`` sent to its hosts, one timer."""

    __slots__ = ("offer", "pfc")

    def __init__(self, agent, offer=None, pfc=None, arm=None, on_error=None):
        Driver.__init__(self, agent, arm, on_error)
        self.offer = offer                  # fn(port, pkt, now), unless offer_packet is
        self.pfc = pfc                      # fn(port, kind, now), unless send_pfc is

    def receive(self, pkt, in_port, now):
        """A packet arrived on ``in_port``."""
        if self.on_error is None:
            self.agent.receive(pkt, in_port, now)
        else:
            try:
                self.agent.receive(pkt, in_port, now)
            except Exception as exc:
                self.on_error("receive %r" % (pkt,), exc)
        self.after(now)

    def after(self, now):
        """What follows every call into the leaf: its packets out, its timer re-armed."""
        agent = self.agent
        out = agent.out
        if out:
            for port, pkt in out:
                self.offer_packet(port, pkt, now)
            out.clear()
        pfc_out = agent.pfc_out
        if pfc_out:
            for port, kind in pfc_out:
                self.send_pfc(port, kind, now)
            pfc_out.clear()
        self.rearm(agent.next_deadline(), now)

    def offer_packet(self, port, pkt, now):
        """Queue ``pkt`` at the leaf's egress ``port``."""
        self.offer(port, pkt, now)

    def send_pfc(self, port, kind, now):
        """Send a PAUSE or RESUME frame to the host on ``port``."""
        self.pfc(port, kind, now)
