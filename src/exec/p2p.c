#include "config.h"

#include "exec/p2p.h"
#include "exec/task.h"
#include "reduce/reduce.h"
#include "sim/sim.h"

#include <stdint.h>
#include <string.h>

/* ---- parts of a step's region ------------------------------------------------ */

/* Part x: the step's parts, or an even split (allreduce). */
static void part(const mxh_step_t *s, int x, size_t *off, size_t *cnt)
{
    if (s->counts) {
        *off = (size_t)s->displs[x];
        *cnt = (size_t)s->counts[x];
        return;
    }
    size_t g = (size_t)s->gsize, q = s->count / g, rem = s->count % g, ux = (size_t)x;
    *off = ux * q + (ux < rem ? ux : rem);
    *cnt = q + (ux < rem);
}

/* Bcast and reduce steps of pipelines (step.rootless) by direct exchanges split
 * the region among the p - 1 other members and leave the root's part empty: the
 * root then sends (bcast) or receives (reduce) the region once, and no member
 * moves more than that. With an even split the root also sends its own part to
 * everybody in the allgather (and receives everybody's in the reduce-scatter),
 * 2(p-1)/p of the region through its link: at the bound that is half the speed
 * (RESULTS.md section 5, bcast). For one fragment the even split is slightly shorter
 * (the root's second sending overlaps the others' allgather). */
static int rootless(const mxh_step_t *s, mxh_p2p_algo_t algo)
{
    return s->rootless && (s->type == MXH_STEP_BCAST || s->type == MXH_STEP_REDUCE) &&
           s->counts == NULL && algo == MXH_P2P_DIRECT;
}

/* A rootless reduce step on the network: the root keeps its contribution out of the
 * others' reduce-scatter and adds it to the sum it gathers. The others' exchanges
 * then wait on none of the root's messages, whose window (the root's node's ranks
 * hold the stream that paces everyone's, exec.c) otherwise held every member's
 * reduce-scatter of a fragment until the root had started it. Inside the node the
 * root still sends its part: its NVLink carries nothing else outwards, and adding a
 * whole fragment there would cost the root a pass over it. It pays on rails in several
 * leaf groups and costs a little within one leaf (RESULTS.md section 5, "The root adds
 * its own contribution"). */
static int root_adds(const mxh_step_t *s, mxh_p2p_algo_t algo)
{
    return rootless(s, algo) && s->type == MXH_STEP_REDUCE && s->net;
}

static void rootless_part(const mxh_step_t *s, int x, size_t *off, size_t *cnt)
{
    if (x == s->root) {
        *off = 0;
        *cnt = 0;
        return;
    }
    size_t g = (size_t)s->gsize - 1, q = s->count / g, rem = s->count % g;
    size_t j = (size_t)((x - s->root - 1 + s->gsize) % s->gsize);
    *off = j * q + (j < rem ? j : rem);
    *cnt = q + (j < rem);
}

/* Part x of the step @op runs. */
static void op_part(const struct mxh_p2p_op *op, int x, size_t *off, size_t *cnt)
{
    if (op->rootless)
        rootless_part(op->s, x, off, cnt);
    else
        part(op->s, x, off, cnt);
}

/* Elements [*off, *off + *cnt) of the parts [lo, hi). */
static void parts_range(const mxh_step_t *s, int lo, int hi, size_t *off, size_t *cnt)
{
    size_t o1, c1, o2, c2;
    part(s, lo, &o1, &c1);
    part(s, hi - 1, &o2, &c2);
    *off = o1;
    *cnt = o2 + c2 - o1;
}

static size_t max_part(const mxh_step_t *s)
{
    size_t m = 0, off, cnt;
    for (int x = 0; x < s->gsize; x++) {
        part(s, x, &off, &cnt);
        if (cnt > m)
            m = cnt;
    }
    return m;
}

static int log2i(int p)
{
    int l = 0;
    while ((1 << l) < p)
        l++;
    return l;
}

/* kary exchange @j (reduce-scatter order): the range of f * stride parts from lo
 * that I share with the f - 1 ranks differing from me in digit j only; part range
 * d (stride parts from lo + d * stride) is mine, range e belongs to rank
 * lo + e * stride + me % stride. */
typedef struct kary {
    int f, stride, lo, d;
} kary_t;

static kary_t kary_geom(const mxh_step_t *s, const int *fac, int nfac, int j)
{
    kary_t g;
    g.f      = fac[j];
    g.stride = 1;
    for (int i = j + 1; i < nfac; i++)
        g.stride *= fac[i];
    g.lo = s->me - s->me % (g.f * g.stride);
    g.d  = s->me % (g.f * g.stride) / g.stride;
    return g;
}

/* Spread step: the first key of the class I receive (@recv) or send to, and the step
 * between keys; mine is skipped by the callers. */
static int spread_first(const mxh_step_t *s, int recv)
{
    int g = s->ports;
    return ((s->me + (recv ? s->port : -s->port)) % g + g) % g;
}

/* Keys I receive from (the class minus me), in key order. */
static int spread_nrecv(const mxh_step_t *s)
{
    int n = 0;
    for (int x = spread_first(s, 1); x < s->gsize; x += s->ports)
        n += x != s->me;
    return n;
}

/* Reduce-scatter and allgather phases over an even split: allreduce, and the
 * reduce (+ gather to the root) and bcast (scatter from the root +) built on
 * them. */
static int even_split(const mxh_step_t *s)
{
    return s->type == MXH_STEP_ALLREDUCE || s->type == MXH_STEP_REDUCE ||
           s->type == MXH_STEP_BCAST;
}

/* rhd: the parts range [lo, hi) before reduce-scatter exchange k, and its partner
 * distance. Every exchange keeps the half my bit selects. */
