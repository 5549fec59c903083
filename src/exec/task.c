/* Tasks: fibers, per-communicator queues, progress, generalized requests
 * (exec/task.h).
 *
 * A task's body runs on a stack of its own (ucontext). mxh_task_progress_all
 * switches to it (resume); the body switches back (yield) at its first wait
 * that finds nothing ready, or returns when the collective is done. The
 * request handed to the user is an MPICH generalized request with poll and
 * wait functions (MPIX_Grequest_class_create), so that MPI_Test and MPI_Wait
 * (every variant) drive the progress engine: the poll function resumes every queue head once,
 * the wait function resumes them until the tasks waited on are complete.
 * MPI_Grequest_complete is called when a body returns. An MPI without that
 * extension gets standard generalized requests, which nothing would progress:
 * there a posted task runs to completion before the post returns. SimGrid's
 * SMPI lacks it too, but there the library is linked into the program, and its
 * MPI_Test, MPI_Wait and their -all/-any/-some variants (mpix/requests.c)
 * progress the tasks and then call PMPI_*: posted tasks advance while the
 * simulated application computes, as on MPICH. */
#include "config.h"

#include "exec/task.h"
#include "sim/sim.h"
#include "util/log.h"
#include "util/pmpi_hook.h"

#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define MXH_TASK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MXH_TASK_ASAN 1
#endif
#endif
#ifdef MXH_TASK_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define MXH_TASK_VALGRIND 1
#endif
#endif

/* Stack of a task: the executor keeps its fragment states in locals (about
 * 60 KiB for the deepest stream) and MPI/UCX calls run on it; a guard page
 * below turns an overflow into a fault instead of silent corruption. Pages
 * are touched only as used. */
#define TASK_STACK_BYTES ((size_t)1 << 20)
/* Stacks and task objects kept for reuse (the steady state allocates nothing). */
#define TASK_POOL_MAX 64

/* TASK_HERE: running on a caller's stack (mxh_task_run_here), not on its fiber */
enum { TASK_NEW = 0, TASK_QUEUED, TASK_RUNNING, TASK_HERE, TASK_DONE };

struct mxh_task {
    mxh_task_fn       fn;
    const char       *func;
    mxh_status_t      status;
    int               state;
    int               freed;   /* the user's request is gone (free_fn ran) */
    int               finished;   /* out of its queue, request completed */
    int               completing; /* inside MPI_Grequest_complete */
    mxh_task_queue_t *q;
    mxh_task_t       *next;    /* in its queue, or in the free pool */
    mxh_task_done_fn  done;    /* an owned task's completion (no request) */
    void             *done_ctx;
    MPI_Request       req;
    ucontext_t        uc;
    char             *stack;   /* mapping: guard page + TASK_STACK_BYTES */
#ifdef MXH_TASK_VALGRIND
    unsigned          vg_id;
#endif
    /* the body's arguments: per-request state (aligned for any scalar) */
    _Alignas(max_align_t) char args[MXH_TASK_ARGS_MAX];
};

static mxh_task_t       *current;     /* the task running now, NULL on a caller's stack */
static ucontext_t        engine_uc;   /* where a yielding task returns to */
static mxh_task_queue_t *queues;      /* queues with tasks */
static mxh_task_t       *pool;        /* released task objects (with their stacks) */
static int               npool;
int                      mxh_task_nflight; /* task.h: mxh_task_in_flight */
#ifdef HAVE_MPIX_GREQUEST_CLASS_CREATE
static MPIX_Grequest_class greq_class;
static int               greq_class_ok;
#endif
static mxh_task_error_fn error_fn;
#ifdef MXH_TASK_ASAN
static void             *engine_fake_stack;
static const void       *engine_stack_bottom;
static size_t            engine_stack_size;
#endif

void mxh_task_set_error_fn(mxh_task_error_fn fn)
{
    error_fn = fn;
}

int mxh_task_in_fiber(void)
{
    return current != NULL;
}

/* ---- switching ------------------------------------------------------------------------ */

