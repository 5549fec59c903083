#include "config.h"

#include "exec/exec.h"
#include "util/clock.h"
#include "exec/p2p.h"
#include "exec/task.h"
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

/* The segment a step runs through (the tuning pass's step.shm where this rank has the
 * level's segment), or NULL: the step goes point to point or through MPI. */
static mxh_shm_t *shm_step_form(const mxh_step_t *s, const mxh_exec_ctx_t *ctx)
{
    mxh_shm_t *shm = ctx->shm ? ctx->shm[s->level] : NULL;
    return s->shm ? shm : NULL;
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

/* The environment of step @s's op in devs[] entry @slot. */
static mxh_p2p_env_t p2p_env(const mxh_step_t *s, const mxh_exec_ctx_t *ctx, int slot)
{
    mxh_p2p_env_t e = {s->type == MXH_STEP_SPREAD ? ctx->spread_comm : ctx->comms[s->level],
                       ctx->dt, ctx->extent, ctx->op, ctx->mem, ctx->xfer,
                       ctx->mem ? &ctx->devs[slot] : NULL};
    return e;
}

static int step_reduces(const mxh_step_t *s)
{
    return s->type == MXH_STEP_REDUCE_SCATTER || s->type == MXH_STEP_ALLREDUCE ||
           s->type == MXH_STEP_REDUCE || s->type == MXH_STEP_SPREAD;
}

int mxh_exec_device_able(const mxh_sched_t *sched, unsigned skip_levels,
                         const mxh_mem_ops_t *mem, MPI_Datatype dt, MPI_Op op)
{
    int reduces = 0;
    if (mem == NULL || mem->copy_start == NULL || mem->work_alloc == NULL)
        return 0;
    for (int k = 0; k < sched->nplans; k++)
        for (int i = 0; i < sched->plans[k]->nsteps; i++) {
            const mxh_step_t *s = &sched->plans[k]->steps[i];
            if (s->count == 0 || s->gsize < 2 || (skip_levels >> s->level & 1u))
                continue;
            if (!s->p2p) /* (step.shm is moot: the executor gets no segments then) */
                return 0;
            reduces |= step_reduces(s);
        }
    return !reduces || (mem->reduce_start != NULL && mem->reduce_ok(dt, op));
}

int mxh_exec_dev_slots(const mxh_sched_t *sched)
{
    if (sched->nfrag == 1)
        return 1;
    return sched->tuned.stream ? sched->tuned.window : sched->nstages;
}

size_t mxh_exec_bounce_bytes(const mxh_sched_t *sched, size_t ext)
{
    size_t most = 0;
    for (int k = 0; k < sched->nplans; k++)
        for (int i = 0; i < sched->plans[k]->nsteps; i++) {
            size_t b = mxh_p2p_bounce_bytes(&sched->plans[k]->steps[i], ext);
            most     = b > most ? b : most;
        }
    return most;
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
            s->p2p && shm_step_form(s, ctx) == NULL && s->offset == 0 &&
            s->count == plan->work_count)
            return i;
        return -1;
    }
    return -1;
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
    if (sched->tuned.stream)
        return slot * (size_t)sched->tuned.window;
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
        if (ctx->mem != NULL && !s->p2p) {
            mxh_error("%s step on level %d: no point-to-point form for device buffers",
                      mxh_step_type_name(s->type), s->level);
            return MXH_ERR_UNSUPPORTED;
        }
        if (s->p2p) {
            mxh_p2p_env_t env = p2p_env(s, ctx, 0);
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

typedef struct stream {
    const mxh_sched_t    *sched;
    const mxh_exec_ctx_t *ctx;
    const mxh_sched_tuned_t *t;                     /* the tuning pass's choices */
    char                 *work, *tmp;
    size_t                slot;                     /* elements of tmp per window slot */
    int                   W;  /* fragments in their stages at most (window), each
                                 with its slot of tmp: fragment f in slot f % W */
    int                   FS; /* fragments in flight at most: W, one copying in
                                 ahead, one copying out behind (state f % FS) */
    int                   busy[2 * MXH_MAX_LEVELS]; /* fragments running each stage */
    int                   enter[2 * MXH_MAX_LEVELS]; /* the fragment allowed into each stage */
    const mxh_link_times_t *pace;                  /* pacing (below), or NULL */
    double                next_ok[MXH_MAX_LEVELS]; /* per link: no exchange posted before */
    double                link_free[MXH_MAX_LEVELS]; /* per link: when its bytes booked so
                                                        far will have crossed it */
    double                wake;                    /* a held exchange may go then (0: none) */
    double                slack; /* half the longest reduction that waits to run now
                                    (t->pace_cpu): a paced exchange goes this much
                                    before its turn */
} stream_t;

/* Pacing (MPIX_HIER_PIPELINE_PACE). Fragments that post their exchanges on a link
 * together wait out their latencies together and then share the link, so it idles for
 * a latency per exchange. Instead each link keeps a booking: an exchange posted at t
 * with latency a and bytes taking x (the schedule's link times for its message size)
 * starts moving at max(t + a, free) and books the link until free = that + x; the next
 * exchange, of any fragment, is posted at free - a. A fragment's later exchanges are
 * held (op.hold) until their turn; the oldest goes first at equal times. */
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
    double lat = mxh_link_latency(S->pace, s->level, op->xmsg), now = MPI_Wtime();
    double start = now + lat > S->link_free[r] ? now + lat : S->link_free[r];
    S->link_free[r] = start + mxh_link_time(S->pace, s->level, mxh_p2p_pace_bytes(op), op->xmsg);
    /* the next exchange (of about this latency) may go when its latency would end
     * as this one's bytes have crossed */
    S->next_ok[r] = S->link_free[r] - lat;
}

