/* MPIX_Hier_ collectives, blocking and nonblocking: check the arguments, fill
 * the call's record, make one call into src/coll/coll.h. Every path decision
 * is made there, identically on every rank. */
#include "config.h"

#include "coll/coll.h"
#include "coll/metrics.h"
#include "coll/persist.h"
#include "reduce/reduce.h"
#include "exec/task.h"
#include "util/log.h"
#include "mpix_internal.h"

#include <stddef.h>
#include <string.h>

#define CHECK(_expr)                                                           \
    do {                                                                       \
        int _rc = (_expr);                                                     \
        if (_rc != MPI_SUCCESS)                                                \
            return _rc;                                                        \
    } while (0)

/* Clear the call's record before its fields are set: every field zero, except
 * lvl and nb, the record's tail (coll.h), which coll.c sets when a call needs
 * them: zeroing the whole record cost a small call more than anything else in
 * its entry. */
static size_t plain_size(MPI_Datatype dt)
{
    size_t tsize = 0;
    return mxh_dtype_is_plain(dt, &tsize) ? tsize : 0;
}

/* The call's record: cleared up to lvl/nb (set by coll.c where needed), then
 * the fields every collective has; the caller adds its counts and types. */
static inline void args_start(mxh_coll_args_t *a, mxh_coll_t coll, const char *func,
                              const void *sendbuf, void *recvbuf, MPI_Datatype dt, MPI_Op op,
                              int root, MPI_Comm comm)
{
    memset(a, 0, offsetof(mxh_coll_args_t, lvl));
    a->coll    = coll;
    a->func    = func;
    a->sendbuf = sendbuf;
    a->recvbuf = recvbuf;
    a->dt      = dt;
    a->op      = op;
    a->root    = root;
    a->comm    = comm;
    a->tsize   = plain_size(dt);
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

static inline int check_root(MPI_Comm comm, int root, const char *func)
{
    int size;
    if (mxh_hier_cached(comm))
        size = mxh_hier_last->size; /* its private dup: the same size, no MPI query */
    else
        MPI_Comm_size(comm, &size);
    if (root < 0 || root >= size)
        return mxh_raise(comm, MPI_ERR_ROOT, func, "root %d is out of range [0, %d)", root, size);
    return MPI_SUCCESS;
}

/* Progress what is in flight, look the hierarchy up when the call can use it,
 * decide the path. */
static inline int entry_prepare(mxh_coll_args_t *a, int hier_op)
{
    mxh_task_progress_all(); /* nonblocking collectives advance in every call */
    mxh_metrics_poll();
    CHECK(mxh_entry_init(a->comm, a->func));
    if (mxh_args_check)
        CHECK(mxh_check_args(a));
    mxh_log_clear_last_error();
    if (mxh_coll_recall(a, hier_op))
        return MPI_SUCCESS; /* decided like the last call of its shape */
    if (mxh_coll_needs_hier(a, hier_op)) {
        CHECK(mxh_entry_hier(a->comm, a->func, &a->hier));
        mxh_coll_prepare(a);
    }
    return MPI_SUCCESS;
}

static int entry_done(mxh_coll_args_t *a, mxh_status_t st)
{
    if (st == MXH_OK)
        return MPI_SUCCESS;
    if (a->mpi_rc != MPI_SUCCESS)
        return a->mpi_rc; /* MPI reported it through the communicator's handler */
    return mxh_raise_status(a->comm, st, a->func);
}

static int entry_run(mxh_coll_args_t *a, int hier_op)
{
    CHECK(entry_prepare(a, hier_op));
    return entry_done(a, mxh_coll_run(a));
}

static int entry_start(mxh_coll_args_t *a, int hier_op, MPI_Request *req)
{
    CHECK(entry_prepare(a, hier_op));
    return entry_done(a, mxh_coll_start(a, req));
}

/* ---- a call shaped like the last one of its collective ----
 *
 * Count, predefined datatype and op equal to the memo of the last call of the
 * collective on the communicator's cached hierarchy (coll.c: mxh_coll_recall):
 * those arguments passed every check then and pass them now (predefined
 * handles never change, the count is the same, the hierarchy's communicator
 * is a valid intracommunicator), and while every buffer is host memory
 * (mem.h) a buffer passes its check when it is neither NULL nor MPI_IN_PLACE
 * (count > 0: count 0 is never remembered). So such a call checks only its
 * buffers and root here; anything else goes through the full checks, which
 * raise the errors. */
static inline const mxh_coll_memo_t *memo_hit(MPI_Comm comm, mxh_coll_t coll, int count,
                                              MPI_Datatype dt, MPI_Op op)
{
    const mxh_coll_memo_t *m;
    if (!mxh_hier_cached(comm) || !mxh_mem_host_only() || mxh_args_check)
        return NULL;
    m = &mxh_hier_last->memo[coll];
    if (!m->valid || m->count != count || m->dt != dt || m->op != op || count <= 0)
        return NULL;
    return m;
}

static inline int buf_ok(const void *buf)
{
    return buf != NULL && buf != MPI_IN_PLACE;
}

/* ... and on the plain path with nothing in flight (no task to progress, no
 * queue to drain, not inside a task) and its counters at hand: MPI's own
 * collective, called from here with what the record would hold, counted as
 * mxh_metrics_record counts it. On a hierarchy with nothing to exploit this
 * is every call: the record, the decision and the layers below cost more than
 * the MPI call of a small message. */
static inline int plain_fast(const mxh_coll_memo_t *m)
{
    return m->path == MXH_PATH_PLAIN && mxh_task_in_flight() == 0 && mxh_lib_initialized &&
           (mxh_metrics_off || mxh_hier_last->mstats != NULL);
}

#define PLAIN_FAST(_m, _coll, _call)                                                        \
    do {                                                                                    \
        struct mxh_mstats *_s = mxh_metrics_off ? NULL : mxh_hier_last->mstats;            \
        uint64_t _t0          = _s != NULL ? mxh_ticks() : 0;                               \
        int _rc               = (_call);                                                    \
        if (_s != NULL)                                                                     \
            mxh_metrics_record_plain_fast(_s, _coll, (_m)->mbytes, (_m)->why,               \
                                          mxh_ticks() - _t0);                               \
        return _rc; /* an MPI error went through the communicator's handler */             \
    } while (0)

/* ... on another path: its record, then the run (mxh_coll_recall takes the
 * decision over). Out of line, like the full checks (*_checked): the record's
 * frame stays out of the plain path's. @sendcount and @sendtype: allgather's. */
static __attribute__((noinline)) int run_remembered(mxh_coll_t coll, const char *func,
                                                    const void *sendbuf, void *recvbuf,
                                                    int count, MPI_Datatype dt, MPI_Op op,
                                                    int root, MPI_Comm comm, int sendcount,
                                                    MPI_Datatype sendtype, int hier_op)
{
    mxh_coll_args_t a;
    args_start(&a, coll, func, sendbuf, recvbuf, dt, op, root, comm);
    a.count = count;
    if (mxh_coll_info(coll)->sendtype) {
        a.sendcount = sendcount;
        a.sendtype  = sendtype;
    }
    return entry_run(&a, hier_op);
}

/* On an intercommunicator MPI's collective runs as it is; the checks whose
 * failure MPICH 4.0.2 turns into an abort (a negative count, a null or
 * uncommitted datatype, a null op) come first (MPI_BYTE, MPI_SUM: unused). */
static int inter_check(MPI_Comm comm, const char *func, int c1, int c2, MPI_Datatype t1,
                       MPI_Datatype t2, MPI_Op op)
{
    CHECK(mxh_check_count(comm, c1, "count", func));
    CHECK(mxh_check_count(comm, c2, "count", func));
    CHECK(mxh_check_dtype(comm, t1, "datatype", func));
    CHECK(mxh_check_dtype(comm, t2, "datatype", func));
    if (op == MPI_OP_NULL)
        return mxh_raise(comm, MPI_ERR_OP, func, "op is MPI_OP_NULL");
    return MPI_SUCCESS;
}

/* An intercommunicator's call is MPI's own: counted as a fallback (the
 * blocking form timed). Bytes: @count elements of @dt, times the remote
 * group's size for the block collectives (@blocks). */
static size_t inter_bytes(MPI_Comm comm, size_t count, MPI_Datatype dt, int blocks)
{
    int size = 0, n = 1;
    if (MPI_Type_size(dt, &size) != MPI_SUCCESS || size < 0)
        return 0;
    if (blocks)
        MPI_Comm_remote_size(comm, &n);
    return count * (size_t)size * (size_t)n;
}

static size_t inter_vsum(MPI_Comm comm, const int *counts)
{
    int n = 0;
    size_t sum = 0;
    MPI_Comm_remote_size(comm, &n);
    for (int i = 0; counts != NULL && i < n; i++)
        sum += counts[i] > 0 ? (size_t)counts[i] : 0;
    return sum;
}

#define INTER(_coll, _blocking, _count, _dt, _blocks, _call)                                  \
    do {                                                                                      \
        uint64_t _t0 = mxh_ticks();                                                           \
        int _rc      = (_call);                                                               \
        mxh_metrics_record_plain(comm, _coll, _blocking,                                      \
                                 inter_bytes(comm, (size_t)(_count), _dt, _blocks),           \
                                 MXH_FB_INTERCOMM, (_blocking) ? _t0 : 0);                    \
        return _rc;                                                                           \
    } while (0)

static int check_request(MPI_Comm comm, MPI_Request *req, const char *func)
{
    if (req == NULL)
        return mxh_raise(comm, MPI_ERR_ARG, func, "request is NULL");
    return MPI_SUCCESS;
}

/* ---- allreduce ---- */

static int allreduce_args(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, MPI_Comm comm, const char *F, mxh_coll_args_t *a,
                          int *hier_op)
{
    CHECK(mxh_check_count(comm, count, "count", F));
    CHECK(mxh_check_reduce_dtype(comm, datatype, op, F));
    CHECK(mxh_check_op(comm, op, datatype, hier_op, F));
    CHECK(mxh_check_buf(comm, recvbuf, count, "recvbuf", F));
    if (sendbuf != MPI_IN_PLACE)
        CHECK(mxh_check_buf(comm, sendbuf, count, "sendbuf", F));
    CHECK(check_alias(comm, sendbuf, recvbuf, count, F));
    args_start(a, MXH_COLL_ALLREDUCE, F, sendbuf, recvbuf, datatype, op, -1, comm);
    a->count = count;
    return MPI_SUCCESS;
}

/* The full checks, then the call (every call not shaped like the last one). */
static __attribute__((noinline)) int allreduce_checked(const void *sendbuf, void *recvbuf,
                                                       int count, MPI_Datatype datatype,
                                                       MPI_Op op, MPI_Comm comm)
{
    mxh_coll_args_t a;
    int hier_op = 0;
    CHECK(mxh_check_comm(comm, "MPIX_Hier_allreduce"));
    if (mxh_comm_is_inter(comm)) {
        CHECK(inter_check(comm, "MPIX_Hier_allreduce", count, 0, datatype, MPI_BYTE, op));
        INTER(MXH_COLL_ALLREDUCE, 1, count, datatype, 0,
              MPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm));
    }
    CHECK(allreduce_args(sendbuf, recvbuf, count, datatype, op, comm, "MPIX_Hier_allreduce", &a,
                         &hier_op));
    return entry_run(&a, hier_op);
}

