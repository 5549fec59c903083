#include "coll/sched.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>

void mxh_sched_destroy(mxh_sched_t *sched)
{
    if (sched == NULL)
        return;
    if (sched->last != sched->plan)
        mxh_plan_destroy(sched->last);
    mxh_plan_destroy(sched->plan);
    free(sched);
}

mxh_status_t mxh_sched_create(const mxh_layout_t *layout, int rank, mxh_coll_t coll,
                              size_t count, int root, size_t tsize, size_t frag_bytes, int depth,
                              mxh_sched_t **sched_p)
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
    s->root       = (coll == MXH_COLL_BCAST || coll == MXH_COLL_REDUCE) ? root : -1;
    s->tsize      = tsize;
    s->frag_bytes = frag_bytes;
    s->depth      = depth;
    s->nranks     = layout->nranks;

    /* fragment size in elements of the count (per block for block collectives) */
    size_t per  = block ? (size_t)layout->nranks : 1;
    size_t fcnt = count;
    if (frag_bytes > 0) {
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
    s->frag_count = fcnt;
    s->nfrag      = (int)((count + fcnt - 1) / fcnt);
    if ((size_t)s->nfrag != (count + fcnt - 1) / fcnt) {
        mxh_error("sched: %zu fragments of %zu elements are too many", (count + fcnt - 1) / fcnt,
                  fcnt);
        st = MXH_ERR_INVALID_PARAM;
        goto err;
    }
    s->last_count = count - (size_t)(s->nfrag - 1) * fcnt;

    st = mxh_plan_create_sized(layout, rank, coll, fcnt, root, tsize, &s->plan);
    if (st != MXH_OK)
        goto err;
    if (s->last_count == fcnt) {
        s->last = s->plan;
    } else {
        st = mxh_plan_create_sized(layout, rank, coll, s->last_count, root, tsize, &s->last);
        if (st != MXH_OK)
            goto err;
    }
    s->nstages = s->plan->nstages;
    s->stretch = depth <= 0 || depth >= s->nstages ? 1 : (s->nstages + depth - 1) / depth;
    s->nrounds = (s->nfrag - 1) * s->stretch + s->nstages;
    s->work_count = count * per;
    s->tmp_slot   = s->plan->tmp_count > s->last->tmp_count ? s->plan->tmp_count
                                                            : s->last->tmp_count;
    /* one fragment: steps run one after another and share one slot */
    s->tmp_count = s->nfrag == 1 ? s->tmp_slot : s->tmp_slot * (size_t)s->nstages;
    *sched_p     = s;
    return MXH_OK;
err:
    mxh_sched_destroy(s);
    return st;
}

size_t mxh_sched_describe(const mxh_sched_t *s, char *buf, size_t len)
{
    int k = snprintf(buf, len,
                     "%s count=%zu x %zu B: %d fragment(s) of %zu (last %zu), %d stages, "
                     "%d rounds (stretch %d)",
                     mxh_coll_name(s->coll), s->count, s->tsize, s->nfrag, s->frag_count,
                     s->last_count, s->nstages, s->nrounds, s->stretch);
    return k > 0 ? (size_t)k : 0;
}
