#include "config.h"

#include "coll/exec.h"
#include "coll/cost.h"
#include "util/clock.h"
#include "coll/p2p.h"
#include "coll/select.h"
#include "coll/task.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "sim/sim.h"

#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
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
    /* spread plans reduce in class order (plan.h ports), the segment in member order */
    if (shm == NULL || s->ports)
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
        rc = mxh_send(base, cnt, dt, s->root, MXH_EXEC_TAG, comm);
        break;
    case MXH_STEP_RECV:
        rc = MPI_Recv(base, cnt, dt, s->root, MXH_EXEC_TAG, comm, MPI_STATUS_IGNORE);
        break;
    case MXH_STEP_SPREAD: /* point to point only (mxh_p2p_usable) */
        rc = MPI_ERR_INTERN;
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
        return mxh_isend(base, cnt, dt, s->root, MXH_EXEC_TAG, comm, req);
    case MXH_STEP_RECV:
        return MPI_Irecv(base, cnt, dt, s->root, MXH_EXEC_TAG, comm, req);
    case MXH_STEP_SPREAD: /* point to point only (mxh_p2p_usable) */
        break;
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

/* Tags of the executor's point-to-point steps: one per stage (rounds) or per
 * fragment slot and stage (stream), so steps in flight at the same time never
 * match each other's messages. */
#define MXH_P2P_TAG 7300

static mxh_p2p_env_t p2p_env(const mxh_step_t *s, const mxh_exec_ctx_t *ctx)
{
    mxh_p2p_env_t e = {s->type == MXH_STEP_SPREAD ? ctx->spread_comm : ctx->comms[s->level],
                       ctx->dt, ctx->extent, ctx->op};
    return e;
}

/* Elements of temporary space one step needs (MPI form: the whole region). */
static size_t step_tmp(const mxh_step_t *s, size_t ext)
{
    size_t p2p = mxh_p2p_tmp_count(s, ext);
    return p2p > s->count ? p2p : s->count;
}

static size_t plan_tmp(const mxh_plan_t *p, size_t ext)
{
    size_t m = 1;
    for (int i = 0; i < p->nsteps; i++) {
        size_t t = step_tmp(&p->steps[i], ext);
        m        = t > m ? t : m;
    }
    return m;
}

/* The step of @plan that can take its input from ctx->src instead of the work
 * buffer: the first non-empty one, when it is a point-to-point reduce-scatter or
 * allreduce over the whole region; -1 if none (the input is copied in). */
static int src_step(const mxh_plan_t *plan, const mxh_exec_ctx_t *ctx)
{
    if (ctx->src == NULL)
        return -1;
    for (int i = 0; i < plan->nsteps; i++) {
        const mxh_step_t *s = &plan->steps[i];
        if (s->count == 0)
            continue;
        if ((s->type == MXH_STEP_REDUCE_SCATTER || s->type == MXH_STEP_ALLREDUCE) &&
            mxh_p2p_usable(s, ctx->extent) && shm_step_form(s, ctx) == NULL && s->offset == 0 &&
            s->count == plan->work_count)
            return i;
        return -1;
    }
    return -1;
}

/* A step the point-to-point algorithms can run whatever its size: the size
 * threshold of mxh_p2p_usable (small bcast/reduce steps go to MPI's trees)
 * depends on the region a rank holds, which differs between ranks (a rank
 * whose part of a small fragment is empty skips the step), and the choice of
 * the stream executor must be the same on every rank: the rounds and the
 * stream executors do not speak the same protocol. */
static int p2p_structural(const mxh_step_t *s, size_t ext)
{
    if (s->type == MXH_STEP_BCAST || s->type == MXH_STEP_REDUCE)
        return s->gsize > 1;
    return mxh_p2p_usable(s, ext);
}

/* Whether step @s would run through shared memory on a rank that has a
 * segment at its level: shm_step_form's rule with the agreed view of the
 * levels (ctx->shm_levels) in place of this rank's own segments, which a rank
 * alone in its group does not have. */
static int shm_form_agreed(const mxh_step_t *s, const mxh_exec_ctx_t *ctx)
{
    size_t bytes = s->count * ctx->extent;
    if (!(ctx->shm_levels & (1u << s->level)) || s->ports)
        return 0;
    switch (s->type) {
    case MXH_STEP_REDUCE_SCATTER:
        return bytes < mxh_select_shm_max(MXH_COLL_REDUCE_SCATTER_BLOCK);
    case MXH_STEP_ALLGATHER:
        return bytes < mxh_select_shm_max(MXH_COLL_ALLGATHER);
    case MXH_STEP_BCAST:
        return bytes < mxh_select_shm_max(MXH_COLL_BCAST);
    case MXH_STEP_ALLREDUCE:
    case MXH_STEP_REDUCE:
        return 1;
    default:
        return 0;
    }
}

/* Stream execution: every step of the schedule runs point to point (no shared
 * memory, no MPI collective), so fragments need no common order. The answer
 * must be the same on every rank (the two executors do not speak the same
 * protocol): it rests on the steps' types, groups and regions and on the agreed
 * view of the shared-memory levels; steps of a group of one rank move nothing
 * and the stream skips them. */
static int stream_able(const mxh_sched_t *sched, const mxh_exec_ctx_t *ctx)
{
    if (sched->nfrag < 2)
        return 0;
    for (int k = 0; k < sched->nplans; k++)
        for (int i = 0; i < sched->plans[k]->nsteps; i++) {
            const mxh_step_t *s = &sched->plans[k]->steps[i];
            if (s->count == 0)
                continue;
            if (shm_form_agreed(s, ctx) || shm_step_form(s, ctx) != NULL)
                return 0;
            if (s->gsize > 1 && !p2p_structural(s, ctx->extent))
                return 0;
        }
    return 1;
}

/* A step whose region is at most 1/MXH_STREAM_LIGHT of the stream's largest is light
 * (MXH_STREAM_STAGE_CAP says what that changes) */
#define MXH_STREAM_LIGHT 32

/* The largest region (elements) of a step of @sched's stages */
static size_t stream_most(const mxh_sched_t *sched)
{
    const mxh_plan_t *p = sched->plan;
    size_t most         = 0;
    for (int st = 0; st < sched->nstages; st++)
        if (p->stage_step[st] >= 0 && p->steps[p->stage_step[st]].count > most)
            most = p->steps[p->stage_step[st]].count;
    return most;
}

/* The rootless steps of the through shape (plan.h MXH_PLAN_THROUGH) that hold more
 * fragments than the others (MXH_STREAM_STAGE_CAP_REDUCE, _BCAST_NET) */
static int reduce_rootless(const mxh_step_t *s)
{
    return s->rootless && s->type == MXH_STEP_REDUCE && s->gsize > 1;
}

static int reduce_cap(const mxh_step_t *s, const mxh_exec_ctx_t *ctx);
static int latency_extra(const mxh_step_t *s, const mxh_exec_ctx_t *ctx);

static int bcast_rootless(const mxh_step_t *s)
{
    return s->rootless && s->type == MXH_STEP_BCAST;
}

static int bcast_rootless_net(const mxh_step_t *s)
{
    return s->rootless && s->type == MXH_STEP_BCAST && s->net && s->gsize > 1;
}

