/* The per-communicator object: gathered records -> layout -> level
 * communicators and shared-memory segments, the schedule cache, scratch
 * buffers and the queue of collectives in flight. Cached on the user's
 * communicator as an MPI attribute (freed by MPI_Comm_free, after the
 * collectives still queued on it complete); the process-wide state (keyvals,
 * configuration from the environment) is set up on first use and torn down in
 * MPI_Finalize through an attribute of MPI_COMM_SELF.
 *
 * Errors are logged by the code that detects them (mxh_log_last_error has the
 * message) and returned as statuses; the entry layer turns them into MPI codes. */
#ifndef MXH_COLL_HIER_H
#define MXH_COLL_HIER_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "decide/cost.h"
#include "decide/plan.h"
#include "coll/rail_exclude.h"
#include "decide/sched.h"
#include "decide/select.h"
#include "exec/shm.h"
#include "exec/task.h"
#include "decide/tune_hier.h"
#include "decide/levels.h"
#include "topo/record.h"
#include "mem/mem.h"
#include "util/config.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mxh_sched_entry {
    mxh_sched_t *sched;
    uint64_t     last_use;
} mxh_sched_entry_t;

/* A buffer grown on demand (geometrically: varying sizes settle without
 * reallocations). */
typedef struct mxh_grow_buf {
    void  *p;
    size_t size;
} mxh_grow_buf_t;

struct mxh_a2a; /* the hierarchical alltoall's communicators and buffers (coll/alltoall.c) */

/* The last decision per collective (coll.c: mxh_coll_recall): a call of the
 * same count, predefined type and op on this hierarchy decides the same, so
 * it takes these fields instead of mxh_coll_needs_hier + mxh_coll_prepare. */
typedef struct mxh_coll_memo {
    int            valid;
    int            count;   /* the key: count, dt, op, hier_op of the call */
    MPI_Datatype   dt;
    MPI_Op         op;
    int            hier_op;
    int            path;    /* the decision (mxh_coll_path_t, coll.h) */
    mxh_choice_t   choice;
    mxh_fallback_t why;
    MPI_Datatype   vdt;
    size_t         vn, tsize, mbytes;
    MPI_Op         mpi_op;
} mxh_coll_memo_t;

typedef struct mxh_hier {
    MPI_Comm          comm;                       /* private dup of the user communicator */
    MPI_Comm          user_comm;                  /* the communicator it is attached to */
    int               rank, size;
    mxh_config_t      config;
    mxh_record_t     *recs;                       /* [size] gathered records */
    mxh_layout_t     *layout;
    MPI_Comm          level_comm[MXH_MAX_LEVELS]; /* my group at each level */
    MPI_Comm          spread_comm;                /* my spread group (layout spread_p > 0:
                                                     MPIX_HIER_SPREAD), else MPI_COMM_NULL */
    char             *description;
    mxh_sched_entry_t *scheds;                    /* [config.plan_cache_size] LRU */
    uint64_t          clock;
    mxh_select_shape_t shape;                     /* what selection may use */
    mxh_hier_cost_t   cost;                       /* the cost-model state selection and
                                                     pacing read (decide/tune_hier.h) */
    mxh_shm_t        *shm_all;                    /* whole communicator on one node, or NULL */
    struct mxh_ipc   *ipc;                        /* its device node level (exec/ipc.h), or
                                                     NULL (agreed) */
    /* several nodes, device node level wanted (MPIX_HIER_IPC): my whole node */
    MPI_Comm          node_comm;                  /* or MPI_COMM_NULL */
    mxh_shm_t        *shm_node;                   /* its segment, or NULL */
    struct mxh_ipc   *ipc_node;                   /* its device node level, or NULL (agreed
                                                     by the node's ranks) */
    mxh_grow_buf_t    ipc_regs;                   /* region lists of the device network path */
    int               node_alone;                 /* several nodes, device node level wanted,
                                                     and this rank alone in its node */
    size_t            ipc_min;                    /* calls of fewer bytes stage (agreed:
                                                     MPIX_HIER_IPC_MIN, raised where ranks
                                                     share a GPU, exec/ipc.h) */
    int               ipc_shared[2];              /* two ranks of a node on one GPU that
                                                     raised it (auto), else -1 */
    int               ipc_mps;                    /* ranks of a node share a GPU, all
                                                     through MPS: not raised */
    mxh_shm_t        *shm[MXH_MAX_LEVELS];        /* node-local levels, or NULL */
    unsigned          shm_levels;                 /* bit l: some rank has shm[l] (agreed) */
    MPI_Request       reqs[2 * MXH_MAX_LEVELS];   /* pipelined executor */
    int              *blk_counts, *blk_displs;    /* [size] shared-memory block parts */
    /* the last v-schedule (allgatherv, reduce_scatter) and its block counts:
     * frameworks call with the same counts step after step */
    mxh_sched_t      *vsched;
    size_t           *vsched_counts;              /* [size] */
    mxh_grow_buf_t    scratch;                    /* work buffer */
    mxh_grow_buf_t    tmp;                        /* executor's temporary space */
    mxh_grow_buf_t    stage[MXH_MEM_NKINDS][2];   /* staging mirrors per memory kind
                                                     (input, output), from its allocator */
    /* device network path (coll.c): work and receive space of each kind (its
     * work_alloc), the pinned bounce pool of staged steps (its stage_alloc: at most
     * ops in flight x bounce bytes of the schedule, given back after
     * MXH_HIER_BOUNCE_IDLE calls that needed less than a quarter of it) and the ops'
     * device records */
    mxh_grow_buf_t    dev[MXH_MEM_NKINDS][2];
    mxh_grow_buf_t    bounce[MXH_MEM_NKINDS];
    unsigned          bounce_idle[MXH_MEM_NKINDS];
    mxh_grow_buf_t    devs;
    mxh_task_queue_t *queue;                      /* collectives in flight on the user's
                                                     communicator, FIFO (mxh_comm_queue) */
    struct mxh_comm_queue *cq;
    struct mxh_a2a   *a2a;                        /* mxh_alltoall_setup, or NULL */
    mxh_xrail_t       xrail;                      /* MPIX_HIER_EXCLUDE_RAILS (rail_exclude.h) */
    mxh_coll_memo_t   memo[MXH_COLL_COUNT];       /* mxh_coll_recall */
    struct mxh_mstats    *mstats;                     /* the communicator's metrics (coll/metrics.c,
                                                     set on its first count; outlive this) */
} mxh_hier_t;

