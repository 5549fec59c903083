/* CUDA runtime glue: device presence, pointer kinds, error strings, CUDA IPC
 * export cache and the CUDA opener of the peer-mapping cache (mem/ipc_cache.h).
 * See gpu.h. */
#define _GNU_SOURCE /* process_vm_readv */
#include "config.h"

#include "mem/gpu.h"
#include "mem/ipc_cache.h"
#include "mem/mem.h"
#include "util/log.h"

#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* ---- the driver, loaded on demand ------------------------------------------- */

typedef CUresult (*cu_init_fn)(unsigned int);
typedef CUresult (*cu_count_fn)(int *);
typedef CUresult (*cu_ptr_attrs_fn)(unsigned int, CUpointer_attribute *, void **, CUdeviceptr);
typedef CUresult (*cu_ctx_current_fn)(CUcontext *);
typedef CUresult (*cu_err_fn)(CUresult, const char **);

static struct {
    int               state; /* 0 unknown, 1 present, -1 absent */
    cu_ptr_attrs_fn   ptr_attrs;
    cu_ctx_current_fn ctx_current;
    cu_err_fn         err_string;
} drv;

static int driver_probe(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    cu_init_fn init;
    cu_count_fn count;
    int n = 0;

    if (lib == NULL) {
        mxh_debug("gpu: no CUDA driver (libcuda.so.1: %s)", dlerror());
        return -1;
    }
    init            = (cu_init_fn)dlsym(lib, "cuInit");
    count           = (cu_count_fn)dlsym(lib, "cuDeviceGetCount");
    drv.ptr_attrs   = (cu_ptr_attrs_fn)dlsym(lib, "cuPointerGetAttributes");
    drv.ctx_current = (cu_ctx_current_fn)dlsym(lib, "cuCtxGetCurrent");
    drv.err_string  = (cu_err_fn)dlsym(lib, "cuGetErrorString");
    if (!init || !count || !drv.ptr_attrs || !drv.ctx_current || init(0) != CUDA_SUCCESS ||
        count(&n) != CUDA_SUCCESS || n <= 0) {
        mxh_debug("gpu: the CUDA driver reports no usable device");
        return -1; /* the library stays loaded: unloading under CUDA is unsafe */
    }
    mxh_debug("gpu: %d CUDA device(s)", n);
    return 1;
}

int mxh_gpu_present(void)
{
    if (__builtin_expect(drv.state == 0, 0))
        drv.state = driver_probe();
    return drv.state > 0;
}