/* Fragments in flight in a stream: MPIX_HIER_PIPELINE_DEPTH, or enough to keep
 * every stage that has a step busy with more fragments waiting on latency:
 * stages + 2, and 2 x stages - 2 for deep schedules, whose stages share links
 * (rail reduce-scatter and allgather the NIC, node ones NVLink) so that a
 * fragment spends longer in flight. Only stages with a step of this rank count:
 * a reduce_scatter or allgather of 3 levels has 3 of the plan's 5 (a window of 8
 * there had the copy-in of 8 fragments hold up the first node exchange by 46 us).
 * Measured (SimGrid, 256 MiB, RESULTS.md section 5): 32 x 8 GPUs, 3-level
 * reduce_scatter: window 4 832 us, 5 778, 6 779, 8 801; allreduce, 5 stages:
 * window 6 1576 us, 7 1516, 8 1517, 10 1525. */
static int stream_window(const mxh_sched_t *sched, const mxh_exec_ctx_t *ctx)
{
    int n = 0, r = 0, z = 0, b = 0, w;
    size_t most = stream_most(sched);
    for (int st = 0; st < sched->nstages; st++) {
        int i = sched->plan->stage_step[st];
        n += i >= 0;
        b += i >= 0 && bcast_rootless_net(&sched->plan->steps[i]) &&
                     sched->plan->steps[i].count * MXH_STREAM_LIGHT > most
                 ? latency_extra(&sched->plan->steps[i], ctx)
                 : 0;
        r += i >= 0 && reduce_rootless(&sched->plan->steps[i])
                 ? reduce_cap(&sched->plan->steps[i], ctx) - 2
                 : 0;
        z += i >= 0 && bcast_rootless(&sched->plan->steps[i]);
    }
    w = n + 2;
    /* A rootless reduce step holds up to reduce_cap fragments (four, more where
     * latency is long), each for two exchanges: that many less two more fragments in
     * flight per such stage keep the stages before it fed. Measured (SimGrid, reduce
     * 256 MiB, 32 x 8 GPUs in 4 leaf groups, with four per stage, RESULTS.md section
     * 5, "Four fragments per rootless reduce stage"): a
     * window of 6, 8, 10, 12 on every rank 1325.77, 1111.29, 1066.65, 1048.74 us,
     * this rule 1059.47; under SimGrid's default network model 1933.32, 1722.28,
     * 1457.97, 1502.05, this rule 1429.33. */
    if (n + 2 + r > w)
        w = n + 2 + r;
    /* Paced, a heavy stage takes three fragments (MXH_STREAM_STAGE_CAP_PACED); with
     * stages on both of its sides (allreduce: node reduce-scatter, rail, node
     * allgather) it fills only if one more fragment is in flight. Measured
     * (SimGrid default model, 128 GPUs, allreduce 256 MiB, RESULTS.md section 5):
     * window 5 1648.40 us, 6 1563.05; link-exact 1332.37 and 1334.53. */
    if (ctx->pace != NULL && n >= 3)
        w = n + 3;
    /* A bcast whose staggered steps post ahead (stream_stagger; the through shape:
     * rootless steps) fills as a paced stream does (above): three fragments on
     * the root's node's step and on the network's, and with stages on both sides of
     * those, one more fragment in flight. Measured (SimGrid, bcast 256 MiB, 4 MiB
     * fragments, RESULTS.md section 5, "The staggered scatter posted ahead"): 128 x
     * 8 GPUs in 4 leaf groups, windows 5 / 6 on every rank 869.67 / 822.68 us; 32 x
     * 8 in 4 leaf groups 953.93 / 881.32; 16 x 8 (two stages) 4 / 5: 782.08 /
     * 792.40. */
    if (ctx->times != NULL && z > 0 && n >= 3 && n + 3 > w)
        w = n + 3;
    /* A rootless bcast step on the network holds a fragment for two exchanges (the
     * root's scatter, the others' allgather), each behind a latency: where the
     * latencies are long against the region's bytes, floor(2 x latency / bytes time)
     * more fragments in flight keep its links busy (latency_extra; not for a light
     * step, below, such as the spine's at 1024 GPUs: its bytes hold nothing). Simulated
     * (SimGrid's default network model, bcast 256 MiB in 16 MiB fragments, 16 x 8
     * GPUs, RESULTS.md section 5, "Rootless reduce stages as deep as their
     * latency"): the other nodes' ranks (two stages) with a window of 4 1131.88 us,
     * 5 (this rule) 1103.88. */
    if (ctx->times != NULL && n + 2 + b > w)
        w = n + 2 + b;
    if (2 * n - 2 > w)
        w = 2 * n - 2;
    if (sched->depth > 0)
        w = sched->depth;
    return w < sched->nfrag ? w : sched->nfrag;
}

static size_t sched_slot(const mxh_sched_t *sched, size_t ext)
{
    size_t slot = 0;
    for (int k = 0; k < sched->nplans; k++)
        if (plan_tmp(sched->plans[k], ext) > slot)
            slot = plan_tmp(sched->plans[k], ext);
    return slot;
}

size_t mxh_exec_tmp_count(const mxh_sched_t *sched, const mxh_exec_ctx_t *ctx)
{
    size_t slot = sched_slot(sched, ctx->extent);
    if (sched->nfrag == 1)
        return slot;
    if (stream_able(sched, ctx))
        return slot * (size_t)stream_window(sched, ctx);
    return slot * (size_t)sched->nstages;
}

/* A step that started at @t0 ends now (metrics). */
static inline void lvl_add(const mxh_exec_ctx_t *ctx, const mxh_step_t *s, uint64_t t0)
{
    if (ctx->lvl != NULL) {
        ctx->lvl->ticks[s->level] += mxh_ticks() - t0;
        ctx->lvl->steps[s->level]++;
    }
}

/* Run @plan; step @src_i (or none: -1) reads its input from @src. */
static mxh_status_t run_plan(const mxh_plan_t *plan, const mxh_exec_ctx_t *ctx, void *work,
                             void *tmp, const char *src, int src_i)
{
    for (int i = 0; i < plan->nsteps; i++) {
        const mxh_step_t *s = &plan->steps[i];
        char *base          = (char *)work + s->offset * ctx->extent;
        mxh_status_t st     = MXH_OK;
        int rc;

        /* every member of a group sees the same region: empty steps are skipped by all */
        if (mxh_exec_step_void(ctx, s))
            continue;
        uint64_t t0 = ctx->lvl ? mxh_ticks() : 0;
        if (shm_step(s, ctx, base, &st)) {
            lvl_add(ctx, s, t0);
            if (st != MXH_OK)
                return st;
            continue;
        }
        if (mxh_p2p_usable(s, ctx->extent)) {
            mxh_p2p_env_t env = p2p_env(s, ctx);
            rc = mxh_p2p_run(s, &env, base, i == src_i ? src + s->offset * ctx->extent : NULL,
                             tmp, MXH_P2P_TAG + s->stage);
        } else if (mxh_task_in_fiber()) {
            /* a task never blocks in MPI: the nonblocking form and a yielding wait */
            MPI_Request r = MPI_REQUEST_NULL;
            rc = start_step(s, ctx, base, tmp, &r);
            if (rc == MPI_SUCCESS)
                rc = mxh_task_wait(&r, MPI_STATUS_IGNORE);
            if (rc == MPI_SUCCESS)
                finish_step(s, ctx, base, tmp);
        } else {
            rc = mpi_step(s, ctx, base, tmp);
        }
        lvl_add(ctx, s, t0);
        if (rc != MPI_SUCCESS)
            return mpi_failed(rc, s);
    }
    return MXH_OK;
}

