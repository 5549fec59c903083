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
                           void *tmp, MPI_Datatype dt, size_t extent, MPI_Op op)
{
    for (int i = 0; i < plan->nsteps; i++) {
        const mxh_step_t *s = &plan->steps[i];
        MPI_Comm comm = level_comms[s->level];
        char *base = (char *)work + s->offset * extent;
        int cnt = (int)s->count, rc = MPI_SUCCESS;

        /* every member of a group sees the same region: empty steps are skipped by all */
        if (s->count == 0)
            continue;
        /* MPI_IN_PLACE is avoided on purpose: MPICH 4.0.2 crashes in MPI_Reduce with
         * MPI_IN_PLACE at a non-zero root and asserts in in-place MPI_Reduce_scatter
         * on large counts. Results go to @tmp and are copied into place. */
        char *mine = s->counts ? base + (size_t)s->displs[s->me] * extent : NULL;
        size_t mybytes = s->counts ? (size_t)s->counts[s->me] * extent : 0;
        switch (s->type) {
        case MXH_STEP_REDUCE_SCATTER:
            rc = MPI_Reduce_scatter(base, tmp, s->counts, dt, op, comm);
            if (rc == MPI_SUCCESS && mybytes)
                memcpy(mine, tmp, mybytes);
            break;
        case MXH_STEP_REDUCE:
            if (s->me == s->root) {
                rc = MPI_Reduce(base, tmp, cnt, dt, op, s->root, comm);
                if (rc == MPI_SUCCESS)
                    memcpy(base, tmp, s->count * extent);
            } else {
                rc = MPI_Reduce(base, NULL, cnt, dt, op, s->root, comm);
            }
            break;
        case MXH_STEP_ALLREDUCE:
            rc = MPI_Allreduce(base, tmp, cnt, dt, op, comm);
            if (rc == MPI_SUCCESS)
                memcpy(base, tmp, s->count * extent);
            break;
        case MXH_STEP_ALLGATHER:
            rc = MPI_Allgatherv(mine, s->counts[s->me], dt, tmp, s->counts, s->displs, dt, comm);
            if (rc == MPI_SUCCESS)
                memcpy(base, tmp, s->count * extent);
            break;
        case MXH_STEP_BCAST:
            rc = MPI_Bcast(base, cnt, dt, s->root, comm);
            break;
        case MXH_STEP_SCATTER:
            /* the root's own part is already in place: it receives into tmp */
            if (s->me == s->root)
                rc = MPI_Scatterv(base, s->counts, s->displs, dt, tmp, s->counts[s->me], dt,
                                  s->root, comm);
            else
                rc = MPI_Scatterv(NULL, NULL, NULL, dt, mine, s->counts[s->me], dt, s->root,
                                  comm);
            break;
        case MXH_STEP_GATHER:
            if (s->me == s->root) {
                rc = MPI_Gatherv(mine, s->counts[s->me], dt, tmp, s->counts, s->displs, dt,
                                 s->root, comm);
                if (rc == MPI_SUCCESS)
                    memcpy(base, tmp, s->count * extent);
            } else {
                rc = MPI_Gatherv(mine, s->counts[s->me], dt, NULL, NULL, NULL, dt, s->root, comm);
            }
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
