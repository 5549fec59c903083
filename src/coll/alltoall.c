/* Algorithm: hierarchical (rail-aligned) alltoall / alltoallv (coll/alltoall.h)
 *
 * N nodes of g ranks each, p = N*g; rank (n, j) = node n, slot j; b bytes per
 * pair (alltoall). Two phases, overlapped per destination node:
 *
 *   phase 1, inside node n: (n, i) sends (n, j), i != j, its blocks for every
 *     (m, j), one message per block straight from the send buffer (tag m); the
 *     receiver lands the blocks for m != n in its phase-2 send buffer, grouped
 *     by m and ordered by i, and the blocks for itself (m == n) directly in its
 *     receive buffer. Its own blocks for (m, j) are copied there locally.
 *   phase 2, along rail j: as soon as every block for (m, j) is in, (n, j)
 *     sends them to (m, j) as one message (g*b bytes); (m, j) receives one
 *     message per node and copies the blocks to their places in rbuf.
 *   alltoallv: before phase 1 the block sizes are exchanged inside the node
 *     (MPI_Ialltoall of N 8-byte counts per pair), since the intermediate rank
 *     cannot know them; the receiver knows its own recvcounts.
 *
 * Cost per rank, alpha/beta intra-node (l) and network (n):
 *   (g-1)*N*alpha_l + (g-1)*N*b*beta_l                       phase 1
 *   (N-1)*alpha_n + (N-1)*g*b*beta_n                         phase 2
 *   (N-1)*(g+1)*b*gamma_copy                                 own blocks + unpacking
 *   [alltoallv: one node-local alltoall of N*8 bytes per pair]
 * against a direct alltoall's (p-1)*alpha_n + (N-1)*g*b*beta_n on the network:
 * the same network bytes in g times fewer, g times larger messages, and none
 * of them leaves its rail (on a rail-optimized fabric a message from rail i to
 * rail j crosses the spine; here only NVLink/shared memory crosses rails). The
 * price is N times more intra-node volume and one copy of the received data
 * (in place: one more copy of the whole send data). Phase-1 sends go out a
 * window of 2 destination nodes at a time, so phase 2 starts after one node's
 * blocks, (g-1)*b*beta_l, and the phases overlap: time ~ max(phase 1,
 * phase 2) + (g-1)*b*beta_l.
 *
 * Against SMPI's MPICH-selector MPI_Alltoall it wins a little where both are
 * bound by NIC injection, more on an oversubscribed spine (its messages stay on
 * their rails) and most on small messages (g times fewer network messages);
 * benchmarks/RESULTS.md section 8, "All-to-all, 1 MiB per pair".
 *
 * Messages of more than max_msg bytes (1 GiB) go in pieces: both sides know
 * every size, so they split alike (same tag, MPI keeps the order). Zero-size
 * messages are not sent at all (both sides skip them alike). */
#include "config.h"

#include "coll/alltoall.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "util/log.h"

#define A2A_ALIGN 64

struct mxh_a2a {
    MPI_Comm       node;    /* my node, rank = slot */
    MPI_Comm       cross;   /* my slot on every node, rank = node */
    int            nnodes, g;
    int            me_node, me_slot;
    int           *rank_at; /* [nnodes * g]: rank in h->comm of (node, slot) */
    mxh_grow_buf_t data;    /* in-place copy | phase-2 send | phase-2 receive (the
                               work-buffer allocator: shared pages in the simulation) */
    mxh_grow_buf_t meta;    /* sizes and offsets of one call (plain malloc) */
    mxh_grow_buf_t reqs;    /* requests of one call and what each one means (malloc) */
    mxh_grow_buf_t conv;    /* byte counts converted from element counts (malloc) */
};

/* Grow a metadata buffer (always real memory, unlike the work buffers). */
static void *meta_grow(mxh_grow_buf_t *b, size_t bytes)
{
    if (bytes > b->size) {
        size_t want = bytes > 2 * b->size ? bytes : 2 * b->size;
        void *p     = realloc(b->p, want);
        if (p == NULL)
            return NULL;
        b->p    = p;
        b->size = want;
    }
    return b->p;
}

static size_t max_msg = (size_t)1 << 30;

