# Augments gse/workloads/stream.py.  StreamRun becomes an extension type (a Handler: the
# event queue starts a message by calling its C method fire) whose per-message state is
# C integers in typed memoryviews over its flat arrays; the phases, the log's arrays and
# the results stay Python objects.
import cython
from gse.agents.driver cimport AgentDriver
from gse.agents.events cimport MessageCompleted, MessageDelivered
from gse.common.handler cimport Handler
from gse.runtimes.sim.eventq cimport EventQueue
from gse.runtimes.sim.network cimport HostNode

cdef long long SHIFT
cdef long long INDEX


cpdef long long chunk_index(long long op, long long n, long long pos, long long step)


cdef class StreamRun(Handler):
    cdef public object topo
    cdef public list phases
    cdef public object protocol
    cdef public object cfg
    cdef public object seed
    cdef public long long n
    cdef public list group
    cdef public list pos
    cdef public long long[::1] base
    cdef public long long[::1] sends
    cdef public long long[::1] is_ring
    cdef public long long[::1] width
    cdef public long long[::1] window
    cdef public long long[::1] psize
    cdef public long long[::1] opcode
    cdef public long long[::1] coff
    cdef public long long[::1] csize
    cdef public long long[::1] order
    cdef public long long[::1] slot
    cdef public long long[::1] where
    cdef public object log
    cdef long long[::1] l_start
    cdef long long[::1] l_deliver
    cdef long long[::1] l_finish
    cdef long long[::1] l_ideal
    cdef int[::1] l_retx
    cdef int[::1] l_size
    cdef public list ranks
    cdef public long long[::1] phase_of
    cdef public long long[::1] entered
    cdef public long long[::1] next_k
    cdef public long long[::1] recv
    cdef public long long[::1] acked
    cdef public long long[::1] flying
    cdef public dict waiters
    cdef public list enter_ps
    cdef public list done_ps
    cdef public object net
    cdef public EventQueue eq
    cdef public list hosts
    cdef public long long mtu
    cdef public long long[::1] ideal_size
    cdef public long long[::1] ideal_ps
    cdef public object start_fn
    cdef public object enter_fn
    cdef public object zero_fn

    @cython.locals(now="long long")
    cpdef _enter(self, long long h, long long p)

    cpdef _enter_event(self, long long h, long long p)

    @cython.locals(i="long long", m="long long", step="long long")
    cpdef long long _dst(self, long long h, long long p, long long k) except? -1

    @cython.locals(p="long long", k="long long", dst="long long", c="long long",
                   last="long long")
    cpdef _try_send(self, long long h)

    @cython.locals(row="long long", mid="long long", now="long long", at="long long",
                   ideal="long long")
    cpdef _launch(self, long long h, long long dst, long long p, long long k, long long size)

    cpdef fire(self, a, b)

    @cython.locals(p="long long", k="long long", node=HostNode)
    cpdef _start(self, long long h, long long mid)

    @cython.locals(p="long long")
    cpdef _zero_done(self, long long h, long long mid)

    cpdef _on_delivered_event(self, long long dst, MessageDelivered event)

    @cython.locals(p="long long", k="long long", sends="long long", row="long long")
    cpdef _on_delivered(self, long long dst, long long src, long long mid, long long now)

    @cython.locals(now="long long")
    cpdef _check_done(self, long long h, long long p)

    @cython.locals(mid="long long", p="long long", row="long long")
    cpdef _sent(self, long long src, MessageCompleted event)
