/* System calls of the compiled gse.runtimes.udp.io (contracts in gse_udp_io.h). */
#include "gse_udp_io.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#define GSE_RBUF 65536

static char rbuf[GSE_RBUF];

/* -- addresses --------------------------------------------------------------------------- */

/* The cache key of a raw IPv4 address and port (both in network byte order). */
static PyObject *addr_key(uint32_t s_addr, uint16_t port) {
    return PyLong_FromUnsignedLongLong(((unsigned long long)s_addr << 16)
                                       | (unsigned long long)port);
}

/* The (ip, port) tuple of an IPv4 sender, from the cache or made (and cached while the
   cache holds fewer than ``max``): a new reference, NULL on a Python error. */
static PyObject *addr4(const struct sockaddr_in *sa, PyObject *cache, Py_ssize_t max) {
    PyObject *key, *addr;
    char ip[INET_ADDRSTRLEN];
    key = addr_key(sa->sin_addr.s_addr, sa->sin_port);
    if (key == NULL) return NULL;
    addr = PyDict_GetItemWithError(cache, key);
    if (addr != NULL) {
        Py_DECREF(key);
        Py_INCREF(addr);
        return addr;
    }
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

/* Parse an (ip, port) tuple of an IPv4 literal and a port into s: 1, or 0 if it is not
   one (no Python error is left set). */
static int parse4(PyObject *addr, struct sockaddr_in *s) {
    PyObject *ip, *port;
    const char *ips;
    long p;
    if (!PyTuple_Check(addr) || PyTuple_GET_SIZE(addr) != 2) return 0;
    ip = PyTuple_GET_ITEM(addr, 0);
    port = PyTuple_GET_ITEM(addr, 1);
    if (!PyUnicode_Check(ip) || !PyLong_Check(port)) return 0;
    ips = PyUnicode_AsUTF8(ip);
    if (ips == NULL) { PyErr_Clear(); return 0; }
    p = PyLong_AsLong(port);
    if (p < 0 || p > 65535) { PyErr_Clear(); return 0; }
    memset(s, 0, sizeof(*s));
    s->sin_family = AF_INET;
    s->sin_port = htons((unsigned short)p);
    return inet_pton(AF_INET, ips, &s->sin_addr) == 1;   /* not a literal: e.g. a name */
}

PyObject *gse_sa4(PyObject *addr, PyObject *cache, Py_ssize_t max) {
    struct sockaddr_in s;
    PyObject *sa = PyDict_GetItemWithError(cache, addr);
    if (sa != NULL) {
        Py_INCREF(sa);
        return sa;
    }
    if (PyErr_Occurred()) return NULL;
    if (!parse4(addr, &s)) Py_RETURN_NONE;
    sa = PyBytes_FromStringAndSize((const char *)&s, sizeof(s));
    if (sa == NULL) return NULL;
    if (PyDict_GET_SIZE(cache) < max && PyDict_SetItem(cache, addr, sa) < 0) {
        Py_DECREF(sa); return NULL;
    }
    return sa;
}

int gse_know4(PyObject *addr, PyObject *cache) {
    struct sockaddr_in s;
    PyObject *key;
    int r;
    if (!parse4(addr, &s)) return 0;
    key = addr_key(s.sin_addr.s_addr, s.sin_port);
    if (key == NULL) return -1;
    r = PyDict_SetItem(cache, key, addr);
    Py_DECREF(key);
    return r < 0 ? -1 : 1;
}

/* -- one datagram at a time ---------------------------------------------------------------- */

PyObject *gse_recv4(int fd, Py_ssize_t size, PyObject *cache, Py_ssize_t max) {
    struct sockaddr_in sa;
    socklen_t salen;
    ssize_t n;
    PyObject *data, *addr, *out;
    if (size > GSE_RBUF) size = GSE_RBUF;
    memset(&sa, 0, sizeof(sa));
    do {
        salen = sizeof(sa);
        n = recvfrom(fd, rbuf, (size_t)size, MSG_DONTWAIT, (struct sockaddr *)&sa, &salen);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) Py_RETURN_NONE;
        Py_RETURN_FALSE;
    }
    addr = addr4(&sa, cache, max);
    if (addr == NULL) return NULL;
    data = PyBytes_FromStringAndSize(rbuf, n);
    if (data == NULL) { Py_DECREF(addr); return NULL; }
    out = PyTuple_New(2);
    if (out == NULL) { Py_DECREF(data); Py_DECREF(addr); return NULL; }
    PyTuple_SET_ITEM(out, 0, data);
    PyTuple_SET_ITEM(out, 1, addr);
    return out;
}