static int rhd_dist(int p, int k, int ascend)
{
    return ascend ? 1 << k : p >> (k + 1);
}

static void rhd_range(int p, int me, int k, int ascend, int *lo, int *hi)
{
    *lo = 0;
    *hi = p;
    for (int j = 0; j < k; j++) {
        int mid = *lo + (*hi - *lo) / 2;
        if (me & rhd_dist(p, j, ascend))
            *lo = mid;
        else
            *hi = mid;
    }
}

size_t mxh_p2p_tmp_count(const mxh_step_t *s, size_t ext)
{
    int fac[32], p = s->gsize;
    size_t need = 0, off, cnt;

    if (s->type == MXH_STEP_SPREAD && mxh_p2p_usable(s, ext))
        return (size_t)spread_nrecv(s) * s->count;
    /* a reduce step of any size: the stream executor runs small ones point to point
     * too (exec.c p2p_structural), and the direct reduce-scatter's p - 1 parts of
     * ceil(count / p) may exceed the region's count elements */
    if (!(s->type == MXH_STEP_REDUCE ? s->gsize > 1 : mxh_p2p_usable(s, ext)) ||
        single_exchange(s) || s->type == MXH_STEP_ALLGATHER || s->type == MXH_STEP_BCAST)
        return 0;
    switch (mxh_p2p_step_algo(s, ext)) {
    case MXH_P2P_RING:
        return max_part(s);
    case MXH_P2P_RHD: {
        int ascend = even_split(s), lo, hi;
        for (int k = 0; k < log2i(p); k++) {
            rhd_range(p, s->me, k, ascend, &lo, &hi);
            int mid = lo + (hi - lo) / 2;
            if (s->me & rhd_dist(p, k, ascend))
                parts_range(s, mid, hi, &off, &cnt);
            else
                parts_range(s, lo, mid, &off, &cnt);
            if (cnt > need)
                need = cnt;
        }
        return need;
    }
    case MXH_P2P_DIRECT:
        if (root_adds(s, MXH_P2P_DIRECT) && s->me == s->root)
            return s->count; /* the others' sum, gathered */
        if (rootless(s, MXH_P2P_DIRECT))
            rootless_part(s, s->me, &off, &cnt);
        else
            part(s, s->me, &off, &cnt);
        return (size_t)(p - 1) * cnt;
    case MXH_P2P_FLAT: /* the root's p - 1 contributions */
        return s->type == MXH_STEP_REDUCE ? (size_t)(p - 1) * s->count : 0;
    case MXH_P2P_KARY: {
        /* my share of the range from f - 1 peers, in every reduce-scatter exchange */
        int n = mxh_p2p_factors(p, mxh_p2p_kary_most(), fac);
        for (int i = 0; i < n; i++) {
            kary_t g = kary_geom(s, fac, n, i);
            parts_range(s, g.lo + g.d * g.stride, g.lo + (g.d + 1) * g.stride, &off, &cnt);
            if ((size_t)(g.f - 1) * cnt > need)
                need = (size_t)(g.f - 1) * cnt;
        }
        return need;
    }
    case MXH_P2P_RADIX_AR: {
        int n = mxh_p2p_factors(p, MXH_P2P_RADIX, fac), fmax = 0;
        for (int i = 0; i < n; i++)
            fmax = fac[i] > fmax ? fac[i] : fmax;
        return (size_t)(fmax - 1) * s->count;
    }
    }
    return 0;
}

/* ---- exchanges ------------------------------------------------------------------- */

/* ---- device buffers (env.mem) ---------------------------------------------------- */

/* What a device-buffer exchange waits for besides its MPI requests (op->phase). */
enum {
    MXH_P2P_PH_NET = 0, /* its MPI requests */
    MXH_P2P_PH_OUT,     /* staged: its sends' copies to the bounce buffer, then the sends */
    MXH_P2P_PH_IN,      /* staged: its receives' copies from the bounce buffer */
    MXH_P2P_PH_RED      /* the reductions (and copies) after it, then the next exchange */
};

static int dev_mode(const mxh_p2p_op_t *op)
{
    return op->env.mem != NULL;
}

/* 1 once every event of the phase completed (*rc: the first failure, as an MPI code). */
static int dev_done(mxh_p2p_op_t *op, int *rc)
{
    mxh_p2p_dev_t *d = op->env.dev;
    int all = 1;
    for (int i = 0; i < d->nev; i++) {
        int r = op->env.mem->event_test(&d->ev[i]);
        if (r == 0)
            all = 0;
        else if (r < 0 && *rc == MPI_SUCCESS)
            *rc = MPI_ERR_OTHER;
    }
    if (all)
        d->nev = 0;
    return all;
}

/* Start work on the device: @st from the kind's call, its event taken. */
static int dev_started(mxh_p2p_op_t *op, mxh_status_t st)
{
    if (st != MXH_OK)
        return st == MXH_ERR_NO_MEMORY ? MPI_ERR_NO_MEM : MPI_ERR_OTHER;
    op->env.dev->nev++;
    return MPI_SUCCESS;
}

static int dev_copy(mxh_p2p_op_t *op, char *dst, const char *src, size_t bytes)
{
    mxh_p2p_dev_t *d = op->env.dev;
    if (bytes == 0 || d->nev >= MXH_P2P_MAXREQ)
        return bytes == 0 ? MPI_SUCCESS : MPI_ERR_INTERN;
    return dev_started(op, op->env.mem->copy_start(dst, src, bytes, &d->ev[d->nev]));
}

static char *bounce_take(mxh_p2p_dev_t *d, size_t bytes)
{
    size_t at = (d->used + 63) & ~(size_t)63; /* cache-line apart */
    if (at + bytes > d->cap)
        return NULL;
    d->used = at + bytes;
    return d->bounce + at;
}

