# Augments gse/runtimes/sim/sampler.py.  The per-bin read of every port is C field reads
# (ports, queues and counters are extension types) written through a typed memoryview into
# the current storage chunk (no bounds checks: sample()'s directives); the Sampler class
# stays a Python class.
import cython
from gse.runtimes.sim.network cimport LinkPort
from switchmodel.queue cimport OutputQueue, PortCounters

cdef Py_ssize_t NPORT
cdef Py_ssize_t ROW
cdef Py_ssize_t CHUNK
cdef Py_ssize_t PREV


@cython.locals(n="Py_ssize_t", i="Py_ssize_t", j="Py_ssize_t", h="Py_ssize_t",
               m="Py_ssize_t", k="Py_ssize_t", base="Py_ssize_t", port=LinkPort,
               q=OutputQueue, c=PortCounters, o="long long", p="long long", v="long long",
               tx="long long", paused="long long", pps="long long", trims="long long",
               drops="long long", ecn="long long")
cpdef Py_ssize_t sample(list ports, list receivers, long long since, long long now,
                        long long[:] out,
                        Py_ssize_t pos, long long[:] prev, long long[:] run_peak) except -1
