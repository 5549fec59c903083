/* The test memory kind: host memory that behaves like device memory, so that
 * CI exercises the engine's staged (device) path without a GPU. See mem.h.
 *
 * Each allocation is a memfd mapped twice: the user mapping (returned by
 * mxh_mem_test_alloc; what the user and the engine see) and a private alias
 * that only these ops use. hold() makes the user mapping PROT_NONE, so any
 * direct access by the engine while a collective holds the buffer faults at
 * once, while copy_start/event_test keep working through the alias.
 *
 * Copies are deferred: copy_start records (dst, src, n) in the event and the
 * bytes move when event_test is called for the (delay + 1)-th time. So a
 * consumer that reads the destination before its copy completed reads stale
 * bytes, and a producer that overwrites the source before completion is
 * caught too (the source is read at completion, as a real asynchronous copy
 * may do).
 *
 * Device node level (mem.h's optional ops), emulating CUDA IPC between the
 * processes of one node: every allocation keeps its memfd open and has a
 * process-unique buffer id (never reused). ipc_export describes it by (pid,
 * fd, user base, mapped length, buffer id, offset); a peer's opener (the
 * default of mem/ipc_cache.c for kind MXH_MEM_TEST) opens /proc/<pid>/fd/<fd>
 * and maps it twice, like an own allocation: a user view that stays
 * PROT_NONE forever (the engine must never touch a peer's memory directly: it
 * may be device memory) and an alias the ops use. The mapping is registered
 * as a test allocation flagged peer, so owns() and the ops accept it.
 * reduce_start is deferred like a copy and reads its inputs at completion
 * (a protocol that lets peers go on before its event completed is caught);
 * fence_start completes, after the delay, every copy and reduction started
 * before it (their events then test complete at once), like a CUDA event
 * recorded behind them on the library's stream.
 *
 * Completion is in order, as on a CUDA stream (mem.h): testing an event complete runs
 * every operation started before it first.
 *
 * Device-resident schedules: work_alloc hands out test allocations held for
 * their whole life (the engine can never touch them) and net_ptr translates
 * test memory to its alias, the address a "CUDA-aware" MPI is given in the
 * test-only direct mode (MPIX_HIER_TEST_MPI_DIRECT, topo/caps.h).
 *
 * Pending copies and reductions live in a small per-process table (grow-only
 * while in use, freed when nothing is pending and no test memory is left);
 * the event holds the slot and a sequence number, which a fence that ran the
 * operation early no longer matches.
 *
 * Thread safety: none (tests drive it from one thread; the library's
 * collectives run on one thread at a time). The allocation table is only
 * changed by mxh_mem_test_alloc/free; lookups scan it (tests hold a handful
 * of allocations).
 */
#define _GNU_SOURCE /* memfd_create */
#include "config.h"

#include "mem/ipc_cache.h"
#include "mem/mem.h"
#include "mem/mem_impl.h"
#include "reduce/reduce.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The CPU kernels are in the core library (src/reduce, with MPI), which unit
 * tests of src/mem do not link: referenced weakly, NULL there (reduce_ok then
 * says 0). Every program that runs collectives links them (the core calls
 * them directly). */
extern __typeof__(mxh_reduce_multi) mxh_reduce_multi __attribute__((weak));
extern __typeof__(mxh_reduce_has_kernel) mxh_reduce_has_kernel __attribute__((weak));

typedef struct test_alloc {
    char    *user;  /* the mapping handed out (peer: PROT_NONE forever) */
    char    *alias; /* the same pages, used only by the ops */
    size_t   n;     /* bytes requested (interior pointers: [user, user + max(n, 1))) */
    size_t   len;   /* bytes mapped (whole pages) */
    int      holds; /* hold count: user mapping PROT_NONE while > 0 */
    int      fd;    /* own: the memfd (peers open it through /proc); peer: -1 */
    int      peer;  /* 1: a peer's allocation mapped by the IPC opener */
    uint64_t id;    /* buffer id (own: unique in this process; peer: the exporter's) */
} test_alloc_t;

