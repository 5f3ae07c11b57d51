# Augments gse/runtimes/udp/io.py.  Endpoint and Scheduler become extension types.  On IPv4 the
# endpoint receives and sends with recvmmsg(2)/sendmmsg(2) (recvfrom(2)/sendto(2) where
# there are none) itself, through the C of gse_udp_io.c (setup.py compiles it into this
# extension): an empty socket is a return value, not a BlockingIOError, the sender's
# (ip, port) tuple is built once per address and each destination's sockaddr is parsed
# once -- what socket.recvfrom/sendto do, without their per-call conversions.  io.py's
# C_IO (cython.compiled) is True here: the pure module uses the socket module instead.
import cython

cdef extern from "gse_udp_io.h":
    long long gse_monotonic_ns()
    object gse_recv4(int fd, Py_ssize_t size, dict cache, Py_ssize_t max)
    int gse_send4(int fd, bytes data, object addr, dict cache, Py_ssize_t max) except -1
    int gse_know4(object addr, dict cache) except -1
    int gse_epoll_ready(int epfd)
    int gse_epoll_fd(int i)
    int gse_epoll_lanes(int epfd)
    int gse_epoll_lane_fd(int i)
    bint GSE_HAVE_MMSG
    int GSE_MMSG
    object gse_recv4_many(int fd, Py_ssize_t size, int vlen, dict cache, Py_ssize_t max)
    Py_ssize_t gse_send4_many(int fd, list datas, list sas, Py_ssize_t start)
    object gse_sa4(object addr, dict cache, Py_ssize_t max)
    int gse_timerfd_open()
    int gse_timerfd_at(int fd, long long abs_ns)
    void gse_timerfd_drain(int fd)
    void gse_timer_slack(long ns)

cdef bint C_IO
cdef long long SPIN_PS
cdef long long DRAIN_BATCH
cdef bint _deferring
cdef list _pending

cpdef flush_sends()

cpdef bint hold_flush(holder) except -1


cdef class Reactor

@cython.final
cdef class Endpoint:
    cdef public object sock
    cdef public int fd
    cdef public object addr
    cdef public object name
    cdef public object loop
    cdef public object handler
    cdef public Py_ssize_t recv_size
    cdef public long long sent
    cdef public long long send_blocked
    cdef public long long send_errors
    cdef public long long recv_errors
    cdef public list errors
    cdef public bint closed
    cdef public dict addr_cache
    cdef public dict sockaddr_cache
    cdef public bint c4
    cdef public Reactor reactor
    cdef public list out_data
    cdef public list out_sa
    cdef public bint dirty
    cdef public long long batches
    cdef public object drain
    cdef public bint lane

    cpdef _readable(self)

    @cython.locals(left="long long", want=int, items=object, item=object, outer=bint)
    cpdef _readable_c(self)

    @cython.locals(i="long long", item=object)
    cpdef _readable_one(self)

    @cython.locals(r=int, sa=object)
    cpdef send(self, data, addr)

    @cython.locals(datas=list, sas=list, n=Py_ssize_t, start=Py_ssize_t, r=Py_ssize_t,
                   done=Py_ssize_t)
    cpdef flush(self)


@cython.final
cdef class Reactor:
    cdef public object loop
    cdef public object ep
    cdef public int epfd
    cdef public dict endpoints
    cdef public bint closed
    cdef public object lane_ep
    cdef public int lane_epfd
    cdef public dict lanes

    @cython.locals(lanes=dict, endpoint=Endpoint, n=int, i=int)
    cpdef poll_lanes(self)

    @cython.locals(n=int, i=int, endpoint=Endpoint, lanes=bint)
    cpdef _ready_c(self)


cdef class Scheduler:
    cdef public object loop
    cdef public long long t0_ns
    cdef public list heap
    cdef public long long seq
    cdef public object handle
    cdef public long long armed_at
    cdef public bint precise
    cdef public long long fired
    cdef public object late_ps
    cdef public long long late_max_ps
    cdef public long long late_1ms
    cdef public list errors
    cdef public bint closed
    cdef public int tfd

    @cython.locals(t="long long")
    cpdef long long now(self) except? -1

    cpdef at(self, long long t, fn, arg)

    @cython.locals(wait_ps="long long")
    cpdef _arm(self, long long t)

    @cython.locals(outer=bint, reactor=Reactor)
    cpdef _fire(self)

    @cython.locals(heap=list, now="long long", t="long long", late="long long")
    cpdef _fire_due(self)

    cpdef _on_tfd(self)

    cpdef long long _clock(self) except? -1
