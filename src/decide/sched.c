#include "decide/sched.h"
#include "util/log.h"
#include "util/config.h"

#include <stdio.h>
#include <stdlib.h>

void mxh_sched_set_kary(mxh_sched_t *s)
{
    s->kary = 1;
    for (int i = 0; i < s->nplans; i++)
        for (int j = 0; j < s->plans[i]->nsteps; j++)
            s->plans[i]->steps[j].kary = s->plans[i]->steps[j].net;
}

void mxh_sched_set_rsag(mxh_sched_t *s)
{
    s->rsag = 1;
    for (int i = 0; i < s->nplans; i++)
        for (int j = 0; j < s->plans[i]->nsteps; j++)
            s->plans[i]->steps[j].rsag = s->plans[i]->steps[j].net;
}

void mxh_sched_destroy(mxh_sched_t *sched)
{
    if (sched == NULL)
        return;
    for (int i = 0; i < sched->nplans; i++)
        mxh_plan_destroy(sched->plans[i]);
    free(sched->frag_plan);
    free(sched->frag_start);
    free(sched->vpiece);
    free(sched->vfrag_off);
    free(sched);
}

/* Halvings of the ramp cut from a fragment of @fcnt elements (@piece_bytes per
 * element of the count): at most @ramp, pieces of at least MXH_SCHED_MIN_PIECE. */
static int ramp_depth(int ramp, size_t fcnt, size_t piece_bytes)
{
    int k = ramp < MXH_SCHED_MAX_RAMP ? ramp : MXH_SCHED_MAX_RAMP;
    while (k > 0 && ((fcnt >> k) == 0 || (fcnt >> k) * piece_bytes < MXH_SCHED_MIN_PIECE))
        k--;
    return k;
}

/* The k + 1 pieces of a ramp over @fcnt elements, smallest first: fcnt >> k twice,
 * then fcnt >> (k - 1), ..., and the rest (about fcnt / 2) last. */
static void ramp_pieces(size_t fcnt, int k, size_t *piece)
{
    size_t used = 0;
    for (int j = 0; j < k; j++) {
        piece[j] = fcnt >> (j == 0 ? k : k - j + 1);
        used += piece[j];
    }
    piece[k] = fcnt - used;
}

_Static_assert(MXH_SCHED_LINEAR_STEPS + 1 <= MXH_SCHED_MAX_PLANS, "plans of a linear ramp");
_Static_assert(MXH_SCHED_RAMP_LINEAR == MXH_RAMP_LINEAR && MXH_SCHED_RAMP_AUTO == MXH_RAMP_AUTO,
               "MPIX_HIER_PIPELINE_RAMP's values");

/* Steps of a linear ramp over fragments of @fcnt elements (@piece_bytes each) in a
 * message of @count: @steps (mxh_sched_linear_steps), fewer where the message does not
 * hold both ends and a full fragment between them (count >= fcnt * steps) or the
 * smallest piece would be under MXH_SCHED_MIN_PIECE; below 2 none. */
static int linear_steps(size_t count, size_t fcnt, size_t piece_bytes, int steps)
{
    int m = steps;
    while (m >= 2 && (count / fcnt < (size_t)m || fcnt / (size_t)m * piece_bytes < MXH_SCHED_MIN_PIECE))
        m--;
    return m < 2 ? 0 : m;
}

/* sizes[n++] = v where it fits; returns n + 1 */
static size_t put(size_t *sizes, size_t max, size_t n, size_t v)
{
    if (sizes != NULL && n < max)
        sizes[n] = v;
    return n + 1;
}

