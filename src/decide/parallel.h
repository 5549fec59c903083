/* Decision: parallelism groups (tensor, pipeline, data, ...) placed by the hierarchy.
 * Pure: every rank computes the same groups from the agreed layout. */
#ifndef MXH_PARALLEL_H
#define MXH_PARALLEL_H

#include <stddef.h>

#include "decide/levels.h"
#include "util/config.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MXH_PARALLEL_MAX_DIMS 8

/* What one dimension's groups span: the smallest level that holds each of them. */
typedef enum mxh_parallel_span {
    MXH_SPAN_SELF = 0, /* groups of one rank */
    MXH_SPAN_ISLAND,   /* inside one NVLink island */
    MXH_SPAN_NODE,     /* inside one node */
    MXH_SPAN_LEAF,     /* nodes under one leaf switch */
    MXH_SPAN_SPINE     /* across leaf switches */
} mxh_parallel_span_t;

const char *mxh_parallel_span_name(mxh_parallel_span_t s);

/* The placement of @ndims dimensions of sizes @size (innermost first; on return the one
 * 0, "the rest", is resolved) over layout @L. Ranks are put in topology order (leaf,
 * node in its leaf, NVLink island, rail, GPU, local index); position p has digit
 * (p / (size[0] * ... * size[d-1])) % size[d] in dimension d, and a dimension's group is
 * the positions that differ only there. So the innermost dimension's groups are
 * consecutive ranks of one island or node, the next ones take the same position on
 * neighbouring nodes of one leaf (one rail), the outermost cross the spine.
 * For every d the blocks of size[0] * ... * size[d] consecutive positions must each lie
 * in one island, node or leaf or consist of whole ones: else MXH_ERR_INVALID_PARAM with the reason
 * in @why. @pos[rank] gets the rank's position, @span[d] dimension d's span. */
mxh_status_t mxh_parallel_place(const mxh_layout_t *L, int ndims, int *size, int *pos,
                                mxh_parallel_span_t *span, char *why, size_t whylen);

/* Dimension @d's group of the rank at position @p: a colour (the same for the group's
 * members) and a key (the rank's place in it), for MPI_Comm_split. */
void mxh_parallel_group(const int *size, int d, int p, int *color, int *key);

/* The topology order alone: @pos[rank] = the rank's place in it, the positions
 * mxh_parallel_place numbers (leaf, node in its leaf, node, NVLink island, rail, GPU,
 * local index, rank). Consecutive positions are ranks of one node, then of one leaf:
 * MPIX_Hier_comm_reorder's new ranks. */
mxh_status_t mxh_parallel_order(const mxh_layout_t *L, int *pos);

/* The smallest level that holds the @n ranks @members of @L (for any set of ranks, e.g.
 * groups taken in another order than the placement's). */
mxh_parallel_span_t mxh_parallel_span_of(const mxh_layout_t *L, const int *members, int n);

#define MXH_PARALLEL_WHY 128

/* What the cost model (decide/cost.h) predicts for dimension @d's groups of ranks at
 * positions @pos (the placement's, or any other numbering: group members as
 * mxh_parallel_group puts them). Each group is modelled alone on the layout of its
 * members' records @recs (their rails kept), with @cfg's figures: the other groups of
 * the dimension run at the same time on other GPUs and, one rail per GPU, other NICs. */
typedef struct mxh_parallel_cost {
    mxh_parallel_span_t span;     /* the widest group's */
    double t[2];                  /* seconds of an allreduce [0] and an all-gather [1] of
                                     the bytes on one group, the slowest group's (a step
                                     waits for them all); -1 not modelled */
    char   why[MXH_PARALLEL_WHY]; /* why a time is -1 */
} mxh_parallel_cost_t;

/* @bytes: the whole vector (an all-gather's result), of @tsize-byte elements. */
mxh_status_t mxh_parallel_cost(const mxh_config_t *cfg, const mxh_record_t *recs,
                               const mxh_layout_t *L, const int *size, int d, const int *pos,
                               size_t bytes, size_t tsize, mxh_parallel_cost_t *c);

#ifdef __cplusplus
}
#endif

#endif
