#include "decide/tune.h"
#include "decide/cost.h"
#include "decide/p2p_choose.h"
#include "decide/select.h"

#include <string.h>

/* ---- rules shared with the cost model --------------------------------------------- */

int mxh_tune_latency_extra(double lat, double tb)
{
    if (tb <= 0)
        return 0;
    return 2 * lat / tb < MXH_TUNE_STAGE_CAP_MAX ? (int)(2 * lat / tb) : MXH_TUNE_STAGE_CAP_MAX;
}

static int capped(int cap)
{
    return cap < MXH_TUNE_STAGE_CAP_MAX ? cap : MXH_TUNE_STAGE_CAP_MAX;
}

int mxh_tune_stage_cap(const mxh_tune_stage_t *st, int window)
{
    if (st->light)
        return window;
    if (st->paced)
        return MXH_TUNE_STAGE_CAP_PACED;
    if (st->kary_x > 1)
        return MXH_TUNE_STAGE_CAP + (st->kary_x - 1) * MXH_TUNE_STAGE_CAP_KARY_EXTRA;
    if (st->rreduce)
        return capped(MXH_TUNE_STAGE_CAP_REDUCE + st->extra);
    if (st->rbcast_net)
        return capped(MXH_TUNE_STAGE_CAP_BCAST_NET + st->extra);
    if (st->ahead)
        return MXH_TUNE_STAGE_CAP_STAGGER;
    return MXH_TUNE_STAGE_CAP;
}

int mxh_tune_window(int n, int rextra, int paced, int ahead, int bextra)
{
    int w = n + 2;
    if (n + 2 + rextra > w)
        w = n + 2 + rextra;
    if (paced && n >= 3)
        w = n + 3;
    if (ahead && n >= 3 && n + 3 > w)
        w = n + 3;
    if (n + 2 + bextra > w)
        w = n + 2 + bextra;
    if (2 * n - 2 > w)
        w = 2 * n - 2;
    return w;
}

/* ---- steps -------------------------------------------------------------------------- */

/* The data movers take the shared-memory form only where it beats MPI (select.c); spread
 * plans reduce in class order (plan.h ports), the segment in member order. */
