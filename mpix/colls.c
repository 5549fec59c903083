/* MPIX_Hier_ collectives: check arguments, choose hierarchical or plain MPI
 * (a decision every rank takes identically from the same arguments), run the
 * cached plan on a work buffer. */
#include "config.h"

#include "coll/exec.h"
#include "gpu/gpu_coll.h"
#include "mpix_internal.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "sim/sim.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(_expr)                                                           \
    do {                                                                       \
        int _rc = (_expr);                                                     \
        if (_rc != MPI_SUCCESS)                                                \
            return _rc;                                                        \
    } while (0)

/* SimGrid model mode: MPI's reductions are charged like ours (util/sim.h). */
#ifdef MXH_SIMGRID
#define SIM_OP(_op) ((_op) = mxh_sim_mpi_op(_op))
#else
#define SIM_OP(_op) ((void)0)
#endif

/* The hierarchy of @comm and the algorithm for a message of @bytes per rank
 * and @work_bytes in the whole vector (identical on every rank). NULL with
 * *rc == MPI_SUCCESS: use the plain MPI collective. */
static mxh_hier_t *choose(MPI_Comm comm, mxh_coll_t coll, size_t bytes, size_t work_bytes,
                          size_t elements, const char *func, mxh_choice_t *choice, int *rc)
{
    mxh_hier_t *h = NULL;

    *rc = mxh_hier_get(comm, func, &h);
    if (*rc != MPI_SUCCESS || elements > INT_MAX)
        return NULL;
    *choice = mxh_hier_select(h, coll, bytes, work_bytes);
    return choice->algo == MXH_ALGO_MPI ? NULL : h;
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

/* Run a hierarchical schedule on @work (sched->work_count elements). */
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

static int run_sched_io(mxh_hier_t *h, MPI_Comm comm, const mxh_sched_t *sched, void *work,
                        MPI_Datatype dt, size_t tsize, MPI_Op op, const char *func,
                        mxh_frag_fn in, mxh_frag_fn out, frag_io_t *io)
{
    mxh_exec_ctx_t ctx = {h->level_comm, h->shm, dt, tsize, op, h->reqs, in, NULL, out, io};
    /* allreduce/reduce: the first step may read the send buffer in place of a copy */
    if (in == frag_copy_in)
        ctx.src = io->src;
    size_t tmp_bytes   = mxh_exec_tmp_count(sched, &ctx) * tsize;
    void *tmp          = mxh_hier_tmp(h, tmp_bytes);
    if (tmp == NULL)
        return mxh_raise(comm, MPI_ERR_NO_MEM, func, "cannot allocate %zu bytes of scratch",
                         tmp_bytes);
    mxh_status_t st    = mxh_exec_sched(sched, &ctx, work, tmp);
    if (st != MXH_OK)
        return mxh_raise_status(comm, st, func);
    return MPI_SUCCESS;
}

static int run_sched(mxh_hier_t *h, MPI_Comm comm, const mxh_sched_t *sched, void *work,
                     MPI_Datatype dt, size_t tsize, MPI_Op op, const char *func)
{
    return run_sched_io(h, comm, sched, work, dt, tsize, op, func, NULL, NULL, NULL);
}

static int get_sched(mxh_hier_t *h, MPI_Comm comm, mxh_coll_t coll, size_t count, int root,
                     size_t tsize, const mxh_choice_t *choice, const char *func,
                     const mxh_sched_t **sched_p)
{
    mxh_status_t st = mxh_hier_sched(h, coll, count, root, tsize, choice, sched_p);
    return st == MXH_OK ? MPI_SUCCESS : mxh_raise_status(comm, st, func);
}

/* Device or managed memory: the GPU path (every rank of the communicator takes
 * it together; without CUDA the check is an inline "host"). */
#define GPU_DISPATCH(_comm, _func, _send, _recv, _nonempty, _call)                     \
    do {                                                                               \
        int _on_gpu = 0;                                                               \
        mxh_status_t _gst = mxh_gpu_mem_kinds((_send), (_recv), (_nonempty), &_on_gpu); \
        if (_gst != MXH_OK)                                                            \
            return mxh_raise_status((_comm), _gst, (_func));                          \
        if (_on_gpu) {                                                                 \
            mxh_hier_t *_h;                                                            \
            CHECK(mxh_hier_get((_comm), (_func), &_h));                                \
            _gst = (_call);                                                            \
            return _gst == MXH_OK ? MPI_SUCCESS : mxh_raise_status((_comm), _gst, (_func)); \
        }                                                                              \
    } while (0)

static int shm_done(MPI_Comm comm, mxh_status_t st, const char *func)
{
    return st == MXH_OK ? MPI_SUCCESS : mxh_raise_status(comm, st, func);
}

/* Equal blocks of @count elements in rank order (shared-memory block collectives). */
static void block_parts(mxh_hier_t *h, int count)
{
    for (int r = 0; r < h->size; r++) {
        h->blk_counts[r] = count;
        h->blk_displs[r] = r * count;
    }
}

int MPIX_Hier_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm)
{
    static const char F[] = "MPIX_Hier_allreduce";
    size_t tsize = 0, bytes;
    int hier_op = 0, rc = MPI_SUCCESS;
    mxh_hier_t *h;
    mxh_choice_t choice;
    const mxh_sched_t *sched;

    CHECK(mxh_check_comm(comm, F));
    CHECK(mxh_check_count(comm, count, "count", F));
    CHECK(mxh_check_dtype(comm, datatype, "datatype", F));
    CHECK(mxh_check_op(comm, op, datatype, &hier_op, F));
    CHECK(mxh_check_buf(comm, recvbuf, count, "recvbuf", F));
    if (sendbuf != MPI_IN_PLACE)
        CHECK(mxh_check_buf(comm, sendbuf, count, "sendbuf", F));
    CHECK(check_alias(comm, sendbuf, recvbuf, count, F));
    GPU_DISPATCH(comm, F, sendbuf, recvbuf, count > 0,
                 mxh_gpu_allreduce(_h, sendbuf, recvbuf, count, datatype, op));
    op = mxh_reduce_mpi_op(datatype, op); /* half types: our op; others unchanged */
    SIM_OP(op);
    if (!mxh_dtype_is_plain(datatype, &tsize) || !hier_op)
        return MPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    if (count == 0)
        return MPI_SUCCESS;
    bytes = (size_t)count * tsize;
    h     = choose(comm, MXH_COLL_ALLREDUCE, bytes, bytes, (size_t)count, F, &choice, &rc);
    if (h == NULL)
        return rc != MPI_SUCCESS ? rc : MPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    if (choice.algo == MXH_ALGO_SHM)
        return shm_done(comm,
                        mxh_shm_allreduce(h->shm_all, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf,
                                          recvbuf, (size_t)count, datatype, tsize, op),
                        F);
    CHECK(get_sched(h, comm, MXH_COLL_ALLREDUCE, (size_t)count, -1, tsize, &choice, F, &sched));
    frag_io_t io = {sendbuf, NULL, 0, 0, 0};
    return run_sched_io(h, comm, sched, recvbuf, datatype, tsize, op, F,
                        sendbuf != MPI_IN_PLACE ? frag_copy_in : NULL, NULL, &io);
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

int MPIX_Hier_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    static const char F[] = "MPIX_Hier_reduce_scatter_block";
    size_t tsize = 0, block;
    int hier_op = 0, rc = MPI_SUCCESS, size, rank;
    mxh_hier_t *h;
    mxh_choice_t choice;
    const mxh_sched_t *sched;

    CHECK(mxh_check_comm(comm, F));
    CHECK(mxh_check_count(comm, recvcount, "recvcount", F));
    CHECK(mxh_check_dtype(comm, datatype, "datatype", F));
    CHECK(mxh_check_op(comm, op, datatype, &hier_op, F));
    CHECK(mxh_check_buf(comm, recvbuf, recvcount, "recvbuf", F));
    if (sendbuf != MPI_IN_PLACE)
        CHECK(mxh_check_buf(comm, sendbuf, recvcount, "sendbuf", F));
    CHECK(check_alias(comm, sendbuf, recvbuf, recvcount, F));
    GPU_DISPATCH(comm, F, sendbuf, recvbuf, recvcount > 0,
                 mxh_gpu_reduce_scatter_block(_h, sendbuf, recvbuf, recvcount, datatype, op));
    op = mxh_reduce_mpi_op(datatype, op);
    SIM_OP(op);
    if (!mxh_dtype_is_plain(datatype, &tsize) || !hier_op)
        return plain_reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, F);
    if (recvcount == 0)
        return MPI_SUCCESS;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    block = (size_t)recvcount * tsize;
    h = choose(comm, MXH_COLL_REDUCE_SCATTER_BLOCK, block, block * (size_t)size,
               (size_t)recvcount * (size_t)size, F, &choice, &rc);
    if (h == NULL)
        return rc != MPI_SUCCESS
                   ? rc
                   : plain_reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, F);

    const char *in = sendbuf == MPI_IN_PLACE ? (const char *)recvbuf : (const char *)sendbuf;
    if (choice.algo == MXH_ALGO_SHM) {
        /* in place, rank r's result lands on block 0 of its own input: only rank 0
         * may write straight into it */
        char *out = sendbuf == MPI_IN_PLACE && rank != 0 ? mxh_hier_scratch(h, block) : recvbuf;
        if (out == NULL)
            return mxh_raise(comm, MPI_ERR_NO_MEM, F, "cannot allocate %zu bytes of scratch",
                             block);
        block_parts(h, recvcount);
        rc = shm_done(comm,
                      mxh_shm_reduce_scatter(h->shm_all, in, out, h->blk_counts, h->blk_displs,
                                             datatype, tsize, op),
                      F);
        if (rc == MPI_SUCCESS && out != recvbuf)
            mxh_copy(recvbuf, out, block);
        return rc;
    }
    CHECK(get_sched(h, comm, MXH_COLL_REDUCE_SCATTER_BLOCK, (size_t)recvcount, -1, tsize,
                    &choice, F, &sched));
    char *work = mxh_hier_scratch(h, block * (size_t)size);
    if (work == NULL)
        return mxh_raise(comm, MPI_ERR_NO_MEM, F, "cannot allocate %zu bytes of scratch",
                         block * (size_t)size);
    frag_io_t io = {in, NULL, block, size, rank};
    CHECK(run_sched_io(h, comm, sched, work, datatype, tsize, op, F, frag_pack_all, NULL, &io));
    unpack_block(sched, work, rank, recvbuf, tsize);
    return MPI_SUCCESS;
}

