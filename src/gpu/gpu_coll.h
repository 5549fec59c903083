/* The GPU executor: MPIX_Hier_* collectives on device and managed buffers.
 *
 * Called by the entry layer (mpix/colls.c) after its argument checks, when
 * mxh_gpu_mem_kinds() says a significant buffer of this rank is GPU memory.
 * Every rank of the communicator must take the GPU path for a call (every rank
 * passes at least one device/managed buffer; see include/mpix_hier.h).
 *
 * Algorithm (per communicator, pools created on first use):
 *  - inside a node (ranks of one node, several may share a GPU): CUDA IPC.
 *    Each rank exposes its input; rank q reads shard q of every peer's input
 *    and reduces them in one kernel, in node-rank order (reduce-scatter);
 *    shards are then gathered by peer copies (all-gather).
 *  - between nodes (ranks with the same node-local index on every node): a
 *    ring over MPI on the shard, fragment-pipelined. MPI gets device pointers
 *    when every rank's discovery record says MPI is CUDA-aware; otherwise the
 *    fragments go through pinned host buffers, overlapping the device-to-host
 *    copy, MPI, the host-to-device copy and the GPU reduction (three streams,
 *    events, no device-wide synchronization). Uneven nodes: the node leader
 *    reduces the whole buffer and the leaders run the ring.
 *  - what the kernels cannot do (user ops, derived or long double types,
 *    MINLOC/MAXLOC, MPIX_HIER_ENABLE=no, allgather/bcast on uneven nodes) is
 *    served by the plain MPI collective on pinned host copies.
 * Results are bitwise identical on every rank (each element reduced once).
 * Errors: the rank that fails logs the CUDA error string; all ranks agree on
 * the outcome at the end of the call (never a hang) and return an error.
 *
 * Without CUDA (no HAVE_CUDA) the functions below are inline stubs: kinds are
 * always host, so the entry layer needs no #ifdef. */
#ifndef MXH_GPU_COLL_H
#define MXH_GPU_COLL_H

#include "config.h"

#include <mpi.h>

#include "../../mpix/mpix_internal.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef HAVE_CUDA

/* *on_gpu = 1 if @sendbuf or @recvbuf (either may be NULL or MPI_IN_PLACE)
 * is device or managed memory. @nonempty: the call moves data (count > 0);
 * only then are pointers validated. Errors (logged): a device pointer of a
 * GPU other than the current device, freed device memory. Costs one test of
 * a cached flag in processes without a CUDA device. */
mxh_status_t mxh_gpu_mem_kinds(const void *sendbuf, const void *recvbuf, int nonempty,
                               int *on_gpu);

mxh_status_t mxh_gpu_allreduce(mxh_hier_t *h, const void *sendbuf, void *recvbuf, int count,
                               MPI_Datatype datatype, MPI_Op op);
mxh_status_t mxh_gpu_reduce_scatter_block(mxh_hier_t *h, const void *sendbuf, void *recvbuf,
                                          int recvcount, MPI_Datatype datatype, MPI_Op op);
mxh_status_t mxh_gpu_allgather(mxh_hier_t *h, const void *sendbuf, int sendcount,
                               MPI_Datatype sendtype, void *recvbuf, int recvcount,
                               MPI_Datatype recvtype);
mxh_status_t mxh_gpu_bcast(mxh_hier_t *h, void *buffer, int count, MPI_Datatype datatype,
                           int root);
mxh_status_t mxh_gpu_reduce(mxh_hier_t *h, const void *sendbuf, void *recvbuf, int count,
                            MPI_Datatype datatype, MPI_Op op, int root);

/* Statistics of the last call on this process (tests, benchmarks). */
typedef struct mxh_gpu_stats {
    int path;        /* 0 none, 1 GPU kernels + IPC, 2 plain MPI on host copies */
    int direct;      /* inter-node step handed device pointers to MPI */
    int ipc_staged;  /* a buffer was copied into an IPC-exportable scratch */
} mxh_gpu_stats_t;
void mxh_gpu_last_stats(mxh_gpu_stats_t *stats);

#else /* !HAVE_CUDA */

static inline mxh_status_t mxh_gpu_mem_kinds(const void *sendbuf, const void *recvbuf,
                                             int nonempty, int *on_gpu)
{
    (void)sendbuf;
    (void)recvbuf;
    (void)nonempty;
    *on_gpu = 0;
    return MXH_OK;
}
#define mxh_gpu_allreduce(...)            MXH_ERR_UNSUPPORTED
#define mxh_gpu_reduce_scatter_block(...) MXH_ERR_UNSUPPORTED
#define mxh_gpu_allgather(...)            MXH_ERR_UNSUPPORTED
#define mxh_gpu_bcast(...)                MXH_ERR_UNSUPPORTED
#define mxh_gpu_reduce(...)               MXH_ERR_UNSUPPORTED

#endif

#ifdef __cplusplus
}
#endif

#endif
