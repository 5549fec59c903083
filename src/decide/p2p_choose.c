/* The point-to-point algorithms' applicability and the choice among them by the
 * step's shape (p2p_choose.h). Pure (no MPI calls): the tuning pass (tune.c) and the cost model
 * (cost.c) ask it as the algorithms do. */
#include "decide/p2p_choose.h"

const char *mxh_p2p_algo_name(mxh_p2p_algo_t algo)
{
    static const char *const names[] = {"ring", "rhd", "direct", "radix", "kary", "flat"};
    return algo <= MXH_P2P_FLAT ? names[algo] : "?";
}

/* p = fac[0] * fac[1] * ..., every factor in [2, @most], largest first; 0 if
 * impossible. */
static int factors(int p, int most, int *fac)
{
    int n = 0;
    while (p > 1) {
        int f = most;
        while (f > 1 && p % f != 0)
            f--;
        if (f < 2)
            return 0;
        fac[n++] = f;
        p /= f;
    }
    return n;
}

int mxh_p2p_factors(int p, int most, int *fac)
{
    return factors(p, most, fac);
}

static int kary_radix = MXH_P2P_KARY_RADIX;

void mxh_p2p_kary_radix(int most)
{
    kary_radix = most >= 2 && most <= MXH_P2P_KARY_RADIX ? most : MXH_P2P_KARY_RADIX;
}

int mxh_p2p_kary_most(void)
{
    return kary_radix;
}

static int radix_factors(int p, int *fac)
{
    return factors(p, MXH_P2P_RADIX, fac);
}


/* kary: reduce-scatter and allgather steps over parts laid out in order, two
 * factors or more */
static int kary_able(const mxh_step_t *s)
{
    int fac[32];
    return (s->type == MXH_STEP_REDUCE_SCATTER || s->type == MXH_STEP_ALLGATHER ||
            s->type == MXH_STEP_ALLREDUCE) &&
           parts_contiguous(s) && factors(s->gsize, kary_radix, fac) >= 2;
}

/* ---- choice -------------------------------------------------------------------- */

/* A bcast or reduce step of the scatter shape small enough for one flat exchange
 * (p2p.h: flat); the same on every member (the region and group are). Along a torus
 * ring too: the farthest member is p / 2 hops away, MPI's tree pays log2 p exchanges
 * of up to that many. */
static int flat_step(const mxh_step_t *s, size_t ext)
{
    return (s->type == MXH_STEP_BCAST || s->type == MXH_STEP_REDUCE) && !s->rootless &&
           s->counts == NULL && s->gsize > 1 &&
           s->gsize <= MXH_P2P_FLAT_P &&
           (size_t)(s->gsize - 1) * s->count * ext <= MXH_P2P_FLAT_BYTES;
}

/* A bcast or reduce step on a network level (not a torus ring) of 4 to
 * MXH_P2P_DIRECT_P ranks: point to point at every size, flat or direct (one or two
 * latencies, where MPI's trees pay log2 p and its large reduce 2 log2 p). */
static int net_rooted(const mxh_step_t *s)
{
    return s->net && !s->ring && s->gsize >= 4 && s->gsize <= MXH_P2P_DIRECT_P;
}

int mxh_p2p_usable(const mxh_step_t *s, size_t ext)
{
    switch (s->type) {
    case MXH_STEP_REDUCE_SCATTER:
    case MXH_STEP_ALLGATHER:
    case MXH_STEP_ALLREDUCE:
    case MXH_STEP_SCATTER:
    case MXH_STEP_GATHER:
        return s->gsize > 1;
    case MXH_STEP_BCAST:
    case MXH_STEP_REDUCE:
        /* a pipeline's rootless step on the network has the point-to-point shape at
         * every size (its small last fragments too): the network steps of the device
         * path run point to point only */
        return s->gsize > 1 && (s->count >= MXH_P2P_TREE_COUNT || flat_step(s, ext) ||
                                net_rooted(s) || (s->rootless && s->net && !s->ring &&
                                                  s->gsize <= MXH_P2P_DIRECT_P));
    case MXH_STEP_SEND:
    case MXH_STEP_RECV:
        return 1;
    case MXH_STEP_SPREAD:
        return s->gsize > 1;
    }
    return 0;
}

static int forced = -1;

void mxh_p2p_force(int algo)
{
    forced = algo;
}

