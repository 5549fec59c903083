/* Persistent collectives: the prepared call, its starts, and the registry of
 * handles (coll/persist.h). */
#include "config.h"

#include "coll/persist.h"
#include "exec/task.h"
#include "util/log.h"

#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct mxh_persist {
    mxh_coll_args_t a;    /* the call as prepared at init; copied into each start's task */
    int            *varr; /* a's count and displacement arrays (copies) */
    MPI_Request     proxy;
    int             active;  /* started, not yet completed by a wait or test */
    int             done;    /* the started call has completed */
    int             freed;   /* the handle is gone: free the object when done */
    mxh_status_t    st;
    int             mpi_rc;
};

int mxh_persist_live;
int mxh_persist_nactive;

/* A start of a latency-bound call (one node's shared memory, or a schedule
 * that is not pipelined), held back from the task engine while nothing else of
 * the library is queued on its communicator: the wait that completes it runs
 * it as the blocking call does (no task, no fiber); anything else that
 * progresses the library first makes it a task (flush), so the communicator's
 * order holds. At most one at a time. */
static mxh_persist_t *held;

/* ---- registry: open addressing on the handle's bits, linear probing -------------------------- */

static mxh_persist_t **slots;
static size_t          nslots; /* a power of two, or 0 */

static uint64_t key_of(MPI_Request r)
{
    uint64_t k = 0;
    memcpy(&k, &r, sizeof r < sizeof k ? sizeof r : sizeof k);
    return k;
}

static size_t home(MPI_Request r)
{
    return (size_t)((key_of(r) * 0x9E3779B97F4A7C15ull) >> 20) & (nslots - 1);
}

static int same(MPI_Request a, MPI_Request b)
{
    return key_of(a) == key_of(b);
}

static int reg_put(mxh_persist_t *p)
{
    if (2 * (size_t)(mxh_persist_live + 1) > nslots) {
        size_t n = nslots ? 2 * nslots : 64, old = nslots;
        mxh_persist_t **s = calloc(n, sizeof(*s)), **o = slots;
        if (s == NULL)
            return -1;
        slots  = s;
        nslots = n;
        for (size_t i = 0; i < old; i++)
            if (o[i] != NULL) {
                size_t j = home(o[i]->proxy);
                while (slots[j] != NULL)
                    j = (j + 1) & (nslots - 1);
                slots[j] = o[i];
            }
        free(o);
    }
    size_t j = home(p->proxy);
    while (slots[j] != NULL)
        j = (j + 1) & (nslots - 1);
    slots[j] = p;
    mxh_persist_live++;
    return 0;
}

mxh_persist_t *mxh_persist_find(MPI_Request r)
{
    if (mxh_persist_live == 0 || r == MPI_REQUEST_NULL)
        return NULL;
    for (size_t j = home(r); slots[j] != NULL; j = (j + 1) & (nslots - 1))
        if (same(slots[j]->proxy, r))
            return slots[j];
    return NULL;
}

/* Remove @p and shift the entries after it back into the gap (no tombstones). */
static void reg_del(mxh_persist_t *p)
{
    size_t j = home(p->proxy), mask = nslots - 1;
    while (slots[j] != p)
        j = (j + 1) & mask;
    slots[j] = NULL;
    for (size_t k = (j + 1) & mask; slots[k] != NULL; k = (k + 1) & mask) {
        size_t h = home(slots[k]->proxy);
        /* move slots[k] into the gap at j unless its home lies in (j, k] */
        if ((k > j && (h <= j || h > k)) || (k < j && h <= j && h > k)) {
            slots[j] = slots[k];
            slots[k] = NULL;
            j        = k;
        }
    }
    mxh_persist_live--;
}

/* ---- objects --------------------------------------------------------------------------------- */

mxh_status_t mxh_persist_new(const mxh_coll_args_t *a, MPI_Request proxy, mxh_persist_t **pp)
{
    const int **arr[4];
    mxh_persist_t *p = calloc(1, sizeof(*p));
    size_t n         = a->size > 0 ? (size_t)a->size : 0;

    if (p == NULL)
        return MXH_ERR_NO_MEMORY;
    p->a     = *a;
    p->proxy = proxy;
    arr[0] = &p->a.rcounts;
    arr[1] = &p->a.rdispls;
    arr[2] = &p->a.scounts;
    arr[3] = &p->a.sdispls;
    if (mxh_coll_info(a->coll)->vector && n > 0) {
        int *v = malloc(4 * n * sizeof(int));
        if (v == NULL) {
            free(p);
            return MXH_ERR_NO_MEMORY;
        }
        p->varr = v;
        for (int k = 0; k < 4; k++, v += n)
            if (*arr[k] != NULL) {
                memcpy(v, *arr[k], n * sizeof(int));
                *arr[k] = v;
            }
    }
    p->a.varr = NULL; /* each start's task copies the arrays it is given */
    if (reg_put(p) != 0) {
        free(p->varr);
        free(p);
        return MXH_ERR_NO_MEMORY;
    }
    *pp = p;
    return MXH_OK;
}