static int shm_form(const mxh_step_t *s, size_t ext)
{
    size_t bytes = s->count * ext;
    if (s->ports)
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

void mxh_tune_step(mxh_step_t *s, size_t ext, int shm)
{
    s->shm  = shm && shm_form(s, ext);
    s->p2p  = mxh_p2p_usable(s, ext);
    s->algo = (int)mxh_p2p_choose(s, ext) + 1;
}

/* ---- the model's picks per schedule ------------------------------------------------- */

static void picks(mxh_sched_t *s, const mxh_tune_in_t *in)
{
    size_t frag = s->frag_bytes;
    /* kary exchanges on long rails (MPIX_HIER_KARY) where the model predicts them no
     * slower: the selecting model, else the link times (MPIX_HIER_FRAG_SIZE set); the
     * picks predict the schedule's own ramp */
    const mxh_cost_model_t *km = in->select != NULL ? in->select : in->times;
    mxh_cost_model_t kr;
    if (km != NULL) {
        kr      = *km;
        kr.ramp = s->ramp;
        km      = &kr;
    }
    if (in->cfg->kary == 1 ||
        (in->cfg->kary == 2 && km != NULL &&
         mxh_cost_kary_pick(km, s->coll, s->count, s->tsize, frag, NULL, NULL)))
        mxh_sched_set_kary(s);
    /* small network allreduce steps as reduce-scatter + allgather (MPIX_HIER_RSAG) where
     * the model predicts it faster with the kary choice made */
    int rsag = in->cfg->rsag == 1;
    if (in->cfg->rsag == 2 && km != NULL) {
        mxh_cost_model_t ak = *km;
        ak.kary             = s->kary;
        ak.rsag             = 2;
        rsag = mxh_cost_rsag_pick(&ak, s->coll, s->count, s->tsize, frag, NULL, NULL);
    }
    if (rsag)
        mxh_sched_set_rsag(s);
    if (s->coll == MXH_COLL_REDUCE && km != NULL && s->nfrag > 1) {
        mxh_cost_model_t rk = *km;
        rk.kary     = s->kary;
        rk.rsag     = s->rsag;
        s->rstagger = mxh_cost_rstagger_pick(&rk, s->coll, s->count, s->tsize, frag);
    }
    /* pacing per schedule (MPIX_HIER_PIPELINE_PACE=auto), from the model's predictions */
    if (in->pace != NULL && s->nfrag > 1) {
        mxh_cost_model_t pk = *in->pace;
        pk.ramp    = s->ramp;
        pk.kary    = s->kary;
        pk.rsag    = s->rsag;
        s->unpaced = !mxh_cost_pace_pick(&pk, s->coll, s->count, s->tsize, frag);
    }
}

/* ---- the stream ----------------------------------------------------------------------- */

/* A step the stream runs point to point whatever its size: the size threshold of
 * mxh_p2p_usable differs between ranks whose parts of a small fragment differ, and the
 * choice of the stream executor must be the same on every rank. */
static int p2p_structural(const mxh_step_t *s)
{
    if (s->type == MXH_STEP_BCAST || s->type == MXH_STEP_REDUCE)
        return s->gsize > 1;
    return s->p2p;
}

/* Every step of the schedule runs point to point (no shared memory, by the agreed view
 * of the levels, no MPI collective); steps of a group of one rank move nothing. */
static int stream_able(const mxh_sched_t *sched, const mxh_tune_in_t *in)
{
    if (sched->nfrag < 2)
        return 0;
    for (int k = 0; k < sched->nplans; k++)
        for (int i = 0; i < sched->plans[k]->nsteps; i++) {
            const mxh_step_t *s = &sched->plans[k]->steps[i];
            if (s->count == 0)
                continue;
            if (s->shm && ((in->shm_levels | in->my_shm) >> s->level & 1u))
                return 0;
            if (s->gsize > 1 && !p2p_structural(s))
                return 0;
        }
    return 1;
}

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

static int reduce_rootless(const mxh_step_t *s)
{
    return s->rootless && s->type == MXH_STEP_REDUCE && s->gsize > 1;
}

static int bcast_rootless(const mxh_step_t *s)
{
    return s->rootless && s->type == MXH_STEP_BCAST;
}

static int bcast_rootless_net(const mxh_step_t *s)
{
    return s->rootless && s->type == MXH_STEP_BCAST && s->net && s->gsize > 1;
}

/* The latency extra of a rootless step (two exchanges of its region in messages of
 * 1/(p - 1) of it) by the link times; 0 without them. */
static int step_extra(const mxh_step_t *s, size_t ext, const mxh_cost_model_t *times)
{
    if (times == NULL || s->gsize < 2)
        return 0;
    size_t bytes = s->count * ext, msg = bytes / (size_t)(s->gsize - 1);
    return mxh_tune_latency_extra(mxh_cost_latency(times, s->level, msg),
                                  mxh_cost_link_time(times, s->level, bytes, msg));
}

static int stream_window(const mxh_sched_t *sched, const mxh_tune_in_t *in, int paced)
{
    const mxh_plan_t *p = sched->plan;
    int n = 0, r = 0, z = 0, b = 0, w;
    size_t most = stream_most(sched), ext = sched->tsize;
    for (int st = 0; st < sched->nstages; st++) {
        int i = p->stage_step[st];
        if (i < 0)
            continue;
        const mxh_step_t *s = &p->steps[i];
        n++;
        if (bcast_rootless_net(s) && s->count * MXH_TUNE_LIGHT > most)
            b += step_extra(s, ext, in->times);
        if (reduce_rootless(s)) { /* the window grows by what the stage's cap adds to 2 */
            mxh_tune_stage_t c = {.rreduce = 1, .extra = step_extra(s, ext, in->times)};
            r += mxh_tune_stage_cap(&c, 0) - 2;
        }
        z += bcast_rootless(s);
    }
    w = mxh_tune_window(n, r, paced, in->times != NULL && z > 0, b);
    if (sched->depth > 0)
        w = sched->depth;
    return w < sched->nfrag ? w : sched->nfrag;
}

static void stream_caps(mxh_sched_t *sched, const mxh_tune_in_t *in, int paced)
{
    const mxh_plan_t *p = sched->plan;
    size_t most = stream_most(sched), ext = sched->tsize;
    int nkary   = 0;

    for (int st = 0; st < sched->nstages; st++)
        nkary += p->stage_step[st] >= 0 &&
                 mxh_p2p_kary_exchanges(&p->steps[p->stage_step[st]], ext) > 1;
    for (int st = 0; st < sched->nstages; st++) {
        int i               = p->stage_step[st];
        const mxh_step_t *s = i >= 0 ? &p->steps[i] : NULL;
        mxh_tune_stage_t c  = {.paced = paced};
        if (s != NULL) {
            int x        = mxh_p2p_kary_exchanges(s, ext);
            c.light      = s->count * MXH_TUNE_LIGHT <= most;
            c.kary_x     = x > 1 && nkary == 1 ? x : 0;
            c.rreduce    = reduce_rootless(s);
            c.rbcast_net = bcast_rootless_net(s);
            c.ahead      = mxh_step_staggered(s) && in->times != NULL;
            c.extra      = c.rreduce || c.rbcast_net ? step_extra(s, ext, in->times) : 0;
        }
        sched->tuned.cap[st] = mxh_tune_stage_cap(&c, sched->tuned.window);
    }
}

/* The stages whose step is staggered (mxh_step_staggered; a reduce where the schedule
 * says so), on the network only where the step binds the stream against this rank's
 * node step (mxh_cost_net_binds by the link times; without them not there). */
static void stream_staggers(mxh_sched_t *sched, const mxh_tune_in_t *in)
{
    const mxh_plan_t *p       = sched->plan;
    const mxh_cost_model_t *t = in->times;
    size_t node = 0, ext = sched->tsize;
    int node_p  = 0;
    for (int st = 0; st < sched->nstages && node == 0; st++) {
        int i = p->stage_step[st];
        if (i >= 0 && p->steps[i].level == 0 && !p->steps[i].net) {
            node   = p->steps[i].count * ext;
            node_p = p->steps[i].gsize;
        }
    }
    for (int st = 0; st < sched->nstages; st++) {
        int i               = p->stage_step[st];
        const mxh_step_t *s = i >= 0 ? &p->steps[i] : NULL;
        sched->tuned.stagger[st] =
            s != NULL && mxh_step_staggered(s) &&
            (s->type != MXH_STEP_REDUCE || sched->rstagger) &&
            (!s->net || (t != NULL && s->level < t->nlevels &&
                         mxh_cost_net_binds(t, s->level, s->count * ext, s->gsize, node,
                                            node_p)));
    }
}

/* Paced, the reduction time after each exchange of every stage's step (the pacing
 * model's phases, with the step algorithms this schedule runs). */
static void pace_cpu(mxh_sched_t *sched, const mxh_cost_model_t *pace)
{
    const mxh_plan_t *p = sched->plan;
    mxh_cost_model_t m  = *pace;
    if (m.kary != sched->kary || (m.rsag == 1) != sched->rsag) {
        m.kary = sched->kary;
        m.rsag = sched->rsag;
    }
    for (int st = 0; st < sched->nstages; st++) {
        int i = p->stage_step[st];
        if (i < 0 || p->steps[i].level >= m.nlevels || p->steps[i].gsize < 2)
            continue;
        mxh_cost_phases_t ph;
        mxh_cost_step_phases(&m, p->steps[i].level, p->steps[i].type,
                             p->steps[i].count * sched->tsize, &ph);
        for (int k = 0; k < ph.n && k < MXH_SCHED_MAX_PHASES; k++)
            sched->tuned.pace_cpu[st][k] = ph.ph[k].cpu;
    }
}

void mxh_tune_sched(mxh_sched_t *s, const mxh_tune_in_t *in)
{
    mxh_sched_tuned_t *t = &s->tuned;

    if (in->picks)
        picks(s, in);
    for (int k = 0; k < s->nplans; k++)
        for (int i = 0; i < s->plans[k]->nsteps; i++)
            mxh_tune_step(&s->plans[k]->steps[i], s->tsize, 1);
    /* pacing books a rank's links as if every member moved its even share; bcast and
     * reduce move the region through the root's link and the others' unevenly (the
     * through shape): they stream unpaced (RESULTS.md section 5) */
    int paced = in->pace_links != NULL && !mxh_coll_info(s->coll)->rooted && !s->unpaced;
    t->io_piece = s->frag_bytes / 8 > 64 ? s->frag_bytes / 8 : 64;
    t->pace     = NULL;
    t->times    = NULL;
    if (paced) {
        mxh_cost_link_times(in->pace_links, &t->links[0]);
        t->pace = &t->links[0];
    }
    if (in->times != NULL) {
        mxh_cost_link_times(in->times, &t->links[1]);
        t->times = &t->links[1];
    }
    t->window = stream_window(s, in, paced);
    t->stream = stream_able(s, in) && t->window <= MXH_MAX_STREAM;
    stream_caps(s, in, paced);
    stream_staggers(s, in);
    memset(t->pace_cpu, 0, sizeof(t->pace_cpu));
    if (paced)
        pace_cpu(s, in->pace_links);
}