int mxh_mem_test_live;
static test_alloc_t *allocs; /* [mxh_mem_test_live], unordered */
static int allocs_cap;
static int delay_polls = 3;
static uint64_t copies_done, reductions_done, ipc_opens;
static uint64_t next_id = 1; /* buffer ids: never reused */

/* ---- pending operations ----------------------------------------------------------
 *
 * event words: h[0] slot + 1 (0: nothing to run: an empty copy or a fence),
 * h[1] sequence number of the operation, h[2] 1 for a fence, h[3] polls left */

enum { OP_COPY = 1, OP_REDUCE };

typedef struct pending {
    uint64_t      seq;   /* 0: slot free */
    int           type;  /* OP_COPY, OP_REDUCE */
    char         *dst;   /* alias of the destination / output */
    const char   *src;   /* copy: alias of the source */
    size_t        n;     /* copy: bytes; reduce: elements */
    const void  **in;    /* reduce: aliases of the inputs [nin] (grow-only, kept with the slot) */
    int           nin, in_cap;
    MPI_Datatype  dt;
    MPI_Op        op;
} pending_t;

static pending_t *pend;
static int pend_cap, pend_used;
static uint64_t seq_next = 1;

/* Free the table once nothing is pending and no test memory is left. */
static void pend_trim(void)
{
    if (pend_used > 0 || mxh_mem_test_live > 0)
        return;
    for (int i = 0; i < pend_cap; i++)
        free(pend[i].in);
    free(pend);
    pend     = NULL;
    pend_cap = 0;
}

static pending_t *pend_get(int *slot)
{
    for (int i = 0; i < pend_cap; i++)
        if (pend[i].seq == 0) {
            *slot = i;
            return &pend[i];
        }
    int cap = pend_cap ? 2 * pend_cap : 16;
    pending_t *p = realloc(pend, (size_t)cap * sizeof(*p));
    if (p == NULL) {
        mxh_error("test memory: no memory for %d pending operations", cap);
        return NULL;
    }
    memset(p + pend_cap, 0, (size_t)(cap - pend_cap) * sizeof(*p));
    pend     = p;
    *slot    = pend_cap;
    pend_cap = cap;
    return &pend[*slot];
}

/* Run the operation of @p (its inputs are read now) and free its slot. */
static mxh_status_t pend_run(pending_t *p)
{
    mxh_status_t st = MXH_OK;

    if (p->type == OP_COPY) {
        /* memmove: both sides may be test memory of one allocation */
        memmove(p->dst, p->src, p->n);
        copies_done++;
    } else {
        int alias_later = 0;
        for (int j = 1; j < p->nin; j++)
            alias_later |= p->in[j] == (const void *)p->dst;
        if (!alias_later) {
            st = mxh_reduce_multi(p->in, p->nin, p->dst, p->n, p->dt, p->op);
        } else {
            /* mxh_reduce_multi allows out == in[0] only: into a temporary */
            MPI_Aint lb = 0, extent = 0;
            void *tmp = NULL;
            if (MPI_Type_get_extent(p->dt, &lb, &extent) != MPI_SUCCESS || extent <= 0 ||
                (tmp = malloc(p->n * (size_t)extent)) == NULL) {
                mxh_error("test memory: reduction of %zu elements: no temporary", p->n);
                st = MXH_ERR_NO_MEMORY;
            } else {
                st = mxh_reduce_multi(p->in, p->nin, tmp, p->n, p->dt, p->op);
                if (st == MXH_OK)
                    memcpy(p->dst, tmp, p->n * (size_t)extent);
                free(tmp);
            }
        }
        if (st == MXH_OK)
            reductions_done++;
    }
    p->seq = 0;
    pend_used--;
    return st;
}

/* A fence's completion: run, oldest first, every operation started before it. */
static mxh_status_t pend_run_before(uint64_t seq)
{
    mxh_status_t st = MXH_OK;
    for (;;) {
        pending_t *oldest = NULL;
        for (int i = 0; i < pend_cap; i++)
            if (pend[i].seq != 0 && pend[i].seq < seq &&
                (oldest == NULL || pend[i].seq < oldest->seq))
                oldest = &pend[i];
        if (oldest == NULL)
            return st;
        mxh_status_t s = pend_run(oldest);
        if (st == MXH_OK)
            st = s;
    }
}

