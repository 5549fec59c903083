/* Process-wide cache of peer IPC mappings keyed by (kind, pid, allocation
 * range, buffer id). See ipc_cache.h for the rules; this file has no CUDA code
 * (the CUDA opener is in src/mem/gpu.c, the test kind's in src/mem/mem_test.c),
 * so the logic is unit-tested anywhere. */
#include "config.h"

#include "mem/ipc_cache.h"
#include "mem/mem.h"
#include "mem/mem_impl.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

#ifdef HAVE_CUDA
/* the CUDA IPC opener (src/mem/gpu.c) */
extern const mxh_ipc_cache_ops_t mxh_gpu_ipc_ops;
#endif

#define DEFAULT_CAPACITY 256

/* Owners are tracked as bits of a 64-bit mask per entry: owner slot i (of
 * the 63 explicit ones) is bit i. Beyond 63 owners alive at once, the others
 * share OVERFLOW_BIT: their entries are not closed at release (only by
 * eviction or clear), which is safe, merely lazier. */
#define OWNER_SLOTS  63
#define OVERFLOW_BIT (UINT64_C(1) << 63)

typedef struct entry {
    mxh_ipc_key_t key;
    void         *mapped;   /* local address of key.base; NULL: slot unused */
    uint64_t      owners;   /* bit mask of owner slots */
    uint64_t      last_use; /* LRU clock */
} entry_t;

static struct {
    const mxh_ipc_cache_ops_t *ops;
    int                        ops_set; /* 0: each kind's own opener (ops_for) */
    entry_t                   *tab;
    int                        cap;     /* entries in tab (0: not allocated yet) */
    int                        max;     /* capacity for the next allocation */
    uint64_t                   clock;
    const void                *owner[OWNER_SLOTS];
    mxh_ipc_cache_stats_t      st;
} C = {.max = DEFAULT_CAPACITY};

/* The opener of @kind's mappings: the one set by a test, else the kind's own. */
static const mxh_ipc_cache_ops_t *ops_for(int32_t kind)
{
    if (C.ops_set)
        return C.ops;
    switch (kind) {
#ifdef HAVE_CUDA
    case MXH_MEM_CUDA:
        return &mxh_gpu_ipc_ops;
#endif
    case MXH_MEM_TEST:
        return &mxh_mem_test_ipc_ops;
    default:
        return NULL;
    }
}

static void entry_close(entry_t *e)
{
    const mxh_ipc_cache_ops_t *ops;
    if (e->mapped == NULL)
        return;
    ops = ops_for(e->key.kind);
    mxh_trace("ipc cache: close kind %d pid %d [0x%llx, +%llu) id %llu", (int)e->key.kind,
              (int)e->key.pid,
              (unsigned long long)e->key.base, (unsigned long long)e->key.size,
              (unsigned long long)e->key.buffer_id);
    if (ops != NULL && ops->close != NULL)
        ops->close(ops->arg, &e->key, e->mapped);
    memset(e, 0, sizeof(*e));
    C.st.entries--;
}

static int overlaps(const mxh_ipc_key_t *a, const mxh_ipc_key_t *b)
{
    return a->kind == b->kind && a->pid == b->pid && a->device == b->device &&
           a->base < b->base + b->size &&
           b->base < a->base + a->size;
}

static int contains(const mxh_ipc_key_t *outer, const mxh_ipc_key_t *inner)
{
    return outer->kind == inner->kind && outer->pid == inner->pid &&
           outer->device == inner->device && outer->buffer_id == inner->buffer_id &&
           outer->base <= inner->base && inner->base + inner->size <= outer->base + outer->size;
}

/* The bit of @owner (0 for NULL), taking a free slot for a new owner. */
static uint64_t owner_bit(const void *owner)
{
    int free_slot = -1;
    if (owner == NULL)
        return 0;
    for (int i = 0; i < OWNER_SLOTS; i++) {
        if (C.owner[i] == owner)
            return UINT64_C(1) << i;
        if (C.owner[i] == NULL && free_slot < 0)
            free_slot = i;
    }
    if (free_slot < 0)
        return OVERFLOW_BIT;
    C.owner[free_slot] = owner;
    return UINT64_C(1) << free_slot;
}

static void evict_pid(int32_t kind, int32_t pid)
{
    for (int i = 0; i < C.cap; i++)
        if (C.tab[i].mapped != NULL && C.tab[i].key.kind == kind && C.tab[i].key.pid == pid)
            entry_close(&C.tab[i]);
}

void mxh_ipc_cache_clear(void)
{
    for (int i = 0; i < C.cap; i++)
        entry_close(&C.tab[i]);
    memset(C.owner, 0, sizeof(C.owner));
}

void mxh_ipc_cache_set_ops(const mxh_ipc_cache_ops_t *ops)
{
    mxh_ipc_cache_clear(); /* with the opener that opened them */
    C.ops     = ops;
    C.ops_set = ops != NULL;
}

void mxh_ipc_cache_set_capacity(int capacity)
{
    mxh_ipc_cache_clear();
    free(C.tab);
    C.tab = NULL;
    C.cap = 0;
    C.max = capacity >= 1 ? capacity : 1;
}