static char *stack_base(mxh_task_t *t)
{
    return t->stack + sysconf(_SC_PAGESIZE);
}

/* engine -> task */
static void switch_to(mxh_task_t *t)
{
    current = t;
#ifdef MXH_TASK_ASAN
    __sanitizer_start_switch_fiber(&engine_fake_stack, stack_base(t), TASK_STACK_BYTES);
#endif
    swapcontext(&engine_uc, &t->uc);
#ifdef MXH_TASK_ASAN
    __sanitizer_finish_switch_fiber(engine_fake_stack, NULL, NULL);
#endif
    current = NULL;
}

/* task -> engine */
void mxh_task_yield(void)
{
    mxh_task_t *t = current;
    if (t == NULL) {
        sched_yield();
        return;
    }
#ifdef MXH_TASK_ASAN
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, engine_stack_bottom, engine_stack_size);
#endif
    swapcontext(&t->uc, &engine_uc);
#ifdef MXH_TASK_ASAN
    __sanitizer_finish_switch_fiber(fake, &engine_stack_bottom, &engine_stack_size);
#endif
}

static void trampoline(unsigned hi, unsigned lo)
{
    mxh_task_t *t = (mxh_task_t *)(((uintptr_t)hi << 32) | (uintptr_t)lo);
#ifdef MXH_TASK_ASAN
    __sanitizer_finish_switch_fiber(NULL, &engine_stack_bottom, &engine_stack_size);
#endif
    t->status = t->fn(t->args);
    t->state  = TASK_DONE;
#ifdef MXH_TASK_ASAN
    /* this stack is left for good: no fake stack to keep */
    __sanitizer_start_switch_fiber(NULL, engine_stack_bottom, engine_stack_size);
#endif
    /* returns to uc_link (engine_uc) */
}

/* ---- task objects ----------------------------------------------------------------------- */

