# Augments gse/runtimes/udp/node.py.  Drivers become extension types: the decoder, the ports, the
# switch's route, the scheduler and the agent's methods are called as C functions.  The
# endpoint stays a duck-typed object (tests drive nodes with a stand-in).
import cython
from gse.agents.driver cimport AgentDriver
from gse.agents.interface cimport HostAgent
from gse.runtimes.udp.io cimport Scheduler
from gse.wire.packet cimport Packet, new_packet
from gse.runtimes.udp.link cimport EmulatedPort, HostNic, copy_packet
from gse.wire.fastcodec cimport decode_header, decode_header_into, pattern_intact, payload_intact
from switchmodel.pfc cimport PfcState
from switchmodel.switch cimport Switch

cdef long long DATA
cdef long long F_TRIMMED
cdef long long PAUSE
cdef long long RESUME
cdef long long PRIO_CONTROL
cdef long long PRIO_DATA


cdef class NodeDriver:
    cdef public long long node
    cdef public object name
    cdef public object kind
    cdef public Scheduler sched
    cdef public object endpoint
    cdef public list ports
    cdef public dict port_of
    cdef public dict malformed
    cdef public long long foreign
    cdef public long long datagrams
    cdef public Py_ssize_t max_datagram
    cdef public object codec
    cdef public dict pfc_in
    cdef public object link_auth
    cdef public object lane
    cdef public long long lane_datagrams
    cdef public list pfc_lags
    cdef public long long pfc_lag_n
    cdef public long long pfc_lag_max
    cdef public long long clock_offset_ps

    @cython.locals(pkt=Packet, in_port="long long")
    cpdef Packet _decode(self, data, addr, Packet into)

    @cython.locals(port=EmulatedPort, limit="long long", quanta="long long", lag="long long")
    cpdef long long admit_pfc(self, Packet pkt, data) except -2


@cython.final
cdef class SwitchDriver(NodeDriver):
    cdef public Switch switch
    cdef public PfcState pfc
    cdef public long long latency
    cdef public long long unroutable
    cdef public Packet scratch
    cdef public object refresh_fn
    cdef public object route_updates
    cdef public object plane

    @cython.locals(pkt=Packet)
    cpdef datagram(self, data, addr)

    @cython.locals(kind="long long", port="long long", egress=EmulatedPort,
                   quanta="long long")
    cpdef _route(self, Packet pkt, data, long long now)

    @cython.locals(p=EmulatedPort, quanta="long long", half="long long", pkt=Packet)
    cpdef send_pfc(self, long long port, long long kind, long long now)

    cpdef _refresh_pause(self, long long _t, port)


cdef class HostDriver


cdef class HostAgentDriver(AgentDriver):
    cdef public HostDriver host
    cdef public object timer_fn

    cpdef kick_nic(self, long long now)

    cpdef arm_timer(self, long long t, long long now)

    cpdef _fire_timer(self, long long t, _arg)


@cython.final
cdef class HostDriver(NodeDriver):
    cdef public HostAgent agent
    cdef public HostNic nic
    cdef public HostAgentDriver driver
    cdef public object on_delivered
    cdef public object on_sent
    cdef public dict delivered
    cdef public dict sent
    cdef public long long payload_errors
    cdef public long long payload_bytes
    cdef public long long duplicate_deliveries
    cdef public long long agent_errors
    cdef public dict started
    cdef public object tss

    @cython.locals(pkt=Packet, now="long long", kind="long long", quanta="long long",
                   intact=bint)
    cpdef datagram(self, data, addr)

    cpdef after(self, long long now)
