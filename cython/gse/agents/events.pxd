# Augments gse/agents/events.py: the events become extension types, made by the compiled
# agents without a Python call (``delivered``, ``completed``: C functions).
import cython


cdef class AgentEvent:
    pass


cdef class MessageDelivered(AgentEvent):
    cdef public long long src
    cdef public long long msg_id
    cdef public long long size
    cdef public long long time_ps


cdef class MessageCompleted(AgentEvent):
    cdef public long long msg_id
    cdef public long long retransmits
    cdef public long long time_ps


@cython.locals(event=MessageDelivered)
cpdef MessageDelivered delivered(long long src, long long msg_id, long long size,
                                 long long time_ps)

@cython.locals(event=MessageCompleted)
cpdef MessageCompleted completed(long long msg_id, long long retransmits, long long time_ps)