int MPIX_Hier_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm)
{
    const mxh_coll_memo_t *m = memo_hit(comm, MXH_COLL_ALLREDUCE, count, datatype, op);
    if (m != NULL && buf_ok(recvbuf) && sendbuf != recvbuf && sendbuf != NULL) {
        if (plain_fast(m))
            PLAIN_FAST(m, MXH_COLL_ALLREDUCE,
                       MPI_Allreduce(sendbuf, recvbuf, count, datatype, m->mpi_op, comm));
        return run_remembered(MXH_COLL_ALLREDUCE, "MPIX_Hier_allreduce", sendbuf, recvbuf, count,
                              datatype, op, -1, comm, 0, MPI_DATATYPE_NULL, m->hier_op);
    }
    return allreduce_checked(sendbuf, recvbuf, count, datatype, op, comm);
}

int MPIX_Hier_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    static const char F[] = "MPIX_Hier_Iallreduce";
    mxh_coll_args_t a;
    int hier_op = 0;
    CHECK(mxh_check_comm(comm, F));
    if (mxh_comm_is_inter(comm)) {
        CHECK(inter_check(comm, F, count, 0, datatype, MPI_BYTE, op));
        INTER(MXH_COLL_ALLREDUCE, 0, count, datatype, 0,
              MPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request));
    }
    CHECK(check_request(comm, request, F));
    CHECK(allreduce_args(sendbuf, recvbuf, count, datatype, op, comm, F, &a, &hier_op));
    return entry_start(&a, hier_op, request);
}

