"""What a host agent tells its runtime, as typed events (aioquic's ``quic.events``).

An agent queues an event when a message reaches its end on this host and the runtime takes
them with ``agent.next_event()`` after every call it makes (``gse.agents.driver`` does
that for every runtime).  Two kinds are all the runtimes need: a message received in full
here (``MessageDelivered``) and a message sent from here that the peer has acknowledged in
full (``MessageCompleted``).  Times are the agent's ``now`` in picoseconds.

The classes carry ``__slots__`` and no behaviour, so that the compiled build makes them
extension types (cython/gse/agents/events.pxd) with the same attributes, equality and repr.
"""

__all__ = ["AgentEvent", "MessageDelivered", "MessageCompleted", "delivered", "completed"]


class AgentEvent:
    """The base of every event an agent queues."""

    __slots__ = ()


class MessageDelivered(AgentEvent):
    """Message ``msg_id`` of host ``src`` (``size`` bytes) was received in full here."""

    __slots__ = ("src", "msg_id", "size", "time_ps")

    def __init__(self, src, msg_id, size, time_ps):
        self.src = src
        self.msg_id = msg_id
        self.size = size
        self.time_ps = time_ps

    def __eq__(self, other):
        if not isinstance(other, MessageDelivered):
            return NotImplemented
        return (self.src == other.src and self.msg_id == other.msg_id
                and self.size == other.size and self.time_ps == other.time_ps)

    def __repr__(self):
        return "MessageDelivered(src=%d, msg_id=%d, size=%d, time_ps=%d)" % (
            self.src, self.msg_id, self.size, self.time_ps)


class MessageCompleted(AgentEvent):
    """Message ``msg_id`` sent from here was acknowledged in full after ``retransmits``
    packets sent again."""

    __slots__ = ("msg_id", "retransmits", "time_ps")

    def __init__(self, msg_id, retransmits, time_ps):
        self.msg_id = msg_id
        self.retransmits = retransmits
        self.time_ps = time_ps

    def __eq__(self, other):
        if not isinstance(other, MessageCompleted):
            return NotImplemented
        return (self.msg_id == other.msg_id and self.retransmits == other.retransmits
                and self.time_ps == other.time_ps)

    def __repr__(self):
        return "MessageCompleted(msg_id=%d, retransmits=%d, time_ps=%d)" % (
            self.msg_id, self.retransmits, self.time_ps)


def delivered(src, msg_id, size, time_ps):
    """``MessageDelivered(src, msg_id, size, time_ps)``, as the agents make it once per
    message: compiled, a C function taking C integers, without the constructor's argument
    handling (as ``gse.wire.packet.new_packet``)."""
    event = MessageDelivered.__new__(MessageDelivered)
    event.src = src
    event.msg_id = msg_id
    event.size = size
    event.time_ps = time_ps
    return event


def completed(msg_id, retransmits, time_ps):
    """``MessageCompleted(msg_id, retransmits, time_ps)``, made as ``delivered``."""
    event = MessageCompleted.__new__(MessageCompleted)
    event.msg_id = msg_id
    event.retransmits = retransmits
    event.time_ps = time_ps
    return event
