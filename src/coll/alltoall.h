/* The hierarchical (rail-aligned) alltoall / alltoallv, as MoE dispatch and
 * NCCL's PXN do it: every byte crosses the network once, on the rail of its
 * destination, in one message per node pair and rail.
 *
 * Rank (n, j) = node n, slot j (its position among its node's ranks ordered by
 * rail, then local index; the same slot is the same rail on every node when
 * the nodes have the same rails).
 *   phase 1 (inside the node): (n, i) hands (n, j) its blocks for every
 *           (m, j); the blocks for (n, j) itself are final there.
 *   phase 2 (along rail j): (n, j) sends (m, j) the blocks of all (n, i) for
 *           (m, j), one message, as soon as phase 1 delivered them.
 * Alltoallv first exchanges the block sizes inside the node (one small
 * alltoall of nnodes counts per pair); the uniform form skips it.
 *
 * Everything is in bytes on host buffers: the caller (coll.c) turns counts of
 * elements into bytes and stages device buffers. Messages are MPI_BYTE; one
 * larger than INT_MAX bytes travels in several pieces, so there is no size
 * limit. The body uses only nonblocking MPI and the task wait primitives: it
 * runs inside a task or on the caller's stack alike.
 *
 * Use from the collective layer: the path decision must be the same on every
 * rank, so it may rest on the layout (mxh_alltoall_applicable), the types
 * (contiguous, extent == size) and, for alltoall, the bytes per pair; never on
 * one rank's alltoallv counts. mxh_alltoall_setup runs with the hierarchy
 * build (hier.c: a nonblocking post must not block in MPI_Comm_split while
 * other ranks wait on this one's progress elsewhere); then, in
 * the body mxh_alltoall_hier / mxh_alltoallv_hier(_elems) on host buffers or
 * host mirrors (MPI_IN_PLACE: sbuf / scounts NULL). */
#ifndef MXH_COLL_ALLTOALL_H
#define MXH_COLL_ALLTOALL_H

#include <stddef.h>

#include "coll/hier.h"
#include "decide/levels.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most nodes: phase-1 tags name the destination node, and MPI guarantees tags
 * up to 32767. */
#define MXH_ALLTOALL_MAX_NODES 32767

/* The hierarchical alltoall applies to @L (pure: every rank computes the same
 * answer): at least 2 nodes (at most MXH_ALLTOALL_MAX_NODES), every
 * node the same number >= 2 of ranks. */
int mxh_alltoall_applicable(const mxh_layout_t *L);

/* Slot of every rank of @L (@slot: [L->nranks]): its position among the ranks
 * of its node ordered by (rail, local index). Pure; MXH_ERR_NO_MEMORY (not
 * logged) or MXH_OK. */
mxh_status_t mxh_alltoall_slots(const mxh_layout_t *L, int *slot);

/* Collective over the hierarchy's communicator, outside any task: creates the
 * node communicator (my node, ordered by slot) and the cross communicator (my
 * slot on every node, ordered by node) once and caches them in @h (freed with
 * the hierarchy). Completes the collectives still queued on the communicator
 * first (the splits must come in the same order on every rank). Idempotent.
 * MXH_ERR_UNSUPPORTED when the layout is not applicable. */
mxh_status_t mxh_alltoall_setup(mxh_hier_t *h);
/* mxh_alltoall_setup succeeded on @h. */
int mxh_alltoall_ready(const mxh_hier_t *h);

/* Alltoallv of host buffers, after mxh_alltoall_setup; collective over h->comm.
 * Byte counts and displacements per peer (h->size entries each, in rank order
 * of h->comm, which is the user's communicator's): this rank sends scounts[p]
 * bytes at sbuf + sdispls[p] to p and receives rcounts[p] bytes from p at
 * rbuf + rdispls[p]; as in MPI, what p sends to this rank must be exactly what
 * this rank expects from p. @scounts NULL: in place (the data for p is taken
 * from rbuf at rdispls[p], rcounts[p] bytes, and replaced; sbuf and sdispls
 * are ignored). Zero counts and counts of any size are allowed. Runs inside a
 * task or on the caller's stack (nonblocking MPI + mxh_task_wait*). Scratch:
 * the hierarchy's own grow buffers of this algorithm (one collective per
 * communicator at a time). MXH_ERR_MPI (logged) when an MPI call fails. */
mxh_status_t mxh_alltoallv_hier(mxh_hier_t *h, const char *sbuf, const size_t *scounts,
                                const size_t *sdispls, char *rbuf, const size_t *rcounts,
                                const size_t *rdispls);

/* mxh_alltoallv_hier with MPI's arguments: int counts and displacements of
 * elements of @stsize / @rtsize bytes (contiguous types: extent == size), as
 * the entry layer has them; converted to bytes in the algorithm's own arrays.
 * Displacements are non-negative (checked by the entry layer). @scounts NULL:
 * in place (@sbuf, @sdispls and @stsize ignored). */
mxh_status_t mxh_alltoallv_hier_elems(mxh_hier_t *h, const void *sbuf, const int *scounts,
                                      const int *sdispls, size_t stsize, void *rbuf,
                                      const int *rcounts, const int *rdispls, size_t rtsize);

/* Alltoall of @bytes per pair (block p at offset p * @bytes): no exchange of
 * counts. @sbuf NULL: in place. Same rules as mxh_alltoallv_hier. */
mxh_status_t mxh_alltoall_hier(mxh_hier_t *h, const char *sbuf, char *rbuf, size_t bytes);

/* Free what mxh_alltoall_setup created (hier.c, when the hierarchy is destroyed;
 * collective like the MPI_Comm_free that gets there). NULL is allowed. */
void mxh_alltoall_destroy(struct mxh_a2a *a);

/* Tests: the largest message in bytes (default 1 GiB; smaller values make the
 * splitting of large messages testable on small data); 0 restores the default. */
void mxh_alltoall_set_max_message(size_t bytes);
/* Tests and tuning: destination nodes whose phase-1 blocks a rank sends at a
 * time (default 2; <= 0 restores it; >= the number of nodes: all at once). */
void mxh_alltoall_set_window(int nodes);

#ifdef __cplusplus
}
#endif

#endif