void mxh_alltoall_set_max_message(size_t bytes)
{
    max_msg = bytes ? bytes : (size_t)1 << 30;
}

/* Destination nodes whose phase-1 blocks a rank sends at a time. All at once,
 * the blocks share the node's links and all arrive at the end of phase 1, so
 * phase 2 starts only then; a window of 2 lets the first rail messages start
 * after one node's worth of blocks, and keeps the next node's blocks coming
 * meanwhile. */
#define A2A_WINDOW_DEFAULT 2
static int window = A2A_WINDOW_DEFAULT;

void mxh_alltoall_set_window(int nodes)
{
    window = nodes > 0 ? nodes : A2A_WINDOW_DEFAULT;
}

/* ---- set-up --------------------------------------------------------------------- */

void mxh_alltoall_destroy(struct mxh_a2a *a)
{
    if (a == NULL)
        return;
    if (a->node != MPI_COMM_NULL)
        MPI_Comm_free(&a->node);
    if (a->cross != MPI_COMM_NULL)
        MPI_Comm_free(&a->cross);
    mxh_hier_grow_free(&a->data);
    free(a->meta.p);
    free(a->reqs.p);
    free(a->conv.p);
    free(a->rank_at);
    free(a);
}

int mxh_alltoall_ready(const mxh_hier_t *h)
{
    return h->a2a != NULL;
}

mxh_status_t mxh_alltoall_setup(mxh_hier_t *h)
{
    const mxh_layout_t *L = h->layout;
    struct mxh_a2a *a;
    int *slot;
    int sz = 0, ok = 1, all_ok = 0;

    if (h->a2a != NULL)
        return MXH_OK;
    if (mxh_task_in_fiber()) {
        mxh_error("mxh_alltoall_setup called inside a task (it makes communicators)");
        return MXH_ERR_INVALID_PARAM;
    }
    if (!mxh_alltoall_applicable(L)) {
        mxh_error("hierarchical alltoall: the layout (%d ranks on %d nodes) does not have the "
                  "same number >= 2 of ranks on every one of >= 2 nodes",
                  L->nranks, L->nnodes);
        return MXH_ERR_UNSUPPORTED;
    }
    /* the splits are collectives on h->comm: the ones the queued tasks still have
     * to post must come first, in the same order on every rank */
    if (h->queue != NULL)
        mxh_task_queue_drain(h->queue);

    a    = calloc(1, sizeof(*a));
    slot = malloc(sizeof(int) * (size_t)L->nranks);
    if (a != NULL) {
        a->node    = MPI_COMM_NULL;
        a->cross   = MPI_COMM_NULL;
        a->nnodes  = L->nnodes;
        a->g       = L->nranks / L->nnodes;
        a->rank_at = malloc(sizeof(int) * (size_t)L->nranks);
    }
    if (a == NULL || slot == NULL || a->rank_at == NULL || mxh_alltoall_slots(L, slot) != MXH_OK) {
        mxh_error("hierarchical alltoall: out of memory");
        ok = 0;
    } else {
        for (int r = 0; r < L->nranks; r++)
            a->rank_at[L->node_of[r] * a->g + slot[r]] = r;
        a->me_node = L->node_of[h->rank];
        a->me_slot = slot[h->rank];
    }
    free(slot);

    /* a rank that failed still takes part (no communicator for it); the verdict
     * is collective, so that all ranks use the algorithm or none */
    MPI_Comm node = MPI_COMM_NULL, cross = MPI_COMM_NULL;
    if (MPI_Comm_split(h->comm, ok ? a->me_node : MPI_UNDEFINED, ok ? a->me_slot : 0, &node) !=
            MPI_SUCCESS ||
        MPI_Comm_split(h->comm, ok ? a->me_slot : MPI_UNDEFINED, ok ? a->me_node : 0, &cross) !=
            MPI_SUCCESS) {
        mxh_error("hierarchical alltoall: MPI_Comm_split failed");
        ok = 0;
    }
    if (ok) {
        a->node  = node;
        a->cross = cross;
        MPI_Comm_set_errhandler(a->node, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(a->cross, MPI_ERRORS_RETURN);
        if (MPI_Comm_size(a->node, &sz) != MPI_SUCCESS || sz != a->g ||
            MPI_Comm_size(a->cross, &sz) != MPI_SUCCESS || sz != a->nnodes) {
            mxh_error("hierarchical alltoall: node/cross communicators of unexpected size");
            ok = 0;
        }
    } else {
        if (node != MPI_COMM_NULL)
            MPI_Comm_free(&node);
        if (cross != MPI_COMM_NULL)
            MPI_Comm_free(&cross);
    }
    if (MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, h->comm) != MPI_SUCCESS) {
        mxh_error("hierarchical alltoall: MPI_Allreduce of the set-up verdict failed");
        all_ok = 0;
    }
    if (!all_ok) {
        if (ok)
            mxh_error("hierarchical alltoall: set-up failed on another rank");
        mxh_alltoall_destroy(a); /* collective: every rank frees its communicators */
        return ok ? MXH_ERR_MPI : MXH_ERR_NO_MEMORY;
    }
    h->a2a = a;
    return MXH_OK;
}