mxh_task_t *mxh_task_new(void)
{
    mxh_task_t *t = pool;
    if (t != NULL) {
        pool = t->next;
        npool--;
    } else {
        long page = sysconf(_SC_PAGESIZE);
        t = calloc(1, sizeof(*t));
        if (t == NULL)
            return NULL;
        t->stack = mmap(NULL, TASK_STACK_BYTES + (size_t)page, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
        if (t->stack == MAP_FAILED) {
            free(t);
            return NULL;
        }
        mprotect(t->stack, (size_t)page, PROT_NONE); /* guard page */
#ifdef MXH_TASK_VALGRIND
        t->vg_id = VALGRIND_STACK_REGISTER(stack_base(t), stack_base(t) + TASK_STACK_BYTES);
#endif
    }
    t->fn     = NULL;
    t->func   = "";
    t->status = MXH_OK;
    t->state  = TASK_NEW;
    t->freed  = 0;
    t->finished   = 0;
    t->completing = 0;
    t->q      = NULL;
    t->next   = NULL;
    t->req    = MPI_REQUEST_NULL;
    t->done   = NULL;
    t->done_ctx = NULL;
    return t;
}

void *mxh_task_args(mxh_task_t *t)
{
    return t->args;
}

static void task_release(mxh_task_t *t)
{
    if (npool < TASK_POOL_MAX) {
        t->next = pool;
        pool    = t;
        npool++;
        return;
    }
#ifdef MXH_TASK_VALGRIND
    VALGRIND_STACK_DEREGISTER(t->vg_id);
#endif
    munmap(t->stack, TASK_STACK_BYTES + (size_t)sysconf(_SC_PAGESIZE));
    free(t);
}

void mxh_task_discard(mxh_task_t *t)
{
    if (t != NULL)
        task_release(t);
}

/* ---- queues ------------------------------------------------------------------------------ */

void mxh_task_queue_init(mxh_task_queue_t *q)
{
    memset(q, 0, sizeof(*q));
}

int mxh_task_queue_len(const mxh_task_queue_t *q)
{
    int n = 0;
    for (const mxh_task_t *t = q->head; t; t = t->next)
        n++;
    return n;
}

static void queue_list(mxh_task_queue_t *q)
{
    if (!q->listed) {
        q->next   = queues;
        queues    = q;
        q->listed = 1;
    }
}

static void queue_unlist(mxh_task_queue_t *q)
{
    for (mxh_task_queue_t **pp = &queues; *pp; pp = &(*pp)->next)
        if (*pp == q) {
            *pp       = q->next;
            q->listed = 0;
            return;
        }
}

/* The head finished: hand its result to MPI, let the next one start. Returns
 * whether @q has more tasks (if not it is unlisted, and may be gone: a queue
 * can live in its only task). */
static int task_finish(mxh_task_queue_t *q, mxh_task_t *t)
{
    int more = t->next != NULL;
    q->head  = t->next;
    if (!more) {
        q->tail = NULL;
        queue_unlist(q);
    }
    t->next = NULL;
    mxh_task_nflight--;
    if (t->status != MXH_OK)
        mxh_debug("%s (nonblocking) failed: %s", t->func, mxh_status_string(t->status));
    if (t->done != NULL) { /* owned: no request */
        t->done(t->done_ctx, t->status, t->args);
        task_release(t);
        return more;
    }
    /* complete the user's request: free_fn may run inside (MPI_Request_free earlier) */
    t->finished   = 1;
    t->completing = 1;
    MPI_Grequest_complete(t->req);
    t->completing = 0;
    if (t->freed)
        task_release(t);
    return more;
}

/* Run the head of @q until it waits or ends. Returns 0 while it runs, 2 when
 * it finished and another task waits in @q, 1 when it finished and @q is
 * empty (unlisted; do not touch it again). */
static int queue_step(mxh_task_queue_t *q)
{
    mxh_task_t *t = q->head;
    if (t == NULL || t->state == TASK_HERE)
        return 0; /* running on a caller's stack (mxh_task_run_here): not ours to resume */
    if (t->state == TASK_QUEUED) {
        uintptr_t p = (uintptr_t)t;
        getcontext(&t->uc);
        t->uc.uc_stack.ss_sp   = stack_base(t);
        t->uc.uc_stack.ss_size = TASK_STACK_BYTES;
        t->uc.uc_link          = &engine_uc;
        makecontext(&t->uc, (void (*)(void))trampoline, 2, (unsigned)(p >> 32),
                    (unsigned)(p & 0xffffffffu));
        t->state = TASK_RUNNING;
    }
    switch_to(t);
    if (t->state != TASK_DONE)
        return 0;
    return task_finish(q, t) ? 2 : 1;
}

void (*mxh_task_poll_hook)(void);
void (*mxh_task_flush_hook)(void);

void mxh_task_hold(int delta)
{
    mxh_task_nflight += delta;
}

void mxh_task_progress_all(void)
{
    static int busy;
    if (current == NULL && !busy && mxh_task_flush_hook != NULL)
        mxh_task_flush_hook();
    if (current != NULL || busy || queues == NULL)
        return; /* inside a task, or already progressing (an MPI call of ours re-entered) */
    busy = 1;
    /* task bodies call MPI collectives: they go to MPI under the drop-in library */
    mxh_pmpi_enter();
    for (mxh_task_queue_t *q = queues, *next; q; q = next) {
        next = q->next;
        if (q->head == NULL) {
            queue_unlist(q);
            continue;
        }
        /* a finished head lets the next task start in the same pass */
        while (queue_step(q) == 2)
            ;
    }
    if (mxh_task_poll_hook != NULL)
        mxh_task_poll_hook();
    mxh_pmpi_leave();
    busy = 0;
}

void mxh_task_queue_drain(mxh_task_queue_t *q)
{
    unsigned idle = 0;
    while (q->head != NULL) {
        mxh_task_progress_all();
        if (q->head != NULL && ++idle > 16)
            sched_yield(); /* oversubscribed: let the peers run */
    }
}

/* ---- generalized requests ------------------------------------------------------------------ */

static int greq_query(void *state, MPI_Status *status)
{
    mxh_task_t *t = state; /* NULL: a request complete from the start */
    int code      = MPI_SUCCESS;
    if (t != NULL && t->status != MXH_OK)
        code = error_fn ? error_fn(t->status, t->func) : MPI_ERR_OTHER;
    MPI_Status_set_elements(status, MPI_BYTE, 0);
    MPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG    = MPI_UNDEFINED;
    status->MPI_ERROR  = code;
    return code;
}

static int greq_free(void *state)
{
    mxh_task_t *t = state;
    if (t == NULL)
        return MPI_SUCCESS;
    t->freed = 1;
    if (t->finished && !t->completing)
        task_release(t);
    return MPI_SUCCESS;
}

static int greq_cancel(void *state, int complete)
{
    (void)state;
    (void)complete;
    return MPI_SUCCESS; /* a collective cannot be cancelled (MPI says the same) */
}

#ifdef HAVE_MPIX_GREQUEST_CLASS_CREATE
static int greq_poll(void *state, MPI_Status *status)
{
    (void)state;
    (void)status;
    mxh_task_progress_all();
    return MPI_SUCCESS;
}

static int all_done(int n, void **states)
{
    for (int i = 0; i < n; i++)
        if (((mxh_task_t *)states[i])->state != TASK_DONE)
            return 0;
    return 1;
}

static int greq_wait(int n, void **states, double timeout, MPI_Status *status)
{
    unsigned idle = 0;
    (void)timeout;
    (void)status;
    while (!all_done(n, states)) {
        mxh_task_progress_all();
        if (!all_done(n, states) && ++idle > 16)
            sched_yield();
    }
    return MPI_SUCCESS;
}

#endif

mxh_status_t mxh_task_done_request(MPI_Request *req)
{
    if (MPI_Grequest_start(greq_query, greq_free, greq_cancel, NULL, req) != MPI_SUCCESS ||
        MPI_Grequest_complete(*req) != MPI_SUCCESS) {
        mxh_error("MPI_Grequest_start failed");
        return MXH_ERR_MPI;
    }
    return MXH_OK;
}

/* ---- post ----------------------------------------------------------------------------------- */

/* A generalized request for @t: with MPICH's extension, one whose poll and
 * wait functions progress the tasks. Without it (SimGrid's SMPI) a plain one:
 * the caller then runs the task to completion at once. */
static mxh_status_t request_for(mxh_task_t *t, const char *func)
{
#ifdef HAVE_MPIX_GREQUEST_CLASS_CREATE
    if (!greq_class_ok) {
        if (MPIX_Grequest_class_create(greq_query, greq_free, greq_cancel, greq_poll, greq_wait,
                                       &greq_class) != MPI_SUCCESS) {
            mxh_task_discard(t);
            mxh_error("%s: MPIX_Grequest_class_create failed", func);
            return MXH_ERR_MPI;
        }
        greq_class_ok = 1;
    }
    if (MPIX_Grequest_class_allocate(greq_class, t, &t->req) != MPI_SUCCESS) {
        mxh_task_discard(t);
        mxh_error("%s: MPIX_Grequest_class_allocate failed", func);
        return MXH_ERR_MPI;
    }
#else
    if (MPI_Grequest_start(greq_query, greq_free, greq_cancel, t, &t->req) != MPI_SUCCESS) {
        mxh_task_discard(t);
        mxh_error("%s: MPI_Grequest_start failed", func);
        return MXH_ERR_MPI;
    }
#endif
    return MXH_OK;
}

/* Append @t with body @fn to @q: in flight from now on. */
static void enqueue(mxh_task_queue_t *q, mxh_task_t *t, mxh_task_fn fn, const char *func)
{
    t->fn    = fn;
    t->func  = func;
    t->q     = q;
    t->state = TASK_QUEUED;
    if (q->tail)
        q->tail->next = t;
    else
        q->head = t;
    q->tail = t;
    queue_list(q);
    mxh_task_nflight++;
}

mxh_status_t mxh_task_post(mxh_task_queue_t *q, mxh_task_t *t, mxh_task_fn fn, const char *func,
                           MPI_Request *req)
{
    mxh_status_t st = request_for(t, func);
    if (st != MXH_OK)
        return st;
    enqueue(q, t, fn, func);
    *req = t->req;
    /* start it now if it is first in line: its first messages go out at once */
    if (q->head == t)
        mxh_task_progress_all();
#if !defined(HAVE_MPIX_GREQUEST_CLASS_CREATE) && !defined(MXH_SIMGRID)
    /* no poll function would ever move it: complete it here */
    mxh_task_queue_drain(q);
#endif
    return MXH_OK;
}

mxh_status_t mxh_task_post_owned(mxh_task_queue_t *q, mxh_task_t *t, mxh_task_fn fn,
                                 const char *func, mxh_task_done_fn done, void *ctx, int kick)
{
    t->done     = done;
    t->done_ctx = ctx;
    enqueue(q, t, fn, func);
    if (kick && q->head == t)
        mxh_task_progress_all();
    return MXH_OK;
}

int mxh_task_run_here(mxh_task_t *t)
{
    if (current != NULL || t->state != TASK_QUEUED || t->q->head != t)
        return 0;
    t->state  = TASK_HERE;
    mxh_task_nflight--; /* nothing else to progress for its waits (it is not a fiber) */
    mxh_pmpi_enter();   /* its MPI calls go to MPI under the drop-in library */
    t->status = t->fn(t->args);
    mxh_pmpi_leave();
    mxh_task_nflight++; /* task_finish counts it out */
    t->state  = TASK_DONE;
    task_finish(t->q, t);
    return 1;
}

/* ---- waits ------------------------------------------------------------------------------------ */

/* MPI_Testany for a task. In the simulation mxh_testsome instead (arrays of up
 * to 64): SMPI 3.32 charges MPI_Testany an injected time that grows with every
 * call finding nothing, one counter for all simulated ranks, whatever
 * smpi/grow-injected-times says (benchmarks/RESULTS.md section 5 met it in the
 * stream's polls, section 7 in tasks polled from the application's MPI_Test).
 * There every request found complete becomes MPI_REQUEST_NULL, *@idx is the
 * first of them and @stat is left alone (the executor's waits look only at
 * which requests are gone). */
static int task_testany(int n, MPI_Request *reqs, int *idx, int *flag, MPI_Status *stat)
{
#ifdef MXH_SIMGRID
    enum { SIM_TESTANY_MAX = 64 };
    int done[SIM_TESTANY_MAX], out = 0, rc;
    if (n <= SIM_TESTANY_MAX) {
        rc    = mxh_testsome(n, reqs, &out, done, MPI_STATUSES_IGNORE);
        *flag = out != 0; /* MPI_UNDEFINED: no active request, as MPI_Testany */
        *idx  = out > 0 ? done[0] : MPI_UNDEFINED;
        (void)stat;
        return rc;
    }
#endif
    return MPI_Testany(n, reqs, idx, flag, stat);
}

int mxh_task_wait_all(int n, MPI_Request *reqs, MPI_Status *stats)
{
    int flag = 0, rc;
    if (current == NULL)
        return MPI_Waitall(n, reqs, stats);
    for (;;) {
        rc = mxh_testall(n, reqs, &flag, stats);
        if (rc != MPI_SUCCESS || flag)
            return rc;
        mxh_task_yield();
    }
}

int mxh_task_wait_any(int n, MPI_Request *reqs, int *idx, MPI_Status *stat)
{
    int flag = 0, rc;
    if (current == NULL)
        return MPI_Waitany(n, reqs, idx, stat);
    for (;;) {
        rc = task_testany(n, reqs, idx, &flag, stat);
        if (rc != MPI_SUCCESS || flag)
            return rc;
        mxh_task_yield();
    }
}

int mxh_task_wait(MPI_Request *req, MPI_Status *stat)
{
    int flag = 0, rc;
    if (current == NULL)
        return MPI_Wait(req, stat);
    for (;;) {
        rc = MPI_Test(req, &flag, stat);
        if (rc != MPI_SUCCESS || flag)
            return rc;
        mxh_task_yield();
    }
}

