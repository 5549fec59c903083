/* Rail exclusion: the allreduce body. Cost and design: rail_exclude.h. */
#include "coll/rail_exclude.h"
#include "coll/task.h"
#include "util/log.h"

#include <string.h>

static mxh_status_t done(int rc, int *mpi_rc)
{
    if (rc == MPI_SUCCESS)
        return MXH_OK;
    *mpi_rc = rc;
    return MXH_ERR_MPI;
}

mxh_status_t mxh_xrail_allreduce(mxh_xrail_t *x, MPI_Comm *level_comm, int node_coord,
                                 const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt,
                                 size_t tsize, MPI_Op op, void *scratch, int *mpi_rc)
{
    int base = count / x->nhealthy, rem = count % x->nhealthy, off = 0, rc;
    int mine, piece = x->piece[node_coord];
    char *rb = (char *)recvbuf;
    const void *src = sendbuf;
    MPI_Request req;

    for (int j = 0; j < x->g; j++) {
        int p = x->piece[j];
        x->counts[j] = p < 0 ? 0 : base + (p < rem);
        x->displs[j] = off;
        off += x->counts[j];
    }
    mine = x->counts[node_coord];
    if (sendbuf == MPI_IN_PLACE) { /* MPICH 4.0.2's in-place reduce-scatter: avoided */
        memcpy(scratch, recvbuf, (size_t)count * tsize);
        src = scratch;
    }
    /* 1. node: my piece (nothing on an excluded rail) */
    rc = MPI_Ireduce_scatter(src, rb + (size_t)x->displs[node_coord] * tsize, x->counts, dt, op,
                             level_comm[x->node_level], &req);
    if (rc == MPI_SUCCESS)
        rc = mxh_task_wait(&req, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
        return done(rc, mpi_rc);
    /* 2. the network, healthy rails only: every member of a rail communicator holds the
     * same piece (the same node coordinate), so excluded rails' communicators stay silent */
    if (piece >= 0 && mine > 0) {
        int lv[2] = {x->rail_level, x->spine_level};
        for (int i = 0; i < 2; i++) {
            if (lv[i] < 0)
                continue;
            rc = MPI_Iallreduce(MPI_IN_PLACE, rb + (size_t)x->displs[node_coord] * tsize, mine, dt,
                                op, level_comm[lv[i]], &req);
            if (rc == MPI_SUCCESS)
                rc = mxh_task_wait(&req, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS)
                return done(rc, mpi_rc);
        }
    }
    /* 3. node: everybody gets every piece */
    rc = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recvbuf, x->counts, x->displs, dt,
                         level_comm[x->node_level], &req);
    if (rc == MPI_SUCCESS)
        rc = mxh_task_wait(&req, MPI_STATUS_IGNORE);
    return done(rc, mpi_rc);
}