static void event_set(mxh_mem_event_t *ev, int slot, uint64_t seq, int fence)
{
    ev->pending = 1;
    ev->h[0]    = (uintptr_t)(slot + 1);
    ev->h[1]    = (uintptr_t)seq;
    ev->h[2]    = (uintptr_t)fence;
    ev->h[3]    = (uintptr_t)delay_polls;
}

/* ---- allocations -------------------------------------------------------------- */

static test_alloc_t *find_user(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    for (int i = 0; i < mxh_mem_test_live; i++) {
        test_alloc_t *t = &allocs[i];
        if (a - (uintptr_t)t->user < (t->n > 0 ? t->n : 1))
            return t;
    }
    return NULL;
}

static int test_owns(const void *p)
{
    return find_user(p) != NULL;
}

/* @p translated to the alias when it is test memory (*is_test set); the whole
 * range [p, p + n) must lie in the allocation. NULL (logged) when it does not. */
static char *translate(const void *p, size_t n, const char *what, int *is_test)
{
    test_alloc_t *t = find_user(p);
    size_t off;

    *is_test = t != NULL;
    if (t == NULL)
        return (char *)p;
    off = (size_t)((const char *)p - t->user);
    if (n > t->n - off) {
        mxh_error("test memory: copy %s [%p, +%zu) runs past the end of its allocation "
                  "[%p, +%zu)", what, p, n, (void *)t->user, t->n);
        return NULL;
    }
    return t->alias + off;
}

/* A free entry of the allocation table, NULL when it cannot grow. */
static test_alloc_t *alloc_slot(void)
{
    if (mxh_mem_test_live == allocs_cap) {
        int cap = allocs_cap ? 2 * allocs_cap : 16;
        test_alloc_t *a = realloc(allocs, (size_t)cap * sizeof(*a));
        if (a == NULL)
            return NULL;
        allocs     = a;
        allocs_cap = cap;
    }
    return &allocs[mxh_mem_test_live];
}

static void alloc_remove(int i)
{
    allocs[i] = allocs[--mxh_mem_test_live];
    if (mxh_mem_test_live == 0) { /* back to a process without test memory */
        free(allocs);
        allocs     = NULL;
        allocs_cap = 0;
        pend_trim();
    }
}

/* ---- copies ------------------------------------------------------------------- */

/* Queue @p (in @slot) as the next operation, @ev its completion. */
static void pend_queue(mxh_mem_event_t *ev, int slot, pending_t *p, int type, char *dst,
                       char *src, size_t n)
{
    p->seq  = seq_next++;
    p->type = type;
    p->dst  = dst;
    p->src  = src;
    p->n    = n;
    pend_used++;
    event_set(ev, slot, p->seq, 0);
}

static mxh_status_t test_copy_start(void *dst, const void *src, size_t n, mxh_mem_event_t *ev)
{
    int dtest = 0, stest = 0, slot;
    char *d, *s;
    pending_t *p;

    ev->pending = 0;
    if (n == 0) { /* completes at the first test, whatever the pointers */
        ev->pending = 1;
        ev->h[0] = ev->h[1] = ev->h[2] = ev->h[3] = 0;
        return MXH_OK;
    }
    d = translate(dst, n, "destination", &dtest);
    s = translate(src, n, "source", &stest);
    if (d == NULL || s == NULL)
        return MXH_ERR_INVALID_PARAM;
    if (!dtest && !stest) {
        /* the engine picked the wrong kind's ops: a bug worth failing on */
        mxh_error("test memory: copy_start(%p, %p, %zu) with no test memory on either side",
                  dst, src, n);
        return MXH_ERR_INVALID_PARAM;
    }
    if ((p = pend_get(&slot)) == NULL)
        return MXH_ERR_NO_MEMORY;
    pend_queue(ev, slot, p, OP_COPY, d, s, n);
    return MXH_OK;
}