int MPIX_Hier_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char F[] = "MPIX_Hier_allgather";
    size_t tsize = 0, block;
    int rc = MPI_SUCCESS, size, rank;
    mxh_hier_t *h;
    mxh_choice_t choice;
    const mxh_sched_t *sched;

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
    GPU_DISPATCH(comm, F, sendbuf, recvbuf, recvcount > 0,
                 mxh_gpu_allgather(_h, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                   recvtype));
    if (!mxh_dtype_is_plain(recvtype, &tsize) ||
        (sendbuf != MPI_IN_PLACE && (sendtype != recvtype || sendcount != recvcount)))
        return MPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    if (recvcount == 0)
        return MPI_SUCCESS;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    block = (size_t)recvcount * tsize;
    h = choose(comm, MXH_COLL_ALLGATHER, block, block * (size_t)size,
               (size_t)recvcount * (size_t)size, F, &choice, &rc);
    if (h == NULL)
        return rc != MPI_SUCCESS ? rc
                                 : MPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                                 recvtype, comm);

    const char *mine = sendbuf == MPI_IN_PLACE ? (const char *)recvbuf + (size_t)rank * block
                                               : (const char *)sendbuf;
    if (choice.algo == MXH_ALGO_SHM) {
        block_parts(h, recvcount);
        return shm_done(comm,
                        mxh_shm_allgather(h->shm_all, mine, recvbuf, h->blk_counts, h->blk_displs,
                                          recvtype, tsize),
                        F);
    }
    CHECK(get_sched(h, comm, MXH_COLL_ALLGATHER, (size_t)recvcount, -1, tsize, &choice, F,
                    &sched));
    int identity = sched->nfrag == 1;
    for (int d = 0; d < size && identity; d++)
        identity = sched->plan->block_pos[d] == d;
    char *work = identity ? (char *)recvbuf : mxh_hier_scratch(h, block * (size_t)size);
    if (work == NULL)
        return mxh_raise(comm, MPI_ERR_NO_MEM, F, "cannot allocate %zu bytes of scratch",
                         block * (size_t)size);
    frag_io_t io = {mine, recvbuf, block, size, rank};
    if (identity && work + (size_t)rank * block != mine)
        mxh_copy(work + (size_t)rank * block, mine, block);
    return run_sched_io(h, comm, sched, work, recvtype, tsize, MPI_OP_NULL, F,
                        identity ? NULL : frag_pack_mine, identity ? NULL : frag_unpack_all, &io);
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
    size_t tsize = 0, bytes;
    int rc = MPI_SUCCESS;
    mxh_hier_t *h;
    mxh_choice_t choice;
    const mxh_sched_t *sched;

    CHECK(mxh_check_comm(comm, F));
    CHECK(mxh_check_count(comm, count, "count", F));
    CHECK(mxh_check_dtype(comm, datatype, "datatype", F));
    CHECK(check_root(comm, root, F));
    CHECK(mxh_check_buf(comm, buffer, count, "buffer", F));
    GPU_DISPATCH(comm, F, buffer, NULL, count > 0,
                 mxh_gpu_bcast(_h, buffer, count, datatype, root));
    if (!mxh_dtype_is_plain(datatype, &tsize))
        return MPI_Bcast(buffer, count, datatype, root, comm);
    if (count == 0)
        return MPI_SUCCESS;
    bytes = (size_t)count * tsize;
    h     = choose(comm, MXH_COLL_BCAST, bytes, bytes, (size_t)count, F, &choice, &rc);
    if (h == NULL)
        return rc != MPI_SUCCESS ? rc : MPI_Bcast(buffer, count, datatype, root, comm);
    if (choice.algo == MXH_ALGO_SHM)
        return shm_done(comm, mxh_shm_bcast(h->shm_all, buffer, (size_t)count, tsize, root), F);
    CHECK(get_sched(h, comm, MXH_COLL_BCAST, (size_t)count, root, tsize, &choice, F, &sched));
    return run_sched(h, comm, sched, buffer, datatype, tsize, MPI_OP_NULL, F);
}