/* A staged message: the receive is posted into the bounce buffer now (its copy to the
 * device follows its completion), the send after its copy from the device completed
 * (one copy for several sends of the same data). */
static int stage_pair(mxh_p2p_op_t *op, int peer, char *rbuf, size_t rcnt, const char *sbuf,
                      size_t scnt)
{
    mxh_p2p_dev_t *d = op->env.dev;
    size_t ext = op->env.ext;
    int rc = MPI_SUCCESS;

    if (d->nmsg + 2 > MXH_P2P_MAXREQ)
        return MPI_ERR_INTERN;
    if (rcnt) {
        char *b = bounce_take(d, rcnt * ext);
        if (b == NULL)
            return MPI_ERR_NO_MEM;
        rc = MPI_Irecv(b, (int)rcnt, op->env.dt, peer, op->tag, op->env.comm,
                       &op->req[op->nreq++]);
        d->msg[d->nmsg++] = (mxh_p2p_msg_t){rbuf, b, rcnt, peer, 0};
        d->staged += rcnt * ext;
    }
    if (rc == MPI_SUCCESS && scnt) {
        char *b = NULL;
        for (int j = 0; j < d->nmsg && b == NULL; j++)
            if (d->msg[j].send && d->msg[j].dev == sbuf && d->msg[j].cnt == scnt)
                b = d->msg[j].bnc;
        if (b == NULL) {
            if ((b = bounce_take(d, scnt * ext)) == NULL)
                return MPI_ERR_NO_MEM;
            rc = dev_copy(op, b, sbuf, scnt * ext);
            d->staged += scnt * ext;
        }
        d->msg[d->nmsg++] = (mxh_p2p_msg_t){(char *)(uintptr_t)sbuf, b, scnt, peer, 1};
        op->xbytes += scnt * ext;
        if (scnt * ext > op->xmsg)
            op->xmsg = scnt * ext;
    }
    return rc;
}

/* The staged exchange's sends, their data now in the bounce buffer. */
static int stage_sends(mxh_p2p_op_t *op)
{
    mxh_p2p_dev_t *d = op->env.dev;
    int rc = MPI_SUCCESS;
    for (int j = 0; j < d->nmsg && rc == MPI_SUCCESS; j++)
        if (d->msg[j].send)
            rc = mxh_isend(d->msg[j].bnc, (int)d->msg[j].cnt, op->env.dt, d->msg[j].peer,
                           op->tag, op->env.comm, &op->req[op->nreq++]);
    return rc;
}

/* The staged exchange's receives, complete in the bounce buffer: to the device. */
static int stage_recvs(mxh_p2p_op_t *op)
{
    mxh_p2p_dev_t *d = op->env.dev;
    int rc = MPI_SUCCESS;
    for (int j = 0; j < d->nmsg && rc == MPI_SUCCESS; j++)
        if (!d->msg[j].send)
            rc = dev_copy(op, d->msg[j].dev, d->msg[j].bnc, d->msg[j].cnt * op->env.ext);
    return rc;
}

/* Where MPI may touch device memory @p (direct): the kind's address for the network. */
static void *net_ptr(const mxh_p2p_op_t *op, const void *p)
{
    if (p == NULL || op->env.mem->net_ptr == NULL)
        return (void *)(uintptr_t)p;
    return op->env.mem->net_ptr(p);
}

static int post_pair(mxh_p2p_op_t *op, int peer, char *rbuf, size_t rcnt, const char *sbuf,
                     size_t scnt)
{
    int rc = MPI_SUCCESS;
    if (dev_mode(op)) {
        if (op->env.xfer == MXH_XFER_STAGED)
            return stage_pair(op, peer, rbuf, rcnt, sbuf, scnt);
        rbuf = net_ptr(op, rbuf);
        sbuf = net_ptr(op, sbuf);
    }
    if (rcnt)
        rc = MPI_Irecv(rbuf, (int)rcnt, op->env.dt, peer, op->tag, op->env.comm,
                       &op->req[op->nreq++]);
    if (rc == MPI_SUCCESS && scnt) {
        rc = mxh_isend(sbuf, (int)scnt, op->env.dt, peer, op->tag, op->env.comm,
                       &op->req[op->nreq++]);
        op->xbytes += scnt * op->env.ext;
        if (scnt * op->env.ext > op->xmsg)
            op->xmsg = scnt * op->env.ext;
    }
    return rc;
}

static char *at(const mxh_p2p_op_t *op, char *buf, size_t elems)
{
    return buf + elems * op->env.ext;
}

/* My own contribution at element @elems (MPI send buffers are const in C but
 * not in MPICH 4.0's prototypes of the nonblocking calls: cast once here). */
static char *src_at(const mxh_p2p_op_t *op, size_t elems)
{
    return (char *)(uintptr_t)op->src + elems * op->env.ext;
}

static int ring_post(mxh_p2p_op_t *op)
{
    const mxh_step_t *s = op->s;
    int p = s->gsize, me = s->me, right = (me + 1) % p, left = (me + p - 1) % p, sb, rb, rc;
    size_t soff, scnt, roff, rcnt;

    if (op->k < op->nrs) { /* reduce-scatter: pass on the partial sum of block me-1-k */
        sb = (me - 1 - op->k + 2 * p) % p;
        rb = (me - 2 - op->k + 2 * p) % p;
    } else {               /* allgather: pass on the finished block me-k */
        int k = op->k - op->nrs;
        sb = (me - k + p) % p;
        rb = (me - k - 1 + p) % p;
    }
    part(s, sb, &soff, &scnt);
    part(s, rb, &roff, &rcnt);
    /* receive first, then send (a left neighbour's send finds its receive posted) */
    rc = post_pair(op, left, op->k < op->nrs ? op->tmp : at(op, op->base, roff), rcnt, NULL, 0);
    if (rc == MPI_SUCCESS) /* the first block sent is my own contribution */
        rc = post_pair(op, right, NULL, 0, op->k == 0 ? src_at(op, soff) : at(op, op->base, soff),
                       scnt);
    return rc;
}

