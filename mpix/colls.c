/* MPIX_Hier_ collectives: check arguments, choose hierarchical or plain MPI
 * (a decision every rank takes identically from the same arguments), run the
 * cached plan on a work buffer. */
#include "config.h"

#include "coll/exec.h"
#include "mpix_internal.h"
#include "util/log.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(_expr)                                                           \
    do {                                                                       \
        int _rc = (_expr);                                                     \
        if (_rc != MPI_SUCCESS)                                                \
            return _rc;                                                        \
    } while (0)

/* Hierarchy of comm if the hierarchical path applies to a message of @bytes
 * per rank and @elements in the largest work buffer; NULL for the plain path
 * (*rc set on errors). */
static mxh_hier_t *hier_for(MPI_Comm comm, size_t bytes, size_t elements, const char *func,
                            int *rc)
{
    mxh_hier_t *h = NULL;

    *rc = mxh_hier_get(comm, func, &h);
    if (*rc != MPI_SUCCESS)
        return NULL;
    if (!mxh_hier_active(h) || bytes < h->config.min_bytes || elements > INT_MAX)
        return NULL;
    return h;
}

/* A private copy of @count elements of @dt at @buf (any datatype: the copy is
 * made by MPI on MPI_COMM_SELF). *base_p gets the buffer to free. */
static int typed_copy(const void *buf, int count, MPI_Datatype dt, void **copy_p, void **base_p)
{
    MPI_Aint lb, extent, tlb, textent;
    char *base;
    size_t bytes;
    int rc;

    MPI_Type_get_extent(dt, &lb, &extent);
    MPI_Type_get_true_extent(dt, &tlb, &textent);
    bytes = (size_t)textent + (count > 0 ? (size_t)(count - 1) * (size_t)extent : 0);
    base  = malloc(bytes ? bytes : 1);
    if (base == NULL)
        return MPI_ERR_NO_MEM;
    *base_p = base;
    *copy_p = base - tlb;
    rc = MPI_Sendrecv(buf, count, dt, 0, 0, *copy_p, count, dt, 0, 0, MPI_COMM_SELF,
                      MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        free(base);
        *base_p = NULL;
    }
    return rc;
}

/* Plain MPI_Reduce. MPI_IN_PLACE at a root other than 0 crashes MPICH 4.0.2
 * (reduce_scatter_gather algorithm), so the root reduces from a copy instead. */
static int plain_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt,
                        MPI_Op op, int root, MPI_Comm comm, const char *func)
{
    void *copy = NULL, *base = NULL;
    int rank, rc;

    MPI_Comm_rank(comm, &rank);
    if (sendbuf != MPI_IN_PLACE || rank != root || root == 0 || count == 0)
        return MPI_Reduce(sendbuf, recvbuf, count, dt, op, root, comm);
    rc = typed_copy(recvbuf, count, dt, &copy, &base);
    if (rc != MPI_SUCCESS) {
        /* keep the collective matched, then report */
        MPI_Reduce(MPI_IN_PLACE, recvbuf, count, dt, op, root, comm);
        return mxh_raise(comm, MPI_ERR_NO_MEM, func, "cannot copy the in-place buffer");
    }
    rc = MPI_Reduce(copy, recvbuf, count, dt, op, root, comm);
    free(base);
    return rc;
}

/* Plain MPI_Reduce_scatter_block; in place through a copy (MPICH 4.0.2 asserts on
 * overlapping memcpy in some in-place reduce-scatter paths). */
static int plain_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                      MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                                      const char *func)
{
    void *copy = NULL, *base = NULL;
    int size, rc;

    if (sendbuf != MPI_IN_PLACE || recvcount == 0)
        return MPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, dt, op, comm);
    MPI_Comm_size(comm, &size);
    if ((size_t)recvcount * (size_t)size > INT_MAX)
        return MPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, dt, op, comm);
    rc = typed_copy(recvbuf, recvcount * size, dt, &copy, &base);
    if (rc != MPI_SUCCESS) {
        MPI_Reduce_scatter_block(MPI_IN_PLACE, recvbuf, recvcount, dt, op, comm);
        return mxh_raise(comm, MPI_ERR_NO_MEM, func, "cannot copy the in-place buffer");
    }
    rc = MPI_Reduce_scatter_block(copy, recvbuf, recvcount, dt, op, comm);
    free(base);
    return rc;
}

