/* The CUDA memory kind (built only with CUDA): device memory of the current
 * device and managed memory. See mem.h.
 *
 *  - copies: cudaMemcpyAsync(cudaMemcpyDefault) on the library's own
 *    non-blocking stream of the current device (created at the first copy on
 *    that device), never the legacy default stream and never a device-wide
 *    synchronization, so the library's copies neither wait for nor delay the
 *    application's work on other streams;
 *  - completion: a cudaEvent_t recorded after the copy, taken from a per-device
 *    pool (events are created on demand and returned to the pool when tested
 *    complete: no cudaEventCreate per copy in the steady state);
 *  - staging memory: pinned (cudaHostAlloc, portable to every device), so the
 *    copies are truly asynchronous DMA;
 *  - device node level: buffers exported by CUDA IPC (mxh_gpu_ipc_export, the
 *    mxh_ipc_desc_t copied into the descriptor bytes), peers' buffers mapped
 *    through the process-wide cache (mxh_gpu_ipc_map), reductions by the
 *    kernels of reduce/reduce_cuda.h on the library's stream with a pooled
 *    event, fences = an event recorded on that stream.
 *
 * Ordering: copies of one device run in the order they were started (one
 * stream). At the start of each collective (enter) the stream waits for the
 * legacy default stream, i.e. for the work the application queued before the
 * call on the default stream or any other blocking stream (a cudaMemset or a
 * kernel that produced the input); work on the application's non-blocking
 * streams must be complete when the call is made (include/mpix_hier.h). A
 * device-side wait: the host does not block.
 *
 * Thread safety: none (one thread at a time, like the library's collectives).
 */
#include "config.h"

#include "mem/gpu.h"
#include "mem/mem.h"
#include "mem/mem_impl.h"
#include "reduce/dtypes.h"
#include "reduce/reduce.h"
#include "reduce/reduce_cuda.h"
#include "util/log.h"

#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVICES 64

typedef struct event_pool {
    cudaEvent_t *free; /* events ready for reuse */
    int          nfree, cap;
} event_pool_t;

static cudaStream_t streams[MAX_DEVICES];
static event_pool_t pools[MAX_DEVICES];
static cudaEvent_t  entry_events[MAX_DEVICES]; /* recorded on the legacy stream at entry */

/* event words: h[0] the cudaEvent_t (0: nothing to wait for, n == 0),
 * h[1] the device it belongs to */

static int cuda_owns(const void *p)
{
    mxh_gpu_mem_info_t mi;
    /* quiet query: another device's memory is not ours (the entry layer's
     * mxh_mem_query reports it as an error) */
    if (mxh_gpu_mem_query(p, NULL, 0, &mi) != MXH_OK)
        return 0;
    if (mi.kind == MXH_GPU_MANAGED)
        return 1; /* migratable: reachable from the current device */
    return mi.kind == MXH_GPU_DEVICE && mi.device == mxh_gpu_current_device();
}

static mxh_status_t current_device(int *dev)
{
    cudaError_t rc = cudaGetDevice(dev);
    if (rc != cudaSuccess)
        return mxh_gpu_cuda(rc, "cudaGetDevice");
    if (*dev < 0 || *dev >= MAX_DEVICES) {
        mxh_error("CUDA device %d: the library supports devices 0..%d", *dev, MAX_DEVICES - 1);
        return MXH_ERR_UNSUPPORTED;
    }
    return MXH_OK;
}

/* The library's stream of @dev (current), created at its first use. */
static mxh_status_t stream_of(int dev, cudaStream_t *s)
{
    if (streams[dev] == NULL) {
        mxh_status_t st = mxh_gpu_cuda(
            cudaStreamCreateWithFlags(&streams[dev], cudaStreamNonBlocking),
            "cudaStreamCreateWithFlags (the library's copy stream)");
        if (st != MXH_OK) {
            streams[dev] = NULL;
            return st;
        }
    }
    *s = streams[dev];
    return MXH_OK;
}

static mxh_status_t event_get(int dev, cudaEvent_t *ev)
{
    event_pool_t *pl = &pools[dev];
    if (pl->nfree > 0) {
        *ev = pl->free[--pl->nfree];
        return MXH_OK;
    }
    /* more copies in flight than ever before on this device: one more event */
    return mxh_gpu_cuda(cudaEventCreateWithFlags(ev, cudaEventDisableTiming),
                        "cudaEventCreateWithFlags (copy completion)");
}

