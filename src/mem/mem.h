/* Memory kinds: where a user buffer lives and how the engine moves data in and
 * out of it. One small ops table per kind (compare libfabric's hmem ops and
 * UCC's mc/ec components); the engine never touches a non-host buffer except
 * through its kind's ops.
 *
 *   host   ordinary host memory: copies are memcpy and complete at once.
 *   cuda   device and managed memory (builds with CUDA): copies are
 *          cudaMemcpyAsync on the library's own stream into/out of pinned host
 *          staging memory, completion is a CUDA event; peer mappings are CUDA
 *          IPC handles cached by address range.
 *   test   a test-only kind over host memory that behaves like a device: its
 *          buffers come from mxh_mem_test_alloc, the engine may not touch
 *          them directly (while a collective holds them they are mprotect'ed
 *          PROT_NONE; the ops copy through a second mapping of the same pages),
 *          and a copy takes effect only when its event is tested complete,
 *          several polls after it was started, so a consumer that reads data
 *          before its copy completed reads stale bytes and the test fails.
 *          It emulates CUDA IPC between the processes of one node too (peers
 *          map an allocation's memfd through /proc/<pid>/fd; a peer's buffer
 *          is never directly accessible) and runs reduce_start with the CPU
 *          kernels, deferred like its copies.
 *
 * The engine's data path for a buffer of a non-host kind ("staged"): its data
 * is copied into host work memory (the kind's staging allocator: pinned for
 * CUDA), the hierarchical schedule runs there, and results are copied back;
 * fragments are copied asynchronously so that copies overlap the transfers of
 * other fragments. */
#ifndef MXH_MEM_H
#define MXH_MEM_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mxh_mem_kind {
    MXH_MEM_HOST = 0,
    MXH_MEM_CUDA,
    MXH_MEM_TEST,
    MXH_MEM_NKINDS
} mxh_mem_kind_t;

/* Completion of one asynchronous copy. Owned by the caller (e.g. inside a
 * task), no allocation: the kinds keep what they need in these words. */
typedef struct mxh_mem_event {
    int       pending; /* 1 from copy_start until event_test returned 1 */
    uintptr_t h[4];    /* kind-private */
} mxh_mem_event_t;

/* A buffer described for the peers of its node (IPC), filled by ipc_export
 * and carried to them in shared memory: plain bytes, no pointer that only the
 * exporter can use. valid = 0: this buffer cannot be mapped by peers (host
 * memory, a kind without IPC, CUDA stream-ordered memory); every rank then
 * takes the staged path (exec/ipc.h: the decision is agreed). */
#define MXH_MEM_IPC_DESC_BYTES 112
typedef struct mxh_mem_ipc_desc {
    int32_t       kind;  /* mxh_mem_kind_t of the exporter's ops */
    int32_t       valid;
    unsigned char b[MXH_MEM_IPC_DESC_BYTES]; /* kind-private */
} mxh_mem_ipc_desc_t;