/* A rank that reduces does nothing else meanwhile, so an exchange whose turn comes
 * during a reduction goes late and its link idles: while completed exchanges wait for
 * their reductions, a paced exchange goes up to half the longest of them (the tuning
 * pass's pace_cpu) before its turn (RESULTS.md section 5). */
static void pace_slack(stream_t *S, const frag_state_t *fs, int lo, int next)
{
    S->slack = 0;
    if (S->pace == NULL)
        return;
    for (int f = lo; f < next; f++) {
        const frag_state_t *x = &fs[f % S->FS];
        if (x->io == FRAG_STEPS && x->started && x->op.k < MXH_SCHED_MAX_PHASES &&
            mxh_p2p_completed(&x->op) && S->t->pace_cpu[x->stage][x->op.k] > S->slack)
            S->slack = S->t->pace_cpu[x->stage][x->op.k];
    }
    S->slack /= 2;
}

/* A member other than the root of a rootless bcast step (p2p.c: the root scatters the
 * region to the p - 1 others, then they all-gather it) starts fragment f only once
 * fragment f - 1 has left its scatter: two fragments scattered together would
 * all-gather together and hold the root's next scatter to a sliver of the links. With
 * link times the next scatter is posted a latency before the one in flight is due to
 * end. The rootless reduce on the network is the mirror: fragment f's reduce-scatter
 * starts once f - 1 has left its own (not ahead: the gather after it must go alone).
 * The tuning pass says which stages stagger (RESULTS.md section 5). */
static int stream_stagger(stream_t *S, const frag_state_t *fs, const mxh_step_t *s,
                          int f, int st)
{
    if (f == 0 || !S->t->stagger[st])
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
        if (S->busy[st] >= S->t->cap[st])
            return MPI_SUCCESS;
        const mxh_step_t *s = &p->steps[i];
        if (stream_stagger(S, fs, s, f, st))
            return MPI_SUCCESS; /* fragment f - 1 still receives its scatter */
        int slotno          = f % S->W;
        mxh_p2p_env_t env   = p2p_env(s, S->ctx, slotno);
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
            if (S->t->times != NULL && s->level < S->t->times->nlevels &&
                S->t->stagger[st] && s->type == MXH_STEP_BCAST) {
                /* the region's time on the link from now (its latency overlaps the
                 * bytes before it) */
                size_t bytes = s->count * S->ctx->extent, msg = bytes / (size_t)(s->gsize - 1);
                x->due = MPI_Wtime() + mxh_link_time(S->t->times, s->level, bytes, msg);
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
        if (fs[f % FS].started) {
            ops[nops++] = &fs[f % FS].op;
            /* device work completes only when polled: never block on MPI then */
            if (mxh_p2p_dev_busy(&fs[f % FS].op))
                block = 0;
        }
    if (!block) {
        int rc = ops_poll(ops, nops, all, where);
        for (int k = 0; k < nops; k++)
            if (mxh_p2p_dev_busy(ops[k])) {
                mxh_task_yield(); /* the device works meanwhile */
                break;
            }
        return rc;
    }
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
    if (fn(ctx->frag_arg, S->sched, f, S->work, x->io_off, S->t->io_piece) > 0) {
        x->io_off += S->t->io_piece; /* (< SIZE_MAX: the job was longer) */
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
    int W      = sched->tuned.window;
    stream_t S = {.sched = sched,
                  .ctx   = ctx,
                  .t     = &sched->tuned,
                  .work  = work,
                  .tmp   = tmp,
                  .slot  = sched_slot(sched, ctx->extent),
                  .W     = W,
                  .FS    = W + 2,
                  .pace  = sched->tuned.pace};
    frag_state_t fs[MXH_MAX_STREAM + 2];
    int lo = 0, next = 0, rc = MPI_SUCCESS;
    const mxh_step_t *failed = NULL;

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
            if (S.t->io_piece != SIZE_MAX)
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

    for (int k = 0; k < nops; k++) {
        list[k] = &ops[k];
        if (mxh_p2p_dev_busy(&ops[k])) { /* device work completes only when polled */
            mxh_task_yield();
            return MPI_SUCCESS;
        }
    }
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

    if (sched->tuned.io_piece == 0) {
        mxh_error("%s schedule run before the tuning pass", mxh_coll_name(sched->coll));
        return MXH_ERR_INVALID_PARAM;
    }
    if (sched->tuned.stream)
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
            if (ctx->mem != NULL && !step->p2p) {
                mxh_error("%s step on level %d: no point-to-point form for device buffers",
                          mxh_step_type_name(step->type), step->level);
                st = MXH_ERR_UNSUPPORTED;
                break;
            }
            if (step->p2p) {
                mxh_p2p_env_t env = p2p_env(step, ctx, nops);
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