/* ---- reduce_scatter_block ---- */

static int rsb_args(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm, const char *F, mxh_coll_args_t *a, int *hier_op)
{
    CHECK(mxh_check_count(comm, recvcount, "recvcount", F));
    CHECK(mxh_check_reduce_dtype(comm, datatype, op, F));
    CHECK(mxh_check_op(comm, op, datatype, hier_op, F));
    CHECK(mxh_check_buf(comm, recvbuf, recvcount, "recvbuf", F));
    if (sendbuf != MPI_IN_PLACE)
        CHECK(mxh_check_buf(comm, sendbuf, recvcount, "sendbuf", F));
    CHECK(check_alias(comm, sendbuf, recvbuf, recvcount, F));
    args_start(a, MXH_COLL_REDUCE_SCATTER_BLOCK, F, sendbuf, recvbuf, datatype, op, -1, comm);
    a->count = recvcount;
    return MPI_SUCCESS;
}

static __attribute__((noinline)) int rsb_checked(const void *sendbuf, void *recvbuf,
                                                 int recvcount, MPI_Datatype datatype, MPI_Op op,
                                                 MPI_Comm comm)
{
    mxh_coll_args_t a;
    int hier_op = 0;
    CHECK(mxh_check_comm(comm, "MPIX_Hier_reduce_scatter_block"));
    if (mxh_comm_is_inter(comm)) {
        CHECK(inter_check(comm, "MPIX_Hier_reduce_scatter_block", recvcount, 0, datatype, MPI_BYTE, op));
        INTER(MXH_COLL_REDUCE_SCATTER_BLOCK, 1, recvcount, datatype, 1,
              MPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm));
    }
    CHECK(rsb_args(sendbuf, recvbuf, recvcount, datatype, op, comm,
                   "MPIX_Hier_reduce_scatter_block", &a, &hier_op));
    return entry_run(&a, hier_op);
}

int MPIX_Hier_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    const mxh_coll_memo_t *m =
        memo_hit(comm, MXH_COLL_REDUCE_SCATTER_BLOCK, recvcount, datatype, op);
    if (m != NULL && buf_ok(recvbuf) && sendbuf != recvbuf && sendbuf != NULL) {
        /* in place: through a copy (coll.c: plain_rsb) */
        if (sendbuf != MPI_IN_PLACE && plain_fast(m))
            PLAIN_FAST(m, MXH_COLL_REDUCE_SCATTER_BLOCK,
                       MPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype,
                                                m->mpi_op, comm));
        return run_remembered(MXH_COLL_REDUCE_SCATTER_BLOCK, "MPIX_Hier_reduce_scatter_block",
                              sendbuf, recvbuf, recvcount, datatype, op, -1, comm, 0,
                              MPI_DATATYPE_NULL, m->hier_op);
    }
    return rsb_checked(sendbuf, recvbuf, recvcount, datatype, op, comm);
}

int MPIX_Hier_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                    MPI_Request *request)
{
    static const char F[] = "MPIX_Hier_Ireduce_scatter_block";
    mxh_coll_args_t a;
    int hier_op = 0;
    CHECK(mxh_check_comm(comm, F));
    if (mxh_comm_is_inter(comm)) {
        CHECK(inter_check(comm, F, recvcount, 0, datatype, MPI_BYTE, op));
        INTER(MXH_COLL_REDUCE_SCATTER_BLOCK, 0, recvcount, datatype, 1,
              MPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm,
                                           request));
    }
    CHECK(check_request(comm, request, F));
    CHECK(rsb_args(sendbuf, recvbuf, recvcount, datatype, op, comm, F, &a, &hier_op));
    return entry_start(&a, hier_op, request);
}

/* ---- allgather ---- */

static int allgather_args(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                          const char *F, mxh_coll_args_t *a)
{
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
    args_start(a, MXH_COLL_ALLGATHER, F, sendbuf, recvbuf, recvtype, MPI_OP_NULL, -1, comm);
    a->count = recvcount;
    a->sendcount = sendcount;
    a->sendtype = sendtype;
    return MPI_SUCCESS;
}

