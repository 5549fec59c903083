/* Collectives: decision of the path, staging of non-host memory, the bodies
 * that run a cached schedule on a work buffer, and their plain-MPI fallbacks
 * (coll/coll.h). The same body runs for blocking calls (caller's stack) and
 * nonblocking ones (a task). */
#include "config.h"

#include "coll/alltoall.h"
#include "coll/coll.h"
#include "coll/dtype.h"
#include "exec/exec.h"
#include "exec/ipc.h"
#include "coll/metrics.h"
#include "exec/task.h"
#include "reduce/reduce.h"
#include "sim/sim.h"
#include "topo/discover.h"
#include "util/log.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* What a call reads and writes at this rank: elements of the send buffer
 * (sendtype) and of the receive buffer (dt), whether the receive buffer is
 * input and output. */
typedef struct buf_use {
    size_t send_count, recv_count;
    int recv_in, recv_out;
} buf_use_t;

/* One rank with device buffers (self_device): what its result is. */
enum self_form {
    SELF_NONE = 0, /* staged as any call */
    SELF_KEEP,     /* its buffer as it is (bcast) */
    SELF_COPY,     /* a copy of its input, dense types */
    SELF_SIZES     /* the same, when the send and receive sides' sizes match (allgather) */
};

/* What this file runs for each collective (coll_ops below); the collective's
 * facts (rooted, reducing, ...) are util/coll_desc.h's. NULL: the collective
 * has no such form. */
typedef struct coll_ops {
    /* the hierarchical body on host buffers in the view (coll.h: vdt) */
    mxh_status_t (*body)(mxh_coll_args_t *a, const void *s, void *r);
    /* MPI's blocking collective and its nonblocking post (plain path) */
    int (*mpi)(mxh_coll_args_t *a, const void *s, void *r);
    int (*impi)(mxh_coll_args_t *a, const void *s, void *r, MPI_Request *req);
    /* in place: the elements of recvbuf MPICH needs copied first, 0: none */
    size_t (*inplace_copy)(const mxh_coll_args_t *a);
    /* this rank's buffer use (@in_place: sendbuf is MPI_IN_PLACE) */
    void (*buf_use)(const mxh_coll_args_t *a, int in_place, buf_use_t *u);
    /* the shared-memory path of @n elements of @dt straight on the buffers */
    mxh_status_t (*shm)(const mxh_coll_args_t *a, const void *s, void *r, size_t n,
                        MPI_Datatype dt);
    /* the device node level (exec/ipc.h): one node, and the nodes' part of a schedule */
    mxh_status_t (*ipc)(mxh_coll_args_t *a, const mxh_mem_ops_t *ops, const void *in, size_t n);
    /* several nodes on device buffers: what the node's ranks do around the network
     * steps (device_net; fill 0: no such path) */
    int dnet_fill, dnet_spread;
    /* the path decided by selection adjusted to what the collective can take */
    void (*settle)(mxh_coll_args_t *a);
    int self;         /* enum self_form */
    int staged_frags; /* a schedule staged fragment by fragment (stage_io_t) */
    int own_counts;   /* each rank's send counts of its own: totals differ between ranks */
} coll_ops_t;

static inline const coll_ops_t *ops_of(const mxh_coll_args_t *a);

/* ---- plain MPI ------------------------------------------------------------------------ */

/* Bytes a buffer of @count elements of @dt spans, and where they start
 * relative to the buffer pointer. */
static size_t type_span(MPI_Datatype dt, size_t count, MPI_Aint *lb)
{
    MPI_Aint l, extent, tlb, textent;
    MPI_Type_get_extent(dt, &l, &extent);
    MPI_Type_get_true_extent(dt, &tlb, &textent);
    *lb = tlb;
    if (count == 0)
        return 0;
    return (size_t)textent + (count - 1) * (size_t)extent;
}

/* A private copy of @count elements of @dt at @buf (MPI_Sendrecv on
 * MPI_COMM_SELF copies any datatype). *base_p gets the buffer to free. */
static int typed_copy(const void *buf, int count, MPI_Datatype dt, void **copy_p, void **base_p)
{
    MPI_Aint lb;
    size_t bytes = type_span(dt, count, &lb);
    char *base   = malloc(bytes ? bytes : 1);
    int rc;

    if (base == NULL)
        return MPI_ERR_NO_MEM;
    *base_p = base;
    *copy_p = base - lb;
    rc = MPI_Sendrecv(buf, count, dt, 0, 0, *copy_p, count, dt, 0, 0, MPI_COMM_SELF,
                      MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        free(base);
        *base_p = NULL;
    }
    return rc;
}

/* Elements of the reduce_scatter input: the sum of recvcounts. */
static size_t v_total(const int *counts, int n)
{
    size_t t = 0;
    for (int i = 0; i < n; i++)
        t += (size_t)counts[i];
    return t;
}

/* MPI's blocking collective (mpi) and its nonblocking form (impi) on @s/@r. */
static int mpi_allreduce(mxh_coll_args_t *a, const void *s, void *r)
{
    return MPI_Allreduce(s, r, a->count, a->dt, a->mpi_op, a->comm);
}

static int impi_allreduce(mxh_coll_args_t *a, const void *s, void *r, MPI_Request *req)
{
    return MPI_Iallreduce(s, r, a->count, a->dt, a->mpi_op, a->comm, req);
}

static int mpi_rsb(mxh_coll_args_t *a, const void *s, void *r)
{
    return MPI_Reduce_scatter_block(s, r, a->count, a->dt, a->mpi_op, a->comm);
}

static int impi_rsb(mxh_coll_args_t *a, const void *s, void *r, MPI_Request *req)
{
    return MPI_Ireduce_scatter_block(s, r, a->count, a->dt, a->mpi_op, a->comm, req);
}

static int mpi_allgather(mxh_coll_args_t *a, const void *s, void *r)
{
    return MPI_Allgather(s, a->sendcount, a->sendtype, r, a->count, a->dt, a->comm);
}

static int impi_allgather(mxh_coll_args_t *a, const void *s, void *r, MPI_Request *req)
{
    return MPI_Iallgather(s, a->sendcount, a->sendtype, r, a->count, a->dt, a->comm, req);
}

static int mpi_bcast(mxh_coll_args_t *a, const void *s, void *r)
{
    (void)s;
    return MPI_Bcast(r, a->count, a->dt, a->root, a->comm);
}

static int impi_bcast(mxh_coll_args_t *a, const void *s, void *r, MPI_Request *req)
{
    (void)s;
    return MPI_Ibcast(r, a->count, a->dt, a->root, a->comm, req);
}

static int mpi_reduce(mxh_coll_args_t *a, const void *s, void *r)
{
    return MPI_Reduce(s, r, a->count, a->dt, a->mpi_op, a->root, a->comm);
}

static int impi_reduce(mxh_coll_args_t *a, const void *s, void *r, MPI_Request *req)
{
    return MPI_Ireduce(s, r, a->count, a->dt, a->mpi_op, a->root, a->comm, req);
}

/* allgatherv on one rank: MPICH 4.0.2 ignores displs[0] there (the block lands
 * at the start of recvbuf); the copy is made here. */
static int allgatherv_self(mxh_coll_args_t *a, const void *s, void *r)
{
    MPI_Aint lb, ext;
    if (s == MPI_IN_PLACE)
        return MPI_SUCCESS;
    MPI_Type_get_extent(a->dt, &lb, &ext);
    return MPI_Sendrecv(s, a->sendcount, a->sendtype, 0, 0, (char *)r + (MPI_Aint)a->rdispls[0] * ext,
                        a->rcounts[0], a->dt, 0, 0, MPI_COMM_SELF, MPI_STATUS_IGNORE);
}

static int mpi_allgatherv(mxh_coll_args_t *a, const void *s, void *r)
{
    if (a->size == 1)
        return allgatherv_self(a, s, r);
    return MPI_Allgatherv(s, a->sendcount, a->sendtype, r, a->rcounts, a->rdispls, a->dt,
                          a->comm);
}

static int impi_allgatherv(mxh_coll_args_t *a, const void *s, void *r, MPI_Request *req)
{
    int rc;
    if (a->size > 1)
        return MPI_Iallgatherv(s, a->sendcount, a->sendtype, r, a->rcounts, a->rdispls, a->dt,
                               a->comm, req);
    rc = allgatherv_self(a, s, r); /* done now; a request that is complete */
    return rc != MPI_SUCCESS ? rc : MPI_Ibarrier(MPI_COMM_SELF, req);
}

static int mpi_reduce_scatter(mxh_coll_args_t *a, const void *s, void *r)
{
    return MPI_Reduce_scatter(s, r, a->rcounts, a->dt, a->mpi_op, a->comm);
}

static int impi_reduce_scatter(mxh_coll_args_t *a, const void *s, void *r, MPI_Request *req)
{
    return MPI_Ireduce_scatter(s, r, a->rcounts, a->dt, a->mpi_op, a->comm, req);
}

static int mpi_alltoall(mxh_coll_args_t *a, const void *s, void *r)
{
    return MPI_Alltoall(s, a->sendcount, a->sendtype, r, a->count, a->dt, a->comm);
}

static int impi_alltoall(mxh_coll_args_t *a, const void *s, void *r, MPI_Request *req)
{
    return MPI_Ialltoall(s, a->sendcount, a->sendtype, r, a->count, a->dt, a->comm, req);
}

static int mpi_alltoallv(mxh_coll_args_t *a, const void *s, void *r)
{
    return MPI_Alltoallv(s, a->scounts, a->sdispls, a->sendtype, r, a->rcounts, a->rdispls,
                         a->dt, a->comm);
}

static int impi_alltoallv(mxh_coll_args_t *a, const void *s, void *r, MPI_Request *req)
{
    return MPI_Ialltoallv(s, a->scounts, a->sdispls, a->sendtype, r, a->rcounts, a->rdispls,
                          a->dt, a->comm, req);
}

/* In-place calls that MPICH 4.0.2 gets wrong run from a copy of the input: the
 * elements of recvbuf to copy, 0 for none. reduce_scatter_block: it asserts on
 * overlapping memcpy in some paths; reduce: MPI_IN_PLACE at a root other than
 * 0 crashes its reduce_scatter_gather algorithm; reduce_scatter: it aborts in
 * some calls (4 ranks, counts {0, 65538, 65539, 65540}). */
static size_t inplace_rsb(const mxh_coll_args_t *a)
{
    size_t n = (size_t)a->count * (size_t)a->size;
    return a->count > 0 && n <= INT_MAX ? n : 0;
}

static size_t inplace_reduce(const mxh_coll_args_t *a)
{
    return a->count > 0 && a->rank == a->root && a->root != 0 ? (size_t)a->count : 0;
}

static size_t inplace_reduce_scatter(const mxh_coll_args_t *a)
{
    size_t n = v_total(a->rcounts, a->size);
    return n <= INT_MAX ? n : 0;
}

/* MPI's collective; inside a task its nonblocking form + a wait that yields (a
 * task never blocks in MPI). The error code goes to a->mpi_rc. */
static mxh_status_t plain_call(mxh_coll_args_t *a, const void *s, void *r);

/* The plain-MPI path: MPI's collective on @s/@r, in place from a copy where
 * MPICH needs one. */
static mxh_status_t run_plain(mxh_coll_args_t *a, const void *s, void *r)
{
    size_t (*inplace)(const mxh_coll_args_t *) = ops_of(a)->inplace_copy;
    void *copy = NULL, *base = NULL;
    mxh_status_t st;
    size_t n;

    if (s != MPI_IN_PLACE || inplace == NULL || (n = inplace(a)) == 0)
        return plain_call(a, s, r);
    if (typed_copy(r, (int)n, a->dt, &copy, &base) != MPI_SUCCESS) {
        plain_call(a, MPI_IN_PLACE, r); /* keep the collective matched, then report */
        mxh_error("cannot copy the in-place buffer");
        return MXH_ERR_NO_MEMORY;
    }
    st = plain_call(a, copy, r);
    free(base);
    return st;
}

/* ---- fragment I/O: data moved in and out of the work buffer ------------------------------ */

/* Data moved in and out fragment by fragment (in a streamed pipeline it overlaps
 * the other fragments' transfers). */
typedef struct frag_io {
    const char *src;   /* allreduce/reduce: the send buffer; rsb: the input blocks */
    char       *dst;   /* allgather: the receive buffer */
    size_t      block; /* rsb/allgather: bytes per block */
    int         nblocks, me;
} frag_io_t;

/* Each function below moves at most @max bytes of fragment @f's job, from
 * byte @off of it on, and returns the bytes of the job left after them (the
 * executor polls its transfers between pieces). Copies are charged once per
 * piece in the simulation build. */

/* allreduce/reduce: copy the fragment from the send buffer */
static size_t frag_copy_in(void *arg, const mxh_sched_t *s, int f, char *work, size_t off,
                           size_t max)
{
    const frag_io_t *io = arg;
    size_t base = mxh_sched_frag_offset(s, f) * s->tsize;
    size_t len  = mxh_sched_frag_count(s, f) * s->tsize;
    size_t n    = len - off < max ? len - off : max;
    mxh_copy(work + base + off, io->src + base + off, n);
    return len - off - n;
}

/* rsb in, allgather out: the fragment's piece of every block. In the work
 * buffer those pieces follow each other in block_pos order, in the user's
 * buffer block d starts at d * io->block. The job is block 0's piece, then
 * block 1's, ...; @out copies work -> user buffer. */
static size_t frag_blocks(const frag_io_t *io, const mxh_sched_t *s, int f, char *work,
                          size_t off, size_t max, int out)
{
    size_t run  = mxh_sched_frag_count(s, f) * s->tsize; /* bytes of one block's piece */
    size_t len  = run * (size_t)io->nblocks, end = len - off < max ? len - off : max;
    char *frag  = work + mxh_sched_frag_offset(s, f) * s->tsize;
    size_t from = mxh_sched_frag_start(s, f) * s->tsize, moved = 0;

    end += off;
    while (run > 0 && off < end) {
        int d    = (int)(off / run);
        size_t w = off % run, n = run - w < end - off ? run - w : end - off;
        size_t user = (size_t)d * io->block + from + w;
        char *work_p = frag + (size_t)s->plan->block_pos[d] * run + w;
        if (out)
            mxh_copy_uncharged(io->dst + user, work_p, n);
        else
            mxh_copy_uncharged(work_p, io->src + user, n);
        off += n;
        moved += n;
    }
    mxh_copy_charge(moved);
    return len - end;
}

/* rsb: the fragment's piece of every block, blocks in block_pos order */
static size_t frag_pack_all(void *arg, const mxh_sched_t *s, int f, char *work, size_t off,
                            size_t max)
{
    return frag_blocks(arg, s, f, work, off, max, 0);
}

/* allgather: my block's piece in (one piece), every block's piece out */
static size_t frag_pack_mine(void *arg, const mxh_sched_t *s, int f, char *work, size_t off,
                             size_t max)
{
    const frag_io_t *io = arg;
    size_t fc = mxh_sched_frag_count(s, f), ts = s->tsize;
    (void)off;
    (void)max;
    mxh_copy(work + (mxh_sched_frag_offset(s, f) + (size_t)s->plan->block_pos[io->me] * fc) * ts,
             io->src + mxh_sched_frag_start(s, f) * ts, fc * ts);
    return 0;
}

static size_t frag_unpack_all(void *arg, const mxh_sched_t *s, int f, char *work, size_t off,
                              size_t max)
{
    return frag_blocks(arg, s, f, work, off, max, 1);
}