static void destroy(mxh_persist_t *p)
{
    free(p->varr);
    free(p);
}

static void started_done(void *ctx, mxh_status_t st, void *args)
{
    mxh_persist_t *p = ctx;
    p->done          = 1;
    p->st            = st;
    p->mpi_rc        = ((const mxh_coll_args_t *)args)->mpi_rc;
    if (p->freed) {
        mxh_persist_nactive--;
        destroy(p);
    }
}

/* The task of @p's start, while it is queued: the head of its queue. */
static mxh_task_queue_t *queue_of(const mxh_persist_t *p)
{
    return p->a.hier != NULL ? p->a.hier->queue : mxh_comm_queue_find(p->a.comm);
}

/* The held start becomes a task (mxh_task_flush_hook). */
static void flush(void)
{
    mxh_persist_t *p = held;
    mxh_status_t st;
    if (p == NULL)
        return;
    held = NULL;
    mxh_task_hold(-1);
    st = mxh_coll_start_owned(&p->a, started_done, p);
    if (st != MXH_OK) { /* reported by its wait */
        mxh_coll_args_t copy = p->a;
        started_done(p, st, &copy);
    }
}

static int holdable(const mxh_persist_t *p)
{
    mxh_task_queue_t *q;
    if (p->a.staged || !(p->a.path == MXH_PATH_SHM || (p->a.path == MXH_PATH_SCHED &&
                                                        p->a.choice.algo != MXH_ALGO_PIPELINE)))
        return 0;
    q = queue_of(p);
    return q == NULL || q->head == NULL;
}

mxh_status_t mxh_persist_start(mxh_persist_t *p)
{
    mxh_status_t st;
    if (p->active)
        return MXH_ERR_INVALID_PARAM;
    flush(); /* starts complete in order */
    p->active = 1;
    p->done   = 0;
    p->st     = MXH_OK;
    p->mpi_rc = MPI_SUCCESS;
    mxh_persist_nactive++;
    p->a.mpi_rc = MPI_SUCCESS;
    if (holdable(p)) {
        mxh_task_flush_hook = flush;
        mxh_task_hold(1);
        held = p;
        return MXH_OK;
    }
    st = mxh_coll_start_owned(&p->a, started_done, p);
    if (st != MXH_OK) {
        /* not started: the request stays inactive, the error is the start's */
        p->active = 0;
        mxh_persist_nactive--;
        p->mpi_rc = p->a.mpi_rc;
    }
    return st;
}

int mxh_persist_active(const mxh_persist_t *p)
{
    return p->active;
}

int mxh_persist_test(mxh_persist_t *p)
{
    if (p->active && !p->done)
        mxh_task_progress_all(); /* a held start becomes a task first */
    return p->done;
}

void mxh_persist_wait(mxh_persist_t *p)
{
    unsigned idle = 0;
    mxh_task_queue_t *q;

    if (!p->active || p->done)
        return;
    if (p == held) { /* the blocking call, without its checks and decision */
        mxh_coll_args_t copy = p->a;
        held = NULL;
        mxh_task_hold(-1);
        started_done(p, mxh_coll_run(&copy), &copy);
        return;
    }
    /* not begun and first in line: run it here, as the blocking call would */
    q = queue_of(p);
    if (q != NULL && q->head != NULL && q->head == q->tail && mxh_task_run_here(q->head))
        return;
    while (!p->done) {
        mxh_task_progress_all();
        if (!p->done && ++idle > 16)
            sched_yield(); /* oversubscribed: let the peers run */
    }
}

mxh_status_t mxh_persist_finish(mxh_persist_t *p, int *mpi_rc)
{
    *mpi_rc = MPI_SUCCESS;
    if (!p->active)
        return MXH_OK;
    p->active = 0;
    mxh_persist_nactive--;
    *mpi_rc = p->mpi_rc;
    return p->st;
}

void mxh_persist_free(mxh_persist_t *p)
{
    if (p == held)
        flush(); /* it still runs, unobserved */
    reg_del(p);
    if (p->active && !p->done) {
        p->freed = 1; /* started_done frees it */
        return;
    }
    if (p->active)
        mxh_persist_nactive--;
    destroy(p);
}

MPI_Comm mxh_persist_comm(const mxh_persist_t *p)
{
    return p->a.comm;
}

const char *mxh_persist_func(const mxh_persist_t *p)
{
    return p->a.func;
}
