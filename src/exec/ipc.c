/* The device node level (exec/ipc.h): peer-mapped collectives of one node. */
#include "config.h"

#include "exec/ipc.h"
#include "exec/task.h"
#include "util/log.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What one rank publishes per call (mxh_shm_exchange: at most MXH_SHM_XCHG_MAX). */
typedef struct ipc_pub {
    int32_t            ok;     /* this rank can take part (buffers exportable, kernel exists) */
    int32_t            kind;   /* mxh_mem_kind_t of its buffers */
    int32_t            has[2]; /* buffer 0 (input) / 1 (output) published */
    mxh_mem_ipc_desc_t d[2];
} ipc_pub_t;

/* Copies or reductions of a region list started before waiting for them. */
#define EV_BATCH 64

_Static_assert(sizeof(ipc_pub_t) <= MXH_SHM_XCHG_MAX, "a publication fits one exchange");

struct mxh_ipc {
    mxh_shm_t       *shm;
    int              n, me;
    void            *owner;
    int             *votes;           /* [n] a round's votes */
    ipc_pub_t       *pub;             /* [n] this call's publications */
    char           **buf;             /* [2 n] rank q's buffer b at buf[2 q + b] (mine: my own) */
    const void     **src;             /* [n] reduction inputs */
    mxh_mem_event_t *ev;              /* [nev] */
    int              nev;             /* n + EV_BATCH */
    unsigned long    ran, declined;
    int              map_failed;      /* a peer's buffer could not be mapped here (agreed):
                                         peers that cannot map each other (no P2P access)
                                         stay so; every later call declines at once */
    /* MXH_IPC_STATS=1: where the calls' time goes, printed at destroy (ns): the fence
     * before publishing, the other waits for this rank's device work, the shared-memory
     * rounds (the publication's and the votes') */
    int              stats;
    long long        t_fence, t_dev, t_round;
    unsigned long    n_dev, n_round;
};

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

mxh_status_t mxh_ipc_create(mxh_shm_t *shm, int n, int me, void *owner, mxh_ipc_t **ipc_p)
{
    mxh_ipc_t *x = calloc(1, sizeof(*x));

    *ipc_p = NULL;
    if (x == NULL)
        return MXH_ERR_NO_MEMORY;
    x->shm    = shm;
    x->n      = n;
    x->me     = me;
    x->owner  = owner;
    x->votes  = malloc((size_t)n * sizeof(int));
    x->pub    = calloc((size_t)n, sizeof(ipc_pub_t));
    x->buf    = calloc(2 * (size_t)n, sizeof(char *));
    x->src    = calloc((size_t)n, sizeof(void *));
    x->nev    = n + EV_BATCH;
    x->ev     = calloc((size_t)x->nev, sizeof(mxh_mem_event_t));
    const char *e = getenv("MXH_IPC_STATS");
    x->stats  = e != NULL && e[0] == '1';
    if (!x->votes || !x->pub || !x->buf || !x->src || !x->ev) {
        mxh_ipc_destroy(x);
        return MXH_ERR_NO_MEMORY;
    }
    *ipc_p = x;
    return MXH_OK;
}

void mxh_ipc_destroy(mxh_ipc_t *x)
{
    if (x == NULL)
        return;
    if (x->stats && x->ran > 0) {
        double c = (double)x->ran * 1e3;
        fprintf(stderr,
                "mxh ipc stats rank %d of %d: %lu calls (%lu declined); per call: fence %.1f us, "
                "device waits %.1f us (%.1f waits), rounds %.1f us (%.1f rounds)\n",
                x->me, x->n, x->ran, x->declined, (double)x->t_fence / c, (double)x->t_dev / c,
                (double)x->n_dev / (double)x->ran, (double)x->t_round / c,
                (double)x->n_round / (double)x->ran);
    }
    free(x->votes);
    free(x->pub);
    free(x->buf);
    free(x->src);
    free(x->ev);
    free(x);
}

void mxh_ipc_counts(const mxh_ipc_t *x, unsigned long *ran, unsigned long *declined)
{
    *ran      = x ? x->ran : 0;
    *declined = x ? x->declined : 0;
}

