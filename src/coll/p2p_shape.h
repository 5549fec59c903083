/* Shape predicates of a step shared by the point-to-point algorithms (p2p.c) and their
 * choice (p2p_choose.c). */
#ifndef MXH_P2P_SHAPE_H
#define MXH_P2P_SHAPE_H

#include "coll/plan.h"

/* Parts laid out in order without gaps (ranges of parts are contiguous). */
static inline int parts_contiguous(const mxh_step_t *s)
{
    size_t next = 0;
    if (s->counts == NULL)
        return 1;
    for (int x = 0; x < s->gsize; x++) {
        if ((size_t)s->displs[x] != next)
            return 0;
        next += (size_t)s->counts[x];
    }
    return 1;
}


static inline int is_pow2(int p)
{
    return p > 0 && (p & (p - 1)) == 0;
}


/* Steps made of a single exchange with the root (or peer): no algorithm choice. */
static inline int single_exchange(const mxh_step_t *s)
{
    return s->type == MXH_STEP_SCATTER || s->type == MXH_STEP_GATHER ||
           s->type == MXH_STEP_SEND || s->type == MXH_STEP_RECV || s->type == MXH_STEP_SPREAD;
}

/* The largest kary factor now (MXH_P2P_KARY_RADIX, or a test's mxh_p2p_kary_radix). */
int mxh_p2p_kary_most(void);

#endif