mxh_status_t mxh_exec_plan(const mxh_plan_t *plan, const mxh_exec_ctx_t *ctx, void *work,
                           void *tmp)
{
    return run_plan(plan, ctx, work, tmp, NULL, -1);
}

typedef struct progress_arg {
    const mxh_exec_ctx_t *ctx;
    MPI_Request          *reqs;  /* nonblocking collectives of the round */
    int                   n;
    mxh_p2p_op_t         *ops;   /* point-to-point steps of the round */
    int                   nops;
    int                   rc;    /* first error */
    const mxh_step_t     *failed;
    int                   moved; /* the last pass completed an exchange */
} progress_arg_t;

/* One pass: progress the round's nonblocking collectives and point-to-point
 * steps. Returns the number of point-to-point steps still running. */
static int progress_round(progress_arg_t *p)
{
    MPI_Status stats[2 * MXH_MAX_LEVELS]; /* (MPI_STATUSES_IGNORE trips gcc's bounds checks) */
    int running = 0, moved = 0;

    if (p->n > 0)
        mxh_progress(p->n, p->reqs, stats);
    for (int i = 0; i < p->nops; i++) {
        int rc = mxh_p2p_advance(&p->ops[i], &moved);
        if (rc != MPI_SUCCESS && p->rc == MPI_SUCCESS) {
            p->rc          = rc;
            p->failed      = p->ops[i].s;
            p->ops[i].active = 0;
        }
        running += p->ops[i].active;
    }
    p->moved = moved;
    return running;
}

/* While a shared-memory step waits for its peers, keep the round's MPI work
 * moving (MPICH progresses nonblocking operations only inside MPI calls). */
static void progress_mpi(void *arg)
{
    progress_round((progress_arg_t *)arg);
}

/* ---- stream: fragments advance independently through their stages ----------------- */

/* Where a fragment of the stream is */
enum {
    FRAG_STEPS, /* in its stages */
    FRAG_IN,    /* copying in (frag_in), before its first stage */
    FRAG_OUT,   /* copying out (frag_out), after its last stage */
    FRAG_DONE   /* its window slot can be reused once the older ones are done */
};

typedef struct frag_state {
    int          io;      /* FRAG_* */
    size_t       io_off;  /* bytes of the copy in or out done */
    int          stage;   /* current stage, nstages when done */
    int          started; /* the stage's step is running (op) */
    int          src_i;   /* step that reads ctx->src (-1: none, or started) */
    uint64_t     t0;      /* when the running step started (metrics) */
    double       due;     /* a staggered step posting ahead: when its scatter is due
                             to end (MPI_Wtime), else 0 (stream_stagger) */
    mxh_p2p_op_t op;
} frag_state_t;

/* Bytes of a fragment's copy in or out between two polls of the transfers: an
 * eighth of the fragment size (1 MiB of the default 8 MiB), at least 64. A copy
 * holds the rank: completions it does not see meanwhile delay this rank's next
 * exchanges, and with them its peers'. Measured (SimGrid, 128 GPUs, allgather
 * 256 MiB, RESULTS.md section 5): unpacking 16 MiB fragments in one go 828.65
 * us, by 1 MiB pieces 736.10 (the bound is 655.36). */
static size_t io_piece(const mxh_sched_t *sched)
{
    return sched->frag_bytes / 8 > 64 ? sched->frag_bytes / 8 : 64;
}

/* Fragments working on one stage at a time. Two: one fragment's transfer keeps
 * the stage's links busy while the other waits on latency or its reduction; more
 * would share the links and finish the stage together, and the levels would take
 * turns instead of overlapping (cap 1 measured 793 -> 1121 us, simulated 128-GPU
 * reduce_scatter 256 MiB, RESULTS.md section 5).
 * A light stage, whose step's region is at most 1/MXH_STREAM_LIGHT of the
 * largest step's (the spine level: a rank's share of its rail's), has no cap:
 * its few small messages share the NIC with the rail stage's many, get a sliver
 * of it and finish when the rail exchange does; capped, it released its
 * fragments in pairs, which then ran the rail stage in step and left the NIC
 * idle on both latencies (simulated 256-GPU allgather 256 MiB 785.71 -> 750.69
 * us). */
#define MXH_STREAM_STAGE_CAP 2
/* Paced (MPIX_HIER_PIPELINE_PACE), a third fragment on a stage: pacing keeps it
 * off the link until the bytes booked before it have crossed, so it does not
 * share; it only lets its exchange be posted a latency ahead while two others
 * hold the stage (two fragments leave the link idle for latency - bytes per
 * exchange when a latency is longer than a fragment's bytes: SimGrid's default
 * model, 23.3 against 22.9 us per rail exchange of 8 MiB fragments, RESULTS.md
 * section 5). Unpaced the cap stays 2: a third fragment shares the link there
 * (reduce_scatter_block 256 MiB, default model: 1029.31 us against 938.14 with 2,
 * same section). */
#define MXH_STREAM_STAGE_CAP_PACED 3
/* A rootless reduce step (p2p.c: a reduce-scatter among the p - 1 others, then
 * their gather to the root) keeps a fragment for two exchanges that load
 * different links: the others' incoming ones, then the root's. With two fragments
 * per stage, two reduce-scatter together and then gather together, so each side's
 * links idle half the time: 40 us per 8 MiB fragment where the NIC's bytes take
 * 24.6 (rails of 32 x 8 GPUs in 4 leaf groups); the root's cap also held the next
 * reduce-scatter until a gather had crossed (28 us per fragment at 16 x 8, bytes
 * 22.7). Four fragments keep both sides busy. The bcast's stagger (below) applied
 * to the reduce did as well on exact links and much worse where latency is long
 * (SimGrid's default model: a latency per fragment exposed). Simulated, reduce
 * 256 MiB, RESULTS.md section 5, "Four fragments per rootless reduce stage". */
#define MXH_STREAM_STAGE_CAP_REDUCE 4
/* Where a latency is long against the region's bytes, the fragments of a rootless
 * reduce step wait on it twice (one per exchange) and the links idle unless more
 * fragments are in the step: reduce_cap adds floor(2 x latency / bytes time), by the
 * link times the stream knows (ctx->times: measured, else configured), up to this.
 * Simulated (SimGrid's default network model, reduce 256 MiB, 16 x 8 GPUs, RESULTS.md
 * section 5, "Rootless reduce stages as deep as their latency"): 8 MiB fragments, the
 * rail's 23.3 us latency against its 23.2 us of bytes: six fragments 1121.11 us, five
 * 1135.36, four 1177.84. On exact links the rule keeps four: six there cost 3.6 % at
 * 64 x 8 GPUs (898.05 against 866.52 us). */
#define MXH_STREAM_STAGE_CAP_REDUCE_MAX 8
/* A rootless bcast step on the network (not staggered, below): three fragments,
 * so that a third scatter is posted while two fragments wait on their latencies.
 * Simulated bcast 256 MiB (RESULTS.md section 5, same subsection), two -> three:
 * SimGrid's default network model 1652.73 -> 1374.09 us (16 x 8 GPUs), 1763.42 ->
 * 1489.45 (32 x 8 in 4 leaf groups); exact links 865.86 -> 880.99 and 969.99 ->
 * 955.91. */