/* ---- the pieces every protocol uses ---------------------------------------------------------- */

/* Wait until @k events of @ops complete (yielding inside a task). Every event
 * is waited for, also after an error. */
static mxh_status_t wait_raw(const mxh_mem_ops_t *ops, mxh_mem_event_t *ev, int k)
{
    mxh_status_t st = MXH_OK;
    int left        = k;

    while (left > 0) {
        left = 0;
        for (int i = 0; i < k; i++) {
            if (!ev[i].pending)
                continue;
            int done = ops->event_test(&ev[i]);
            if (done < 0 && st == MXH_OK)
                st = (mxh_status_t)-done;
            else if (done == 0)
                left++;
        }
        if (left > 0 && mxh_task_in_fiber())
            mxh_task_yield();
    }
    return st;
}

/* wait_raw, timed for MXH_IPC_STATS as a wait for this rank's device work */
static mxh_status_t wait_events(mxh_ipc_t *x, const mxh_mem_ops_t *ops, mxh_mem_event_t *ev, int k)
{
    long long t0    = x->stats ? now_ns() : 0;
    mxh_status_t st = wait_raw(ops, ev, k);
    if (x->stats) {
        x->t_dev += now_ns() - t0;
        x->n_dev++;
    }
    return st;
}

/* mxh_shm_exchange, timed for MXH_IPC_STATS */
static mxh_status_t exchange(mxh_ipc_t *x, const void *mine, size_t bytes, void *all)
{
    long long t0    = x->stats ? now_ns() : 0;
    mxh_status_t st = mxh_shm_exchange(x->shm, mine, bytes, all);
    if (x->stats) {
        x->t_round += now_ns() - t0;
        x->n_round++;
    }
    return st;
}

/* A round: the maximum of @v over the node's ranks (a barrier that carries a
 * vote). *@out = 1 when the round itself failed. */
static mxh_status_t round_max(mxh_ipc_t *x, int v, int *out)
{
    mxh_status_t st = exchange(x, &v, sizeof(v), x->votes);
    *out = st != MXH_OK;
    for (int q = 0; q < x->n && st == MXH_OK; q++)
        *out = x->votes[q] > *out ? x->votes[q] : *out;
    return st;
}

/* Publish buffer 0 (@b0, @n0 bytes) and buffer 1 and agree (steps 1 and 2 of
 * exec/ipc.h); @able: this rank's buffers suit the protocol; @only >= 0: only
 * that rank's buffers are read by peers (the others' are not mapped). On
 * MXH_OK x->buf[2 q + b] is rank q's buffer b in this process (NULL where q
 * published none or it is not needed). MXH_ERR_UNSUPPORTED: declined on every
 * rank, nothing written. Other errors: the shared-memory rounds failed. */
