/* CUDA runtime glue for the GPU path (built only with CUDA):
 *
 *  - mxh_gpu_present(): whether this process has a usable CUDA device; the
 *    answer is computed once (libcuda.so.1 is opened with dlopen, so the
 *    library loads and runs on machines without a driver) and every other
 *    query first tests it, so processes without a device pay nothing.
 *  - mxh_gpu_mem_query(): memory kind of a pointer (host / device / managed),
 *    its device, allocation base, size and buffer id (driver
 *    cuPointerGetAttributes: one call, no context needed for host pointers).
 *  - mxh_gpu_cuda(): turn a cudaError_t into a status, logging "what: name:
 *    string" at error level (it becomes the MPI error string).
 *  - CUDA IPC: export descriptors (handle + buffer id + allocation range +
 *    offset, cached per allocation); peers' mappings are opened through the
 *    process-wide cache of mem/ipc_cache.h, keyed by (exporter pid, allocation
 *    range, buffer id): a buffer freed and its range reused (wholly or in
 *    part) by a new allocation has a new buffer id, so the stale mappings
 *    overlapping it are closed and the new one opened instead of reading freed
 *    memory or failing with cudaErrorAlreadyMapped.
 */
#ifndef MXH_GPU_H
#define MXH_GPU_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Status of a failed CUDA call (the cause is in the log / MPI error string).
 * util/status.h has no CUDA code yet: MXH_ERR_MPI maps to MPI_ERR_OTHER. */
#define MXH_GPU_ERR_CUDA MXH_ERR_MPI

typedef enum mxh_gpu_kind {
    MXH_GPU_HOST = 0, /* ordinary or pinned host memory (also NULL, MPI_IN_PLACE) */
    MXH_GPU_DEVICE,   /* cudaMalloc'ed memory of one device */
    MXH_GPU_MANAGED   /* cudaMallocManaged */
} mxh_gpu_kind_t;

typedef struct mxh_gpu_mem_info {
    mxh_gpu_kind_t kind;
    int            device;    /* ordinal of the owning device (device/managed), else -1 */
    uint64_t       buffer_id; /* process-wide unique id of the allocation (0: host) */
    uintptr_t      base;      /* allocation start (device/managed) */
    size_t         size;      /* allocation size */
} mxh_gpu_mem_info_t;

/* 1 if this process can use a CUDA device (driver loaded, >= 1 device). */
int mxh_gpu_present(void);

/* Kind of @p. Errors (MXH_ERR_INVALID_PARAM, logged with @what): device
 * memory of a GPU other than the current device; a pointer that is neither a
 * live CUDA allocation nor readable host memory (freed device memory) when
 * @check_host is set. @what NULL: quiet about the device (another device's
 * memory is reported with its ordinal in info->device, not as an error).
 * With no CUDA device: MXH_GPU_HOST at once. */
mxh_status_t mxh_gpu_mem_query(const void *p, const char *what, int check_host,
                               mxh_gpu_mem_info_t *info);

/* The runtime's current device (-1 on error). */
int mxh_gpu_current_device(void);

/* cudaSuccess -> MXH_OK; else log "@what failed: cudaErrorX: string" and
 * return MXH_GPU_ERR_CUDA (also clears the sticky-free last error). */
mxh_status_t mxh_gpu_cuda(cudaError_t rc, const char *what);

/* ---- CUDA IPC ---------------------------------------------------------------- */

typedef struct mxh_ipc_desc {
    cudaIpcMemHandle_t handle;
    uint64_t           buffer_id;
    uint64_t           base;   /* exporter's allocation base (cache key) */
    uint64_t           size;   /* exporter's allocation size (cache key) */
    uint64_t           offset; /* of the exported pointer inside the allocation */
    int32_t            pid;    /* exporter */
    int32_t            valid;  /* 0: nothing exported (empty or not exportable) */
} mxh_ipc_desc_t;

/* Describe device pointer @p for peers. A pointer that cannot be exported
 * (managed, host, stream-ordered pool memory) gives valid = 0 and MXH_OK: the
 * caller copies into an exportable buffer instead. */
mxh_status_t mxh_gpu_ipc_export(const void *p, mxh_ipc_desc_t *d);

/* The local address of a peer's exported pointer, mapped through the
 * process-wide cache (mem/ipc_cache.h) and tagged with @owner (the
 * communicator object; mxh_ipc_cache_release_owner(owner) at its free closes
 * the mappings only it used). */
mxh_status_t mxh_gpu_ipc_map(const mxh_ipc_desc_t *d, void *owner, void **ptr);

/* mxh_gpu_ipc_map without an owner (closed by eviction or close_all only). */
mxh_status_t mxh_gpu_ipc_open(const mxh_ipc_desc_t *d, void **ptr);

/* Close every cached mapping and forget the exported handles. */
void mxh_gpu_ipc_close_all(void);

/* Mappings and export entries currently cached (tests). */
int mxh_gpu_ipc_cached(void);

#ifdef __cplusplus
}
#endif

#endif
