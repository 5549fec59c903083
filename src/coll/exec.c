#include "coll/exec.h"
#include "util/log.h"

#include <string.h>

#define MXH_EXEC_TAG 7177

static mxh_status_t mpi_failed(int rc, const mxh_step_t *s)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    mxh_error("%s step on level %d failed: %s", mxh_step_type_name(s->type), s->level, msg);
    return MXH_ERR_MPI;
}

mxh_status_t mxh_exec_plan(const mxh_plan_t *plan, const MPI_Comm *level_comms, void *work,
                           MPI_Datatype dt, size_t extent, MPI_Op op)
{
    for (int i = 0; i < plan->nsteps; i++) {
        const mxh_step_t *s = &plan->steps[i];
        MPI_Comm comm = level_comms[s->level];
        char *base = (char *)work + s->offset * extent;
        int cnt = (int)s->count, rc = MPI_SUCCESS;

        /* every member of a group sees the same region: empty steps are skipped by all */
        if (s->count == 0)
            continue;
        switch (s->type) {
        case MXH_STEP_REDUCE_SCATTER:
            rc = MPI_Reduce_scatter(MPI_IN_PLACE, base, s->counts, dt, op, comm);
            if (rc == MPI_SUCCESS && s->displs[s->me] != 0 && s->counts[s->me] > 0)
                memmove(base + (size_t)s->displs[s->me] * extent, base,
                        (size_t)s->counts[s->me] * extent);
            break;
        case MXH_STEP_REDUCE:
            if (s->me == s->root)
                rc = MPI_Reduce(MPI_IN_PLACE, base, cnt, dt, op, s->root, comm);
            else
                rc = MPI_Reduce(base, NULL, cnt, dt, op, s->root, comm);
            break;
        case MXH_STEP_ALLREDUCE:
            rc = MPI_Allreduce(MPI_IN_PLACE, base, cnt, dt, op, comm);
            break;
        case MXH_STEP_ALLGATHER:
            rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, base, s->counts, s->displs,
                                dt, comm);
            break;
        case MXH_STEP_BCAST:
            rc = MPI_Bcast(base, cnt, dt, s->root, comm);
            break;
        case MXH_STEP_SCATTER:
            if (s->me == s->root)
                rc = MPI_Scatterv(base, s->counts, s->displs, dt, MPI_IN_PLACE, 0, dt, s->root,
                                  comm);
            else
                rc = MPI_Scatterv(NULL, NULL, NULL, dt, base + (size_t)s->displs[s->me] * extent,
                                  s->counts[s->me], dt, s->root, comm);
            break;
        case MXH_STEP_GATHER:
            if (s->me == s->root)
                rc = MPI_Gatherv(MPI_IN_PLACE, 0, dt, base, s->counts, s->displs, dt, s->root,
                                 comm);
            else
                rc = MPI_Gatherv(base + (size_t)s->displs[s->me] * extent, s->counts[s->me], dt,
                                 NULL, NULL, NULL, dt, s->root, comm);
            break;
        case MXH_STEP_SEND:
            rc = MPI_Send(base, cnt, dt, s->root, MXH_EXEC_TAG, comm);
            break;
        case MXH_STEP_RECV:
            rc = MPI_Recv(base, cnt, dt, s->root, MXH_EXEC_TAG, comm, MPI_STATUS_IGNORE);
            break;
        }
        if (rc != MPI_SUCCESS)
            return mpi_failed(rc, s);
    }
    return MXH_OK;
}