static void event_put(int dev, cudaEvent_t ev)
{
    event_pool_t *pl = &pools[dev];
    if (pl->nfree == pl->cap) { /* grows with the peak number in flight, then never */
        int cap = pl->cap ? 2 * pl->cap : 16;
        cudaEvent_t *f = realloc(pl->free, (size_t)cap * sizeof(*f));
        if (f == NULL) {
            (void)mxh_gpu_cuda(cudaEventDestroy(ev), "cudaEventDestroy");
            return;
        }
        pl->free = f;
        pl->cap  = cap;
    }
    pl->free[pl->nfree++] = ev;
}

static mxh_status_t cuda_enter(void)
{
    cudaStream_t s;
    mxh_status_t st;
    int dev;

    if ((st = current_device(&dev)) != MXH_OK || (st = stream_of(dev, &s)) != MXH_OK)
        return st;
    if (entry_events[dev] == NULL &&
        (st = mxh_gpu_cuda(cudaEventCreateWithFlags(&entry_events[dev], cudaEventDisableTiming),
                           "cudaEventCreateWithFlags (entry order)")) != MXH_OK) {
        entry_events[dev] = NULL;
        return st;
    }
    /* the wait takes the event's state now: re-recording it later is safe */
    if ((st = mxh_gpu_cuda(cudaEventRecord(entry_events[dev], cudaStreamLegacy),
                           "cudaEventRecord (legacy stream, entry order)")) != MXH_OK)
        return st;
    return mxh_gpu_cuda(cudaStreamWaitEvent(s, entry_events[dev], 0),
                        "cudaStreamWaitEvent (entry order)");
}

/* Work queued on the current device's library stream: the stream and an event for its
 * completion (work_begin), then the event recorded after it into @ev (work_end, @st the
 * status of queueing the work; on failure the event goes back to the pool). */
static mxh_status_t work_begin(int *dev, cudaStream_t *s, cudaEvent_t *e)
{
    mxh_status_t st;
    if ((st = current_device(dev)) != MXH_OK || (st = stream_of(*dev, s)) != MXH_OK)
        return st;
    return event_get(*dev, e);
}

static mxh_status_t work_end(mxh_status_t st, int dev, cudaStream_t s, cudaEvent_t e,
                             const char *what, mxh_mem_event_t *ev)
{
    if (st == MXH_OK)
        st = mxh_gpu_cuda(cudaEventRecord(e, s), what);
    if (st != MXH_OK) {
        event_put(dev, e);
        return st;
    }
    ev->pending = 1;
    ev->h[0]    = (uintptr_t)e;
    ev->h[1]    = (uintptr_t)dev;
    return MXH_OK;
}

static mxh_status_t cuda_copy_start(void *dst, const void *src, size_t n, mxh_mem_event_t *ev)
{
    cudaStream_t s;
    cudaEvent_t e;
    mxh_status_t st;
    int dev;

    ev->pending = 0;
    ev->h[0]    = 0;
    ev->h[1]    = 0;
    if (n == 0) {
        ev->pending = 1; /* complete at the first test */
        return MXH_OK;
    }
    if ((st = work_begin(&dev, &s, &e)) != MXH_OK)
        return st;
    st = mxh_gpu_cuda(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s),
                      "cudaMemcpyAsync (staging a device buffer)");
    return work_end(st, dev, s, e, "cudaEventRecord (copy completion)", ev);
}

static int cuda_event_test(mxh_mem_event_t *ev)
{
    cudaEvent_t e = (cudaEvent_t)ev->h[0];
    cudaError_t rc;

    if (!ev->pending)
        return 1;
    if (e == NULL) { /* n == 0 */
        ev->pending = 0;
        return 1;
    }
    rc = cudaEventQuery(e);
    if (rc == cudaErrorNotReady)
        return 0; /* not an error: nothing to clear */
    event_put((int)ev->h[1], e);
    ev->pending = 0;
    ev->h[0]    = 0;
    if (rc == cudaSuccess)
        return 1;
    return -(int)mxh_gpu_cuda(rc, "a device copy (cudaEventQuery)");
}

/* ---- device node level ------------------------------------------------------------ */

_Static_assert(sizeof(mxh_ipc_desc_t) <= MXH_MEM_IPC_DESC_BYTES,
               "mxh_ipc_desc_t must fit the descriptor bytes of mxh_mem_ipc_desc_t");