int gse_send4(int fd, PyObject *data, PyObject *addr, PyObject *cache, Py_ssize_t max) {
    ssize_t n;
    PyObject *sa = gse_sa4(addr, cache, max);
    if (sa == NULL) return -1;
    if (sa == Py_None) { Py_DECREF(sa); return 3; }
    do {                              /* EINTR: again, as the socket module does */
        n = sendto(fd, PyBytes_AS_STRING(data), (size_t)PyBytes_GET_SIZE(data), MSG_DONTWAIT,
                   (const struct sockaddr *)PyBytes_AS_STRING(sa),
                   (socklen_t)PyBytes_GET_SIZE(sa));
    } while (n < 0 && errno == EINTR);
    Py_DECREF(sa);
    if (n >= 0) return 0;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 1;   /* BlockingIOError */
    return 2;                                                /* another OSError */
}

/* -- batches: recvmmsg(2), sendmmsg(2) ----------------------------------------------------- */

#if defined(__linux__)
static struct mmsghdr mmsg[GSE_MMSG];
static struct iovec miov[GSE_MMSG];
static struct sockaddr_in maddr[GSE_MMSG];
static char *mbuf = NULL;                 /* GSE_MMSG x 64 KiB, allocated on first use */

PyObject *gse_recv4_many(int fd, Py_ssize_t size, int vlen, PyObject *cache,
                         Py_ssize_t max) {
    int n, i;
    PyObject *out;
    if (vlen > GSE_MMSG) vlen = GSE_MMSG;
    if (size > GSE_RBUF) size = GSE_RBUF;
    if (mbuf == NULL) {
        mbuf = (char *)PyMem_RawMalloc((size_t)GSE_MMSG * GSE_RBUF);
        if (mbuf == NULL) return PyErr_NoMemory();
    }
    for (i = 0; i < vlen; i++) {
        miov[i].iov_base = mbuf + (size_t)i * GSE_RBUF;
        miov[i].iov_len = (size_t)size;
        memset(&mmsg[i], 0, sizeof(mmsg[i]));
        mmsg[i].msg_hdr.msg_iov = &miov[i];
        mmsg[i].msg_hdr.msg_iovlen = 1;
        mmsg[i].msg_hdr.msg_name = &maddr[i];
        mmsg[i].msg_hdr.msg_namelen = sizeof(maddr[i]);
    }
    do { n = recvmmsg(fd, mmsg, (unsigned int)vlen, MSG_DONTWAIT, NULL); }
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return PyList_New(0);
        Py_RETURN_FALSE;
    }
    out = PyList_New(n);
    if (out == NULL) return NULL;
    for (i = 0; i < n; i++) {
        PyObject *data, *addr, *item;
        addr = addr4(&maddr[i], cache, max);
        if (addr == NULL) { Py_DECREF(out); return NULL; }
        data = PyBytes_FromStringAndSize(mbuf + (size_t)i * GSE_RBUF,
                                         (Py_ssize_t)mmsg[i].msg_len);
        if (data == NULL) { Py_DECREF(addr); Py_DECREF(out); return NULL; }
        item = PyTuple_New(2);
        if (item == NULL) { Py_DECREF(addr); Py_DECREF(data); Py_DECREF(out); return NULL; }
        PyTuple_SET_ITEM(item, 0, data);
        PyTuple_SET_ITEM(item, 1, addr);
        PyList_SET_ITEM(out, i, item);
    }
    return out;
}