/* The link times a schedule paces by: the measured figures where the cost model chose
 * it with a margin (decide/tune_hier.h), else the configured ones; NULL: unpaced. */
static inline const mxh_cost_model_t *mxh_hier_pace(const mxh_hier_t *h, const mxh_sched_t *s)
{
    const mxh_hier_cost_t *c = &h->cost;
    return c->npace == 0 ? NULL : &c->pace[s->by_model && c->npace > 1];
}

/* The links a paced schedule's exchanges are booked on (exec.c): mxh_hier_pace's as
 * this rank's own links are, NULL: unpaced. */
static inline const mxh_cost_model_t *mxh_hier_pace_links(const mxh_hier_t *h,
                                                          const mxh_sched_t *s)
{
    const mxh_cost_model_t *m = mxh_hier_pace(h, s);
    return m == NULL ? NULL : &h->cost.links[m - h->cost.pace];
}

/* The link times a bcast's staggered steps post ahead by (exec.c stream_stagger): the
 * measured figures where the hierarchy has them, else the configured ones; NULL
 * where MPIX_HIER_PIPELINE_PACE=no. */
static inline const mxh_cost_model_t *mxh_hier_times(const mxh_hier_t *h)
{
    const mxh_hier_cost_t *c = &h->cost;
    return c->npace == 0 ? NULL : &c->pace[c->npace - 1];
}

/* The model selection asks, NULL: the thresholds decide (MPIX_HIER_COST_MODEL resolved
 * no). Not const: the model memoizes its choices. */
static inline mxh_cost_sel_t *mxh_hier_model(mxh_hier_t *h)
{
    return h->cost.selects ? &h->cost.sel : NULL;
}

/* The hierarchy of @comm, built on first use (collective over @comm). */
mxh_status_t mxh_hier_get(MPI_Comm comm, mxh_hier_t **hier_p);
/* @comm is the communicator looked up last and has a live hierarchy (so it is
 * a valid intracommunicator: argument checks may skip their MPI queries). */
extern MPI_Comm    mxh_hier_last_comm; /* the last lookup (hier.c): */
extern mxh_hier_t *mxh_hier_last;      /* cleared when its hierarchy is destroyed */
static inline int mxh_hier_cached(MPI_Comm comm)
{
    return comm == mxh_hier_last_comm && mxh_hier_last != NULL;
}
/* Build (again) with @info's mpix_hier_* keys (collective). */
mxh_status_t mxh_hier_init(MPI_Comm comm, MPI_Info info, mxh_hier_t **hier_p);