static mxh_status_t cuda_ipc_export(const void *p, size_t n, mxh_mem_ipc_desc_t *d)
{
    mxh_ipc_desc_t g;
    mxh_status_t st;

    memset(d, 0, sizeof(*d));
    d->kind = MXH_MEM_CUDA;
    st      = mxh_gpu_ipc_export(p, &g);
    if (st != MXH_OK || !g.valid)
        return st;
    if (g.offset > g.size || n > g.size - g.offset)
        return MXH_OK; /* [p, p + n) is not inside one allocation: not exportable */
    memcpy(d->b, &g, sizeof(g));
    d->valid = 1;
    return MXH_OK;
}

static mxh_status_t cuda_ipc_map(const mxh_mem_ipc_desc_t *d, void *owner, void **ptr)
{
    mxh_ipc_desc_t g;

    *ptr = NULL;
    if (d->kind != MXH_MEM_CUDA || !d->valid) {
        mxh_error("cuda memory: ipc_map of a descriptor of kind %d, valid %d", (int)d->kind,
                  (int)d->valid);
        return MXH_ERR_INVALID_PARAM;
    }
    memcpy(&g, d->b, sizeof(g));
    return mxh_gpu_ipc_map(&g, owner, ptr);
}

/* The half types are in the core library (src/reduce), which unit tests of
 * src/mem do not link: referenced weakly (NULL: no half type exists). */
extern __typeof__(mxh_half_kind) mxh_half_kind __attribute__((weak));
extern __typeof__(mxh_half_op_lookup) mxh_half_op_lookup __attribute__((weak));

/* The kernels' element and the ops the CUDA kind reduces on it, per element of
 * the datatype table (reduce/dtypes.h). Not here (the staged path reduces
 * them): long double, the pair types (MINLOC/MAXLOC), Fortran types, C++ types
 * (host_only), and MAX/MIN on unsigned types (MPICH 4.0.2 compares those as
 * signed; mxh_reduce_multi follows it, the kernels do not). Which (element, op)
 * pairs have kernels at all: mxh_cuda_reduce_supported. */
#define ALL_OPS     0x3ffu
#define OPS_UINT    (ALL_OPS & ~(1u << MXH_CUDA_MAX | 1u << MXH_CUDA_MIN))
#define OPS_BYTE    (1u << MXH_CUDA_BAND | 1u << MXH_CUDA_BOR | 1u << MXH_CUDA_BXOR)
#define OPS_BOOL    (1u << MXH_CUDA_LAND | 1u << MXH_CUDA_LOR | 1u << MXH_CUDA_LXOR)
#define NO_CUDA_ELEM {MXH_CUDA_DT_NONE, 0}

static const struct {
    int      cdt; /* mxh_cuda_dt_t */
    unsigned ops; /* bit per mxh_cuda_op_t */
} cuda_elems[MXH_ELEM_COUNT] = {
    [MXH_ELEM_NONE] = NO_CUDA_ELEM,
    [MXH_ELEM_I8] = {MXH_CUDA_I8, ALL_OPS},     [MXH_ELEM_I16] = {MXH_CUDA_I16, ALL_OPS},
    [MXH_ELEM_I32] = {MXH_CUDA_I32, ALL_OPS},   [MXH_ELEM_I64] = {MXH_CUDA_I64, ALL_OPS},
    [MXH_ELEM_U8] = {MXH_CUDA_U8, OPS_UINT},    [MXH_ELEM_U16] = {MXH_CUDA_U16, OPS_UINT},
    [MXH_ELEM_U32] = {MXH_CUDA_U32, OPS_UINT},  [MXH_ELEM_U64] = {MXH_CUDA_U64, OPS_UINT},
    [MXH_ELEM_F32] = {MXH_CUDA_F32, ALL_OPS},   [MXH_ELEM_F64] = {MXH_CUDA_F64, ALL_OPS},
    [MXH_ELEM_LD] = NO_CUDA_ELEM,
    [MXH_ELEM_C32] = {MXH_CUDA_C32, ALL_OPS},   [MXH_ELEM_C64] = {MXH_CUDA_C64, ALL_OPS},
    [MXH_ELEM_BOOL] = {sizeof(_Bool) == 1 ? MXH_CUDA_U8 : MXH_CUDA_DT_NONE, OPS_BOOL},
    [MXH_ELEM_BYTE] = {MXH_CUDA_U8, OPS_BYTE},
    [MXH_ELEM_FP16] = {MXH_CUDA_F16, ALL_OPS},  [MXH_ELEM_BF16] = {MXH_CUDA_BF16, ALL_OPS},
};