#define MXH_STREAM_STAGE_CAP_BCAST_NET 3
/* A staggered step (below) that posts its next scatter a latency before the one
 * in flight is due to end: three fragments, the one all-gathering, the one
 * receiving its scatter and the one posted ahead. Simulated bcast 256 MiB, 16 x 8
 * GPUs, 4 MiB fragments (RESULTS.md section 5, "The staggered scatter posted
 * ahead"): cap 2 834.25 us, 3 782.08. */
#define MXH_STREAM_STAGE_CAP_STAGGER 3
/* A kary step (p2p.c) keeps a fragment for one exchange per factor, each behind its
 * latency, the first small in an allgather (the last in a reduce-scatter): with two
 * fragments on the stage both could be between exchanges and the NIC idle. One more
 * fragment per further exchange where it is the schedule's only kary stage; where an
 * allreduce has two (rail reduce-scatter and allgather on one NIC) each fills the
 * other's gaps and the extra fragments only share the NIC. Simulated, 256 MiB, kary
 * (rails of 32 = 8 x 4, unpaced as the model runs them there; RESULTS.md section 5,
 * "Fewer messages on long rails"), 1024 GPUs: allgather cap 2 751.19 us, 3 728.27, 4
 * 743.08; reduce_scatter_block 2 748.71, 3 720.14 (direct 718.60 and 717.66); the
 * allreduce 2 1454.47, 3 1461.29 (64 x 8 in 2 leaf groups: 1407.75, 1417.82). Paced,
 * the stage already takes MXH_STREAM_STAGE_CAP_PACED. */
#define MXH_STREAM_STAGE_CAP_KARY_EXTRA 1

typedef struct stream {
    const mxh_sched_t    *sched;
    const mxh_exec_ctx_t *ctx;
    char                 *work, *tmp;
    size_t                slot;                     /* elements of tmp per window slot */
    size_t                piece;                    /* io_piece */
    int                   W;  /* fragments in their stages at most (window), each
                                 with its slot of tmp: fragment f in slot f % W */
    int                   FS; /* fragments in flight at most: W, one copying in
                                 ahead, one copying out behind (state f % FS) */
    int                   busy[2 * MXH_MAX_LEVELS]; /* fragments running each stage */
    int                   cap[2 * MXH_MAX_LEVELS];  /* at most (stream_caps) */
    int                   enter[2 * MXH_MAX_LEVELS]; /* the fragment allowed into each stage */
    int                   stagger[2 * MXH_MAX_LEVELS]; /* stream_staggers */
    const mxh_cost_model_t *pace;                  /* pacing (below), or NULL */
    double                next_ok[MXH_MAX_LEVELS]; /* per link: no exchange posted before */
    double                link_free[MXH_MAX_LEVELS]; /* per link: when its bytes booked so
                                                        far will have crossed it */
    double                wake;                    /* a held exchange may go then (0: none) */
    double                cpu[2 * MXH_MAX_LEVELS][MXH_COST_MAX_PHASES]; /* pacing: per
                                    stage and exchange, its reduction's time (pace_cpu) */
    double                slack; /* half the longest of those that waits to run now: a
                                    paced exchange goes this much before its turn */
} stream_t;

/* Pacing (MPIX_HIER_PIPELINE_PACE). Two fragments on a stage (or on two stages
 * of one link) that post their exchanges together wait out their latencies
 * together, then share the link and finish together, and so on: the link idles
 * for a latency per exchange however many fragments are in flight (SimGrid's
 * default network model: 23 us per rail exchange of messages of 64 KiB or
 * more, about the time their bytes take at 8 MiB fragments). Instead each link
 * keeps a booking: an exchange posted at t with latency a and bytes taking x on
 * the link (the cost model's parameters and factors for its message size:
 * mxh_cost_latency, mxh_cost_link_time) starts moving at max(t + a, free) and
 * books the link until free = that + x; the next exchange, of any fragment, is
 * posted at free - a (its latency, taken as this one's, then ends as the link
 * frees). A fragment's later exchanges are held (op.hold) until their turn;
 * the oldest fragment goes first at equal times. An under-estimate lets
 * transfers overlap again (as without pacing); an over-estimate idles the
 * link. */
static int pace_ok(stream_t *S, const mxh_step_t *s)
{
    if (S->pace == NULL || s->level >= S->pace->nlevels)
        return 1;
    double t = S->next_ok[S->pace->res[s->level]] - S->slack;
    if (t <= 0 || MPI_Wtime() >= t)
        return 1;
    if (S->wake == 0 || t < S->wake)
        S->wake = t;
    return 0;
}

static void pace_posted(stream_t *S, const mxh_p2p_op_t *op)
{
    const mxh_step_t *s = op->s;
    if (S->pace == NULL || s->level >= S->pace->nlevels || !op->active)
        return;
    int r      = S->pace->res[s->level];
    double lat = mxh_cost_latency(S->pace, s->level, op->xmsg), now = MPI_Wtime();
    double start = now + lat > S->link_free[r] ? now + lat : S->link_free[r];
    S->link_free[r] = start + mxh_cost_link_time(S->pace, s->level, mxh_p2p_pace_bytes(op), op->xmsg);
    /* the next exchange (of about this latency) may go when its latency would end
     * as this one's bytes have crossed */
    S->next_ok[r] = S->link_free[r] - lat;
}

/* A rank that reduces does nothing else meanwhile (host reductions; in the simulator
 * the reduction's charged time): an exchange whose turn comes during a reduction of
 * r goes late by up to r, and the link idles for it. Posted d before its turn instead,
 * it shares the link with the bytes booked before it and delays them by about d. So
 * while completed exchanges wait for their reductions, a paced exchange goes up to
 * half the longest of those reductions (the pace model's figures:
 * mxh_cost_step_phases) before its turn: early where that costs less than waiting.
 * Simulated (SimGrid, allreduce 256 MiB, paced, RESULTS.md section 5, "Paced
 * exchanges a reduction early"): 16 x 8 GPUs with 900 GB/s NVLink and 50 GB/s NICs,
 * 16 MiB fragments (a node reduce-scatter's 8-input reduction of 2 MiB takes 6.3 us
 * there): 1321.68 us without it, 1273.50 with half, 1275.60 with the whole reduction,
 * 1278.70 / 1280.77 / 1291.80 with a fixed 4 / 8 / 16 us whether or not one waits;
 * the platform of 370 GB/s NVLink and 48 GB/s NICs, 16 x 8, 8 MiB: 1334.41, 1336.42,
 * 1338.40. */
static void pace_cpu(stream_t *S)
{
    const mxh_plan_t *p = S->sched->plan;
    memset(S->cpu, 0, sizeof(S->cpu));
    if (S->pace == NULL)
        return;
    /* the step algorithms this schedule runs (the pace model's choose reads kary, and
     * rsag 1 only); a copy of the model only where they differ */
    const mxh_cost_model_t *m = S->pace;
    mxh_cost_model_t c;
    if (m->kary != S->sched->kary || (m->rsag == 1) != S->sched->rsag) {
        c      = *m;
        c.kary = S->sched->kary;
        c.rsag = S->sched->rsag;
        m      = &c;
    }
    for (int st = 0; st < S->sched->nstages; st++) {
        int i = p->stage_step[st];
        if (i < 0 || p->steps[i].level >= m->nlevels || p->steps[i].gsize < 2)
            continue;
        mxh_cost_phases_t ph;
        mxh_cost_step_phases(m, p->steps[i].level, p->steps[i].type,
                             p->steps[i].count * S->ctx->extent, &ph);
        for (int k = 0; k < ph.n; k++)
            S->cpu[st][k] = ph.ph[k].cpu;
    }
}