static mxh_status_t agree(mxh_ipc_t *x, const mxh_mem_ops_t *ops, int able, const void *b0,
                          size_t n0, const void *b1, size_t n1, MPI_Datatype dt, MPI_Op op,
                          int only)
{
    ipc_pub_t mine;
    const void *b[2] = {b0, b1};
    size_t nb[2]     = {n0, n1};
    mxh_status_t st;
    int bad = 0;

    if (x->map_failed)
        goto declined; /* on every rank alike: the failure was agreed */
    memset(&mine, 0, sizeof(mine));
    if ((int)MXH_LOG_DEBUG <= mxh_log_level_current && ops != NULL && ops->reduce_ok && op != MPI_OP_NULL &&
        !ops->reduce_ok(dt, op))
        mxh_debug("device node level: no %s kernel for this type and op", ops->name);
    mine.ok = able && ops != NULL && ops->ipc_export && ops->ipc_map && ops->copy_start &&
              ops->event_test &&
              (op == MPI_OP_NULL || (ops->reduce_start && ops->reduce_ok && ops->reduce_ok(dt, op)));
    if (mine.ok) {
        mine.kind = (int32_t)ops->kind;
        if (ops->fence_start) { /* my input is produced before a peer may read it */
            mxh_mem_event_t fence;
            long long t0 = x->stats ? now_ns() : 0;
            if (ops->fence_start(&fence) != MXH_OK || wait_raw(ops, &fence, 1) != MXH_OK)
                mine.ok = 0;
            if (x->stats)
                x->t_fence += now_ns() - t0;
        }
    }
    for (int i = 0; i < 2 && mine.ok; i++) {
        if (b[i] == NULL || nb[i] == 0)
            continue;
        mine.has[i] = 1;
        if (ops->ipc_export(b[i], nb[i], &mine.d[i]) != MXH_OK || !mine.d[i].valid)
            mine.ok = 0;
    }
    st = exchange(x, &mine, sizeof(mine), x->pub);
    if (st != MXH_OK)
        return st;
    for (int q = 0; q < x->n; q++) {
        if (!x->pub[q].ok || x->pub[q].kind != x->pub[0].kind) {
            mxh_debug("device node level declined: rank %d of the node %s", q,
                      !x->pub[q].ok ? "cannot take part (buffers, type or op)"
                                    : "has buffers of another kind");
            goto declined;
        }
    }
    for (int q = 0; q < x->n; q++) {
        for (int i = 0; i < 2; i++) {
            void *p = NULL;
            if (q == x->me)
                p = x->pub[q].has[i] ? (void *)b[i] : NULL;
            else if (x->pub[q].has[i] && (only < 0 || q == only) &&
                     ops->ipc_map(&x->pub[q].d[i], x->owner, &p) != MXH_OK)
                bad = 1;
            x->buf[2 * q + i] = p;
        }
    }
    if (bad)
        mxh_info("device node level: a peer's buffer cannot be mapped here: staged from now on");
    if ((st = round_max(x, bad, &bad)) != MXH_OK)
        return st;
    if (bad) {
        x->map_failed = 1;
        goto declined;
    }
    x->ran++;
    return MXH_OK;
declined:
    x->declined++;
    return MXH_ERR_UNSUPPORTED;
}

/* [*lo, *hi): slice @q of @count elements of @tsize bytes among n ranks, cut in
 * 256-byte units so that the kernels' vector loads stay aligned. */
static void slice(size_t count, size_t tsize, int n, int q, size_t *lo, size_t *hi)
{
    size_t unit  = tsize < 256 && 256 % tsize == 0 ? 256 / tsize : 1;
    size_t units = (count + unit - 1) / unit;
    *lo = units * (size_t)q / (size_t)n * unit;
    *hi = units * (size_t)(q + 1) / (size_t)n * unit;
    if (*lo > count)
        *lo = count;
    if (*hi > count)
        *hi = count;
}

/* dst = the reduction of elements [lo, lo + cnt) of every rank's buffer @b,
 * inputs in rank order; waits for it. */
static mxh_status_t reduce_slice(mxh_ipc_t *x, const mxh_mem_ops_t *ops, int b, void *dst,
                                 size_t off, size_t cnt, MPI_Datatype dt, MPI_Op op)
{
    mxh_status_t st;

    if (cnt == 0)
        return MXH_OK;
    for (int q = 0; q < x->n; q++)
        x->src[q] = x->buf[2 * q + b] + off;
    st = ops->reduce_start(dst, x->src, x->n, cnt, dt, op, &x->ev[0]);
    if (st != MXH_OK)
        return st;
    return wait_events(x, ops, x->ev, 1);
}

/* The closing round; returns the first error of @st and the round. */
static mxh_status_t finish(mxh_ipc_t *x, mxh_status_t st)
{
    int any;
    mxh_status_t rs = round_max(x, st != MXH_OK, &any);
    return st != MXH_OK ? st : rs;
}

/* ---- the collectives ------------------------------------------------------------------------ */

