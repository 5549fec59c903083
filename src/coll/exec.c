#include "coll/exec.h"
#include "coll/select.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "sim/sim.h"

#include <sched.h>
#include <string.h>

#define MXH_EXEC_TAG 7177

static mxh_status_t mpi_failed(int rc, const mxh_step_t *s)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    mxh_error("%s step on level %d failed: %s", mxh_step_type_name(s->type), s->level, msg);
    return MXH_ERR_MPI;
}

/* The segment a step runs through, or NULL (no segment at its level, or a
 * step without a shared-memory form: those go through MPI). */
static mxh_shm_t *shm_step_form(const mxh_step_t *s, const mxh_exec_ctx_t *ctx)
{
    mxh_shm_t *shm = ctx->shm ? ctx->shm[s->level] : NULL;
    size_t bytes   = s->count * ctx->extent;
    if (shm == NULL)
        return NULL;
    /* the data movers only where shared memory beats MPI (select.c) */
    switch (s->type) {
    case MXH_STEP_REDUCE_SCATTER:
        return bytes < mxh_select_shm_max(MXH_COLL_REDUCE_SCATTER_BLOCK) ? shm : NULL;
    case MXH_STEP_ALLGATHER:
        return bytes < mxh_select_shm_max(MXH_COLL_ALLGATHER) ? shm : NULL;
    case MXH_STEP_BCAST:
        return bytes < mxh_select_shm_max(MXH_COLL_BCAST) ? shm : NULL;
    case MXH_STEP_ALLREDUCE:
    case MXH_STEP_REDUCE:
        return shm;
    default:
        return NULL;
    }
}

/* A step on a shared-memory level: run it through the segment (blocking).
 * Returns 0 when the step has no shared-memory form (the caller uses MPI). */
static int shm_step(const mxh_step_t *s, const mxh_exec_ctx_t *ctx, char *base,
                    mxh_status_t *st)
{
    mxh_shm_t *shm = shm_step_form(s, ctx);
    size_t ext     = ctx->extent;

    if (shm == NULL)
        return 0;
    switch (s->type) {
    case MXH_STEP_REDUCE_SCATTER:
        *st = mxh_shm_reduce_scatter(shm, base, base + (size_t)s->displs[s->me] * ext, s->counts,
                                     s->displs, ctx->dt, ext, ctx->op);
        return 1;
    case MXH_STEP_ALLGATHER:
        *st = mxh_shm_allgather(shm, base + (size_t)s->displs[s->me] * ext, base, s->counts,
                                s->displs, ctx->dt, ext);
        return 1;
    case MXH_STEP_ALLREDUCE:
        *st = mxh_shm_allreduce(shm, base, base, s->count, ctx->dt, ext, ctx->op);
        return 1;
    case MXH_STEP_REDUCE:
        *st = mxh_shm_reduce(shm, base, s->me == s->root ? base : NULL, s->count, ctx->dt, ext,
                             ctx->op, s->root);
        return 1;
    case MXH_STEP_BCAST:
        *st = mxh_shm_bcast(shm, base, s->count, ext, s->root);
        return 1;
    default:
        return 0;
    }
}

/* Blocking MPI form of a step. MPI_IN_PLACE is avoided on purpose: MPICH 4.0.2
 * crashes in MPI_Reduce with MPI_IN_PLACE at a non-zero root and asserts in
 * in-place MPI_Reduce_scatter on large counts. Results go to @tmp and are
 * copied into place. */