typedef struct mxh_mem_ops {
    mxh_mem_kind_t kind;
    const char    *name;
    /* Whether @p is memory of this kind (host: always true; tried last). */
    int (*owns)(const void *p);
    /* Start copying @n bytes from @src to @dst; at least one of the two is
     * memory of this kind (its own or a peer's mapped by ipc_map), the other
     * host memory (staging or user host memory) or memory of this kind. The
     * copy is complete (and dst readable) only once event_test(@ev) returned 1.
     * n == 0 completes at once. */
    mxh_status_t (*copy_start)(void *dst, const void *src, size_t n, mxh_mem_event_t *ev);
    /* 1: complete (ev->pending cleared), 0: still running, never blocks.
     * Errors (a failed CUDA copy) are logged and returned as a negative
     * mxh_status_t, i.e. -(int)MXH_ERR_...; the event is then no longer
     * pending. Testing a completed (or never started) event returns 1. */
    int (*event_test)(mxh_mem_event_t *ev);
    /* Host memory that copy_start can use asynchronously (pinned for CUDA);
     * NULL on failure. Called rarely (pools grow), never per call. */
    void *(*stage_alloc)(size_t n);
    void (*stage_free)(void *p, size_t n);
    /* Test kind only (NULL elsewhere): forbid / allow direct access to the
     * allocation holding @p while a collective holds it. Counted: nested holds
     * (several requests on one buffer) release at the last. @p may be any
     * pointer inside the allocation; every hold needs exactly one release
     * (an unbalanced release is logged and ignored). */
    void (*hold)(const void *p);
    void (*release)(const void *p);
    /* Optional (NULL: nothing to do): called once when a collective on
     * memory of this kind starts, before its first copy_start, so that the
     * kind's copies come after the application's work that produced the
     * data (CUDA: the library's stream waits for the legacy default stream,
     * which itself waits for every blocking stream, so a cudaMemset or a
     * kernel on the default stream just before the call is seen). */
    mxh_status_t (*enter)(void);

    /* ---- device node level (exec/ipc.c); all optional: NULL = the kind has
     * no peer mappings and is always staged. Every pointer these take is
     * memory of this kind: the rank's own or a peer's mapped by ipc_map. */

    /* Describe [p, p + n) for the peers of this node (d->valid = 0 when it
     * cannot be exported: not an error). Cheap after the first call per
     * allocation (kinds cache their export handles). */
    mxh_status_t (*ipc_export)(const void *p, size_t n, mxh_mem_ipc_desc_t *d);
    /* A peer's exported buffer in this process: *ptr is the peer's p, usable
     * by copy_start/reduce_start (never by direct access: it may be device
     * memory). Mapped through the process-wide cache of mem/ipc_cache.h and
     * tagged with @owner (mxh_ipc_cache_release_owner(owner) at communicator
     * free closes what only it used); valid until then or until the peer's
     * allocation is reused. */
    mxh_status_t (*ipc_map)(const mxh_mem_ipc_desc_t *d, void *owner, void **ptr);
    /* out = in[0] op in[1] op ... op in[nin-1] over @count elements of the
     * predefined type @dt (left to right, the bits of mxh_reduce_multi on the
     * same inputs), asynchronous like copy_start: complete once event_test
     * returned 1. @out may be any one of the inputs (same pointer, element by
     * element), no other overlap. nin >= 1 (1: a copy). */
    mxh_status_t (*reduce_start)(void *out, const void *const *in, int nin, size_t count,
                                 MPI_Datatype dt, MPI_Op op, mxh_mem_event_t *ev);
    /* 1 if reduce_start has a kernel for (@dt, @op). */
    int (*reduce_ok)(MPI_Datatype dt, MPI_Op op);
    /* An event that completes once every copy and reduction this process
     * started on the kind before it (and the work enter() ordered them
     * after: the application's input) is complete; a rank raises "my buffer
     * is ready" for its peers only after it. */
    mxh_status_t (*fence_start)(mxh_mem_event_t *ev);

    /* ---- device-resident schedules (exec/p2p.h); optional: NULL = the kind's
     * buffers are staged whole. */

    /* Memory of this kind for the engine's own work and receive space (device
     * memory), NULL on failure; called rarely (pools grow), never per call. */
    void *(*work_alloc)(size_t n);
    void (*work_free)(void *p, size_t n);
    /* The address to give MPI for memory @p of this kind where MPI takes the kind
     * directly (MXH_XFER_DIRECT); NULL: @p itself. */
    void *(*net_ptr)(const void *p);
} mxh_mem_ops_t;

/* Order: a kind's copies and reductions of one process run in the order they were
 * started (one stream per device): once an event completes, every copy and
 * reduction started on the kind before it is complete too. */

/* Fast path of mxh_mem_of and mxh_mem_query (inline: they run once per
 * buffer and call): nonzero while every pointer is host memory, i.e. no test
 * allocation is live and no GPU is present (probed by the first call that
 * asks, set once found absent; constant 1 without CUDA). mem.c. */
extern const mxh_mem_ops_t mxh_mem_host_ops;
extern int mxh_mem_test_live;
extern int mxh_mem_no_gpu;
static inline int mxh_mem_host_only(void)
{
    return mxh_mem_test_live <= 0 && mxh_mem_no_gpu;
}