static int test_event_test(mxh_mem_event_t *ev)
{
    mxh_status_t st = MXH_OK;
    pending_t *p = NULL;

    if (!ev->pending)
        return 1;
    if (ev->h[0] != 0) {
        /* not in the table any more (a fence ran it, maybe the table was
         * freed since): complete */
        p = ev->h[0] - 1 < (uintptr_t)pend_cap ? &pend[ev->h[0] - 1] : NULL;
        if (p != NULL && p->seq != (uint64_t)ev->h[1])
            p = NULL;
        else if (p != NULL && ev->h[3] > 0) {
            ev->h[3]--;
            return 0;
        }
    } else if (ev->h[3] > 0) { /* a fence, or an empty copy (0 polls) */
        ev->h[3]--;
        return 0;
    }
    if (p != NULL) {
        /* in order, like a stream: what was started before runs first (mem.h) */
        st = pend_run_before(p->seq);
        mxh_status_t own = pend_run(p);
        if (st == MXH_OK)
            st = own;
    } else if (ev->h[2] == 1)
        st = pend_run_before((uint64_t)ev->h[1]);
    ev->pending = 0;
    ev->h[0]    = 0;
    pend_trim();
    return st == MXH_OK ? 1 : -(int)st;
}

static void *test_stage_alloc(size_t n)
{
    return malloc(n > 0 ? n : 1);
}

static void test_stage_free(void *p, size_t n)
{
    (void)n;
    free(p);
}

static void set_access(test_alloc_t *t, int prot)
{
    if (mprotect(t->user, t->len, prot) != 0)
        mxh_error("test memory: mprotect(%p, %zu): %s", (void *)t->user, t->len,
                  strerror(errno));
}

static void test_hold(const void *p)
{
    test_alloc_t *t = find_user(p);
    if (t == NULL || t->peer) {
        mxh_error("test memory: hold(%p): not test memory of this process%s", p,
                  t ? " (a peer's mapped buffer)" : "");
        return;
    }
    if (t->holds++ == 0)
        set_access(t, PROT_NONE);
}

static void test_release(const void *p)
{
    test_alloc_t *t = find_user(p);
    if (t == NULL || t->peer || t->holds <= 0) {
        mxh_error("test memory: release(%p) without a hold%s", p,
                  t && t->peer ? " (a peer's mapped buffer)" : "");
        return;
    }
    if (--t->holds == 0)
        set_access(t, PROT_READ | PROT_WRITE);
}

/* ---- device node level: IPC and reductions ---------------------------------------- */

/* What the desc bytes hold (mxh_mem_ipc_desc_t.b). */
typedef struct test_ipc_desc {
    int32_t  pid;       /* exporter */
    int32_t  fd;        /* its memfd of the allocation */
    uint64_t base;      /* the allocation's user mapping in the exporter */
    uint64_t size;      /* mapped length (whole pages) */
    uint64_t buffer_id; /* the exporter's id of the allocation */
    uint64_t offset;    /* of the exported pointer */
} test_ipc_desc_t;

_Static_assert(sizeof(test_ipc_desc_t) <= MXH_MEM_IPC_DESC_BYTES,
               "the test kind's IPC descriptor must fit mxh_mem_ipc_desc_t");

/* The memfd's name carries the buffer id, so an opener can tell a reused fd
 * number (another file) from the allocation it was told about. */
#define MEMFD_PREFIX "mpix-hier-test-mem-"

static mxh_status_t test_ipc_export(const void *p, size_t n, mxh_mem_ipc_desc_t *d)
{
    test_alloc_t *t = find_user(p);
    test_ipc_desc_t x;
    size_t off;

    memset(d, 0, sizeof(*d));
    d->kind = MXH_MEM_TEST;
    if (t == NULL || t->peer) /* not ours to export (a peer's mapping is not re-exported) */
        return MXH_OK;
    off = (size_t)((const char *)p - t->user);
    if (n > 0 && n > t->n - off)
        return MXH_OK;
    x.pid       = (int32_t)getpid();
    x.fd        = t->fd;
    x.base      = (uint64_t)(uintptr_t)t->user;
    x.size      = (uint64_t)t->len;
    x.buffer_id = t->id;
    x.offset    = (uint64_t)off;
    memcpy(d->b, &x, sizeof(x));
    d->valid = 1;
    return MXH_OK;
}