static __attribute__((noinline)) int allgather_checked(const void *sendbuf, int sendcount,
                                                       MPI_Datatype sendtype, void *recvbuf,
                                                       int recvcount, MPI_Datatype recvtype,
                                                       MPI_Comm comm)
{
    mxh_coll_args_t a;
    CHECK(mxh_check_comm(comm, "MPIX_Hier_allgather"));
    if (mxh_comm_is_inter(comm)) {
        CHECK(inter_check(comm, "MPIX_Hier_allgather", sendcount, recvcount, sendtype, recvtype, MPI_SUM));
        INTER(MXH_COLL_ALLGATHER, 1, recvcount, recvtype, 1,
              MPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm));
    }
    CHECK(allgather_args(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                         "MPIX_Hier_allgather", &a));
    return entry_run(&a, 0);
}

int MPIX_Hier_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    const mxh_coll_memo_t *m = memo_hit(comm, MXH_COLL_ALLGATHER, recvcount, recvtype, MPI_OP_NULL);
    if (m != NULL && buf_ok(recvbuf) &&
        (sendbuf == MPI_IN_PLACE ||
         (sendcount == recvcount && sendtype == recvtype && sendbuf != NULL &&
          sendbuf != recvbuf))) {
        if (plain_fast(m))
            PLAIN_FAST(m, MXH_COLL_ALLGATHER,
                       MPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                     comm));
        return run_remembered(MXH_COLL_ALLGATHER, "MPIX_Hier_allgather", sendbuf, recvbuf,
                              recvcount, recvtype, MPI_OP_NULL, -1, comm, sendcount, sendtype,
                              0);
    }
    return allgather_checked(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPIX_Hier_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                         void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                         MPI_Request *request)
{
    static const char F[] = "MPIX_Hier_Iallgather";
    mxh_coll_args_t a;
    CHECK(mxh_check_comm(comm, F));
    if (mxh_comm_is_inter(comm)) {
        CHECK(inter_check(comm, F, sendcount, recvcount, sendtype, recvtype, MPI_SUM));
        INTER(MXH_COLL_ALLGATHER, 0, recvcount, recvtype, 1,
              MPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                request));
    }
    CHECK(check_request(comm, request, F));
    CHECK(allgather_args(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, F,
                         &a));
    return entry_start(&a, 0, request);
}

/* ---- bcast ---- */

static int bcast_args(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                      const char *F, mxh_coll_args_t *a)
{
    CHECK(mxh_check_count(comm, count, "count", F));
    CHECK(mxh_check_dtype(comm, datatype, "datatype", F));
    CHECK(check_root(comm, root, F));
    CHECK(mxh_check_buf(comm, buffer, count, "buffer", F));
    args_start(a, MXH_COLL_BCAST, F, MPI_IN_PLACE, buffer, datatype, MPI_OP_NULL, root, comm);
    a->count = count;
    return MPI_SUCCESS;
}

static __attribute__((noinline)) int bcast_checked(void *buffer, int count,
                                                   MPI_Datatype datatype, int root, MPI_Comm comm)
{
    mxh_coll_args_t a;
    CHECK(mxh_check_comm(comm, "MPIX_Hier_bcast"));
    if (mxh_comm_is_inter(comm)) {
        CHECK(inter_check(comm, "MPIX_Hier_bcast", count, 0, datatype, MPI_BYTE, MPI_SUM));
        INTER(MXH_COLL_BCAST, 1, count, datatype, 0,
              MPI_Bcast(buffer, count, datatype, root, comm));
    }
    CHECK(bcast_args(buffer, count, datatype, root, comm, "MPIX_Hier_bcast", &a));
    return entry_run(&a, 0);
}

int MPIX_Hier_bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    const mxh_coll_memo_t *m = memo_hit(comm, MXH_COLL_BCAST, count, datatype, MPI_OP_NULL);
    if (m != NULL && buf_ok(buffer) && root >= 0 && root < mxh_hier_last->size) {
        if (plain_fast(m))
            PLAIN_FAST(m, MXH_COLL_BCAST, MPI_Bcast(buffer, count, datatype, root, comm));
        return run_remembered(MXH_COLL_BCAST, "MPIX_Hier_bcast", MPI_IN_PLACE, buffer, count,
                              datatype, MPI_OP_NULL, root, comm, 0, MPI_DATATYPE_NULL, 0);
    }
    return bcast_checked(buffer, count, datatype, root, comm);
}

int MPIX_Hier_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                     MPI_Request *request)
{
    static const char F[] = "MPIX_Hier_Ibcast";
    mxh_coll_args_t a;
    CHECK(mxh_check_comm(comm, F));
    if (mxh_comm_is_inter(comm)) {
        CHECK(inter_check(comm, F, count, 0, datatype, MPI_BYTE, MPI_SUM));
        INTER(MXH_COLL_BCAST, 0, count, datatype, 0,
              MPI_Ibcast(buffer, count, datatype, root, comm, request));
    }
    CHECK(check_request(comm, request, F));
    CHECK(bcast_args(buffer, count, datatype, root, comm, F, &a));
    return entry_start(&a, 0, request);
}

/* ---- reduce ---- */

static int reduce_args(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, int root, MPI_Comm comm, const char *F, mxh_coll_args_t *a,
                       int *hier_op)
{
    int rank;
    CHECK(mxh_check_count(comm, count, "count", F));
    CHECK(mxh_check_reduce_dtype(comm, datatype, op, F));
    CHECK(mxh_check_op(comm, op, datatype, hier_op, F));
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
    args_start(a, MXH_COLL_REDUCE, F, sendbuf, recvbuf, datatype, op, root, comm);
    a->count = count;
    return MPI_SUCCESS;
}

