/* Buffers and socket calls of the compiled gse.runtimes.udp.switchplane (contracts in
   gse_switchplane.h). */
#include "gse_switchplane.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

dp_slot *dp_take(dp_state *d) {
    dp_slot *s = d->free;
    if (s) { d->free = s->next; return s; }
    s = (dp_slot *)malloc(sizeof(dp_slot) + d->bufsize);
    if (s) d->nslots++;
    return s;
}
void dp_give(dp_state *d, dp_slot *s) { s->next = d->free; d->free = s; }

dp_state *dp_new(int fd, int bufsize, int nports) {
    dp_state *d = (dp_state *)calloc(1, sizeof(dp_state));
    if (!d) return NULL;
    d->fd = fd; d->bufsize = bufsize; d->nports = nports;
    d->peer = (struct sockaddr_in *)calloc(nports ? nports : 1, sizeof(struct sockaddr_in));
    d->ctl = (dp_fifo *)calloc(nports ? nports : 1, sizeof(dp_fifo));
    d->data = (dp_fifo *)calloc(nports ? nports : 1, sizeof(dp_fifo));
    d->wire = (dp_fifo *)calloc(nports ? nports : 1, sizeof(dp_fifo));
    d->lane = (struct sockaddr_in *)calloc(nports ? nports : 1, sizeof(struct sockaddr_in));
    d->lane_kind[0] = d->lane_kind[1] = -1;
    if (!d->peer || !d->ctl || !d->data || !d->wire || !d->lane) {
        free(d->peer); free(d->ctl); free(d->data); free(d->wire); free(d->lane); free(d);
        return NULL;
    }
    return d;
}
static void dp_free_list(dp_slot *s) { while (s) { dp_slot *n = s->next; free(s); s = n; } }
void dp_free(dp_state *d) {
    int i;
    if (!d) return;
    for (i = 0; i < d->nports; i++) {
        dp_free_list(d->ctl[i].head); dp_free_list(d->data[i].head);
        dp_free_list(d->wire[i].head);
    }
    for (i = 0; i < d->nout; i++) free(d->sslot[i]);
    for (i = 0; i < DP_BATCH; i++) free(d->rslot[i]);   /* taken for a receive, unused */
    dp_free_list(d->free);
    free(d->peer); free(d->ctl); free(d->data); free(d->wire); free(d->lane); free(d);
}
int dp_set_peer(dp_state *d, int port, const char *ip, int udp_port) {
    struct sockaddr_in *sa = &d->peer[port];
    sa->sin_family = AF_INET;
    sa->sin_port = htons((unsigned short)udp_port);
    return inet_pton(AF_INET, ip, &sa->sin_addr) == 1;
}
int dp_set_lane(dp_state *d, int port, const char *ip, int udp_port, int pause, int resume) {
    struct sockaddr_in *sa = &d->lane[port];
    sa->sin_family = AF_INET;
    sa->sin_port = htons((unsigned short)udp_port);
    d->lane_kind[0] = pause;
    d->lane_kind[1] = resume;
    if (inet_pton(AF_INET, ip, &sa->sin_addr) == 1) return 1;
    sa->sin_family = 0;
    return 0;
}
/* up to want datagrams: the count, 0 if none waits, -1 on a socket error, -2 out of
   memory */
int dp_recv(dp_state *d, int want) {
    int i, m;
    for (i = 0; i < want; i++) {
        if (!d->rslot[i]) { d->rslot[i] = dp_take(d); if (!d->rslot[i]) return -2; }
        d->riov[i].iov_base = d->rslot[i]->buf;
        d->riov[i].iov_len = d->bufsize;
        memset(&d->rmsg[i].msg_hdr, 0, sizeof(struct msghdr));
        d->rmsg[i].msg_hdr.msg_iov = &d->riov[i];
        d->rmsg[i].msg_hdr.msg_iovlen = 1;
        d->rmsg[i].msg_hdr.msg_name = &d->rsa[i];
        d->rmsg[i].msg_hdr.msg_namelen = sizeof(struct sockaddr_in);
    }
    m = recvmmsg(d->fd, d->rmsg, want, MSG_DONTWAIT, NULL);
    if (m < 0) return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
    for (i = 0; i < m; i++) d->rslot[i]->n = (int)d->rmsg[i].msg_len;
    return m;
}
/* the slot received i-th, handed over (the next receive takes a fresh one) */
dp_slot *dp_got(dp_state *d, int i) {
    dp_slot *s = d->rslot[i]; d->rslot[i] = NULL; return s;
}
int dp_ingress(dp_state *d, int i) {
    struct sockaddr_in *sa = &d->rsa[i];
    int p;
    if (d->rmsg[i].msg_hdr.msg_namelen < sizeof(struct sockaddr_in) || sa->sin_family != AF_INET)
        return -1;
    for (p = 0; p < d->nports; p++)
        if (d->peer[p].sin_port == sa->sin_port
                && d->peer[p].sin_addr.s_addr == sa->sin_addr.s_addr)
            return p;
    return -1;
}
unsigned int dp_inet4(const char *ip) {
    struct in_addr a;
    return inet_pton(AF_INET, ip, &a) == 1 ? a.s_addr : 0;
}
void dp_sender(dp_state *d, int i, char *ip, int *port) {
    inet_ntop(AF_INET, &d->rsa[i].sin_addr, ip, 16);
    *port = ntohs(d->rsa[i].sin_port);
}
/* sendmmsg(2) of what is held; counts into out[0..3]: sent, blocked, errors, batches */
void dp_flush(dp_state *d, long long *out) {
    int start = 0, i, r;
    if (!d->nout) return;
    for (i = 0; i < d->nout; i++) {
        dp_slot *s = d->sslot[i];
        d->siov[i].iov_base = s->buf;
        d->siov[i].iov_len = s->n;
    }
    out[3]++;
    while (start < d->nout) {
        r = sendmmsg(d->fd, d->smsg + start, d->nout - start, 0);
        if (r > 0) { out[0] += r; start += r; continue; }
        if (errno == EAGAIN || errno == EWOULDBLOCK) out[1]++; else out[2]++;
        start++;                  /* that one is lost (counted), go on with the next */
    }
    for (i = 0; i < d->nout; i++) dp_give(d, d->sslot[i]);
    d->nout = 0;
}
int dp_out(dp_state *d, dp_slot *s, int port) {
    int i = d->nout++;
    d->sslot[i] = s;
    memset(&d->smsg[i].msg_hdr, 0, sizeof(struct msghdr));
    d->smsg[i].msg_hdr.msg_iov = &d->siov[i];
    d->smsg[i].msg_hdr.msg_iovlen = 1;
    d->smsg[i].msg_hdr.msg_name = &d->peer[port];
    if ((s->kind == d->lane_kind[0] || s->kind == d->lane_kind[1])
            && d->lane[port].sin_family == AF_INET)
        d->smsg[i].msg_hdr.msg_name = &d->lane[port];   /* a PFC frame: the peer's lane */
    d->smsg[i].msg_hdr.msg_namelen = sizeof(struct sockaddr_in);
    return d->nout == DP_OUT;
}
void dp_put16(unsigned char *p, long long v) {
    p[0] = (unsigned char)(v >> 8); p[1] = (unsigned char)v;
}
void dp_put32(unsigned char *p, unsigned int v) {
    p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v;
}