/* Staged allreduce/reduce: fragments move between the work buffer (host) and a
 * buffer of another memory kind through that kind's copies, fragment by
 * fragment as the executor admits them, so that one fragment's copy overlaps
 * the transfers and reductions of the fragments already in flight. */
typedef struct stage_io {
    frag_io_t            io;      /* io.src: the input (any kind) */
    const mxh_mem_ops_t *in_ops;  /* kind of io.src */
    char                *out;     /* results (any kind), or NULL */
    const mxh_mem_ops_t *out_ops;
    mxh_status_t         st;      /* first copy failure */
} stage_io_t;

static mxh_status_t copy_wait(const mxh_mem_ops_t *ops, void *dst, const void *src, size_t n);

static size_t frag_stage(stage_io_t *sio, const mxh_sched_t *s, int f, char *work, size_t off,
                         size_t max, int out)
{
    size_t base = mxh_sched_frag_offset(s, f) * s->tsize;
    size_t len  = mxh_sched_frag_count(s, f) * s->tsize;
    size_t n    = len - off < max ? len - off : max;
    mxh_status_t st;

    if (out)
        st = copy_wait(sio->out_ops, sio->out + base + off, work + base + off, n);
    else
        st = copy_wait(sio->in_ops, work + base + off, sio->io.src + base + off, n);
    if (st != MXH_OK && sio->st == MXH_OK)
        sio->st = st; /* the schedule still runs to its end: the peers are in it */
    return len - off - n;
}

static size_t frag_stage_in(void *arg, const mxh_sched_t *s, int f, char *work, size_t off,
                            size_t max)
{
    return frag_stage(arg, s, f, work, off, max, 0);
}

static size_t frag_stage_out(void *arg, const mxh_sched_t *s, int f, char *work, size_t off,
                             size_t max)
{
    return frag_stage(arg, s, f, work, off, max, 1);
}

/* Block collectives on a schedule: the work buffer is fragment-major (for each
 * fragment, that fragment's piece of every block, blocks in block_pos order).
 * Copy block @d's pieces out to @dst (a block of sched->count elements). */
static void unpack_block(const mxh_sched_t *s, const char *work, int d, char *dst, size_t tsize)
{
    for (int f = 0; f < s->nfrag; f++) {
        size_t fc = mxh_sched_frag_count(s, f);
        mxh_copy(dst + mxh_sched_frag_start(s, f) * tsize,
                 work + (mxh_sched_frag_offset(s, f) + (size_t)s->plan->block_pos[d] * fc) * tsize,
                 fc * tsize);
    }
}

/* ---- hierarchical bodies ------------------------------------------------------------------ */

static mxh_status_t no_memory(size_t bytes)
{
    mxh_error("cannot allocate %zu bytes of scratch", bytes);
    return MXH_ERR_NO_MEMORY;
}

/* The executor's context on the hierarchy @h: elements of @dt (@tsize bytes) reduced
 * by @op, step times into @lvl; no fragment I/O, no level skipped (the callers set
 * those). Everything else the executor reads from the tuned schedule. */
static mxh_exec_ctx_t exec_ctx(mxh_hier_t *h, MPI_Datatype dt, size_t tsize, MPI_Op op,
                               mxh_lvl_time_t *lvl)
{
    return (mxh_exec_ctx_t){
        .comms       = h->level_comm,
        .shm         = h->shm,
        .dt          = dt,
        .extent      = tsize,
        .op          = op,
        .reqs        = h->reqs,
        .shm_levels  = h->shm_levels,
        .lvl         = lvl,
        .spread_comm = h->spread_comm,
    };
}

/* Run @sched on @work (sched->work_count elements), fragments moved in and out
 * by @in/@out. */
static mxh_status_t run_sched_io(mxh_coll_args_t *a, const mxh_sched_t *sched, void *work,
                                 MPI_Op op, mxh_frag_fn in, mxh_frag_fn out, frag_io_t *io)
{
    mxh_hier_t *h      = a->hier;
    mxh_exec_ctx_t ctx = exec_ctx(h, a->dt, a->tsize, op, a->lvl_p);
    ctx.frag_in  = in;
    ctx.frag_out = out;
    ctx.frag_arg = io;
    /* allreduce/reduce: the first step may read the send buffer in place of a copy */
    if (in == frag_copy_in)
        ctx.src = io->src;
    size_t tmp_bytes = mxh_exec_tmp_count(sched, &ctx) * a->tsize;
    void *tmp        = mxh_hier_tmp(h, tmp_bytes);
    if (tmp == NULL)
        return no_memory(tmp_bytes);
    return mxh_exec_sched(sched, &ctx, work, tmp);
}

/* Equal blocks of @count elements in rank order (shared-memory block collectives). */
static void block_parts(mxh_hier_t *h, int count)
{
    for (int r = 0; r < h->size; r++) {
        h->blk_counts[r] = count;
        h->blk_displs[r] = r * count;
    }
}

/* The cached schedule of this call's collective for @count elements (rooted
 * collectives: at the call's root). */
static mxh_status_t get_sched(mxh_coll_args_t *a, size_t count, const mxh_sched_t **sched)
{
    int root = mxh_coll_info(a->coll)->rooted ? a->root : -1;
    return mxh_hier_sched(a->hier, a->coll, count, root, a->tsize, &a->choice, sched);
}

/* The shared-memory path of the collectives of one count (allreduce, bcast,
 * reduce): @n elements of @dt, a->tsize bytes each (the call's own, or its
 * view's: coll.h, vdt). */
static mxh_status_t shm_allreduce(const mxh_coll_args_t *a, const void *sendbuf, void *recvbuf,
                                  size_t n, MPI_Datatype dt)
{
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    return mxh_shm_allreduce(a->hier->shm_all, in, recvbuf, n, dt, a->tsize, a->mpi_op);
}

static mxh_status_t shm_bcast(const mxh_coll_args_t *a, const void *sendbuf, void *recvbuf,
                              size_t n, MPI_Datatype dt)
{
    (void)sendbuf;
    (void)dt;
    return mxh_shm_bcast(a->hier->shm_all, recvbuf, n, a->tsize, a->root);
}

static mxh_status_t shm_reduce(const mxh_coll_args_t *a, const void *sendbuf, void *recvbuf,
                               size_t n, MPI_Datatype dt)
{
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    return mxh_shm_reduce(a->hier->shm_all, in, a->rank == a->root ? recvbuf : NULL, n, dt,
                          a->tsize, a->mpi_op, a->root);
}

static mxh_status_t hier_allreduce(mxh_coll_args_t *a, const void *sendbuf, void *recvbuf)
{
    mxh_hier_t *h = a->hier;
    const mxh_sched_t *sched;
    mxh_status_t st;

    if (a->path == MXH_PATH_SHM)
        return shm_allreduce(a, sendbuf, recvbuf, (size_t)a->count, a->dt);
    if (a->path == MXH_PATH_RAILX)
        return mxh_xrail_allreduce(h, sendbuf, recvbuf, a->count, a->dt, a->tsize, a->mpi_op,
                                   &a->mpi_rc);
    if ((st = get_sched(a, (size_t)a->count, &sched)) != MXH_OK)
        return st;
    frag_io_t io = {sendbuf, NULL, 0, 0, 0};
    return run_sched_io(a, sched, recvbuf, a->mpi_op,
                        sendbuf != MPI_IN_PLACE ? frag_copy_in : NULL, NULL, &io);
}

static mxh_status_t hier_rsb(mxh_coll_args_t *a, const void *sendbuf, void *recvbuf)
{
    mxh_hier_t *h = a->hier;
    size_t block  = (size_t)a->count * a->tsize;
    const char *in = sendbuf == MPI_IN_PLACE ? (const char *)recvbuf : (const char *)sendbuf;
    const mxh_sched_t *sched;
    mxh_status_t st;

    if (a->path == MXH_PATH_SHM) {
        /* in place, rank r's result lands on block 0 of its own input: only rank 0
         * may write straight into it */
        char *out = sendbuf == MPI_IN_PLACE && a->rank != 0 ? mxh_hier_scratch(h, block)
                                                             : recvbuf;
        if (out == NULL)
            return no_memory(block);
        block_parts(h, a->count);
        st = mxh_shm_reduce_scatter(h->shm_all, in, out, h->blk_counts, h->blk_displs, a->dt,
                                    a->tsize, a->mpi_op);
        if (st == MXH_OK && out != recvbuf)
            mxh_copy(recvbuf, out, block);
        return st;
    }
    if ((st = get_sched(a, (size_t)a->count, &sched)) != MXH_OK)
        return st;
    char *work = mxh_hier_scratch(h, block * (size_t)a->size);
    if (work == NULL)
        return no_memory(block * (size_t)a->size);
    frag_io_t io = {in, NULL, block, a->size, a->rank};
    st = run_sched_io(a, sched, work, a->mpi_op, frag_pack_all, NULL, &io);
    if (st == MXH_OK)
        unpack_block(sched, work, a->rank, recvbuf, a->tsize);
    return st;
}

static mxh_status_t hier_allgather(mxh_coll_args_t *a, const void *sendbuf, void *recvbuf)
{
    mxh_hier_t *h = a->hier;
    size_t block  = (size_t)a->count * a->tsize;
    const char *mine = sendbuf == MPI_IN_PLACE ? (const char *)recvbuf + (size_t)a->rank * block
                                               : (const char *)sendbuf;
    const mxh_sched_t *sched;
    mxh_status_t st;

    if (a->path == MXH_PATH_SHM) {
        block_parts(h, a->count);
        return mxh_shm_allgather(h->shm_all, mine, recvbuf, h->blk_counts, h->blk_displs, a->dt,
                                 a->tsize);
    }
    if ((st = get_sched(a, (size_t)a->count, &sched)) != MXH_OK)
        return st;
    int identity = sched->nfrag == 1;
    for (int d = 0; d < a->size && identity; d++)
        identity = sched->plan->block_pos[d] == d;
    char *work = identity ? (char *)recvbuf : mxh_hier_scratch(h, block * (size_t)a->size);
    if (work == NULL)
        return no_memory(block * (size_t)a->size);
    frag_io_t io = {mine, recvbuf, block, a->size, a->rank};
    if (identity && work + (size_t)a->rank * block != mine)
        mxh_copy(work + (size_t)a->rank * block, mine, block);
    return run_sched_io(a, sched, work, MPI_OP_NULL, identity ? NULL : frag_pack_mine,
                        identity ? NULL : frag_unpack_all, &io);
}

static mxh_status_t hier_bcast(mxh_coll_args_t *a, const void *sendbuf, void *buffer)
{
    (void)sendbuf; /* MPI_IN_PLACE */
    const mxh_sched_t *sched;
    mxh_status_t st;

    if (a->path == MXH_PATH_SHM)
        return shm_bcast(a, MPI_IN_PLACE, buffer, (size_t)a->count, a->dt);
    if ((st = get_sched(a, (size_t)a->count, &sched)) != MXH_OK)
        return st;
    return run_sched_io(a, sched, buffer, MPI_OP_NULL, NULL, NULL, NULL);
}

static mxh_status_t hier_reduce(mxh_coll_args_t *a, const void *sendbuf, void *recvbuf)
{
    mxh_hier_t *h = a->hier;
    size_t bytes  = (size_t)a->count * a->tsize;
    const mxh_sched_t *sched;
    mxh_status_t st;

    if (a->path == MXH_PATH_SHM)
        return shm_reduce(a, sendbuf, recvbuf, (size_t)a->count, a->dt);
    if ((st = get_sched(a, (size_t)a->count, &sched)) != MXH_OK)
        return st;
    void *work = recvbuf;
    if (a->rank != a->root) {
        work = mxh_hier_scratch(h, bytes);
        if (work == NULL)
            return no_memory(bytes);
    }
    frag_io_t io = {sendbuf, NULL, 0, 0, 0};
    return run_sched_io(a, sched, work, a->mpi_op, sendbuf != MPI_IN_PLACE ? frag_copy_in : NULL,
                        NULL, &io);
}

/* @count elements of @dt at @buf <-> their dense form at @dense (@bytes). */
static int pack_dense(const void *buf, size_t count, MPI_Datatype dt, char *dense, size_t bytes)
{
    int pos = 0;
    if (count == 0)
        return MPI_SUCCESS;
    return MPI_Pack(buf, (int)count, dt, dense, (int)bytes, &pos, MPI_COMM_SELF);
}

static int unpack_dense(const char *dense, size_t bytes, void *buf, size_t count, MPI_Datatype dt)
{
    int pos = 0;
    if (count == 0)
        return MPI_SUCCESS;
    return MPI_Unpack(dense, (int)bytes, &pos, buf, (int)count, dt, MPI_COMM_SELF);
}

/* ---- v-collectives: the block plans with per-rank block sizes ----------------------------- */

/* The v-schedule for blocks of @counts[r] view elements (pipelined when the
 * choice says so and the blocks allow it), the communicator's last one when
 * the counts and the fragments are the same. */
static mxh_status_t get_vsched(mxh_coll_args_t *a, const size_t *counts,
                               const mxh_sched_t **sched)
{
    mxh_hier_t *h = a->hier;
    size_t n      = (size_t)h->size;
    int pipe      = a->choice.algo == MXH_ALGO_PIPELINE;
    int nfrag     = pipe ? mxh_sched_v_frags(counts, (int)n, a->tsize, a->choice.frag_bytes) : 1;
    int depth     = pipe ? a->choice.depth : 0;
    mxh_sched_t *s;
    mxh_status_t st;

    if (h->vsched != NULL && h->vsched->coll == a->coll && h->vsched->nfrag == nfrag &&
        h->vsched->depth == depth && h->vsched->tsize == a->tsize &&
        memcmp(h->vsched_counts, counts, n * sizeof(size_t)) == 0) {
        *sched = h->vsched;
        return MXH_OK;
    }
    if (h->vsched_counts == NULL && (h->vsched_counts = malloc(n * sizeof(size_t))) == NULL)
        return no_memory(n * sizeof(size_t));
    st = mxh_sched_create_v(h->layout, h->rank, a->coll, counts, a->tsize, nfrag, depth, &s);
    if (st != MXH_OK)
        return st;
    mxh_hier_tune(h, s, 0);
    mxh_sched_destroy(h->vsched);
    h->vsched = s;
    memcpy(h->vsched_counts, counts, n * sizeof(size_t));
    *sched = s;
    return MXH_OK;
}

/* Run a v-schedule on @work; @in/@out (or NULL) move a fragment's pieces as
 * the executor admits and retires it (overlapping the other fragments'
 * transfers), @arg: their v_io_t. */
static mxh_status_t run_vsched(mxh_coll_args_t *a, const mxh_sched_t *sched, void *work,
                               mxh_frag_fn in, mxh_frag_fn out, void *arg)
{
    mxh_coll_args_t v = *a;
    mxh_status_t st;
    v.dt = a->vdt;
    st   = run_sched_io(&v, sched, work, a->mpi_op, in, out, arg);
    a->mpi_rc = v.mpi_rc;
    return st;
}

/* The pieces of a v-schedule's work buffer: for each fragment, for each block in
 * block_pos order (@at: the rank at each position), @fn(arg, block, first
 * element of the piece in its block, its work offset, its length). */
typedef void (*v_piece_fn)(void *arg, int d, size_t boff, size_t woff, size_t len);
/* The pieces of fragment @f. */
static void v_frag_pieces(const mxh_sched_t *s, const int *at, int f, v_piece_fn fn, void *arg)
{
    int n       = s->nranks;
    size_t woff = s->vfrag_off[f];
    for (int p = 0; p < n; p++) {
        int d      = at[p];
        size_t q   = s->vpiece[d];
        size_t len = f < s->nfrag - 1 ? q : s->vpiece[n + d];
        if (len > 0)
            fn(arg, d, (size_t)f * q, woff, len);
        woff += len;
    }
}

