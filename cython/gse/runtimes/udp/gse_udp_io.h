/* The system calls of the compiled gse.runtimes.udp.io: batched receive and send on IPv4
   UDP sockets (recvmmsg(2), sendmmsg(2); recvfrom(2), sendto(2) where there are none),
   epoll(7), timerfd(2) and CLOCK_MONOTONIC.  The pure build does the same through the
   socket, select and ctypes modules (gse/runtimes/udp/io.py, timerfd.py): same datagrams,
   same addresses, same counters.

   Addresses: a sender's (ip, port) tuple is built once per address and kept in a dict
   keyed by its raw IPv4 address and port while the dict holds fewer than ``max`` entries
   (a flood from many addresses must not grow it without bound); a destination's
   sockaddr_in is parsed once and kept the same way, keyed by its (ip, port). */
#ifndef GSE_UDP_IO_H
#define GSE_UDP_IO_H

#include <Python.h>
#include <time.h>

/* datagrams per recvmmsg(2) / sendmmsg(2) call */
#define GSE_MMSG 32
#if defined(__linux__)
#define GSE_HAVE_MMSG 1
#else
#define GSE_HAVE_MMSG 0
#endif

/* time.monotonic_ns(): CLOCK_MONOTONIC (inline: read for every timer and event) */
static inline long long gse_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + (long long)ts.tv_nsec;
}

/* One datagram from a non-blocking IPv4 socket: (data, (ip, port)); None if none is
   waiting; False on a socket error (e.g. an ICMP error); NULL on a Python error. */
PyObject *gse_recv4(int fd, Py_ssize_t size, PyObject *cache, Py_ssize_t max);
/* Up to ``vlen`` (at most GSE_MMSG) datagrams in one recvmmsg(2): a list of
   (data, (ip, port)), empty if none is waiting; False on a socket error; NULL on a
   Python error. */
PyObject *gse_recv4_many(int fd, Py_ssize_t size, int vlen, PyObject *cache, Py_ssize_t max);
/* sendmmsg(2) of datas[start:] (a list of bytes) to sas[start:] (a list of sockaddr_in
   bytes): (sent << 2) | why, ``sent`` how many went from ``start`` on before the first
   that failed, ``why`` 0 all sent, 1 the socket buffer was full, 2 another error. */
Py_ssize_t gse_send4_many(int fd, PyObject *datas, PyObject *sas, Py_ssize_t start);
/* sendto(2) of bytes ``data`` to the IPv4 (ip, port) ``addr``: 0 sent, 1 the socket
   buffer is full, 2 another socket error, 3 an address this does not handle (the caller
   uses the socket module); -1 on a Python error. */
int gse_send4(int fd, PyObject *data, PyObject *addr, PyObject *cache, Py_ssize_t max);
/* The sockaddr_in bytes of an IPv4 (ip, port) (a new reference); None if ``addr`` is not
   an IPv4 literal and port; NULL on an error. */
PyObject *gse_sa4(PyObject *addr, PyObject *cache, Py_ssize_t max);
/* Seed the receive cache with a neighbour's own (ip, port) tuple: 1 done, 0 if ``addr``
   is not an IPv4 literal and port, -1 on a Python error. */
int gse_know4(PyObject *addr, PyObject *cache);

/* How many descriptors of an epoll set are ready now (0 on an error or without epoll),
   and the i-th of them. */
int gse_epoll_ready(int epfd);
int gse_epoll_fd(int i);
/* The same for a second set, with events of its own (the PFC lanes: Reactor.poll_lanes,
   asked between the first set's descriptors). */
int gse_epoll_lanes(int epfd);
int gse_epoll_lane_fd(int i);

/* A non-blocking CLOCK_MONOTONIC timerfd (-1 on an error or without timerfd); arm it to
   expire once at abs_ns; consume its expiry count; the thread's timer slack in ns. */
int gse_timerfd_open(void);
int gse_timerfd_at(int fd, long long abs_ns);
void gse_timerfd_drain(int fd);
void gse_timer_slack(long ns);

#endif