static int mpi_step(const mxh_step_t *s, const mxh_exec_ctx_t *ctx, char *base, char *tmp)
{
    MPI_Comm comm   = ctx->comms[s->level];
    MPI_Datatype dt = ctx->dt;
    size_t ext      = ctx->extent;
    int cnt = (int)s->count, rc = MPI_SUCCESS;
    char *mine      = s->counts ? base + (size_t)s->displs[s->me] * ext : NULL;
    size_t mybytes  = s->counts ? (size_t)s->counts[s->me] * ext : 0;

    switch (s->type) {
    case MXH_STEP_REDUCE_SCATTER:
        rc = MPI_Reduce_scatter(base, tmp, s->counts, dt, ctx->op, comm);
        if (rc == MPI_SUCCESS && mybytes)
            mxh_copy(mine, tmp, mybytes);
        break;
    case MXH_STEP_REDUCE:
        if (s->me == s->root) {
            rc = MPI_Reduce(base, tmp, cnt, dt, ctx->op, s->root, comm);
            if (rc == MPI_SUCCESS)
                mxh_copy(base, tmp, s->count * ext);
        } else {
            rc = MPI_Reduce(base, NULL, cnt, dt, ctx->op, s->root, comm);
        }
        break;
    case MXH_STEP_ALLREDUCE:
        rc = MPI_Allreduce(base, tmp, cnt, dt, ctx->op, comm);
        if (rc == MPI_SUCCESS)
            mxh_copy(base, tmp, s->count * ext);
        break;
    case MXH_STEP_ALLGATHER:
        rc = MPI_Allgatherv(mine, s->counts[s->me], dt, tmp, s->counts, s->displs, dt, comm);
        if (rc == MPI_SUCCESS)
            mxh_copy(base, tmp, s->count * ext);
        break;
    case MXH_STEP_BCAST:
        rc = MPI_Bcast(base, cnt, dt, s->root, comm);
        break;
    case MXH_STEP_SCATTER:
        /* the root's own part is already in place: it receives into tmp */
        if (s->me == s->root)
            rc = MPI_Scatterv(base, s->counts, s->displs, dt, tmp, s->counts[s->me], dt, s->root,
                              comm);
        else
            rc = MPI_Scatterv(NULL, NULL, NULL, dt, mine, s->counts[s->me], dt, s->root, comm);
        break;
    case MXH_STEP_GATHER:
        if (s->me == s->root) {
            rc = MPI_Gatherv(mine, s->counts[s->me], dt, tmp, s->counts, s->displs, dt, s->root,
                             comm);
            if (rc == MPI_SUCCESS)
                mxh_copy(base, tmp, s->count * ext);
        } else {
            rc = MPI_Gatherv(mine, s->counts[s->me], dt, NULL, NULL, NULL, dt, s->root, comm);
        }
        break;
    case MXH_STEP_SEND:
        rc = MPI_Send(base, cnt, dt, s->root, MXH_EXEC_TAG, comm);
        break;
    case MXH_STEP_RECV:
        rc = MPI_Recv(base, cnt, dt, s->root, MXH_EXEC_TAG, comm, MPI_STATUS_IGNORE);
        break;
    }
    return rc;
}

/* Nonblocking MPI form; the copy out of @tmp happens in finish_step. */
static int start_step(const mxh_step_t *s, const mxh_exec_ctx_t *ctx, char *base, char *tmp,
                      MPI_Request *req)
{
    MPI_Comm comm   = ctx->comms[s->level];
    MPI_Datatype dt = ctx->dt;
    int cnt         = (int)s->count;
    char *mine      = s->counts ? base + (size_t)s->displs[s->me] * ctx->extent : NULL;

    switch (s->type) {
    case MXH_STEP_REDUCE_SCATTER:
        return MPI_Ireduce_scatter(base, tmp, s->counts, dt, ctx->op, comm, req);
    case MXH_STEP_REDUCE:
        return MPI_Ireduce(base, s->me == s->root ? tmp : NULL, cnt, dt, ctx->op, s->root, comm,
                           req);
    case MXH_STEP_ALLREDUCE:
        return MPI_Iallreduce(base, tmp, cnt, dt, ctx->op, comm, req);
    case MXH_STEP_ALLGATHER:
        return MPI_Iallgatherv(mine, s->counts[s->me], dt, tmp, s->counts, s->displs, dt, comm,
                               req);
    case MXH_STEP_BCAST:
        return MPI_Ibcast(base, cnt, dt, s->root, comm, req);
    case MXH_STEP_SCATTER:
        if (s->me == s->root)
            return MPI_Iscatterv(base, s->counts, s->displs, dt, tmp, s->counts[s->me], dt,
                                 s->root, comm, req);
        return MPI_Iscatterv(NULL, NULL, NULL, dt, mine, s->counts[s->me], dt, s->root, comm,
                             req);
    case MXH_STEP_GATHER:
        if (s->me == s->root)
            return MPI_Igatherv(mine, s->counts[s->me], dt, tmp, s->counts, s->displs, dt,
                                s->root, comm, req);
        return MPI_Igatherv(mine, s->counts[s->me], dt, NULL, NULL, NULL, dt, s->root, comm,
                            req);
    case MXH_STEP_SEND:
        return MPI_Isend(base, cnt, dt, s->root, MXH_EXEC_TAG, comm, req);
    case MXH_STEP_RECV:
        return MPI_Irecv(base, cnt, dt, s->root, MXH_EXEC_TAG, comm, req);
    }
    return MPI_ERR_INTERN;
}