/* sendbuf == recvbuf is erroneous in MPI (MPI_IN_PLACE is the way to say it). */
static int check_alias(MPI_Comm comm, const void *sendbuf, const void *recvbuf, int count,
                       const char *func)
{
    if (count > 0 && sendbuf == recvbuf && sendbuf != MPI_IN_PLACE)
        return mxh_raise(comm, MPI_ERR_BUFFER, func,
                         "sendbuf and recvbuf are the same buffer (use MPI_IN_PLACE)");
    return MPI_SUCCESS;
}

static int run(mxh_hier_t *h, MPI_Comm comm, mxh_coll_t coll, size_t count, int root,
               void *work, MPI_Datatype dt, size_t tsize, MPI_Op op, const char *func,
               const mxh_plan_t **plan_p)
{
    const mxh_plan_t *plan;
    mxh_status_t st = mxh_hier_plan(h, coll, count, root, &plan);

    if (st == MXH_OK && plan_p != NULL)
        *plan_p = plan;
    if (st == MXH_OK) {
        void *tmp = mxh_hier_tmp(h, plan->tmp_count * tsize);
        if (tmp == NULL)
            return mxh_raise(comm, MPI_ERR_NO_MEM, func, "cannot allocate %zu bytes of scratch",
                             plan->tmp_count * tsize);
        st = mxh_exec_plan(plan, h->level_comm, work, tmp, dt, tsize, op);
    }
    if (st != MXH_OK)
        return mxh_raise_status(comm, st, func);
    return MPI_SUCCESS;
}

int MPIX_Hier_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm)
{
    static const char F[] = "MPIX_Hier_allreduce";
    size_t tsize = 0;
    int hier_op = 0, rc = MPI_SUCCESS;
    mxh_hier_t *h;

    CHECK(mxh_check_comm(comm, F));
    CHECK(mxh_check_count(comm, count, "count", F));
    CHECK(mxh_check_dtype(comm, datatype, "datatype", F));
    CHECK(mxh_check_op(comm, op, datatype, &hier_op, F));
    CHECK(mxh_check_buf(comm, recvbuf, count, "recvbuf", F));
    if (sendbuf != MPI_IN_PLACE)
        CHECK(mxh_check_buf(comm, sendbuf, count, "sendbuf", F));
    CHECK(check_alias(comm, sendbuf, recvbuf, count, F));
    if (!mxh_dtype_is_plain(datatype, &tsize) || !hier_op)
        return MPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    if (count == 0)
        return MPI_SUCCESS;
    h = hier_for(comm, (size_t)count * tsize, (size_t)count, F, &rc);
    if (h == NULL)
        return rc != MPI_SUCCESS ? rc : MPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    if (sendbuf != MPI_IN_PLACE)
        memcpy(recvbuf, sendbuf, (size_t)count * tsize);
    return run(h, comm, MXH_COLL_ALLREDUCE, (size_t)count, -1, recvbuf, datatype, tsize, op, F,
               NULL);
}