mxh_p2p_algo_t mxh_p2p_choose(const mxh_step_t *s, size_t ext)
{
    int fac[32], p = s->gsize;
    size_t bytes = s->count * ext;

    if (flat_step(s, ext))
        return MXH_P2P_FLAT;
    /* the allreduce after a spread exchange reduces in class order: radix, one digit */
    if (s->ports && s->type == MXH_STEP_ALLREDUCE)
        return MXH_P2P_RADIX_AR;
    switch (single_exchange(s) ? -1 : forced) {
    case MXH_P2P_RING:
        return MXH_P2P_RING;
    case MXH_P2P_RHD:
        if (is_pow2(p) && parts_contiguous(s))
            return MXH_P2P_RHD;
        break;
    case MXH_P2P_DIRECT:
        if (p <= MXH_P2P_DIRECT_P)
            return MXH_P2P_DIRECT;
        break;
    case MXH_P2P_RADIX_AR:
        if (s->type == MXH_STEP_ALLREDUCE && radix_factors(p, fac) > 0)
            return MXH_P2P_RADIX_AR;
        break;
    case MXH_P2P_KARY:
        if (kary_able(s))
            return MXH_P2P_KARY;
        break;
    default:
        break;
    }

    if (single_exchange(s))
        return MXH_P2P_DIRECT;
    /* along a torus dimension (ring order = torus order): a ring sends every byte to the
     * next node over one link, where direct exchanges would cross 2 or more hops for
     * distant peers and load the links unevenly (ties routed one way) */
    if (s->ring && p > 2 && bytes > MXH_P2P_SMALL && s->type != MXH_STEP_BCAST &&
        s->type != MXH_STEP_REDUCE)
        return MXH_P2P_RING;
    /* across the network (a rail, the spine) every message pays microseconds of
     * latency: direct pays one per phase where rhd pays log2 p in sequence, with
     * the same bytes through the same NIC */
    int net_direct = s->net && p <= MXH_P2P_DIRECT_P;
    /* long network groups (rails under one leaf at 1024 GPUs) of schedules the cost
     * model lets (step.kary): kary's 2 exchanges of up to 7 messages where direct keeps
     * 62 requests per fragment in flight */
    if (s->kary && s->net && p > MXH_P2P_KARY_P && bytes > MXH_P2P_SMALL && kary_able(s))
        return MXH_P2P_KARY;
    if (s->type == MXH_STEP_BCAST || s->type == MXH_STEP_REDUCE) {
        if (p <= MXH_P2P_DIRECT_ANY || net_direct)
            return MXH_P2P_DIRECT;
        return is_pow2(p) ? MXH_P2P_RHD : MXH_P2P_RING;
    }
    if (s->type == MXH_STEP_ALLREDUCE) {
        /* radix sends the whole region to every peer of a factor in one latency;
         * in a pipeline whose NIC binds (step.rsag, the cost model's pick) the
         * reduce-scatter + allgather's 2 (p - 1) / p of it is worth the second one */
        if (bytes <= MXH_P2P_SMALL && radix_factors(p, fac) > 0 && !(s->rsag && s->net))
            return MXH_P2P_RADIX_AR;
        if ((bytes <= MXH_P2P_SMALL && p <= MXH_P2P_DIRECT_P) || net_direct ||
            p <= MXH_P2P_DIRECT_ANY)
            return MXH_P2P_DIRECT;
        return is_pow2(p) ? MXH_P2P_RHD : MXH_P2P_RING;
    }
    if ((bytes <= MXH_P2P_SMALL && p <= MXH_P2P_DIRECT_P) || net_direct ||
        p <= MXH_P2P_DIRECT_ANY)
        return MXH_P2P_DIRECT;
    return is_pow2(p) && parts_contiguous(s) ? MXH_P2P_RHD : MXH_P2P_RING;
}


/* The algorithm the tuning pass stamped into @s, or for a step built by hand the
 * choice by its shape */
mxh_p2p_algo_t mxh_p2p_step_algo(const mxh_step_t *s, size_t ext)
{
    return s->algo > 0 ? (mxh_p2p_algo_t)(s->algo - 1) : mxh_p2p_choose(s, ext);
}


int mxh_p2p_kary_exchanges(const mxh_step_t *s, size_t ext)
{
    int fac[32];
    if (!s->kary || mxh_p2p_step_algo(s, ext) != MXH_P2P_KARY)
        return 0;
    return factors(s->gsize, kary_radix, fac);
}

