# Augments gse/common/fairq.py.  The htsim NIC's fair queue of ACKs as an extension type:
# the RoCE NIC (cython/gse/agents/roce_nic.pxd) calls append and popleft as C methods.
import cython
from gse.common.fifo cimport Fifo
from gse.wire.packet cimport Packet

cdef long long MSG_ID_LIMIT
cdef long long PEER_LIMIT


@cython.locals(lo="Py_ssize_t", hi="Py_ssize_t", mid="Py_ssize_t", v="long long")
cdef Py_ssize_t _bisect_left(list a, long long x) except -1


cdef class FairQueue:
    cdef public dict fifos
    cdef public list keys
    cdef public list ready
    cdef public object cursor
    cdef public Py_ssize_t count
    cdef public long long last_key
    cdef public Fifo last_fifo

    @cython.locals(fifo=Fifo)
    cdef Fifo _fifo(self, long long key)

    @cython.locals(fifo=Fifo, msg_id="long long", dst="long long", key="long long",
                   ready=list)
    cpdef append(self, Packet pkt)

    @cython.locals(ready=list, keys=list, i="Py_ssize_t", j="Py_ssize_t", fifo=Fifo,
                   pkt=Packet, key="long long")
    cpdef Packet popleft(self)
