#include "coll/exec.h"
#include "util/log.h"

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

/* A step on a shared-memory level: run it through the segment (blocking).
 * Returns 0 when the step has no shared-memory form (the caller uses MPI). */
static int shm_step(const mxh_step_t *s, const mxh_exec_ctx_t *ctx, char *base,
                    mxh_status_t *st)
{
    mxh_shm_t *shm = ctx->shm ? ctx->shm[s->level] : NULL;
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
            memcpy(mine, tmp, mybytes);
        break;
    case MXH_STEP_REDUCE:
        if (s->me == s->root) {
            rc = MPI_Reduce(base, tmp, cnt, dt, ctx->op, s->root, comm);
            if (rc == MPI_SUCCESS)
                memcpy(base, tmp, s->count * ext);
        } else {
            rc = MPI_Reduce(base, NULL, cnt, dt, ctx->op, s->root, comm);
        }
        break;
    case MXH_STEP_ALLREDUCE:
        rc = MPI_Allreduce(base, tmp, cnt, dt, ctx->op, comm);
        if (rc == MPI_SUCCESS)
            memcpy(base, tmp, s->count * ext);
        break;
    case MXH_STEP_ALLGATHER:
        rc = MPI_Allgatherv(mine, s->counts[s->me], dt, tmp, s->counts, s->displs, dt, comm);
        if (rc == MPI_SUCCESS)
            memcpy(base, tmp, s->count * ext);
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
                memcpy(base, tmp, s->count * ext);
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
            memcpy(base + (size_t)s->displs[s->me] * ext, tmp, (size_t)s->counts[s->me] * ext);
        break;
    case MXH_STEP_REDUCE:
    case MXH_STEP_GATHER:
        if (s->me == s->root)
            memcpy(base, tmp, s->count * ext);
        break;
    case MXH_STEP_ALLREDUCE:
    case MXH_STEP_ALLGATHER:
        memcpy(base, tmp, s->count * ext);
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

typedef struct progress_arg {
    MPI_Request *reqs;
    int          n;
} progress_arg_t;

/* While a shared-memory step waits for its peers, keep the round's MPI steps
 * moving (MPICH progresses nonblocking collectives only inside MPI calls). */
static void progress_mpi(void *arg)
{
    progress_arg_t *p = (progress_arg_t *)arg;
    MPI_Status stats[2 * MXH_MAX_LEVELS]; /* (MPI_STATUSES_IGNORE trips gcc's bounds checks) */
    int flag;
    if (p->n > 0)
        MPI_Testall(p->n, p->reqs, &flag, stats);
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
        const mxh_step_t *started[MXH_MAX_LEVELS * 2];
        char *bases[MXH_MAX_LEVELS * 2];
        int nreq = 0, rc = MPI_SUCCESS;

        /* 1. start the round's MPI steps, in stage order (the same on every rank) */
        for (int s = 0; s < ns; s++) {
            int f = mxh_sched_frag_at(sched, r, s);
            if (f < 0)
                continue;
            const mxh_plan_t *p = mxh_sched_plan(sched, f);
            int i               = p->stage_step[s];
            if (i < 0 || p->steps[i].count == 0)
                continue;
            const mxh_step_t *step = &p->steps[i];
            if (ctx->shm && ctx->shm[step->level] && step->type != MXH_STEP_SCATTER &&
                step->type != MXH_STEP_GATHER && step->type != MXH_STEP_SEND &&
                step->type != MXH_STEP_RECV)
                continue; /* shared-memory step: below */
            char *base = (char *)work + (mxh_sched_frag_offset(sched, f) + step->offset) *
                                            ctx->extent;
            rc = start_step(step, ctx, base, (char *)tmp + (size_t)s * slot, &ctx->reqs[nreq]);
            if (rc != MPI_SUCCESS) {
                st = mpi_failed(rc, step);
                break;
            }
            started[nreq] = step;
            bases[nreq]   = base;
            nreq++;
        }
        /* 2. shared-memory steps, in stage order, progressing the MPI ones */
        progress_arg_t parg = {ctx->reqs, nreq};
        for (int s = 0; s < ns && st == MXH_OK; s++) {
            int f = mxh_sched_frag_at(sched, r, s);
            if (f < 0)
                continue;
            const mxh_plan_t *p = mxh_sched_plan(sched, f);
            int i               = p->stage_step[s];
            if (i < 0 || p->steps[i].count == 0)
                continue;
            const mxh_step_t *step = &p->steps[i];
            mxh_shm_t *shm         = ctx->shm ? ctx->shm[step->level] : NULL;
            if (shm == NULL)
                continue;
            char *base = (char *)work + (mxh_sched_frag_offset(sched, f) + step->offset) *
                                            ctx->extent;
            mxh_status_t sst = MXH_OK;
            mxh_shm_set_progress(shm, progress_mpi, &parg);
            int done = shm_step(step, ctx, base, &sst);
            mxh_shm_set_progress(shm, NULL, NULL);
            if (done && sst != MXH_OK)
                st = sst;
        }
        /* 3. one wait per round, then the copies out of the stage slots */
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