static mxh_ipc_open_rc_t test_ipc_open(void *arg, const mxh_ipc_key_t *key, const void *handle,
                                       void **mapped)
{
    const test_ipc_desc_t *x = handle;
    char path[64], want[64], link[128];
    void *user = MAP_FAILED, *alias = MAP_FAILED;
    test_alloc_t *t;
    ssize_t ln;
    int fd;

    (void)arg;
    *mapped = NULL;
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)x->pid, (int)x->fd);
    snprintf(want, sizeof(want), "/memfd:" MEMFD_PREFIX "%llu",
             (unsigned long long)key->buffer_id);
    ln = readlink(path, link, sizeof(link) - 1);
    if (ln < 0) {
        mxh_error("test memory: peer %d's buffer %llu: %s: %s", (int)x->pid,
                  (unsigned long long)key->buffer_id, path, strerror(errno));
        return MXH_IPC_OPEN_FAILED;
    }
    link[ln] = '\0';
    /* "/memfd:<name> (deleted)": the name must be the buffer's */
    if (strncmp(link, want, strlen(want)) != 0 ||
        (link[strlen(want)] != '\0' && link[strlen(want)] != ' ')) {
        mxh_error("test memory: peer %d's buffer %llu: %s is %s (freed?)", (int)x->pid,
                  (unsigned long long)key->buffer_id, path, link);
        return MXH_IPC_OPEN_FAILED;
    }
    if ((t = alloc_slot()) == NULL)
        return MXH_IPC_OPEN_FAILED;
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        mxh_error("test memory: open(%s): %s", path, strerror(errno));
        return MXH_IPC_OPEN_FAILED;
    }
    user  = mmap(NULL, (size_t)key->size, PROT_NONE, MAP_SHARED, fd, 0);
    alias = mmap(NULL, (size_t)key->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd); /* the mappings keep the pages */
    if (user == MAP_FAILED || alias == MAP_FAILED) {
        mxh_error("test memory: mapping peer %d's buffer %llu (%llu bytes): %s", (int)x->pid,
                  (unsigned long long)key->buffer_id, (unsigned long long)key->size,
                  strerror(errno));
        if (user != MAP_FAILED)
            munmap(user, (size_t)key->size);
        if (alias != MAP_FAILED)
            munmap(alias, (size_t)key->size);
        return MXH_IPC_OPEN_FAILED;
    }
    *t = (test_alloc_t){user, alias, (size_t)key->size, (size_t)key->size, 0, -1, 1,
                        key->buffer_id};
    mxh_mem_test_live++;
    ipc_opens++;
    *mapped = user;
    return MXH_IPC_OPEN_OK;
}

static void test_ipc_close(void *arg, const mxh_ipc_key_t *key, void *mapped)
{
    (void)arg;
    for (int i = 0; i < mxh_mem_test_live; i++) {
        test_alloc_t *t = &allocs[i];
        if (!t->peer || t->user != (char *)mapped)
            continue;
        munmap(t->user, t->len);
        munmap(t->alias, t->len);
        alloc_remove(i);
        return;
    }
    mxh_error("test memory: closing peer %d's buffer %llu at %p: not mapped", (int)key->pid,
              (unsigned long long)key->buffer_id, mapped);
}

const mxh_ipc_cache_ops_t mxh_mem_test_ipc_ops = {test_ipc_open, test_ipc_close, NULL};

static mxh_status_t test_ipc_map(const mxh_mem_ipc_desc_t *d, void *owner, void **ptr)
{
    test_ipc_desc_t x;
    mxh_ipc_key_t key;
    void *m = NULL;
    mxh_status_t st;

    *ptr = NULL;
    if (d->kind != MXH_MEM_TEST || !d->valid) {
        mxh_error("test memory: ipc_map of a descriptor of kind %d, valid %d", (int)d->kind,
                  (int)d->valid);
        return MXH_ERR_INVALID_PARAM;
    }
    memcpy(&x, d->b, sizeof(x));
    if (x.offset > x.size) {
        mxh_error("test memory: ipc_map: offset %llu past peer %d's buffer of %llu bytes",
                  (unsigned long long)x.offset, (int)x.pid, (unsigned long long)x.size);
        return MXH_ERR_INVALID_PARAM;
    }
    key.kind      = MXH_MEM_TEST;
    key.pid       = x.pid;
    key.base      = x.base;
    key.size      = x.size;
    key.buffer_id = x.buffer_id;
    key.device    = 0;
    st = mxh_ipc_cache_open(&key, &x, owner, &m);
    if (st == MXH_OK)
        *ptr = (char *)m + x.offset;
    return st;
}

