/* Entry layer internals: argument checks, error raising, the per-communicator
 * hierarchy object cached as an MPI attribute. */
#ifndef MPIX_INTERNAL_H
#define MPIX_INTERNAL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "mpix_hier.h"
#include "coll/plan.h"
#include "coll/sched.h"
#include "coll/select.h"
#include "coll/shm.h"
#include "hier/levels.h"
#include "hier/record.h"
#include "util/config.h"
#include "util/status.h"

typedef struct mxh_sched_entry {
    mxh_sched_t *sched;
    uint64_t     last_use;
} mxh_sched_entry_t;

typedef struct mxh_hier {
    MPI_Comm          comm;                       /* private dup of the user communicator */
    MPI_Comm          user_comm;                  /* the communicator it is attached to */
    int               rank, size;
    mxh_config_t      config;
    mxh_record_t     *recs;                       /* [size] gathered records */
    mxh_layout_t     *layout;
    MPI_Comm          level_comm[MXH_MAX_LEVELS]; /* my group at each level */
    char             *description;
    mxh_sched_entry_t *scheds;                    /* [config.plan_cache_size] LRU */
    uint64_t          clock;
    mxh_select_shape_t shape;                     /* what selection may use */
    mxh_shm_t        *shm_all;                    /* whole communicator on one node, or NULL */
    mxh_shm_t        *shm[MXH_MAX_LEVELS];        /* node-local levels, or NULL */
    MPI_Request       reqs[2 * MXH_MAX_LEVELS];   /* pipelined executor */
    int              *blk_counts, *blk_displs;    /* [size] shared-memory block parts */
    void             *scratch;                    /* work buffer, grown on demand */
    size_t            scratch_size;
    void             *tmp;                        /* executor's temporary, grown on demand */
    size_t            tmp_size;
} mxh_hier_t;

/* ---- errors (errors.c) ---- */

/* Raise an error like an MPI function: build a code of @mpi_class whose
 * MPI_Error_string carries "@func: message", call the error handler of @comm
 * (MPI_COMM_WORLD's for MPI_COMM_NULL) and return the code. */
int mxh_raise(MPI_Comm comm, int mpi_class, const char *func, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* Raise an internal status (the first detector logged the cause; it is
 * reused from mxh_log_last_error() when available). */
int mxh_raise_status(MPI_Comm comm, mxh_status_t status, const char *func);
/* The library's own error class for configuration/topology errors. */
int mxh_config_error_class(void);
/* Release what the checks keep (at MPI_Finalize). */
void mxh_errors_cleanup(void);

/* ---- argument checks (errors.c): return MPI_SUCCESS or a raised code ---- */

typedef enum mxh_dtype_class {
    MXH_DT_DERIVED = 0, /* not predefined: plain MPI decides */
    MXH_DT_C_INT, MXH_DT_F_INT, MXH_DT_FLOAT, MXH_DT_LOGICAL, MXH_DT_COMPLEX, MXH_DT_BYTE,
    MXH_DT_PAIR,        /* MINLOC/MAXLOC pair types */
    MXH_DT_OTHER,       /* predefined, not reducible (MPI_CHAR, MPI_PACKED, ...) */
    MXH_DT_HALF         /* MPIX_HIER_FLOAT16 / MPIX_HIER_BFLOAT16 (SUM, PROD, MAX, MIN) */
} mxh_dtype_class_t;

mxh_dtype_class_t mxh_dtype_classify(MPI_Datatype dt);
/* Predefined and contiguous without holes (size == extent, lb == 0), or one of
 * the half types (size 2). */
int mxh_dtype_is_plain(MPI_Datatype dt, size_t *size);

int mxh_check_comm(MPI_Comm comm, const char *func);
int mxh_check_count(MPI_Comm comm, int count, const char *what, const char *func);
int mxh_check_dtype(MPI_Comm comm, MPI_Datatype dt, const char *what, const char *func);
/* op valid and allowed with dt; *hier_ok = op can run hierarchically. */
int mxh_check_op(MPI_Comm comm, MPI_Op op, MPI_Datatype dt, int *hier_ok, const char *func);
int mxh_check_buf(MPI_Comm comm, const void *buf, int count, const char *what, const char *func);

/* ---- hierarchy (comm.c) ---- */

/* The communicator of the last hierarchy looked up (a valid intracommunicator
 * with a live hierarchy), or MPI_COMM_NULL: lets the checks skip MPI queries. */
extern MPI_Comm mxh_last_comm;

/* The hierarchy of @comm, built on first use (collective). On failure the
 * error is raised on @comm and its code returned. */
int mxh_hier_get(MPI_Comm comm, const char *func, mxh_hier_t **hier_p);
/* The cached schedule for a shape and choice (algorithm hier or pipeline),
 * built if needed. */
mxh_status_t mxh_hier_sched(mxh_hier_t *hier, mxh_coll_t coll, size_t count, int root,
                            size_t tsize, const mxh_choice_t *choice,
                            const mxh_sched_t **sched_p);
/* The plan of a whole (unfragmented) collective, for introspection. */
mxh_status_t mxh_hier_plan(mxh_hier_t *hier, mxh_coll_t coll, size_t count, int root,
                           const mxh_plan_t **plan_p);
/* Scratch space of at least @bytes (work buffers of the entry layer). */
void *mxh_hier_scratch(mxh_hier_t *hier, size_t bytes);
/* Temporary space of at least @bytes for the executor (never the scratch). */
void *mxh_hier_tmp(mxh_hier_t *hier, size_t bytes);
/* Hierarchical algorithms usable on this communicator at all. */
int mxh_hier_active(const mxh_hier_t *hier);
/* Algorithm for a call (pure, identical on every rank). */
static inline mxh_choice_t mxh_hier_select(const mxh_hier_t *h, mxh_coll_t coll, size_t bytes,
                                           size_t work_bytes)
{
    return mxh_select(&h->config, &h->shape, coll, bytes, work_bytes);
}

#endif
