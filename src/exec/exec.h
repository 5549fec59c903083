/* Executor: runs schedules (plans on fragments) with MPI on the level
 * communicators, and with shared memory on levels whose members share a node. */
#ifndef MXH_EXEC_H
#define MXH_EXEC_H

#include <mpi.h>
#include <stdint.h>

#include "decide/plan.h"
#include "decide/sched.h"
#include "exec/p2p.h"
#include "exec/shm.h"
#include "util/status.h"

struct mxh_exec_ctx;

/* Time of the steps of one call per level index (metrics clock ticks,
 * util/clock.h) and their number. Steps that overlap (rounds, streams of
 * fragments) each count their own duration. */
typedef struct mxh_lvl_time {
    uint64_t ticks[MXH_MAX_LEVELS];
    uint32_t steps[MXH_MAX_LEVELS];
} mxh_lvl_time_t;
/* Moves a fragment's data in or out of the work buffer (the entry layer's copy
 * from the send buffer, packing, unpacking), a piece at a time: at most @max
 * bytes of the fragment's job from byte @off of it on. Returns the bytes of the
 * job left after them (0: done; otherwise exactly @max were moved). */
typedef size_t (*mxh_frag_fn)(void *arg, const mxh_sched_t *sched, int frag, char *work,
                              size_t off, size_t max);

typedef struct mxh_exec_ctx {
    const MPI_Comm   *comms;  /* [nlevels] my group at each level */
    mxh_shm_t *const *shm;    /* [nlevels] shared segment of the group, or NULL */
    MPI_Datatype      dt;     /* predefined, contiguous */
    size_t            extent; /* bytes per element */
    MPI_Op            op;     /* reducing steps (an op MPI accepts for dt) */
    MPI_Request      *reqs;   /* [nstages] scratch for the pipelined executor */
    mxh_frag_fn       frag_in;  /* before a fragment's first step (NULL: nothing to do) */
    const char       *src;      /* NULL, or the input in the work buffer's layout (allreduce:
                                   the send buffer): a fragment whose first step can read
                                   it there (a point-to-point reduce-scatter or allreduce
                                   over the whole fragment) skips frag_in */
    mxh_frag_fn       frag_out; /* after its last step */
    void             *frag_arg;
    unsigned          shm_levels; /* bit l: level l is node-local and shared memory is
                                     configured: every rank's view, also of a rank
                                     alone in its group there (agreed decisions) */
    mxh_lvl_time_t   *lvl;        /* NULL, or where step times add up (metrics) */
    unsigned          skip_levels; /* bit l: steps at level l are not run (another engine
                                      did their work: the device node level of exec/ipc.h,
                                      on every rank of those groups alike) */
    MPI_Comm          spread_comm; /* the layout's spread group (MXH_STEP_SPREAD steps;
                                      MPI_COMM_NULL where plans have none) */
    /* Device buffers: work, tmp (and src) are memory of kind @mem (NULL: host memory);
     * every step then runs point to point (mxh_exec_device_able) with its messages
     * direct or staged (@xfer, exec/p2p.h) and its reductions on the device, each op
     * in flight with its own devs[] entry (mxh_exec_dev_slots of them, each with
     * mxh_exec_bounce_bytes of pinned memory when staged). */
    const mxh_mem_ops_t *mem;
    mxh_xfer_t           xfer;
    mxh_p2p_dev_t       *devs;
} mxh_exec_ctx_t;

/* Whether @sched can run on device buffers: every step that moves data on a level not
 * skipped (@skip_levels) runs point to point, and the kind @mem reduces (@dt, @op)
 * where a step reduces. */
int mxh_exec_device_able(const mxh_sched_t *sched, unsigned skip_levels,
                         const mxh_mem_ops_t *mem, MPI_Datatype dt, MPI_Op op);

/* Ops in flight at most (devs[] entries) and pinned bounce bytes each needs for
 * @sched with @ext-byte elements, staged: the bound of a call's pinned memory is their
 * product. */
int mxh_exec_dev_slots(const mxh_sched_t *sched);
size_t mxh_exec_bounce_bytes(const mxh_sched_t *sched, size_t ext);

/* Whether step @s moves nothing here: empty, or at a skipped level. Every
 * member of the step's group answers alike. */
static inline int mxh_exec_step_void(const mxh_exec_ctx_t *ctx, const mxh_step_t *s)
{
    return s->count == 0 || (ctx->skip_levels >> s->level & 1u);
}

/* Elements of temporary space mxh_exec_sched needs for @sched. */
size_t mxh_exec_tmp_count(const mxh_sched_t *sched, const mxh_exec_ctx_t *ctx);

/* Run @plan on the work buffer @work (plan->work_count elements), using @tmp
 * (mxh_exec_tmp_count of a one-fragment schedule, not overlapping @work), steps one after another.
 * On an MPI failure the MPI error string is logged and MXH_ERR_MPI returned. */
mxh_status_t mxh_exec_plan(const mxh_plan_t *plan, const mxh_exec_ctx_t *ctx, void *work,
                           void *tmp);

/* Run @sched on @work (sched->work_count elements) with @tmp
 * (mxh_exec_tmp_count elements), as the tuning pass stamped it (decide/tune.h: every
 * choice is read from the schedule). One fragment: mxh_exec_plan. Several, every
 * step point to point: a stream (each fragment moves on to its next stage as
 * soon as its step completes, a window of fragments in flight; frag_in/out run
 * as fragments enter and leave, overlapping the others' transfers). Otherwise
 * rounds of nonblocking steps (shared-memory steps run while the MPI ones
 * progress), one wait per round. */
mxh_status_t mxh_exec_sched(const mxh_sched_t *sched, const mxh_exec_ctx_t *ctx, void *work,
                            void *tmp);

#endif
