/* Transport capabilities of this process: what UCX can move (memory types,
 * transports and devices with UCX's own bandwidth/latency estimates), whether
 * GPU memory can cross the network directly, and whether MPICH says it is
 * CUDA-aware. Plain record, filled by two independent queries:
 *
 *   mxh_caps_t caps;
 *   mxh_caps_init(&caps);          optional when both queries are called
 *   mxh_caps_query_ucx(&caps);     fills every UCX field (not mpi_cuda_aware)
 *   mxh_caps_query_mpi(&caps);     fills mpi_cuda_aware only (after MPI_Init)
 */
#ifndef MXH_CAPS_H
#define MXH_CAPS_H

#include <stddef.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MXH_CAPS_MAX_TRANSPORTS 64

typedef struct mxh_caps {
    int ucx_present;            /* UCX library usable at run time (a UCP context could be
                                   created); 0 also in builds without UCX */
    int ucx_mem_host, ucx_mem_cuda, ucx_mem_cuda_managed; /* memory types UCP can move
                                   (ucp_context_query: UCP_ATTR_FIELD_MEMORY_TYPES) */
    int ntransports;            /* entries used in transports[] (at most 64; further
                                   UCT resources are counted in the log, not listed) */
    struct {
        char   name[32];        /* UCT transport: "self", "tcp", "posix", "rc_mlx5", ... */
        char   device[64];      /* its device: "memory", "eth0", "mlx5_0:1", ... */
        double bandwidth_mbs;   /* UCX's estimate, MB/s as ucx_info prints it (2^20 B/s;
                                   dedicated + shared, i.e. one process per node);
                                   0 = not reported (interface could not be opened) */
        double latency_ns;      /* UCX's estimate (constant part), ns; 0 = not reported */
    } transports[MXH_CAPS_MAX_TRANSPORTS];
    int gpu_direct;             /* inter-node GPU memory can go directly: UCP moves CUDA
                                   memory, an RDMA transport (rc_* / dc_*) exists, and
                                   either its memory domain registers CUDA memory
                                   (GPUDirect RDMA) or gdr_copy is present */
    int mpi_cuda_aware;         /* MPICH reports CUDA-aware: 1 yes, 0 no, -1 unknown */
} mxh_caps_t;

/* Everything 0 / empty, mpi_cuda_aware = -1. */
void mxh_caps_init(mxh_caps_t *caps);

/* Fill the UCX fields (every field but mpi_cuda_aware). Never fails hard:
 * UCX absent from the build or not usable -> ucx_present = 0 (cause logged at
 * info level) and MXH_OK. MXH_ERR_INVALID_PARAM only for caps == NULL.
 * Opens and closes its own UCP context and UCT interfaces (independent of
 * MPICH's); every resource is released before returning. */
mxh_status_t mxh_caps_query_ucx(mxh_caps_t *caps);

/* Fill mpi_cuda_aware from MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA) or
 * MPIX_Query_cuda_support() when this MPICH has them (configure: HAVE_MPIX_*);
 * -1 when MPI is not initialized (or already finalized) or neither exists. */
void mxh_caps_query_mpi(mxh_caps_t *caps);

/* Whether MPI may be given CUDA memory for the network steps of the device path
 * (exec/p2p.h MXH_XFER_DIRECT): MPICH says it is CUDA-aware and UCX moves CUDA memory.
 * @why (may be NULL) gets the reason in a few words, either way. */
int mxh_caps_net_direct(const mxh_caps_t *caps, char *why, size_t len);

/* One-line human description into @buf (always NUL-terminated when len > 0).
 * Returns the length the full text needs (as snprintf): a result >= len
 * means it was truncated. */
size_t mxh_caps_describe(const mxh_caps_t *caps, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