static __attribute__((noinline)) int reduce_checked(const void *sendbuf, void *recvbuf,
                                                    int count, MPI_Datatype datatype, MPI_Op op,
                                                    int root, MPI_Comm comm)
{
    mxh_coll_args_t a;
    int hier_op = 0;
    CHECK(mxh_check_comm(comm, "MPIX_Hier_reduce"));
    if (mxh_comm_is_inter(comm)) {
        CHECK(inter_check(comm, "MPIX_Hier_reduce", count, 0, datatype, MPI_BYTE, op));
        INTER(MXH_COLL_REDUCE, 1, count, datatype, 0,
              MPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm));
    }
    CHECK(reduce_args(sendbuf, recvbuf, count, datatype, op, root, comm, "MPIX_Hier_reduce", &a,
                      &hier_op));
    return entry_run(&a, hier_op);
}

int MPIX_Hier_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, int root, MPI_Comm comm)
{
    const mxh_coll_memo_t *m = memo_hit(comm, MXH_COLL_REDUCE, count, datatype, op);
    if (m != NULL && root >= 0 && root < mxh_hier_last->size &&
        (root == mxh_hier_last->rank ? buf_ok(recvbuf) && sendbuf != recvbuf && sendbuf != NULL
                                     : buf_ok(sendbuf))) {
        /* in place at a root other than 0: through a copy (coll.c: plain_reduce) */
        if ((sendbuf != MPI_IN_PLACE || root == 0) && plain_fast(m))
            PLAIN_FAST(m, MXH_COLL_REDUCE,
                       MPI_Reduce(sendbuf, recvbuf, count, datatype, m->mpi_op, root, comm));
        return run_remembered(MXH_COLL_REDUCE, "MPIX_Hier_reduce", sendbuf, recvbuf, count,
                              datatype, op, root, comm, 0, MPI_DATATYPE_NULL, m->hier_op);
    }
    return reduce_checked(sendbuf, recvbuf, count, datatype, op, root, comm);
}

int MPIX_Hier_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                      MPI_Op op, int root, MPI_Comm comm, MPI_Request *request)
{
    static const char F[] = "MPIX_Hier_Ireduce";
    mxh_coll_args_t a;
    int hier_op = 0;
    CHECK(mxh_check_comm(comm, F));
    if (mxh_comm_is_inter(comm)) {
        CHECK(inter_check(comm, F, count, 0, datatype, MPI_BYTE, op));
        INTER(MXH_COLL_REDUCE, 0, count, datatype, 0,
              MPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, request));
    }
    CHECK(check_request(comm, request, F));
    CHECK(reduce_args(sendbuf, recvbuf, count, datatype, op, root, comm, F, &a, &hier_op));
    return entry_start(&a, hier_op, request);
}

/* ---- v-collectives and all-to-all ---- */

/* The @n counts of a v-collective: present, non-negative. */
static int check_counts(MPI_Comm comm, const int *counts, int n, const char *what,
                        const char *func)
{
    if (n > 0 && counts == NULL)
        return mxh_raise(comm, MPI_ERR_ARG, func, "%s is NULL", what);
    for (int i = 0; i < n; i++)
        if (counts[i] < 0)
            return mxh_raise(comm, MPI_ERR_COUNT, func, "%s[%d] = %d is negative", what, i,
                             counts[i]);
    return MPI_SUCCESS;
}

static int check_displs(MPI_Comm comm, const int *displs, int n, const char *what,
                        const char *func)
{
    if (n > 0 && displs == NULL)
        return mxh_raise(comm, MPI_ERR_ARG, func, "%s is NULL", what);
    return MPI_SUCCESS;
}

static int comm_size(MPI_Comm comm)
{
    int size = 0;
    MPI_Comm_size(comm, &size);
    return size;
}

/* allgatherv */

static int allgatherv_args(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, const int recvcounts[], const int displs[],
                           MPI_Datatype recvtype, MPI_Comm comm, const char *F,
                           mxh_coll_args_t *a)
{
    int n = comm_size(comm);
    if (sendbuf != MPI_IN_PLACE) {
        CHECK(mxh_check_count(comm, sendcount, "sendcount", F));
        CHECK(mxh_check_dtype(comm, sendtype, "sendtype", F));
        if (sendcount > 0 && sendbuf == NULL)
            return mxh_raise(comm, MPI_ERR_BUFFER, F, "sendbuf is NULL with sendcount %d",
                             sendcount);
    }
    CHECK(check_counts(comm, recvcounts, n, "recvcounts", F));
    CHECK(check_displs(comm, displs, n, "displs", F));
    CHECK(mxh_check_dtype(comm, recvtype, "recvtype", F));
    if (recvbuf == MPI_IN_PLACE)
        return mxh_raise(comm, MPI_ERR_BUFFER, F, "recvbuf must not be MPI_IN_PLACE");
    args_start(a, MXH_COLL_ALLGATHERV, F, sendbuf, recvbuf, recvtype, MPI_OP_NULL, -1, comm);
    a->sendcount = sendcount;
    a->sendtype = sendtype;
    a->rcounts = recvcounts;
    a->rdispls = displs;
    return MPI_SUCCESS;
}

int MPIX_Hier_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                         void *recvbuf, const int recvcounts[], const int displs[],
                         MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char F[] = "MPIX_Hier_allgatherv";
    mxh_coll_args_t a;
    CHECK(mxh_check_comm(comm, F));
    if (mxh_comm_is_inter(comm)) {
        CHECK(inter_check(comm, F, sendcount, 0, sendtype, recvtype, MPI_SUM));
        INTER(MXH_COLL_ALLGATHERV, 1, inter_vsum(comm, recvcounts), recvtype, 0,
              MPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                recvtype, comm));
    }
    CHECK(allgatherv_args(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                          comm, F, &a));
    return entry_run(&a, 0);
}