int MPIX_Hier_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    static const char F[] = "MPIX_Hier_reduce_scatter_block";
    size_t tsize = 0, rc_sz;
    int hier_op = 0, rc = MPI_SUCCESS, size, rank;
    mxh_hier_t *h;
    const mxh_plan_t *plan;

    CHECK(mxh_check_comm(comm, F));
    CHECK(mxh_check_count(comm, recvcount, "recvcount", F));
    CHECK(mxh_check_dtype(comm, datatype, "datatype", F));
    CHECK(mxh_check_op(comm, op, datatype, &hier_op, F));
    CHECK(mxh_check_buf(comm, recvbuf, recvcount, "recvbuf", F));
    if (sendbuf != MPI_IN_PLACE)
        CHECK(mxh_check_buf(comm, sendbuf, recvcount, "sendbuf", F));
    CHECK(check_alias(comm, sendbuf, recvbuf, recvcount, F));
    if (!mxh_dtype_is_plain(datatype, &tsize) || !hier_op)
        return plain_reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, F);
    if (recvcount == 0)
        return MPI_SUCCESS;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    rc_sz = (size_t)recvcount;
    h = hier_for(comm, rc_sz * tsize, rc_sz * (size_t)size, F, &rc);
    if (h == NULL)
        return rc != MPI_SUCCESS
                   ? rc
                   : plain_reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, F);

    const char *in = sendbuf == MPI_IN_PLACE ? (const char *)recvbuf : (const char *)sendbuf;
    size_t block = rc_sz * tsize;
    char *work = mxh_hier_scratch(h, block * (size_t)size);
    if (work == NULL)
        return mxh_raise(comm, MPI_ERR_NO_MEM, F, "cannot allocate %zu bytes of scratch",
                         block * (size_t)size);
    CHECK(mxh_hier_plan(h, MXH_COLL_REDUCE_SCATTER_BLOCK, rc_sz, -1, &plan) == MXH_OK
              ? MPI_SUCCESS
              : mxh_raise_status(comm, MXH_ERR_NO_MEMORY, F));
    for (int d = 0; d < size; d++)
        memcpy(work + (size_t)plan->block_pos[d] * block, in + (size_t)d * block, block);
    CHECK(run(h, comm, MXH_COLL_REDUCE_SCATTER_BLOCK, rc_sz, -1, work, datatype, tsize, op, F,
              NULL));
    memcpy(recvbuf, work + (size_t)plan->block_pos[rank] * block, block);
    return MPI_SUCCESS;
}

int MPIX_Hier_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char F[] = "MPIX_Hier_allgather";
    size_t tsize = 0, rc_sz;
    int rc = MPI_SUCCESS, size, rank;
    mxh_hier_t *h;
    const mxh_plan_t *plan;

    CHECK(mxh_check_comm(comm, F));
    if (sendbuf != MPI_IN_PLACE) {
        CHECK(mxh_check_count(comm, sendcount, "sendcount", F));
        CHECK(mxh_check_dtype(comm, sendtype, "sendtype", F));
        CHECK(mxh_check_buf(comm, sendbuf, sendcount, "sendbuf", F));
    }
    CHECK(mxh_check_count(comm, recvcount, "recvcount", F));
    CHECK(mxh_check_dtype(comm, recvtype, "recvtype", F));
    CHECK(mxh_check_buf(comm, recvbuf, recvcount, "recvbuf", F));
    if (sendbuf != MPI_IN_PLACE)
        CHECK(check_alias(comm, sendbuf, recvbuf, sendcount, F));
    if (!mxh_dtype_is_plain(recvtype, &tsize) ||
        (sendbuf != MPI_IN_PLACE && (sendtype != recvtype || sendcount != recvcount)))
        return MPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    if (recvcount == 0)
        return MPI_SUCCESS;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    rc_sz = (size_t)recvcount;
    h = hier_for(comm, rc_sz * tsize, rc_sz * (size_t)size, F, &rc);
    if (h == NULL)
        return rc != MPI_SUCCESS ? rc
                                 : MPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                                 recvtype, comm);

    size_t block = rc_sz * tsize;
    CHECK(mxh_hier_plan(h, MXH_COLL_ALLGATHER, rc_sz, -1, &plan) == MXH_OK
              ? MPI_SUCCESS
              : mxh_raise_status(comm, MXH_ERR_NO_MEMORY, F));
    int identity = 1;
    for (int d = 0; d < size && identity; d++)
        identity = plan->block_pos[d] == d;
    char *work = identity ? (char *)recvbuf : mxh_hier_scratch(h, block * (size_t)size);
    if (work == NULL)
        return mxh_raise(comm, MPI_ERR_NO_MEM, F, "cannot allocate %zu bytes of scratch",
                         block * (size_t)size);
    const char *mine = sendbuf == MPI_IN_PLACE ? (const char *)recvbuf + (size_t)rank * block
                                               : (const char *)sendbuf;
    if (work + (size_t)plan->block_pos[rank] * block != mine)
        memcpy(work + (size_t)plan->block_pos[rank] * block, mine, block);
    CHECK(run(h, comm, MXH_COLL_ALLGATHER, rc_sz, -1, work, recvtype, tsize, MPI_OP_NULL, F,
              NULL));
    if (!identity)
        for (int d = 0; d < size; d++)
            memcpy((char *)recvbuf + (size_t)d * block,
                   work + (size_t)plan->block_pos[d] * block, block);
    return MPI_SUCCESS;
}