/* ---- one call ------------------------------------------------------------------- */

static size_t align_up(size_t x)
{
    return (x + A2A_ALIGN - 1) / A2A_ALIGN * A2A_ALIGN;
}

static size_t pieces(size_t bytes)
{
    return (bytes + max_msg - 1) / max_msg;
}

/* The metadata of one call, carved from a->meta. */
typedef struct call {
    uint64_t *x, *y;     /* [g * N] sizes sent / received in the count exchange:
                            y[i * N + m] = bytes of the block (n, i) -> (m, me) */
    size_t   *s2_off, *s2_len; /* [N] phase-2 message to node m in the s2 buffer */
    size_t   *r2_off, *r2_len; /* [N] phase-2 message from node v in the r2 buffer */
    int      *pend1, *pend2;   /* [N] phase-1 pieces for m / phase-2 pieces from v to go */
    int      *pends;           /* [N] phase-1 send pieces for node m still in flight */
    size_t   *cnt, *dsp;       /* [p] uniform counts and displacements (alltoall) */
} call_t;

static mxh_status_t call_get(struct mxh_a2a *a, int p, call_t *c)
{
    size_t gn = (size_t)a->g * (size_t)a->nnodes, N = (size_t)a->nnodes;
    size_t need = 2 * gn * sizeof(uint64_t) + 4 * N * sizeof(size_t) + 2 * (size_t)p * sizeof(size_t) +
                  3 * N * sizeof(int);
    char *m = meta_grow(&a->meta, need);
    if (m == NULL) {
        mxh_error("hierarchical alltoall: out of memory (%zu bytes of sizes)", need);
        return MXH_ERR_NO_MEMORY;
    }
    c->x      = (uint64_t *)m;
    c->y      = c->x + gn;
    c->s2_off = (size_t *)(c->y + gn);
    c->s2_len = c->s2_off + N;
    c->r2_off = c->s2_len + N;
    c->r2_len = c->r2_off + N;
    c->cnt    = c->r2_len + N;
    c->dsp    = c->cnt + p;
    c->pend1  = (int *)(c->dsp + p);
    c->pend2  = c->pend1 + N;
    c->pends  = c->pend2 + N;
    return MXH_OK;
}

/* The requests of one call and what completing each one means. */
typedef struct reqs {
    MPI_Request *req;
    int         *what; /* -1 nothing; m in [0, N): a phase-1 piece received for
                          node m; N + v: a piece of the phase-2 message from node
                          v; 2N + m: a phase-1 piece sent for node m */
    int          n, cap;
} reqs_t;

/* Post @bytes as pieces of at most max_msg (@send: Isend, else Irecv). */
static int post(reqs_t *q, int send, const char *buf, size_t bytes, int peer, int tag,
                MPI_Comm comm, int what)
{
    while (bytes > 0) {
        int k = (int)(bytes < max_msg ? bytes : max_msg);
        int rc;
        if (q->n >= q->cap) { /* cannot happen: the count is exact */
            mxh_error("hierarchical alltoall: more requests than counted");
            return MPI_ERR_INTERN;
        }
        rc = send ? mxh_isend(buf, k, MPI_BYTE, peer, tag, comm, &q->req[q->n])
                  : MPI_Irecv((char *)(uintptr_t)buf, k, MPI_BYTE, peer, tag, comm, &q->req[q->n]);
        if (rc != MPI_SUCCESS) {
            mxh_error("hierarchical alltoall: MPI_%s of %d bytes (peer %d) failed (MPI error %d)",
                      send ? "Isend" : "Irecv", k, peer, rc);
            return rc;
        }
        q->what[q->n++] = what;
        buf += k;
        bytes -= (size_t)k;
    }
    return MPI_SUCCESS;
}

