/* Executor: runs a plan's steps with MPI on the level communicators. */
#ifndef MXH_EXEC_H
#define MXH_EXEC_H

#include <mpi.h>

#include "coll/plan.h"
#include "util/status.h"

/* Run @plan on the work buffer @work (elements of @dt, @extent bytes each,
 * contiguous), using @tmp (plan->tmp_count elements, not overlapping @work).
 * @op is used by reducing steps. On an MPI failure the MPI error string is
 * logged and MXH_ERR_MPI returned. */
mxh_status_t mxh_exec_plan(const mxh_plan_t *plan, const MPI_Comm *level_comms, void *work,
                           void *tmp, MPI_Datatype dt, size_t extent, MPI_Op op);

#endif
