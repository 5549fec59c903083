/* Entry layer internals: argument checks, error raising, the per-communicator
 * hierarchy object cached as an MPI attribute. */
#ifndef MPIX_INTERNAL_H
#define MPIX_INTERNAL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "mpix_hier.h"
#include "coll/hier.h"
#include "mem/mem.h"
#include "reduce/dtypes.h"
#include "util/log.h"
#include "util/status.h"

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

/* the classes: reduce/dtypes.h (MPI's groups of the predefined types) */

mxh_dtype_class_t mxh_dtype_classify(MPI_Datatype dt);

/* The last predefined datatype the checks looked up (never MPI_DATATYPE_NULL
 * once set; predefined handles never change or get reused) and its size if it
 * is plain, else 0: the inline fast paths below answer a call that repeats
 * its datatype without a call into errors.c. */
extern MPI_Datatype mxh_dt_last;
extern size_t       mxh_dt_last_size;

/* Predefined and contiguous without holes (size == extent, lb == 0), or one of
 * the half types (size 2). */
int mxh_dtype_is_plain_slow(MPI_Datatype dt, size_t *size);
static inline int mxh_dtype_is_plain(MPI_Datatype dt, size_t *size)
{
    if (dt == mxh_dt_last) {
        if (mxh_dt_last_size == 0)
            return 0;
        *size = mxh_dt_last_size;
        return 1;
    }
    return mxh_dtype_is_plain_slow(dt, size);
}

/* A valid communicator (intra or inter). Inline: one with a cached hierarchy
 * was validated when the hierarchy was looked up. */
int mxh_check_comm_slow(MPI_Comm comm, const char *func);
static inline int mxh_check_comm(MPI_Comm comm, const char *func)
{
    return mxh_hier_cached(comm) ? MPI_SUCCESS : mxh_check_comm_slow(comm, func);
}
/* An intercommunicator: every collective on it is MPI's own. Inline: one with
 * a cached hierarchy (built on intracommunicators only) is not. */
int mxh_comm_is_inter_slow(MPI_Comm comm);
static inline int mxh_comm_is_inter(MPI_Comm comm)
{
    return mxh_hier_cached(comm) ? 0 : mxh_comm_is_inter_slow(comm);
}
int mxh_check_count(MPI_Comm comm, int count, const char *what, const char *func);
/* A valid (and committed) datatype. Inline: the last predefined one is. A
 * handle MPI does not know is MPI_ERR_TYPE, or MPI_ERR_OP in a reduction with
 * a predefined op (mxh_check_reduce_dtype), as MPICH reports them. */
int mxh_check_dtype_slow(MPI_Comm comm, MPI_Datatype dt, MPI_Op op, const char *what,
                         const char *func);
static inline int mxh_check_dtype(MPI_Comm comm, MPI_Datatype dt, const char *what,
                                  const char *func)
{
    return dt == mxh_dt_last ? MPI_SUCCESS
                             : mxh_check_dtype_slow(comm, dt, MPI_OP_NULL, what, func);
}
static inline int mxh_check_reduce_dtype(MPI_Comm comm, MPI_Datatype dt, MPI_Op op,
                                         const char *func)
{
    return dt == mxh_dt_last ? MPI_SUCCESS
                             : mxh_check_dtype_slow(comm, dt, op, "datatype", func);
}
/* op valid and allowed with dt; *hier_ok = 1: op can run hierarchically, else
 * -(mxh_fallback_t) why not (the metrics' fallback reason). */
int mxh_check_op(MPI_Comm comm, MPI_Op op, MPI_Datatype dt, int *hier_ok, const char *func);
int mxh_check_buf_slow(MPI_Comm comm, const void *buf, int count, const char *what,
                       const char *func);
/* inline: a host buffer in a process where every buffer is host memory is
 * valid (what mxh_check_buf_slow concludes, clearing the last error first) */
static inline int mxh_check_buf(MPI_Comm comm, const void *buf, int count, const char *what,
                                const char *func)
{
    if (count > 0 && buf != NULL && buf != MPI_IN_PLACE && mxh_mem_host_only()) {
        mxh_log_clear_last_error();
        return MPI_SUCCESS;
    }
    return mxh_check_buf_slow(comm, buf, count, what, func);
}

/* ---- hierarchy (comm.c) ---- */

/* The hierarchy of @comm (built on first use, collective); on failure the
 * error is raised on @comm and its code returned. */
int mxh_entry_hier_slow(MPI_Comm comm, const char *func, mxh_hier_t **hier_p);
static inline int mxh_entry_hier(MPI_Comm comm, const char *func, mxh_hier_t **hier_p)
{
    if (mxh_hier_cached(comm)) { /* what mxh_hier_get returns for it */
        *hier_p = mxh_hier_last;
        return MPI_SUCCESS;
    }
    return mxh_entry_hier_slow(comm, func, hier_p);
}
/* Library set-up of the entry layer (error conversion for nonblocking calls). */
extern int mxh_entry_ready; /* comm.c: the set-up below was done */
int mxh_entry_init_slow(MPI_Comm comm, const char *func);
/* MPIX_HIER_CHECK (check.c): compare call @a's arguments across its ranks;
 * MPI_SUCCESS, or the same raised error on every rank. */
extern int mxh_args_check; /* MPIX_HIER_CHECK=yes (set with the entry's set-up) */
struct mxh_coll_args;
int mxh_check_args(const struct mxh_coll_args *a);
static inline int mxh_entry_init(MPI_Comm comm, const char *func)
{
    if (mxh_lib_initialized && mxh_entry_ready)
        return MPI_SUCCESS;
    return mxh_entry_init_slow(comm, func);
}
/* An MPI error code for a failed status, without calling an error handler. */
int mxh_status_code(mxh_status_t status, const char *func);

#endif
