/* Collectives: one argument record per call, the decision of its path (a pure
 * function of what every rank agrees on), and its body, run blocking on the
 * caller's stack or as a task (exec/task.h) for the nonblocking forms.
 *
 * Paths, decided by mxh_coll_prepare identically on every rank (they depend on
 * the communicator's hierarchy, the datatype, op, counts and root, never on
 * where this rank's buffers live):
 *   plain   the MPI collective on the user's communicator (derived types,
 *           non-commutative ops, no hierarchy, MPIX_HIER_ENABLE=no, ...)
 *   shm     the whole communicator on one node: shared-memory direct exchange
 *   sched   a hierarchical schedule (levels, fragments, pipeline/stream)
 *   railx   allreduce that keeps excluded rails off the network (MPIX_HIER_EXCLUDE_RAILS)
 * Memory kinds are a local matter on top of any path: a buffer that is not
 * host memory is staged (its kind's ops copy it into a host mirror before the
 * path runs and the results back after), so device buffers get every level,
 * pipelining and streaming exactly like host buffers.
 *
 * The entry layer (mpix/) checks the arguments, fills the record, looks the
 * hierarchy up when mxh_coll_needs_hier says so, and makes one call. */
#ifndef MXH_COLL_COLL_H
#define MXH_COLL_COLL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "exec/exec.h"
#include "exec/task.h"
#include "coll/hier.h"
#include "decide/plan.h"
#include "decide/select.h"
#include "mem/mem.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mxh_coll_path {
    MXH_PATH_NONE = 0, /* nothing to move (count 0) */
    MXH_PATH_PLAIN,
    MXH_PATH_SHM,
    MXH_PATH_SCHED,
    MXH_PATH_RAILX    /* allreduce with excluded rails (coll/rail_exclude.h) */
} mxh_coll_path_t;

typedef struct mxh_coll_args {
    /* the call, as the user made it */
    mxh_coll_t   coll;
    const char  *func;
    const void  *sendbuf;  /* MPI_IN_PLACE allowed where MPI allows it */
    void        *recvbuf;  /* bcast: the buffer */
    int          count;    /* allreduce/bcast/reduce: count; rsb/allgather: recvcount */
    int          sendcount;
    MPI_Datatype dt;       /* allgather: recvtype */
    MPI_Datatype sendtype; /* allgather */
    MPI_Op       op;       /* as passed (half types: translated by prepare) */
    int          root;
    MPI_Comm     comm;     /* the user's communicator */
    /* v-collectives: allgatherv recvcounts/displs, reduce_scatter recvcounts,
     * alltoallv recvcounts/rdispls and sendcounts/sdispls (copies owned by the
     * task for the nonblocking forms: varr) */
    const int   *rcounts, *rdispls, *scounts, *sdispls;
    int         *varr;
    /* filled by mxh_coll_prepare */
    mxh_hier_t  *hier;     /* set by the caller when mxh_coll_needs_hier */
    int          rank, size;
    size_t       tsize;    /* element bytes of vdt (hierarchical paths) */
    /* the hierarchical paths' view of the data, from the type signature (the
     * same on every rank, whatever type map each rank passes): bytes for the
     * collectives that only move data, elements of the signature's one basic
     * type for reductions */
    MPI_Datatype vdt;
    size_t       vn, vsn;  /* vdt elements per element of dt, of sendtype */
    int          vpack;    /* a buffer of this rank is not dense: packed into a mirror */
    MPI_Op       mpi_op;   /* the op handed to MPI (half types: the library's own) */
    int          hier_op;  /* the op can run hierarchically */
    int          memo;     /* the decision may be kept for the next call (hier.h: memo) */
    mxh_coll_path_t path;
    mxh_choice_t choice;
    const mxh_mem_ops_t *send_mem, *recv_mem; /* kinds of this rank's buffers */
    int          staged;   /* a buffer of this rank is not host memory */
    int          mpi_rc;   /* an MPI error code returned by a plain MPI call */
    /* metrics (coll/metrics.h) */
    mxh_fallback_t why;    /* path plain: why (the reason label) */
    size_t       mbytes;   /* the call's bytes at this rank (README: Metrics) */
    uint64_t     t0;       /* when it started (util/clock.h ticks) */
    mxh_lvl_time_t *lvl_p; /* &lvl of the record that counts (views are copies) */
    struct mxh_mstats *mstats; /* the communicator's counters, looked up when the call
                                  starts (never from inside MPI_Comm_free), or NULL */
    int          ipc;      /* path shm ran on the device node level (exec/ipc.h) */
    /* lvl and nb come last: the entry layer leaves them unset (they are a third
     * of the record, too much to zero per small call); coll.c sets them when
     * the call needs them (lvl_start, mxh_coll_start) */
    mxh_lvl_time_t lvl;    /* the executor's step times per level index */
    /* a nonblocking plain-MPI call: MPI's own collective posted at once (so that
     * every rank starts MPI's collectives on the user's communicator in call
     * order), completed by its task; what its completion must undo */
    struct {
        MPI_Request req;
        int         posted;
        void       *copy;            /* in-place copy to free (MPICH quirks) */
        char       *smirror, *rmirror; /* staging of non-host buffers (mxh_mem_stage_get) */
        size_t      sbytes, rbytes, sgot, rgot;
        MPI_Aint    rlb;
        int         recv_out;
    } nb;
} mxh_coll_args_t;

/* The facts of each collective (rooted, reducing, ...): util/coll_desc.h, mxh_coll_info. */

/* Set the fields the decision needs: element size, op, memory kinds; whether
 * the call needs the communicator's hierarchy (otherwise it is plain MPI or
 * empty). Local, no communication. @hier_op: the op can run hierarchically
 * (from the entry layer's checks). */
int mxh_coll_needs_hier(mxh_coll_args_t *a, int hier_op);
/* Decide the path (with a->hier set when needed). Pure, identical on every rank. */
void mxh_coll_prepare(mxh_coll_args_t *a);
/* mxh_coll_needs_hier + the hierarchy lookup + mxh_coll_prepare in one, for a
 * call like the last one of its collective on a cached hierarchy (same count,
 * predefined type, op): its decision is taken over (1), else nothing is
 * set (0). Small calls repeat their shape; the decision costs more than them. */
int mxh_coll_recall(mxh_coll_args_t *a, int hier_op);

/* Run the call to completion on the caller's stack (after the collectives
 * still queued on the communicator). MXH_OK, or a failure: a->mpi_rc holds
 * the code when a plain MPI call failed (MPI already reported it), else the
 * cause is logged. */
mxh_status_t mxh_coll_run(mxh_coll_args_t *a);

/* Post the call as a task; *@req completes it. Plain-MPI calls on host
 * buffers become the MPI nonblocking collective itself (its request). */
mxh_status_t mxh_coll_start(const mxh_coll_args_t *a, MPI_Request *req);

/* The same without a request (a persistent request's start, coll/persist.h):
 * @done(@ctx, status, the call's record) runs when the call has completed (at once for a call
 * with nothing to move). @a is copied; the caller keeps it for the next start. */
mxh_status_t mxh_coll_start_owned(const mxh_coll_args_t *a, mxh_task_done_fn done, void *ctx);

#ifdef __cplusplus
}
#endif

#endif
