/* Memory kinds: the registry (which kind a pointer is), the host kind, and
 * the helpers of mem.h. The test kind is in mem_test.c, the CUDA kind in
 * mem_cuda.c (CUDA builds only). No MPI calls: MPI_IN_PLACE is a constant,
 * so unit tests link this without MPI_Init. */
#include "config.h"

#include "mem/mem.h"
#include "mem/ipc_cache.h"
#include "mem/mem_impl.h"
#include "util/log.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_CUDA
#include "mem/gpu.h"
#endif

/* ---- host: memcpy, complete at once ------------------------------------------ */

static int host_owns(const void *p)
{
    (void)p;
    return 1;
}

static mxh_status_t host_copy_start(void *dst, const void *src, size_t n, mxh_mem_event_t *ev)
{
    if (n > 0) /* memcpy(_, NULL, 0) is undefined; NULL is a valid empty buffer */
        memcpy(dst, src, n);
    ev->pending = 1; /* cleared by the (immediate) test, as for every kind */
    return MXH_OK;
}

static int host_event_test(mxh_mem_event_t *ev)
{
    ev->pending = 0;
    return 1;
}

static void *host_stage_alloc(size_t n)
{
    return malloc(n > 0 ? n : 1);
}

static void host_stage_free(void *p, size_t n)
{
    (void)n;
    free(p);
}

const mxh_mem_ops_t mxh_mem_host_ops = {
    .kind        = MXH_MEM_HOST,
    .name        = "host",
    .owns        = host_owns,
    .copy_start  = host_copy_start,
    .event_test  = host_event_test,
    .stage_alloc = host_stage_alloc,
    .stage_free  = host_stage_free,
    .hold        = NULL,
    .release     = NULL,
};

/* ---- the registry ---------------------------------------------------------------- */

/* mem.h: mxh_mem_host_only. A process's GPU presence never changes once probed. */
#ifdef HAVE_CUDA
int mxh_mem_no_gpu;
static int no_gpu(void)
{
    if (mxh_gpu_present())
        return 0;
    mxh_mem_no_gpu = 1;
    return 1;
}
#else
int mxh_mem_no_gpu = 1;
#endif

const mxh_mem_ops_t *mxh_mem_of_any(const void *p)
{
    if (p == NULL || p == MPI_IN_PLACE)
        return &mxh_mem_host_ops;
    /* one load each for processes without test memory / without a GPU */
    if (mxh_mem_test_live > 0 && mxh_mem_test_ops.owns(p))
        return &mxh_mem_test_ops;
#ifdef HAVE_CUDA
    if (!no_gpu() && mxh_mem_cuda_ops.owns(p))
        return &mxh_mem_cuda_ops;
#endif
    return &mxh_mem_host_ops;
}

mxh_status_t mxh_mem_query_any(const void *p, const char *what, int check,
                               const mxh_mem_ops_t **ops)
{
    *ops = &mxh_mem_host_ops;
    if (p == NULL || p == MPI_IN_PLACE)
        return MXH_OK;
    if (mxh_mem_test_live > 0 && mxh_mem_test_ops.owns(p)) {
        *ops = &mxh_mem_test_ops;
        return MXH_OK;
    }
#ifdef HAVE_CUDA
    if (!no_gpu()) {
        mxh_gpu_mem_info_t mi;
        /* logs and fails on another device's memory and on freed device memory */
        mxh_status_t st = mxh_gpu_mem_query(p, what ? what : "buffer", check, &mi);
        if (st != MXH_OK)
            return st;
        if (mi.kind != MXH_GPU_HOST)
            *ops = &mxh_mem_cuda_ops;
        return MXH_OK;
    }
#else
    (void)what;
    (void)check;
#endif
    return MXH_OK;
}

const mxh_mem_ops_t *mxh_mem_ops(mxh_mem_kind_t kind)
{
    switch (kind) {
    case MXH_MEM_HOST:
        return &mxh_mem_host_ops;
    case MXH_MEM_TEST:
        return &mxh_mem_test_ops;
    case MXH_MEM_CUDA:
#ifdef HAVE_CUDA
        return mxh_gpu_present() ? &mxh_mem_cuda_ops : NULL;
#else
        return NULL;
#endif
    default:
        return NULL;
    }
}

mxh_status_t mxh_mem_copy_sync(const mxh_mem_ops_t *ops, void *dst, const void *src, size_t n)
{
    mxh_mem_event_t ev;
    mxh_status_t st;
    int done;

    memset(&ev, 0, sizeof(ev));
    st = ops->copy_start(dst, src, n, &ev);
    if (st != MXH_OK)
        return st;
    while ((done = ops->event_test(&ev)) == 0)
        ;
    return done < 0 ? (mxh_status_t)-done : MXH_OK;
}

/* ---- a cache of staging buffers for calls that keep theirs past one collective --- */

#define STAGE_CACHE 8
static struct {
    void  *p;
    size_t n;
} stage_cache[MXH_MEM_NKINDS][STAGE_CACHE];

void *mxh_mem_stage_get(const mxh_mem_ops_t *ops, size_t n, size_t *got)
{
    int best = -1;
    if (n == 0)
        n = 1;
    for (int i = 0; i < STAGE_CACHE; i++) {
        size_t k = stage_cache[ops->kind][i].n;
        if (stage_cache[ops->kind][i].p != NULL && k >= n &&
            (best < 0 || k < stage_cache[ops->kind][best].n))
            best = i;
    }
    if (best >= 0) {
        void *p = stage_cache[ops->kind][best].p;
        *got    = stage_cache[ops->kind][best].n;
        stage_cache[ops->kind][best].p = NULL;
        return p;
    }
    *got = n;
    return ops->stage_alloc(n);
}

void mxh_mem_stage_put(const mxh_mem_ops_t *ops, void *p, size_t n)
{
    int slot = -1;
    if (p == NULL)
        return;
    for (int i = 0; i < STAGE_CACHE && slot < 0; i++)
        if (stage_cache[ops->kind][i].p == NULL)
            slot = i;
    if (slot < 0) { /* full: give back the smallest (the larger serve more calls) */
        slot = 0;
        for (int i = 1; i < STAGE_CACHE; i++)
            if (stage_cache[ops->kind][i].n < stage_cache[ops->kind][slot].n)
                slot = i;
        if (stage_cache[ops->kind][slot].n >= n) {
            ops->stage_free(p, n);
            return;
        }
        ops->stage_free(stage_cache[ops->kind][slot].p, stage_cache[ops->kind][slot].n);
    }
    stage_cache[ops->kind][slot].p = p;
    stage_cache[ops->kind][slot].n = n;
}

static void stage_cache_clear(void)
{
    for (int k = 0; k < MXH_MEM_NKINDS; k++)
        for (int i = 0; i < STAGE_CACHE; i++)
            if (stage_cache[k][i].p != NULL) {
                mxh_mem_ops((mxh_mem_kind_t)k)->stage_free(stage_cache[k][i].p, stage_cache[k][i].n);
                stage_cache[k][i].p = NULL;
            }
}

void mxh_mem_finalize(void)
{
    stage_cache_clear();
    mxh_ipc_cache_clear();
#ifdef HAVE_CUDA
    mxh_mem_cuda_finalize();
#endif
}
