# The C datagram buffers of cython/gse/runtimes/udp/gse_switchplane.h (slots from
# recvmmsg(2) to sendmmsg(2), a pool per socket, FIFOs of slots), declared once for the two
# modules built on them: the switches' data plane (switchplane.pyx) and the hosts' packet
# path (hostplane.pyx).  No module of its own: a source of every compiled module
# (gse._build.INLINE_PXD).

cdef extern from "gse_switchplane.h":
    int DP_BATCH
    int DP_OUT
    ctypedef struct dp_slot:
        dp_slot *next
        long long depart, size, flags
        int n, kind, prio, ingress
        unsigned char buf[1]
    ctypedef struct dp_fifo:
        dp_slot *head
        dp_slot *tail
    ctypedef struct dp_state:
        int fd, bufsize, nports, nout, nslots
        dp_slot *free
        dp_slot *sslot[64]
        dp_fifo *ctl
        dp_fifo *data
        dp_fifo *wire
    void dp_push(dp_fifo *f, dp_slot *s)
    dp_slot *dp_pop(dp_fifo *f)
    void dp_give(dp_state *d, dp_slot *s)
    dp_slot *dp_take(dp_state *d)
    dp_state *dp_new(int fd, int bufsize, int nports)
    void dp_free(dp_state *d)
    int dp_set_peer(dp_state *d, int port, const char *ip, int udp_port)
    int dp_set_lane(dp_state *d, int port, const char *ip, int udp_port, int pause,
                    int resume)
    int dp_recv(dp_state *d, int want)
    dp_slot *dp_got(dp_state *d, int i)
    int dp_ingress(dp_state *d, int i)
    void dp_sender(dp_state *d, int i, char *ip, int *port)
    unsigned int dp_src_ip(dp_state *d, int i)
    int dp_src_port(dp_state *d, int i)
    unsigned int dp_inet4(const char *ip)
    void dp_flush(dp_state *d, long long *out)
    int dp_out(dp_state *d, dp_slot *s, int port)
    void dp_put16(unsigned char *p, long long v)
    void dp_put32(unsigned char *p, unsigned int v)
