# Augments gse/agents/driver.py.  The drivers become extension types whose hooks are C methods:
# a runtime's compiled subclass (gse/runtimes/sim/network.py, udp/node.py) overrides them, so
# the simulator calls its agent, NIC and event queue without a Python call.
import cython
from gse.agents.events cimport MessageDelivered
from gse.agents.interface cimport HostAgent
from gse.wire.packet cimport Packet


cdef class AgentDriver:
    cdef public HostAgent agent
    cdef public long long timer_at
    cdef public object on_delivered
    cdef public object on_completed
    cdef public object on_error
    cdef public object kick
    cdef public object arm

    cpdef start(self, msg_id, dst, size, long long now)

    cpdef receive(self, Packet pkt, long long now)

    cpdef on_timer(self, long long t, long long now)

    @cython.locals(agent=HostAgent, t="long long")
    cpdef after(self, long long now)

    cpdef kick_nic(self, long long now)

    cpdef arm_timer(self, long long t, long long now)


cdef class LeafAgentDriver:
    cdef public object agent
    cdef public long long timer_at
    cdef public object offer
    cdef public object pfc
    cdef public object arm
    cdef public object on_error

    cpdef receive(self, Packet pkt, long long in_port, long long now)

    cpdef on_timer(self, long long t, long long now)

    @cython.locals(t="long long", out=list, pfc_out=list)
    cpdef flush(self, long long now)

    cpdef offer_packet(self, long long port, Packet pkt, long long now)

    cpdef send_pfc(self, long long port, long long kind, long long now)

    cpdef arm_timer(self, long long t, long long now)