static void finish_step(const mxh_step_t *s, const mxh_exec_ctx_t *ctx, char *base,
                        const char *tmp)
{
    size_t ext = ctx->extent;
    switch (s->type) {
    case MXH_STEP_REDUCE_SCATTER:
        if (s->counts[s->me])
            mxh_copy(base + (size_t)s->displs[s->me] * ext, tmp, (size_t)s->counts[s->me] * ext);
        break;
    case MXH_STEP_REDUCE:
    case MXH_STEP_GATHER:
        if (s->me == s->root)
            mxh_copy(base, tmp, s->count * ext);
        break;
    case MXH_STEP_ALLREDUCE:
    case MXH_STEP_ALLGATHER:
        mxh_copy(base, tmp, s->count * ext);
        break;
    default:
        break;
    }
}

mxh_status_t mxh_exec_plan(const mxh_plan_t *plan, const mxh_exec_ctx_t *ctx, void *work,
                           void *tmp)
{
    for (int i = 0; i < plan->nsteps; i++) {
        const mxh_step_t *s = &plan->steps[i];
        char *base          = (char *)work + s->offset * ctx->extent;
        mxh_status_t st     = MXH_OK;

        /* every member of a group sees the same region: empty steps are skipped by all */
        if (s->count == 0)
            continue;
        if (shm_step(s, ctx, base, &st)) {
            if (st != MXH_OK)
                return st;
            continue;
        }
        int rc = mpi_step(s, ctx, base, tmp);
        if (rc != MPI_SUCCESS)
            return mpi_failed(rc, s);
    }
    return MXH_OK;
}

/* ---- rings: reduce-scatter / allgather / allreduce steps of pipelined
 * schedules as point-to-point rings, advanced by the executor itself. A ring
 * moves (p-1)/p of the region each way (bandwidth-optimal), and its substeps
 * interleave with the other stages' work instead of waiting for a nonblocking
 * collective whose algorithm we do not control. Each block is reduced along
 * one chain, then passed on unchanged: every rank ends with the same bits. */

#define MXH_RING_TAG 7300 /* + stage: rings of different stages never mix */

typedef struct ring {
    const mxh_step_t *s;
    char             *base; /* the step's region */
    char             *tmp;  /* receive buffer of the reduce-scatter phase */
    int               k;    /* substep: [0, p-1) reduce-scatter, then allgather */
    int               nrs;  /* reduce-scatter substeps (0 for allgather) */
    int               nsub; /* all substeps */
    int               active;
    MPI_Request       req[2];
} ring_t;

/* Part x of the step's region: its parts, or an even split for allreduce. */
static void ring_part(const mxh_step_t *s, int x, size_t *off, size_t *cnt)
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