static int test_reduce_ok(MPI_Datatype dt, MPI_Op op)
{
    /* the pairs mxh_reduce_multi has kernels for (not its MPI_Reduce_local
     * fallback): predefined types, the half types, MPI's predefined ops */
    return mxh_reduce_has_kernel != NULL && mxh_reduce_multi != NULL &&
           mxh_reduce_has_kernel(dt, op);
}

static mxh_status_t test_reduce_start(void *out, const void *const *in, int nin, size_t count,
                                      MPI_Datatype dt, MPI_Op op, mxh_mem_event_t *ev)
{
    MPI_Aint lb = 0, extent = 0;
    size_t bytes;
    pending_t *p;
    char *o;
    int is_test, slot;

    ev->pending = 0;
    if (nin < 1 || in == NULL) {
        mxh_error("test memory: reduce_start with %d inputs", nin);
        return MXH_ERR_INVALID_PARAM;
    }
    if (!test_reduce_ok(dt, op)) {
        mxh_error("test memory: reduce_start: no kernel for this (datatype, op) "
                  "(reduce_ok is 0)");
        return MXH_ERR_UNSUPPORTED;
    }
    if (count == 0) { /* completes at the first test */
        ev->pending = 1;
        ev->h[0] = ev->h[1] = ev->h[2] = ev->h[3] = 0;
        return MXH_OK;
    }
    if (MPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS || extent <= 0 ||
        count > SIZE_MAX / (size_t)extent) {
        mxh_error("test memory: reduce_start: bad datatype or count %zu", count);
        return MXH_ERR_INVALID_PARAM;
    }
    bytes = count * (size_t)extent;
    o     = translate(out, bytes, "reduction output", &is_test);
    if (o == NULL)
        return MXH_ERR_INVALID_PARAM;
    if (!is_test) {
        mxh_error("test memory: reduce_start: output %p is not test memory", out);
        return MXH_ERR_INVALID_PARAM;
    }
    for (int j = 0; j < nin; j++) {
        const char *a = in[j], *b = out;
        if (a != b && a < b + bytes && b < a + bytes) {
            mxh_error("test memory: reduce_start: input %d [%p, +%zu) overlaps the output %p",
                      j, in[j], bytes, out);
            return MXH_ERR_INVALID_PARAM;
        }
        if (translate(in[j], bytes, "reduction input", &is_test) == NULL)
            return MXH_ERR_INVALID_PARAM;
        if (!is_test) {
            mxh_error("test memory: reduce_start: input %d (%p) is not test memory", j, in[j]);
            return MXH_ERR_INVALID_PARAM;
        }
    }
    if ((p = pend_get(&slot)) == NULL)
        return MXH_ERR_NO_MEMORY;
    if (p->in_cap < nin) {
        const void **a = realloc(p->in, (size_t)nin * sizeof(*a));
        if (a == NULL) {
            mxh_error("test memory: reduce_start: no memory for %d inputs", nin);
            return MXH_ERR_NO_MEMORY;
        }
        p->in     = a;
        p->in_cap = nin;
    }
    for (int j = 0; j < nin; j++)
        p->in[j] = translate(in[j], bytes, "reduction input", &is_test);
    p->nin = nin;
    p->dt  = dt;
    p->op  = op;
    pend_queue(ev, slot, p, OP_REDUCE, o, NULL, count);
    return MXH_OK;
}

static mxh_status_t test_fence_start(mxh_mem_event_t *ev)
{
    event_set(ev, -1, seq_next++, 1);
    return MXH_OK;
}