static void v_pieces(const mxh_sched_t *s, const int *at, v_piece_fn fn, void *arg)
{
    for (int f = 0; f < s->nfrag; f++)
        v_frag_pieces(s, at, f, fn, arg);
}

/* The rank at each block position of @sched (caller frees). */
static int *v_order(const mxh_sched_t *sched)
{
    int n = sched->nranks, *at = malloc((size_t)n * sizeof(int));
    if (at != NULL)
        for (int j = 0; j < n; j++)
            at[sched->plan->block_pos[j]] = j;
    return at;
}

/* Per-rank counts in view elements (and, in @pref, where each rank's block
 * starts when the blocks lie back to back in rank order). */
static size_t *v_counts(mxh_coll_args_t *a, size_t *pref)
{
    size_t n = (size_t)a->size, *c = malloc(n * sizeof(size_t));
    if (c == NULL)
        return NULL;
    for (size_t j = 0; j < n; j++) {
        c[j] = (size_t)a->rcounts[j] * a->vn;
        if (pref)
            pref[j + 1] = pref[j] + c[j];
    }
    return c;
}

/* Moving v-schedule pieces: the work buffer, my block (allgatherv) or the
 * input in rank order (reduce_scatter), the results buffer with each block's
 * byte offset in it, me, bytes per element. */
typedef struct v_io {
    char       *work;
    const char *in;
    char       *out;
    const size_t *bdisp;
    int         me;
    size_t      ts;
    /* even blocks (v_even): the schedule's block d is [V[d], V[d+1]) of the
     * whole vector, whose real blocks are [P[j], P[j+1]); NULL: d is real */
    const size_t *V, *P;
    int         n;
    const int  *at;   /* the rank at each block position */
} v_io_t;

static void v_mine_in(void *arg, int d, size_t boff, size_t woff, size_t len)
{
    v_io_t *io = arg;
    if (d == io->me && io->work + woff * io->ts != io->in + boff * io->ts)
        memmove(io->work + woff * io->ts, io->in + boff * io->ts, len * io->ts);
}

/* The real block holding element @g of the whole vector (binary search in P). */
static int v_real_block(const v_io_t *io, size_t g)
{
    int lo = 0, hi = io->n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (io->P[mid] <= g)
            lo = mid;
        else
            hi = mid - 1;
    }
    while (lo < io->n - 1 && io->P[lo + 1] <= g) /* empty blocks */
        lo++;
    return lo;
}

static void v_all_out(void *arg, int d, size_t boff, size_t woff, size_t len)
{
    v_io_t *io = arg;
    if (io->V == NULL) {
        memcpy(io->out + io->bdisp[d] + boff * io->ts, io->work + woff * io->ts, len * io->ts);
        return;
    }
    for (size_t g = io->V[d] + boff, end = g + len; g < end;) {
        int j     = v_real_block(io, g);
        size_t nj = (io->P[j + 1] < end ? io->P[j + 1] : end) - g;
        memcpy(io->out + io->bdisp[j] + (g - io->P[j]) * io->ts,
               io->work + (woff + (g - io->V[d] - boff)) * io->ts, nj * io->ts);
        g += nj;
    }
}

static void v_all_in(void *arg, int d, size_t boff, size_t woff, size_t len)
{
    v_io_t *io = arg;
    size_t at = io->V != NULL ? io->V[d] * io->ts : io->bdisp[d]; /* input in rank order */
    memcpy(io->work + woff * io->ts, io->in + at + boff * io->ts, len * io->ts);
}

/* Uneven blocks load the links of a ring or a rail step unevenly (each step as
 * slow as its largest block: 1.5 x for blocks of 0.5, 1, 1.5 x the mean). The
 * schedules then run on even blocks of the whole vector instead (V[r] = T r /
 * p): the data moves between the real and the even layout point to point
 * first (allgatherv) or last (reduce_scatter), mostly between neighbouring
 * ranks (block r of both layouts overlap), T / p per rank at most. Agreed:
 * the counts are. */
static int v_even(const size_t *cnt, size_t total, int n)
{
    size_t most = 0;
    for (int j = 0; j < n; j++)
        most = cnt[j] > most ? cnt[j] : most;
    return most > (total + (size_t)n - 1) / (size_t)n;
}

#define MXH_V_EVEN_TAG 1515

/* Even layout of @total elements over @n ranks: V (n + 1 offsets) and the
 * counts (n), in one allocation (V first). */
static size_t *v_even_layout(size_t total, int n, size_t **counts)
{
    size_t *V = malloc((2 * (size_t)n + 1) * sizeof(size_t));
    if (V == NULL)
        return NULL;
    for (int r = 0; r <= n; r++)
        V[r] = total / (size_t)n * (size_t)r + (total % (size_t)n) * (size_t)r / (size_t)n;
    *counts = V + n + 1;
    for (int r = 0; r < n; r++)
        (*counts)[r] = V[r + 1] - V[r];
    return V;
}

/* Between the real layout (rank r holds [P[r], P[r+1]) at @real) and the even
 * one (at @even, [V[r], V[r+1])), in @vdt elements of @ts bytes: to_even moves
 * real -> even, else even -> real. Point to point on the hierarchy's
 * communicator (its collectives run one at a time), with the task waits. */
static mxh_status_t v_rebalance(mxh_coll_args_t *a, const size_t *P, const size_t *V,
                                const char *real, char *even, size_t ts, int to_even)
{
    int n = a->size, me = a->rank, nreq = 0, rc = MPI_SUCCESS;
    MPI_Comm comm = a->hier->comm;
    MPI_Request *reqs = malloc(2 * (size_t)n * sizeof(MPI_Request));
    const size_t *Ms = to_even ? P : V, *Mr = to_even ? V : P; /* my send/recv layouts */
    const char *src  = to_even ? real : even;
    char *dst        = to_even ? even : (char *)real;

    if (reqs == NULL)
        return no_memory(2 * (size_t)n * sizeof(MPI_Request));
    for (int q = 0; q < n && rc == MPI_SUCCESS; q++) {
        /* I receive the part of my range (layout Mr) that q holds in layout Ms */
        size_t lo = Mr[me] > Ms[q] ? Mr[me] : Ms[q], hi = Mr[me + 1] < Ms[q + 1] ? Mr[me + 1] : Ms[q + 1];
        if (lo < hi && q != me)
            rc = MPI_Irecv(dst + (lo - Mr[me]) * ts, (int)(hi - lo), a->vdt, q, MXH_V_EVEN_TAG,
                           comm, &reqs[nreq++]);
    }
    for (int q = 0; q < n && rc == MPI_SUCCESS; q++) {
        size_t lo = Ms[me] > Mr[q] ? Ms[me] : Mr[q], hi = Ms[me + 1] < Mr[q + 1] ? Ms[me + 1] : Mr[q + 1];
        if (lo >= hi)
            continue;
        if (q == me)
            memmove(dst + (lo - Mr[me]) * ts, src + (lo - Ms[me]) * ts, (hi - lo) * ts);
        else
            rc = mxh_isend(src + (lo - Ms[me]) * ts, (int)(hi - lo), a->vdt, q, MXH_V_EVEN_TAG,
                           comm, &reqs[nreq++]);
    }
    if (nreq > 0) {
        int wrc = mxh_task_wait_all(nreq, reqs, MPI_STATUSES_IGNORE);
        if (rc == MPI_SUCCESS)
            rc = wrc;
    }
    free(reqs);
    if (rc != MPI_SUCCESS) {
        a->mpi_rc = rc;
        mxh_error("%s: moving blocks to even blocks failed", a->func);
        return MXH_ERR_MPI;
    }
    return MXH_OK;
}

static void v_mine_out(void *arg, int d, size_t boff, size_t woff, size_t len)
{
    v_io_t *io = arg;
    if (d == io->me)
        memcpy(io->out + boff * io->ts, io->work + woff * io->ts, len * io->ts);
}

/* Executor fragment functions (exec.h: mxh_frag_fn): a fragment's pieces in one
 * go (the first call does the whole job); @all: every block's pieces are
 * copied, charged in the simulation. */
static size_t v_frag_move(void *arg, const mxh_sched_t *s, int f, size_t off, v_piece_fn fn,
                          int all)
{
    v_io_t *io = arg;
    if (off == 0) {
        v_frag_pieces(s, io->at, f, fn, io);
        if (all)
            mxh_copy_charge((s->vfrag_off[f + 1] - s->vfrag_off[f]) * io->ts);
    }
    return 0;
}

static size_t v_frag_all_out(void *arg, const mxh_sched_t *s, int f, char *work, size_t off,
                             size_t max)
{
    (void)work;
    (void)max;
    return v_frag_move(arg, s, f, off, v_all_out, 1);
}

static size_t v_frag_all_in(void *arg, const mxh_sched_t *s, int f, char *work, size_t off,
                            size_t max)
{
    (void)work;
    (void)max;
    return v_frag_move(arg, s, f, off, v_all_in, 1);
}

static size_t v_frag_mine_out(void *arg, const mxh_sched_t *s, int f, char *work, size_t off,
                              size_t max)
{
    (void)work;
    (void)max;
    return v_frag_move(arg, s, f, off, v_mine_out, 0);
}

/* allgatherv: my block into the work buffer (blocks in block_pos order), the
 * allgather plan, every block out to recvbuf at its displacement. */
static mxh_status_t hier_allgatherv(mxh_coll_args_t *a, const void *s, void *r)
{
    mxh_hier_t *h = a->hier;
    int n = a->size, me = a->rank;
    int rdense = !a->vpack || mxh_dtype_dense(a->dt);
    MPI_Aint lb, ext;
    size_t *pref = calloc((size_t)n + 1, sizeof(size_t)), *cnt = NULL;
    char *mine_buf = NULL, *work = NULL;
    const char *mine;
    mxh_status_t st = MXH_OK;

    MPI_Type_get_extent(a->dt, &lb, &ext);
    if (pref == NULL || (cnt = v_counts(a, pref)) == NULL) {
        free(pref);
        return no_memory((size_t)n * sizeof(size_t));
    }
    /* my block, dense */
    if (s == MPI_IN_PLACE) {
        mine = (const char *)r + (MPI_Aint)a->rdispls[me] * ext;
        if (!rdense && cnt[me] > 0) {
            if ((mine_buf = malloc(cnt[me])) == NULL)
                st = MXH_ERR_NO_MEMORY;
            else if (pack_dense(mine, (size_t)a->rcounts[me], a->dt, mine_buf, cnt[me]) !=
                     MPI_SUCCESS)
                st = MXH_ERR_MPI;
            mine = mine_buf;
        }
    } else {
        mine = s;
        if (a->vpack && !mxh_dtype_dense(a->sendtype) && cnt[me] > 0) {
            if ((mine_buf = malloc(cnt[me])) == NULL)
                st = MXH_ERR_NO_MEMORY;
            else if (pack_dense(s, (size_t)a->sendcount, a->sendtype, mine_buf, cnt[me]) !=
                     MPI_SUCCESS)
                st = MXH_ERR_MPI;
            mine = mine_buf;
        }
    }
    if (st != MXH_OK) {
        /* the peers are in the collective: take part with a block of zeros */
        mxh_error("%s: cannot pack my block", a->func);
        free(mine_buf);
        if ((mine_buf = calloc(1, cnt[me] + 1)) == NULL)
            goto out;
        mine = mine_buf;
    }
    if (a->path == MXH_PATH_SHM) {
        int *c = h->blk_counts, *d = h->blk_displs;
        for (int j = 0; j < n; j++) {
            c[j] = (int)cnt[j];
            d[j] = rdense ? (int)((MPI_Aint)a->rdispls[j] * ext) : (int)pref[j];
        }
        work = rdense ? r : mxh_hier_scratch(h, pref[n]);
        if (work == NULL) {
            st = no_memory(pref[n]);
            goto out;
        }
        st = mxh_shm_allgather(h->shm_all, mine, work, c, d, MPI_BYTE, 1);
        if (st == MXH_OK && !rdense)
            for (int j = 0; j < n && st == MXH_OK; j++)
                if (unpack_dense(work + pref[j], cnt[j], (char *)r + (MPI_Aint)a->rdispls[j] * ext,
                                 (size_t)a->rcounts[j], a->dt) != MPI_SUCCESS)
                    st = MXH_ERR_MPI;
        goto out;
    }
    {
        const mxh_sched_t *sched;
        int direct, *at = NULL;
        char *dense = NULL, *evenbuf = NULL;
        size_t *V = NULL, *ecnt = NULL;
        if (v_even(cnt, pref[n], n)) {
            if ((V = v_even_layout(pref[n], n, &ecnt)) == NULL ||
                (evenbuf = malloc(ecnt[me] + 1)) == NULL) {
                free(V);
                st = no_memory(pref[n]);
                goto out;
            }
            /* my even block first: the peers wait for it */
            if ((st = v_rebalance(a, pref, V, mine, evenbuf, 1, 1)) != MXH_OK) {
                free(V);
                free(evenbuf);
                goto out;
            }
        }
        if ((st = get_vsched(a, V ? ecnt : cnt, &sched)) != MXH_OK) {
            free(V);
            free(evenbuf);
            goto out;
        }
        /* recvbuf itself is the work buffer when its blocks lie back to back in
         * block_pos order (one fragment) */
        direct = rdense && sched->nfrag == 1 && V == NULL;
        for (int j = 0; j < n && direct; j++)
            direct = sched->plan->block_pos[j] == j &&
                     (size_t)a->rdispls[j] * (size_t)ext == pref[j];
        work = direct ? r : mxh_hier_scratch(h, pref[n]);
        if (!rdense)
            dense = malloc(pref[n] + 1);
        size_t *bdisp = malloc((size_t)n * sizeof(size_t));
        if (work == NULL || (at = v_order(sched)) == NULL || (!rdense && dense == NULL) ||
            bdisp == NULL) {
            free(at);
            free(dense);
            free(bdisp);
            free(V);
            free(evenbuf);
            st = no_memory(pref[n]);
            goto out;
        }
        for (int j = 0; j < n; j++)
            bdisp[j] = rdense ? (size_t)((MPI_Aint)a->rdispls[j] * ext) : pref[j];
        v_io_t io = {work, V ? evenbuf : mine, rdense ? (char *)r : dense, bdisp, me, 1,
                     V, pref, n, at};
        v_pieces(sched, at, v_mine_in, &io);
        st = run_vsched(a, sched, work, NULL, direct ? NULL : v_frag_all_out, &io);
        for (int j = 0; j < n && st == MXH_OK && !rdense; j++)
            if (unpack_dense(dense + pref[j], cnt[j], (char *)r + (MPI_Aint)a->rdispls[j] * ext,
                             (size_t)a->rcounts[j], a->dt) != MPI_SUCCESS)
                st = MXH_ERR_MPI;
        free(bdisp);
        free(dense);
        free(at);
        free(V);
        free(evenbuf);
    }
out:
    free(mine_buf);
    free(cnt);
    free(pref);
    return st;
}

/* reduce_scatter: the input blocks (rank order in sendbuf) into the work
 * buffer in block_pos order, the reduce_scatter plan, my block out. */