/* The slack of pace_cpu now: half the longest reduction among the fragments whose
 * exchange has completed and not been processed */
static void pace_slack(stream_t *S, const frag_state_t *fs, int lo, int next)
{
    S->slack = 0;
    if (S->pace == NULL)
        return;
    for (int f = lo; f < next; f++) {
        const frag_state_t *x = &fs[f % S->FS];
        if (x->io == FRAG_STEPS && x->started && x->op.k < MXH_COST_MAX_PHASES &&
            mxh_p2p_completed(&x->op) && S->cpu[x->stage][x->op.k] > S->slack)
            S->slack = S->cpu[x->stage][x->op.k];
    }
    S->slack /= 2;
}

/* floor(2 x latency / bytes time) of the step @s (a rootless bcast or reduce: two
 * exchanges of its region in messages of 1/(p - 1) of it) by the stream's link times,
 * at most MXH_STREAM_STAGE_CAP_REDUCE_MAX; 0 without link times. */
static int latency_extra(const mxh_step_t *s, const mxh_exec_ctx_t *ctx)
{
    if (ctx->times == NULL || s->gsize < 2)
        return 0;
    size_t bytes = s->count * ctx->extent, msg = bytes / (size_t)(s->gsize - 1);
    double tb  = mxh_cost_link_time(ctx->times, s->level, bytes, msg);
    double lat = mxh_cost_latency(ctx->times, s->level, msg);
    if (tb <= 0)
        return 0;
    return 2 * lat / tb < MXH_STREAM_STAGE_CAP_REDUCE_MAX ? (int)(2 * lat / tb)
                                                          : MXH_STREAM_STAGE_CAP_REDUCE_MAX;
}

/* Fragments at most on the rootless reduce step @s (MXH_STREAM_STAGE_CAP_REDUCE_MAX) */
static int reduce_cap(const mxh_step_t *s, const mxh_exec_ctx_t *ctx)
{
    int cap = MXH_STREAM_STAGE_CAP_REDUCE + latency_extra(s, ctx);
    return cap < MXH_STREAM_STAGE_CAP_REDUCE_MAX ? cap : MXH_STREAM_STAGE_CAP_REDUCE_MAX;
}

/* Fragments at most on the rootless network bcast step @s: three, and as many more as
 * its window gets for latency (stream_window, latency_extra), so that the fragments
 * the window lets in for the latency can post their scatters: with the window alone
 * they waited at the stage. Simulated (SimGrid's default network model, bcast 256 MiB,
 * 16 x 8 GPUs, RESULTS.md section 5, "A bcast stage as deep as its latency"): three
 * per stage 1103.88 us (16 MiB fragments, the model's pick with three; 8 MiB took
 * 1200.11 on older code), five 1002.03 (8 MiB, its pick now); exact links unchanged
 * (2 us of latency against 10.9 us of bytes: no more). */
static int bcast_net_cap(const mxh_step_t *s, const mxh_exec_ctx_t *ctx)
{
    int cap = MXH_STREAM_STAGE_CAP_BCAST_NET + latency_extra(s, ctx);
    return cap < MXH_STREAM_STAGE_CAP_REDUCE_MAX ? cap : MXH_STREAM_STAGE_CAP_REDUCE_MAX;
}

/* Fragments at most on a stage whose step is @s (NULL: none here); @nkary: the
 * schedule's kary stages on this rank */
static int stage_cap(const stream_t *S, const mxh_step_t *s, int light, int nkary)
{
    if (light)
        return S->W;
    if (S->pace != NULL)
        return MXH_STREAM_STAGE_CAP_PACED;
    int x = s != NULL ? mxh_p2p_kary_exchanges(s, S->ctx->extent) : 0;
    if (x > 1 && nkary == 1)
        return MXH_STREAM_STAGE_CAP + (x - 1) * MXH_STREAM_STAGE_CAP_KARY_EXTRA;
    if (s != NULL && reduce_rootless(s))
        return reduce_cap(s, S->ctx);
    if (s != NULL && bcast_rootless_net(s))
        return bcast_net_cap(s, S->ctx);
    if (s != NULL && mxh_step_staggered(s) && S->ctx->times != NULL)
        return MXH_STREAM_STAGE_CAP_STAGGER;
    return MXH_STREAM_STAGE_CAP;
}

static void stream_caps(stream_t *S)
{
    const mxh_plan_t *p = S->sched->plan;
    size_t most         = stream_most(S->sched);
    int nkary           = 0;

    for (int st = 0; st < S->sched->nstages; st++)
        nkary += p->stage_step[st] >= 0 &&
                 mxh_p2p_kary_exchanges(&p->steps[p->stage_step[st]], S->ctx->extent) > 1;
    for (int st = 0; st < S->sched->nstages; st++) {
        int i      = p->stage_step[st];
        int light  = i >= 0 && p->steps[i].count * MXH_STREAM_LIGHT <= most;
        S->cap[st] = stage_cap(S, i >= 0 ? &p->steps[i] : NULL, light, nkary);
    }
}

/* The stages whose step is staggered (stream_stagger): mxh_step_staggered (a reduce
 * where the schedule says so: sched.h rstagger), and on the network only where the
 * step binds the stream (cost.h mxh_cost_net_binds, by the link times, against this
 * rank's node step; without link times not there). */
static void stream_staggers(stream_t *S)
{
    const mxh_plan_t *p       = S->sched->plan;
    const mxh_cost_model_t *t = S->ctx->times;
    size_t node = 0;
    int node_p  = 0;
    for (int st = 0; st < S->sched->nstages && node == 0; st++) {
        int i = p->stage_step[st];
        if (i >= 0 && p->steps[i].level == 0 && !p->steps[i].net) {
            node   = p->steps[i].count * S->ctx->extent;
            node_p = p->steps[i].gsize;
        }
    }
    for (int st = 0; st < S->sched->nstages; st++) {
        int i               = p->stage_step[st];
        const mxh_step_t *s = i >= 0 ? &p->steps[i] : NULL;
        S->stagger[st] =
            s != NULL && mxh_step_staggered(s) &&
            (s->type != MXH_STEP_REDUCE || S->sched->rstagger) &&
            (!s->net || (t != NULL && s->level < t->nlevels &&
                         mxh_cost_net_binds(t, s->level, s->count * S->ctx->extent, s->gsize,
                                            node, node_p)));
    }
}

