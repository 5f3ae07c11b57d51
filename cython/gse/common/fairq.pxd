# Augments gse/common/fairq.py.  The htsim NIC's fair queue of ACKs as an extension type:
# the RoCE NIC (cython/gse/agents/roce_nic.pxd) calls append and popleft as C methods.
import cython
from gse.common.fifo cimport Fifo
from gse.wire.packet cimport Packet

cdef long long MSG_ID_LIMIT
cdef long long PEER_LIMIT


cdef class FairQueue:
    cdef public dict fifos
    cdef public list keys
    cdef public list ready
    cdef public object cursor
    cdef public Py_ssize_t count

    @cython.locals(fifo=Fifo, msg_id="long long", dst="long long", key="long long")
    cpdef append(self, Packet pkt)

    @cython.locals(ready=list, keys=list, i="Py_ssize_t", j="Py_ssize_t", fifo=Fifo,
                   pkt=Packet)
    cpdef Packet popleft(self)
