# Augments gse/runtimes/sim/htsim_model.py.  The htsim-PFC fabric's pipes, ports and switch
# nodes become extension types: the ports and the node derive from network.pxd's and
# override their C methods; a pipe's arrival times are a ring of C integers.
import cython
from cpython.ref cimport PyObject
from gse.common.handler cimport Handler
from gse.runtimes.sim.eventq cimport EventQueue
from gse.runtimes.sim.network cimport HostNode, HostPort, LinkPort, SwitchNode
from gse.wire cimport linkrate
from gse.wire.packet cimport Packet
from switchmodel.queue cimport OutputQueue

cdef long long PAUSE
cdef long long RESUME
cdef long long PRIO_CONTROL
cdef long long PRIO_DATA
cdef bint C_HINT

cdef extern from "gse_qlink.h":
    PyObject* gse_obj_hint(object o)
    PyObject* gse_queue_head(OutputQueue q)


cdef class HtsimSwitchNode


cdef class Pipe(Handler):
    cdef public EventQueue eq
    cdef public long long delay
    cdef public list pkts
    cdef public long long[::1] times
    cdef public Py_ssize_t head
    cdef public Py_ssize_t count
    cdef public Py_ssize_t mask
    cdef public Handler target
    cdef public HtsimSwitchNode switch
    cdef public HostNode host
    cdef public long long port
    cdef public object fn

    @cython.locals(t="long long", n="Py_ssize_t", i="Py_ssize_t")
    cpdef push(self, Packet pkt)

    @cython.locals(size="Py_ssize_t", i="Py_ssize_t", j="Py_ssize_t", old="long long[::1]",
                   olds=list, pkts=list)
    cpdef _grow(self)

    @cython.locals(pkt=Packet, h="Py_ssize_t", port="long long", now_pkt=Packet,
                   sw=HtsimSwitchNode, swp=Pipe)
    cpdef fire(self, _a, _b)


@cython.locals(r="double")
cdef _launch(LinkPort port, Pipe pipe, Packet pkt)

cdef bint _hold(LinkPort port, Packet pkt, long long now) except -1


cdef class HtsimSwitchPort(LinkPort):
    cdef public Packet tx_pkt
    cdef public Pipe pipe
    cdef public Pipe wire

    cpdef offer(self, Packet pkt)

    cpdef begin(self, Packet pkt, long long now)

    @cython.locals(pkt=Packet, nxt=Packet, node=SwitchNode)
    cpdef fire(self, a, b)

    cpdef wake(self, _a, _b)

    @cython.locals(nxt=Packet)
    cpdef restart(self, long long now)

    cpdef on_pfc(self, Packet pkt, long long now)


cdef class HtsimHostPort(HostPort):
    cdef public Packet tx_pkt
    cdef public Pipe pipe
    cdef public Pipe wire

    @cython.locals(pkt=Packet)
    cpdef kick(self, long long now)

    @cython.locals(pkt=Packet, node=HostNode)
    cpdef fire(self, a, b)

    cpdef wake(self, _a, _b)

    @cython.locals(resumed=bint, node=HostNode)
    cpdef on_pfc(self, Packet pkt, long long now)


cdef class HtsimSwitchNode(SwitchNode):
    cdef public Pipe pipe

    cpdef receive(self, Packet pkt, long long in_port)

    @cython.locals(kind="long long", egress=LinkPort)
    cpdef bint admit(self, Packet pkt, long long in_port) except -1

    @cython.locals(port="long long", egress=LinkPort)
    cpdef forward(self, Packet pkt, long long in_port)

    @cython.locals(egress=HtsimSwitchPort)
    cpdef send_pfc(self, long long port, long long kind)