static int rhd_post(mxh_p2p_op_t *op)
{
    const mxh_step_t *s = op->s;
    int p = s->gsize, me = s->me, L = log2i(p), k, lo, hi, mid, upper;
    size_t loff, lcnt, hoff, hcnt;

    k = op->k < op->nrs ? op->k : L - 1 - (op->k - op->nrs);
    rhd_range(p, me, k, op->ascend, &lo, &hi);
    mid   = lo + (hi - lo) / 2;
    upper = (me & rhd_dist(p, k, op->ascend)) != 0;
    parts_range(s, lo, mid, &loff, &lcnt);
    parts_range(s, mid, hi, &hoff, &hcnt);
    int peer = me ^ rhd_dist(p, k, op->ascend);
    if (op->k < op->nrs) { /* keep my half: receive the partner's copy of it, send the other */
        char *in = op->k == 0 ? src_at(op, 0) : op->base;
        return upper ? post_pair(op, peer, op->tmp, hcnt, at(op, in, loff), lcnt)
                     : post_pair(op, peer, op->tmp, lcnt, at(op, in, hoff), hcnt);
    }
    /* allgather: send the half I hold, receive the other */
    return upper ? post_pair(op, peer, at(op, op->base, loff), lcnt, at(op, op->base, hoff), hcnt)
                 : post_pair(op, peer, at(op, op->base, hoff), hcnt, at(op, op->base, loff), lcnt);
}

static int direct_post(mxh_p2p_op_t *op)
{
    const mxh_step_t *s = op->s;
    int p = s->gsize, me = s->me, rc = MPI_SUCCESS;
    size_t moff, mcnt, off, cnt;

    op_part(op, me, &moff, &mcnt);
    if (op->rootless && (op->k >= op->nrs || op->root_adds) && me == s->root)
        return MPI_SUCCESS; /* bcast: the root holds the region, its part is empty;
                               root_adds: the root keeps its contribution */
    for (int i = 1; i < p && rc == MPI_SUCCESS; i++) {
        int x = (me + i) % p; /* spread the first messages over different peers */
        int slot = x < me ? x : x - 1;
        op_part(op, x, &off, &cnt);
        if (op->rootless && (op->k >= op->nrs || op->root_adds) && x == s->root)
            continue;
        if (op->k < op->nrs) /* my part from x, x's part to x */
            rc = post_pair(op, x, at(op, op->tmp, (size_t)slot * mcnt), mcnt, src_at(op, off),
                           cnt);
        else                 /* x's part from x, my part to x */
            rc = post_pair(op, x, at(op, op->base, off), cnt, at(op, op->base, moff), mcnt);
    }
    return rc;
}

/* Reduce-scatter exchange j: my range's share e to rank e, its copies of my share d
 * from it into slot i - 1 (i = e - d mod f). Allgather (j from the last factor
 * back): my share to the others, theirs from them, in place. */
static int kary_post(mxh_p2p_op_t *op)
{
    const mxh_step_t *s = op->s;
    int rs = op->k < op->nrs, j = rs ? op->k : op->nfac - 1 - (op->k - op->nrs), rc = MPI_SUCCESS;
    kary_t g = kary_geom(s, op->fac, op->nfac, j);
    size_t moff, mcnt, off, cnt;

    parts_range(s, g.lo + g.d * g.stride, g.lo + (g.d + 1) * g.stride, &moff, &mcnt);
    for (int i = 1; i < g.f && rc == MPI_SUCCESS; i++) {
        int e = (g.d + i) % g.f, peer = g.lo + e * g.stride + s->me % g.stride;
        parts_range(s, g.lo + e * g.stride, g.lo + (e + 1) * g.stride, &off, &cnt);
        if (rs)
            rc = post_pair(op, peer, at(op, op->tmp, (size_t)(i - 1) * mcnt), mcnt,
                           op->k == 0 ? src_at(op, off) : at(op, op->base, off), cnt);
        else
            rc = post_pair(op, peer, at(op, op->base, off), cnt, at(op, op->base, moff), mcnt);
    }
    return rc;
}

static void radix_digit(const mxh_p2p_op_t *op, int i, int *stride, int *digit)
{
    int st = 1;
    for (int j = 0; j < i; j++)
        st *= op->fac[j];
    *stride = st;
    *digit  = (op->s->me / st) % op->fac[i];
}

static int radix_post(mxh_p2p_op_t *op)
{
    int f = op->fac[op->k], stride, d, rc = MPI_SUCCESS;
    size_t n = op->s->count;

    radix_digit(op, op->k, &stride, &d);
    for (int i = 1; i < f && rc == MPI_SUCCESS; i++) {
        int j = (d + i) % f, peer = op->s->me + (j - d) * stride;
        int slot = j < d ? j : j - 1;
        rc = post_pair(op, peer, at(op, op->tmp, (size_t)slot * n), n, op->base, n);
    }
    return rc;
}

/* Spread: my region to every node of my class's senders' keys, theirs into @tmp in key
 * order (decide/plan.c build_allreduce_spread). */
