/* Persistent collectives (MPI-4's MPI_Allreduce_init & co.): a call checked and
 * decided once, started many times.
 *
 * The handle the user holds is MPI's own persistent collective of the same
 * arguments (the entry layer creates it), never started by the library: it
 * gives the request a valid, unique MPI handle that MPI's request functions
 * treat as an inactive persistent request, and a start that reaches MPI
 * directly (a binding that calls PMPI_Start) still runs a correct collective,
 * MPI's. The library's request functions (mpix/requests.c) find the handle
 * here and run the library's prepared call instead. */
#ifndef MXH_COLL_PERSIST_H
#define MXH_COLL_PERSIST_H

#include <mpi.h>

#include "coll/coll.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mxh_persist mxh_persist_t;

/* Persistent requests that exist, and those started and not yet completed by a
 * wait or test (the request functions' fast exits). */
extern int mxh_persist_live;
extern int mxh_persist_nactive;

/* A persistent request for the prepared call @a (checked, path decided; its
 * count arrays are copied), registered under @proxy. */
mxh_status_t mxh_persist_new(const mxh_coll_args_t *a, MPI_Request proxy, mxh_persist_t **pp);
/* The request registered under @r, or NULL. */
mxh_persist_t *mxh_persist_find(MPI_Request r);

/* Start: MXH_ERR_INVALID_PARAM when it is active already. */
mxh_status_t mxh_persist_start(mxh_persist_t *p);
int mxh_persist_active(const mxh_persist_t *p);
/* Progress once; 1 when the started call has completed. */
int mxh_persist_test(mxh_persist_t *p);
/* Until the started call has completed: on the caller's stack when it has not
 * begun and nothing is ahead of it on its communicator, else as a task. */
void mxh_persist_wait(mxh_persist_t *p);
/* Make a completed request inactive: its status, and in *@mpi_rc the code of
 * a failed MPI call (already reported by MPI) or MPI_SUCCESS. */
mxh_status_t mxh_persist_finish(mxh_persist_t *p, int *mpi_rc);
/* Forget @p's handle; the object goes now, or when its started call completes. */
void mxh_persist_free(mxh_persist_t *p);

MPI_Comm mxh_persist_comm(const mxh_persist_t *p);
const char *mxh_persist_func(const mxh_persist_t *p);

#ifdef __cplusplus
}
#endif

#endif
