# Augments gse/runtimes/sim/sampler.py.  The per-bin read of the ports is C field reads
# (ports, queues, counters and the receivers' payload are extension types) written through
# a typed memoryview into the current storage chunk (no bounds checks: sample()'s
# directives), and the dense table after the run is C loops; the Sampler is an extension
# type (its per-bin state C fields, its views of the chunk and of prev taken once).
import cython
from cpython.array cimport clone
from gse.agents.receiver cimport ReceiverSide
from gse.agents.roce_receiver cimport RoceReceiver
from gse.runtimes.sim.eventq cimport EventQueue
from gse.runtimes.sim.network cimport HostNode, LinkPort

cdef extern from "gse_prefetch.h":
    void gse_prefetch_port(list ports, Py_ssize_t i)

cdef bint PREFETCH
cdef bint RAW_CHUNKS
cdef object WORDS
cdef Py_ssize_t NPORT
cdef Py_ssize_t HEAD
cdef Py_ssize_t CHUNK
cdef long long NARROW
cdef Py_ssize_t MAX_INDEX


@cython.locals(mask="long long", v="long long", q="long long")
cdef Py_ssize_t _rarer(LinkPort port, long long since, long long now, long long[::1] out,
                       Py_ssize_t k) except -1


@cython.locals(x="Py_ssize_t", n="Py_ssize_t", w="Py_ssize_t", h="Py_ssize_t",
               k="Py_ssize_t", r="Py_ssize_t", mask="long long", f="int",
               port=LinkPort, node=HostNode, gr=ReceiverSide,
               rr=RoceReceiver, o="long long", p="long long", v="long long", tx="long long",
               paused="long long")
cpdef Py_ssize_t sample(list busy, list hosts, list receivers, long long since,
                        long long now, long long b, long long[::1] out, Py_ssize_t pos,
                        long long[::1] prev) except -1


@cython.locals(k="Py_ssize_t", base="Py_ssize_t", stop="Py_ssize_t", last="Py_ssize_t",
               w="long long", mask="Py_ssize_t", below="Py_ssize_t", pop="long long[:]",
               hi="long long", j="Py_ssize_t")
cpdef scatter(long long[:] chunk, Py_ssize_t end, Py_ssize_t n, Py_ssize_t f,
              long long[:] col)


@cython.locals(k="Py_ssize_t", base="Py_ssize_t", s="Py_ssize_t", w="long long")
cpdef scatter_hosts(long long[:] chunk, Py_ssize_t end, Py_ssize_t m, long long[:] col)


@cython.locals(m="Py_ssize_t", b="Py_ssize_t", h="Py_ssize_t")
cpdef gather(long long[:] col, Py_ssize_t n, Py_ssize_t nb, long long[:] index,
             long long[:] out)


cdef class Sampler:
    cdef public list ports
    cdef public list hosts
    cdef public long long bin_ps
    cdef public long long next_stop
    cdef public list edges
    cdef public long long since
    cdef public object topo
    cdef public list receivers
    cdef public object nic_index
    cdef public list host_gbps
    cdef public object prev
    cdef long long[::1] pview
    cdef public Py_ssize_t n
    cdef public list busy
    cdef public list host_busy
    cdef public Py_ssize_t most
    cdef public list chunks
    cdef public list ends
    cdef public object out
    cdef long long[::1] view
    cdef public Py_ssize_t size
    cdef public Py_ssize_t pos
    cdef public bint closed

    cpdef at_stop(self, long long now)

    @cython.locals(stop="long long")
    cpdef bint run_bins(self, EventQueue eq, long long limit) except -1

    cpdef close(self, long long now)

    cpdef _sample(self, long long now)
