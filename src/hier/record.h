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

typedef struct mxh_record {
    char     node[MXH_NODE_NAME_MAX]; /* node identity: processor name or MPIX_HIER_HOSTNAME */
    char     leaf[MXH_LEAF_NAME_MAX]; /* leaf switch above the node; "" = the default leaf */
    char     gpu_busid[MXH_BUSID_MAX];/* PCI bus id of the rank's GPU, "" = none (discovery) */
    int32_t  shm_id;      /* comm rank of the lowest rank sharing memory with me, -1 when
                             the node name was given explicitly (fake nodes share memory) */
    int32_t  rail;        /* rail id (nearest NIC index), -1 = use the local index */
    int32_t  island;      /* NVLink island inside the node, -1 = whole node */
    int32_t  status;      /* mxh_status_t of this rank's discovery: a failure anywhere
                             fails the build on every rank, collectively */
    uint64_t config_hash; /* hash of the plan-changing configuration; must agree */
} mxh_record_t;

void mxh_record_init(mxh_record_t *rec);

#ifdef __cplusplus
}
#endif

#endif