static Py_ssize_t send4_many(int fd, PyObject *datas, PyObject *sas, Py_ssize_t start,
                             int *why) {
    Py_ssize_t total = PyList_GET_SIZE(datas), done = 0;
    *why = 0;
    while (start + done < total) {
        int vlen = 0, n;
        Py_ssize_t k;
        for (k = start + done; k < total && vlen < GSE_MMSG; k++, vlen++) {
            PyObject *d = PyList_GET_ITEM(datas, k), *a = PyList_GET_ITEM(sas, k);
            miov[vlen].iov_base = PyBytes_AS_STRING(d);
            miov[vlen].iov_len = (size_t)PyBytes_GET_SIZE(d);
            memset(&mmsg[vlen], 0, sizeof(mmsg[vlen]));
            mmsg[vlen].msg_hdr.msg_iov = &miov[vlen];
            mmsg[vlen].msg_hdr.msg_iovlen = 1;
            mmsg[vlen].msg_hdr.msg_name = PyBytes_AS_STRING(a);
            mmsg[vlen].msg_hdr.msg_namelen = (socklen_t)PyBytes_GET_SIZE(a);
        }
        do { n = sendmmsg(fd, mmsg, (unsigned int)vlen, MSG_DONTWAIT); }
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

Py_ssize_t gse_send4_many(int fd, PyObject *datas, PyObject *sas, Py_ssize_t start) {
    int why = 0;
    Py_ssize_t done = send4_many(fd, datas, sas, start, &why);
    return (done << 2) | why;
}
#else
PyObject *gse_recv4_many(int fd, Py_ssize_t size, int vlen, PyObject *cache,
                         Py_ssize_t max) {
    (void)fd; (void)size; (void)vlen; (void)cache; (void)max; Py_RETURN_FALSE;
}
Py_ssize_t gse_send4_many(int fd, PyObject *datas, PyObject *sas, Py_ssize_t start) {
    (void)fd; (void)datas; (void)sas; (void)start; return 2;
}
#endif

/* -- epoll and timerfd ------------------------------------------------------------------- */

#if defined(__linux__)
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <unistd.h>

static struct epoll_event events[64];

/* the ready descriptors of ``epfd`` into ``ev`` without waiting (0 on an error) */
static int epoll_now(int epfd, struct epoll_event* ev) {
    int n;
    do { n = epoll_wait(epfd, ev, 64, 0); } while (n < 0 && errno == EINTR);
    return n < 0 ? 0 : n;
}

int gse_epoll_ready(int epfd) { return epoll_now(epfd, events); }

int gse_epoll_fd(int i) { return events[i].data.fd; }

/* the same for a second set (the PFC lanes), asked between the first's descriptors */
static struct epoll_event lane_events[64];

int gse_epoll_lanes(int epfd) { return epoll_now(epfd, lane_events); }

int gse_epoll_lane_fd(int i) { return lane_events[i].data.fd; }

int gse_timerfd_open(void) {
    return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
}

int gse_timerfd_at(int fd, long long abs_ns) {
    struct itimerspec its;
    memset(&its, 0, sizeof(its));
    if (abs_ns < 1) abs_ns = 1;
    its.it_value.tv_sec = (time_t)(abs_ns / 1000000000LL);
    its.it_value.tv_nsec = (long)(abs_ns % 1000000000LL);
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
}

void gse_timerfd_drain(int fd) {
    uint64_t n;
    ssize_t r;
    do { r = read(fd, &n, sizeof(n)); } while (r < 0 && errno == EINTR);
}

void gse_timer_slack(long ns) { (void)prctl(PR_SET_TIMERSLACK, ns, 0, 0, 0); }
#else
int gse_epoll_ready(int epfd) { (void)epfd; return 0; }
int gse_epoll_fd(int i) { (void)i; return -1; }
int gse_epoll_lanes(int epfd) { (void)epfd; return 0; }
int gse_epoll_lane_fd(int i) { (void)i; return -1; }
int gse_timerfd_open(void) { return -1; }
int gse_timerfd_at(int fd, long long abs_ns) { (void)fd; (void)abs_ns; return -1; }
void gse_timerfd_drain(int fd) { (void)fd; }
void gse_timer_slack(long ns) { (void)ns; }
#endif