mxh_status_t mxh_ipc_cache_open(const mxh_ipc_key_t *key, const void *handle, void *owner,
                                void **mapped)
{
    const mxh_ipc_cache_ops_t *ops = ops_for(key->kind);
    entry_t *slot = NULL;
    uint64_t bit;
    void *m = NULL;
    mxh_ipc_open_rc_t rc;

    *mapped = NULL;
    if (key->size == 0) {
        mxh_error("ipc cache: peer %d allocation at 0x%llx has size 0", (int)key->pid,
                  (unsigned long long)key->base);
        return MXH_ERR_INVALID_PARAM;
    }
    if (ops == NULL || ops->open == NULL) {
        mxh_error("ipc cache: no IPC opener for memory kind %d in this build (peer %d)",
                  (int)key->kind, (int)key->pid);
        return MXH_ERR_UNSUPPORTED;
    }
    if (C.tab == NULL) { /* the one allocation (again after set_capacity) */
        C.tab = calloc((size_t)C.max, sizeof(*C.tab));
        if (C.tab == NULL)
            return MXH_ERR_NO_MEMORY;
        C.cap = C.max;
    }
    C.clock++;
    bit = owner_bit(owner);

    for (int i = 0; i < C.cap; i++) {
        entry_t *e = &C.tab[i];
        if (e->mapped != NULL && contains(&e->key, key)) {
            e->owners |= bit;
            e->last_use = C.clock;
            C.st.hits++;
            *mapped = (char *)e->mapped + (key->base - e->key.base);
            return MXH_OK;
        }
    }
    C.st.misses++;

    /* 1. the peer's memory in this range changed: older mappings are stale */
    for (int i = 0; i < C.cap; i++) {
        entry_t *e = &C.tab[i];
        if (e->mapped != NULL && overlaps(&e->key, key)) {
            mxh_debug("ipc cache: peer %d range [0x%llx, +%llu) id %llu replaced by "
                      "[0x%llx, +%llu) id %llu: closing the old mapping",
                      (int)key->pid, (unsigned long long)e->key.base,
                      (unsigned long long)e->key.size, (unsigned long long)e->key.buffer_id,
                      (unsigned long long)key->base, (unsigned long long)key->size,
                      (unsigned long long)key->buffer_id);
            entry_close(e);
            C.st.overlap_evictions++;
        }
    }
    /* 2. open; 3. on "already mapped" the driver's mapping of some older
     * allocation of that peer covers more than we recorded: drop them all */
    rc = ops->open(ops->arg, key, handle, &m);
    if (rc == MXH_IPC_OPEN_ALREADY_MAPPED) {
        mxh_debug("ipc cache: peer %d [0x%llx, +%llu): already mapped; closing all %d's "
                  "mappings and retrying",
                  (int)key->pid, (unsigned long long)key->base, (unsigned long long)key->size,
                  (int)key->pid);
        evict_pid(key->kind, key->pid);
        C.st.retries++;
        rc = ops->open(ops->arg, key, handle, &m);
    }
    if (rc != MXH_IPC_OPEN_OK || m == NULL) {
        mxh_error("ipc cache: cannot map peer %d's allocation [0x%llx, +%llu) id %llu%s",
                  (int)key->pid, (unsigned long long)key->base, (unsigned long long)key->size,
                  (unsigned long long)key->buffer_id,
                  rc == MXH_IPC_OPEN_ALREADY_MAPPED ? " (still already mapped after the retry)"
                                                    : "");
        return MXH_ERR_MPI; /* mapped to MPI_ERR_OTHER, like the CUDA errors */
    }

    /* a free slot, else the least recently used entry */
    for (int i = 0; i < C.cap; i++) {
        entry_t *e = &C.tab[i];
        if (e->mapped == NULL) {
            slot = e;
            break;
        }
        if (slot == NULL || e->last_use < slot->last_use)
            slot = e;
    }
    if (slot->mapped != NULL) {
        entry_close(slot);
        C.st.lru_evictions++;
    }
    slot->key      = *key;
    slot->mapped   = m;
    slot->owners   = bit;
    slot->last_use = C.clock;
    C.st.entries++;
    *mapped = m;
    return MXH_OK;
}

void mxh_ipc_cache_release_owner(const void *owner)
{
    uint64_t bit = 0;
    if (owner == NULL)
        return;
    for (int i = 0; i < OWNER_SLOTS; i++)
        if (C.owner[i] == owner) {
            bit        = UINT64_C(1) << i;
            C.owner[i] = NULL;
            break;
        }
    if (bit == 0)
        return; /* no mappings, or an overflow owner: left to eviction */
    for (int i = 0; i < C.cap; i++) {
        entry_t *e = &C.tab[i];
        if (e->mapped != NULL && (e->owners & bit)) {
            e->owners &= ~bit;
            if (e->owners == 0) {
                entry_close(e);
                C.st.owner_closes++;
            }
        }
    }
}

void mxh_ipc_cache_stats(mxh_ipc_cache_stats_t *stats)
{
    *stats = C.st;
}