size_t mxh_sched_cut(mxh_coll_t coll, size_t count, size_t tsize, size_t per, size_t frag_bytes,
                     int ramp, size_t *sizes, size_t max)
{
    size_t n = 0;
    if (count == 0 || tsize == 0)
        return 0;
    size_t fcnt = mxh_sched_frag_elems(count, tsize, per, frag_bytes);
    size_t nuni = (count + fcnt - 1) / fcnt, last = count - (nuni - 1) * fcnt;
    int big     = nuni >= 2 && frag_bytes >= MXH_SCHED_BIG_FRAG;
    ramp = mxh_sched_ramp_run(ramp);
    if (big && ramp == MXH_SCHED_RAMP_LINEAR) {
        int m = linear_steps(count, fcnt, tsize * per, mxh_sched_linear_steps(coll));
        if (m > 0) {
            /* j fcnt / m for j = 1 .. m - 1 at the start, the same reversed at the end
             * (not for bcast), full fragments between them (the remainder last) */
            int mt = mxh_sched_tail_ramp(coll, 1) ? m : 1;
            size_t mid = count;
            for (int j = 1; j < m; j++)
                mid -= fcnt * (size_t)j / (size_t)m;
            for (int j = 1; j < mt; j++)
                mid -= fcnt * (size_t)j / (size_t)m;
            for (int j = 1; j < m; j++)
                n = put(sizes, max, n, fcnt * (size_t)j / (size_t)m);
            for (; mid > 0; mid -= mid < fcnt ? mid : fcnt)
                n = put(sizes, max, n, mid < fcnt ? mid : fcnt);
            for (int j = mt - 1; j >= 1; j--)
                n = put(sizes, max, n, fcnt * (size_t)j / (size_t)m);
            return n;
        }
        ramp = 2; /* too short for it: halvings */
    }
    size_t head[MXH_SCHED_MAX_RAMP + 1], tail[MXH_SCHED_MAX_RAMP + 1];
    int kh = 0, kt = 0;
    if (big && ramp > 0) {
        kh = ramp_depth(ramp, fcnt, tsize * per);
        kt = ramp_depth(mxh_sched_tail_ramp(coll, ramp), last, tsize * per);
    }
    ramp_pieces(fcnt, kh, head);
    ramp_pieces(last, kt, tail);
    /* without a ramp head[0] / tail[0] is the whole unit; the tail's pieces in reverse */
    for (size_t u = 0; u < nuni; u++) {
        int np = u == 0 ? kh + 1 : u == nuni - 1 ? kt + 1 : 1;
        for (int j = 0; j < np; j++)
            n = put(sizes, max, n, u == 0 ? head[j] : u == nuni - 1 ? tail[kt - j] : fcnt);
    }
    return n;
}

size_t mxh_sched_frag_elems(size_t count, size_t tsize, size_t per, size_t frag_bytes)
{
    size_t fcnt = count;
    if (frag_bytes > 0 && count > 0) {
        fcnt = frag_bytes / (tsize * per);
        if (fcnt == 0)
            fcnt = 1;
        if (fcnt > count)
            fcnt = count;
        /* realistic fragment sizes are a minimum: at most MXH_SCHED_MAX_FRAGS fragments
         * (each fragment costs a few latencies; the fill and drain of the pipeline grow
         * with the fragment) */
        if (frag_bytes >= MXH_SCHED_BIG_FRAG && count / fcnt >= MXH_SCHED_MAX_FRAGS)
            fcnt = (count + MXH_SCHED_MAX_FRAGS - 1) / MXH_SCHED_MAX_FRAGS;
    }
    return fcnt;
}

/* The plan of fragments of @fcnt elements, shared by every fragment of that size. */
static mxh_status_t plan_for(mxh_sched_t *s, const mxh_layout_t *layout, int rank, size_t fcnt,
                             const mxh_plan_t **plan_p)
{
    for (int i = 0; i < s->nplans; i++)
        if (s->plans[i]->count == fcnt) {
            *plan_p = s->plans[i];
            return MXH_OK;
        }
    if (s->nplans == MXH_SCHED_MAX_PLANS) {
        mxh_error("sched: more than %d fragment sizes", MXH_SCHED_MAX_PLANS);
        return MXH_ERR_INVALID_PARAM;
    }
    mxh_status_t st = mxh_plan_create_flags(layout, rank, s->coll, fcnt, s->root, s->tsize,
                                            s->plan_flags, &s->plans[s->nplans]);
    if (st != MXH_OK)
        return st;
    *plan_p = s->plans[s->nplans++];
    return MXH_OK;
}