int mxh_gpu_current_device(void)
{
    int dev = -1;
    if (cudaGetDevice(&dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return dev;
}

mxh_status_t mxh_gpu_cuda(cudaError_t rc, const char *what)
{
    if (rc == cudaSuccess)
        return MXH_OK;
    (void)cudaGetLastError(); /* clear non-sticky errors */
    mxh_error("%s failed: %s: %s", what, cudaGetErrorName(rc), cudaGetErrorString(rc));
    return MXH_GPU_ERR_CUDA;
}

/* Host memory readable by this process? Only asked when a CUDA context exists
 * (a freed device pointer is then indistinguishable from host memory by its
 * attributes). process_vm_readv on ourselves reads one byte without faulting;
 * where it is not permitted the answer is "readable". */
/* Whether @p is readable host memory: one byte through process_vm_readv (a system
 * call), remembered for the last few pages found readable, so that the host buffers a
 * GPU process passes call after call are probed once (a page unmapped since would be
 * missed: a user error the probe exists to catch only for freed device memory). */
#define READABLE_PAGES 8
static uintptr_t readable_page[READABLE_PAGES];
static unsigned readable_next;

static int host_readable(const void *p)
{
    uintptr_t page = (uintptr_t)p >> 12;
    char c;
    for (int i = 0; i < READABLE_PAGES; i++)
        if (readable_page[i] == page + 1)
            return 1;
    struct iovec local = {&c, 1}, remote = {(void *)p, 1};
    if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1) {
        readable_page[readable_next++ % READABLE_PAGES] = page + 1;
        return 1;
    }
    return errno != EFAULT;
}

mxh_status_t mxh_gpu_mem_query(const void *p, const char *what, int check_host,
                               mxh_gpu_mem_info_t *info)
{
    unsigned int mtype = 0, managed = 0;
    int ordinal = -1;
    unsigned long long id = 0;
    CUdeviceptr start = 0;
    size_t size = 0;
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                   CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                   CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                   CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void *data[] = {&mtype, &managed, &ordinal, &id, &start, &size};

    memset(info, 0, sizeof(*info));
    info->kind   = MXH_GPU_HOST;
    info->device = -1;
    if (p == NULL || !mxh_gpu_present())
        return MXH_OK;
    if (drv.ptr_attrs(sizeof(attrs) / sizeof(attrs[0]), attrs, data, (CUdeviceptr)(uintptr_t)p) !=
        CUDA_SUCCESS)
        mtype = 0; /* not known to CUDA: host */
    if (managed || mtype == CU_MEMORYTYPE_DEVICE) {
        info->kind      = managed ? MXH_GPU_MANAGED : MXH_GPU_DEVICE;
        info->device    = ordinal;
        info->buffer_id = id;
        info->base      = (uintptr_t)start;
        info->size      = size;
        if (!managed && what != NULL) {
            int cur = mxh_gpu_current_device();
            if (ordinal != cur) {
                mxh_error("%s (%p) is memory of CUDA device %d, but this rank's current device "
                          "is %d (cudaSetDevice before the call; every buffer must be on it)",
                          what, p, ordinal, cur);
                return MXH_ERR_INVALID_PARAM;
            }
        }
        return MXH_OK;
    }
    if (check_host && !host_readable(p)) {
        if (what == NULL)
            what = "buffer";
        CUcontext ctx = NULL;
        const char *es = "invalid argument";
        if (drv.err_string)
            drv.err_string(CUDA_ERROR_INVALID_VALUE, &es);
        if (drv.ctx_current(&ctx) == CUDA_SUCCESS && ctx != NULL) {
            mxh_error("%s (%p) is neither a live CUDA allocation nor readable host memory "
                      "(freed device memory?): CUDA_ERROR_INVALID_VALUE: %s",
                      what, p, es);
        } else {
            mxh_error("%s (%p) is not readable memory", what, p);
        }
        return MXH_ERR_INVALID_PARAM;
    }
    return MXH_OK;
}

/* ---- IPC: exported handles ----------------------------------------------------- */

#define EXPORT_CACHE 64

typedef struct {
    uint64_t           base, buffer_id;
    cudaIpcMemHandle_t handle;
    int                used;
} export_entry_t;

static export_entry_t exports[EXPORT_CACHE];
static int export_next;

mxh_status_t mxh_gpu_ipc_export(const void *p, mxh_ipc_desc_t *d)
{
    mxh_gpu_mem_info_t mi;
    mxh_status_t st;

    memset(d, 0, sizeof(*d));
    if (p == NULL)
        return MXH_OK;
    st = mxh_gpu_mem_query(p, "buffer", 0, &mi);
    if (st != MXH_OK)
        return st;
    if (mi.kind != MXH_GPU_DEVICE)
        return MXH_OK;
    d->pid       = (int32_t)getpid();
    d->base      = mi.base;
    d->size      = mi.size;
    d->buffer_id = mi.buffer_id;
    d->offset    = (uint64_t)((uintptr_t)p - mi.base);
    for (int i = 0; i < EXPORT_CACHE; i++) {
        if (exports[i].used && exports[i].base == mi.base && exports[i].buffer_id == mi.buffer_id) {
            d->handle = exports[i].handle;
            d->valid  = 1;
            return MXH_OK;
        }
    }
    cudaError_t rc = cudaIpcGetMemHandle(&d->handle, (void *)mi.base);
    if (rc != cudaSuccess) {
        /* e.g. stream-ordered (cudaMallocAsync) memory: the caller stages instead */
        (void)cudaGetLastError();
        mxh_debug("gpu: cannot export %p by CUDA IPC (%s): staged", p, cudaGetErrorName(rc));
        return MXH_OK;
    }
    exports[export_next].base      = mi.base;
    exports[export_next].buffer_id = mi.buffer_id;
    exports[export_next].handle    = d->handle;
    exports[export_next].used      = 1;
    export_next                    = (export_next + 1) % EXPORT_CACHE;
    d->valid                       = 1;
    return MXH_OK;
}

/* ---- IPC: opened peer mappings -------------------------------------------------- */

/* The opener of the process-wide mapping cache (mem/ipc_cache.h), which does
 * the keying by allocation range, the eviction of stale overlapping mappings
 * and the retry after cudaErrorAlreadyMapped. */
static mxh_ipc_open_rc_t cuda_ipc_open(void *arg, const mxh_ipc_key_t *key, const void *handle,
                                       void **mapped)
{
    cudaIpcMemHandle_t h;
    cudaError_t rc;

    (void)arg;
    memcpy(&h, handle, sizeof(h));
    rc = cudaIpcOpenMemHandle(mapped, h, cudaIpcMemLazyEnablePeerAccess);
    if (rc == cudaSuccess)
        return MXH_IPC_OPEN_OK;
    if (rc == cudaErrorAlreadyMapped) {
        (void)cudaGetLastError();
        mxh_debug("gpu: cudaIpcOpenMemHandle (peer %d, 0x%llx +%llu): already mapped",
                  (int)key->pid, (unsigned long long)key->base, (unsigned long long)key->size);
        return MXH_IPC_OPEN_ALREADY_MAPPED;
    }
    (void)mxh_gpu_cuda(rc, "cudaIpcOpenMemHandle (a peer's buffer)");
    return MXH_IPC_OPEN_FAILED;
}

static void cuda_ipc_close(void *arg, const mxh_ipc_key_t *key, void *mapped)
{
    cudaError_t rc = cudaIpcCloseMemHandle(mapped);
    (void)arg;
    if (rc != cudaSuccess) {
        /* not fatal: the mapping goes away with the context at the latest */
        (void)cudaGetLastError();
        mxh_debug("gpu: cudaIpcCloseMemHandle (peer %d, 0x%llx): %s", (int)key->pid,
                  (unsigned long long)key->base, cudaGetErrorString(rc));
    }
}

const mxh_ipc_cache_ops_t mxh_gpu_ipc_ops = {cuda_ipc_open, cuda_ipc_close, NULL};

mxh_status_t mxh_gpu_ipc_map(const mxh_ipc_desc_t *d, void *owner, void **ptr)
{
    mxh_ipc_key_t key;
    void *m = NULL;
    mxh_status_t st;

    *ptr = NULL;
    if (!d->valid)
        return MXH_ERR_INVALID_PARAM;
    key.kind      = MXH_MEM_CUDA;
    key.pid       = d->pid;
    key.base      = d->base;
    key.size      = d->size;
    key.buffer_id = d->buffer_id;
    key.device    = mxh_gpu_current_device();
    st = mxh_ipc_cache_open(&key, &d->handle, owner, &m);
    if (st == MXH_OK)
        *ptr = (char *)m + d->offset;
    return st;
}

mxh_status_t mxh_gpu_ipc_open(const mxh_ipc_desc_t *d, void **ptr)
{
    return mxh_gpu_ipc_map(d, NULL, ptr);
}

void mxh_gpu_ipc_close_all(void)
{
    mxh_ipc_cache_clear();
    memset(exports, 0, sizeof(exports));
    export_next = 0;
}

int mxh_gpu_ipc_cached(void)
{
    mxh_ipc_cache_stats_t st;
    mxh_ipc_cache_stats(&st);
    return st.entries;
}