int MPIX_Hier_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, const int recvcounts[], const int displs[],
                          MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    static const char F[] = "MPIX_Hier_Iallgatherv";
    mxh_coll_args_t a;
    CHECK(mxh_check_comm(comm, F));
    CHECK(check_request(comm, request, F));
    if (mxh_comm_is_inter(comm)) {
        CHECK(inter_check(comm, F, sendcount, 0, sendtype, recvtype, MPI_SUM));
        INTER(MXH_COLL_ALLGATHERV, 0, inter_vsum(comm, recvcounts), recvtype, 0,
              MPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                 recvtype, comm, request));
    }
    CHECK(allgatherv_args(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                          comm, F, &a));
    return entry_start(&a, 0, request);
}

/* reduce_scatter */

static int reduce_scatter_args(const void *sendbuf, void *recvbuf, const int recvcounts[],
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const char *F,
                               mxh_coll_args_t *a, int *hier_op)
{
    int n = comm_size(comm), rank = 0;
    MPI_Comm_rank(comm, &rank);
    CHECK(check_counts(comm, recvcounts, n, "recvcounts", F));
    CHECK(mxh_check_reduce_dtype(comm, datatype, op, F));
    CHECK(mxh_check_op(comm, op, datatype, hier_op, F));
    CHECK(mxh_check_buf(comm, recvbuf, recvcounts[rank], "recvbuf", F));
    if (sendbuf != MPI_IN_PLACE) {
        long total = 0;
        for (int i = 0; i < n; i++)
            total += recvcounts[i];
        if (total > 0 && sendbuf == NULL)
            return mxh_raise(comm, MPI_ERR_BUFFER, F, "sendbuf is NULL with %ld elements",
                             total);
        CHECK(check_alias(comm, sendbuf, recvbuf, (int)(total > 0), F));
    }
    args_start(a, MXH_COLL_REDUCE_SCATTER, F, sendbuf, recvbuf, datatype, op, -1, comm);
    a->count = recvcounts[rank];
    a->rcounts = recvcounts;
    return MPI_SUCCESS;
}

int MPIX_Hier_reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    static const char F[] = "MPIX_Hier_reduce_scatter";
    mxh_coll_args_t a;
    int hier_op = 0;
    CHECK(mxh_check_comm(comm, F));
    if (mxh_comm_is_inter(comm)) {
        CHECK(inter_check(comm, F, 0, 0, datatype, MPI_BYTE, op));
        INTER(MXH_COLL_REDUCE_SCATTER, 1, inter_vsum(comm, recvcounts), datatype, 0,
              MPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm));
    }
    CHECK(reduce_scatter_args(sendbuf, recvbuf, recvcounts, datatype, op, comm, F, &a,
                              &hier_op));
    return entry_run(&a, hier_op);
}

int MPIX_Hier_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                              MPI_Request *request)
{
    static const char F[] = "MPIX_Hier_Ireduce_scatter";
    mxh_coll_args_t a;
    int hier_op = 0;
    CHECK(mxh_check_comm(comm, F));
    CHECK(check_request(comm, request, F));
    if (mxh_comm_is_inter(comm)) {
        CHECK(inter_check(comm, F, 0, 0, datatype, MPI_BYTE, op));
        INTER(MXH_COLL_REDUCE_SCATTER, 0, inter_vsum(comm, recvcounts), datatype, 0,
              MPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, request));
    }
    CHECK(reduce_scatter_args(sendbuf, recvbuf, recvcounts, datatype, op, comm, F, &a,
                              &hier_op));
    return entry_start(&a, hier_op, request);
}

/* alltoall */

static int alltoall_args(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                         void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                         const char *F, mxh_coll_args_t *a)
{
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
    args_start(a, MXH_COLL_ALLTOALL, F, sendbuf, recvbuf, recvtype, MPI_OP_NULL, -1, comm);
    a->count = recvcount;
    a->sendcount = sendcount;
    a->sendtype = sendtype;
    return MPI_SUCCESS;
}

int MPIX_Hier_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                       void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char F[] = "MPIX_Hier_alltoall";
    mxh_coll_args_t a;
    CHECK(mxh_check_comm(comm, F));
    if (mxh_comm_is_inter(comm)) {
        CHECK(inter_check(comm, F, sendcount, recvcount, sendtype, recvtype, MPI_SUM));
        INTER(MXH_COLL_ALLTOALL, 1, recvcount, recvtype, 1,
              MPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm));
    }
    CHECK(alltoall_args(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, F,
                        &a));
    return entry_run(&a, 0);
}

int MPIX_Hier_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                        void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                        MPI_Request *request)
{
    static const char F[] = "MPIX_Hier_Ialltoall";
    mxh_coll_args_t a;
    CHECK(mxh_check_comm(comm, F));
    CHECK(check_request(comm, request, F));
    if (mxh_comm_is_inter(comm)) {
        CHECK(inter_check(comm, F, sendcount, recvcount, sendtype, recvtype, MPI_SUM));
        INTER(MXH_COLL_ALLTOALL, 0, recvcount, recvtype, 1,
              MPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                               request));
    }
    CHECK(alltoall_args(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, F,
                        &a));
    return entry_start(&a, 0, request);
}

/* alltoallv */

static int alltoallv_args(const void *sendbuf, const int sendcounts[], const int sdispls[],
                          MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                          const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                          const char *F, mxh_coll_args_t *a)
{
    int n = comm_size(comm);
    if (sendbuf != MPI_IN_PLACE) {
        CHECK(check_counts(comm, sendcounts, n, "sendcounts", F));
        CHECK(check_displs(comm, sdispls, n, "sdispls", F));
        CHECK(mxh_check_dtype(comm, sendtype, "sendtype", F));
    }
    CHECK(check_counts(comm, recvcounts, n, "recvcounts", F));
    CHECK(check_displs(comm, rdispls, n, "rdispls", F));
    CHECK(mxh_check_dtype(comm, recvtype, "recvtype", F));
    if (recvbuf == MPI_IN_PLACE)
        return mxh_raise(comm, MPI_ERR_BUFFER, F, "recvbuf must not be MPI_IN_PLACE");
    args_start(a, MXH_COLL_ALLTOALLV, F, sendbuf, recvbuf, recvtype, MPI_OP_NULL, -1, comm);
    a->sendtype = sendtype;
    a->rcounts = recvcounts;
    a->rdispls = rdispls;
    a->scounts = sendbuf == MPI_IN_PLACE ? NULL : sendcounts;
    a->sdispls = sendbuf == MPI_IN_PLACE ? NULL : sdispls;
    return MPI_SUCCESS;
}