mxh_status_t mxh_ipc_allreduce(mxh_ipc_t *x, const mxh_mem_ops_t *ops, const void *in, void *out,
                               size_t count, MPI_Datatype dt, size_t tsize, MPI_Op op)
{
    size_t bytes = count * tsize, lo, hi;
    mxh_status_t st;
    int k = 0;

    if ((st = agree(x, ops, 1, in, bytes, out, bytes, dt, op, -1)) != MXH_OK)
        return st;
    slice(count, tsize, x->n, x->me, &lo, &hi);
    st = reduce_slice(x, ops, 0, (char *)out + lo * tsize, lo * tsize, hi - lo, dt, op);
    int any;
    mxh_status_t rs = round_max(x, st != MXH_OK, &any);
    if (st == MXH_OK && rs != MXH_OK)
        st = rs;
    /* a failed reduction elsewhere leaves its slice unwritten: the others still
     * copy (they must not hang) and every rank reports the error */
    for (int q = 0; q < x->n && st == MXH_OK; q++) {
        if (q == x->me)
            continue;
        slice(count, tsize, x->n, q, &lo, &hi);
        if (hi > lo &&
            (st = ops->copy_start((char *)out + lo * tsize, x->buf[2 * q + 1] + lo * tsize,
                                  (hi - lo) * tsize, &x->ev[k])) == MXH_OK)
            k++;
    }
    mxh_status_t ws = wait_events(x, ops, x->ev, k);
    if (st == MXH_OK)
        st = ws;
    if (st == MXH_OK && any)
        st = MXH_ERR_MPI; /* a peer's reduction failed (it logged why) */
    return finish(x, st);
}

mxh_status_t mxh_ipc_reduce_scatter(mxh_ipc_t *x, const mxh_mem_ops_t *ops, const void *in,
                                    void *out, const int *counts, const int *displs,
                                    MPI_Datatype dt, size_t tsize, MPI_Op op)
{
    size_t total = 0, mine_off = (size_t)displs[x->me] * tsize;
    size_t mine  = (size_t)counts[x->me] * tsize;
    char *target = out;
    mxh_status_t st;

    for (int q = 0; q < x->n; q++) {
        size_t end = ((size_t)displs[q] + (size_t)counts[q]) * tsize;
        if (end > total)
            total = end;
    }
    /* out overlapping the input elsewhere than my part (MPI's in place: the
     * result goes to the start of the buffer, where a peer reads its part):
     * reduce into my part, move it after the round; a move onto itself
     * (uneven parts) has no device copy: staged instead */
    if ((const char *)out != (const char *)in + mine_off && mine > 0 &&
        (const char *)out < (const char *)in + total && (const char *)out + mine > (const char *)in)
        target = (char *)in + mine_off;
    int able = target == (char *)out || (char *)out + mine <= target ||
               target + mine <= (char *)out;
    if ((st = agree(x, ops, able, in, total, NULL, 0, dt, op, -1)) != MXH_OK)
        return st;
    st = reduce_slice(x, ops, 0, target, mine_off, (size_t)counts[x->me], dt, op);
    int any;
    mxh_status_t rs = round_max(x, st != MXH_OK, &any);
    if (st == MXH_OK)
        st = rs;
    if (st == MXH_OK && target != (char *)out) {
        if ((st = ops->copy_start(out, target, mine, &x->ev[0])) == MXH_OK)
            st = wait_events(x, ops, x->ev, 1);
    }
    return st;
}

mxh_status_t mxh_ipc_allgather(mxh_ipc_t *x, const mxh_mem_ops_t *ops, const void *mine,
                               void *out, const int *counts, const int *displs, size_t tsize)
{
    mxh_status_t st;
    int k = 0;

    if ((st = agree(x, ops, 1, mine, (size_t)counts[x->me] * tsize, NULL, 0, MPI_BYTE,
                    MPI_OP_NULL, -1)) != MXH_OK)
        return st;
    for (int q = 0; q < x->n && st == MXH_OK; q++) {
        char *dst       = (char *)out + (size_t)displs[q] * tsize;
        const char *src = q == x->me ? (const char *)mine : x->buf[2 * q];
        size_t n        = (size_t)counts[q] * tsize;
        if (n == 0 || src == dst)
            continue;
        if ((st = ops->copy_start(dst, src, n, &x->ev[k])) == MXH_OK)
            k++;
    }
    mxh_status_t ws = wait_events(x, ops, x->ev, k);
    return finish(x, st != MXH_OK ? st : ws);
}