/* The queue of the collectives in flight on @comm (plain-MPI and hierarchical
 * alike: one FIFO per communicator), cached as an attribute of @comm and
 * created on first use (local, no communication); NULL if out of memory.
 * mxh_comm_queue_find does not create it. */
mxh_task_queue_t *mxh_comm_queue(MPI_Comm comm);
mxh_task_queue_t *mxh_comm_queue_find(MPI_Comm comm);

/* Process-wide set-up (keyvals, configuration from the environment); every
 * entry point calls it. */
mxh_status_t mxh_lib_init(void);
extern int mxh_lib_initialized; /* mxh_lib_init succeeded (until MPI_Finalize) */
/* The process-wide configuration (the environment's; valid after mxh_lib_init). */
const mxh_config_t *mxh_lib_config(void);
/* @fn runs in MPI_Finalize after the hierarchies are freed (the entry layer's
 * cleanup). */
void mxh_lib_on_finalize(void (*fn)(void));

/* Stamp @s with the tuning pass's choices by this hierarchy's models and segments
 * (decide/tune.h); @picks: make the model's per-schedule picks too. */
void mxh_hier_tune(const mxh_hier_t *h, mxh_sched_t *s, int picks);
/* The cached schedule for a shape and choice (algorithm hier or pipeline),
 * built if needed (and tuned). */
mxh_status_t mxh_hier_sched(mxh_hier_t *hier, mxh_coll_t coll, size_t count, int root,
                            size_t tsize, const mxh_choice_t *choice,
                            const mxh_sched_t **sched_p);
/* The plan of a whole (unfragmented) collective, for introspection. */
mxh_status_t mxh_hier_plan(mxh_hier_t *hier, mxh_coll_t coll, size_t count, int root,
                           const mxh_plan_t **plan_p);
/* Work buffer and executor temporary of at least @bytes (NULL: out of memory). */
void *mxh_hier_scratch(mxh_hier_t *hier, size_t bytes);
void *mxh_hier_tmp(mxh_hier_t *hier, size_t bytes);
/* @b grown to at least @bytes with the allocator of the work buffers (shared
 * pages in the simulation build); NULL: out of memory, @b unchanged. */
void *mxh_hier_grow(mxh_grow_buf_t *b, size_t bytes);
void mxh_hier_grow_free(mxh_grow_buf_t *b);
/* Staging mirror @which (0 input, 1 output) of at least @bytes for memory of
 * @ops's kind (its staging allocator: pinned host memory for CUDA). */
void *mxh_hier_stage(mxh_hier_t *hier, const mxh_mem_ops_t *ops, int which, size_t bytes);
/* Device memory @which (0 work, 1 receive space) of at least @bytes of @ops's kind. */
void *mxh_hier_dev(mxh_hier_t *hier, const mxh_mem_ops_t *ops, int which, size_t bytes);
#define MXH_HIER_BOUNCE_IDLE 64
/* @n device records for the ops of a call on @ops's kind, each with @bounce bytes of
 * the pinned pool (0: direct, none), their counters zeroed; NULL: out of memory. */
struct mxh_p2p_dev *mxh_hier_devs(mxh_hier_t *hier, const mxh_mem_ops_t *ops, int n,
                                  size_t bounce);
/* The rank records' exchange: @bytes from every rank of @comm into @all (rank order;
 * NULL: this rank takes part and drops them), in MPI_Allgathers of at most @slice bytes
 * in all (bytes [off, off + len) of every rank's part at a time, len = @slice / size),
 * so that MPI's allgather stays logarithmic where the whole would take its ring. */
#define MXH_RECORDS_SLICE_BYTES (64 * 1024)
mxh_status_t mxh_allgather_sliced(const void *mine, void *all, size_t bytes, size_t slice,
                                  MPI_Comm comm);
/* Hierarchical algorithms usable on this communicator at all. */
int mxh_hier_active(const mxh_hier_t *hier);
/* Algorithm for a call (pure, identical on every rank). */
static inline mxh_choice_t mxh_hier_select(mxh_hier_t *h, mxh_coll_t coll, size_t bytes,
                                           size_t work_bytes)
{
    return mxh_select_cost(&h->config, &h->shape, mxh_hier_model(h), coll, bytes, work_bytes);
}

#ifdef __cplusplus
}
#endif

#endif
