# Augments gse/runtimes/sim/network.py.  Ports, switch nodes and host nodes become extension types; the
# agents (GseHost, RoceHost, a fabric leaf) and the port owners stay duck-typed objects.
import cython
from cpython.ref cimport PyObject
from gse.agents.driver cimport AgentDriver
from gse.agents.interface cimport HostAgent
from gse.runtimes.sim.eventq cimport EventQueue, Handler
from gse.wire cimport linkrate
from gse.wire.packet cimport Packet
from switchmodel.pfc cimport PfcState
from switchmodel.queue cimport OutputQueue, PortCounters
from switchmodel.switch cimport Switch

cdef long long PAUSE
cdef long long RESUME
cdef long long PRIO_CONTROL
cdef long long PRIO_DATA
cdef long long ENQUEUED
cdef bint C_HINT

cdef extern from "gse_qlink.h":
    PyObject* gse_queue_head(OutputQueue q)

cdef class HostNode

cdef class LinkPort(Handler):
    # a LinkPort is a 384-byte pymalloc block with the GC head, so it starts on a line:
    # the header and the vtable, then 5 x 8 = 64 bytes: all that a sampler reads of a
    # busy port at every bin (gse.runtimes.sim.sampler), with its counters' line (a
    # pointer chain: no reference taken, so not the counters' header); busy_until is
    # also the first thing an offer, a wake-up and a transmission read
    cdef public PortCounters counters
    cdef public long long busy_until
    cdef public long long paused_since
    cdef public long long paused_ps
    cdef public long long index
    # the next two lines (one 128-byte aligned pair, which the CPU fetches together):
    # the rest of what an offer, a wake-up and a transmission read or write, in the
    # order they read it (where they took four lines, two of them not a pair)
    cdef public OutputQueue queue
    cdef public object fault
    cdef public bint wake_pending
    cdef public bint faces_host
    cdef public EventQueue eq
    cdef public PfcState pfc
    cdef public object wake_fn
    cdef public long long mbps
    cdef public list watch
    cdef public object rng
    cdef public object deliver
    cdef public long long delay
    cdef public long long peer_port
    cdef public object owner
    cdef public double loss
    cdef public double corrupt
    cdef public long long wire_drops
    # the sampler's totals of the rarer values (read when counters.s_flag is set or the
    # port is paused), then the rest
    cdef public long long s_trims
    cdef public long long s_drops
    cdef public long long s_ecn
    cdef public long long s_paused
    cdef public long long wire_corrupt
    cdef public object peer
    cdef public long long node
    cdef public long long port
    cdef public object kind
    cdef public long long pauses_received
    cdef public long long pause_until
    # padding to 368 bytes (a 384-byte block: 6 lines; at 312, a 336-byte block, a port
    # would start anywhere in a line)
    cdef long long align_[11]

    cpdef fire(self, a, b)

    @cython.locals(eq=EventQueue, now="long long", queue=OutputQueue, result="long long",
                   pfc=PfcState)
    cpdef offer(self, Packet pkt)

    @cython.locals(now="long long", pkt=Packet, pfc=PfcState, queue=OutputQueue)
    cpdef wake(self, _a, _b)

    @cython.locals(until="long long")
    cpdef on_pfc(self, Packet pkt, long long now)

    cpdef pause_expired(self, until, _b)

    @cython.locals(queue=OutputQueue)
    cpdef resume(self, long long now)

    cpdef restart(self, long long now)

    cpdef long long paused_total_ps(self, long long now) except? -1

    cpdef touch(self)

    @cython.locals(done="long long", r="double")
    cpdef transmit(self, Packet pkt, long long now)


cdef class HostPort(LinkPort):
    cdef public HostAgent agent
    # padding to 432 bytes (a 448-byte block, 7 lines: a host port starts on a line too)
    cdef long long align2_[7]

    @cython.locals(pkt=Packet)
    cpdef kick(self, long long now)

    @cython.locals(node=HostNode)
    cpdef wake(self, _a, _b)

    @cython.locals(node=HostNode)
    cpdef restart(self, long long now)


cdef class SwitchNode(Handler):
    cdef public EventQueue eq
    cdef public Switch switch
    cdef public list ports
    cdef public long long latency
    cdef public long long unroutable
    cdef public PfcState pfc
    cdef public long long pfc_frames
    cdef public long long bad_frames

    cpdef send_pfc(self, long long port, long long kind)

    cpdef long long _refresh_ps(self, long long port) except? -1

    cpdef refresh_pause(self, port, _b)

    cpdef fire(self, a, b)

    cpdef receive(self, Packet pkt, long long in_port)

    @cython.locals(kind="long long", port="long long", egress=LinkPort)
    cpdef forward(self, Packet pkt, long long in_port)


cdef class HostDriver(AgentDriver):
    cdef public HostNode node
    cdef public object timer_fn

    cpdef kick_nic(self, long long now)

    cpdef arm_timer(self, long long t, long long now)

    cpdef fire_timer(self, long long t, _b)


cdef class HostNode(Handler):
    cdef public EventQueue eq
    cdef public HostAgent agent
    cdef public HostPort nic
    cdef public HostDriver driver
    cdef public long long index
    cdef public list watch

    cpdef fire(self, a, b)

    cpdef touch(self)

    @cython.locals(now="long long", kind="long long")
    cpdef receive(self, Packet pkt, long long in_port)

    cpdef start(self, msg, _b)

    cpdef after(self, long long now)