/* A member other than the root of a rootless bcast step (p2p.c: the root scatters
 * the region to the p - 1 others, then they all-gather it) starts fragment f only
 * once fragment f - 1 has left its scatter. The others' links take the region per
 * fragment as the root's link sends it, the root's part being 1/(p - 1) of each
 * one's incoming bytes: two fragments that receive their scatters together
 * finish them together and then all-gather together, and those 2(p - 2) flows
 * into each member hold the root's next scatter to a share of 1/(2p - 3) of the
 * link where it needs 1/(p - 1). The root's link then idles, and the pairs stay
 * in step for the rest of the stream (RESULTS.md section 5, "Staggered fragments
 * in the rootless bcast"). Staggered, one fragment all-gathers while the next is
 * scattered; the price was the scatter's latency once per fragment (the link idle
 * while the next scatter waits on it: 1 of every 12.3 us at 4 MiB fragments in
 * the node). With the link times (ctx->times) the next scatter is posted a
 * latency before the one in flight is due to end instead; a late estimate falls
 * back to the rule above, an early one lets the two share the link for a moment.
 * Simulated bcast 256 MiB, 16 x 8 GPUs: 839.67 -> 782.08 us (RESULTS.md section
 * 5, "The staggered scatter posted ahead"). The rootless reduce on the network is the
 * mirror: the others' gathers to the root share their outgoing links with the
 * reduce-scatters of later fragments and get a sliver of them, so the root's link
 * idles; a member starts fragment f's reduce-scatter once f - 1 has left its own
 * (not posted ahead: the gather that follows is what must go alone). Simulated
 * reduce 256 MiB, 16 x 8 GPUs with 900 GB/s NVLink and 50 GB/s NICs, 16 MiB
 * fragments: 968.83 -> 834.01 us (RESULTS.md section 5, "Staggered on the network
 * too"). */
static int stream_stagger(stream_t *S, const frag_state_t *fs, const mxh_step_t *s,
                          int f, int st)
{
    if (f == 0 || !S->stagger[st])
        return 0;
    const frag_state_t *y = &fs[(f - 1) % S->FS];
    if (!(y->io == FRAG_STEPS && y->started && y->stage == st && y->op.active))
        return 0;
    if (s->type == MXH_STEP_REDUCE) /* until f - 1 has left its reduce-scatter */
        return y->op.k < y->op.nrs;
    if (y->op.k != 0)
        return 0;
    /* posted a latency before fragment f - 1's scatter is due to end, so that its
     * bytes follow without the link idling for the latency */
    if (y->due <= 0)
        return 1;
    if (MPI_Wtime() >= y->due)
        return 0;
    if (S->wake == 0 || y->due < S->wake)
        S->wake = y->due;
    return 1;
}

/* Try to move fragment @f on: start its current stage when the stage is free and
 * its turn, skipping empty steps (in turn as well). Sets *moved on a change. */
static int stream_try(stream_t *S, frag_state_t *fs, frag_state_t *x, int f, int *moved)
{
    const mxh_sched_t *sched = S->sched;
    const mxh_plan_t *p      = mxh_sched_plan(sched, f);

    while (x->stage < sched->nstages && !x->started) {
        int st = x->stage, i = p->stage_step[st];
        if (S->enter[st] != f)
            return MPI_SUCCESS; /* an earlier fragment has not entered this stage yet */
        if (i < 0 || mxh_exec_step_void(S->ctx, &p->steps[i]) || p->steps[i].gsize <= 1) {
            S->enter[st] = f + 1;
            x->stage++;
            *moved = 1;
            continue;
        }
        if (S->busy[st] >= S->cap[st])
            return MPI_SUCCESS;
        const mxh_step_t *s = &p->steps[i];
        if (stream_stagger(S, fs, s, f, st))
            return MPI_SUCCESS; /* fragment f - 1 still receives its scatter */
        mxh_p2p_env_t env   = p2p_env(s, S->ctx);
        int slotno          = f % S->W;
        char *base = S->work + (mxh_sched_frag_offset(sched, f) + s->offset) * S->ctx->extent;
        /* by fragment, not window slot: the window counts this rank's stages,
         * which differ on a rank alone in its node */
        int tag    = MXH_P2P_TAG + 100 + (f % MXH_MAX_STREAM) * sched->nstages + st;
        const char *src = NULL;
        if (i == x->src_i)
            src = S->ctx->src + (mxh_sched_frag_offset(sched, f) + s->offset) * S->ctx->extent;
        if (!pace_ok(S, s))
            return MPI_SUCCESS; /* the link's turn comes later */
        x->src_i = -1;
        int rc   = mxh_p2p_start(&x->op, s, &env, base, src,
                                 S->tmp + (size_t)slotno * S->slot * S->ctx->extent, tag);
        S->enter[st] = f + 1;
        *moved       = 1;
        mxh_trace("stream frag %d stage %d start %.3f us", f, st, MPI_Wtime() * 1e6);
        if (rc != MPI_SUCCESS)
            return rc;
        if (x->op.active) {
            pace_posted(S, &x->op);
            x->op.hold = S->pace != NULL;
            x->started = 1;
            x->t0      = S->ctx->lvl ? mxh_ticks() : 0;
            x->due     = 0;
            if (S->ctx->times != NULL && s->level < S->ctx->times->nlevels &&
                S->stagger[st] && s->type == MXH_STEP_BCAST) {
                /* the region's time on the link from now (its latency overlaps the
                 * bytes before it) */
                size_t bytes = s->count * S->ctx->extent, msg = bytes / (size_t)(s->gsize - 1);
                x->due = MPI_Wtime() + mxh_cost_link_time(S->ctx->times, s->level, bytes, msg);
            }
            S->busy[st]++;
        } else {
            x->stage++;
        }
    }
    return MPI_SUCCESS;
}

/* One pending request of each active op of @ops into @all (@where: which op and
 * request it is, for ops_put_back). An op moves on only once all its requests
 * completed, so one per op is enough to wait on: a direct exchange of a rail of
 * 32 has 62, and SimGrid re-tests every request of the array on every
 * MPI_Waitany (at 1024 simulated ranks that made the waits quadratic in the
 * requests of a step). @all and @where have room for nops requests. Returns and
 * sets *@n to the number of requests. */
static int ops_pending(mxh_p2p_op_t *const *ops, int nops, MPI_Request *all, int *where, int *n)
{
    *n = 0;
    for (int k = 0; k < nops; k++)
        for (int i = 0; ops[k]->active && i < ops[k]->nreq; i++)
            if (ops[k]->req[i] != MPI_REQUEST_NULL) {
                all[*n]   = ops[k]->req[i];
                where[*n] = k * MXH_P2P_MAXREQ + i;
                (*n)++;
                break;
            }
    return *n;
}

static void ops_put_back(mxh_p2p_op_t *const *ops, const MPI_Request *all, const int *where, int n)
{
    for (int k = 0; k < n; k++)
        ops[where[k] / MXH_P2P_MAXREQ]->req[where[k] % MXH_P2P_MAXREQ] = all[k];
}

/* Nothing moved in a pass: block until a request of @ops (the active ones)
 * completes (a simulator advances its clock instead of charging every test; a
 * real MPI progresses inside the wait). The completed request becomes
 * MPI_REQUEST_NULL in its op, which mxh_p2p_advance_waited (or a test) sees.
 * *@n: requests waited on (0: none, nothing done). */
static int ops_wait_any(mxh_p2p_op_t *const *ops, int nops, MPI_Request *all, int *where, int *n)
{
    int done = 0, rc;
    MPI_Status stat;

    if (ops_pending(ops, nops, all, where, n) == 0)
        return MPI_SUCCESS;
    /* MPI_Waitany, not MPI_Waitsome: SMPI charges Waitsome (and every test) its
     * smpi/test penalty, 100 us by default, Waitany nothing */
    rc = mxh_task_wait_any(*n, all, &done, &stat);
    ops_put_back(ops, all, where, *n);
    return rc;
}

/* The nonblocking form: test until no request of @ops completes. (Testsome:
 * SMPI 3.32 lets the injected time of MPI_Testany grow with every call, even
 * with smpi/grow-injected-times off; in the simulation mxh_testsome waits
 * instead of testing, sim.h.) */
