# Augments gse/agents/events.py: the events become extension types, made by the compiled
# agents without a Python call.


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
