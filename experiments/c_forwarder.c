/* The C floor of experiments/bench_udp.py: the fastest one process forwards datagrams.

   A source, HOPS forwarders and a sink, each a non-blocking UDP socket on 127.0.0.1, in
   one process, one thread, one epoll set -- the shape of the benchmark's other floors
   (and of the in-process runtime), with nothing but the system calls left: a forwarder
   reads up to 32 datagrams with one recvmmsg(2) into fixed buffers and writes them to the
   next hop with one sendmmsg(2); the source keeps WINDOW datagrams in flight, refilled
   as the sink counts them.  No header is read, no byte copied.

   Compiled by the benchmark itself (``cc -O2``), not by the project's build: a floor must
   not depend on which build of the project is active, and it is no part of the product.

   usage: c_forwarder N WINDOW SIZE HOPS    prints "<datagrams/s> <datagrams per cpu-s>" */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 32
#define MAXHOPS 16

static double now_s(clockid_t clk) {
    struct timespec ts;
    clock_gettime(clk, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int open_sock(struct sockaddr_in *sa) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    int rcv = 4 * 1024 * 1024;
    socklen_t len = sizeof(*sa);
    if (fd < 0) return -1;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof(rcv)) < 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)sa, sizeof(*sa)) < 0) return -1;
    getsockname(fd, (struct sockaddr *)sa, &len);
    return fd;
}

int main(int argc, char **argv) {
    long n, window, size, hops, sent = 0, got = 0;
    int fds[MAXHOPS + 2], ep, i;
    struct sockaddr_in sas[MAXHOPS + 2];
    static unsigned char bufs[BATCH][65536];
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    struct epoll_event ev, ready[MAXHOPS + 2];
    unsigned char *payload;
    double t0, c0, t1, c1;

    if (argc != 5) {
        fprintf(stderr, "usage: %s N WINDOW SIZE HOPS\n", argv[0]);
        return 2;
    }
    n = atol(argv[1]);
    window = atol(argv[2]);
    size = atol(argv[3]);
    hops = atol(argv[4]);
    if (n <= 0 || window <= 0 || size <= 0 || size > 65507 || hops < 1 || hops > MAXHOPS)
        return 2;
    payload = malloc(size);
    memset(payload, 0x5a, size);
    ep = epoll_create1(0);
    for (i = 0; i < hops + 2; i++) {
        fds[i] = open_sock(&sas[i]);
        if (fds[i] < 0) {
            perror("socket");
            return 1;
        }
        if (i > 0) {
            ev.events = EPOLLIN;
            ev.data.u32 = i;
            epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
        }
    }
    t0 = now_s(CLOCK_MONOTONIC);
    c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
    while (got < n) {
        int nready, k;
        while (sent < n && sent - got < window) {       /* the source */
            if (sendto(fds[0], payload, size, 0, (struct sockaddr *)&sas[1],
                       sizeof(sas[1])) < 0)
                break;
            sent++;
        }
        nready = epoll_wait(ep, ready, MAXHOPS + 2, 1000);
        if (nready <= 0) {
            fprintf(stderr, "stalled at %ld of %ld\n", got, n);
            return 1;
        }
        for (k = 0; k < nready; k++) {
            int hop = ready[k].data.u32, m, j;
            for (;;) {
                for (j = 0; j < BATCH; j++) {
                    iov[j].iov_base = bufs[j];
                    iov[j].iov_len = sizeof(bufs[j]);
                    memset(&msgs[j].msg_hdr, 0, sizeof(msgs[j].msg_hdr));
                    msgs[j].msg_hdr.msg_iov = &iov[j];
                    msgs[j].msg_hdr.msg_iovlen = 1;
                }
                m = recvmmsg(fds[hop], msgs, BATCH, MSG_DONTWAIT, NULL);
                if (m <= 0) break;
                if (hop == hops + 1) {                   /* the sink */
                    got += m;
                } else {                                 /* a forwarder */
                    int off = 0;
                    for (j = 0; j < m; j++) {
                        iov[j].iov_len = msgs[j].msg_len;
                        msgs[j].msg_hdr.msg_name = &sas[hop + 1];
                        msgs[j].msg_hdr.msg_namelen = sizeof(sas[hop + 1]);
                    }
                    while (off < m) {
                        int s = sendmmsg(fds[hop], msgs + off, m - off, 0);
                        if (s <= 0) break;               /* buffer full: the rest lost */
                        off += s;
                    }
                }
                if (m < BATCH) break;
            }
        }
    }
    t1 = now_s(CLOCK_MONOTONIC);
    c1 = now_s(CLOCK_PROCESS_CPUTIME_ID);
    printf("%.1f %.1f\n", n / (t1 - t0), n / (c1 - c0 > 1e-9 ? c1 - c0 : 1e-9));
    return 0;
}
