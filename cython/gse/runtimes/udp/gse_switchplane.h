/* The C half of the compiled gse.runtimes.udp.switchplane (cython/gse/runtimes/udp/
   switchplane.pyx): a switch's datagram buffers and its socket calls.  A slot is one
   datagram's buffer from recvmmsg(2) to sendmmsg(2): received into, queued in a port's
   control or data FIFO, held on the port's wire, sent from, then back to the free list.
   Buffers are reused, never copied; no Python object is made here. */
#ifndef GSE_SWITCHPLANE_H
#define GSE_SWITCHPLANE_H

#include <Python.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define DP_BATCH 32
#define DP_OUT 64

/* a datagram's buffer: received into, queued, on the wire, sent from */
typedef struct dp_slot {
    struct dp_slot *next;
    long long depart, size, flags;
    int n, kind, prio, ingress;
    unsigned char buf[1];
} dp_slot;

typedef struct { dp_slot *head, *tail; } dp_fifo;

typedef struct {
    int fd, bufsize, nports, nout, nslots;
    dp_slot *free;
    struct mmsghdr rmsg[DP_BATCH];
    struct iovec riov[DP_BATCH];
    struct sockaddr_in rsa[DP_BATCH];
    dp_slot *rslot[DP_BATCH];
    struct mmsghdr smsg[DP_OUT];
    struct iovec siov[DP_OUT];
    dp_slot *sslot[DP_OUT];
    struct sockaddr_in *peer;
    dp_fifo *ctl, *data, *wire;
    /* the neighbours' PFC lanes (sin_family 0: none, PFC frames go to ``peer``) and the
       two kinds (PAUSE, RESUME) that go there */
    struct sockaddr_in *lane;
    int lane_kind[2];
} dp_state;

static inline void dp_push(dp_fifo *f, dp_slot *s) {
    s->next = NULL;
    if (f->tail) f->tail->next = s; else f->head = s;
    f->tail = s;
}
static inline dp_slot *dp_pop(dp_fifo *f) {
    dp_slot *s = f->head;
    if (s) { f->head = s->next; if (!f->head) f->tail = NULL; s->next = NULL; }
    return s;
}

/* the pool and the state of one switch; NULL when out of memory */
dp_state *dp_new(int fd, int bufsize, int nports);
void dp_free(dp_state *d);
/* the neighbour on ``port`` (1, or 0 if ``ip`` is not an IPv4 literal) */
int dp_set_peer(dp_state *d, int port, const char *ip, int udp_port);
/* the neighbour's PFC lane on ``port``: where slots of kind ``pause`` or ``resume`` go
   (1, or 0 if ``ip`` is not an IPv4 literal) */
int dp_set_lane(dp_state *d, int port, const char *ip, int udp_port, int pause, int resume);
/* a free slot (allocated when the pool is empty; NULL when out of memory); back */
dp_slot *dp_take(dp_state *d);
void dp_give(dp_state *d, dp_slot *s);
/* up to ``want`` (at most DP_BATCH) datagrams: how many, 0 if none waits, -1 on a socket
   error, -2 out of memory; the i-th is dp_got(d, i) (handed over), from the port
   dp_ingress(d, i) (-1: not a neighbour), whose address dp_sender writes */
int dp_recv(dp_state *d, int want);
dp_slot *dp_got(dp_state *d, int i);
int dp_ingress(dp_state *d, int i);
void dp_sender(dp_state *d, int i, char *ip, int *port);
/* the i-th datagram's sender as numbers: its IPv4 address (network order; 0 if none) and
   its UDP port */
static inline unsigned int dp_src_ip(dp_state *d, int i) {
    if (d->rmsg[i].msg_hdr.msg_namelen < sizeof(struct sockaddr_in)
            || d->rsa[i].sin_family != AF_INET)
        return 0;
    return d->rsa[i].sin_addr.s_addr;
}
static inline int dp_src_port(dp_state *d, int i) { return ntohs(d->rsa[i].sin_port); }
/* the IPv4 address ``ip`` (a literal) in network order, 0 if it is not one */
unsigned int dp_inet4(const char *ip);
/* hold ``s`` for ``port``'s neighbour: 1 when DP_OUT are held (flush now) */
int dp_out(dp_state *d, dp_slot *s, int port);
/* sendmmsg(2) of what is held, the slots back to the pool; adds to out[0..3]: sent,
   refused for a full buffer, other errors, calls */
void dp_flush(dp_state *d, long long *out);
/* big-endian stores into a header */
void dp_put16(unsigned char *p, long long v);
void dp_put32(unsigned char *p, unsigned int v);

#endif