static int ring_post(ring_t *r, const mxh_exec_ctx_t *ctx)
{
    const mxh_step_t *s = r->s;
    int p = s->gsize, me = s->me, right = (me + 1) % p, left = (me + p - 1) % p;
    int tag = MXH_RING_TAG + s->stage, sb, rb;
    size_t soff, scnt, roff, rcnt, ext = ctx->extent;
    MPI_Comm comm = ctx->comms[s->level];

    if (r->k < r->nrs) { /* reduce-scatter: pass on the partial sum of block me-1-k */
        sb = (me - 1 - r->k + 2 * p) % p;
        rb = (me - 2 - r->k + 2 * p) % p;
    } else {             /* allgather: pass on the finished block me-k */
        int k = r->k - r->nrs;
        sb = (me - k + p) % p;
        rb = (me - k - 1 + p) % p;
    }
    ring_part(s, sb, &soff, &scnt);
    ring_part(s, rb, &roff, &rcnt);
    int rc = MPI_Irecv(r->k < r->nrs ? r->tmp : r->base + roff * ext, (int)rcnt, ctx->dt, left,
                       tag, comm, &r->req[0]);
    if (rc == MPI_SUCCESS)
        rc = MPI_Isend(r->base + soff * ext, (int)scnt, ctx->dt, right, tag, comm, &r->req[1]);
    return rc;
}

static int ring_start(ring_t *r, const mxh_step_t *s, char *base, char *tmp,
                      const mxh_exec_ctx_t *ctx)
{
    int p    = s->gsize;
    r->s     = s;
    r->base  = base;
    r->tmp   = tmp;
    r->k     = 0;
    r->nrs   = s->type == MXH_STEP_ALLGATHER ? 0 : p - 1;
    r->nsub  = r->nrs + (s->type == MXH_STEP_REDUCE_SCATTER ? 0 : p - 1);
    r->active = r->nsub > 0;
    return r->active ? ring_post(r, ctx) : MPI_SUCCESS;
}

/* Test the current substep; when it is done, reduce and post the next one.
 * Returns an MPI error code; *moved says whether a substep completed. */
static int ring_advance(ring_t *r, const mxh_exec_ctx_t *ctx, int *moved)
{
    MPI_Status stats[2];
    int flag = 0, rc;

    if (!r->active)
        return MPI_SUCCESS;
    rc = MPI_Testall(2, r->req, &flag, stats);
    if (rc != MPI_SUCCESS || !flag)
        return rc;
    *moved = 1;
    if (r->k < r->nrs) {
        const mxh_step_t *s = r->s;
        size_t off, cnt;
        ring_part(s, (s->me - 2 - r->k + 2 * s->gsize) % s->gsize, &off, &cnt);
        if (cnt && mxh_reduce_local(r->tmp, r->base + off * ctx->extent, cnt, ctx->dt,
                                    ctx->op) != MXH_OK)
            return MPI_ERR_OP;
    }
    if (++r->k == r->nsub) {
        r->active = 0;
        return MPI_SUCCESS;
    }
    return ring_post(r, ctx);
}

static int ring_step(const mxh_step_t *s)
{
    return (s->type == MXH_STEP_REDUCE_SCATTER || s->type == MXH_STEP_ALLGATHER ||
            s->type == MXH_STEP_ALLREDUCE) &&
           s->gsize > 1;
}

typedef struct progress_arg {
    const mxh_exec_ctx_t *ctx;
    MPI_Request          *reqs;  /* nonblocking collectives of the round */
    int                   n;
    ring_t               *rings;
    int                   nrings;
    int                   rc;    /* first error */
} progress_arg_t;

/* One pass: progress the round's nonblocking collectives and rings. Returns
 * the number of rings still running. */
static int progress_round(progress_arg_t *p)
{
    MPI_Status stats[2 * MXH_MAX_LEVELS]; /* (MPI_STATUSES_IGNORE trips gcc's bounds checks) */
    int flag, running = 0, moved = 0;

    if (p->n > 0)
        MPI_Testall(p->n, p->reqs, &flag, stats);
    for (int i = 0; i < p->nrings; i++) {
        int rc = ring_advance(&p->rings[i], p->ctx, &moved);
        if (rc != MPI_SUCCESS && p->rc == MPI_SUCCESS) {
            p->rc = rc;
            p->rings[i].active = 0;
        }
        running += p->rings[i].active;
    }
    return running;
}

/* While a shared-memory step waits for its peers, keep the round's MPI work
 * moving (MPICH progresses nonblocking operations only inside MPI calls). */
