/* Rail exclusion: the allreduce body. Cost and design: rail_exclude.h. The node steps run
 * on the node's shared segment when it has one (else MPI's collectives on the node
 * communicator), the network steps are the executor's point-to-point allreduce (direct /
 * rhd / ring as for any rail step, exec/p2p.h): MPICH's own allreduce over UCX TCP
 * reached about half the link rate on the emulated cluster. */
#include "coll/hier.h"
#include "exec/p2p.h"
#include "decide/tune.h"
#include "coll/rail_exclude.h"
#include "exec/shm.h"
#include "exec/task.h"
#include "util/log.h"

#include <string.h>

#define XRAIL_TAG 7390 /* above the executor's (exec.c: 7300 + stage) */

static mxh_status_t done(int rc, int *mpi_rc)
{
    if (rc == MPI_SUCCESS)
        return MXH_OK;
    *mpi_rc = rc;
    return MXH_ERR_MPI;
}

static int piece_allreduce(mxh_hier_t *h, int level, char *piece, int n, MPI_Datatype dt,
                           size_t tsize, MPI_Op op)
{
    MPI_Comm c = h->level_comm[level];
    mxh_step_t st;
    mxh_p2p_env_t env = {.comm = c, .dt = dt, .ext = tsize, .op = op};
    char *tmp;

    memset(&st, 0, sizeof(st));
    st.type  = MXH_STEP_ALLREDUCE;
    st.level = level;
    st.root  = -1;
    st.count = (size_t)n;
    st.net   = 1;
    MPI_Comm_size(c, &st.gsize);
    MPI_Comm_rank(c, &st.me);
    if (st.gsize < 2)
        return MPI_SUCCESS;
    mxh_tune_step(&st, tsize, 0);
    tmp = mxh_hier_tmp(h, mxh_p2p_tmp_count(&st, tsize) * tsize + 1);
    if (tmp == NULL)
        return MPI_ERR_NO_MEM;
    return mxh_p2p_run(&st, &env, piece, NULL, tmp, XRAIL_TAG);
}

mxh_status_t mxh_xrail_allreduce(mxh_hier_t *h, const void *sendbuf, void *recvbuf, int count,
                                 MPI_Datatype dt, size_t tsize, MPI_Op op, int *mpi_rc)
{
    mxh_xrail_t *x = &h->xrail;
    int node_coord = h->layout->coord[x->node_level][h->rank];
    int base = count / x->nhealthy, rem = count % x->nhealthy, off = 0, rc, mine;
    int piece = x->piece[node_coord];
    char *rb = (char *)recvbuf, *my;
    const void *src = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    mxh_shm_t *shm = h->config.shm ? h->shm[x->node_level] : NULL;
    MPI_Request req;
    mxh_status_t st;

    for (int j = 0; j < x->g; j++) {
        int p = x->piece[j];
        x->counts[j] = p < 0 ? 0 : base + (p < rem);
        x->displs[j] = off;
        off += x->counts[j];
    }
    mine = x->counts[node_coord];
    my   = rb + (size_t)x->displs[node_coord] * tsize;
    /* 1. node: my piece (nothing on an excluded rail) */
    if (shm != NULL) {
        if ((st = mxh_shm_reduce_scatter(shm, src, my, x->counts, x->displs, dt, tsize, op)) != MXH_OK)
            return st;
    } else {
        void *s2 = (void *)src;
        if (sendbuf == MPI_IN_PLACE) { /* MPICH 4.0.2's in-place reduce-scatter: avoided */
            if ((s2 = mxh_hier_scratch(h, (size_t)count * tsize)) == NULL)
                return MXH_ERR_NO_MEMORY;
            memcpy(s2, recvbuf, (size_t)count * tsize);
        }
        rc = MPI_Ireduce_scatter(s2, my, x->counts, dt, op, h->level_comm[x->node_level], &req);
        if (rc == MPI_SUCCESS)
            rc = mxh_task_wait(&req, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return done(rc, mpi_rc);
    }
    /* 2. the network, healthy rails only: every member of a rail communicator holds the
     * same piece (the same node coordinate), so excluded rails' communicators stay silent */
    if (piece >= 0 && mine > 0) {
        if ((rc = piece_allreduce(h, x->rail_level, my, mine, dt, tsize, op)) != MPI_SUCCESS)
            return done(rc, mpi_rc);
        if (x->spine_level >= 0 &&
            (rc = piece_allreduce(h, x->spine_level, my, mine, dt, tsize, op)) != MPI_SUCCESS)
            return done(rc, mpi_rc);
    }
    /* 3. node: everybody gets every piece */
    if (shm != NULL)
        return mxh_shm_allgather(shm, my, recvbuf, x->counts, x->displs, dt, tsize);
    rc = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recvbuf, x->counts, x->displs, dt,
                         h->level_comm[x->node_level], &req);
    if (rc == MPI_SUCCESS)
        rc = mxh_task_wait(&req, MPI_STATUS_IGNORE);
    return done(rc, mpi_rc);
}