static int spread_post(mxh_p2p_op_t *op)
{
    const mxh_step_t *s = op->s;
    int rc = MPI_SUCCESS, slot = 0;
    size_t n = s->count;

    for (int x = spread_first(s, 1); x < s->gsize && rc == MPI_SUCCESS; x += s->ports)
        if (x != s->me)
            rc = post_pair(op, x, at(op, op->tmp, (size_t)slot++ * n), n, NULL, 0);
    for (int x = spread_first(s, 0); x < s->gsize && rc == MPI_SUCCESS; x += s->ports)
        if (x != s->me)
            rc = post_pair(op, x, NULL, 0, op->base, n);
    return rc;
}

/* The part rank @x holds after the reduce-scatter phase (and before the
 * allgather phase): its own, except in rhd over an even split, which halves
 * over the nearest partners first. */
static int owned_part(const mxh_p2p_op_t *op, int x)
{
    int lo, hi, p = op->s->gsize;
    if (op->algo != MXH_P2P_RHD || !op->ascend)
        return x;
    rhd_range(p, x, log2i(p), 1, &lo, &hi);
    return lo;
}

/* Root phases: scatter (the root sends every member the part it owns), gather
 * (every member sends its part to the root); point to point with the peer. */
static int root_post(mxh_p2p_op_t *op, int scatter)
{
    const mxh_step_t *s = op->s;
    int p = s->gsize, me = s->me, root = s->root, rc = MPI_SUCCESS;
    size_t off, cnt;

    if (me != root) {
        op_part(op, owned_part(op, me), &off, &cnt);
        return scatter ? post_pair(op, root, at(op, op->base, off), cnt, NULL, 0)
                       : post_pair(op, root, NULL, 0, at(op, op->base, off), cnt);
    }
    for (int i = 1; i < p && rc == MPI_SUCCESS; i++) {
        int x = (me + i) % p;
        op_part(op, owned_part(op, x), &off, &cnt);
        rc = scatter      ? post_pair(op, x, NULL, 0, at(op, op->base, off), cnt)
             : op->root_adds ? post_pair(op, x, at(op, op->tmp, off), cnt, NULL, 0)
                             : post_pair(op, x, at(op, op->base, off), cnt, NULL, 0);
    }
    return rc;
}

/* flat: the whole region from the root to every member (bcast), or from every
 * member into the root's slots of tmp, in rank order without the root (reduce) */
static int flat_post(mxh_p2p_op_t *op)
{
    const mxh_step_t *s = op->s;
    int p = s->gsize, me = s->me, root = s->root, rc = MPI_SUCCESS, bc = s->type == MXH_STEP_BCAST;

    if (me != root)
        return bc ? post_pair(op, root, op->base, s->count, NULL, 0)
                  : post_pair(op, root, NULL, 0, op->src, s->count);
    for (int i = 1; i < p && rc == MPI_SUCCESS; i++) {
        int x = (me + i) % p;
        rc = bc ? post_pair(op, x, NULL, 0, op->base, s->count)
                : post_pair(op, x, at(op, op->tmp, (size_t)(x < me ? x : x - 1) * s->count),
                            s->count, NULL, 0);
    }
    return rc;
}

static int post_exchange(mxh_p2p_op_t *op)
{
    const mxh_step_t *s = op->s;

    switch (op->algo == MXH_P2P_FLAT ? -1 : (int)s->type) {
    case MXH_STEP_SCATTER:
        return root_post(op, 1);
    case MXH_STEP_GATHER:
        return root_post(op, 0);
    case MXH_STEP_SEND:
        return post_pair(op, s->root, NULL, 0, op->base, s->count);
    case MXH_STEP_RECV:
        return post_pair(op, s->root, op->base, s->count, NULL, 0);
    case MXH_STEP_SPREAD:
        return spread_post(op);
    case MXH_STEP_BCAST:
        if (op->k == 0)
            return root_post(op, 1);
        break;
    case MXH_STEP_REDUCE:
        if (op->k == op->nrs)
            return root_post(op, 0);
        break;
    default:
        break;
    }
    /* the exchange of each algorithm, by mxh_p2p_algo_t */
    static int (*const algo_post[])(mxh_p2p_op_t *) = {
        [MXH_P2P_RING] = ring_post,    [MXH_P2P_RHD] = rhd_post,   [MXH_P2P_DIRECT] = direct_post,
        [MXH_P2P_RADIX_AR] = radix_post, [MXH_P2P_KARY] = kary_post, [MXH_P2P_FLAT] = flat_post};
    if ((unsigned)op->algo >= sizeof(algo_post) / sizeof(algo_post[0]))
        return MPI_ERR_INTERN;
    return algo_post[op->algo](op);
}

static int post(mxh_p2p_op_t *op)
{
    mxh_p2p_dev_t *d = op->env.dev;
    int rc;

    op->nreq   = 0;
    op->xbytes = 0;
    op->xmsg   = 0;
    op->phase  = MXH_P2P_PH_NET;
    if (dev_mode(op) && op->env.xfer == MXH_XFER_STAGED) {
        d->nmsg = 0;
        d->nev  = 0;
        d->used = 0;
    }
    rc = post_exchange(op);
    if (rc == MPI_SUCCESS && dev_mode(op) && op->env.xfer == MXH_XFER_STAGED) {
        if (d->nev > 0)
            op->phase = MXH_P2P_PH_OUT;
        else
            rc = stage_sends(op);
    }
    return rc;
}

/* ---- reductions after an exchange --------------------------------------------------- */

/* out = in[n-1] op (... op in[0]) on the device: one fused kernel (the bits of
 * mxh_reduce_multi), complete when the phase's events are. */