static mxh_status_t hier_reduce_scatter(mxh_coll_args_t *a, const void *s, void *r)
{
    mxh_hier_t *h = a->hier;
    int n = a->size, me = a->rank, dense = !a->vpack;
    size_t ts = a->tsize, total;
    size_t *pref = calloc((size_t)n + 1, sizeof(size_t)), *cnt = NULL;
    const char *in = s == MPI_IN_PLACE ? (const char *)r : (const char *)s;
    char *packed = NULL, *out = NULL;
    mxh_status_t st = MXH_OK;

    if (pref == NULL || (cnt = v_counts(a, pref)) == NULL) {
        free(pref);
        return no_memory((size_t)n * sizeof(size_t));
    }
    total = pref[n];
    if (!dense) {
        size_t user = v_total(a->rcounts, n);
        if ((packed = malloc(total * ts)) == NULL ||
            pack_dense(in, user, a->dt, packed, total * ts) != MPI_SUCCESS) {
            mxh_error("%s: cannot pack the input", a->func);
            st = MXH_ERR_NO_MEMORY;
            if (packed == NULL && (packed = calloc(total, ts)) == NULL)
                goto out; /* cannot even take part */
        }
        in = packed;
    }
    if (a->path == MXH_PATH_SHM) {
        int *c = h->blk_counts, *d = h->blk_displs;
        for (int j = 0; j < n; j++) {
            c[j] = (int)cnt[j];
            d[j] = (int)pref[j];
        }
        /* in place, my result lands at the start of my own input: only rank 0's
         * part is already there */
        out = dense && (s != MPI_IN_PLACE || me == 0) ? r : mxh_hier_scratch(h, cnt[me] * ts);
        if (out == NULL) {
            st = no_memory(cnt[me] * ts);
            goto out;
        }
        mxh_status_t run = mxh_shm_reduce_scatter(h->shm_all, in, out, c, d, a->vdt, ts,
                                                  a->mpi_op);
        if (st == MXH_OK)
            st = run;
    } else {
        const mxh_sched_t *sched;
        mxh_status_t run;
        char *work, *evenbuf = NULL;
        int *at = NULL;
        size_t *V = NULL, *ecnt = NULL;
        if (v_even(cnt, total, n) &&
            ((V = v_even_layout(total, n, &ecnt)) == NULL ||
             (evenbuf = malloc(ecnt[me] * ts + 1)) == NULL)) {
            free(V);
            st = no_memory(total * ts);
            goto out;
        }
        if ((run = get_vsched(a, V ? ecnt : cnt, &sched)) != MXH_OK) {
            free(V);
            free(evenbuf);
            st = run;
            goto out;
        }
        work = mxh_hier_scratch(h, total * ts);
        out  = dense ? r : malloc(cnt[me] * ts + 1);
        size_t *bdisp = malloc((size_t)n * sizeof(size_t));
        if (work == NULL || out == NULL || (at = v_order(sched)) == NULL || bdisp == NULL) {
            if (out != r)
                free(out);
            free(at);
            free(bdisp);
            free(V);
            free(evenbuf);
            st = no_memory(total * ts);
            goto out;
        }
        for (int j = 0; j < n; j++)
            bdisp[j] = pref[j] * ts;
        v_io_t io = {work, in, V ? evenbuf : out, bdisp, me, ts, V, pref, n, at};
        /* in place the results overwrite the input: it all goes in first */
        int in_first = s == MPI_IN_PLACE && !V && dense;
        if (in_first) {
            v_pieces(sched, at, v_all_in, &io);
            mxh_copy_charge(total * ts);
        }
        run = run_vsched(a, sched, work, in_first ? NULL : v_frag_all_in, v_frag_mine_out, &io);
        if (st == MXH_OK)
            st = run;
        /* my even block to the ranks whose real blocks it holds (every rank
         * takes part, whatever happened here: the peers wait for it) */
        if (V != NULL) {
            run = v_rebalance(a, pref, V, out, evenbuf, ts, 0);
            if (st == MXH_OK)
                st = run;
        }
        free(bdisp);
        free(at);
        free(V);
        free(evenbuf);
        if (!dense) {
            if (st == MXH_OK &&
                unpack_dense(out, cnt[me] * ts, r, (size_t)a->rcounts[me], a->dt) != MPI_SUCCESS)
                st = MXH_ERR_MPI;
            free(out);
        }
        out = r; /* done */
    }
    if (st == MXH_OK && out != r) {
        if (dense)
            memmove(r, out, cnt[me] * ts);
        else if (unpack_dense(out, cnt[me] * ts, r, (size_t)a->rcounts[me], a->dt) != MPI_SUCCESS)
            st = MXH_ERR_MPI;
    }
out:
    free(packed);
    free(cnt);
    free(pref);
    return st;
}

/* ---- all-to-all: rail-aligned, aggregated per node (coll/alltoall.h) ---------------------- */

/* alltoall in the view (bytes, dense): block p of @count bytes at p * count.
 * One node, small messages (select.c): every rank's whole send buffer is
 * gathered through shared memory and each rank takes its column (p times the
 * data, but one exchange instead of p - 1 messages). */
static mxh_status_t hier_alltoall(mxh_coll_args_t *a, const void *s, void *r)
{
    mxh_hier_t *h = a->hier;
    if (a->path == MXH_PATH_SHM) {
        size_t blk = (size_t)a->count, row = blk * (size_t)a->size;
        char *all  = mxh_hier_scratch(h, row * (size_t)a->size);
        mxh_status_t st;
        if (all == NULL)
            return no_memory(row * (size_t)a->size);
        block_parts(h, (int)row);
        st = mxh_shm_allgather(h->shm_all, s == MPI_IN_PLACE ? r : s, all, h->blk_counts,
                               h->blk_displs, MPI_BYTE, 1);
        if (st != MXH_OK)
            return st;
        for (int q = 0; q < a->size; q++)
            memcpy((char *)r + (size_t)q * blk, all + (size_t)q * row + (size_t)a->rank * blk, blk);
        mxh_copy_charge(row);
        return MXH_OK;
    }
    return mxh_alltoall_hier(h, s == MPI_IN_PLACE ? NULL : s, r, (size_t)a->count);
}

/* alltoallv: byte counts and displacements; blocks of types with holes are
 * packed into dense scratch (send) and unpacked from it (receive). */
static mxh_status_t hier_alltoallv(mxh_coll_args_t *a, const void *s, void *r)
{
    int n = a->size, in_place = s == MPI_IN_PLACE;
    MPI_Datatype stype = in_place ? a->dt : a->sendtype;
    const int *sc = in_place ? a->rcounts : a->scounts, *sd = in_place ? a->rdispls : a->sdispls;
    int sdense = mxh_dtype_dense(stype), rdense = mxh_dtype_dense(a->dt);
    MPI_Aint lb, sext, rext;
    size_t *v = malloc(4 * (size_t)n * sizeof(size_t)), stot = 0, rtot = 0;
    char *sbuf = NULL, *rbuf = NULL;
    mxh_status_t st = MXH_OK;

    if (v == NULL)
        return no_memory(4 * (size_t)n * sizeof(size_t));
    size_t *scnt = v, *sdsp = v + n, *rcnt = v + 2 * n, *rdsp = v + 3 * n;
    MPI_Type_get_extent(stype, &lb, &sext);
    MPI_Type_get_extent(a->dt, &lb, &rext);
    for (int p = 0; p < n; p++) {
        scnt[p] = (size_t)sc[p] * a->vsn;
        rcnt[p] = (size_t)a->rcounts[p] * a->vn;
        sdsp[p] = sdense ? (size_t)((MPI_Aint)sd[p] * sext) : stot;
        rdsp[p] = rdense ? (size_t)((MPI_Aint)a->rdispls[p] * rext) : rtot;
        stot += scnt[p];
        rtot += rcnt[p];
    }
    if (in_place) /* the data to send sits in recvbuf, with recvbuf's layout */
        sdense = rdense;
    if (!sdense && !in_place) {
        if ((sbuf = malloc(stot + 1)) == NULL)
            st = MXH_ERR_NO_MEMORY;
        for (int p = 0; p < n && st == MXH_OK; p++)
            if (pack_dense((const char *)s + (MPI_Aint)sd[p] * sext, (size_t)sc[p], stype,
                           sbuf + sdsp[p], scnt[p]) != MPI_SUCCESS)
                st = MXH_ERR_MPI;
    }
    if (!rdense) {
        if ((rbuf = calloc(1, rtot + 1)) == NULL)
            st = MXH_ERR_NO_MEMORY;
        for (int p = 0; p < n && st == MXH_OK && in_place; p++) /* in place: the input too */
            if (pack_dense((const char *)r + (MPI_Aint)a->rdispls[p] * rext,
                           (size_t)a->rcounts[p], a->dt, rbuf + rdsp[p], rcnt[p]) != MPI_SUCCESS)
                st = MXH_ERR_MPI;
    }
    if (st != MXH_OK) {
        mxh_error("%s: cannot pack the blocks of a datatype with holes", a->func);
        free(sbuf);
        free(rbuf);
        free(v);
        return st; /* the same on every rank only if memory runs out everywhere */
    }
    st = mxh_alltoallv_hier(a->hier, in_place ? NULL : (sbuf ? sbuf : (const char *)s),
                            in_place ? NULL : scnt, in_place ? NULL : sdsp,
                            rbuf ? rbuf : (char *)r, rcnt, rdsp);
    for (int p = 0; p < n && st == MXH_OK && rbuf != NULL; p++)
        if (unpack_dense(rbuf + rdsp[p], rcnt[p], (char *)r + (MPI_Aint)a->rdispls[p] * rext,
                         (size_t)a->rcounts[p], a->dt) != MPI_SUCCESS)
            st = MXH_ERR_MPI;
    free(sbuf);
    free(rbuf);
    free(v);
    return st;
}

static mxh_status_t run_hier(mxh_coll_args_t *a, const void *s, void *r)
{
    return ops_of(a)->body(a, s, r);
}

static buf_use_t buf_use(const mxh_coll_args_t *a);

/* The hierarchical path on the view of the data (coll.h: vdt): the same call
 * in bytes or basic elements; buffers of a type with holes go through dense
 * mirrors (MPI's pack format is the data back to back on a homogeneous
 * system). */
static mxh_status_t run_view(mxh_coll_args_t *a, const void *s, void *r)
{
    const mxh_coll_desc_t *ci = mxh_coll_info(a->coll);
    mxh_coll_args_t v;
    mxh_status_t st = MXH_OK;
    char *sm = NULL, *rm = NULL;
    size_t sbytes = 0, rbytes = 0;

    if (ci->vector || (a->vdt == a->dt && a->vn == 1 && !a->vpack &&
                       (!ci->sendtype || a->sendtype == a->dt)))
        return run_hier(a, s, r); /* v-collectives view their blocks themselves */
    v           = *a;
    v.dt        = a->vdt;
    v.sendtype  = a->vdt;
    v.count     = (int)((size_t)a->count * a->vn);
    v.sendcount = (int)((size_t)a->sendcount * a->vsn);
    if (a->vpack) {
        buf_use_t u;
        MPI_Datatype stype = ci->sendtype ? a->sendtype : a->dt;
        int rc = MPI_SUCCESS;
        u      = buf_use(a);
        sbytes = u.send_count * a->vsn * a->tsize;
        rbytes = u.recv_count * a->vn * a->tsize;
        if (u.send_count > 0 && (sm = malloc(sbytes)) == NULL)
            st = MXH_ERR_NO_MEMORY;
        if (u.recv_count > 0 && (rm = malloc(rbytes)) == NULL)
            st = MXH_ERR_NO_MEMORY;
        if (st == MXH_OK && sm != NULL)
            rc = pack_dense(s, u.send_count, stype, sm, sbytes);
        if (st == MXH_OK && rm != NULL && u.recv_in && rc == MPI_SUCCESS)
            rc = pack_dense(r, u.recv_count, a->dt, rm, rbytes);
        if (rc != MPI_SUCCESS)
            st = MXH_ERR_MPI;
        if (st != MXH_OK) {
            /* the peers are in the collective: this rank still takes part */
            mxh_error("%s: cannot pack the buffers of a datatype with holes", a->func);
            free(sm);
            free(rm);
            sm = rm = NULL;
            if (u.send_count > 0 && (sm = calloc(1, sbytes)) == NULL)
                return MXH_ERR_NO_MEMORY;
            if (u.recv_count > 0 && (rm = calloc(1, rbytes)) == NULL) {
                free(sm);
                return MXH_ERR_NO_MEMORY;
            }
        }
        mxh_status_t run = run_hier(&v, s == MPI_IN_PLACE ? s : sm, rm);
        if (st == MXH_OK)
            st = run;
        if (st == MXH_OK && rm != NULL && u.recv_out &&
            unpack_dense(rm, rbytes, r, u.recv_count, a->dt) != MPI_SUCCESS) {
            mxh_error("%s: cannot unpack the results", a->func);
            st = MXH_ERR_MPI;
        }
        free(sm);
        free(rm);
    } else {
        st = run_hier(&v, s, r);
    }
    a->mpi_rc = v.mpi_rc;
    return st;
}

/* The path on host buffers @s and @r (the user's, or their staging mirrors). */
static mxh_status_t run_host(mxh_coll_args_t *a, const void *s, void *r)
{
    switch (a->path) {
    case MXH_PATH_NONE:
        return MXH_OK;
    case MXH_PATH_PLAIN:
        return run_plain(a, s, r);
    default:
        return run_view(a, s, r);
    }
}

/* ---- staging: buffers of other memory kinds -------------------------------------------------- */

/* A copy through @ops, waiting for its completion (yielding inside a task). */
static mxh_status_t copy_wait(const mxh_mem_ops_t *ops, void *dst, const void *src, size_t n)
{
    mxh_mem_event_t ev;
    mxh_status_t st = ops->copy_start(dst, src, n, &ev);
    int done;

    if (st != MXH_OK)
        return st;
    while ((done = ops->event_test(&ev)) == 0)
        if (mxh_task_in_fiber())
            mxh_task_yield();
    return done > 0 ? MXH_OK : (mxh_status_t)-done;
}

/* What a rank's buffers are in a call: elements of the send buffer (sendtype)
 * and of the receive buffer (dt) that are significant here, and whether the
 * receive buffer is read (in place, bcast root) and written. */

/* Elements a v-collective's buffer spans: the end of its furthest part. */
static size_t v_span(const int *counts, const int *displs, int n)
{
    size_t end = 0;
    for (int i = 0; i < n; i++)
        if (counts[i] > 0 && displs[i] >= 0 && (size_t)displs[i] + (size_t)counts[i] > end)
            end = (size_t)displs[i] + (size_t)counts[i];
    return end;
}

/* Each collective's buffer use, @in_place: sendbuf is MPI_IN_PLACE. The
 * receive buffer is written (recv_out) unless the function says otherwise. */
static void use_allreduce(const mxh_coll_args_t *a, int in_place, buf_use_t *u)
{
    u->send_count = in_place ? 0 : a->count;
    u->recv_count = a->count;
    u->recv_in    = in_place;
}

static void use_rsb(const mxh_coll_args_t *a, int in_place, buf_use_t *u)
{
    u->send_count = in_place ? 0 : a->count * a->size;
    u->recv_count = in_place ? a->count * a->size : a->count;
    u->recv_in    = in_place;
}

static void use_allgather(const mxh_coll_args_t *a, int in_place, buf_use_t *u)
{
    u->send_count = in_place ? 0 : a->sendcount;
    u->recv_count = a->count * a->size;
    u->recv_in    = in_place;
}

static void use_bcast(const mxh_coll_args_t *a, int in_place, buf_use_t *u)
{
    (void)in_place;
    u->recv_count = a->count;
    u->recv_in    = a->rank == a->root;
    u->recv_out   = a->rank != a->root;
}

