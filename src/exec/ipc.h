/* The device node level: the ranks of one node read each other's buffers
 * through peer mappings (CUDA IPC; the test kind's memfd through
 * /proc/PID/fd) and reduce them with their memory kind's kernels: the device
 * counterpart of exec/shm.c, with no host staging and no MPI call.
 *
 * Control rides on the node's shared-memory object (exec/shm.h): buffer
 * descriptors and the one-integer votes of the barriers ("rounds") travel
 * with mxh_shm_exchange, beside the data slots, so that a host-buffer call
 * the level declines keeps the slots' rhythm. Every call:
 *
 *   1. agree: each rank waits for its kind's fence (its input is produced:
 *      the application's work that the kind's enter() ordered the library
 *      after, the copies started before), exports its buffers and publishes
 *      the descriptors. Every rank sees every descriptor, so all decide alike:
 *      if any rank's buffer cannot be mapped (host memory, another kind, CUDA
 *      stream-ordered memory, a type or op without a kernel, a datatype with
 *      holes), every rank returns MXH_ERR_UNSUPPORTED having written nothing,
 *      and the caller runs the staged path.
 *   2. map the peers' buffers (ipc_map: cached per allocation, tagged with
 *      the communicator object), then a round: a failed map anywhere gives
 *      MXH_ERR_UNSUPPORTED everywhere, still with nothing written.
 *   3. the data phase, each rank waiting for its own kernels and copies, and
 *      a round after it: nobody reads a result before its producer finished,
 *      nobody leaves while peers still read its buffers.
 *
 *   allreduce: slice q of the vector (cut in 256-byte units) is reduced by
 *     rank q from all n inputs into its own out; a round; every rank copies
 *     the other slices from their reducers' outs; a round. Every element is
 *     reduced once, inputs in rank order 0..n-1: bitwise identical results
 *     on every rank (and equal to exec/shm.c's).
 *   reduce_scatter: rank q reduces part q of all inputs into its out (in
 *     place with part q not at the start: into part q itself, moved to the
 *     start after the round, when nobody reads the input any more).
 *   allgather: each rank copies part q straight from rank q's buffer.
 *   bcast: each non-root copies the root's buffer.
 *   reduce: rank q reduces slice q of all inputs straight into the root's out.
 *
 * Cost: 3 shared-memory rounds (allreduce 4) plus the kernels and copies at
 * device memory speed; allreduce reads 2 (n-1)/n of the vector per rank over
 * the peer links, as a ring would, in one step.
 *
 * The buffers are memory of @ops's kind (the rank's own); dt a predefined
 * type of tsize bytes the kind can reduce, op a predefined commutative op;
 * counts and displacements in elements. Collective over the node's
 * communicator in the same order on every rank, like exec/shm.c (whose object
 * it shares: never called while a shm collective of the same object runs).
 * Inside a task the waits yield (exec/task.h). No allocation per call. */
#ifndef MXH_COLL_IPC_H
#define MXH_COLL_IPC_H

#include <mpi.h>
#include <stddef.h>

#include "exec/shm.h"
#include "mem/mem.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mxh_ipc mxh_ipc_t;

/* Where ranks of a node share a GPU without MPS, MPIX_HIER_IPC=auto takes the level only
 * from this many bytes (the larger of it and MPIX_HIER_IPC_MIN; hier.c). There the
 * processes' contexts take turns on the GPU, so every call pays a floor whatever its size
 * (in its device waits and in the shared-memory rounds that wait for the slowest rank's
 * device work), and below this size the node level staged through host memory is faster
 * (benchmarks/RESULTS.md section 4, "Why these constants"). Under MPS the processes share
 * one context and the floor goes: ranks that all share their GPU through MPS (record flag
 * MXH_REC_GPU_MPS) keep MPIX_HIER_IPC_MIN. */
#define MXH_IPC_SHARED_GPU_MIN ((size_t)4 << 20)

/* Local (no communication): the per-communicator state for @n ranks over the
 * shared-memory object @shm (whole communicator, one node), mappings tagged
 * with @owner. */
mxh_status_t mxh_ipc_create(mxh_shm_t *shm, int n, int me, void *owner, mxh_ipc_t **ipc_p);
void mxh_ipc_destroy(mxh_ipc_t *ipc);