static int ops_poll(mxh_p2p_op_t *const *ops, int nops, MPI_Request *all, int *where)
{
#ifdef MXH_SIMGRID
    /* one look, one sentinel: an exchange whose request completed puts its next
     * one in (sim.h mxh_sim_poll_next), as the loop below does with a new test */
    mxh_sim_poll_t p;
    int n, k = 0, rc;

    if (ops_pending(ops, nops, all, where, &n) == 0)
        return MPI_SUCCESS;
    rc = mxh_sim_poll_start(&p);
    while (rc == MPI_SUCCESS && k >= 0) {
        ops_pending(ops, nops, all, where, &n);
        rc = mxh_sim_poll_next(&p, n, all, &k);
        ops_put_back(ops, all, where, n);
    }
    return rc;
#else
    MPI_Status stats[MXH_MAX_STREAM];
    int idx[MXH_MAX_STREAM], n, done = 1, rc = MPI_SUCCESS;

    while (rc == MPI_SUCCESS && done > 0 && ops_pending(ops, nops, all, where, &n) > 0) {
        rc = mxh_testsome(n, all, &done, idx, stats);
        ops_put_back(ops, all, where, n);
    }
    return rc;
#endif
}

/* The stream's wait (@block) or poll: over the running steps of the fragments
 * in flight. */
static int stream_wait(frag_state_t *fs, int FS, int lo, int next, int block)
{
    mxh_p2p_op_t *ops[MXH_MAX_STREAM];
    MPI_Request all[MXH_MAX_STREAM];
    int where[MXH_MAX_STREAM], nops = 0, n;

    for (int f = lo; f < next; f++)
        if (fs[f % FS].started)
            ops[nops++] = &fs[f % FS].op;
    if (!block)
        return ops_poll(ops, nops, all, where);
    return ops_wait_any(ops, nops, all, where, &n);
}

/* One piece of the copies: the oldest fragment's copy out, else the copy in.
 * Returns 1 if there was one. */
static int stream_io(stream_t *S, frag_state_t *fs, int lo, int next)
{
    const mxh_exec_ctx_t *ctx = S->ctx;
    int f = -1;

    for (int g = lo; g < next && f < 0; g++)
        if (fs[g % S->FS].io == FRAG_OUT)
            f = g;
    for (int g = lo; g < next && f < 0; g++)
        if (fs[g % S->FS].io == FRAG_IN)
            f = g;
    if (f < 0)
        return 0;
    frag_state_t *x = &fs[f % S->FS];
    mxh_frag_fn fn  = x->io == FRAG_OUT ? ctx->frag_out : ctx->frag_in;
    if (fn(ctx->frag_arg, S->sched, f, S->work, x->io_off, S->piece) > 0) {
        x->io_off += S->piece; /* (< SIZE_MAX: the job was longer) */
    } else {
        mxh_trace("stream frag %d %s done %.3f us", f, x->io == FRAG_OUT ? "out" : "in",
                  MPI_Wtime() * 1e6);
        x->io = x->io == FRAG_OUT ? FRAG_DONE : FRAG_STEPS;
    }
    return 1;
}

/* Seconds a rank waiting for its turn on a link (pacing) sleeps between polls
 * in the simulation: a completion meanwhile is seen at most this late. */
#define MXH_PACE_POLL 2e-6

static mxh_status_t exec_stream(const mxh_sched_t *sched, const mxh_exec_ctx_t *ctx, char *work,
                                char *tmp)
{
    int W      = stream_window(sched, ctx);
    stream_t S = {.sched = sched,
                  .ctx   = ctx,
                  .work  = work,
                  .tmp   = tmp,
                  .slot  = sched_slot(sched, ctx->extent),
                  .piece = io_piece(sched),
                  .W     = W,
                  .FS    = W + 2,
                  .pace  = ctx->pace};
    frag_state_t fs[MXH_MAX_STREAM + 2];
    int lo = 0, next = 0, rc = MPI_SUCCESS;
    const mxh_step_t *failed = NULL;

    stream_caps(&S);
    stream_staggers(&S);
    pace_cpu(&S);
    /* fragments [lo, next) are in flight, fragment f in state f % FS */
    while (lo < sched->nfrag && rc == MPI_SUCCESS) {
        int moved = 0;
        S.wake    = 0;
        /* a fragment enters once the one before has copied in: its copy-in
         * (allreduce, reduce_scatter pack) then overlaps the transfers already
         * started, instead of the whole window being copied in before anything
         * is sent, and the window's next fragment is ready when a slot frees */
        if (next < sched->nfrag && next - lo < S.FS &&
            (next == lo || fs[(next - 1) % S.FS].io != FRAG_IN)) {
            frag_state_t *x = &fs[next % S.FS];
            x->src_i        = src_step(mxh_sched_plan(sched, next), ctx);
            x->io           = ctx->frag_in && x->src_i < 0 ? FRAG_IN : FRAG_STEPS;
            x->io_off       = 0;
            x->stage        = 0;
            x->started      = 0;
            x->op.active    = 0;
            x->op.s         = NULL;
            next++;
            moved = 1;
        }
        /* one piece of copying, then a look at the transfers */
        if (stream_io(&S, fs, lo, next)) {
            moved = 1;
            if (S.piece != SIZE_MAX)
                rc = stream_wait(fs, S.FS, lo, next, 0);
        }
        pace_slack(&S, fs, lo, next);
        /* oldest first; the window: fragments in their stages lie in [a, a + W)
         * (a: the oldest still in its stages), so their slots differ */
        int a = -1;
        for (int f = lo; f < next && rc == MPI_SUCCESS; f++) {
            frag_state_t *x = &fs[f % S.FS];
            if (x->io != FRAG_STEPS)
                continue;
            if (a < 0)
                a = f;
            if (f >= a + S.W)
                break;
            if (x->started) {
                rc = mxh_p2p_advance_waited(&x->op, &moved);
                if (rc == MPI_SUCCESS && x->op.active && x->op.held && pace_ok(&S, x->op.s)) {
                    rc = mxh_p2p_post_held(&x->op);
                    pace_posted(&S, &x->op);
                    moved = 1;
                }
                if (rc == MPI_SUCCESS && !x->op.active) {
                    mxh_trace("stream frag %d stage %d end %.3f us", f, x->stage,
                              MPI_Wtime() * 1e6);
                    S.busy[x->stage]--;
                    lvl_add(ctx, x->op.s, x->t0);
                    x->stage++;
                    x->started = 0;
                }
            }
            if (rc == MPI_SUCCESS)
                rc = stream_try(&S, fs, x, f, &moved);
            if (rc != MPI_SUCCESS)
                failed = x->op.s;
            else if (x->stage >= sched->nstages) {
                x->io     = ctx->frag_out ? FRAG_OUT : FRAG_DONE;
                x->io_off = 0; /* the copy out starts at the fragment's first byte */
            }
        }
        while (lo < next && fs[lo % S.FS].io == FRAG_DONE)
            lo++;
        if (!moved && rc == MPI_SUCCESS && lo < sched->nfrag) {
            if (S.wake > 0) { /* an exchange waits for its turn: poll until then */
#ifdef MXH_SIMGRID
                /* the simulated clock stands still unless the rank spends time */
                double dt = S.wake - MPI_Wtime();
                mxh_sim_sleep(dt > MXH_PACE_POLL ? MXH_PACE_POLL : dt > 1e-9 ? dt : 1e-9);
                rc = stream_wait(fs, S.FS, lo, next, 0);
#else
                /* a task gives the progress engine back meanwhile; on the caller's
                 * stack, the core (a busy node, section 6 of RESULTS.md) */
                rc = stream_wait(fs, S.FS, lo, next, 0);
                mxh_task_yield();
#endif
            } else {
                rc = stream_wait(fs, S.FS, lo, next, 1);
            }
        }
    }
    if (rc != MPI_SUCCESS) {
        /* do not leave requests behind on the buffers */
        for (int f = lo; f < next; f++)
            if (fs[f % S.FS].started && fs[f % S.FS].op.active && fs[f % S.FS].op.nreq > 0) {
                MPI_Status stats[MXH_P2P_MAXREQ];
                mxh_task_wait_all(fs[f % S.FS].op.nreq, fs[f % S.FS].op.req, stats);
            }
        if (failed != NULL)
            return mpi_failed(rc, failed);
        mxh_error("pipelined step failed (MPI error %d)", rc);
        return MXH_ERR_MPI;
    }
    return MXH_OK;
}