int MPIX_Hier_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, int root, MPI_Comm comm)
{
    static const char F[] = "MPIX_Hier_reduce";
    size_t tsize = 0, bytes;
    int hier_op = 0, rc = MPI_SUCCESS, rank;
    mxh_hier_t *h;
    mxh_choice_t choice;
    const mxh_sched_t *sched;

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
    GPU_DISPATCH(comm, F, sendbuf, rank == root ? recvbuf : NULL, count > 0,
                 mxh_gpu_reduce(_h, sendbuf, recvbuf, count, datatype, op, root));
    op = mxh_reduce_mpi_op(datatype, op);
    SIM_OP(op);
    if (!mxh_dtype_is_plain(datatype, &tsize) || !hier_op)
        return plain_reduce(sendbuf, recvbuf, count, datatype, op, root, comm, F);
    if (count == 0)
        return MPI_SUCCESS;
    bytes = (size_t)count * tsize;
    h     = choose(comm, MXH_COLL_REDUCE, bytes, bytes, (size_t)count, F, &choice, &rc);
    if (h == NULL)
        return rc != MPI_SUCCESS ? rc
                                 : plain_reduce(sendbuf, recvbuf, count, datatype, op, root, comm, F);
    if (choice.algo == MXH_ALGO_SHM)
        return shm_done(comm,
                        mxh_shm_reduce(h->shm_all, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf,
                                       rank == root ? recvbuf : NULL, (size_t)count, datatype,
                                       tsize, op, root),
                        F);
    CHECK(get_sched(h, comm, MXH_COLL_REDUCE, (size_t)count, root, tsize, &choice, F, &sched));
    void *work = recvbuf;
    if (rank != root) {
        work = mxh_hier_scratch(h, bytes);
        if (work == NULL)
            return mxh_raise(comm, MPI_ERR_NO_MEM, F, "cannot allocate %zu bytes of scratch",
                             bytes);
    }
    frag_io_t io = {sendbuf, NULL, 0, 0, 0};
    return run_sched_io(h, comm, sched, work, datatype, tsize, op, F,
                        sendbuf != MPI_IN_PLACE ? frag_copy_in : NULL, NULL, &io);
}