static void use_reduce(const mxh_coll_args_t *a, int in_place, buf_use_t *u)
{
    u->send_count = in_place ? 0 : a->count;
    u->recv_count = a->rank == a->root ? a->count : 0;
    u->recv_in    = in_place;
}

/* the mirror holds the gaps between blocks too: copied in */
static void use_allgatherv(const mxh_coll_args_t *a, int in_place, buf_use_t *u)
{
    u->send_count = in_place ? 0 : a->sendcount;
    u->recv_count = v_span(a->rcounts, a->rdispls, a->size);
    u->recv_in    = 1;
}

static void use_reduce_scatter(const mxh_coll_args_t *a, int in_place, buf_use_t *u)
{
    u->send_count = in_place ? 0 : v_total(a->rcounts, a->size);
    u->recv_count = in_place ? v_total(a->rcounts, a->size) : (size_t)a->count;
    u->recv_in    = in_place;
}

static void use_alltoall(const mxh_coll_args_t *a, int in_place, buf_use_t *u)
{
    u->send_count = in_place ? 0 : (size_t)a->sendcount * (size_t)a->size;
    u->recv_count = (size_t)a->count * (size_t)a->size;
    u->recv_in    = in_place;
}

/* gaps, as allgatherv */
static void use_alltoallv(const mxh_coll_args_t *a, int in_place, buf_use_t *u)
{
    u->send_count = in_place ? 0 : v_span(a->scounts, a->sdispls, a->size);
    u->recv_count = v_span(a->rcounts, a->rdispls, a->size);
    u->recv_in    = 1;
}

static buf_use_t buf_use(const mxh_coll_args_t *a)
{
    buf_use_t u = {0, 0, 0, 1};

    ops_of(a)->buf_use(a, a->sendbuf == MPI_IN_PLACE, &u);
    /* a mirror of a type with holes is copied back whole: the holes must hold
     * the user's bytes, so it is copied in too */
    if (u.recv_count > 0 && !u.recv_in && u.recv_out && !mxh_dtype_dense(a->dt))
        u.recv_in = 1;
    return u;
}

/* Non-host buffers of this rank are mirrored in host staging memory: copied in
 * before the path runs, results copied back after. The path itself (and so
 * every other rank) cannot tell. */
/* Device bytes through host memory and device bytes reduced by the CPU (metrics). */
static void count_staged(const mxh_coll_args_t *a, size_t staged, size_t cpu_reduced)
{
    if (a->mstats != NULL) {
        a->mstats->staged[a->coll] += staged;
        a->mstats->cpu_reduced[a->coll] += cpu_reduced;
    }
}

/* Allreduce/reduce on a schedule with a buffer of another memory kind: the
 * fragments are staged in and out one by one (stage_io_t). */
static mxh_status_t staged_sched(mxh_coll_args_t *a)
{
    int in_place = a->sendbuf == MPI_IN_PLACE;
    int gets     = !mxh_coll_info(a->coll)->rooted || a->rank == a->root; /* has results */
    size_t bytes = (size_t)a->count * a->tsize;
    const mxh_mem_ops_t *in_ops = in_place ? a->recv_mem : a->send_mem;
    const char *in              = in_place ? (const char *)a->recvbuf : (const char *)a->sendbuf;
    const mxh_sched_t *sched;
    mxh_status_t st;
    char *work;

    if ((st = get_sched(a, (size_t)a->count, &sched)) != MXH_OK)
        return st;
    if (gets && a->recv_mem->kind == MXH_MEM_HOST)
        work = a->recvbuf;
    else if (gets)
        work = mxh_hier_stage(a->hier, a->recv_mem, 1, bytes);
    else
        work = mxh_hier_scratch(a->hier, bytes);
    if (work == NULL)
        return no_memory(bytes);
    stage_io_t sio = {{in, NULL, 0, 0, 0}, in_ops, NULL, NULL, MXH_OK};
    mxh_frag_fn fin = NULL, fout = NULL;
    if (in_ops->kind != MXH_MEM_HOST)
        fin = frag_stage_in;
    else if (in != work)
        fin = frag_copy_in;
    if (gets && a->recv_mem->kind != MXH_MEM_HOST) {
        sio.out     = a->recvbuf;
        sio.out_ops = a->recv_mem;
        fout        = frag_stage_out;
    }
    /* frag_copy_in reads a frag_io_t: the first member of stage_io_t; the schedule
     * reduces the host copy of the device input */
    count_staged(a, (fin == frag_stage_in ? bytes : 0) + (fout != NULL ? bytes : 0),
                 in_ops->kind != MXH_MEM_HOST ? bytes : 0);
    st = run_sched_io(a, sched, work, a->mpi_op, fin, fout, &sio.io);
    return st != MXH_OK ? st : sio.st;
}

/* Staging mirror @which of @bytes: the communicator's pool, or for a call
 * without a hierarchy (plain MPI) a buffer of its own, freed by stage_put. */
static char *stage_get(mxh_coll_args_t *a, const mxh_mem_ops_t *ops, int which, size_t bytes)
{
    if (a->hier != NULL)
        return mxh_hier_stage(a->hier, ops, which, bytes);
    return ops->stage_alloc(bytes ? bytes : 1);
}

static void stage_put(mxh_coll_args_t *a, const mxh_mem_ops_t *ops, char *p, size_t bytes)
{
    if (a->hier == NULL && p != NULL)
        ops->stage_free(p, bytes ? bytes : 1);
}

static mxh_status_t run_staged(mxh_coll_args_t *a)
{
    const mxh_mem_ops_t *sm = a->send_mem, *rm = a->recv_mem;
    buf_use_t u     = buf_use(a);
    const void *s   = a->sendbuf;
    void *r         = a->recvbuf;
    char *rmirror   = NULL, *smirror = NULL;
    size_t rbytes   = 0, sbytes = 0;
    MPI_Aint lb;
    mxh_status_t st = MXH_OK;

    if (sm->hold)
        sm->hold(a->sendbuf);
    if (rm->hold)
        rm->hold(a->recvbuf);
    if (a->path == MXH_PATH_SCHED && ops_of(a)->staged_frags) {
        st = staged_sched(a);
        goto out;
    }
    if (u.send_count > 0 && sm->kind != MXH_MEM_HOST) {
        sbytes  = type_span(mxh_coll_info(a->coll)->sendtype ? a->sendtype : a->dt, u.send_count,
                            &lb);
        smirror = stage_get(a, sm, 0, sbytes);
        st      = smirror ? copy_wait(sm, smirror, (const char *)a->sendbuf + lb, sbytes)
                          : MXH_ERR_NO_MEMORY;
        s = smirror - lb;
    }
    if (st == MXH_OK && u.recv_count > 0 && rm->kind != MXH_MEM_HOST) {
        rbytes  = type_span(a->dt, u.recv_count, &lb);
        rmirror = stage_get(a, rm, 1, rbytes);
        if (rmirror == NULL)
            st = MXH_ERR_NO_MEMORY;
        else if (u.recv_in)
            st = copy_wait(rm, rmirror, (char *)a->recvbuf + lb, rbytes);
        r = rmirror - lb;
    }
    /* a failure above is local: the collective must still run (peers wait in it) */
    count_staged(a, sbytes + (rmirror != NULL ? rbytes * (size_t)(u.recv_in + u.recv_out) : 0),
                 mxh_coll_info(a->coll)->reducing
                     ? (smirror != NULL ? sbytes : rmirror != NULL && u.recv_in ? rbytes : 0)
                     : 0);
    mxh_status_t run = run_host(a, s, r);
    if (st == MXH_OK)
        st = run;
    if (st == MXH_OK && rmirror != NULL && u.recv_out)
        st = copy_wait(rm, (char *)a->recvbuf + lb, rmirror, rbytes);
    stage_put(a, rm, rmirror, rbytes);
    stage_put(a, sm, smirror, sbytes);
out:
    if (rm->release)
        rm->release(a->recvbuf);
    if (sm->release)
        sm->release(a->sendbuf);
    return st;
}

/* Plain MPI may take this rank's device buffers as they are when the MPI
 * underneath says it is CUDA-aware and UCX moves CUDA memory (the transport
 * capabilities of topo/caps.h, queried once, only by processes that pass CUDA
 * memory). The test kind is never direct: it stands for a device that MPI
 * cannot read. */
static int mpi_takes(const mxh_mem_ops_t *m)
{
    const mxh_caps_t *caps;
    if (m->kind == MXH_MEM_HOST)
        return 1;
    if (m->kind != MXH_MEM_CUDA)
        return 0;
    caps = mxh_discover_caps(NULL);
    return mxh_caps_net_direct(caps, NULL, 0);
}

/* The common small call: host buffers of a dense type on one node go
 * straight to shared memory, in the view's elements (what run_view would hand
 * run_hier, without its layers and its copy of the record). */
static int ipc_considered(const mxh_coll_args_t *a);
static inline int shm_direct(const mxh_coll_args_t *a)
{
    /* not when the call tries the device node level: host buffers there too,
     * since only that level's agreement tells whether a peer's are device ones */
    return a->path == MXH_PATH_SHM && !a->staged && !a->vpack && ops_of(a)->shm != NULL &&
           (a->hier->ipc == NULL || !ipc_considered(a));
}

/* ---- the device node level ------------------------------------------------------------------ */

/* Whether the call tries the device node level (exec/ipc.h): agreed facts only
 * (the hierarchy, the collective, its size in the view's bytes); where this
 * rank's buffers live is agreed inside exec/ipc.c, which declines on every
 * rank when one cannot take part. */
static int ipc_considered(const mxh_coll_args_t *a)
{
    size_t bytes = (size_t)a->count * a->vn * a->tsize;

    if (ops_of(a)->ipc == NULL)
        return 0;
    if (mxh_coll_info(a->coll)->blocks)
        bytes *= (size_t)a->size;
    return bytes >= a->hier->ipc_min && (size_t)a->count * a->vn <= INT_MAX;
}

/* The single-node collectives on the device node level. MXH_ERR_UNSUPPORTED
 * (on every rank alike, nothing written): run the other paths instead. */
/* The kind of this rank's buffers when the device node level can take them
 * (one kind that is not host memory, dense), else NULL. Holds them (the test
 * kind: the engine may not touch them); ipc_release undoes it. */
static const mxh_mem_ops_t *ipc_hold(const mxh_coll_args_t *a, buf_use_t u)
{
    const mxh_mem_ops_t *ops = NULL;

    if (a->vpack)
        return NULL;
    if (u.send_count > 0 && u.recv_count > 0)
        ops = a->send_mem == a->recv_mem ? a->recv_mem : NULL;
    else
        ops = u.send_count > 0 ? a->send_mem : a->recv_mem;
    if (ops == NULL || ops->kind == MXH_MEM_HOST)
        return NULL;
    if (ops->hold) {
        if (u.send_count > 0)
            ops->hold(a->sendbuf);
        if (u.recv_count > 0)
            ops->hold(a->recvbuf);
    }
    return ops;
}

static void ipc_release(const mxh_coll_args_t *a, buf_use_t u, const mxh_mem_ops_t *ops)
{
    if (ops != NULL && ops->release) {
        if (u.recv_count > 0)
            ops->release(a->recvbuf);
        if (u.send_count > 0)
            ops->release(a->sendbuf);
    }
}

/* The device node level's form of each single-node collective: @n elements
 * of the view at @in (the send buffer, or recvbuf in place) and recvbuf, the
 * buffers' kind @ops. */
static mxh_status_t ipc_allreduce(mxh_coll_args_t *a, const mxh_mem_ops_t *ops, const void *in,
                                  size_t n)
{
    return mxh_ipc_allreduce(a->hier->ipc, ops, in, a->recvbuf, n, a->vdt, a->tsize, a->mpi_op);
}

static mxh_status_t ipc_bcast(mxh_coll_args_t *a, const mxh_mem_ops_t *ops, const void *in,
                              size_t n)
{
    (void)in;
    return mxh_ipc_bcast(a->hier->ipc, ops, a->recvbuf, n * a->tsize, a->root);
}

static mxh_status_t ipc_reduce(mxh_coll_args_t *a, const mxh_mem_ops_t *ops, const void *in,
                               size_t n)
{
    return mxh_ipc_reduce(a->hier->ipc, ops, in, a->rank == a->root ? a->recvbuf : NULL, n,
                          a->vdt, a->tsize, a->mpi_op, a->root);
}

static mxh_status_t ipc_rsb(mxh_coll_args_t *a, const mxh_mem_ops_t *ops, const void *in,
                            size_t n)
{
    mxh_hier_t *h = a->hier;
    block_parts(h, (int)n);
    return mxh_ipc_reduce_scatter(h->ipc, ops, in, a->recvbuf, h->blk_counts, h->blk_displs,
                                  a->vdt, a->tsize, a->mpi_op);
}

static mxh_status_t ipc_allgather(mxh_coll_args_t *a, const mxh_mem_ops_t *ops, const void *in,
                                  size_t n)
{
    mxh_hier_t *h = a->hier;
    (void)in; /* in place, my block is in recvbuf at my rank's place */
    block_parts(h, (int)n);
    return mxh_ipc_allgather(h->ipc, ops,
                             a->sendbuf == MPI_IN_PLACE
                                 ? (const char *)a->recvbuf + (size_t)a->rank * n * a->tsize
                                 : a->sendbuf,
                             a->recvbuf, h->blk_counts, h->blk_displs, a->tsize);
}

static mxh_status_t ipc_single(mxh_coll_args_t *a)
{
    buf_use_t u              = buf_use(a);
    size_t n                 = (size_t)a->count * a->vn; /* elements of the view */
    const void *in           = a->sendbuf == MPI_IN_PLACE ? a->recvbuf : a->sendbuf;
    const mxh_mem_ops_t *ops = ipc_hold(a, u);
    mxh_status_t st          = ops_of(a)->ipc(a, ops, in, n);

    ipc_release(a, u, ops);
    a->ipc = st != MXH_ERR_UNSUPPORTED;
    return st;
}

/* ---- several nodes on device buffers ---------------------------------------------------- */

/* The device network path: the node part on the device node level of the whole node
 * (exec/ipc.h: agree, fill, spread; nothing to agree for a rank alone in its node), the
 * network steps of the agreed schedule on the device buffers themselves, run by the
 * executor with the node-local levels skipped (exec/exec.h: ctx.mem), their messages
 * direct where the MPI underneath takes this memory and staged through a bounded
 * pinned pool otherwise, their reductions on the device. The messages are exactly
 * those of a node that stages, so nodes decide alone; only the ranks of one node agree.
 * Before the network steps, fill puts in the region where this rank's first network
 * step starts what the schedule's node steps would have left there: the node's sum
 * (allreduce, reduce, reduce_scatter_block), the root's data (bcast, on the root's node),
 * its own block (allgather); after them, spread copies the region its last network step
 * left to every node rank's output (allreduce, bcast, allgather), to the root (reduce),
 * or its own block out (reduce_scatter_block). MXH_ERR_UNSUPPORTED (the node's ranks
 * alike, nothing written): the staged path. */
enum { FILL_NONE = 0, FILL_REDUCE, FILL_ROOT, FILL_OWN };
enum { SPREAD_ALL = 1, SPREAD_ROOT, SPREAD_MINE };

/* How this rank's network steps move device memory of @m's kind: direct where the MPI
 * underneath takes it (CUDA-aware MPI over UCX with CUDA memory; the test kind in its
 * test-only direct mode), else staged. A local fact: the messages are the same bytes. */