static void *test_work_alloc(size_t n)
{
    void *p = mxh_mem_test_alloc(n);
    if (p != NULL)
        test_hold(p); /* for good: the engine reaches it through the ops only */
    return p;
}

static void test_work_free(void *p, size_t n)
{
    (void)n;
    if (p == NULL)
        return;
    test_release(p);
    mxh_mem_test_free(p);
}

static void *test_net_ptr(const void *p)
{
    int is_test;
    return translate(p, 0, "network buffer", &is_test);
}

const mxh_mem_ops_t mxh_mem_test_ops = {
    .kind         = MXH_MEM_TEST,
    .name         = "test",
    .owns         = test_owns,
    .copy_start   = test_copy_start,
    .event_test   = test_event_test,
    .stage_alloc  = test_stage_alloc,
    .stage_free   = test_stage_free,
    .hold         = test_hold,
    .release      = test_release,
    .ipc_export   = test_ipc_export,
    .ipc_map      = test_ipc_map,
    .reduce_start = test_reduce_start,
    .reduce_ok    = test_reduce_ok,
    .fence_start  = test_fence_start,
    .work_alloc   = test_work_alloc,
    .work_free    = test_work_free,
    .net_ptr      = test_net_ptr,
};

void *mxh_mem_test_alloc(size_t n)
{
    long pg = sysconf(_SC_PAGESIZE);
    size_t page = pg > 0 ? (size_t)pg : 4096, len;
    void *user = MAP_FAILED, *alias = MAP_FAILED;
    char name[64];
    test_alloc_t *t;
    int fd;

    if (n > SIZE_MAX - page) {
        mxh_error("test memory: %zu bytes is too large", n);
        return NULL;
    }
    len = (n > 0 ? n + page - 1 : page) / page * page;
    if ((t = alloc_slot()) == NULL)
        return NULL;
    /* the name carries the buffer id (test_ipc_open checks it) */
    snprintf(name, sizeof(name), MEMFD_PREFIX "%llu", (unsigned long long)next_id);
    fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) {
        mxh_error("test memory: memfd_create: %s", strerror(errno));
        return NULL;
    }
    /* a new file's pages read as zeros: the allocation is zeroed */
    if (ftruncate(fd, (off_t)len) == 0) {
        user  = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        alias = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    if (user == MAP_FAILED || alias == MAP_FAILED) {
        mxh_error("test memory: mapping %zu bytes: %s", len, strerror(errno));
        if (user != MAP_FAILED)
            munmap(user, len);
        if (alias != MAP_FAILED)
            munmap(alias, len);
        close(fd);
        return NULL;
    }
    /* the fd stays open until the free: peers open it through /proc (IPC) */
    *t = (test_alloc_t){user, alias, n, len, 0, fd, 0, next_id++};
    mxh_mem_test_live++;
    return user;
}

void mxh_mem_test_free(void *p)
{
    if (p == NULL)
        return;
    for (int i = 0; i < mxh_mem_test_live; i++) {
        test_alloc_t *t = &allocs[i];
        if (t->user != p || t->peer) /* peers' mappings go only by the IPC cache */
            continue;
        if (t->holds > 0)
            mxh_error("test memory: %p freed while held %d time(s)", p, t->holds);
        munmap(t->user, t->len);
        munmap(t->alias, t->len);
        close(t->fd);
        alloc_remove(i);
        return;
    }
    mxh_error("test memory: free(%p): not the start of a test allocation", p);
}

static int mpi_direct;

void mxh_mem_test_set_mpi_direct(int on)
{
    mpi_direct = on != 0;
}

int mxh_mem_test_mpi_direct(void)
{
    return mpi_direct;
}

void mxh_mem_test_set_delay(int polls)
{
    delay_polls = polls > 0 ? polls : 0;
}

uint64_t mxh_mem_test_copies(void)
{
    return copies_done;
}

uint64_t mxh_mem_test_reductions(void)
{
    return reductions_done;
}

uint64_t mxh_mem_test_ipc_opens(void)
{
    return ipc_opens;
}

int mxh_mem_test_holds(const void *p)
{
    test_alloc_t *t = find_user(p);
    return t ? t->holds : 0;
}