/* The kind of @p (NULL and MPI_IN_PLACE are host). Cheap for host memory in a
 * process without a GPU (two loads, inline). */
const mxh_mem_ops_t *mxh_mem_of_any(const void *p);
static inline const mxh_mem_ops_t *mxh_mem_of(const void *p)
{
    return mxh_mem_host_only() ? &mxh_mem_host_ops : mxh_mem_of_any(p);
}
const mxh_mem_ops_t *mxh_mem_ops(mxh_mem_kind_t kind);

/* Blocking copy through a kind's ops: start, then test until complete.
 * Returns the status of the copy. */
mxh_status_t mxh_mem_copy_sync(const mxh_mem_ops_t *ops, void *dst, const void *src, size_t n);

/* mxh_mem_of for argument checking (the entry layer, once per buffer and
 * call): also rejects, with an error logged naming @what ("sendbuf"), device
 * memory of a GPU other than the current device and, when @check is set
 * (the buffer will be accessed: count > 0), a pointer that is neither a live
 * CUDA allocation nor readable host memory (freed device memory). Without a
 * CUDA device it is mxh_mem_of and never fails. *@ops is always set (host on
 * error). */
mxh_status_t mxh_mem_query_any(const void *p, const char *what, int check,
                               const mxh_mem_ops_t **ops);
static inline mxh_status_t mxh_mem_query(const void *p, const char *what, int check,
                                         const mxh_mem_ops_t **ops)
{
    if (mxh_mem_host_only()) {
        *ops = &mxh_mem_host_ops;
        return MXH_OK;
    }
    return mxh_mem_query_any(p, what, check, ops);
}

/* Staging memory of @ops's kind (its stage_alloc) for calls that keep it past one
 * collective (nonblocking plain calls: several in flight at once), from a small
 * process-wide cache (at most 8 buffers per kind, the smallest given back first), so
 * that a steady stream of calls allocates (and, for CUDA, synchronises in
 * cudaFreeHost) nothing. *@got: the buffer's size, to hand back to mxh_mem_stage_put. */
void *mxh_mem_stage_get(const mxh_mem_ops_t *ops, size_t n, size_t *got);
void mxh_mem_stage_put(const mxh_mem_ops_t *ops, void *p, size_t n);

/* Release what the kinds hold process-wide (CUDA streams and pooled events,
 * the peer IPC mappings of mem/ipc_cache.h). For the library's global
 * teardown (MPI_Finalize); the kinds work again afterwards (lazily). */
void mxh_mem_finalize(void);

/* ---- the test kind -------------------------------------------------------------- */

/* @n bytes of test-kind memory (page-aligned, zeroed), NULL on failure. The
 * caller may read and write it directly whenever no collective holds it.
 * Pointers in [p, p + max(n, 1)) are test memory; copies must stay within
 * [p, p + n). Not thread-safe (nor are the test kind's ops). */
void *mxh_mem_test_alloc(size_t n);
void mxh_mem_test_free(void *p);
/* Polls of event_test before a copy of the test kind completes (default 3;
 * 0: at the first test). Process-wide, for tests. */
void mxh_mem_test_set_delay(int polls);
/* Copies of the test kind (n > 0) started and completed since the process
 * started (tests check that the staged path ran). */
uint64_t mxh_mem_test_copies(void);
/* Reductions of the test kind (reduce_start, count > 0) completed, and peer
 * allocations mapped by its IPC opener, since the process started (tests
 * check that the device node level ran). */
uint64_t mxh_mem_test_reductions(void);
uint64_t mxh_mem_test_ipc_opens(void);
/* Test-only "CUDA-aware MPI" for the test kind: when set, MPI may be given the kind's
 * memory (through net_ptr: the alias the ops use) and the device network path sends it
 * directly; the engine itself still may not touch it. Process-wide, for tests (every
 * rank alike or not: the messages are the same). */
void mxh_mem_test_set_mpi_direct(int on);
int mxh_mem_test_mpi_direct(void);
/* Current hold count of the test allocation holding @p (0: not held or not
 * test memory). For tests and assertions. */
int mxh_mem_test_holds(const void *p);

#ifdef __cplusplus
}
#endif

#endif