int MPIX_Hier_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                        MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                        const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char F[] = "MPIX_Hier_alltoallv";
    mxh_coll_args_t a;
    CHECK(mxh_check_comm(comm, F));
    if (mxh_comm_is_inter(comm)) {
        CHECK(inter_check(comm, F, 0, 0, sendtype, recvtype, MPI_SUM));
        INTER(MXH_COLL_ALLTOALLV, 1, inter_vsum(comm, recvcounts), recvtype, 0,
              MPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                               rdispls, recvtype, comm));
    }
    CHECK(alltoallv_args(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                         recvtype, comm, F, &a));
    return entry_run(&a, 0);
}

int MPIX_Hier_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                         MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                         const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                         MPI_Request *request)
{
    static const char F[] = "MPIX_Hier_Ialltoallv";
    mxh_coll_args_t a;
    CHECK(mxh_check_comm(comm, F));
    CHECK(check_request(comm, request, F));
    if (mxh_comm_is_inter(comm)) {
        CHECK(inter_check(comm, F, 0, 0, sendtype, recvtype, MPI_SUM));
        INTER(MXH_COLL_ALLTOALLV, 0, inter_vsum(comm, recvcounts), recvtype, 0,
              MPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                rdispls, recvtype, comm, request));
    }
    CHECK(alltoallv_args(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                         recvtype, comm, F, &a));
    return entry_start(&a, 0, request);
}

/* ---- persistent: MPI-4's *_init ----
 *
 * The handle is MPI's own persistent collective of the same arguments
 * (coll/persist.h says why), created first, as MPI orders init calls; then
 * the call's checks and decision, kept in the request (each MPI_Start runs
 * them no more). On an intercommunicator MPI's own request is the request. */

#if MPI_VERSION >= 4
static int init_checks(MPI_Comm comm, MPI_Request *request, const char *F)
{
    CHECK(mxh_check_comm(comm, F));
    return check_request(comm, request, F);
}

static int entry_init(mxh_coll_args_t *a, int hier_op, MPI_Request proxy, MPI_Request *request)
{
    mxh_persist_t *p;
    int rc = entry_prepare(a, hier_op);
    if (rc == MPI_SUCCESS)
        rc = entry_done(a, mxh_persist_new(a, proxy, &p));
    if (rc != MPI_SUCCESS) {
        MPI_Request_free(&proxy);
        return rc;
    }
    *request = proxy;
    return MPI_SUCCESS;
}

/* On an intercommunicator MPI's own request is the request (counted as a fallback). */
static int inter_init(MPI_Comm comm, mxh_coll_t coll, size_t count, MPI_Datatype dt, int blocks,
                      MPI_Request proxy, MPI_Request *request)
{
    mxh_metrics_record_plain(comm, coll, 0, inter_bytes(comm, count, dt, blocks),
                             MXH_FB_INTERCOMM, 0);
    *request = proxy;
    return MPI_SUCCESS;
}

/* MPI's op for the handle (the library's own for its half types). */
static MPI_Op proxy_op(MPI_Datatype dt, MPI_Op op)
{
    return mxh_reduce_mpi_op(dt, op);
}

int MPIX_Hier_Allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                             MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    static const char F[] = "MPIX_Hier_Allreduce_init";
    mxh_coll_args_t a;
    MPI_Request proxy;
    int hier_op = 0;
    int inter;
    CHECK(init_checks(comm, request, F));
    inter = mxh_comm_is_inter(comm);
    CHECK(inter ? inter_check(comm, F, count, 0, datatype, MPI_BYTE, op)
          : allreduce_args(sendbuf, recvbuf, count, datatype, op, comm, F, &a, &hier_op));
    CHECK(MPI_Allreduce_init(sendbuf, recvbuf, count, datatype, proxy_op(datatype, op), comm,
                             info, &proxy));
    if (inter)
        return inter_init(comm, MXH_COLL_ALLREDUCE, count, datatype, 0, proxy, request);
    return entry_init(&a, hier_op, proxy, request);
}

int MPIX_Hier_Reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int recvcount,
                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                        MPI_Info info, MPI_Request *request)
{
    static const char F[] = "MPIX_Hier_Reduce_scatter_block_init";
    mxh_coll_args_t a;
    MPI_Request proxy;
    int hier_op = 0;
    int inter;
    CHECK(init_checks(comm, request, F));
    inter = mxh_comm_is_inter(comm);
    CHECK(inter ? inter_check(comm, F, recvcount, 0, datatype, MPI_BYTE, op)
          : rsb_args(sendbuf, recvbuf, recvcount, datatype, op, comm, F, &a, &hier_op));
    CHECK(MPI_Reduce_scatter_block_init(sendbuf, recvbuf, recvcount, datatype,
                                        proxy_op(datatype, op), comm, info, &proxy));
    if (inter)
        return inter_init(comm, MXH_COLL_REDUCE_SCATTER_BLOCK, recvcount, datatype, 1, proxy,
                          request);
    return entry_init(&a, hier_op, proxy, request);
}