static int check_root(MPI_Comm comm, int root, const char *func)
{
    int size;
    MPI_Comm_size(comm, &size);
    if (root < 0 || root >= size)
        return mxh_raise(comm, MPI_ERR_ROOT, func, "root %d is out of range [0, %d)", root, size);
    return MPI_SUCCESS;
}

int MPIX_Hier_bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    static const char F[] = "MPIX_Hier_bcast";
    size_t tsize = 0;
    int rc = MPI_SUCCESS;
    mxh_hier_t *h;

    CHECK(mxh_check_comm(comm, F));
    CHECK(mxh_check_count(comm, count, "count", F));
    CHECK(mxh_check_dtype(comm, datatype, "datatype", F));
    CHECK(check_root(comm, root, F));
    CHECK(mxh_check_buf(comm, buffer, count, "buffer", F));
    if (!mxh_dtype_is_plain(datatype, &tsize))
        return MPI_Bcast(buffer, count, datatype, root, comm);
    if (count == 0)
        return MPI_SUCCESS;
    h = hier_for(comm, (size_t)count * tsize, (size_t)count, F, &rc);
    if (h == NULL)
        return rc != MPI_SUCCESS ? rc : MPI_Bcast(buffer, count, datatype, root, comm);
    return run(h, comm, MXH_COLL_BCAST, (size_t)count, root, buffer, datatype, tsize,
               MPI_OP_NULL, F, NULL);
}

int MPIX_Hier_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, int root, MPI_Comm comm)
{
    static const char F[] = "MPIX_Hier_reduce";
    size_t tsize = 0;
    int hier_op = 0, rc = MPI_SUCCESS, rank;
    mxh_hier_t *h;

    CHECK(mxh_check_comm(comm, F));
    CHECK(mxh_check_count(comm, count, "count", F));
    CHECK(mxh_check_dtype(comm, datatype, "datatype", F));
    CHECK(mxh_check_op(comm, op, datatype, &hier_op, F));
    CHECK(check_root(comm, root, F));
    MPI_Comm_rank(comm, &rank);
    if (rank == root) {
        CHECK(mxh_check_buf(comm, recvbuf, count, "recvbuf (at the root)", F));
        if (sendbuf != MPI_IN_PLACE)
            CHECK(mxh_check_buf(comm, sendbuf, count, "sendbuf", F));
        CHECK(check_alias(comm, sendbuf, recvbuf, count, F));
    } else {
        if (sendbuf == MPI_IN_PLACE)
            return mxh_raise(comm, MPI_ERR_BUFFER, F,
                             "MPI_IN_PLACE is only valid as sendbuf at the root (rank %d), "
                             "this is rank %d", root, rank);
        CHECK(mxh_check_buf(comm, sendbuf, count, "sendbuf", F));
    }
    if (!mxh_dtype_is_plain(datatype, &tsize) || !hier_op)
        return plain_reduce(sendbuf, recvbuf, count, datatype, op, root, comm, F);
    if (count == 0)
        return MPI_SUCCESS;
    h = hier_for(comm, (size_t)count * tsize, (size_t)count, F, &rc);
    if (h == NULL)
        return rc != MPI_SUCCESS ? rc
                                 : plain_reduce(sendbuf, recvbuf, count, datatype, op, root, comm, F);

    void *work = recvbuf;
    if (rank != root) {
        work = mxh_hier_scratch(h, (size_t)count * tsize);
        if (work == NULL)
            return mxh_raise(comm, MPI_ERR_NO_MEM, F, "cannot allocate %zu bytes of scratch",
                             (size_t)count * tsize);
    }
    if (sendbuf != MPI_IN_PLACE)
        memcpy(work, sendbuf, (size_t)count * tsize);
    return run(h, comm, MXH_COLL_REDUCE, (size_t)count, root, work, datatype, tsize, op, F, NULL);
}