/* @ops: the kind of this rank's buffers, NULL when they cannot take part (host
 * memory, two kinds, a type with holes): every rank then gets
 * MXH_ERR_UNSUPPORTED. */
mxh_status_t mxh_ipc_allreduce(mxh_ipc_t *x, const mxh_mem_ops_t *ops, const void *in, void *out,
                               size_t count, MPI_Datatype dt, size_t tsize, MPI_Op op);
/* @in: parts counts[q] at displs[q] (elements); @out: my part (in + displs[me]
 * in place, or any buffer: also in itself, MPI_Reduce_scatter(_block)'s in
 * place). */
mxh_status_t mxh_ipc_reduce_scatter(mxh_ipc_t *x, const mxh_mem_ops_t *ops, const void *in,
                                    void *out, const int *counts, const int *displs,
                                    MPI_Datatype dt, size_t tsize, MPI_Op op);
/* @mine: counts[me] elements (may be out + displs[me]); part q lands at
 * out + displs[q]. */
mxh_status_t mxh_ipc_allgather(mxh_ipc_t *x, const mxh_mem_ops_t *ops, const void *mine,
                               void *out, const int *counts, const int *displs, size_t tsize);
mxh_status_t mxh_ipc_bcast(mxh_ipc_t *x, const mxh_mem_ops_t *ops, void *buf, size_t bytes,
                           int root);
/* @out: significant at the root only (NULL elsewhere); in == out at the root
 * for in place. */
mxh_status_t mxh_ipc_reduce(mxh_ipc_t *x, const mxh_mem_ops_t *ops, const void *in, void *out,
                            size_t count, MPI_Datatype dt, size_t tsize, MPI_Op op, int root);

/* The node part of a multi-node collective on device buffers (coll.c, the device
 * network path): the node's ranks agree, fill the regions where their first network
 * step starts, the network steps of the schedule run in between (on the device,
 * exec/exec.h, with the node-local levels skipped), then each spreads the regions its
 * last network step left. The network messages are those of a node that stages, so
 * nodes need not agree with each other, only the ranks of one node.
 *
 * mxh_ipc_node_agree: agree (@able: this rank's schedule suits it) over the buffers
 * @in and @out (either may be NULL), mapping every peer's; *@engaged = 1 once agreed:
 * mxh_ipc_node_spread must follow, whatever the status (peers wait in it).
 * MXH_ERR_UNSUPPORTED with *engaged = 0: declined on every rank of the node, nothing
 * written.
 * mxh_ipc_node_fill: for each region, @dst[out..] (memory of the kind) = node rank
 * @from's in[in..], or (@from < 0) the reduction of every node rank's in[in..] in rank
 * order; waits for it.
 * mxh_ipc_node_spread: a round (@st: this rank's status so far), then @src[in..] into
 * out[out..] of node rank @to (< 0: every node rank, this one included where the two
 * differ); a closing round. Returns the first error of any rank. Offsets and counts in
 * elements of @tsize bytes. */
typedef struct mxh_ipc_region {
    size_t in, out, cnt;
} mxh_ipc_region_t;

mxh_status_t mxh_ipc_node_agree(mxh_ipc_t *x, const mxh_mem_ops_t *ops, int able, const void *in,
                                size_t in_bytes, void *out, size_t out_bytes, MPI_Datatype dt,
                                MPI_Op op, int *engaged);
mxh_status_t mxh_ipc_node_fill(mxh_ipc_t *x, const mxh_mem_ops_t *ops, int from, void *dst,
                               const mxh_ipc_region_t *r, int nreg, MPI_Datatype dt, size_t tsize,
                               MPI_Op op);
mxh_status_t mxh_ipc_node_spread(mxh_ipc_t *x, const mxh_mem_ops_t *ops, int to, const void *src,
                                 const mxh_ipc_region_t *r, int nreg, size_t tsize,
                                 mxh_status_t st);

/* Calls that ran on the device node level / that were declined (agreed
 * MXH_ERR_UNSUPPORTED) since the object was made. */
void mxh_ipc_counts(const mxh_ipc_t *x, unsigned long *ran, unsigned long *declined);

#ifdef __cplusplus
}
#endif

#endif
