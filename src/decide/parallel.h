/* Decision: parallelism groups (tensor, pipeline, data, ...) placed by the hierarchy.
 * Pure: every rank computes the same groups from the agreed layout. */
#ifndef MXH_PARALLEL_H
#define MXH_PARALLEL_H

#include <stddef.h>

#include "decide/levels.h"
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

#ifdef __cplusplus
}
#endif

#endif