int MPIX_Hier_Allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Info info, MPI_Request *request)
{
    static const char F[] = "MPIX_Hier_Allgather_init";
    mxh_coll_args_t a;
    MPI_Request proxy;
    int inter;
    CHECK(init_checks(comm, request, F));
    inter = mxh_comm_is_inter(comm);
    CHECK(inter ? inter_check(comm, F, sendcount, recvcount, sendtype, recvtype, MPI_SUM)
          : allgather_args(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, F,
                         &a));
    CHECK(MPI_Allgather_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                             info, &proxy));
    if (inter)
        return inter_init(comm, MXH_COLL_ALLGATHER, recvcount, recvtype, 1, proxy, request);
    return entry_init(&a, 0, proxy, request);
}

int MPIX_Hier_Bcast_init(void *buffer, int count, MPI_Datatype datatype, int root,
                         MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    static const char F[] = "MPIX_Hier_Bcast_init";
    mxh_coll_args_t a;
    MPI_Request proxy;
    int inter;
    CHECK(init_checks(comm, request, F));
    inter = mxh_comm_is_inter(comm);
    CHECK(inter ? inter_check(comm, F, count, 0, datatype, MPI_BYTE, MPI_SUM)
          : bcast_args(buffer, count, datatype, root, comm, F, &a));
    CHECK(MPI_Bcast_init(buffer, count, datatype, root, comm, info, &proxy));
    if (inter)
        return inter_init(comm, MXH_COLL_BCAST, count, datatype, 0, proxy, request);
    return entry_init(&a, 0, proxy, request);
}

int MPIX_Hier_Reduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, int root, MPI_Comm comm, MPI_Info info,
                          MPI_Request *request)
{
    static const char F[] = "MPIX_Hier_Reduce_init";
    mxh_coll_args_t a;
    MPI_Request proxy;
    int hier_op = 0;
    int inter;
    CHECK(init_checks(comm, request, F));
    inter = mxh_comm_is_inter(comm);
    CHECK(inter ? inter_check(comm, F, count, 0, datatype, MPI_BYTE, op)
          : reduce_args(sendbuf, recvbuf, count, datatype, op, root, comm, F, &a, &hier_op));
    CHECK(MPI_Reduce_init(sendbuf, recvbuf, count, datatype, proxy_op(datatype, op), root, comm,
                          info, &proxy));
    if (inter)
        return inter_init(comm, MXH_COLL_REDUCE, count, datatype, 0, proxy, request);
    return entry_init(&a, hier_op, proxy, request);
}

int MPIX_Hier_Allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, const int recvcounts[], const int displs[],
                              MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                              MPI_Request *request)
{
    static const char F[] = "MPIX_Hier_Allgatherv_init";
    mxh_coll_args_t a;
    MPI_Request proxy;
    int inter;
    CHECK(init_checks(comm, request, F));
    inter = mxh_comm_is_inter(comm);
    CHECK(inter ? inter_check(comm, F, sendcount, 0, sendtype, recvtype, MPI_SUM)
          : allgatherv_args(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                          comm, F, &a));
    CHECK(MPI_Allgatherv_init(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                              recvtype, comm, info, &proxy));
    if (inter)
        return inter_init(comm, MXH_COLL_ALLGATHERV, inter_vsum(comm, recvcounts), recvtype, 0,
                          proxy, request);
    return entry_init(&a, 0, proxy, request);
}

int MPIX_Hier_Reduce_scatter_init(const void *sendbuf, void *recvbuf, const int recvcounts[],
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                  MPI_Info info, MPI_Request *request)
{
    static const char F[] = "MPIX_Hier_Reduce_scatter_init";
    mxh_coll_args_t a;
    MPI_Request proxy;
    int hier_op = 0;
    int inter;
    CHECK(init_checks(comm, request, F));
    inter = mxh_comm_is_inter(comm);
    CHECK(inter ? inter_check(comm, F, 0, 0, datatype, MPI_BYTE, op)
          : reduce_scatter_args(sendbuf, recvbuf, recvcounts, datatype, op, comm, F, &a,
                              &hier_op));
    CHECK(MPI_Reduce_scatter_init(sendbuf, recvbuf, recvcounts, datatype,
                                  proxy_op(datatype, op), comm, info, &proxy));
    if (inter)
        return inter_init(comm, MXH_COLL_REDUCE_SCATTER, inter_vsum(comm, recvcounts), datatype, 0,
                          proxy, request);
    return entry_init(&a, hier_op, proxy, request);
}

int MPIX_Hier_Alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                            MPI_Info info, MPI_Request *request)
{
    static const char F[] = "MPIX_Hier_Alltoall_init";
    mxh_coll_args_t a;
    MPI_Request proxy;
    int inter;
    CHECK(init_checks(comm, request, F));
    inter = mxh_comm_is_inter(comm);
    CHECK(inter ? inter_check(comm, F, sendcount, recvcount, sendtype, recvtype, MPI_SUM)
          : alltoall_args(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, F,
                        &a));
    CHECK(MPI_Alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                            info, &proxy));
    if (inter)
        return inter_init(comm, MXH_COLL_ALLTOALL, recvcount, recvtype, 1, proxy, request);
    return entry_init(&a, 0, proxy, request);
}

int MPIX_Hier_Alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                             MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                             const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Info info, MPI_Request *request)
{
    static const char F[] = "MPIX_Hier_Alltoallv_init";
    mxh_coll_args_t a;
    MPI_Request proxy;
    int inter;
    CHECK(init_checks(comm, request, F));
    inter = mxh_comm_is_inter(comm);
    CHECK(inter ? inter_check(comm, F, 0, 0, sendtype, recvtype, MPI_SUM)
          : alltoallv_args(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                         recvtype, comm, F, &a));
    CHECK(MPI_Alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                             rdispls, recvtype, comm, info, &proxy));
    if (inter)
        return inter_init(comm, MXH_COLL_ALLTOALLV, inter_vsum(comm, recvcounts), recvtype, 0,
                          proxy, request);
    return entry_init(&a, 0, proxy, request);
}
#endif
