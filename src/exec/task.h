/* Tasks: one collective call = one task with its own state (post, progress,
 * complete), so that collectives can be nonblocking and several can be in
 * flight on one communicator and on many.
 *
 * A task runs its body (the executor running a schedule, or a staged plain-MPI
 * fallback) on its own stack, a fiber. The body is written as straight-line
 * code; its only suspension points are the engine's wait primitives below
 * (mxh_task_wait_*), a shared-memory flag wait (exec/shm.c) and mxh_task_yield.
 * Inside a task those test once and, if nothing is ready, switch back to
 * whoever resumed the task: progress never blocks. Outside a task (a blocking
 * call with nothing in flight before it on its communicator) the very same
 * body runs on the caller's stack and the primitives block in MPI_Wait* as
 * before, so blocking collectives pay nothing for the task model.
 *
 * Why fibers and not a hand-written state machine per schedule: the three
 * schedule executors (plan, rounds, stream) and the shared-memory protocols
 * are proven by the whole test matrix and the 1024-GPU simulations; a fiber
 * makes every one of them resumable with its state kept where it already is
 * (locals of the executor), one engine for blocking and nonblocking calls,
 * with no second copy of any protocol. Stacks come from a pool (no allocation
 * per call in the steady state).
 *
 * Queues: each communicator object has a FIFO of tasks; only its head runs
 * (collectives on one communicator complete in posting order, and the
 * communicator's scratch buffers, shared-memory segments and level
 * communicators serve one collective at a time). Heads of different
 * communicators run interleaved. mxh_task_progress_all() resumes every head
 * once; it is what MPI_Test/MPI_Wait on a library request, and every entry
 * into the library, call. */
#ifndef MXH_COLL_TASK_H
#define MXH_COLL_TASK_H

#include <mpi.h>
#include <stddef.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mxh_task mxh_task_t;
typedef struct mxh_task_queue mxh_task_queue_t;

/* The body of a task: runs to completion, suspending only in the wait
 * primitives; returns the task's status. */
typedef mxh_status_t (*mxh_task_fn)(void *arg);

/* ---- inside a body: the wait primitives ------------------------------------------ */

/* 1 when the caller runs inside a task (a fiber), 0 on a caller's stack. */
int mxh_task_in_fiber(void);
/* Inside a task: give control back to the progress engine until the next
 * resume. Outside: sched_yield(). */
void mxh_task_yield(void);

/* MPI_Waitall / MPI_Waitany / MPI_Wait with the suspension rule above. (In a
 * task of the simulation build, mxh_task_wait_all may complete some requests
 * before all, and mxh_task_wait_any may complete several at once and leaves
 * @stat alone: exec/task.c, task_testany.) */
int mxh_task_wait_all(int n, MPI_Request *reqs, MPI_Status *stats);
int mxh_task_wait_any(int n, MPI_Request *reqs, int *idx, MPI_Status *stat);
int mxh_task_wait(MPI_Request *req, MPI_Status *stat);

/* ---- queues and tasks (the engine side) ------------------------------------------- */

struct mxh_task_queue {
    mxh_task_t       *head, *tail; /* FIFO; head runs */
    mxh_task_queue_t *next;        /* in the list of queues with tasks */
    int               listed;
};

/* Bytes of arguments a task carries inline (its per-request state; SMPI's
 * handles are pointers, so its mxh_coll_args_t is larger than with MPICH). */
#define MXH_TASK_ARGS_MAX 512

void mxh_task_queue_init(mxh_task_queue_t *q);
/* Tasks in @q (posted, not finished). */
int mxh_task_queue_len(const mxh_task_queue_t *q);
/* Progress everything until @q is empty (a blocking call or a communicator
 * free with nonblocking collectives ahead of it). Never from inside a task. */
void mxh_task_queue_drain(mxh_task_queue_t *q);

/* A new task (from a pool) with MXH_TASK_ARGS_MAX bytes of argument space at
 * mxh_task_args(); NULL if out of memory. */
mxh_task_t *mxh_task_new(void);
void *mxh_task_args(mxh_task_t *t);
/* Append @t to @q with body @fn(mxh_task_args(t)); the head of a queue starts
 * at once (runs until its first wait). @func names the call for errors.
 * *@req gets a generalized request that MPI_Test/Wait complete. On failure
 * (no stack, MPI refused the request) the task is released and an error
 * status returned. */
mxh_status_t mxh_task_post(mxh_task_queue_t *q, mxh_task_t *t, mxh_task_fn fn, const char *func,
                           MPI_Request *req);
/* A task without a request, for an owner that tracks it (persistent requests,
 * coll/persist.h): @done(@ctx, status, the task's arguments) runs when the body
 * has returned, then the task is released. @kick: start the head at once, as mxh_task_post; 0
 * leaves it queued until the next progress pass or mxh_task_run_here. */
typedef void (*mxh_task_done_fn)(void *ctx, mxh_status_t st, void *args);
mxh_status_t mxh_task_post_owned(mxh_task_queue_t *q, mxh_task_t *t, mxh_task_fn fn,
                                 const char *func, mxh_task_done_fn done, void *ctx, int kick);
/* Run @t's body on the caller's stack when it has not started and heads its
 * queue (and the caller is no task): the blocking call's cost, no fiber. 1 when
 * it ran (and finished), 0 when it must progress as a task. */
int mxh_task_run_here(mxh_task_t *t);
/* A request that is complete from the start (a call with nothing to move),
 * with the same status as a task's. */
mxh_status_t mxh_task_done_request(MPI_Request *req);
/* Release a task that was never posted. */
void mxh_task_discard(mxh_task_t *t);

/* Resume the head of every queue once (tasks of different communicators run
 * interleaved). Does nothing when called from inside a task. */
void mxh_task_progress_all(void);
/* Called at the start of every progress pass outside a task (NULL: nothing): a
 * persistent start held back from the engine becomes a task (coll/persist.c). */
extern void (*mxh_task_flush_hook)(void);
/* Work posted above the engine and not yet a task counts as in flight (the
 * entry's fast paths then take the path that progresses it). */
void mxh_task_hold(int delta);
/* Called at the end of every progress pass (NULL: nothing): the metrics file's
 * periodic write, which lives above this layer. */
extern void (*mxh_task_poll_hook)(void);

/* The entry layer's conversion of a task's failure into an MPI error code
 * (without calling an error handler: the code travels in the request's status). */
typedef int (*mxh_task_error_fn)(mxh_status_t st, const char *func);
void mxh_task_set_error_fn(mxh_task_error_fn fn);

/* Tasks in flight in the process (inline: the entry's fast path asks it per call). */
extern int mxh_task_nflight;
static inline int mxh_task_in_flight(void)
{
    return mxh_task_nflight;
}

#ifdef __cplusplus
}
#endif

#endif
