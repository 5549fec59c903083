/* Process-wide cache of mappings of peers' device memory (CUDA IPC).
 *
 * Opening a peer's IPC handle is expensive (tens of microseconds to
 * milliseconds) and a process may map a given peer allocation only once, so
 * the mappings are opened once and cached. An entry is keyed by
 *
 *   (memory kind, exporter pid, exporter's allocation range [base, base + size),
 *    buffer id)
 *
 * and a lookup hits an entry of the same kind, pid and buffer id whose range
 * contains the requested one. Kinds never interact: the eviction rules below
 * apply within one (kind, pid) (a test-kind mapping of a peer says nothing
 * about its CUDA allocations).
 *
 * Why the range (the defect this replaces): the old cache keyed entries by the
 * exact (pid, base). When a peer frees an allocation and gets a new one that
 * overlaps it at another base, the stale mapping was not found, stayed open,
 * and opening the new handle failed with cudaErrorAlreadyMapped (the driver
 * maps whole allocations; UCX, Open MPI and MPICH each had to add the same
 * fix: evict overlapping entries and retry). Here, on a miss:
 *
 *   1. every entry of that (kind, pid) whose range overlaps the new range is closed
 *      (the peer freed that memory: its mapping is stale for every owner);
 *   2. the handle is opened;
 *   3. if the open still fails with "already mapped" (the driver's mapping
 *      covered more than the recorded range), every entry of that (kind, pid)
 *      is closed and the open is retried once.
 *
 * Owners: each entry remembers which owners (opaque pointers; the engine uses
 * its per-communicator object) use it. mxh_ipc_cache_release_owner(owner),
 * called when that communicator is freed, drops the owner from every entry
 * and closes the entries no owner uses any more. A NULL owner is allowed: such
 * entries go only by eviction or mxh_ipc_cache_clear().
 *
 * Capacity: at most mxh_ipc_cache_set_capacity() entries (default 256); a miss
 * with the cache full closes the least recently used entry. A mapping the
 * caller got stays valid until its owner is released, until the peer's range
 * is reused (step 1/3 above: the peer freed it), or until it is the LRU
 * victim; so the capacity must exceed the number of peer buffers one
 * collective (or all collectives in flight) touch at once.
 *
 * The opener (open/close of one mapping) is pluggable. By default it is chosen
 * by the key's kind: MXH_MEM_CUDA -> cudaIpcOpenMemHandle/cudaIpcCloseMemHandle
 * (mxh_gpu_ipc_ops in src/mem/gpu.c, CUDA builds only), MXH_MEM_TEST -> the
 * test kind's /proc/<pid>/fd mapping (src/mem/mem_test.c); other kinds have
 * none. Unit tests plug in one fake for every kind that simulates the driver
 * (and its "already mapped" error) on a machine without a GPU.
 *
 * No allocation after the first open (the entry table is allocated once, at
 * the current capacity). Not thread-safe: callers serialize (the library's
 * collectives run on one thread at a time per process).
 */
#ifndef MXH_IPC_CACHE_H
#define MXH_IPC_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What identifies one exported allocation of a peer. */
typedef struct mxh_ipc_key {
    int32_t  kind;      /* mxh_mem_kind_t of the exporter's memory (picks the opener) */
    int32_t  pid;       /* exporting process */
    uint64_t base;      /* exporter's allocation start (its address space) */
    uint64_t size;      /* allocation size in bytes (> 0) */
    uint64_t buffer_id; /* exporter's unique id of the allocation */
    int32_t  device;    /* importing device (CUDA: a mapping lives in the context of the
                           device current when it was opened); 0 for kinds without one */
} mxh_ipc_key_t;

/* Result of an opener's open. */
typedef enum mxh_ipc_open_rc {
    MXH_IPC_OPEN_OK = 0,
    MXH_IPC_OPEN_ALREADY_MAPPED, /* the driver holds an overlapping mapping */
    MXH_IPC_OPEN_FAILED          /* anything else (the opener logged the cause) */
} mxh_ipc_open_rc_t;

typedef struct mxh_ipc_cache_ops {
    /* Map the allocation @key described by the opaque exporter handle
     * @handle; on success *@mapped is the local address of key->base. */
    mxh_ipc_open_rc_t (*open)(void *arg, const mxh_ipc_key_t *key, const void *handle,
                              void **mapped);
    /* Unmap what open returned (errors are the closer's to log). */
    void (*close)(void *arg, const mxh_ipc_key_t *key, void *mapped);
    void *arg;
} mxh_ipc_cache_ops_t;

/* Replace the opener of every kind (tests). Closes every cached mapping with
 * the old opener first. NULL restores the default: per kind, CUDA IPC (CUDA
 * builds) and the test kind's; a kind without one fails its opens with
 * MXH_ERR_UNSUPPORTED. */
void mxh_ipc_cache_set_ops(const mxh_ipc_cache_ops_t *ops);

/* Maximum number of cached mappings (>= 1; default 256). Closes every cached
 * mapping (the table is reallocated at the next open). */
void mxh_ipc_cache_set_capacity(int capacity);

/* The local address of the peer allocation @key (its base: add the offset of
 * the exported pointer), opened on a miss as described above and tagged with
 * @owner. Errors: MXH_ERR_INVALID_PARAM (size 0), MXH_ERR_NO_MEMORY,
 * MXH_ERR_UNSUPPORTED (no opener for key->kind), MXH_ERR_MPI (the open failed;
 * logged). */
mxh_status_t mxh_ipc_cache_open(const mxh_ipc_key_t *key, const void *handle, void *owner,
                                void **mapped);

/* @owner no longer uses its mappings: close those no other owner uses. */
void mxh_ipc_cache_release_owner(const void *owner);

/* Close every cached mapping (the table itself is kept). */
void mxh_ipc_cache_clear(void);

/* Statistics (tests, debug logs). Counters run since the process started. */
typedef struct mxh_ipc_cache_stats {
    int      entries;  /* mappings open now */
    uint64_t hits, misses;
    uint64_t overlap_evictions; /* entries closed because a new range overlapped */
    uint64_t retries;           /* opens retried after "already mapped" */
    uint64_t lru_evictions;
    uint64_t owner_closes;      /* entries closed by mxh_ipc_cache_release_owner */
} mxh_ipc_cache_stats_t;
void mxh_ipc_cache_stats(mxh_ipc_cache_stats_t *stats);

#ifdef __cplusplus
}
#endif

#endif