static int dev_reduce_n(mxh_p2p_op_t *op, const void *const *in, int n, char *out, size_t cnt)
{
    mxh_p2p_dev_t *d = op->env.dev;
    if (cnt == 0)
        return MPI_SUCCESS;
    if (d->nev >= MXH_P2P_MAXREQ)
        return MPI_ERR_INTERN;
    return dev_started(op, op->env.mem->reduce_start(out, in, n, cnt, op->env.dt, op->env.op,
                                                     &d->ev[d->nev]));
}

static int reduce(mxh_p2p_op_t *op, const char *in, char *inout, size_t cnt)
{
    if (cnt == 0)
        return MPI_SUCCESS;
    if (dev_mode(op)) {
        const void *v[2] = {inout, in}; /* inout = in op inout, as mxh_reduce_local */
        return dev_reduce_n(op, v, 2, inout, cnt);
    }
    return mxh_reduce_local(in, inout, cnt, op->env.dt, op->env.op) == MXH_OK ? MPI_SUCCESS
                                                                            : MPI_ERR_OP;
}

/* out = in[n-1] op (... op in[0]), fused (one pass over the output). */
static int reduce_n(mxh_p2p_op_t *op, const void *const *in, int n, char *out, size_t cnt)
{
    if (cnt == 0)
        return MPI_SUCCESS;
    if (dev_mode(op))
        return dev_reduce_n(op, in, n, out, cnt);
    return mxh_reduce_multi(in, n, out, cnt, op->env.dt, op->env.op) == MXH_OK ? MPI_SUCCESS
                                                                               : MPI_ERR_OP;
}

/* base[off..] = received op mine, mine read from @mine (src or base) */
static int reduce_into(mxh_p2p_op_t *op, const char *mine, size_t off, size_t cnt)
{
    const void *in[2] = {mine + off * op->env.ext, op->tmp};
    return reduce_n(op, in, 2, at(op, op->base, off), cnt);
}

/* Spread: the class's node sums in key order (mine among them when my port is 0),
 * acc = v_last op (... op v_first), into base. */
static int spread_complete(mxh_p2p_op_t *op)
{
    const mxh_step_t *s = op->s;
    size_t n = s->count;
    int rc = MPI_SUCCESS, slot = 0;
    char *acc = NULL;

    if (dev_mode(op)) { /* the same chain as one fused kernel into base */
        const void *v[MXH_P2P_MAXREQ];
        int nv = 0;
        for (int x = spread_first(s, 1); x < s->gsize && nv < MXH_P2P_MAXREQ; x += s->ports)
            v[nv++] = x == s->me ? op->base : at(op, op->tmp, (size_t)slot++ * n);
        return nv > 0 ? reduce_n(op, v, nv, op->base, n) : MPI_SUCCESS;
    }
    for (int x = spread_first(s, 1); x < s->gsize && rc == MPI_SUCCESS; x += s->ports) {
        char *v = x == s->me ? op->base : at(op, op->tmp, (size_t)slot++ * n);
        if (acc == NULL)
            acc = v;
        else
            rc = reduce(op, v, acc, n);
    }
    if (rc == MPI_SUCCESS && acc != NULL && acc != op->base)
        mxh_copy(op->base, acc, n * op->env.ext);
    return rc;
}

static int complete(mxh_p2p_op_t *op)
{
    const mxh_step_t *s = op->s;
    int p = s->gsize, me = s->me, rc = MPI_SUCCESS;
    size_t off, cnt;

    if (s->type == MXH_STEP_SPREAD)
        return spread_complete(op);
    if (op->root_adds && op->k == op->nrs && me == s->root) {
        const void *in[2] = {op->src, op->tmp}; /* mine, then the others' sum */
        return reduce_n(op, in, 2, op->base, s->count);
    }
    if (single_exchange(s) || (s->type == MXH_STEP_BCAST && op->k == 0) ||
        (s->type == MXH_STEP_REDUCE && op->k == op->nrs))
        return MPI_SUCCESS; /* root phases only move data */
    if (op->k >= op->nrs && op->algo != MXH_P2P_RADIX_AR)
        return MPI_SUCCESS; /* allgather exchanges only move data */
    switch (op->algo) {
    case MXH_P2P_RING:
        /* the block arrives here for the first time: my contribution is in src */
        part(s, (me - 2 - op->k + 2 * p) % p, &off, &cnt);
        return reduce_into(op, op->src, off, cnt);
    case MXH_P2P_RHD: {
        int lo, hi, mid;
        rhd_range(p, me, op->k, op->ascend, &lo, &hi);
        mid = lo + (hi - lo) / 2;
        if (me & rhd_dist(p, op->k, op->ascend))
            parts_range(s, mid, hi, &off, &cnt);
        else
            parts_range(s, lo, mid, &off, &cnt);
        return reduce_into(op, op->k == 0 ? op->src : op->base, off, cnt);
    }
    case MXH_P2P_DIRECT: {
        /* my part: my contribution, then the others' in rank order, fused */
        const void *in[MXH_P2P_DIRECT_P];
        op_part(op, me, &off, &cnt);
        int n = 1;
        in[0] = op->src + off * op->env.ext;
        for (int x = 0; x < p; x++)
            if (x != me && !(op->root_adds && x == s->root))
                in[n++] = at(op, op->tmp, (size_t)(x < me ? x : x - 1) * cnt);
        return reduce_n(op, in, n, at(op, op->base, off), cnt);
    }
    case MXH_P2P_FLAT: {
        /* the root: mine, then the others' in rank order, fused */
        const void *in[MXH_P2P_FLAT_P];
        int n = 1;
        if (me != s->root)
            return MPI_SUCCESS;
        in[0] = op->src;
        for (int x = 0; x < p - 1; x++)
            in[n++] = at(op, op->tmp, (size_t)x * s->count);
        return reduce_n(op, in, n, op->base, s->count);
    }
    case MXH_P2P_KARY: {
        /* my share: mine, then the others' in digit order from mine, fused */
        const void *in[MXH_P2P_KARY_RADIX];
        kary_t g = kary_geom(s, op->fac, op->nfac, op->k);
        parts_range(s, g.lo + g.d * g.stride, g.lo + (g.d + 1) * g.stride, &off, &cnt);
        in[0] = (op->k == 0 ? op->src : op->base) + off * op->env.ext;
        for (int i = 1; i < g.f; i++)
            in[i] = at(op, op->tmp, (size_t)(i - 1) * cnt);
        return reduce_n(op, in, g.f, at(op, op->base, off), cnt);
    }
    case MXH_P2P_RADIX_AR: {
        /* acc = v_{f-1} op (... op (v_1 op v_0)) in digit order, the same on every
         * member of the digit group; after a spread exchange (one digit) in class
         * order: v_rot first */
        int f = op->fac[op->k], stride, d, rot = s->ports ? s->rot % f : 0;
        size_t n = s->count;
        radix_digit(op, op->k, &stride, &d);
#define RADIX_VEC(j) ((j) == d ? op->base : at(op, op->tmp, (size_t)((j) < d ? (j) : (j) - 1) * n))
        if (dev_mode(op)) { /* the same chain as one fused kernel into base */
            const void *v[MXH_P2P_RADIX];
            for (int t = 0; t < f; t++)
                v[t] = RADIX_VEC((rot + t) % f);
            return reduce_n(op, v, f, op->base, n);
        }
        char *acc = RADIX_VEC(rot);
        for (int t = 1; t < f && rc == MPI_SUCCESS; t++)
            rc = reduce(op, RADIX_VEC((rot + t) % f), acc, n);
#undef RADIX_VEC
        if (rc == MPI_SUCCESS && acc != op->base)
            mxh_copy(op->base, acc, n * op->env.ext);
        return rc;
    }
    }
    return MPI_ERR_INTERN;
}