static void progress_mpi(void *arg)
{
    progress_round((progress_arg_t *)arg);
}

mxh_status_t mxh_exec_sched(const mxh_sched_t *sched, const mxh_exec_ctx_t *ctx, void *work,
                            void *tmp)
{
    const int ns = sched->nstages;
    size_t slot  = sched->tmp_slot * ctx->extent;
    mxh_status_t st = MXH_OK;

    if (sched->nfrag == 1)
        return mxh_exec_plan(sched->plan, ctx, work, tmp);

    for (int r = 0; r < sched->nrounds && st == MXH_OK; r++) {
        const mxh_step_t *started[2 * MXH_MAX_LEVELS], *steps[2 * MXH_MAX_LEVELS];
        char *bases[2 * MXH_MAX_LEVELS], *sbase[2 * MXH_MAX_LEVELS];
        ring_t rings[2 * MXH_MAX_LEVELS];
        int nreq = 0, nring = 0, nsteps = 0, rc = MPI_SUCCESS;

        /* the round's steps, in stage order (the same on every rank) */
        for (int s = 0; s < ns; s++) {
            int f = mxh_sched_frag_at(sched, r, s);
            if (f < 0)
                continue;
            const mxh_plan_t *p = mxh_sched_plan(sched, f);
            int i               = p->stage_step[s];
            if (i < 0 || p->steps[i].count == 0)
                continue;
            steps[nsteps] = &p->steps[i];
            sbase[nsteps] = (char *)work + (mxh_sched_frag_offset(sched, f) + p->steps[i].offset) *
                                               ctx->extent;
            nsteps++;
        }
        /* 1. start the MPI steps: rings and nonblocking collectives */
        for (int k = 0; k < nsteps && st == MXH_OK; k++) {
            const mxh_step_t *step = steps[k];
            char *stmp             = (char *)tmp + (size_t)step->stage * slot;
            if (shm_step_form(step, ctx))
                continue; /* shared-memory step: below */
            if (ring_step(step)) {
                rc = ring_start(&rings[nring++], step, sbase[k], stmp, ctx);
            } else {
                rc = start_step(step, ctx, sbase[k], stmp, &ctx->reqs[nreq]);
                if (rc == MPI_SUCCESS) {
                    started[nreq] = step;
                    bases[nreq]   = sbase[k];
                    nreq++;
                }
            }
            if (rc != MPI_SUCCESS)
                st = mpi_failed(rc, step);
        }
        /* 2. shared-memory steps, in stage order, progressing the MPI ones */
        progress_arg_t parg = {ctx, ctx->reqs, nreq, rings, nring, MPI_SUCCESS};
        for (int k = 0; k < nsteps && st == MXH_OK; k++) {
            const mxh_step_t *step = steps[k];
            mxh_shm_t *shm         = shm_step_form(step, ctx);
            mxh_status_t sst       = MXH_OK;
            if (shm == NULL)
                continue;
            mxh_shm_set_progress(shm, progress_mpi, &parg);
            shm_step(step, ctx, sbase[k], &sst);
            mxh_shm_set_progress(shm, NULL, NULL);
            if (sst != MXH_OK)
                st = sst;
        }
        /* 3. drive the rings to the end, then one wait for the collectives */
        for (int spins = 0; progress_round(&parg) > 0;)
            if (++spins % 64 == 0)
                sched_yield(); /* oversubscribed ranks: let the peer run */
        if (parg.rc != MPI_SUCCESS && st == MXH_OK)
            st = mpi_failed(parg.rc, rings[0].s);
        if (nreq > 0) {
            MPI_Status stats[2 * MXH_MAX_LEVELS];
            rc = MPI_Waitall(nreq, ctx->reqs, stats);
            if (rc != MPI_SUCCESS && st == MXH_OK)
                st = mpi_failed(rc, started[0]);
        }
        for (int k = 0; k < nreq && st == MXH_OK; k++)
            finish_step(started[k], ctx, bases[k],
                        (char *)tmp + (size_t)started[k]->stage * slot);
    }
    return st;
}