/* The kernels' ops are the datatype table's op kinds SUM .. BXOR. */
_Static_assert((int)MXH_CUDA_SUM == (int)MXH_OP_SUM && (int)MXH_CUDA_MIN == (int)MXH_OP_MIN &&
                   (int)MXH_CUDA_LAND == (int)MXH_OP_LAND &&
                   (int)MXH_CUDA_BXOR == (int)MXH_OP_BXOR &&
                   (int)MXH_CUDA_OP_COUNT == (int)MXH_OP_NKERNEL,
               "mxh_cuda_op_t in mxh_op_kind_t order");

static mxh_cuda_op_t cuda_op_of(MPI_Op op)
{
    int k = mxh_dtype_op_kind(op);
    return k >= 0 && k < MXH_OP_NKERNEL ? (mxh_cuda_op_t)k : MXH_CUDA_OP_NONE;
}

/* (dt, op) as the kernels' (element kind, op); 0 when there is no kernel. */
static int cuda_reduce_pair(MPI_Datatype dt, MPI_Op op, mxh_cuda_dt_t *cdt, mxh_cuda_op_t *cop)
{
    mxh_half_kind_t hk = mxh_half_kind != NULL ? mxh_half_kind(dt) : MXH_HALF_NONE;
    mxh_cuda_op_t o    = cuda_op_of(op);

    *cdt = MXH_CUDA_DT_NONE;
    *cop = MXH_CUDA_OP_NONE;
    if (hk != MXH_HALF_NONE) {
        mxh_half_kind_t ok;
        MPI_Op base;
        /* the user ops standing for SUM/PROD/MAX/MIN on the half types */
        if (o == MXH_CUDA_OP_NONE && mxh_half_op_lookup != NULL &&
            mxh_half_op_lookup(op, &ok, &base) && ok == hk)
            o = cuda_op_of(base);
        if (o == MXH_CUDA_OP_NONE || o > MXH_CUDA_MIN)
            return 0;
        *cdt = hk == MXH_HALF_FP16 ? MXH_CUDA_F16 : MXH_CUDA_BF16;
    } else {
        const mxh_dtype_desc_t *d = mxh_dtype_find(dt);
        if (d == NULL || d->host_only || d->elem >= MXH_ELEM_COUNT || o == MXH_CUDA_OP_NONE ||
            cuda_elems[d->elem].cdt == MXH_CUDA_DT_NONE || !(cuda_elems[d->elem].ops >> o & 1u))
            return 0;
        *cdt = (mxh_cuda_dt_t)cuda_elems[d->elem].cdt;
    }
    *cop = o;
    return mxh_cuda_reduce_supported(*cdt, *cop);
}

static int cuda_reduce_ok(MPI_Datatype dt, MPI_Op op)
{
    mxh_cuda_dt_t cdt;
    mxh_cuda_op_t cop;
    return cuda_reduce_pair(dt, op, &cdt, &cop);
}

static mxh_status_t cuda_reduce_start(void *out, const void *const *in, int nin, size_t count,
                                      MPI_Datatype dt, MPI_Op op, mxh_mem_event_t *ev)
{
    mxh_cuda_dt_t cdt;
    mxh_cuda_op_t cop;
    cudaStream_t s;
    cudaEvent_t e;
    mxh_status_t st;
    int dev;

    ev->pending = 0;
    ev->h[0]    = 0;
    ev->h[1]    = 0;
    if (nin < 1 || in == NULL) {
        mxh_error("cuda memory: reduce_start with %d inputs", nin);
        return MXH_ERR_INVALID_PARAM;
    }
    if (!cuda_reduce_pair(dt, op, &cdt, &cop)) {
        mxh_error("cuda memory: reduce_start: no kernel for this (datatype, op) "
                  "(reduce_ok is 0)");
        return MXH_ERR_UNSUPPORTED;
    }
    if (count == 0) {
        ev->pending = 1; /* complete at the first test */
        return MXH_OK;
    }
    if ((st = work_begin(&dev, &s, &e)) != MXH_OK)
        return st;
    st = mxh_gpu_cuda(mxh_cuda_reduce(out, in, nin, count, cdt, cop, s),
                      "mxh_cuda_reduce (a device node level reduction)");
    return work_end(st, dev, s, e, "cudaEventRecord (reduction completion)", ev);
}