static int mpi_takes(const mxh_mem_ops_t *m);
static mxh_xfer_t device_xfer(const mxh_mem_ops_t *m)
{
    if (m->kind == MXH_MEM_TEST)
        return mxh_mem_test_mpi_direct() ? MXH_XFER_DIRECT : MXH_XFER_STAGED;
    return mpi_takes(m) ? MXH_XFER_DIRECT : MXH_XFER_STAGED;
}

/* The node index of comm rank @r among the ranks of its node (the node communicator
 * orders them by comm rank), or -1 when @r is not on this rank's node. */
static int node_index(const mxh_hier_t *h, int r)
{
    const mxh_layout_t *L = h->layout;
    int k = 0;
    if (r < 0 || L->node_of[r] != L->node_of[h->rank])
        return -1;
    for (int q = 0; q < r; q++)
        k += L->node_of[q] == L->node_of[r];
    return k;
}

typedef struct dnet_io {
    const mxh_sched_t *sched;
    int                blocks;  /* block collective: work is fragment-major */
    size_t             count;   /* elements per block (the user's layout) */
    const int         *order;   /* [nblocks] the rank whose block sits at each position */
    int                nblocks;
    mxh_ipc_region_t  *reg;     /* growing list */
    int                n, cap;
} dnet_io_t;

static int region_add(dnet_io_t *d, size_t user, size_t work, size_t cnt, int fill)
{
    if (cnt == 0)
        return 0;
    if (d->n == d->cap)
        return -1;
    d->reg[d->n++] = fill ? (mxh_ipc_region_t){user, work, cnt} : (mxh_ipc_region_t){work, user, cnt};
    return 0;
}

/* Work elements [@off, @off + @cnt) of fragment @f as regions between the user's layout
 * and the work buffer's (@fill: user -> work, else work -> user). */
static int region_of(dnet_io_t *d, int f, size_t off, size_t cnt, int fill)
{
    if (!d->blocks)
        return region_add(d, off, off, cnt, fill);
    size_t fo = mxh_sched_frag_offset(d->sched, f), fc = mxh_sched_frag_count(d->sched, f);
    size_t fs = mxh_sched_frag_start(d->sched, f);
    while (cnt > 0 && fc > 0) {
        size_t pos = (off - fo) / fc, in = (off - fo) % fc, k = fc - in < cnt ? fc - in : cnt;
        if (pos >= (size_t)d->nblocks ||
            region_add(d, (size_t)d->order[pos] * d->count + fs + in, off, k, fill) < 0)
            return -1;
        off += k;
        cnt -= k;
    }
    return 0;
}

/* This rank's part of node step @s (offsets in the fragment): its part of a split
 * step, else the step's whole region. */
static void my_part(const mxh_step_t *s, size_t *off, size_t *cnt)
{
    if (s->counts != NULL && s->me >= 0 && s->me < s->gsize) {
        *off = s->offset + (size_t)s->displs[s->me];
        *cnt = (size_t)s->counts[s->me];
    } else {
        *off = s->offset;
        *cnt = s->count;
    }
}

/* The regions around the network steps of every fragment: @pre before (fill), @post
 * after (spread) of kinds @fill / @spread; 0, or -1 where the schedule cannot take the
 * path (a node step between network steps, or of a kind fill/spread do not stand for). */