/* Copy @n bytes (charged to the simulated clock in the simulation build). */
static void copy(void *dst, const void *src, size_t n)
{
    if (n > 0)
        mxh_copy(dst, src, n);
}

/* One call of run: its buffers and sizes, its requests and the phase-1 send window. */
typedef struct run_ctx {
    struct mxh_a2a *a;
    call_t         *c;
    const char     *sbuf;
    const size_t   *sc, *sd;
    char           *rbuf;
    const size_t   *rc, *rd;
    char           *s2, *r2; /* the phase-2 send and receive buffers */
    reqs_t          q;
    int             next_dm, in_flight; /* next destination node to send to, nodes in flight */
} run_ctx_t;

/* The phase-2 message of every node (c->s2_*, c->r2_*), the pieces each waits for
 * (c->pend1, c->pend2), the sizes of the phase-2 buffers and the exact number of
 * requests. */
static void run_sizes(run_ctx_t *r, size_t *s2_total, size_t *r2_total, size_t *nreq)
{
    const struct mxh_a2a *a = r->a;
    call_t *c = r->c;
    const int N = a->nnodes, g = a->g, n = a->me_node, j = a->me_slot, *at = a->rank_at;
    const uint64_t *y = c->y;

    *s2_total = *r2_total = *nreq = 0;
    for (int m = 0; m < N; m++) {
        c->s2_len[m] = c->r2_len[m] = c->s2_off[m] = c->r2_off[m] = 0;
        c->pend1[m] = c->pend2[m] = 0;
        if (m == n)
            continue;
        for (int i = 0; i < g; i++) {
            c->s2_len[m] += y[i * N + m];
            c->r2_len[m] += r->rc[at[m * g + i]];
            if (i != j)
                c->pend1[m] += (int)pieces(y[i * N + m]);
        }
        c->s2_off[m] = *s2_total;
        c->r2_off[m] = *r2_total;
        *s2_total += align_up(c->s2_len[m]);
        *r2_total += align_up(c->r2_len[m]);
        c->pend2[m] = (int)pieces(c->r2_len[m]);
        *nreq += (size_t)c->pend1[m] + (size_t)c->pend2[m] + pieces(c->s2_len[m]);
    }
    for (int i = 0; i < g; i++) {
        if (i == j)
            continue;
        *nreq += pieces(r->rc[at[n * g + i]]);
        for (int m = 0; m < N; m++)
            *nreq += pieces(r->sc[at[m * g + i]]);
    }
}

/* The requests and the data buffer: [in-place copy (@pre bytes) | s2 | r2]; growing keeps
 * the copy (in the simulation's model mode nothing is kept, and nothing is checked). */
static mxh_status_t run_buffers(run_ctx_t *r, int in_place, size_t pre)
{
    struct mxh_a2a *a = r->a;
    size_t s2_total, r2_total, nreq;

    run_sizes(r, &s2_total, &r2_total, &nreq);
    if (nreq > INT_MAX / 2) {
        mxh_error("hierarchical alltoall: %zu messages", nreq);
        return MXH_ERR_UNSUPPORTED;
    }
    if (meta_grow(&a->reqs, (sizeof(MPI_Request) + sizeof(int)) * (nreq + 1)) == NULL) {
        mxh_error("hierarchical alltoall: out of memory (%zu requests)", nreq);
        return MXH_ERR_NO_MEMORY;
    }
    r->q.req  = a->reqs.p;
    r->q.what = (int *)(r->q.req + nreq + 1);
    r->q.n    = 0;
    r->q.cap  = (int)nreq;
    if (mxh_hier_grow(&a->data, pre + s2_total + r2_total) == NULL) {
        mxh_error("hierarchical alltoall: out of memory (%zu bytes)", pre + s2_total + r2_total);
        return MXH_ERR_NO_MEMORY;
    }
    if (in_place)
        r->sbuf = a->data.p;
    r->s2 = (char *)a->data.p + pre;
    r->r2 = r->s2 + s2_total;
    return MXH_OK;
}