/* Block until some exchange of the round's point-to-point steps completes. */
static int ops_wait(mxh_p2p_op_t *ops, int nops)
{
    MPI_Request all[2 * MXH_MAX_LEVELS];
    int where[2 * MXH_MAX_LEVELS];
    mxh_p2p_op_t *list[2 * MXH_MAX_LEVELS];
    int n, rc;

    for (int k = 0; k < nops; k++)
        list[k] = &ops[k];
    rc = ops_wait_any(list, nops, all, where, &n);
    if (n == 0)
        mxh_task_yield();
    return rc;
}

static mxh_status_t exec_rounds(const mxh_sched_t *sched, const mxh_exec_ctx_t *ctx, void *work,
                                void *tmp);

static mxh_status_t exec_sched(const mxh_sched_t *sched, const mxh_exec_ctx_t *ctx, void *work,
                               void *tmp);

mxh_status_t mxh_exec_sched(const mxh_sched_t *sched, const mxh_exec_ctx_t *ctx, void *work,
                            void *tmp)
{
    int          pipe = sched->nfrag > 1;
    mxh_status_t st;

    mxh_sim_pipeline(pipe);
    st = exec_sched(sched, ctx, work, tmp);
    mxh_sim_pipeline(-pipe);
    return st;
}

static mxh_status_t exec_sched(const mxh_sched_t *sched, const mxh_exec_ctx_t *ctx, void *work,
                               void *tmp)
{
    mxh_status_t st;

    if (stream_able(sched, ctx) && stream_window(sched, ctx) <= MXH_MAX_STREAM)
        return exec_stream(sched, ctx, work, tmp);
    if (sched->nfrag == 1) {
        int src_i = src_step(sched->plan, ctx);
        if (ctx->frag_in && src_i < 0)
            ctx->frag_in(ctx->frag_arg, sched, 0, work, 0, SIZE_MAX);
        st = run_plan(sched->plan, ctx, work, tmp, ctx->src, src_i);
        if (ctx->frag_out && st == MXH_OK)
            ctx->frag_out(ctx->frag_arg, sched, 0, work, 0, SIZE_MAX);
        return st;
    }
    for (int f = 0; f < sched->nfrag && ctx->frag_in; f++)
        ctx->frag_in(ctx->frag_arg, sched, f, work, 0, SIZE_MAX);
    st = exec_rounds(sched, ctx, work, tmp);
    for (int f = 0; f < sched->nfrag && ctx->frag_out && st == MXH_OK; f++)
        ctx->frag_out(ctx->frag_arg, sched, f, work, 0, SIZE_MAX);
    return st;
}

static mxh_status_t exec_rounds(const mxh_sched_t *sched, const mxh_exec_ctx_t *ctx, void *work,
                                void *tmp)
{
    const int ns = sched->nstages;
    size_t slot  = sched_slot(sched, ctx->extent) * ctx->extent;
    mxh_status_t st = MXH_OK;

    if (sched->nfrag == 1)
        return mxh_exec_plan(sched->plan, ctx, work, tmp);

    for (int r = 0; r < sched->nrounds && st == MXH_OK; r++) {
        const mxh_step_t *started[2 * MXH_MAX_LEVELS], *steps[2 * MXH_MAX_LEVELS];
        char *bases[2 * MXH_MAX_LEVELS], *sbase[2 * MXH_MAX_LEVELS];
        mxh_p2p_op_t ops[2 * MXH_MAX_LEVELS];
        int nreq = 0, nops = 0, nsteps = 0, rc = MPI_SUCCESS;
        uint64_t t0 = ctx->lvl ? mxh_ticks() : 0;

        /* the round's steps, in stage order (the same on every rank) */
        for (int s = 0; s < ns; s++) {
            int f = mxh_sched_frag_at(sched, r, s);
            if (f < 0)
                continue;
            const mxh_plan_t *p = mxh_sched_plan(sched, f);
            int i               = p->stage_step[s];
            if (i < 0 || mxh_exec_step_void(ctx, &p->steps[i]))
                continue;
            steps[nsteps] = &p->steps[i];
            sbase[nsteps] = (char *)work + (mxh_sched_frag_offset(sched, f) + p->steps[i].offset) *
                                               ctx->extent;
            nsteps++;
        }
        /* 1. start the MPI steps: point-to-point ones and nonblocking collectives */
        for (int k = 0; k < nsteps && st == MXH_OK; k++) {
            const mxh_step_t *step = steps[k];
            char *stmp             = (char *)tmp + (size_t)step->stage * slot;
            if (shm_step_form(step, ctx))
                continue; /* shared-memory step: below */
            if (mxh_p2p_usable(step, ctx->extent)) {
                mxh_p2p_env_t env = p2p_env(step, ctx);
                rc = mxh_p2p_start(&ops[nops++], step, &env, sbase[k], NULL, stmp,
                                   MXH_P2P_TAG + step->stage);
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
        progress_arg_t parg = {ctx, ctx->reqs, nreq, ops, nops, MPI_SUCCESS, NULL, 0};
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
        /* 3. drive the point-to-point steps to the end, then one wait for the rest */
        while (progress_round(&parg) > 0)
            if (!parg.moved && ops_wait(ops, nops) != MPI_SUCCESS && parg.rc == MPI_SUCCESS)
                parg.rc = MPI_ERR_INTERN;
        if (parg.rc != MPI_SUCCESS && st == MXH_OK)
            st = mpi_failed(parg.rc, parg.failed);
        if (nreq > 0) {
            MPI_Status stats[2 * MXH_MAX_LEVELS];
            rc = mxh_task_wait_all(nreq, ctx->reqs, stats);
            if (rc != MPI_SUCCESS && st == MXH_OK)
                st = mpi_failed(rc, started[0]);
        }
        for (int k = 0; k < nreq && st == MXH_OK; k++)
            finish_step(started[k], ctx, bases[k],
                        (char *)tmp + (size_t)started[k]->stage * slot);
        /* the round's steps run together: each is charged the round */
        if (ctx->lvl != NULL) {
            uint64_t t1 = mxh_ticks();
            for (int k = 0; k < nsteps; k++) {
                ctx->lvl->ticks[steps[k]->level] += t1 - t0;
                ctx->lvl->steps[steps[k]->level]++;
            }
        }
    }
    return st;
}
