# Augments gse/agents/driver.py.  The drivers become extension types whose hooks are C methods:
# a runtime's compiled subclass (gse/runtimes/sim/network.py, udp/node.py) overrides them, so
# the simulator calls its agent, NIC and event queue without a Python call.
import cython
from gse.agents.events cimport MessageDelivered
from gse.agents.interface cimport HostAgent
from gse.wire.packet cimport Packet


cdef class Driver:
    cdef public object agent
    cdef public long long timer_at
    cdef public object arm
    cdef public object on_error

    cpdef on_timer(self, long long t, long long now)

    cpdef call_timer(self, long long now)

    cpdef after(self, long long now)

    cpdef rearm(self, long long t, long long now)

    cpdef arm_timer(self, long long t, long long now)


cdef class AgentDriver(Driver):
    cdef public object on_delivered
    cdef public object on_completed
    cdef public object kick

    @cython.locals(agent=HostAgent)
    cpdef start(self, msg_id, dst, size, long long now)

    @cython.locals(agent=HostAgent)
    cpdef receive(self, Packet pkt, long long now)

    @cython.locals(agent=HostAgent)
    cpdef after(self, long long now)

    @cython.locals(agent=HostAgent)
    cpdef call_timer(self, long long now)

    cpdef kick_nic(self, long long now)


cdef class LeafAgentDriver(Driver):
    cdef public object offer
    cdef public object pfc

    cpdef receive(self, Packet pkt, long long in_port, long long now)

    @cython.locals(out=list, pfc_out=list)
    cpdef after(self, long long now)

    cpdef offer_packet(self, long long port, Packet pkt, long long now)

    cpdef send_pfc(self, long long port, long long kind, long long now)