/* ---- state machine ------------------------------------------------------------------ */

int mxh_p2p_start(mxh_p2p_op_t *op, const mxh_step_t *s, const mxh_p2p_env_t *env, char *base,
                  const char *src, char *tmp, int tag)
{
    int p = s->gsize, L = log2i(p);

    op->s      = s;
    op->env    = *env;
    op->base   = base;
    op->src    = src != NULL ? src : base;
    op->tmp    = tmp;
    op->tag    = tag;
    op->k      = 0;
    op->nreq   = 0;
    op->ready  = 0;
    op->hold   = 0;
    op->held   = 0;
    op->algo   = mxh_p2p_step_algo(s, env->ext);
    op->ascend = even_split(s);
    op->rootless = rootless(s, op->algo);
    op->root_adds = root_adds(s, op->algo);
    if (single_exchange(s)) {
        op->nrs  = 0;
        op->nsub = 1;
    } else {
        /* reduce-scatter and allgather phase lengths of the algorithm */
        int phase = op->algo == MXH_P2P_RING ? p - 1 : op->algo == MXH_P2P_RHD ? L : 1;
        if (op->algo == MXH_P2P_KARY)
            phase = op->nfac = mxh_p2p_factors(p, mxh_p2p_kary_most(), op->fac);
        switch (s->type) {
        case MXH_STEP_ALLGATHER:
            op->nrs  = 0;
            op->nsub = phase;
            break;
        case MXH_STEP_REDUCE_SCATTER:
            op->nrs = op->nsub = phase;
            break;
        case MXH_STEP_REDUCE: /* + gather to the root */
            op->nrs  = phase;
            op->nsub = phase + 1;
            break;
        case MXH_STEP_BCAST:  /* scatter from the root + */
            op->nrs  = 1;
            op->nsub = 1 + phase;
            break;
        default:
            op->nrs  = phase;
            op->nsub = 2 * phase;
            break;
        }
        if (op->algo == MXH_P2P_RADIX_AR) {
            op->nfac = mxh_p2p_factors(p, MXH_P2P_RADIX, op->fac);
            op->nrs  = op->nsub = op->nfac;
        }
        if (op->algo == MXH_P2P_FLAT) { /* one exchange; a reduce's reads src */
            op->nrs  = s->type == MXH_STEP_REDUCE;
            op->nsub = 1;
        }
    }
    op->phase  = MXH_P2P_PH_NET;
    if (dev_mode(op)) {
        op->env.dev->nev  = 0;
        op->env.dev->nmsg = 0;
    }
    /* only the reduce-scatter phases read src; elsewhere the input moves in first */
    if (op->src != base && s->count > 0 &&
        (op->algo == MXH_P2P_RADIX_AR || op->nrs == 0 || s->type == MXH_STEP_BCAST)) {
        if (dev_mode(op)) {
            int rc = dev_copy(op, base, op->src, s->count * env->ext);
            while (rc == MPI_SUCCESS && !dev_done(op, &rc))
                if (mxh_task_in_fiber())
                    mxh_task_yield();
            if (rc != MPI_SUCCESS)
                return rc;
        } else {
            mxh_copy(base, op->src, s->count * env->ext);
        }
        op->src = base;
    }
    op->active = s->count > 0 && op->nsub > 0;
    return op->active ? post(op) : MPI_SUCCESS;
}

/* Test the current exchange: op->ready once it completed (nothing reduced yet).
 * @test 0: no MPI call, complete when the caller's waits completed every request.
 * Device buffers, staged: its sends go once their copies out completed, and it is
 * ready once its receives' copies in completed. */
