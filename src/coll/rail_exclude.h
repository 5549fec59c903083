/* Rail exclusion (MPIX_HIER_EXCLUDE_RAILS, mpix_doctor's feedback): the ranks on excluded
 * rails send nothing on the network; their node's share of an allreduce goes over the
 * healthy rails.
 *
 * allreduce of n elements on a layout node (scatter) -> rail [-> spine], h healthy rails
 * of g per node, bandwidth B per rail, p nodes:
 *   1. node:  reduce-scatter with per-rank counts (n/h to each healthy rank, 0 to the
 *             excluded ones): shared memory / intra-node, (g-1)/g x n per rank at most
 *   2. rail:  allreduce of each n/h piece on the healthy ranks' rail communicators (then
 *             the spine's): 2 (p-1)/p x n/h bytes per healthy NIC, so the time on the
 *             network is g/h times the healthy layout's 2 (p-1)/p x n/g / B
 *   3. node:  allgatherv of the pieces
 * Each element is reduced once per level, by one rank, in a fixed order, and then copied:
 * the results are the same on every rank. The decision (mxh_xrail_plan) is a pure function
 * of the layout and the agreed mask; the body (rail_exclude.c) reuses the node's shared
 * segment and the executor's point-to-point allreduce (task-safe waits throughout). */
#ifndef MXH_COLL_RAIL_EXCLUDE_H
#define MXH_COLL_RAIL_EXCLUDE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "decide/levels.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mxh_xrail {
    int      active;      /* the layout takes it and some rank's rail is excluded */
    int      ignored_all; /* every rail excluded: ignored (warned) */
    uint64_t excluded;    /* rails excluded that ranks of this communicator use */
    int      node_level, rail_level, spine_level; /* spine: -1 none */
    int      g;           /* ranks per node */
    int      nhealthy;
    int     *piece;       /* [g] piece of the rank at node coordinate j, -1 excluded */
    int     *rail_at;     /* [g] rail of the rank at node coordinate j (every node alike) */
    int     *counts, *displs; /* [g] scratch of the body */
} mxh_xrail_t;

/* Decide from @layout and @mask (pure). Returns MXH_OK also when not applicable
 * (x->active = 0; *why says why when mask is not 0). */
mxh_status_t mxh_xrail_plan(const mxh_layout_t *layout, uint64_t mask, mxh_xrail_t *x,
                            char *why, size_t whylen);
void mxh_xrail_free(mxh_xrail_t *x);

/* The allreduce (count elements of the basic type @dt of @tsize bytes, op @op) on the
 * hierarchy @h (its level communicators, node shared segment, scratch). @mpi_rc: the MPI
 * error code on failure. */
struct mxh_hier;
mxh_status_t mxh_xrail_allreduce(struct mxh_hier *h, const void *sendbuf, void *recvbuf,
                                 int count, MPI_Datatype dt, size_t tsize, MPI_Op op,
                                 int *mpi_rc);

#ifdef __cplusplus
}
#endif

#endif