/* Large bcasts: a scatter from the root over the other ranks, then their all-gather, so
 * that the root's link carries the vector once instead of once per peer (flat: every
 * peer copies the whole vector from the root). One shared-memory round more; not
 * measured on a GPU yet: the size is the one above which the extra round of a few
 * microseconds is small against (n - 2) / (n - 1) of the vector saved on the root's
 * link at NVLink speed. */
#define IPC_BCAST_SPLIT_MIN ((size_t)4 << 20)

/* Slice @k of @bytes among the n - 1 ranks other than @root: rank q's slice, q != root. */
static void bcast_slice(const mxh_ipc_t *x, int root, int q, size_t bytes, size_t *lo, size_t *hi)
{
    slice(bytes, 1, x->n - 1, q < root ? q : q - 1, lo, hi);
}

mxh_status_t mxh_ipc_bcast(mxh_ipc_t *x, const mxh_mem_ops_t *ops, void *buf, size_t bytes,
                           int root)
{
    int split = x->n > 2 && bytes >= IPC_BCAST_SPLIT_MIN, k = 0, any;
    size_t lo, hi;
    mxh_status_t st;

    if ((st = agree(x, ops, 1, buf, bytes, NULL, 0, MPI_BYTE, MPI_OP_NULL, split ? -1 : root)) !=
        MXH_OK)
        return st;
    if (!split) {
        if (x->me != root && bytes > 0 &&
            (st = ops->copy_start(buf, x->buf[2 * root], bytes, &x->ev[0])) == MXH_OK)
            st = wait_events(x, ops, x->ev, 1);
        return finish(x, st);
    }
    if (x->me != root) { /* my slice from the root */
        bcast_slice(x, root, x->me, bytes, &lo, &hi);
        if (hi > lo && (st = ops->copy_start((char *)buf + lo, x->buf[2 * root] + lo, hi - lo,
                                             &x->ev[0])) == MXH_OK)
            st = wait_events(x, ops, x->ev, 1);
    }
    mxh_status_t rs = round_max(x, st != MXH_OK, &any);
    if (st == MXH_OK)
        st = rs != MXH_OK ? rs : any ? MXH_ERR_MPI : MXH_OK;
    /* the other slices from the ranks that hold them */
    for (int q = 0; q < x->n && x->me != root && st == MXH_OK; q++) {
        if (q == root || q == x->me)
            continue;
        bcast_slice(x, root, q, bytes, &lo, &hi);
        if (hi > lo &&
            (st = ops->copy_start((char *)buf + lo, x->buf[2 * q] + lo, hi - lo, &x->ev[k])) ==
                MXH_OK)
            k++;
    }
    mxh_status_t ws = wait_events(x, ops, x->ev, k);
    return finish(x, st != MXH_OK ? st : ws);
}

mxh_status_t mxh_ipc_reduce(mxh_ipc_t *x, const mxh_mem_ops_t *ops, const void *in, void *out,
                            size_t count, MPI_Datatype dt, size_t tsize, MPI_Op op, int root)
{
    size_t bytes = count * tsize, lo, hi;
    mxh_status_t st;

    if ((st = agree(x, ops, 1, in, bytes, x->me == root ? out : NULL, bytes, dt, op, -1)) !=
        MXH_OK)
        return st;
    slice(count, tsize, x->n, x->me, &lo, &hi);
    st = reduce_slice(x, ops, 0, x->buf[2 * root + 1] + lo * tsize, lo * tsize, hi - lo, dt, op);
    return finish(x, st);
}

/* ---- the node part of a multi-node allreduce -------------------------------------------------- */

/* Start @fn for every region, EV_BATCH at a time, and wait for them. */
typedef mxh_status_t (*region_fn)(mxh_ipc_t *x, const mxh_mem_ops_t *ops, void *arg,
                                  const mxh_ipc_region_t *r, int q, mxh_mem_event_t *ev);

