# Augments gse/runtimes/sim/network.py.  Ports, switch nodes and host nodes become extension types; the
# agents (GseHost, RoceHost, a fabric leaf) and the port owners stay duck-typed objects.
import cython
from cpython.ref cimport PyObject
from gse.agents.driver cimport AgentDriver
from gse.agents.interface cimport HostAgent
from gse.common.handler cimport Handler
from gse.runtimes.sim.eventq cimport EventQueue
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

cdef class LinkPort(OutputQueue):
    # a port is its queue and its queue's counters (their fields come first: header and
    # vtable, the counters', the queue's; switchmodel/queue.pxd), so that a hop reads one
    # object's run of lines, each at an address known from the port's pointer (its misses
    # overlap), where the port, its queue and the counters were three objects reached one
    # through the other.  Then the port's own: what an offer, a wake-up and a transmission
    # read or write, in that order; then what a sampler reads of a port that is paused or
    # marked (counters.s_flag) and the rest.  queue is the port itself, for its readers.
    # (the object's fourth line, after the queue's counters and the pure build's tails:)
    # what an offer and a transmission read, and a sampler of a port that holds nothing,
    # is not paused and sent nothing in its bin (of other busy ports it reads the
    # counters' first two lines only), then the pending wake-up and the failure hook
    cdef public long long busy_until
    cdef public long long paused_since
    cdef public long long index
    cdef public bint wake_pending
    cdef public bint faces_host
    cdef public object fault
    # the fifth line: the rest of what an offer, a wake-up and a transmission read (mbps
    # and peer_port as C ints: one word for both, so that the line holds them all)
    cdef public EventQueue eq
    cdef public PfcState pfc
    cdef public object wake_fn
    cdef public int mbps
    cdef public int peer_port
    cdef public list watch
    cdef public object wire_rng
    cdef public long long delay
    cdef public object deliver
    # the rest: PFC's, the sampler's totals of the rarer values (read when counters.s_flag
    # is 1), the wire's faults, what reports read
    cdef public object owner
    cdef public long long paused_ps
    cdef public long long s_trims
    cdef public long long s_drops
    cdef public long long s_ecn
    cdef public long long s_paused
    cdef public double loss
    cdef public double corrupt
    cdef public long long wire_drops
    cdef public long long wire_corrupt
    cdef public OutputQueue queue
    cdef public object peer
    cdef public long long node
    cdef public long long port
    cdef public object kind
    cdef public long long pauses_received
    cdef public long long pause_until
    # padding to 488 bytes: with the collector's 16-byte head a 504-byte request, a
    # 512-byte pymalloc block (a HostPort's, 8 bytes more, is one too); such a block starts
    # 48 bytes into a line (after the pool's 48-byte header), so the object starts on one
    cdef long long align_[4]

    cpdef fire(self, a, b)

    @cython.locals(eq=EventQueue, now="long long", result="long long", pfc=PfcState)
    cpdef offer(self, Packet pkt)

    @cython.locals(now="long long", pkt=Packet, pfc=PfcState)
    cpdef wake(self, _a, _b)

    @cython.locals(until="long long")
    cpdef on_pfc(self, Packet pkt, long long now)

    cpdef pause_expired(self, until, _b)

    cpdef resume(self, long long now)

    cpdef restart(self, long long now)

    cpdef long long paused_total_ps(self, long long now) except? -1

    cpdef touch(self)

    @cython.locals(done="long long", r="double")
    cpdef transmit(self, Packet pkt, long long now)


cdef class HostPort(LinkPort):
    cdef public HostAgent agent     # (496 bytes: a 512-byte block, as a LinkPort's)

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
