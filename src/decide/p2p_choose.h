/* Point-to-point algorithms of one step: which exist, when each applies and the
 * pure choice among them by the step's shape (no MPI calls). The tuning pass
 * (tune.c) stamps the choice into step.algo, the cost model (cost.c) prices it,
 * exec/p2p.c runs it.
 *
 * Steps: reduce-scatter, allgather, allreduce; bcast = scatter from the root +
 * allgather, reduce = reduce-scatter + gather to the root, with direct exchanges
 * over the p - 1 non-roots only; scatter, gather, send, receive.
 *
 *   ring    2(p-1) neighbour exchanges, bandwidth-optimal for any p; levels along a
 *           torus dimension (step.ring, groups of 3 or more) above MXH_P2P_SMALL, where
 *           every message then crosses one link
 *   rhd     recursive halving / doubling: 2 log2 p exchanges, bandwidth-optimal,
 *           p a power of two. Allreduce halves over the nearest partners first
 *           (the big transfers stay under one leaf switch); reduce-scatter and
 *           allgather keep rank order (my block ends at displs[me]).
 *   direct  every part straight to its owner (reduce-scatter) and to everybody
 *           (allgather): one exchange per phase, the same bytes as ring and rhd;
 *           small messages; network levels (step.net: a rail, the spine) of up to
 *           MXH_P2P_DIRECT_P ranks at every size (one latency per phase instead of
 *           log2 p); groups of up to MXH_P2P_DIRECT_ANY ranks (an NVSwitch node)
 *           at every size: one exchange and one fused reduction per fragment where
 *           rhd runs three exchanges with a reduction after each (faster than rhd
 *           in simulated 8-GPU NVSwitch nodes)
 *   kary    reduce-scatter / allgather in log_f p exchanges of up to f - 1 messages
 *           (recursive multiplying, radix f <= MXH_P2P_KARY_RADIX): p = f0 * f1 * ...;
 *           in exchange i every rank sends each of the f_i - 1 ranks that differ from it
 *           only in digit i that rank's share of the range both hold, and keeps its
 *           own (allgather: the reverse). The same bytes as direct, one more latency
 *           per factor, (p - 1) / (f0 + f1 + ... - nf) times fewer messages: network
 *           levels of more than MXH_P2P_KARY_P ranks (rails under a leaf at 1024 GPUs)
 *           in schedules where the cost model predicts it no slower (step.kary), where
 *           direct keeps 2(p - 1) requests of every fragment in flight on every rank
 *           (RESULTS.md section 5, "Fewer messages on long rails").
 *   flat    small bcast and reduce steps of up to MXH_P2P_FLAT_P ranks (not a
 *           pipeline's rootless ones): the root sends the whole region to
 *           every other member (reduce: receives every member's and reduces them,
 *           its own first, then the others' in rank order): one latency where MPI's
 *           binomial tree pays log2 p in sequence, (p - 1) copies of the region
 *           through the root's NIC, at most MXH_P2P_FLAT_BYTES
 *   radix   small allreduce: the group is factored p = f1 * f2 * ... (each at most
 *           MXH_P2P_RADIX); in step i every rank exchanges its whole vector with
 *           the f_i - 1 ranks that differ from it only in digit i and reduces the
 *           f_i vectors in digit order. log_f p exchanges. */
#ifndef MXH_P2P_CHOOSE_H
#define MXH_P2P_CHOOSE_H

#include <stddef.h>

#include "decide/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MXH_P2P_SMALL     (32u << 10) /* region bytes up to which direct/radix are used */
#define MXH_P2P_DIRECT_P  64          /* largest group for direct exchanges */
#define MXH_P2P_DIRECT_ANY 8          /* groups up to this size: direct at every size */
#define MXH_P2P_RADIX     32          /* largest radix factor */
#define MXH_P2P_KARY_P    16          /* network groups larger than this: kary */
#define MXH_P2P_KARY_RADIX 8          /* largest kary factor */
#define MXH_P2P_TREE_COUNT 16384      /* bcast/reduce steps of fewer elements go to MPI
                                         (its trees: log p latencies), except on
                                         network levels of 4 ranks or more */
/* Flat bcast/reduce steps: groups of up to this many ranks (each root posts p - 1
 * messages, each far cheaper on a real NIC than the latency per level of the tree it
 * replaces) ... */
#define MXH_P2P_FLAT_P    32
/* ... whose p - 1 copies of the region are at most this many bytes (through the
 * root's NIC they take less time than a network latency the tree would add).
 * RESULTS.md section 5, "Small bcast and reduce: one exchange per level". */
#define MXH_P2P_FLAT_BYTES (64u << 10)

typedef enum mxh_p2p_algo {
    MXH_P2P_RING = 0,
    MXH_P2P_RHD,
    MXH_P2P_DIRECT,
    MXH_P2P_RADIX_AR,
    MXH_P2P_KARY,
    MXH_P2P_FLAT
} mxh_p2p_algo_t;

/* Steps the point-to-point algorithms can run: reduce-scatter, allgather,
 * allreduce, scatter and gather on a group of more than one rank; send and
 * receive; bcast (scatter from the root + allgather) and reduce (reduce-scatter
 * + gather to the root) of at least MXH_P2P_TREE_COUNT elements, on network levels
 * of 4 to MXH_P2P_DIRECT_P ranks (not torus rings) at every size, a pipeline's rootless
 * ones on the network (not torus rings) at every size, and flat ones (@ext:
 * the element size, which their limit counts in bytes). */
int mxh_p2p_usable(const mxh_step_t *s, size_t ext);

/* The algorithm for step @s with @ext-byte elements (a pure function of the
 * step: identical on every member of the group). */
mxh_p2p_algo_t mxh_p2p_choose(const mxh_step_t *s, size_t ext);
/* The algorithm the tuning pass stamped into @s (step.algo), or for a step built by
 * hand mxh_p2p_choose's. */
mxh_p2p_algo_t mxh_p2p_step_algo(const mxh_step_t *s, size_t ext);
const char *mxh_p2p_algo_name(mxh_p2p_algo_t algo);
/* p = fac[0] x fac[1] x ..., every factor in [2, @most], largest first: how many (0:
 * impossible). The radix and kary algorithms' factorisation. */
int mxh_p2p_factors(int p, int most, int *fac);

/* Tests: force an algorithm wherever it applies (-1: the normal choice). Must be
 * the same on every rank. */
void mxh_p2p_force(int algo);
/* Tests: the largest kary factor (2 .. MXH_P2P_KARY_RADIX; else MXH_P2P_KARY_RADIX), so
 * that small groups run it in several exchanges. */
void mxh_p2p_kary_radix(int most);

/* Exchanges per phase of step @s with @ext-byte elements where it runs kary (its
 * factors), else 0. */
int mxh_p2p_kary_exchanges(const mxh_step_t *s, size_t ext);

/* The largest kary factor now (MXH_P2P_KARY_RADIX, or a test's mxh_p2p_kary_radix). */
int mxh_p2p_kary_most(void);

/* Shape predicates of a step shared by the algorithms and their choice. */
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

#ifdef __cplusplus
}
#endif

#endif
