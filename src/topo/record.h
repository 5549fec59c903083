/* The per-rank record every rank contributes to the hierarchy decision.
 * Discovery fills it (hostname/topology.conf today; hwloc/UCX/CUDA later);
 * records are allgathered once per communicator and the levels are computed
 * from the array by a pure function (levels.h), identically on every rank. */
#ifndef MXH_RECORD_H
#define MXH_RECORD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MXH_NODE_NAME_MAX 128
#define MXH_LEAF_NAME_MAX 64
#define MXH_BUSID_MAX     16
#define MXH_REC_MAX_GPUS  32 /* GPUs of a node a record describes */
#define MXH_REC_MAX_NICS  16 /* NICs (rails) of a node a record names */
#define MXH_REC_NIC_NAME  16
#define MXH_REC_MAX_VISIBLE 16
#define MXH_REC_TORUS_DIMS 3  /* dimensions of a torus coordinate */

/* capability bits (mxh_record_t.flags) */
#define MXH_REC_UCX           0x01u /* UCX usable */
#define MXH_REC_UCX_MEM_CUDA  0x02u /* UCX moves CUDA device memory */
#define MXH_REC_GPU_DIRECT    0x04u /* inter-node GPU memory can go directly */
#define MXH_REC_MPI_CUDA      0x08u /* MPICH reports CUDA-awareness */
#define MXH_REC_NVLINK_INFO   0x10u /* NVLink information was available */
#define MXH_REC_GPU_MPS       0x20u /* my GPU's contexts are shared through CUDA MPS */

typedef struct mxh_record {
    char     node[MXH_NODE_NAME_MAX]; /* node identity: processor name or MPIX_HIER_HOSTNAME */
    char     leaf[MXH_LEAF_NAME_MAX]; /* leaf switch above the node; "" = the default leaf */
    char     gpu_busid[MXH_BUSID_MAX];/* PCI bus id of the rank's GPU when known, else "" */
    int32_t  shm_id;      /* comm rank of the lowest rank sharing memory with me, -1 when
                             the node name was given explicitly (fake nodes share memory) */
    int32_t  rail;        /* forced rail id, -1 = from the GPU's NIC, else the local index */
    int32_t  status;      /* mxh_status_t of this rank's discovery: a failure anywhere
                             fails the build on every rank, collectively */
    uint64_t config_hash; /* hash of the plan-changing configuration; must agree */
    /* the node as discovery saw it (hwloc / NCCL topology file); identical for the
       ranks of a node, so the decision can place ranks whose GPU is not known */
    int16_t  ngpus;                           /* GPUs of the node (in PCI bus order) */
    int16_t  gpu;                             /* my GPU's index, -1 = by local index */
    int16_t  nvisible;                        /* CUDA_VISIBLE_DEVICES entries */
    int16_t  nnics;
    int8_t   visible[MXH_REC_MAX_VISIBLE];    /* GPU indices CUDA_VISIBLE_DEVICES allows */
    int8_t   gpu_rail[MXH_REC_MAX_GPUS];      /* NIC index serving each GPU, -1 none */
    int8_t   gpu_island[MXH_REC_MAX_GPUS];    /* NVLink island of each GPU */
    char     nic_names[MXH_REC_MAX_NICS][MXH_REC_NIC_NAME];
    uint32_t flags;                           /* MXH_REC_* */
    /* the node's router in a torus of nodes (cluster file torus=XxYxZ): coordinate per
       dimension; tndims 0 = not on a torus. The same for the ranks of a node */
    int16_t  tcoord[MXH_REC_TORUS_DIMS];
    int16_t  tndims;
} mxh_record_t;

void mxh_record_init(mxh_record_t *rec);

#ifdef __cplusplus
}
#endif

#endif