/* Posts the receives: phase 2 first (the messages land in place when they arrive), then
 * phase 1 (tag: the destination node): blocks for other nodes into s2, grouped by node
 * and ordered by source slot; the ones for me into rbuf. */
static int run_post_recvs(run_ctx_t *r)
{
    const struct mxh_a2a *a = r->a;
    const call_t *c = r->c;
    const int N = a->nnodes, g = a->g, n = a->me_node, j = a->me_slot, *at = a->rank_at;
    int rc;

    for (int d = 1; d < N; d++) {
        int v = (n + N - d) % N;
        if ((rc = post(&r->q, 0, r->r2 + c->r2_off[v], c->r2_len[v], v, 0, a->cross, N + v)) !=
            MPI_SUCCESS)
            return rc;
    }
    for (int di = 1; di < g; di++) {
        int i = (j + g - di) % g;
        for (int dm = 0; dm < N; dm++) {
            int m = (n + dm) % N;
            if (m == n) {
                int src = at[n * g + i];
                rc = post(&r->q, 0, r->rbuf + r->rd[src], r->rc[src], i, m, a->node, -1);
            } else {
                size_t off = c->s2_off[m];
                for (int k = 0; k < i; k++)
                    off += c->y[k * N + m];
                rc = post(&r->q, 0, r->s2 + off, c->y[i * N + m], i, m, a->node, m);
            }
            if (rc != MPI_SUCCESS)
                return rc;
        }
    }
    return MPI_SUCCESS;
}

/* Phase-1 sends, straight from the send buffer, by destination node in rotated order (the
 * ranks of a rail do not all feed one node first; my own node last: its blocks are final,
 * no rail message waits for them), until `window` nodes are in flight. */
static int run_send_groups(run_ctx_t *r)
{
    const struct mxh_a2a *a = r->a;
    const int N = a->nnodes, g = a->g, n = a->me_node, j = a->me_slot, *at = a->rank_at;

    while (r->in_flight < window && r->next_dm <= N) {
        int m = (n + r->next_dm++) % N, n0 = r->q.n;
        for (int di = 1; di < g; di++) {
            int i = (j + di) % g, dst = at[m * g + i];
            int rc = post(&r->q, 1, r->sbuf + r->sd[dst], r->sc[dst], i, m, a->node, 2 * N + m);
            if (rc != MPI_SUCCESS)
                return rc;
        }
        r->c->pends[m] = r->q.n - n0;
        r->in_flight += r->c->pends[m] > 0;
    }
    return MPI_SUCCESS;
}

/* Copies my own blocks along my rail into s2, and the one for me into rbuf. */
static void run_copy_own(run_ctx_t *r)
{
    const struct mxh_a2a *a = r->a;
    const call_t *c = r->c;
    const int N = a->nnodes, g = a->g, n = a->me_node, j = a->me_slot, *at = a->rank_at;
    size_t copied = 0;

    for (int m = 0; m < N; m++) {
        int dst = at[m * g + j];
        if (m == n) {
            size_t k = r->sc[dst] < r->rc[dst] ? r->sc[dst] : r->rc[dst];
            if (k > 0)
                mxh_copy_uncharged(r->rbuf + r->rd[dst], r->sbuf + r->sd[dst], k);
            copied += k;
            continue;
        }
        size_t off = c->s2_off[m];
        for (int k = 0; k < j; k++)
            off += c->y[k * N + m];
        if (r->sc[dst] > 0)
            mxh_copy_uncharged(r->s2 + off, r->sbuf + r->sd[dst], r->sc[dst]);
        copied += r->sc[dst];
    }
    mxh_copy_charge(copied);
}

/* Sends the phase-2 message to node @m, whose blocks are all in. */
static int run_send_rail(run_ctx_t *r, int m)
{
    return post(&r->q, 1, r->s2 + r->c->s2_off[m], r->c->s2_len[m], m, 0, r->a->cross, -1);
}

