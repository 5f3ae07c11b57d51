# Augments gse/runtimes/udp/io.py.  Endpoint and Scheduler become extension types.  On IPv4 the
# endpoint receives and sends with recvfrom(2) and sendto(2) themselves (gse_recv4,
# gse_send4 below): an empty socket is a return value, not a BlockingIOError, the
# sender's (ip, port) tuple is built once per address and each destination's sockaddr is
# parsed once -- what socket.recvfrom/sendto do, without their per-call conversions.
# GSE_UDP_C_IO tells the module it is compiled (the pure module takes the NameError
# branch and uses the socket module).
import cython

cdef extern from *:
    """
    #include <errno.h>
    #ifndef GSE_HELPER
    #if defined(__GNUC__)
    #define GSE_HELPER static __attribute__((unused))   /* also in modules that cimport this */
    #else
    #define GSE_HELPER static
    #endif
    #endif
    #include <string.h>
    #include <sys/types.h>
    #include <sys/socket.h>
    #include <netinet/in.h>
    #include <arpa/inet.h>
    #include <time.h>
    #define GSE_UDP_C_IO 1

    /* time.monotonic_ns() on Linux: CLOCK_MONOTONIC */
    GSE_HELPER inline long long gse_monotonic_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000000000LL + (long long)ts.tv_nsec;
    }

    GSE_HELPER char gse_rbuf[65536];

    #if defined(__linux__)
    #include <sys/timerfd.h>
    #include <sys/prctl.h>
    #include <unistd.h>
    #include <stdint.h>
    /* A non-blocking CLOCK_MONOTONIC timerfd (-1 on an error). */
    GSE_HELPER int gse_timerfd_open(void) {
        return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    }
    /* Arm it to expire once at abs_ns on CLOCK_MONOTONIC. */
    GSE_HELPER int gse_timerfd_at(int fd, long long abs_ns) {
        struct itimerspec its;
        memset(&its, 0, sizeof(its));
        if (abs_ns < 1) abs_ns = 1;
        its.it_value.tv_sec = (time_t)(abs_ns / 1000000000LL);
        its.it_value.tv_nsec = (long)(abs_ns % 1000000000LL);
        return timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
    }
    GSE_HELPER void gse_timerfd_drain(int fd) {
        uint64_t n;
        ssize_t r;
        do { r = read(fd, &n, sizeof(n)); } while (r < 0 && errno == EINTR);
    }
    GSE_HELPER void gse_timer_slack(long ns) { (void)prctl(PR_SET_TIMERSLACK, ns, 0, 0, 0); }
    #include <sys/epoll.h>
    GSE_HELPER struct epoll_event gse_events[64];
    /* How many of an epoll set's descriptors are ready now (0 on an error). */
    GSE_HELPER int gse_epoll_ready(int epfd) {
        int n;
        do { n = epoll_wait(epfd, gse_events, 64, 0); } while (n < 0 && errno == EINTR);
        return n < 0 ? 0 : n;
    }
    GSE_HELPER int gse_epoll_fd(int i) { return gse_events[i].data.fd; }
    #else
    GSE_HELPER int gse_timerfd_open(void) { return -1; }
    GSE_HELPER int gse_timerfd_at(int fd, long long abs_ns) { (void)fd; (void)abs_ns; return -1; }
    GSE_HELPER void gse_timerfd_drain(int fd) { (void)fd; }
    GSE_HELPER void gse_timer_slack(long ns) { (void)ns; }
    GSE_HELPER int gse_epoll_ready(int epfd) { (void)epfd; return 0; }
    GSE_HELPER int gse_epoll_fd(int i) { (void)i; return -1; }
    #endif

    /* One datagram from a non-blocking IPv4 socket: (data, (ip, port)); None if none is
       waiting; False on a socket error (e.g. an ICMP error); NULL on a Python error.
       A sender's (ip, port) is kept in ``cache`` while it holds fewer than ``max``
       entries; beyond, a new sender's tuple is built for its datagram and not kept (a
       flood from many addresses must not grow the cache without bound). */
    GSE_HELPER PyObject *gse_recv4(int fd, Py_ssize_t size, PyObject *cache,
                                   Py_ssize_t max) {
        struct sockaddr_in sa;
        socklen_t salen = sizeof(sa);
        ssize_t n;
        PyObject *data, *key, *addr, *out;
        if (size > (Py_ssize_t)sizeof(gse_rbuf)) size = sizeof(gse_rbuf);
        memset(&sa, 0, sizeof(sa));
        do {
            salen = sizeof(sa);
            n = recvfrom(fd, gse_rbuf, (size_t)size, MSG_DONTWAIT, (struct sockaddr *)&sa,
                         &salen);
        } while (n < 0 && errno == EINTR);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) Py_RETURN_NONE;
            Py_RETURN_FALSE;
        }
        key = PyLong_FromUnsignedLongLong(((unsigned long long)sa.sin_addr.s_addr << 16)
                                          | (unsigned long long)sa.sin_port);
        if (key == NULL) return NULL;
        addr = PyDict_GetItemWithError(cache, key);
        if (addr == NULL) {
            char ip[INET_ADDRSTRLEN];
            if (PyErr_Occurred()) { Py_DECREF(key); return NULL; }
            if (inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip)) == NULL) {
                Py_DECREF(key);
                PyErr_SetFromErrno(PyExc_OSError);
                return NULL;
            }
            addr = Py_BuildValue("(si)", ip, (int)ntohs(sa.sin_port));
            if (addr == NULL) { Py_DECREF(key); return NULL; }
            if (PyDict_GET_SIZE(cache) < max) {
                if (PyDict_SetItem(cache, key, addr) < 0) {
                    Py_DECREF(addr); Py_DECREF(key); return NULL;
                }
            }
        } else {
            Py_INCREF(addr);              /* a new reference either way */
        }
        Py_DECREF(key);
        data = PyBytes_FromStringAndSize(gse_rbuf, n);
        if (data == NULL) { Py_DECREF(addr); return NULL; }
        out = PyTuple_New(2);
        if (out == NULL) { Py_DECREF(data); Py_DECREF(addr); return NULL; }
        PyTuple_SET_ITEM(out, 0, data);
        PyTuple_SET_ITEM(out, 1, addr);
        return out;
    }

    /* Batched receive and send (recvmmsg(2), sendmmsg(2)): up to GSE_MMSG datagrams per
       system call, into buffers of GSE_MMSG x 64 KiB allocated on first use. */
    #define GSE_MMSG 32
    #if defined(__linux__)
    GSE_HELPER struct mmsghdr gse_mmsg[GSE_MMSG];
    GSE_HELPER struct iovec gse_miov[GSE_MMSG];
    GSE_HELPER struct sockaddr_in gse_maddr[GSE_MMSG];
    GSE_HELPER char *gse_mbuf = NULL;

    /* The (ip, port) tuple of an IPv4 sender, from the cache or made and cached while the
       cache holds fewer than ``max`` (a new reference; NULL on a Python error). */
    GSE_HELPER PyObject *gse_addr4(const struct sockaddr_in *sa, PyObject *cache,
                                   Py_ssize_t max) {
        PyObject *key, *addr;
        key = PyLong_FromUnsignedLongLong(((unsigned long long)sa->sin_addr.s_addr << 16)
                                          | (unsigned long long)sa->sin_port);
        if (key == NULL) return NULL;
        addr = PyDict_GetItemWithError(cache, key);
        if (addr == NULL) {
            char ip[INET_ADDRSTRLEN];
            if (PyErr_Occurred()) { Py_DECREF(key); return NULL; }
            if (inet_ntop(AF_INET, &sa->sin_addr, ip, sizeof(ip)) == NULL) {
                Py_DECREF(key);
                PyErr_SetFromErrno(PyExc_OSError);
                return NULL;
            }
            addr = Py_BuildValue("(si)", ip, (int)ntohs(sa->sin_port));
            if (addr == NULL) { Py_DECREF(key); return NULL; }
            if (PyDict_GET_SIZE(cache) < max && PyDict_SetItem(cache, key, addr) < 0) {
                Py_DECREF(addr); Py_DECREF(key); return NULL;
            }
            Py_DECREF(key);
            return addr;
        }
        Py_DECREF(key);
        Py_INCREF(addr);
        return addr;
    }

    /* Up to ``vlen`` datagrams from a non-blocking IPv4 socket in one recvmmsg(2): a list
       of (data, (ip, port)), empty if none is waiting; False on a socket error; NULL on a
       Python error. */
    GSE_HELPER PyObject *gse_recv4_many(int fd, Py_ssize_t size, int vlen, PyObject *cache,
                                        Py_ssize_t max) {
        int n, i;
        PyObject *out;
        if (vlen > GSE_MMSG) vlen = GSE_MMSG;
        if (size > 65536) size = 65536;
        if (gse_mbuf == NULL) {
            gse_mbuf = (char *)PyMem_RawMalloc((size_t)GSE_MMSG * 65536);
            if (gse_mbuf == NULL) return PyErr_NoMemory();
        }
        for (i = 0; i < vlen; i++) {
            gse_miov[i].iov_base = gse_mbuf + (size_t)i * 65536;
            gse_miov[i].iov_len = (size_t)size;
            memset(&gse_mmsg[i], 0, sizeof(gse_mmsg[i]));
            gse_mmsg[i].msg_hdr.msg_iov = &gse_miov[i];
            gse_mmsg[i].msg_hdr.msg_iovlen = 1;
            gse_mmsg[i].msg_hdr.msg_name = &gse_maddr[i];
            gse_mmsg[i].msg_hdr.msg_namelen = sizeof(gse_maddr[i]);
        }
        do { n = recvmmsg(fd, gse_mmsg, (unsigned int)vlen, MSG_DONTWAIT, NULL); }
        while (n < 0 && errno == EINTR);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return PyList_New(0);
            Py_RETURN_FALSE;
        }
        out = PyList_New(n);
        if (out == NULL) return NULL;
        for (i = 0; i < n; i++) {
            PyObject *data, *addr, *item;
            addr = gse_addr4(&gse_maddr[i], cache, max);
            if (addr == NULL) { Py_DECREF(out); return NULL; }
            data = PyBytes_FromStringAndSize(gse_mbuf + (size_t)i * 65536,
                                             (Py_ssize_t)gse_mmsg[i].msg_len);
            if (data == NULL) { Py_DECREF(addr); Py_DECREF(out); return NULL; }
            item = PyTuple_New(2);
            if (item == NULL) { Py_DECREF(addr); Py_DECREF(data); Py_DECREF(out); return NULL; }
            PyTuple_SET_ITEM(item, 0, data);
            PyTuple_SET_ITEM(item, 1, addr);
            PyList_SET_ITEM(out, i, item);
        }
        return out;
    }

    /* sendmmsg(2) of datas[start:] (bytes) to sas[start:] (sockaddr_in bytes), up to
       GSE_MMSG per call: (sent << 2) | why, sent = how many went from ``start`` on until
       the first that failed, why = 0 all sent, 1 the socket buffer was full, 2 another
       socket error. */
    GSE_HELPER Py_ssize_t gse_send4_many_(int fd, PyObject *datas, PyObject *sas,
                                          Py_ssize_t start, int *why) {
        Py_ssize_t total = PyList_GET_SIZE(datas), done = 0;
        *why = 0;
        while (start + done < total) {
            int vlen = 0, n;
            Py_ssize_t k;
            for (k = start + done; k < total && vlen < GSE_MMSG; k++, vlen++) {
                PyObject *d = PyList_GET_ITEM(datas, k), *a = PyList_GET_ITEM(sas, k);
                gse_miov[vlen].iov_base = PyBytes_AS_STRING(d);
                gse_miov[vlen].iov_len = (size_t)PyBytes_GET_SIZE(d);
                memset(&gse_mmsg[vlen], 0, sizeof(gse_mmsg[vlen]));
                gse_mmsg[vlen].msg_hdr.msg_iov = &gse_miov[vlen];
                gse_mmsg[vlen].msg_hdr.msg_iovlen = 1;
                gse_mmsg[vlen].msg_hdr.msg_name = PyBytes_AS_STRING(a);
                gse_mmsg[vlen].msg_hdr.msg_namelen = (socklen_t)PyBytes_GET_SIZE(a);
            }
            do { n = sendmmsg(fd, gse_mmsg, (unsigned int)vlen, MSG_DONTWAIT); }
            while (n < 0 && errno == EINTR);
            if (n < 0) {
                *why = (errno == EAGAIN || errno == EWOULDBLOCK) ? 1 : 2;
                return done;
            }
            done += n;
            if (n < vlen) {               /* the next one failed: say why by trying it */
                int r;
                PyObject *d = PyList_GET_ITEM(datas, start + done);
                PyObject *a = PyList_GET_ITEM(sas, start + done);
                do {
                    r = (int)sendto(fd, PyBytes_AS_STRING(d), (size_t)PyBytes_GET_SIZE(d),
                                    MSG_DONTWAIT, (const struct sockaddr *)PyBytes_AS_STRING(a),
                                    (socklen_t)PyBytes_GET_SIZE(a));
                } while (r < 0 && errno == EINTR);
                if (r >= 0) { done += 1; continue; }
                *why = (errno == EAGAIN || errno == EWOULDBLOCK) ? 1 : 2;
                return done;
            }
        }
        return done;
    }
    GSE_HELPER Py_ssize_t gse_send4_many(int fd, PyObject *datas, PyObject *sas,
                                         Py_ssize_t start) {
        int why = 0;
        Py_ssize_t done = gse_send4_many_(fd, datas, sas, start, &why);
        return (done << 2) | why;
    }
    #define GSE_HAVE_MMSG 1
    #else
    GSE_HELPER PyObject *gse_recv4_many(int fd, Py_ssize_t size, int vlen, PyObject *cache,
                                        Py_ssize_t max) {
        (void)fd; (void)size; (void)vlen; (void)cache; (void)max; Py_RETURN_FALSE;
    }
    GSE_HELPER Py_ssize_t gse_send4_many(int fd, PyObject *datas, PyObject *sas,
                                         Py_ssize_t start) {
        (void)fd; (void)datas; (void)sas; (void)start; return 2;
    }
    #define GSE_HAVE_MMSG 0
    #endif

    /* The sockaddr_in bytes of an IPv4 (ip, port), cached on first use while the cache
       holds fewer than ``max`` (a new reference); None if ``addr`` is not an IPv4
       literal and port; NULL on an error. */
    GSE_HELPER PyObject *gse_sa4(PyObject *addr, PyObject *cache, Py_ssize_t max) {
        PyObject *sa = PyDict_GetItemWithError(cache, addr);
        if (sa == NULL) {
            struct sockaddr_in s;
            PyObject *ip, *port;
            const char *ips;
            long p;
            if (PyErr_Occurred()) return NULL;
            if (!PyTuple_Check(addr) || PyTuple_GET_SIZE(addr) != 2) Py_RETURN_NONE;
            ip = PyTuple_GET_ITEM(addr, 0);
            port = PyTuple_GET_ITEM(addr, 1);
            if (!PyUnicode_Check(ip) || !PyLong_Check(port)) Py_RETURN_NONE;
            ips = PyUnicode_AsUTF8(ip);
            if (ips == NULL) { PyErr_Clear(); Py_RETURN_NONE; }
            p = PyLong_AsLong(port);
            if (p < 0 || p > 65535) { PyErr_Clear(); Py_RETURN_NONE; }
            memset(&s, 0, sizeof(s));
            s.sin_family = AF_INET;
            s.sin_port = htons((unsigned short)p);
            if (inet_pton(AF_INET, ips, &s.sin_addr) != 1) Py_RETURN_NONE;
            sa = PyBytes_FromStringAndSize((const char *)&s, sizeof(s));
            if (sa == NULL) return NULL;
            if (PyDict_GET_SIZE(cache) < max && PyDict_SetItem(cache, addr, sa) < 0) {
                Py_DECREF(sa); return NULL;
            }
            return sa;
        }
        Py_INCREF(sa);
        return sa;
    }

    /* Seed the receive cache with a neighbour's own (ip, port) tuple; 0 if ``addr`` is
       not an IPv4 literal and port (nothing to do), -1 on a Python error. */
    GSE_HELPER int gse_know4(PyObject *addr, PyObject *cache) {
        struct in_addr ia;
        PyObject *ip, *port, *key;
        const char *ips;
        long p;
        int r;
        if (!PyTuple_Check(addr) || PyTuple_GET_SIZE(addr) != 2) return 0;
        ip = PyTuple_GET_ITEM(addr, 0);
        port = PyTuple_GET_ITEM(addr, 1);
        if (!PyUnicode_Check(ip) || !PyLong_Check(port)) return 0;
        ips = PyUnicode_AsUTF8(ip);
        if (ips == NULL) { PyErr_Clear(); return 0; }
        p = PyLong_AsLong(port);
        if (p < 0 || p > 65535) { PyErr_Clear(); return 0; }
        if (inet_pton(AF_INET, ips, &ia) != 1) return 0;
        key = PyLong_FromUnsignedLongLong(((unsigned long long)ia.s_addr << 16)
                                          | (unsigned long long)htons((unsigned short)p));
        if (key == NULL) return -1;
        r = PyDict_SetItem(cache, key, addr);
        Py_DECREF(key);
        return r < 0 ? -1 : 1;
    }

    /* sendto(2) of bytes ``data`` to the IPv4 (ip, port) ``addr``: 0 sent, 1 the socket
       buffer is full, 2 another socket error, 3 an address this does not handle (the
       caller uses the socket module); -1 on a Python error.  The parsed address is kept
       in ``cache`` while it holds fewer than ``max`` entries. */
    GSE_HELPER int gse_send4(int fd, PyObject *data, PyObject *addr, PyObject *cache,
                             Py_ssize_t max) {
        PyObject *sa = PyDict_GetItemWithError(cache, addr);
        ssize_t n;
        if (sa == NULL) {
            struct sockaddr_in s;
            PyObject *ip, *port;
            const char *ips;
            long p;
            if (PyErr_Occurred()) return -1;
            if (!PyTuple_Check(addr) || PyTuple_GET_SIZE(addr) != 2) return 3;
            ip = PyTuple_GET_ITEM(addr, 0);
            port = PyTuple_GET_ITEM(addr, 1);
            if (!PyUnicode_Check(ip) || !PyLong_Check(port)) return 3;
            ips = PyUnicode_AsUTF8(ip);
            if (ips == NULL) { PyErr_Clear(); return 3; }
            p = PyLong_AsLong(port);
            if (p < 0 || p > 65535) { PyErr_Clear(); return 3; }
            memset(&s, 0, sizeof(s));
            s.sin_family = AF_INET;
            s.sin_port = htons((unsigned short)p);
            if (inet_pton(AF_INET, ips, &s.sin_addr) != 1) return 3;   /* e.g. a name */
            sa = PyBytes_FromStringAndSize((const char *)&s, sizeof(s));
            if (sa == NULL) return -1;
            if (PyDict_GET_SIZE(cache) < max && PyDict_SetItem(cache, addr, sa) < 0) {
                Py_DECREF(sa); return -1;
            }
        } else {
            Py_INCREF(sa);                /* a new reference either way */
        }
        do {                              /* EINTR: again, as the socket module does */
            n = sendto(fd, PyBytes_AS_STRING(data), (size_t)PyBytes_GET_SIZE(data),
                       MSG_DONTWAIT, (const struct sockaddr *)PyBytes_AS_STRING(sa),
                       (socklen_t)PyBytes_GET_SIZE(sa));
        } while (n < 0 && errno == EINTR);
        Py_DECREF(sa);
        if (n >= 0) return 0;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 1;   /* BlockingIOError */
        return 2;                                                /* another OSError */
    }
    """
    bint GSE_UDP_C_IO
    long long gse_monotonic_ns()
    object gse_recv4(int fd, Py_ssize_t size, dict cache, Py_ssize_t max)
    int gse_send4(int fd, bytes data, object addr, dict cache, Py_ssize_t max) except -1
    int gse_know4(object addr, dict cache) except -1
    int gse_epoll_ready(int epfd)
    int gse_epoll_fd(int i)
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

    @cython.locals(n=int, i=int, endpoint=Endpoint)
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

    @cython.locals(outer=bint)
    cpdef _fire(self)

    @cython.locals(heap=list, now="long long", t="long long", late="long long")
    cpdef _fire_due(self)

    cpdef _on_tfd(self)

    cpdef long long _clock(self) except? -1
