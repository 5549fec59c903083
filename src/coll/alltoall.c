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
 * Measured (SimGrid 3.32, benchmarks/sim rail platform, 16 nodes x 8 GPUs,
 * NIC 48 GB/s, NVLink 370 GB/s, against SMPI's MPICH-selector MPI_Alltoall):
 * 1 MiB per pair 2679 us vs 3252 us (NIC injection bound 2621 us: both are
 * bandwidth-bound, 1.21x), 2.13x with a 2:1 oversubscribed spine; 64 KiB
 * 170 vs 651 us, 1 KiB 10.5 vs 130 us (g times fewer network messages).
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
 * phase 2 starts only then (SimGrid, 16 x 8 GPUs, 1 MiB per pair: 0.3 ms of
 * 3.0); a window of 2 lets the first rail messages start after one node's
 * worth of blocks, and keeps the next node's blocks coming meanwhile. */
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

/* The body, once c->y holds the block sizes. @in_place: the data to send is
 * the copy at the front of a->data (@pre bytes), not at @sbuf. */
static mxh_status_t run(mxh_hier_t *h, call_t *c, const char *sbuf, const size_t *sc,
                        const size_t *sd, char *rbuf, const size_t *rc, const size_t *rd,
                        int in_place, size_t pre)
{
    struct mxh_a2a *a = h->a2a;
    const int N = a->nnodes, g = a->g, n = a->me_node, j = a->me_slot;
    const int *at    = a->rank_at;
    const uint64_t *y = c->y;
    size_t s2_total = 0, r2_total = 0, nreq = 0;
    reqs_t q;
    char *s2, *r2;

    /* the phase-2 buffers and the exact number of requests */
    for (int m = 0; m < N; m++) {
        c->s2_len[m] = c->r2_len[m] = c->s2_off[m] = c->r2_off[m] = 0;
        c->pend1[m] = c->pend2[m] = 0;
        if (m == n)
            continue;
        for (int i = 0; i < g; i++) {
            c->s2_len[m] += y[i * N + m];
            c->r2_len[m] += rc[at[m * g + i]];
            if (i != j)
                c->pend1[m] += (int)pieces(y[i * N + m]);
        }
        c->s2_off[m] = s2_total;
        c->r2_off[m] = r2_total;
        s2_total += align_up(c->s2_len[m]);
        r2_total += align_up(c->r2_len[m]);
        c->pend2[m] = (int)pieces(c->r2_len[m]);
        nreq += (size_t)c->pend1[m] + (size_t)c->pend2[m] + pieces(c->s2_len[m]);
    }
    for (int i = 0; i < g; i++) {
        if (i == j)
            continue;
        nreq += pieces(rc[at[n * g + i]]);
        for (int m = 0; m < N; m++)
            nreq += pieces(sc[at[m * g + i]]);
    }
    if (nreq > INT_MAX / 2) {
        mxh_error("hierarchical alltoall: %zu messages", nreq);
        return MXH_ERR_UNSUPPORTED;
    }
    if (meta_grow(&a->reqs, (sizeof(MPI_Request) + sizeof(int)) * (nreq + 1)) == NULL) {
        mxh_error("hierarchical alltoall: out of memory (%zu requests)", nreq);
        return MXH_ERR_NO_MEMORY;
    }
    q.req  = a->reqs.p;
    q.what = (int *)(q.req + nreq + 1);
    q.n    = 0;
    q.cap  = (int)nreq;
    /* data: [in-place copy (pre bytes) | s2 | r2]; growing keeps the copy (in
     * the simulation's model mode nothing is kept, and nothing is checked) */
    if (mxh_hier_grow(&a->data, pre + s2_total + r2_total) == NULL) {
        mxh_error("hierarchical alltoall: out of memory (%zu bytes)", pre + s2_total + r2_total);
        return MXH_ERR_NO_MEMORY;
    }
    if (in_place)
        sbuf = a->data.p;
    s2 = (char *)a->data.p + pre;
    r2 = s2 + s2_total;

#define CHECK(call)                                                                 \
    do {                                                                            \
        if ((call) != MPI_SUCCESS)                                                  \
            return MXH_ERR_MPI;                                                     \
    } while (0)

    /* phase 2 receives first: the messages land in place when they arrive */
    for (int d = 1; d < N; d++) {
        int v = (n + N - d) % N;
        CHECK(post(&q, 0, r2 + c->r2_off[v], c->r2_len[v], v, 0, a->cross, N + v));
    }
    /* phase 1 receives (tag: the destination node): blocks for other nodes into
     * s2, grouped by node and ordered by source slot; the ones for me into rbuf */
    for (int di = 1; di < g; di++) {
        int i = (j + g - di) % g;
        for (int dm = 0; dm < N; dm++) {
            int m = (n + dm) % N;
            if (m == n) {
                int src = at[n * g + i];
                CHECK(post(&q, 0, rbuf + rd[src], rc[src], i, m, a->node, -1));
                continue;
            }
            size_t off = c->s2_off[m];
            for (int k = 0; k < i; k++)
                off += y[k * N + m];
            CHECK(post(&q, 0, s2 + off, y[i * N + m], i, m, a->node, m));
        }
    }
    /* phase 1 sends, straight from the send buffer, by destination node in
     * rotated order (the ranks of a rail do not all feed one node first; my own
     * node last: its blocks are final, no rail message waits for them), at most
     * `window` nodes in flight */
    int next_dm = 1, in_flight = 0;
#define SEND_GROUPS()                                                                      \
    while (in_flight < window && next_dm <= N) {                                           \
        int m_ = (n + next_dm++) % N, n0_ = q.n;                                           \
        for (int di = 1; di < g; di++) {                                                   \
            int i_ = (j + di) % g, dst_ = at[m_ * g + i_];                                 \
            CHECK(post(&q, 1, sbuf + sd[dst_], sc[dst_], i_, m_, a->node, 2 * N + m_));    \
        }                                                                                  \
        c->pends[m_] = q.n - n0_;                                                          \
        in_flight += c->pends[m_] > 0;                                                     \
    }
    SEND_GROUPS();
    /* my own blocks along my rail, and the one for me (the sends above only
     * read sbuf: copying meanwhile is fine) */
    size_t copied = 0;
    for (int m = 0; m < N; m++) {
        int dst = at[m * g + j];
        if (m == n) {
            size_t k = sc[dst] < rc[dst] ? sc[dst] : rc[dst];
            if (k > 0)
                mxh_copy_uncharged(rbuf + rd[dst], sbuf + sd[dst], k);
            copied += k;
            continue;
        }
        size_t off = c->s2_off[m];
        for (int k = 0; k < j; k++)
            off += y[k * N + m];
        if (sc[dst] > 0)
            mxh_copy_uncharged(s2 + off, sbuf + sd[dst], sc[dst]);
        copied += sc[dst];
    }
    mxh_copy_charge(copied);
    /* phase 2 sends that wait for nothing (no phase-1 pieces for that node) */
    for (int dm = 1; dm < N; dm++) {
        int m = (n + dm) % N;
        if (c->pend1[m] == 0)
            CHECK(post(&q, 1, s2 + c->s2_off[m], c->s2_len[m], m, 0, a->cross, -1));
    }

    /* progress: the last phase-1 piece for node m sends its phase-2 message; a
     * complete phase-2 message is copied to its places */
    for (;;) {
        int idx = MPI_UNDEFINED;
        int rcw = mxh_task_wait_any(q.n, q.req, &idx, MPI_STATUS_IGNORE);
        if (rcw != MPI_SUCCESS) {
            mxh_error("hierarchical alltoall: waiting for a message failed (MPI error %d)", rcw);
            return MXH_ERR_MPI;
        }
        if (idx == MPI_UNDEFINED)
            break; /* every request is complete */
        int w       = q.what[idx];
        q.what[idx] = -1;
        if (w >= 2 * N) {
            if (--c->pends[w - 2 * N] == 0) {
                in_flight--;
                SEND_GROUPS();
            }
        } else if (w >= 0 && w < N) {
            if (--c->pend1[w] == 0)
                CHECK(post(&q, 1, s2 + c->s2_off[w], c->s2_len[w], w, 0, a->cross, -1));
        } else if (w >= N) {
            int v = w - N;
            if (--c->pend2[v] == 0) {
                const char *p = r2 + c->r2_off[v];
                for (int i = 0; i < g; i++) {
                    int src = at[v * g + i];
                    if (rc[src] > 0)
                        mxh_copy_uncharged(rbuf + rd[src], p, rc[src]);
                    p += rc[src];
                }
                mxh_copy_charge(c->r2_len[v]);
            }
        }
    }
#undef SEND_GROUPS
#undef CHECK
    return MXH_OK;
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