static mxh_status_t each_region(mxh_ipc_t *x, const mxh_mem_ops_t *ops, region_fn fn, void *arg,
                                const mxh_ipc_region_t *r, int nreg, int q)
{
    mxh_status_t st = MXH_OK;
    int k = 0;

    for (int i = 0; i < nreg && st == MXH_OK; i++) {
        if (r[i].cnt == 0)
            continue;
        if ((st = fn(x, ops, arg, &r[i], q, &x->ev[k])) == MXH_OK && ++k == EV_BATCH) {
            st = wait_events(x, ops, x->ev, k);
            k  = 0;
        }
    }
    mxh_status_t ws = wait_events(x, ops, x->ev, k);
    return st != MXH_OK ? st : ws;
}

typedef struct region_arg {
    char        *local; /* fill: the destination; spread: the source */
    size_t       tsize;
    MPI_Datatype dt;
    MPI_Op       op;
    int          from;  /* fill: the rank copied from, -1: the reduction of all */
} region_arg_t;

static mxh_status_t region_fill(mxh_ipc_t *x, const mxh_mem_ops_t *ops, void *arg,
                                const mxh_ipc_region_t *r, int q, mxh_mem_event_t *ev)
{
    region_arg_t *ra = arg;
    (void)q;
    if (ra->from >= 0)
        return ops->copy_start(ra->local + r->out * ra->tsize,
                               x->buf[2 * ra->from] + r->in * ra->tsize, r->cnt * ra->tsize, ev);
    for (int p = 0; p < x->n; p++)
        x->src[p] = x->buf[2 * p] + r->in * ra->tsize;
    /* the kinds take the input list at the start (a launch's arguments) */
    return ops->reduce_start(ra->local + r->out * ra->tsize, x->src, x->n, r->cnt, ra->dt, ra->op,
                             ev);
}

static mxh_status_t region_spread(mxh_ipc_t *x, const mxh_mem_ops_t *ops, void *arg,
                                  const mxh_ipc_region_t *r, int q, mxh_mem_event_t *ev)
{
    region_arg_t *ra = arg;
    char *dst        = x->buf[2 * q + 1] + r->out * ra->tsize;
    const char *src  = ra->local + r->in * ra->tsize;
    if (dst == src) { /* already in place (my own output) */
        ev->pending = 0;
        return MXH_OK;
    }
    return ops->copy_start(dst, src, r->cnt * ra->tsize, ev);
}

mxh_status_t mxh_ipc_node_agree(mxh_ipc_t *x, const mxh_mem_ops_t *ops, int able, const void *in,
                                size_t in_bytes, void *out, size_t out_bytes, MPI_Datatype dt,
                                MPI_Op op, int *engaged)
{
    mxh_status_t st = agree(x, ops, able, in, in_bytes, out, out_bytes, dt, op, -1);
    *engaged        = st == MXH_OK;
    return st;
}

mxh_status_t mxh_ipc_node_fill(mxh_ipc_t *x, const mxh_mem_ops_t *ops, int from, void *dst,
                               const mxh_ipc_region_t *r, int nreg, MPI_Datatype dt, size_t tsize,
                               MPI_Op op)
{
    region_arg_t ra = {dst, tsize, dt, op, from};
    if (from >= x->n || (from >= 0 && x->buf[2 * from] == NULL))
        return MXH_ERR_INVALID_PARAM;
    return each_region(x, ops, region_fill, &ra, r, nreg, x->me);
}

mxh_status_t mxh_ipc_node_spread(mxh_ipc_t *x, const mxh_mem_ops_t *ops, int to, const void *src,
                                 const mxh_ipc_region_t *r, int nreg, size_t tsize,
                                 mxh_status_t st)
{
    region_arg_t ra = {(char *)(uintptr_t)src, tsize, MPI_DATATYPE_NULL, MPI_OP_NULL, -1};
    int any;
    mxh_status_t rs = round_max(x, st != MXH_OK, &any);

    if (st == MXH_OK)
        st = rs;
    /* a rank that failed before has its regions unwritten: the others still
     * spread theirs (nobody may hang) and every rank reports an error */
    for (int q = 0; q < x->n && st == MXH_OK; q++)
        if ((to < 0 || q == to) && x->buf[2 * q + 1] != NULL)
            st = each_region(x, ops, region_spread, &ra, r, nreg, q);
    if (st == MXH_OK && any)
        st = MXH_ERR_MPI;
    return finish(x, st);
}