/* Copies the complete phase-2 message from node @v to the blocks' places in rbuf. */
static void run_unpack(run_ctx_t *r, int v)
{
    const struct mxh_a2a *a = r->a;
    const char *p = r->r2 + r->c->r2_off[v];

    for (int i = 0; i < a->g; i++) {
        int src = a->rank_at[v * a->g + i];
        if (r->rc[src] > 0)
            mxh_copy_uncharged(r->rbuf + r->rd[src], p, r->rc[src]);
        p += r->rc[src];
    }
    mxh_copy_charge(r->c->r2_len[v]);
}

/* Progress: the last phase-1 piece for node m sends its phase-2 message; a complete
 * phase-2 message is copied to its places; a node's sent phase-1 pieces free a place in
 * the window. */
static mxh_status_t run_progress(run_ctx_t *r)
{
    const int N = r->a->nnodes;
    call_t *c = r->c;

    for (;;) {
        int idx = MPI_UNDEFINED, rc = MPI_SUCCESS;
        int rcw = mxh_task_wait_any(r->q.n, r->q.req, &idx, MPI_STATUS_IGNORE);
        if (rcw != MPI_SUCCESS) {
            mxh_error("hierarchical alltoall: waiting for a message failed (MPI error %d)", rcw);
            return MXH_ERR_MPI;
        }
        if (idx == MPI_UNDEFINED)
            break; /* every request is complete */
        int w          = r->q.what[idx];
        r->q.what[idx] = -1;
        if (w >= 2 * N) {
            if (--c->pends[w - 2 * N] == 0) {
                r->in_flight--;
                rc = run_send_groups(r);
            }
        } else if (w >= 0 && w < N) {
            if (--c->pend1[w] == 0)
                rc = run_send_rail(r, w);
        } else if (w >= N) {
            if (--c->pend2[w - N] == 0)
                run_unpack(r, w - N);
        }
        if (rc != MPI_SUCCESS)
            return MXH_ERR_MPI;
    }
    return MXH_OK;
}

/* The body, once c->y holds the block sizes. @in_place: the data to send is
 * the copy at the front of a->data (@pre bytes), not at @sbuf. */
static mxh_status_t run(mxh_hier_t *h, call_t *c, const char *sbuf, const size_t *sc,
                        const size_t *sd, char *rbuf, const size_t *rc, const size_t *rd,
                        int in_place, size_t pre)
{
    run_ctx_t r = {.a = h->a2a, .c = c, .sbuf = sbuf, .sc = sc, .sd = sd, .rbuf = rbuf,
                   .rc = rc, .rd = rd, .next_dm = 1};
    const int N = r.a->nnodes, n = r.a->me_node;
    mxh_status_t st;

    if ((st = run_buffers(&r, in_place, pre)) != MXH_OK)
        return st;
    if (run_post_recvs(&r) != MPI_SUCCESS || run_send_groups(&r) != MPI_SUCCESS)
        return MXH_ERR_MPI;
    /* the sends above only read sbuf: copying meanwhile is fine */
    run_copy_own(&r);
    /* phase 2 sends that wait for nothing (no phase-1 pieces for that node) */
    for (int dm = 1; dm < N; dm++) {
        int m = (n + dm) % N;
        if (c->pend1[m] == 0 && run_send_rail(&r, m) != MPI_SUCCESS)
            return MXH_ERR_MPI;
    }
    return run_progress(&r);
}

/* In place: the data to send is rbuf's; its span goes to the front of the data
 * buffer (*@pre bytes, which run keeps and sends from). */
static mxh_status_t copy_in_place(struct mxh_a2a *a, int size, const char *rbuf,
                                  const size_t *rc, const size_t *rd, size_t *pre)
{
    size_t span = 0;
    for (int p = 0; p < size; p++)
        if (rc[p] > 0 && rd[p] + rc[p] > span)
            span = rd[p] + rc[p];
    *pre = align_up(span);
    if (span == 0)
        return MXH_OK;
    if (mxh_hier_grow(&a->data, *pre) == NULL) {
        mxh_error("hierarchical alltoall: out of memory (%zu bytes for the in-place copy)", span);
        return MXH_ERR_NO_MEMORY;
    }
    copy(a->data.p, rbuf, span);
    return MXH_OK;
}