/* Everything queued on the library's stream so far (copies, reductions, and
 * what enter() made the stream wait for) is complete when this event is. */
static mxh_status_t cuda_fence_start(mxh_mem_event_t *ev)
{
    cudaStream_t s;
    cudaEvent_t e;
    mxh_status_t st;
    int dev;

    ev->pending = 0;
    ev->h[0]    = 0;
    ev->h[1]    = 0;
    if ((st = work_begin(&dev, &s, &e)) != MXH_OK)
        return st;
    return work_end(MXH_OK, dev, s, e, "cudaEventRecord (fence)", ev);
}

static void *cuda_stage_alloc(size_t n)
{
    void *p = NULL;
    if (mxh_gpu_cuda(cudaHostAlloc(&p, n > 0 ? n : 1, cudaHostAllocPortable),
                     "cudaHostAlloc (pinned staging memory)") != MXH_OK)
        return NULL;
    return p;
}

static void cuda_stage_free(void *p, size_t n)
{
    (void)n;
    if (p != NULL)
        (void)mxh_gpu_cuda(cudaFreeHost(p), "cudaFreeHost (pinned staging memory)");
}

static void *cuda_work_alloc(size_t n)
{
    void *p = NULL;
    if (mxh_gpu_cuda(cudaMalloc(&p, n > 0 ? n : 1), "cudaMalloc (work memory)") != MXH_OK)
        return NULL;
    return p;
}

static void cuda_work_free(void *p, size_t n)
{
    (void)n;
    if (p != NULL)
        (void)mxh_gpu_cuda(cudaFree(p), "cudaFree (work memory)");
}

const mxh_mem_ops_t mxh_mem_cuda_ops = {
    .kind        = MXH_MEM_CUDA,
    .name        = "cuda",
    .owns        = cuda_owns,
    .copy_start  = cuda_copy_start,
    .event_test  = cuda_event_test,
    .stage_alloc = cuda_stage_alloc,
    .stage_free  = cuda_stage_free,
    .hold        = NULL,
    .release     = NULL,
    .enter       = cuda_enter,
    .ipc_export   = cuda_ipc_export,
    .ipc_map      = cuda_ipc_map,
    .reduce_start = cuda_reduce_start,
    .reduce_ok    = cuda_reduce_ok,
    .fence_start  = cuda_fence_start,
    .work_alloc   = cuda_work_alloc,
    .work_free    = cuda_work_free,
};

void mxh_mem_cuda_finalize(void)
{
    int cur = -1;
    if (!mxh_gpu_present())
        return;
    if (cudaGetDevice(&cur) != cudaSuccess) {
        (void)cudaGetLastError();
        cur = -1;
    }
    for (int d = 0; d < MAX_DEVICES; d++) {
        if (streams[d] == NULL && pools[d].nfree == 0 && entry_events[d] == NULL) {
            free(pools[d].free);
            pools[d] = (event_pool_t){NULL, 0, 0};
            continue;
        }
        /* destroy on the owning device; copies in flight finish first
         * (cudaStreamDestroy does not wait, but releases after the work) */
        if (mxh_gpu_cuda(cudaSetDevice(d), "cudaSetDevice (teardown)") != MXH_OK)
            continue;
        if (entry_events[d] != NULL) {
            (void)mxh_gpu_cuda(cudaEventDestroy(entry_events[d]), "cudaEventDestroy");
            entry_events[d] = NULL;
        }
        for (int i = 0; i < pools[d].nfree; i++)
            (void)mxh_gpu_cuda(cudaEventDestroy(pools[d].free[i]), "cudaEventDestroy");
        free(pools[d].free);
        pools[d] = (event_pool_t){NULL, 0, 0};
        if (streams[d] != NULL) {
            (void)mxh_gpu_cuda(cudaStreamDestroy(streams[d]), "cudaStreamDestroy");
            streams[d] = NULL;
        }
    }
    if (cur >= 0)
        (void)mxh_gpu_cuda(cudaSetDevice(cur), "cudaSetDevice (teardown)");
}
