# Augments gse/runtimes/udp/link.py.  The ports become extension types that call the queue, the
# PFC state, the agent and the codec (gse.wire.fastcodec) as C functions and methods.  The
# endpoint may be a stand-in in tests: a port calls a real Endpoint's send as a C method, a
# stand-in's through Python.
import cython
from gse.agents.interface cimport HostAgent
from gse.runtimes.udp.io cimport Endpoint, Scheduler
from gse.wire cimport linkrate
from gse.wire.fastcodec cimport encode_packet
from gse.wire.packet cimport Packet, new_packet
from switchmodel.pfc cimport PfcState
from switchmodel.queue cimport OutputQueue, PortCounters

cdef long long DATA
cdef long long F_SEC
cdef long long F_TRIMMED
cdef long long HEADER_BYTES
cdef long long PAUSE
cdef long long PRIO_CONTROL
cdef long long PRIO_DATA
cdef long long RESUME
cdef long long DROPPED
cdef long long ENQUEUED


@cython.locals(c=Packet)
cpdef Packet copy_packet(Packet pkt)

cdef _attach_payload(Packet pkt, object raw)


cdef class EmulatedPort:
    cdef public Scheduler sched
    cdef public object endpoint
    cdef public Endpoint ep
    cdef public object send
    cdef public object peer_addr
    cdef public OutputQueue queue
    cdef public long long mbps
    cdef public long long delay
    cdef public long long slack
    cdef public long long busy_until
    cdef public long long wake_at
    cdef public object wake_fn
    cdef public object wire
    cdef public dict raw
    cdef public double loss
    cdef public double corrupt
    cdef public object rng
    cdef public long long wire_drops
    cdef public long long wire_corrupt
    cdef public long long encode_errors
    cdef public object codec
    cdef public long long node
    cdef public long long port
    cdef public long long peer
    cdef public long long peer_port
    cdef public object kind
    cdef public bint faces_host
    cdef public PfcState pfc
    cdef public object owner
    cdef public long long paused_since
    cdef public long long paused_ps
    cdef public long long pauses_received
    cdef public long long pause_until
    cdef public object pause_fn
    cdef public long long pause_expiries
    cdef public object seal
    cdef public object fault
    cdef public long long pfc_limit
    cdef public object restart_fn
    cdef public object plane
    cdef public object lane_addr

    @cython.locals(queue=OutputQueue, c=PortCounters, flags="long long",
                   result="long long", pfc=PfcState)
    cpdef offer(self, Packet pkt, object raw, long long now, bint transient=*)

    @cython.locals(queue=OutputQueue)
    cpdef bint _sendable(self) except -1

    @cython.locals(queue=OutputQueue, raws=dict, pfc=PfcState, pkt=Packet, changed=bint)
    cpdef _drain(self, long long now)

    @cython.locals(done="long long", r="double", depart="long long", lane=bint)
    cpdef _transmit(self, Packet pkt, object raw, bint changed, long long start,
                    long long now)

    @cython.locals(limit="long long")
    cpdef _flush(self, long long now)

    cpdef _arm(self, long long t)

    @cython.locals(now="long long", nxt="long long", w="long long")
    cpdef _wake(self, long long t, _arg)

    @cython.locals(queue=OutputQueue, until="long long")
    cpdef on_pfc(self, bint pause, long long quanta, long long now)

    cpdef _pause_expired(self, long long t, _arg)

    @cython.locals(queue=OutputQueue)
    cpdef resume(self, long long now)

    cpdef restart(self, long long now)

    cpdef long long paused_total_ps(self, long long now) except? -1


cdef class HostNic(EmulatedPort):
    cdef public HostAgent agent
    cdef public long long catchup
    cdef public bint want

    @cython.locals(agent=HostAgent, queue=OutputQueue, start="long long",
                   floor="long long", limit="long long", pkt=Packet, burst="long long",
                   i="long long")
    cpdef kick(self, long long now)

    cpdef _drain(self, long long now)

    cpdef bint _sendable(self) except -1

    cpdef restart(self, long long now)