static int dnet_regions(mxh_coll_args_t *a, unsigned skip, int fill, int spread, dnet_io_t *pre,
                        dnet_io_t *post)
{
    const mxh_sched_t *sched = pre->sched;
#define B(t) (1u << (t))
    unsigned pre_ok  = fill == FILL_REDUCE ? B(MXH_STEP_REDUCE_SCATTER) | B(MXH_STEP_REDUCE)
                       : fill == FILL_ROOT ? B(MXH_STEP_SCATTER) | B(MXH_STEP_BCAST) : 0;
    unsigned post_ok = spread == SPREAD_ALL ? B(MXH_STEP_ALLGATHER) | B(MXH_STEP_BCAST)
                       : spread == SPREAD_ROOT ? B(MXH_STEP_GATHER) | B(MXH_STEP_REDUCE) : 0;
#undef B
    for (int f = 0; f < sched->nfrag; f++) {
        const mxh_plan_t *p = mxh_sched_plan(sched, f);
        size_t fo = mxh_sched_frag_offset(sched, f), fc = mxh_sched_frag_count(sched, f);
        int first = -1, after = 0, pre_node = -1, post_node = -1;
        size_t lo = SIZE_MAX, hi = 0; /* the hull of the network steps' regions */
        for (int i = 0; i < p->nsteps; i++) {
            const mxh_step_t *st = &p->steps[i];
            unsigned t           = 1u << st->type;
            if (skip >> st->level & 1u) {
                after = first >= 0;
                /* node steps that split the data between the node's ranks before (their
                 * regions disjoint) and join it after: what fill and spread stand for */
                if (!(t & (after ? post_ok : pre_ok)))
                    return -1;
                if (!after)
                    pre_node = i;
                else if (post_node < 0)
                    post_node = i;
                continue;
            }
            if (after || st->type == MXH_STEP_SPREAD)
                return -1; /* a network step after a node step that follows one */
            if (first < 0)
                first = i;
            lo = st->offset < lo ? st->offset : lo;
            hi = st->offset + st->count > hi ? st->offset + st->count : hi;
        }
        if (first < 0)
            return -1; /* alone on its rail: the node's data would not leave it */
        /* what the node steps leave this rank before the network steps (its part of the
         * last of them), and take from it after (its part of the first: of a split step;
         * a whole-region reduce to the root adds parts the fill has summed already):
         * otherwise the hull of its network steps' regions */
        size_t pre_off = lo, pre_cnt = hi - lo, post_off = lo, post_cnt = hi - lo;
        if (pre_node >= 0)
            my_part(&p->steps[pre_node], &pre_off, &pre_cnt);
        if (post_node >= 0 && p->steps[post_node].counts != NULL)
            my_part(&p->steps[post_node], &post_off, &post_cnt);
        if (fill == FILL_OWN) { /* my block's piece of the fragment */
            size_t w = fo + (size_t)p->block_pos[a->rank] * fc;
            if (region_add(pre, mxh_sched_frag_start(sched, f), w, fc, 1) < 0)
                return -1;
        } else if (region_of(pre, f, fo + pre_off, pre_cnt, 1) < 0) {
            return -1;
        }
        if (spread == SPREAD_MINE) {
            size_t w = fo + (size_t)p->block_pos[a->rank] * fc;
            if (region_add(post, mxh_sched_frag_start(sched, f), w, fc, 0) < 0)
                return -1;
        } else if (region_of(post, f, fo + post_off, post_cnt, 0) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Local copies of regions (a rank alone in its node, allgather's own block): @dst[out..]
 * = @src[in..], waiting for them (yielding in a task). */
static mxh_status_t copy_regions(const mxh_mem_ops_t *ops, char *dst, const char *src,
                                 const mxh_ipc_region_t *r, int nreg, size_t ts)
{
    mxh_mem_event_t ev[16];
    mxh_status_t st = MXH_OK;
    int k = 0;

    for (int i = 0; i <= nreg; i++) {
        if (i < nreg && r[i].cnt > 0 && st == MXH_OK && dst + r[i].out * ts != src + r[i].in * ts &&
            (st = ops->copy_start(dst + r[i].out * ts, src + r[i].in * ts, r[i].cnt * ts, &ev[k])) ==
                MXH_OK)
            k++;
        if (k == 16 || (i == nreg && k > 0)) { /* wait for the batch */
            for (int j = 0; j < k; j++) {
                int done;
                while ((done = ops->event_test(&ev[j])) == 0)
                    if (mxh_task_in_fiber())
                        mxh_task_yield();
                if (done < 0 && st == MXH_OK)
                    st = (mxh_status_t)-done;
            }
            k = 0;
        }
    }
    return st;
}

/* The executor's context for the network steps of @sched on device memory of @ops, its
 * receive space (*@tmp) and device records allocated: 0 if they cannot be (before the
 * node agrees, which then declines). */
static int dnet_prepare(mxh_coll_args_t *a, const mxh_sched_t *sched, const mxh_mem_ops_t *ops,
                        unsigned skip, mxh_exec_ctx_t *ctx, void **tmp)
{
    mxh_hier_t *h   = a->hier;
    int nd          = mxh_exec_dev_slots(sched);
    *ctx            = exec_ctx(h, a->vdt, a->tsize, a->mpi_op, a->lvl_p);
    ctx->skip_levels = skip;
    ctx->mem        = ops;
    ctx->xfer       = device_xfer(ops);
    ctx->shm        = NULL;
    ctx->shm_levels = 0;
    size_t bounce   = ctx->xfer == MXH_XFER_STAGED ? mxh_exec_bounce_bytes(sched, a->tsize) : 0;
    *tmp            = mxh_hier_dev(h, ops, 1, mxh_exec_tmp_count(sched, ctx) * a->tsize);
    ctx->devs       = *tmp != NULL ? mxh_hier_devs(h, ops, nd, bounce) : NULL;
    return ctx->devs != NULL;
}

/* The network steps on the device work buffer @work; the bounce traffic counted. */
static mxh_status_t dnet_exec(mxh_coll_args_t *a, const mxh_sched_t *sched,
                              const mxh_exec_ctx_t *ctx, void *work, void *tmp)
{
    mxh_status_t st = mxh_exec_sched(sched, ctx, work, tmp);
    uint64_t staged = 0;
    for (int i = 0; i < mxh_exec_dev_slots(sched); i++)
        staged += ctx->devs[i].staged;
    count_staged(a, staged, 0);
    if (a->mstats != NULL)
        a->mstats->bounce_bytes = a->hier->bounce[ctx->mem->kind].size;
    return st;
}

static mxh_status_t device_net(mxh_coll_args_t *a)
{
    mxh_hier_t *h             = a->hier;
    const mxh_coll_desc_t *ci = mxh_coll_info(a->coll);
    const coll_ops_t *o       = ops_of(a);
    const mxh_layout_t *L     = h->layout;
    buf_use_t u               = buf_use(a);
    size_t n = (size_t)a->count * a->vn, ts = a->tsize, nb = ci->blocks ? (size_t)a->size : 1;
    int in_place              = a->sendbuf == MPI_IN_PLACE, gets = u.recv_count > 0;
    const char *in            = in_place ? (const char *)a->recvbuf : (const char *)a->sendbuf;
    void *out                 = gets ? a->recvbuf : NULL;
    size_t in_bytes = (o->dnet_fill == FILL_OWN ? n : n * nb) * ts, out_bytes = gets ? n * ts : 0;
    const mxh_sched_t *sched  = NULL;
    unsigned skip             = 0;
    int root = ci->rooted ? node_index(h, a->root) : -1, engaged = 0, able;
    dnet_io_t pre = {0}, post = {0};
    mxh_status_t st;

    if (o->dnet_fill == FILL_OWN) {
        out_bytes = n * nb * ts;
        if (in_place)
            in = (const char *)a->recvbuf + (size_t)a->rank * n * ts;
    }
    for (int l = 0; l < L->nlevels; l++)
        if (L->type[l] == MXH_LEVEL_NODE || L->type[l] == MXH_LEVEL_ISLAND)
            skip |= 1u << l;
    const mxh_mem_ops_t *ops = ipc_hold(a, u);
    able = ops != NULL && get_sched(a, n, &sched) == MXH_OK &&
           mxh_exec_device_able(sched, skip, ops, a->vdt, ci->reducing ? a->mpi_op : MPI_OP_NULL);
    if (able) {
        /* a fragment's regions: one per block piece at most, before and after */
        int cap    = sched->nfrag * (int)(nb + 1);
        size_t sz  = 2 * (size_t)cap * sizeof(mxh_ipc_region_t) + nb * sizeof(int);
        char *mem  = mxh_hier_grow(&h->ipc_regs, sz);
        able       = mem != NULL;
        if (able) {
            int *order = (int *)(mem + 2 * (size_t)cap * sizeof(mxh_ipc_region_t));
            for (int r = 0; ci->blocks && r < a->size; r++)
                order[sched->plan->block_pos[r]] = r;
            pre  = (dnet_io_t){sched, ci->blocks, n, order, (int)nb, (mxh_ipc_region_t *)mem, 0, cap};
            post = pre;
            post.reg = pre.reg + cap;
            able = dnet_regions(a, skip, o->dnet_fill, o->dnet_spread, &pre, &post) == 0;
            if (!able)
                mxh_debug("%s: the device network path cannot take the node steps of the "
                          "schedule of %zu elements", a->func, n);
        }
    } else if (ops != NULL && sched != NULL) {
        mxh_debug("%s: a network step of the schedule has no device form", a->func);
    }
    /* the work buffer: the output where it has the work's layout; device memory of the
     * library's otherwise (before agreeing: without it the node declines) */
    char *work = NULL;
    void *tmp  = NULL;
    mxh_exec_ctx_t ctx;
    if (able) {
        work = out != NULL && !ci->blocks ? out : mxh_hier_dev(h, ops, 0, n * nb * ts);
        able = work != NULL && dnet_prepare(a, sched, ops, skip, &ctx, &tmp);
    }
    if (h->ipc_node != NULL) {
        st = mxh_ipc_node_agree(h->ipc_node, ops, able, in, in_bytes, out, out_bytes, a->vdt,
                                ci->reducing ? a->mpi_op : MPI_OP_NULL, &engaged);
    } else {
        engaged = able; /* alone in my node: nobody to agree with */
        st      = able ? MXH_OK : MXH_ERR_UNSUPPORTED;
    }
    if (!engaged) {
        ipc_release(a, u, ops);
        return st;
    }
    a->ipc = 1;
    if (st == MXH_OK && o->dnet_fill == FILL_OWN)
        st = copy_regions(ops, work, in, pre.reg, pre.n, ts);
    else if (st == MXH_OK && h->ipc_node != NULL && (o->dnet_fill == FILL_REDUCE || root >= 0))
        st = mxh_ipc_node_fill(h->ipc_node, ops, o->dnet_fill == FILL_REDUCE ? -1 : root, work,
                               pre.reg, pre.n, a->vdt, ts, a->mpi_op);
    else if (st == MXH_OK && h->ipc_node == NULL && o->dnet_fill != FILL_ROOT)
        st = copy_regions(ops, work, in, pre.reg, pre.n, ts);
    /* the network steps run whatever the status: the other nodes wait in them */
    mxh_status_t net = dnet_exec(a, sched, &ctx, work, tmp);
    st               = st != MXH_OK ? st : net;
    /* spread: to everybody, to the root (on my node), my own block */
    int to = o->dnet_spread == SPREAD_ALL ? -1 : o->dnet_spread == SPREAD_ROOT ? root
                                                                                : node_index(h, a->rank);
    int nreg = o->dnet_spread == SPREAD_ROOT && root < 0 ? 0 : post.n;
    if (h->ipc_node != NULL)
        st = mxh_ipc_node_spread(h->ipc_node, ops, to, work, post.reg, nreg, ts, st);
    else if (st == MXH_OK && out != NULL)
        st = copy_regions(ops, out, work, post.reg, nreg, ts);
    ipc_release(a, u, ops);
    return st;
}

/* One rank, its buffers of one device kind, dense types: the result is its input, one
 * device-to-device copy (or nothing: in place, bcast) instead of host staging around
 * MPI's collective, which costs more than the host copies alone (benchmarks/RESULTS.md
 * section 4). */
static int self_device(const mxh_coll_args_t *a)
{
    int self = ops_of(a)->self;
    int ss = 0, rs = 0;

    if (a->size != 1 || !a->staged || a->send_mem != a->recv_mem || a->vpack ||
        self == SELF_NONE)
        return 0;
    if (self != SELF_SIZES)
        return mxh_dtype_dense(a->dt);
    /* MPI's own call reports sizes that do not match */
    if (a->sendbuf == MPI_IN_PLACE)
        return 1;
    MPI_Type_size(a->sendtype, &ss);
    MPI_Type_size(a->dt, &rs);
    return mxh_dtype_dense(a->dt) && mxh_dtype_dense(a->sendtype) &&
           (size_t)a->sendcount * (size_t)ss == (size_t)a->count * (size_t)rs;
}

static mxh_status_t self_run(mxh_coll_args_t *a)
{
    const mxh_coll_desc_t *ci = mxh_coll_info(a->coll);
    const mxh_mem_ops_t *ops  = a->recv_mem;
    size_t count = ci->vector ? (size_t)a->rcounts[0] : (size_t)a->count;
    MPI_Aint slb, rlb;
    mxh_status_t st;

    if (ops_of(a)->self == SELF_KEEP || a->sendbuf == MPI_IN_PLACE || count == 0)
        return MXH_OK;
    size_t bytes = type_span(a->dt, count, &rlb);
    (void)type_span(ci->sendtype ? a->sendtype : a->dt, 1, &slb);
    if (ops->hold) {
        ops->hold(a->sendbuf);
        ops->hold(a->recvbuf);
    }
    st = copy_wait(ops, (char *)a->recvbuf + rlb, (const char *)a->sendbuf + slb, bytes);
    if (ops->release) {
        ops->release(a->recvbuf);
        ops->release(a->sendbuf);
    }
    return st;
}

/* ---- the table of collectives ---------------------------------------------------------------- */

/* Adjustments of the path selection chose (mxh_coll_prepare; every rank takes
 * them alike). Excluded rails (MPIX_HIER_EXCLUDE_RAILS): allreduces that would
 * cross the network hierarchically keep those rails silent. */
static void settle_allreduce(mxh_coll_args_t *a)
{
    if (a->path == MXH_PATH_SCHED && a->hier->xrail.active)
        a->path = MXH_PATH_RAILX;
}

/* all-to-all: the rail-aligned algorithm where the layout allows it and its
 * communicators were made with the hierarchy (the verdict is agreed) */
static void settle_alltoall(mxh_coll_args_t *a)
{
    if (a->path != MXH_PATH_SCHED)
        return;
    if (!mxh_alltoall_applicable(a->hier->layout))
        a->why = MXH_FB_LAYOUT;
    else if (!mxh_alltoall_ready(a->hier))
        a->why = MXH_FB_SETUP_FAILED;
    if (a->why != MXH_FB_NONE)
        a->path = MXH_PATH_PLAIN;
}

static void settle_alltoallv(mxh_coll_args_t *a)
{
    if (a->path == MXH_PATH_SHM) {
        a->path = MXH_PATH_PLAIN; /* its shared-memory form would need every rank's counts */
        a->why  = MXH_FB_NO_SHM_FORM;
    }
    settle_alltoall(a);
}

static const coll_ops_t coll_ops[MXH_COLL_COUNT] = {
    [MXH_COLL_ALLREDUCE] = {
        .body = hier_allreduce, .mpi = mpi_allreduce, .impi = impi_allreduce,
        .buf_use = use_allreduce, .shm = shm_allreduce, .ipc = ipc_allreduce,
        .dnet_fill = FILL_REDUCE, .dnet_spread = SPREAD_ALL, .settle = settle_allreduce,
        .self = SELF_COPY,
        .staged_frags = 1},
    [MXH_COLL_REDUCE_SCATTER_BLOCK] = {
        .body = hier_rsb, .mpi = mpi_rsb, .impi = impi_rsb, .inplace_copy = inplace_rsb,
        .buf_use = use_rsb, .ipc = ipc_rsb, .dnet_fill = FILL_REDUCE, .dnet_spread = SPREAD_MINE,
        .self = SELF_COPY},
    [MXH_COLL_ALLGATHER] = {
        .body = hier_allgather, .mpi = mpi_allgather, .impi = impi_allgather,
        .buf_use = use_allgather, .ipc = ipc_allgather, .dnet_fill = FILL_OWN,
        .dnet_spread = SPREAD_ALL, .self = SELF_SIZES},
    [MXH_COLL_BCAST] = {
        .body = hier_bcast, .mpi = mpi_bcast, .impi = impi_bcast, .buf_use = use_bcast,
        .shm = shm_bcast, .ipc = ipc_bcast, .dnet_fill = FILL_ROOT, .dnet_spread = SPREAD_ALL,
        .self = SELF_KEEP},
    [MXH_COLL_REDUCE] = {
        .body = hier_reduce, .mpi = mpi_reduce, .impi = impi_reduce,
        .inplace_copy = inplace_reduce, .buf_use = use_reduce, .shm = shm_reduce,
        .ipc = ipc_reduce, .dnet_fill = FILL_REDUCE, .dnet_spread = SPREAD_ROOT,
        .self = SELF_COPY, .staged_frags = 1},
    [MXH_COLL_ALLGATHERV] = {
        .body = hier_allgatherv, .mpi = mpi_allgatherv, .impi = impi_allgatherv,
        .buf_use = use_allgatherv},
    [MXH_COLL_REDUCE_SCATTER] = {
        .body = hier_reduce_scatter, .mpi = mpi_reduce_scatter, .impi = impi_reduce_scatter,
        .inplace_copy = inplace_reduce_scatter, .buf_use = use_reduce_scatter,
        .self = SELF_COPY},
    [MXH_COLL_ALLTOALL] = {
        .body = hier_alltoall, .mpi = mpi_alltoall, .impi = impi_alltoall,
        .buf_use = use_alltoall, .settle = settle_alltoall},
    [MXH_COLL_ALLTOALLV] = {
        .body = hier_alltoallv, .mpi = mpi_alltoallv, .impi = impi_alltoallv,
        .buf_use = use_alltoallv, .settle = settle_alltoallv, .own_counts = 1},
};

static inline const coll_ops_t *ops_of(const mxh_coll_args_t *a)
{
    return &coll_ops[a->coll];
}

static mxh_status_t plain_call(mxh_coll_args_t *a, const void *s, void *r)
{
    const coll_ops_t *o = ops_of(a);
    int rc;

    if (!mxh_task_in_fiber()) {
        rc = o->mpi(a, s, r);
    } else {
        MPI_Request req = MPI_REQUEST_NULL;
        rc = o->impi(a, s, r, &req);
        if (rc == MPI_SUCCESS)
            rc = mxh_task_wait(&req, MPI_STATUS_IGNORE);
    }
    if (rc != MPI_SUCCESS) {
        a->mpi_rc = rc;
        return MXH_ERR_MPI;
    }
    return MXH_OK;
}

/* ---- running a call ---------------------------------------------------------------------------- */

/* One node, and the call tries the device node level: the shm path, or MPI's own
 * collective chosen by a size measured on host buffers (allgather from 2 MiB, where
 * MPICH's single copy beats the segment): device buffers still stay on the device
 * (agreed inside exec/ipc.c; host buffers decline to MPI's collective). */
static int ipc_single_considered(const mxh_coll_args_t *a)
{
    return (a->path == MXH_PATH_SHM ||
            (a->path == MXH_PATH_PLAIN && a->why == MXH_FB_ABOVE_SHM_MAX && a->hier != NULL)) &&
           a->hier->ipc != NULL && ipc_considered(a);
}

static mxh_status_t body(mxh_coll_args_t *a)
{
    if (self_device(a))
        return self_run(a);
    /* every rank, whatever its buffers (the agreement is inside) */
    if (ipc_single_considered(a)) {
        mxh_status_t st = ipc_single(a);
        if (st != MXH_ERR_UNSUPPORTED)
            return st;
    }
    /* every rank of a node with a device node level, whatever its buffers (the
     * agreement is inside); a rank alone in its node when its buffers are device ones */
    if (a->path == MXH_PATH_SCHED && ops_of(a)->dnet_fill != FILL_NONE &&
        (a->hier->ipc_node != NULL || (a->hier->node_alone && a->staged)) && ipc_considered(a)) {
        mxh_status_t st = device_net(a);
        if (st != MXH_ERR_UNSUPPORTED)
            return st;
    }
    if (shm_direct(a))
        return ops_of(a)->shm(a, a->sendbuf, a->recvbuf, (size_t)a->count * a->vn, a->vdt);
    if (a->staged && a->path == MXH_PATH_PLAIN && mpi_takes(a->send_mem) && mpi_takes(a->recv_mem))
        return run_plain(a, a->sendbuf, a->recvbuf);
    return a->staged ? run_staged(a) : run_host(a, a->sendbuf, a->recvbuf);
}

/* ---- decision ------------------------------------------------------------------------------ */

/* The view of the data the hierarchical paths take (vdt, vn, vsn, tsize,
 * vpack), from the type signatures. 0: none (a signature that mixes basic
 * types in a reduction: plain MPI on every rank, as they all see it).
 * Reductions get here with MPI's own ops only (user ops are MPI's:
 * mpix/errors.c), which see elements of the basic type alike. */
static int view(mxh_coll_args_t *a)
{
    const mxh_coll_desc_t *ci = mxh_coll_info(a->coll);
    int dense = a->tsize > 0; /* the entry layer: predefined and dense, or a half type */
    int size  = 0;

    a->vpack = 0;
    if (ci->reducing) {
        if (dense) {
            a->vdt = a->dt;
            a->vn  = 1;
        } else {
            size_t bsize = 0;
            if (mxh_dtype_signature(a->dt, &a->vdt, &a->vn) != 0 || a->vdt == MPI_DATATYPE_NULL ||
                MPI_Type_size(a->vdt, &size) != MPI_SUCCESS || size <= 0 ||
                !mxh_dtype_dense(a->vdt))
                return 0;
            bsize    = (size_t)size;
            a->tsize = bsize;
            a->vpack = !mxh_dtype_dense(a->dt);
            a->mpi_op = mxh_reduce_mpi_op(a->vdt, a->op);
#ifdef MXH_SIMGRID
            a->mpi_op = mxh_sim_mpi_op(a->mpi_op);
#endif
        }
        a->vsn = a->vn;
        return 1;
    }
    /* data movement: bytes */
    if (dense) {
        a->vn = a->tsize;
    } else {
        if (MPI_Type_size(a->dt, &size) != MPI_SUCCESS || size < 0)
            return 0;
        a->vn    = (size_t)size;
        a->vpack = !mxh_dtype_dense(a->dt);
    }
    a->vsn = a->vn;
    if (ci->sendtype && a->sendbuf != MPI_IN_PLACE && a->sendtype != a->dt) {
        if (MPI_Type_size(a->sendtype, &size) != MPI_SUCCESS || size < 0)
            return 0;
        a->vsn = (size_t)size;
        a->vpack |= !mxh_dtype_dense(a->sendtype);
    }
    a->vdt   = MPI_BYTE;
    a->tsize = 1;
    return 1;
}

/* The call's bytes at this rank for the metrics: the larger of the data of
 * its send and receive buffers, in the user's types (README: Metrics). */
static size_t call_bytes(const mxh_coll_args_t *a)
{
    const mxh_coll_desc_t *ci = mxh_coll_info(a->coll);
    size_t rt = a->tsize, st = 0, n = a->size > 0 ? (size_t)a->size : 1;
    int k;

    if (rt == 0 && MPI_Type_size(a->dt, &k) == MPI_SUCCESS && k > 0)
        rt = (size_t)k;
    if (ci->blocks)
        return (size_t)a->count * rt * n;
    if (!ci->vector)
        return (size_t)a->count * rt;
    if (ops_of(a)->own_counts && a->sendbuf != MPI_IN_PLACE &&
        MPI_Type_size(a->sendtype, &k) == MPI_SUCCESS && k > 0)
        st = v_total(a->scounts, a->size) * (size_t)k;
    rt *= v_total(a->rcounts, a->size);
    return st > rt ? st : rt;
}

/* The memory kind of this rank's receive buffer: a reduce's results exist at
 * its root only (elsewhere recvbuf is not significant: looked up as none). */
static inline const mxh_mem_ops_t *recv_mem_of(const mxh_coll_args_t *a)
{
    const mxh_coll_desc_t *ci = mxh_coll_info(a->coll);
    return mxh_mem_of(ci->rooted && ci->reducing && a->rank != a->root ? NULL : a->recvbuf);
}

/* The send side of a collective with a send type of its own (allgather,
 * alltoall) is the receive side's (same count and type) or in place, so that
 * the memo's key (count, dt, op) holds the whole call's shape. */
static inline int same_send(const mxh_coll_args_t *a)
{
    return !mxh_coll_info(a->coll)->sendtype || a->sendbuf == MPI_IN_PLACE ||
           (a->sendtype == a->dt && a->sendcount == a->count);
}

int mxh_coll_needs_hier(mxh_coll_args_t *a, int hier_op)
{
    const mxh_coll_desc_t *ci = mxh_coll_info(a->coll);
    size_t elements           = (size_t)a->count;

    /* rank and size only where this call needs them before the hierarchy is
     * looked up (every MPI query costs on small messages); mxh_coll_prepare
     * takes them from the hierarchy */
    a->rank = a->size = -1;
    if (ci->rooted || ci->blocks || ci->vector) {
        if (mxh_hier_cached(a->comm)) { /* its private dup: the same rank and size */
            if (ci->rooted)
                a->rank = mxh_hier_last->rank;
            if (ci->blocks || ci->vector)
                a->size = mxh_hier_last->size;
        } else {
            if (ci->rooted)
                MPI_Comm_rank(a->comm, &a->rank);
            if (ci->blocks || ci->vector)
                MPI_Comm_size(a->comm, &a->size);
        }
    }
    a->hier_op = hier_op > 0;
    a->mpi_op  = a->op;
    a->mpi_rc  = MPI_SUCCESS;
    if (ci->reducing) {
        a->mpi_op = mxh_reduce_mpi_op(a->dt, a->op); /* half types: our op */
#ifdef MXH_SIMGRID
        a->mpi_op = mxh_sim_mpi_op(a->mpi_op); /* MPI's reductions charged like ours */
#endif
    }
    /* memory kinds: only the buffers significant at this rank */
    a->send_mem = mxh_mem_of(a->sendbuf == MPI_IN_PLACE ? NULL : a->sendbuf);
    a->recv_mem = recv_mem_of(a);
    a->staged   = a->send_mem->kind != MXH_MEM_HOST || a->recv_mem->kind != MXH_MEM_HOST;

    /* one count of a predefined type (a handle never reused), the send side
     * the same as the receive side or in place: the decision is a function of
     * the key of hier.h's memo */
    a->memo   = a->tsize > 0 && !ci->vector && same_send(a);
    a->mbytes = call_bytes(a); /* before view() changes tsize */
    a->path   = MXH_PATH_PLAIN;
    if (ci->reducing && hier_op <= 0) {
        a->why = hier_op < 0 ? (mxh_fallback_t)-hier_op : MXH_FB_USER_OP;
        return 0;
    }
    if (!view(a)) {
        a->why = MXH_FB_MIXED_TYPES;
        return 0;
    }
    a->why = MXH_FB_TOO_LARGE; /* for the returns of 0 below that stay plain */
    if (ci->vector) {
        /* the whole vector, in the view's elements: agreed (allgatherv,
         * reduce_scatter); alltoallv's totals differ between ranks */
        if (ops_of(a)->own_counts)
            return 1;
        elements = v_total(a->rcounts, a->size) * a->vn;
        if (elements == 0) {
            a->path = MXH_PATH_NONE;
            return 0;
        }
        return elements <= INT_MAX;
    }
    /* nothing to move: no elements, or elements of a zero-size type (MPI's collective
     * does nothing either; a send side with data is MPI's to report) */
    if (a->count == 0 || (a->vn == 0 && (!ci->sendtype || a->sendbuf == MPI_IN_PLACE ||
                                         (size_t)a->sendcount * a->vsn == 0))) {
        a->path = MXH_PATH_NONE;
        return 0;
    }
    elements = (size_t)a->count * a->vn;
    if (ci->blocks)
        elements *= (size_t)a->size;
    if (elements > INT_MAX)
        return 0;
    return 1;
}

void mxh_coll_prepare(mxh_coll_args_t *a)
{
    const mxh_coll_desc_t *ci = mxh_coll_info(a->coll);
    size_t bytes, work;

    if (a->hier == NULL || (a->path != MXH_PATH_PLAIN && a->path != MXH_PATH_SCHED))
        return;
    a->rank = a->hier->rank; /* the private dup of a->comm: the same rank and size */
    a->size = a->hier->size;
    bytes    = (size_t)a->count * a->vn * a->tsize; /* the view's bytes (coll.h: vdt) */
    work     = ci->blocks ? bytes * (size_t)a->size : bytes;
    if (ci->vector && !ops_of(a)->own_counts) { /* the whole vector, its mean */
        work  = v_total(a->rcounts, a->size) * a->vn * a->tsize;
        bytes = work / (size_t)a->size;
    } else if (ci->vector) {
        /* the totals differ between ranks: no size can decide */
        bytes = work = a->hier->config.min_bytes;
    }
    a->choice = mxh_hier_select(a->hier, a->coll, bytes, work);
    a->why    = a->choice.why;
    switch (a->choice.algo) {
    case MXH_ALGO_MPI: a->path = MXH_PATH_PLAIN; break;
    case MXH_ALGO_SHM: a->path = MXH_PATH_SHM; break;
    default:           a->path = MXH_PATH_SCHED; break;
    }
    if (ops_of(a)->settle != NULL)
        ops_of(a)->settle(a);
    if (a->memo) {
        /* dense predefined type: vsn == vn, vpack == 0 */
        a->hier->memo[a->coll] = (mxh_coll_memo_t){
            .valid = 1, .count = a->count, .dt = a->dt, .op = a->op, .hier_op = a->hier_op,
            .path = a->path, .choice = a->choice, .why = a->why, .vdt = a->vdt, .vn = a->vn,
            .tsize = a->tsize, .mbytes = a->mbytes, .mpi_op = a->mpi_op};
    }
}

int mxh_coll_recall(mxh_coll_args_t *a, int hier_op)
{
    const mxh_coll_memo_t *m;
    mxh_hier_t *h;

    if (!mxh_hier_cached(a->comm))
        return 0;
    h = mxh_hier_last;
    m = &h->memo[a->coll];
    if (!m->valid || m->count != a->count || m->dt != a->dt || m->op != a->op ||
        m->hier_op != (hier_op > 0) || !same_send(a))
        return 0;
    /* what mxh_coll_needs_hier, the lookup and mxh_coll_prepare set */
    a->hier    = h;
    a->rank    = h->rank;
    a->size    = h->size;
    a->hier_op = hier_op > 0;
    a->mpi_rc  = MPI_SUCCESS;
    if (mxh_mem_host_only()) { /* what mxh_mem_of answers for both, asked once */
        a->send_mem = a->recv_mem = &mxh_mem_host_ops;
        a->staged   = 0;
    } else {
        a->send_mem = mxh_mem_of(a->sendbuf == MPI_IN_PLACE ? NULL : a->sendbuf);
        a->recv_mem = recv_mem_of(a);
        a->staged = a->send_mem->kind != MXH_MEM_HOST || a->recv_mem->kind != MXH_MEM_HOST;
    }
    a->path     = (mxh_coll_path_t)m->path;
    a->choice   = m->choice;
    a->why      = m->why;
    a->vdt      = m->vdt;
    a->vn = a->vsn = m->vn;
    a->vpack    = 0;
    a->tsize    = m->tsize;
    a->mbytes   = m->mbytes;
    a->mpi_op   = m->mpi_op;
    return 1;
}

/* ---- blocking and nonblocking --------------------------------------------------------------- */

/* The memory kinds' entry hook (mem.h: enter): their copies come after the
 * application's work that produced the data. Once per kind in the call. */
static mxh_status_t mem_enter(const mxh_coll_args_t *a)
{
    mxh_status_t st = MXH_OK;
    if (a->send_mem->enter != NULL)
        st = a->send_mem->enter();
    if (st == MXH_OK && a->recv_mem != a->send_mem && a->recv_mem->enter != NULL)
        st = a->recv_mem->enter();
    return st;
}

/* The executor's step times of a counted call start at zero (the entry layer
 * leaves a->lvl unset: coll.h). They are read for the hierarchical paths only
 * (mxh_metrics_record), so the shared-memory path skips the zeroing. */
static void lvl_start(mxh_coll_args_t *a)
{
    a->lvl_p = a->mstats != NULL ? &a->lvl : NULL;
    if (a->lvl_p != NULL && a->path != MXH_PATH_SHM)
        memset(&a->lvl, 0, sizeof(a->lvl));
}

mxh_status_t mxh_coll_run(mxh_coll_args_t *a)
{
    mxh_status_t st;
    if (a->staged && (st = mem_enter(a)) != MXH_OK)
        return st;
    a->mstats = mxh_metrics_of(a); /* NULL: not counted (MPIX_HIER_METRICS=no) */
    a->t0     = a->mstats != NULL ? mxh_ticks() : 0;
    lvl_start(a);
    /* collectives on one communicator complete in order, and its objects serve
     * one at a time: what is in flight on it goes first */
    if (mxh_task_in_flight() > 0) {
        mxh_task_queue_t *q = a->hier != NULL ? a->hier->queue : mxh_comm_queue_find(a->comm);
        if (q != NULL)
            mxh_task_queue_drain(q);
    }
    /* the shared-memory call without body()'s frame (it is most of a small call) */
    if (shm_direct(a))
        st = ops_of(a)->shm(a, a->sendbuf, a->recvbuf, (size_t)a->count * a->vn, a->vdt);
    else
        st = body(a);
    mxh_metrics_record(a, 1);
    return st;
}

static void plain_undo(mxh_coll_args_t *a)
{
    free(a->nb.copy);
    mxh_mem_stage_put(a->send_mem, a->nb.smirror, a->nb.sgot);
    mxh_mem_stage_put(a->recv_mem, a->nb.rmirror, a->nb.rgot);
    if (a->staged && a->recv_mem->release)
        a->recv_mem->release(a->recvbuf);
    if (a->staged && a->send_mem->release)
        a->send_mem->release(a->sendbuf);
    a->nb.copy = a->nb.smirror = a->nb.rmirror = NULL;
}

/* A nonblocking plain-MPI call, at post: non-host buffers staged in (a copy
 * of their own, synchronously: MPI's collective must be started now), the
 * in-place copies MPICH 4.0.2 needs (plain_rsb, plain_reduce), then MPI's
 * collective. Its task (plain_complete) waits for it and stages results out. */
static mxh_status_t plain_post(mxh_coll_args_t *a)
{
    const void *s = a->sendbuf;
    void *r       = a->recvbuf;
    mxh_status_t st = MXH_OK;
    int rc;

    memset(&a->nb, 0, sizeof(a->nb));
    a->nb.req = MPI_REQUEST_NULL;
    if (a->staged && !(mpi_takes(a->send_mem) && mpi_takes(a->recv_mem))) {
        buf_use_t u = buf_use(a);
        MPI_Aint lb;
        if (a->send_mem->hold)
            a->send_mem->hold(a->sendbuf);
        if (a->recv_mem->hold)
            a->recv_mem->hold(a->recvbuf);
        if (u.send_count > 0 && a->send_mem->kind != MXH_MEM_HOST) {
            a->nb.sbytes  = type_span(mxh_coll_info(a->coll)->sendtype ? a->sendtype : a->dt,
                                      u.send_count, &lb);
            a->nb.smirror = mxh_mem_stage_get(a->send_mem, a->nb.sbytes, &a->nb.sgot);
            st = a->nb.smirror ? mxh_mem_copy_sync(a->send_mem, a->nb.smirror,
                                                   (const char *)a->sendbuf + lb, a->nb.sbytes)
                               : MXH_ERR_NO_MEMORY;
            s = a->nb.smirror - lb;
        }
        if (st == MXH_OK && u.recv_count > 0 && a->recv_mem->kind != MXH_MEM_HOST) {
            a->nb.rbytes  = type_span(a->dt, u.recv_count, &a->nb.rlb);
            a->nb.rmirror = mxh_mem_stage_get(a->recv_mem, a->nb.rbytes, &a->nb.rgot);
            if (a->nb.rmirror == NULL)
                st = MXH_ERR_NO_MEMORY;
            else if (u.recv_in)
                st = mxh_mem_copy_sync(a->recv_mem, a->nb.rmirror,
                                       (char *)a->recvbuf + a->nb.rlb, a->nb.rbytes);
            r               = a->nb.rmirror - a->nb.rlb;
            a->nb.recv_out  = u.recv_out;
        }
        if (st != MXH_OK) {
            mxh_error("%s: staging the buffers failed", a->func);
            plain_undo(a);
            return st;
        }
        /* MPI's collective runs on the host copies: a reduction's input is reduced there */
        size_t in = a->nb.smirror != NULL ? a->nb.sbytes : u.recv_in ? a->nb.rbytes : 0;
        count_staged(a, a->nb.sbytes + (u.recv_in ? a->nb.rbytes : 0) +
                            (u.recv_out ? a->nb.rbytes : 0),
                     mxh_coll_info(a->coll)->reducing ? in : 0);
    }
    size_t (*inplace)(const mxh_coll_args_t *) = ops_of(a)->inplace_copy;
    size_t n;
    if (s == MPI_IN_PLACE && inplace != NULL && (n = inplace(a)) > 0) {
        void *copy;
        if (typed_copy(r, (int)n, a->dt, &copy, &a->nb.copy) != MPI_SUCCESS) {
            mxh_error("%s: cannot copy the in-place buffer", a->func);
            plain_undo(a);
            return MXH_ERR_NO_MEMORY;
        }
        s = copy;
    }
    rc = ops_of(a)->impi(a, s, r, &a->nb.req);
    if (rc != MPI_SUCCESS) {
        a->mpi_rc = rc;
        plain_undo(a);
        return MXH_ERR_MPI;
    }
    a->nb.posted = 1;
    return MXH_OK;
}

static mxh_status_t plain_complete(mxh_coll_args_t *a)
{
    mxh_status_t st = MXH_OK;
    int rc = mxh_task_wait(&a->nb.req, MPI_STATUS_IGNORE);

    if (rc != MPI_SUCCESS) {
        a->mpi_rc = rc;
        st        = MXH_ERR_MPI;
    } else if (a->nb.rmirror != NULL && a->nb.recv_out) {
        st = copy_wait(a->recv_mem, (char *)a->recvbuf + a->nb.rlb, a->nb.rmirror,
                       a->nb.rbytes);
    }
    plain_undo(a);
    return st;
}

static mxh_status_t task_body(void *arg)
{
    mxh_coll_args_t *a = arg;
    mxh_status_t st;
    lvl_start(a);
    st = a->nb.posted ? plain_complete(a) : body(a);
    free(a->varr);
    a->varr = NULL;
    mxh_metrics_record(a, 0);
    return st;
}

/* A nonblocking v-collective keeps its own copies of the count and
 * displacement arrays: the caller may reuse its arrays once the call returns. */
static mxh_status_t copy_varrays(mxh_coll_args_t *a)
{
    const int **arr[4] = {&a->rcounts, &a->rdispls, &a->scounts, &a->sdispls};
    size_t n = (size_t)a->size;
    int *p;

    a->varr = NULL;
    if (!mxh_coll_info(a->coll)->vector || n == 0)
        return MXH_OK;
    p = malloc(4 * n * sizeof(int));
    if (p == NULL)
        return MXH_ERR_NO_MEMORY;
    a->varr = p;
    for (int k = 0; k < 4; k++, p += n)
        if (*arr[k] != NULL) {
            memcpy(p, *arr[k], n * sizeof(int));
            *arr[k] = p;
        }
    return MXH_OK;
}

/* Post @a as a task: with a generalized request in *@req, or owned (@done
 * with @ctx, coll.h: mxh_coll_start_owned). */
static mxh_status_t coll_post(const mxh_coll_args_t *a, MPI_Request *req, mxh_task_done_fn done,
                              void *ctx)
{
    mxh_task_queue_t *q;
    mxh_coll_args_t *ta;
    mxh_status_t st;
    mxh_task_t *t;

    ((mxh_coll_args_t *)a)->mstats = mxh_metrics_of(a); /* before the queue's attribute */
    if (a->path == MXH_PATH_NONE) {
        ((mxh_coll_args_t *)a)->t0 = mxh_ticks();
        mxh_metrics_record(a, 0);
        if (done == NULL)
            return mxh_task_done_request(req);
        done(ctx, MXH_OK, (void *)a);
        return MXH_OK;
    }
    if (a->staged && (st = mem_enter(a)) != MXH_OK)
        return st;
    /* one FIFO per communicator for every path: requests complete in order */
    q = a->hier != NULL ? a->hier->queue : mxh_comm_queue(a->comm);
    t = q != NULL ? mxh_task_new() : NULL;
    if (t == NULL) {
        mxh_error("%s: cannot allocate a task", a->func);
        return MXH_ERR_NO_MEMORY;
    }
    _Static_assert(sizeof(mxh_coll_args_t) <= MXH_TASK_ARGS_MAX, "task argument space");
    ta = mxh_task_args(t);
    memcpy(ta, a, sizeof(*a));
    memset(&ta->nb, 0, sizeof(ta->nb)); /* unset by the entry layer (coll.h) */
    ta->t0        = ta->mstats != NULL ? mxh_ticks() : 0;
    if (copy_varrays(ta) != MXH_OK) {
        mxh_task_discard(t);
        mxh_error("%s: cannot copy the count arrays", a->func);
        return MXH_ERR_NO_MEMORY;
    }
    /* (a call that tries the device node level first runs as a task on every rank) */
    if (a->path == MXH_PATH_PLAIN && !self_device(ta) && !ipc_single_considered(ta) &&
        (st = plain_post(ta)) != MXH_OK) {
        ((mxh_coll_args_t *)a)->mpi_rc = ta->mpi_rc;
        free(ta->varr);
        mxh_task_discard(t);
        return st;
    }
    if (done == NULL)
        return mxh_task_post(q, t, task_body, a->func, req);
    /* a pipelined schedule's first messages go out now (the network overlaps
     * what the caller does next); the others start at the next progress or run
     * on the waiting caller's stack */
    return mxh_task_post_owned(q, t, task_body, a->func, done, ctx,
                               a->path == MXH_PATH_RAILX ||
                                   (a->path == MXH_PATH_SCHED &&
                                    a->choice.algo == MXH_ALGO_PIPELINE));
}

mxh_status_t mxh_coll_start(const mxh_coll_args_t *a, MPI_Request *req)
{
    return coll_post(a, req, NULL, NULL);
}

mxh_status_t mxh_coll_start_owned(const mxh_coll_args_t *a, mxh_task_done_fn done, void *ctx)
{
    return coll_post(a, NULL, done, ctx);
}