mxh_status_t mxh_sched_create(const mxh_layout_t *layout, int rank, mxh_coll_t coll,
                              size_t count, int root, size_t tsize, size_t frag_bytes, int depth,
                              int ramp, mxh_sched_t **sched_p)
{
    mxh_sched_t *s;
    mxh_status_t st;
    int block = coll == MXH_COLL_REDUCE_SCATTER_BLOCK || coll == MXH_COLL_ALLGATHER;

    if (layout == NULL || tsize == 0 || count == 0) {
        mxh_error("sched: invalid request (count %zu, element size %zu)", count, tsize);
        return MXH_ERR_INVALID_PARAM;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return MXH_ERR_NO_MEMORY;
    s->coll       = coll;
    s->count      = count;
    s->root       = mxh_coll_info(coll)->rooted ? root : -1;
    s->tsize      = tsize;
    s->frag_bytes = frag_bytes;
    s->depth      = depth;
    s->ramp       = ramp;
    s->nranks     = layout->nranks;

    /* fragment size in elements of the count (per block for block collectives) */
    size_t per  = block ? (size_t)layout->nranks : 1;
    size_t fcnt = mxh_sched_frag_elems(count, tsize, per, frag_bytes);
    size_t nuni = (count + fcnt - 1) / fcnt;
    if (nuni > (size_t)1 << 24) {
        mxh_error("sched: %zu fragments of %zu elements are too many", nuni, fcnt);
        st = MXH_ERR_INVALID_PARAM;
        goto err;
    }
    s->frag_count = fcnt;
    if (nuni >= MXH_SCHED_THROUGH_FRAGS)
        s->plan_flags = MXH_PLAN_THROUGH;

    /* the fragments' sizes: uniform, the ramps cut at the ends (mxh_sched_cut) */
    size_t nf = mxh_sched_cut(coll, count, tsize, per, frag_bytes, ramp, NULL, 0);
    s->nfrag      = (int)nf;
    s->frag_start = malloc((nf + 1) * sizeof(*s->frag_start));
    s->frag_plan  = malloc(nf * sizeof(*s->frag_plan));
    if (s->frag_start == NULL || s->frag_plan == NULL) {
        st = MXH_ERR_NO_MEMORY;
        goto err;
    }
    /* the sizes go to frag_start[1..nf], then become offsets */
    mxh_sched_cut(coll, count, tsize, per, frag_bytes, ramp, s->frag_start + 1, nf);
    s->frag_start[0] = 0;
    for (size_t f = 1; f <= nf; f++)
        s->frag_start[f] += s->frag_start[f - 1];
    s->last_count = s->frag_start[nf] - s->frag_start[nf - 1];

    /* plans[0]: the full fragment */
    st = plan_for(s, layout, rank, fcnt, &s->frag_plan[0]);
    if (st != MXH_OK)
        goto err;
    s->plan = s->plans[0];
    for (int f = 0; f < s->nfrag; f++) {
        st = plan_for(s, layout, rank, mxh_sched_frag_count(s, f), &s->frag_plan[f]);
        if (st != MXH_OK)
            goto err;
    }
    s->nstages = s->plan->nstages;
    s->stretch = depth <= 0 || depth >= s->nstages ? 1 : (s->nstages + depth - 1) / depth;
    s->nrounds = (s->nfrag - 1) * s->stretch + s->nstages;
    s->work_count = count * per;
    s->tmp_slot   = 0;
    for (int i = 0; i < s->nplans; i++)
        if (s->plans[i]->tmp_count > s->tmp_slot)
            s->tmp_slot = s->plans[i]->tmp_count;
    /* one fragment: steps run one after another and share one slot */
    s->tmp_count = s->nfrag == 1 ? s->tmp_slot : s->tmp_slot * (size_t)s->nstages;
    *sched_p     = s;
    return MXH_OK;
err:
    mxh_sched_destroy(s);
    return st;
}

int mxh_sched_v_frags(const size_t *bcounts, int n, size_t tsize, size_t frag_bytes)
{
    size_t total = 0, k;
    for (int r = 0; r < n; r++)
        total += bcounts[r];
    if (frag_bytes == 0 || tsize == 0)
        return 1;
    k = total * tsize / frag_bytes;
    if (frag_bytes >= MXH_SCHED_BIG_FRAG && k > MXH_SCHED_MAX_FRAGS)
        k = MXH_SCHED_MAX_FRAGS;
    if (k > (size_t)1 << 16)
        k = (size_t)1 << 16;
    for (int r = 0; r < n && k > 1; r++)
        while (k > 1 && bcounts[r] > 0 && bcounts[r] < k * (k - 1))
            k--;
    return k < 1 ? 1 : (int)k;
}

mxh_status_t mxh_sched_create_v(const mxh_layout_t *layout, int rank, mxh_coll_t coll,
                                const size_t *bcounts, size_t tsize, int nfrag, int depth,
                                mxh_sched_t **sched_p)
{
    int n = layout->nranks;
    size_t full = 0, total = 0;
    mxh_status_t st = MXH_OK;
    mxh_sched_t *s  = calloc(1, sizeof(*s));

    if (s == NULL)
        return MXH_ERR_NO_MEMORY;
    if (nfrag < 1)
        nfrag = 1;
    s->coll      = coll;
    s->root      = -1;
    s->tsize     = tsize;
    s->depth     = depth;
    s->nfrag     = nfrag;
    s->nranks    = n;
    s->vpiece    = malloc(2 * (size_t)n * sizeof(size_t));
    s->vfrag_off = malloc(((size_t)nfrag + 1) * sizeof(size_t));
    s->frag_start = calloc((size_t)nfrag + 1, sizeof(size_t));
    s->frag_plan = malloc((size_t)nfrag * sizeof(*s->frag_plan));
    if (s->vpiece == NULL || s->vfrag_off == NULL || s->frag_start == NULL ||
        s->frag_plan == NULL) {
        st = MXH_ERR_NO_MEMORY;
        goto err;
    }
    for (int r = 0; r < n; r++) {
        size_t q = (bcounts[r] + (size_t)nfrag - 1) / (size_t)nfrag;
        s->vpiece[r]     = q;
        s->vpiece[n + r] = bcounts[r] - q * (size_t)(nfrag - 1);
        full += q;
        total += bcounts[r];
    }
    for (int f = 0; f <= nfrag; f++)
        s->vfrag_off[f] = f < nfrag ? (size_t)f * full : total;
    st = mxh_plan_create_v(layout, rank, coll, nfrag > 1 ? s->vpiece : bcounts, &s->plans[0]);
    if (st != MXH_OK)
        goto err;
    s->nplans = 1;
    if (nfrag > 1) {
        st = mxh_plan_create_v(layout, rank, coll, s->vpiece + n, &s->plans[1]);
        if (st != MXH_OK)
            goto err;
        s->nplans = 2;
    }
    s->plan = s->plans[0];
    for (int f = 0; f < nfrag; f++)
        s->frag_plan[f] = f < nfrag - 1 ? s->plans[0] : s->plans[s->nplans - 1];
    s->count      = total;
    s->frag_count = full;
    s->last_count = total - full * (size_t)(nfrag - 1);
    s->nstages    = s->plan->nstages;
    s->stretch    = depth <= 0 || depth >= s->nstages ? 1 : (s->nstages + depth - 1) / depth;
    s->nrounds    = (nfrag - 1) * s->stretch + s->nstages;
    s->work_count = total;
    for (int i = 0; i < s->nplans; i++)
        if (s->plans[i]->tmp_count > s->tmp_slot)
            s->tmp_slot = s->plans[i]->tmp_count;
    s->tmp_count = nfrag == 1 ? s->tmp_slot : s->tmp_slot * (size_t)s->nstages;
    *sched_p     = s;
    return MXH_OK;
err:
    mxh_sched_destroy(s);
    return st;
}

size_t mxh_sched_describe(const mxh_sched_t *s, char *buf, size_t len)
{
    int k = snprintf(buf, len,
                     "%s count=%zu x %zu B: %d fragment(s) of %zu (first %zu, last %zu), "
                     "%d stages, %d rounds (stretch %d)%s%s",
                     mxh_coll_name(s->coll), s->count, s->tsize, s->nfrag, s->frag_count,
                     mxh_sched_frag_count(s, 0), mxh_sched_frag_count(s, s->nfrag - 1),
                     s->nstages, s->nrounds, s->stretch, s->kary ? ", kary on long rails" : "",
                     s->rsag ? ", small network allreduces reduce-scatter + allgather" : "");
    return k > 0 ? (size_t)k : 0;
}