static mxh_status_t check_ready(const mxh_hier_t *h)
{
    if (h->a2a == NULL) {
        mxh_error("hierarchical alltoall used before mxh_alltoall_setup");
        return MXH_ERR_INVALID_PARAM;
    }
    return MXH_OK;
}

mxh_status_t mxh_alltoallv_hier(mxh_hier_t *h, const char *sbuf, const size_t *scounts,
                                const size_t *sdispls, char *rbuf, const size_t *rcounts,
                                const size_t *rdispls)
{
    struct mxh_a2a *a;
    call_t c;
    size_t pre = 0;
    MPI_Request req;
    mxh_status_t st;
    int N, g, rcm;

    if ((st = check_ready(h)) != MXH_OK)
        return st;
    a = h->a2a;
    N = a->nnodes;
    g = a->g;
    if ((st = call_get(a, h->size, &c)) != MXH_OK)
        return st;
    int in_place = scounts == NULL;
    if (in_place) {
        if ((st = copy_in_place(a, h->size, rbuf, rcounts, rdispls, &pre)) != MXH_OK)
            return st;
        scounts = rcounts;
        sdispls = rdispls;
    }
    /* the sizes of my blocks for (m, s) go to slot s; those of every (n, i) for
     * (m, me) come back */
    for (int s = 0; s < g; s++)
        for (int m = 0; m < N; m++)
            c.x[s * N + m] = scounts[a->rank_at[m * g + s]];
    rcm = MPI_Ialltoall(c.x, (int)(N * sizeof(uint64_t)), MPI_BYTE, c.y,
                        (int)(N * sizeof(uint64_t)), MPI_BYTE, a->node, &req);
    if (rcm == MPI_SUCCESS)
        rcm = mxh_task_wait(&req, MPI_STATUS_IGNORE);
    if (rcm != MPI_SUCCESS) {
        mxh_error("hierarchical alltoall: exchanging the block sizes failed (MPI error %d)", rcm);
        return MXH_ERR_MPI;
    }
    return run(h, &c, sbuf, scounts, sdispls, rbuf, rcounts, rdispls, in_place, pre);
}

mxh_status_t mxh_alltoall_hier(mxh_hier_t *h, const char *sbuf, char *rbuf, size_t bytes)
{
    struct mxh_a2a *a;
    call_t c;
    size_t pre = 0;
    mxh_status_t st;

    if ((st = check_ready(h)) != MXH_OK)
        return st;
    a = h->a2a;
    if ((st = call_get(a, h->size, &c)) != MXH_OK)
        return st;
    for (int r = 0; r < h->size; r++) {
        c.cnt[r] = bytes;
        c.dsp[r] = (size_t)r * bytes;
    }
    for (int k = 0; k < a->g * a->nnodes; k++)
        c.y[k] = bytes;
    if (sbuf == NULL && (st = copy_in_place(a, h->size, rbuf, c.cnt, c.dsp, &pre)) != MXH_OK)
        return st;
    return run(h, &c, sbuf, c.cnt, c.dsp, rbuf, c.cnt, c.dsp, sbuf == NULL, pre);
}

mxh_status_t mxh_alltoallv_hier_elems(mxh_hier_t *h, const void *sbuf, const int *scounts,
                                      const int *sdispls, size_t stsize, void *rbuf,
                                      const int *rcounts, const int *rdispls, size_t rtsize)
{
    size_t p = (size_t)h->size, *b;
    mxh_status_t st;

    if ((st = check_ready(h)) != MXH_OK)
        return st;
    b = meta_grow(&h->a2a->conv, 4 * p * sizeof(size_t));
    if (b == NULL) {
        mxh_error("hierarchical alltoall: out of memory (%zu counts)", 4 * p);
        return MXH_ERR_NO_MEMORY;
    }
    for (size_t r = 0; r < p; r++) {
        b[r]         = (size_t)rcounts[r] * rtsize;
        b[p + r]     = (size_t)rdispls[r] * rtsize;
        b[2 * p + r] = scounts ? (size_t)scounts[r] * stsize : 0;
        b[3 * p + r] = scounts ? (size_t)sdispls[r] * stsize : 0;
    }
    return mxh_alltoallv_hier(h, sbuf, scounts ? b + 2 * p : NULL, b + 3 * p, rbuf, b, b + p);
}