static int p2p_test(mxh_p2p_op_t *op, int test)
{
    MPI_Status stats[MXH_P2P_MAXREQ];
    int flag = 1, rc = MPI_SUCCESS;

    if (!op->active || op->ready || op->held)
        return MPI_SUCCESS;
    if (op->phase == MXH_P2P_PH_OUT) {
        if (!dev_done(op, &rc) || rc != MPI_SUCCESS)
            return rc;
        op->phase = MXH_P2P_PH_NET;
        if ((rc = stage_sends(op)) != MPI_SUCCESS)
            return rc;
    }
    if (op->phase == MXH_P2P_PH_NET) {
        for (int i = 0; !test && i < op->nreq; i++)
            if (op->req[i] != MPI_REQUEST_NULL)
                flag = 0;
        if (test && op->nreq > 0)
            rc = mxh_testall(op->nreq, op->req, &flag, stats);
        if (rc != MPI_SUCCESS || !flag)
            return rc;
        op->nreq = 0;
        if (!dev_mode(op) || op->env.xfer != MXH_XFER_STAGED) {
            op->ready = 1;
            return MPI_SUCCESS;
        }
        op->phase = MXH_P2P_PH_IN;
        if ((rc = stage_recvs(op)) != MPI_SUCCESS)
            return rc;
    }
    if (op->phase == MXH_P2P_PH_IN && dev_done(op, &rc) && rc == MPI_SUCCESS) {
        op->phase = MXH_P2P_PH_NET;
        op->ready = 1;
    }
    return rc;
}

/* The exchange and its reductions are done: the next one (or the end). */
static int p2p_next(mxh_p2p_op_t *op)
{
    if (++op->k == op->nsub) {
        op->active = 0;
        return MPI_SUCCESS;
    }
    /* kary: an exchange needs the one before it and the phase's first booked the
     * link for all of them (mxh_p2p_pace_bytes): held only where a phase starts */
    if (op->hold && (op->algo != MXH_P2P_KARY || op->k == op->nrs)) {
        op->held = 1;
        return MPI_SUCCESS;
    }
    return post(op);
}

/* After p2p_test: reduce what the exchange brought, post the next one (device
 * buffers: once the reductions completed, MXH_P2P_PH_RED). */
static int p2p_finish(mxh_p2p_op_t *op)
{
    int rc;

    if (!op->active || !op->ready)
        return MPI_SUCCESS;
    op->ready = 0;
    rc        = complete(op);
    if (rc != MPI_SUCCESS) {
        op->active = 0;
        return rc;
    }
    if (dev_mode(op) && op->env.dev->nev > 0) {
        op->phase = MXH_P2P_PH_RED;
        return MPI_SUCCESS;
    }
    return p2p_next(op);
}

size_t mxh_p2p_pace_bytes(const mxh_p2p_op_t *op)
{
    if (op->algo != MXH_P2P_KARY || op->s->gsize < 2)
        return op->xbytes;
    size_t region = op->s->count * op->env.ext;
    return region / (size_t)op->s->gsize * (size_t)(op->s->gsize - 1);
}

int mxh_p2p_post_held(mxh_p2p_op_t *op)
{
    if (!op->active || !op->held)
        return MPI_SUCCESS;
    op->held = 0;
    return post(op);
}

static int advance(mxh_p2p_op_t *op, int *moved, int test)
{
    int rc = MPI_SUCCESS;

    if (op->active && op->phase == MXH_P2P_PH_RED) {
        if (!dev_done(op, &rc) || rc != MPI_SUCCESS) {
            if (rc != MPI_SUCCESS)
                op->active = 0;
            return rc;
        }
        op->phase = MXH_P2P_PH_NET;
        *moved    = 1;
        if ((rc = p2p_next(op)) != MPI_SUCCESS)
            return rc;
    }
    rc = p2p_test(op, test);
    if (rc != MPI_SUCCESS || !op->ready)
        return rc;
    *moved = 1;
    return p2p_finish(op);
}

int mxh_p2p_completed(const mxh_p2p_op_t *op)
{
    if (!op->active || op->held || op->phase != MXH_P2P_PH_NET)
        return 0;
    for (int i = 0; !op->ready && i < op->nreq; i++)
        if (op->req[i] != MPI_REQUEST_NULL)
            return 0;
    return 1;
}

int mxh_p2p_advance(mxh_p2p_op_t *op, int *moved)
{
    return advance(op, moved, 1);
}

int mxh_p2p_advance_waited(mxh_p2p_op_t *op, int *moved)
{
    return advance(op, moved, 0);
}

int mxh_p2p_run(const mxh_step_t *s, const mxh_p2p_env_t *env, char *base, const char *src,
                char *tmp, int tag)
{
    mxh_p2p_op_t op;
    MPI_Status stats[MXH_P2P_MAXREQ];
    int rc = mxh_p2p_start(&op, s, env, base, src, tmp, tag);

    while (rc == MPI_SUCCESS && op.active) {
        int moved = 0;
        if (mxh_p2p_dev_busy(&op)) { /* device work completes only when polled */
            rc = mxh_p2p_advance(&op, &moved);
            if (rc == MPI_SUCCESS && !moved && mxh_task_in_fiber())
                mxh_task_yield();
            continue;
        }
        if (op.nreq > 0)
            rc = mxh_task_wait_all(op.nreq, op.req, stats);
        op.nreq = 0;
        if (rc == MPI_SUCCESS)
            rc = mxh_p2p_advance(&op, &moved);
    }
    return rc;
}

size_t mxh_p2p_bounce_bytes(const mxh_step_t *s, size_t ext)
{
    /* sends: distinct data of at most the region (a fused copy per source); receives:
     * at most the receive space, or the region where they land in place */
    size_t tmp = mxh_p2p_tmp_count(s, ext);
    return (s->count + (tmp > s->count ? tmp : s->count)) * ext + 2 * MXH_P2P_MAXREQ * 64;
}
