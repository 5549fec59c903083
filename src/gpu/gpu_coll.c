/* GPU executor: see gpu_coll.h. */
#include "config.h"

#include "gpu/gpu.h"
#include "gpu/gpu_coll.h"
#include "reduce/reduce_cuda.h"
#include "util/log.h"

#include <cuda_runtime_api.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define NSLOT      4                 /* fragments in flight per direction */
#define FRAG_BYTES ((size_t)1 << 20) /* pipeline fragment (a multiple of 16) */
#define GPU_TAG    7178

/* the half types and their mapped ops belong to src/reduce (weak: the GPU path
 * works without them, minus fp16/bf16) */
typedef enum { HALF_NONE = 0, HALF_FP16 = 1, HALF_BF16 = 2 } half_kind_t;
extern int mxh_half_kind(MPI_Datatype dt) __attribute__((weak));
extern int mxh_half_op_lookup(MPI_Op op, int *kind, MPI_Op *base) __attribute__((weak));
extern MPI_Op mxh_reduce_mpi_op(MPI_Datatype dt, MPI_Op op) __attribute__((weak));

static mxh_gpu_stats_t last_stats;

void mxh_gpu_last_stats(mxh_gpu_stats_t *stats)
{
    *stats = last_stats;
}

/* ---- per-communicator state: an attribute of the hierarchy's private comm ---- */

typedef struct gpu_state {
    int          device;
    MPI_Comm     node, outer;    /* IPC group; ring across nodes (NULL: not in it) */
    int          node_rank, node_size, outer_rank, outer_size;
    int          regular;        /* every node has the same number of ranks */
    int          ipc_ok;         /* CUDA IPC works between the ranks of every node */
    int          direct;         /* MPI takes device pointers */
    int         *li_of;          /* [comm size] local index of each rank */
    int         *node_of;        /* [comm size] node of each rank */
    int         *rank_of_node;   /* [node size] comm rank of each node rank */
    cudaStream_t s_main, s_d2h, s_h2d;
    cudaEvent_t  ev_d2h[NSLOT], ev_h2d[NSLOT], ev_red[NSLOT], ev_step;
    char        *pin_send, *pin_recv; /* NSLOT fragments each (pinned) */
    void        *dtmp;                /* NSLOT fragments (device) */
    void        *dbuf[3];             /* device scratch: staged input, output, work */
    size_t       dbuf_size[3];
    void        *hbuf[2];             /* pinned host copies for the plain path */
    size_t       hbuf_size[2];
} gpu_state_t;

static int state_keyval = MPI_KEYVAL_INVALID;
static int live_states;

static void state_destroy(gpu_state_t *st)
{
    if (st == NULL)
        return;
    if (st->s_main)
        cudaStreamSynchronize(st->s_main);
    for (int i = 0; i < 3; i++)
        if (st->dbuf[i])
            cudaFree(st->dbuf[i]);
    for (int i = 0; i < 2; i++)
        if (st->hbuf[i])
            cudaFreeHost(st->hbuf[i]);
    if (st->dtmp)
        cudaFree(st->dtmp);
    if (st->pin_recv)
        cudaFreeHost(st->pin_recv);
    if (st->pin_send)
        cudaFreeHost(st->pin_send);
    if (st->ev_step)
        cudaEventDestroy(st->ev_step);
    for (int i = NSLOT - 1; i >= 0; i--) {
        if (st->ev_red[i])
            cudaEventDestroy(st->ev_red[i]);
        if (st->ev_h2d[i])
            cudaEventDestroy(st->ev_h2d[i]);
        if (st->ev_d2h[i])
            cudaEventDestroy(st->ev_d2h[i]);
    }
    if (st->s_h2d)
        cudaStreamDestroy(st->s_h2d);
    if (st->s_d2h)
        cudaStreamDestroy(st->s_d2h);
    if (st->s_main)
        cudaStreamDestroy(st->s_main);
    (void)cudaGetLastError();
    if (st->outer != MPI_COMM_NULL)
        MPI_Comm_free(&st->outer);
    if (st->node != MPI_COMM_NULL)
        MPI_Comm_free(&st->node);
    free(st->rank_of_node);
    free(st->node_of);
    free(st->li_of);
    free(st);
    if (--live_states == 0)
        mxh_gpu_ipc_close_all();
}

static int state_delete_fn(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    state_destroy((gpu_state_t *)attr);
    return MPI_SUCCESS;
}

#define CU(_what, _call)                                                       \
    do {                                                                       \
        if (err == MXH_OK)                                                     \
            err = mxh_gpu_cuda((_call), (_what));                              \
    } while (0)

/* Resources of this rank; MXH_OK or the first failure (logged). */
static mxh_status_t state_alloc(gpu_state_t *st)
{
    mxh_status_t err = MXH_OK;
    CU("cudaStreamCreate", cudaStreamCreateWithFlags(&st->s_main, cudaStreamNonBlocking));
    CU("cudaStreamCreate", cudaStreamCreateWithFlags(&st->s_d2h, cudaStreamNonBlocking));
    CU("cudaStreamCreate", cudaStreamCreateWithFlags(&st->s_h2d, cudaStreamNonBlocking));
    for (int i = 0; i < NSLOT; i++) {
        CU("cudaEventCreate", cudaEventCreateWithFlags(&st->ev_d2h[i], cudaEventDisableTiming));
        CU("cudaEventCreate", cudaEventCreateWithFlags(&st->ev_h2d[i], cudaEventDisableTiming));
        CU("cudaEventCreate", cudaEventCreateWithFlags(&st->ev_red[i], cudaEventDisableTiming));
    }
    CU("cudaEventCreate", cudaEventCreateWithFlags(&st->ev_step, cudaEventDisableTiming));
    CU("cudaMallocHost (pipeline buffers)", cudaMallocHost((void **)&st->pin_send, NSLOT * FRAG_BYTES));
    CU("cudaMallocHost (pipeline buffers)", cudaMallocHost((void **)&st->pin_recv, NSLOT * FRAG_BYTES));
    CU("cudaMalloc (pipeline buffers)", cudaMalloc(&st->dtmp, NSLOT * FRAG_BYTES));
    return err;
}

/* Whether CUDA IPC works on this node: every rank exports a small buffer and
 * opens its peers' (agreed over the whole communicator by the caller). */
static mxh_status_t ipc_probe(gpu_state_t *st, int *ok)
{
    mxh_ipc_desc_t mine, *all;
    mxh_status_t err = MXH_OK;

    *ok = 1;
    if (st->node_size == 1)
        return MXH_OK;
    all = calloc((size_t)st->node_size, sizeof(*all));
    if (all == NULL)
        return MXH_ERR_NO_MEMORY;
    memset(&mine, 0, sizeof(mine));
    if (st->dtmp != NULL)
        err = mxh_gpu_ipc_export(st->dtmp, &mine);
    MPI_Allgather(&mine, (int)sizeof(mine), MPI_BYTE, all, (int)sizeof(mine), MPI_BYTE, st->node);
    for (int q = 0; q < st->node_size && err == MXH_OK; q++) {
        void *p = NULL;
        if (q == st->node_rank)
            continue;
        if (!all[q].valid || mxh_gpu_ipc_open(&all[q], &p) != MXH_OK) {
            mxh_warn("CUDA IPC to node rank %d is not possible: device buffers on this node go "
                     "through host copies", q);
            *ok = 0;
        }
    }
    free(all);
    return err;
}

static mxh_status_t state_get(mxh_hier_t *h, gpu_state_t **st_p)
{
    gpu_state_t *st;
    void *attr = NULL;
    int flag = 0, n = h->size, me = h->rank, verdict[2], mine[2];
    mxh_status_t err = MXH_OK;
    const mxh_layout_t *L = h->layout;

    if (state_keyval == MPI_KEYVAL_INVALID &&
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, state_delete_fn, &state_keyval, NULL) !=
            MPI_SUCCESS)
        return MXH_ERR_MPI;
    if (MPI_Comm_get_attr(h->comm, state_keyval, &attr, &flag) == MPI_SUCCESS && flag && attr) {
        *st_p = attr;
        return MXH_OK;
    }
    /* collective from here: every rank builds its state */
    st = calloc(1, sizeof(*st));
    if (st == NULL)
        return MXH_ERR_NO_MEMORY; /* hopeless anyway; peers will report the hang cause */
    live_states++;
    st->node = st->outer = MPI_COMM_NULL;
    st->device  = mxh_gpu_current_device();
    st->li_of   = calloc((size_t)n, sizeof(int));
    st->node_of = calloc((size_t)n, sizeof(int));
    int *node_count = calloc((size_t)L->nnodes + 1, sizeof(int));
    if (st->li_of == NULL || st->node_of == NULL || node_count == NULL)
        err = MXH_ERR_NO_MEMORY;
    for (int r = 0; r < n && err == MXH_OK; r++) {
        st->node_of[r] = L->node_of[r];
        st->li_of[r]   = node_count[L->node_of[r]]++;
    }
    st->regular = 1;
    for (int v = 1; v < L->nnodes && err == MXH_OK; v++)
        st->regular &= node_count[v] == node_count[0];
    free(node_count);
    int color = err == MXH_OK ? st->node_of[me] : 0;
    MPI_Comm_split(h->comm, color, me, &st->node);
    MPI_Comm_rank(st->node, &st->node_rank);
    MPI_Comm_size(st->node, &st->node_size);
    int li = err == MXH_OK ? st->li_of[me] : 0;
    MPI_Comm_split(h->comm, st->regular ? li : (li == 0 ? 0 : MPI_UNDEFINED), me, &st->outer);
    if (st->outer != MPI_COMM_NULL) {
        MPI_Comm_set_errhandler(st->outer, MPI_ERRORS_RETURN);
        MPI_Comm_rank(st->outer, &st->outer_rank);
        MPI_Comm_size(st->outer, &st->outer_size);
    }
    MPI_Comm_set_errhandler(st->node, MPI_ERRORS_RETURN);
    st->rank_of_node = calloc((size_t)st->node_size, sizeof(int));
    if (st->rank_of_node == NULL && err == MXH_OK)
        err = MXH_ERR_NO_MEMORY;
    MPI_Allgather(&me, 1, MPI_INT, st->rank_of_node ? st->rank_of_node : &li, st->rank_of_node ? 1 : 0,
                  MPI_INT, st->node);
    if (err == MXH_OK)
        err = state_alloc(st);
    int ipc = 1;
    if (err == MXH_OK)
        err = ipc_probe(st, &ipc);
    else
        ipc_probe(st, &ipc); /* matching the allgather */
    st->direct = 1;
    for (int r = 0; r < n; r++)
        st->direct &= (h->recs[r].flags & MXH_REC_MPI_CUDA) != 0;
    mine[0] = err != MXH_OK ? me + 1 : 0;
    mine[1] = ipc ? 0 : 1;
    MPI_Allreduce(mine, verdict, 2, MPI_INT, MPI_MAX, h->comm);
    st->ipc_ok = verdict[1] == 0;
    if (verdict[0] != 0) {
        if (err == MXH_OK)
            mxh_error("setting up the GPU path failed on rank %d (see its log)", verdict[0] - 1);
        state_destroy(st);
        return err != MXH_OK ? err : MXH_GPU_ERR_CUDA;
    }
    if (MPI_Comm_set_attr(h->comm, state_keyval, st) != MPI_SUCCESS) {
        state_destroy(st);
        return MXH_ERR_MPI;
    }
    mxh_debug("gpu: device %d, node rank %d/%d, outer %d/%d, %s nodes, IPC %s, MPI %s", st->device,
              st->node_rank, st->node_size, st->outer_rank, st->outer_size,
              st->regular ? "even" : "uneven", st->ipc_ok ? "yes" : "no",
              st->direct ? "CUDA-aware" : "staged through host");
    *st_p = st;
    return MXH_OK;
}

/* Grow device scratch @i to @bytes (geometric, so that sizes settle). */
static void *dscratch(gpu_state_t *st, int i, size_t bytes, mxh_status_t *err)
{
    if (*err != MXH_OK)
        return NULL;
    if (bytes > st->dbuf_size[i] || st->dbuf[i] == NULL) {
        size_t want = bytes > 2 * st->dbuf_size[i] ? bytes : 2 * st->dbuf_size[i];
        if (want == 0)
            want = 256;
        if (st->dbuf[i]) {
            cudaStreamSynchronize(st->s_main);
            cudaFree(st->dbuf[i]);
        }
        st->dbuf[i]      = NULL;
        st->dbuf_size[i] = 0;
        *err = mxh_gpu_cuda(cudaMalloc(&st->dbuf[i], want), "cudaMalloc (device scratch)");
        if (*err != MXH_OK)
            return NULL;
        st->dbuf_size[i] = want;
    }
    return st->dbuf[i];
}

static void *hscratch(gpu_state_t *st, int i, size_t bytes, mxh_status_t *err)
{
    if (*err != MXH_OK)
        return NULL;
    if (bytes > st->hbuf_size[i] || st->hbuf[i] == NULL) {
        size_t want = bytes > 2 * st->hbuf_size[i] ? bytes : 2 * st->hbuf_size[i];
        if (want == 0)
            want = 256;
        if (st->hbuf[i])
            cudaFreeHost(st->hbuf[i]);
        st->hbuf[i]      = NULL;
        st->hbuf_size[i] = 0;
        *err = mxh_gpu_cuda(cudaMallocHost(&st->hbuf[i], want), "cudaMallocHost (host copies)");
        if (*err != MXH_OK)
            return NULL;
        st->hbuf_size[i] = want;
    }
    return st->hbuf[i];
}

/* Every rank learns whether the call failed anywhere (and so returns an error
 * too). Also the barrier that keeps buffers alive while peers read them. */
static mxh_status_t agree(MPI_Comm comm, mxh_status_t err)
{
    int rank, mine, any = 0;
    MPI_Comm_rank(comm, &rank);
    mine = err != MXH_OK ? rank + 1 : 0;
    if (MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS)
        return err != MXH_OK ? err : MXH_ERR_MPI;
    if (any != 0 && err == MXH_OK) {
        mxh_error("the GPU collective failed on rank %d (its log has the CUDA error)", any - 1);
        return MXH_GPU_ERR_CUDA;
    }
    return err;
}

/* ---- datatypes and ops ---------------------------------------------------------- */

static mxh_cuda_dt_t int_dt(MPI_Datatype dt, int is_signed)
{
    int size = 0;
    MPI_Type_size(dt, &size);
    switch (size) {
    case 1: return is_signed ? MXH_CUDA_I8 : MXH_CUDA_U8;
    case 2: return is_signed ? MXH_CUDA_I16 : MXH_CUDA_U16;
    case 4: return is_signed ? MXH_CUDA_I32 : MXH_CUDA_U32;
    case 8: return is_signed ? MXH_CUDA_I64 : MXH_CUDA_U64;
    default: return MXH_CUDA_DT_NONE;
    }
}

static mxh_cuda_dt_t float_dt(MPI_Datatype dt, int complex_)
{
    int size = 0;
    MPI_Type_size(dt, &size);
    if (complex_)
        return size == 8 ? MXH_CUDA_C32 : size == 16 ? MXH_CUDA_C64 : MXH_CUDA_DT_NONE;
    return size == 4 ? MXH_CUDA_F32 : size == 8 ? MXH_CUDA_F64 : MXH_CUDA_DT_NONE;
}

static mxh_cuda_dt_t cuda_dt(MPI_Datatype dt)
{
    if (dt == MPI_DATATYPE_NULL)
        return MXH_CUDA_DT_NONE;
    if (mxh_half_kind) {
        int k = mxh_half_kind(dt);
        if (k == HALF_FP16)
            return MXH_CUDA_F16;
        if (k == HALF_BF16)
            return MXH_CUDA_BF16;
    }
    const MPI_Datatype s[] = {MPI_SIGNED_CHAR, MPI_SHORT, MPI_INT, MPI_LONG, MPI_LONG_LONG_INT,
                              MPI_LONG_LONG, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T,
                              MPI_INTEGER, MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4,
                              MPI_INTEGER8, MPI_AINT, MPI_OFFSET, MPI_COUNT, MPI_LOGICAL};
    const MPI_Datatype u[] = {MPI_UNSIGNED_CHAR, MPI_UNSIGNED_SHORT, MPI_UNSIGNED,
                              MPI_UNSIGNED_LONG, MPI_UNSIGNED_LONG_LONG, MPI_UINT8_T,
                              MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T, MPI_BYTE, MPI_C_BOOL,
                              MPI_CXX_BOOL};
    const MPI_Datatype f[] = {MPI_FLOAT, MPI_DOUBLE, MPI_REAL, MPI_DOUBLE_PRECISION, MPI_REAL4,
                              MPI_REAL8};
    const MPI_Datatype c[] = {MPI_C_FLOAT_COMPLEX, MPI_C_COMPLEX, MPI_C_DOUBLE_COMPLEX,
                              MPI_COMPLEX, MPI_DOUBLE_COMPLEX, MPI_COMPLEX8, MPI_COMPLEX16,
                              MPI_CXX_FLOAT_COMPLEX, MPI_CXX_DOUBLE_COMPLEX};
    for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
        if (dt == s[i] && s[i] != MPI_DATATYPE_NULL)
            return int_dt(dt, 1);
    for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
        if (dt == u[i] && u[i] != MPI_DATATYPE_NULL)
            return int_dt(dt, 0);
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        if (dt == f[i] && f[i] != MPI_DATATYPE_NULL)
            return float_dt(dt, 0);
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
        if (dt == c[i] && c[i] != MPI_DATATYPE_NULL)
            return float_dt(dt, 1);
    return MXH_CUDA_DT_NONE;
}

static mxh_cuda_op_t cuda_op(MPI_Op op)
{
    if (mxh_half_op_lookup) {
        int kind = 0;
        MPI_Op base = MPI_OP_NULL;
        if (mxh_half_op_lookup(op, &kind, &base))
            op = base;
    }
    const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND,
                          MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR};
    for (int i = 0; i < MXH_CUDA_OP_COUNT; i++)
        if (op == ops[i])
            return (mxh_cuda_op_t)i;
    return MXH_CUDA_OP_NONE;
}

/* The op MPI gets for @dt on host copies (half types: the mapped user op). */
static MPI_Op host_op(MPI_Datatype dt, MPI_Op op)
{
    return mxh_reduce_mpi_op ? mxh_reduce_mpi_op(dt, op) : op;
}

/* ---- memory kinds ----------------------------------------------------------------- */

mxh_status_t mxh_gpu_mem_kinds(const void *sendbuf, const void *recvbuf, int nonempty,
                               int *on_gpu)
{
    mxh_gpu_mem_info_t a, b;
    mxh_status_t st;

    *on_gpu = 0;
    if (!mxh_gpu_present()) /* the host path's only cost: one cached flag */
        return MXH_OK;
    if (sendbuf == MPI_IN_PLACE)
        sendbuf = NULL;
    st = mxh_gpu_mem_query(sendbuf, "sendbuf", nonempty, &a);
    if (st == MXH_OK)
        st = mxh_gpu_mem_query(recvbuf, "recvbuf", nonempty, &b);
    if (st == MXH_OK)
        *on_gpu = a.kind != MXH_GPU_HOST || b.kind != MXH_GPU_HOST;
    return st;
}

static mxh_gpu_kind_t kind_of(const void *p)
{
    mxh_gpu_mem_info_t mi;
    if (p == NULL || p == MPI_IN_PLACE || mxh_gpu_mem_query(p, "buffer", 0, &mi) != MXH_OK)
        return MXH_GPU_HOST;
    return mi.kind;
}

/* ---- fragment pipeline between two ranks of the outer communicator ------------- */

typedef struct red {
    mxh_cuda_dt_t dt;
    mxh_cuda_op_t op;
} red_t;

static int ev_done(cudaEvent_t ev, mxh_status_t *err)
{
    cudaError_t rc = cudaEventQuery(ev);
    if (rc == cudaSuccess)
        return 1;
    if (rc == cudaErrorNotReady)
        return 0;
    if (*err == MXH_OK)
        *err = mxh_gpu_cuda(rc, "cudaEventQuery (pipeline)");
    return 1; /* keep the MPI side going: peers must not hang */
}

/* Send @sbytes at device @sptr to @dst while receiving @rbytes from @src into
 * device @rptr (with @red: rptr = received op rptr). MPI calls are made whatever
 * happens on the device, so a CUDA failure never leaves a peer waiting. */
static void xfer(gpu_state_t *st, MPI_Comm comm, const char *sptr, size_t sbytes, int dst,
                 char *rptr, size_t rbytes, int src, const red_t *red, mxh_status_t *errp)
{
    mxh_status_t err = *errp;
    size_t nsf = (sbytes + FRAG_BYTES - 1) / FRAG_BYTES, nrf = (rbytes + FRAG_BYTES - 1) / FRAG_BYTES;
    size_t d2h = 0, isent = 0, sdone = 0, rposted = 0, rdone = 0;
    MPI_Request sreq[NSLOT], rreq[NSLOT];
    const int direct = st->direct;
    size_t esz = red ? mxh_cuda_dt_size(red->dt) : 1;

    /* device work before this step (reductions on s_main) precedes the sends */
    CU("cudaEventRecord", cudaEventRecord(st->ev_step, st->s_main));
    if (direct)
        CU("cudaStreamSynchronize", cudaStreamSynchronize(st->s_main));
    else
        CU("cudaStreamWaitEvent", cudaStreamWaitEvent(st->s_d2h, st->ev_step, 0));

    while (sdone < nsf || rdone < nrf) {
        /* device -> pinned copies, NSLOT ahead of the completed sends */
        while (!direct && d2h < nsf && d2h < sdone + NSLOT) {
            size_t off = d2h * FRAG_BYTES, len = sbytes - off < FRAG_BYTES ? sbytes - off : FRAG_BYTES;
            int k = (int)(d2h % NSLOT);
            CU("cudaMemcpyAsync (device to host)",
               cudaMemcpyAsync(st->pin_send + (size_t)k * FRAG_BYTES, sptr + off, len,
                               cudaMemcpyDeviceToHost, st->s_d2h));
            CU("cudaEventRecord", cudaEventRecord(st->ev_d2h[k], st->s_d2h));
            d2h++;
        }
        /* sends, in order, once their copy is done */
        while (isent < nsf && isent < sdone + NSLOT &&
               (direct || (isent < d2h && (err != MXH_OK || ev_done(st->ev_d2h[isent % NSLOT], &err))))) {
            size_t off = isent * FRAG_BYTES, len = sbytes - off < FRAG_BYTES ? sbytes - off : FRAG_BYTES;
            const char *p = direct ? sptr + off : st->pin_send + (isent % NSLOT) * FRAG_BYTES;
            MPI_Isend(p, (int)len, MPI_BYTE, dst, GPU_TAG, comm, &sreq[isent % NSLOT]);
            isent++;
        }
        while (sdone < isent) {
            int flag = 0;
            MPI_Test(&sreq[sdone % NSLOT], &flag, MPI_STATUS_IGNORE);
            if (!flag)
                break;
            sdone++;
        }
        /* receives: post NSLOT ahead; a slot is free once its previous copy/reduction ran */
        while (rposted < nrf && rposted < rdone + NSLOT) {
            int k = (int)(rposted % NSLOT);
            if (rposted >= NSLOT && err == MXH_OK &&
                !ev_done(direct ? st->ev_red[k] : st->ev_h2d[k], &err))
                break;
            size_t off = rposted * FRAG_BYTES, len = rbytes - off < FRAG_BYTES ? rbytes - off : FRAG_BYTES;
            char *p = direct ? (red ? (char *)st->dtmp + (size_t)k * FRAG_BYTES : rptr + off)
                             : st->pin_recv + (size_t)k * FRAG_BYTES;
            MPI_Irecv(p, (int)len, MPI_BYTE, src, GPU_TAG, comm, &rreq[k]);
            rposted++;
        }
        while (rdone < rposted) {
            int flag = 0, k = (int)(rdone % NSLOT);
            MPI_Test(&rreq[k], &flag, MPI_STATUS_IGNORE);
            if (!flag)
                break;
            size_t off = rdone * FRAG_BYTES, len = rbytes - off < FRAG_BYTES ? rbytes - off : FRAG_BYTES;
            char *tmp = (char *)st->dtmp + (size_t)k * FRAG_BYTES;
            if (!direct) {
                if (red)
                    CU("cudaStreamWaitEvent", cudaStreamWaitEvent(st->s_h2d, st->ev_red[k], 0));
                CU("cudaMemcpyAsync (host to device)",
                   cudaMemcpyAsync(red ? tmp : rptr + off, st->pin_recv + (size_t)k * FRAG_BYTES,
                                   len, cudaMemcpyHostToDevice, st->s_h2d));
                CU("cudaEventRecord", cudaEventRecord(st->ev_h2d[k], st->s_h2d));
            }
            if (red) {
                const void *in[2] = {tmp, rptr + off};
                if (!direct)
                    CU("cudaStreamWaitEvent", cudaStreamWaitEvent(st->s_main, st->ev_h2d[k], 0));
                CU("reduction kernel", mxh_cuda_reduce(rptr + off, in, 2, len / esz, red->dt,
                                                       red->op, st->s_main));
                CU("cudaEventRecord", cudaEventRecord(st->ev_red[k], st->s_main));
            }
            rdone++;
        }
    }
    if (!direct && nrf > 0) {
        /* the pinned slots are reused by the next step; later device work follows the copies */
        CU("cudaEventRecord", cudaEventRecord(st->ev_step, st->s_h2d));
        CU("cudaStreamWaitEvent", cudaStreamWaitEvent(st->s_main, st->ev_step, 0));
        CU("cudaStreamSynchronize", cudaStreamSynchronize(st->s_h2d));
    }
    *errp = err;
}

/* Even split of @n over @g parts: part @x. */
static void part(size_t n, int g, int x, size_t *off, size_t *cnt)
{
    size_t q = n / (size_t)g, r = n % (size_t)g, ux = (size_t)x;
    *off = ux * q + (ux < r ? ux : r);
    *cnt = q + (ux < r);
}

/* Ring allreduce of @n elements at device @buf over the outer communicator. */
static void ring_allreduce(gpu_state_t *st, char *buf, size_t n, const red_t *red,
                           mxh_status_t *err)
{
    int M = st->outer_size, r = st->outer_rank, next = (r + 1) % M, prev = (r + M - 1) % M;
    size_t es = mxh_cuda_dt_size(red->dt), so, sc, ro, rc;

    for (int s = 0; s < M - 1; s++) {
        part(n, M, (r - s + 2 * M) % M, &so, &sc);
        part(n, M, (r - s - 1 + 2 * M) % M, &ro, &rc);
        xfer(st, st->outer, buf + so * es, sc * es, next, buf + ro * es, rc * es, prev, red, err);
    }
    for (int s = 0; s < M - 1; s++) {
        part(n, M, (r + 1 - s + 2 * M) % M, &so, &sc);
        part(n, M, (r - s + 2 * M) % M, &ro, &rc);
        xfer(st, st->outer, buf + so * es, sc * es, next, buf + ro * es, rc * es, prev, NULL, err);
    }
}

/* ---- buffers: what this rank exposes to its node ---------------------------------- */

/* A device pointer holding @bytes of @user for the kernels (and for peers when
 * @ipc): @user itself when it qualifies, else device scratch @slot (with the
 * contents copied in when @load). */
static char *devbuf(gpu_state_t *st, const void *user, size_t bytes, int ipc, int slot, int load,
                    mxh_ipc_desc_t *desc, mxh_status_t *err)
{
    mxh_gpu_kind_t k = kind_of(user);
    memset(desc, 0, sizeof(*desc));
    if (*err != MXH_OK)
        return NULL;
    if (k == MXH_GPU_DEVICE || (k == MXH_GPU_MANAGED && !ipc)) {
        if (!ipc)
            return (char *)user;
        *err = mxh_gpu_ipc_export(user, desc);
        if (*err != MXH_OK)
            return NULL;
        if (desc->valid)
            return (char *)user;
    }
    last_stats.ipc_staged |= ipc;
    char *d = dscratch(st, slot, bytes, err);
    if (d == NULL)
        return NULL;
    if (ipc) {
        *err = mxh_gpu_ipc_export(d, desc);
        if (*err == MXH_OK && !desc->valid) {
            mxh_error("device scratch cannot be exported by CUDA IPC");
            *err = MXH_GPU_ERR_CUDA;
        }
    }
    if (load && *err == MXH_OK)
        *err = mxh_gpu_cuda(cudaMemcpyAsync(d, user, bytes, cudaMemcpyDefault, st->s_main),
                            "cudaMemcpyAsync (staging a buffer)");
    return d;
}

typedef struct peers {
    char **e, **r; /* [node size] */
} peers_t;

/* Exchange descriptors over the node and map the peers' buffers. Collective
 * over the node; a local failure still takes part. */
static void exchange(gpu_state_t *st, char *E, const mxh_ipc_desc_t *de, char *R,
                     const mxh_ipc_desc_t *dr, peers_t *pp, mxh_status_t *err)
{
    int P = st->node_size;
    mxh_ipc_desc_t mine[2], *all = calloc((size_t)P * 2, sizeof(*all));

    pp->e = calloc((size_t)P, sizeof(char *));
    pp->r = calloc((size_t)P, sizeof(char *));
    if ((all == NULL || pp->e == NULL || pp->r == NULL) && *err == MXH_OK)
        *err = MXH_ERR_NO_MEMORY;
    /* inputs staged on s_main must be complete before peers read them */
    if (*err == MXH_OK)
        *err = mxh_gpu_cuda(cudaStreamSynchronize(st->s_main), "cudaStreamSynchronize");
    mine[0] = *de;
    mine[1] = *dr;
    if (*err != MXH_OK)
        mine[0].valid = mine[1].valid = 0;
    static mxh_ipc_desc_t dummy[2];
    MPI_Allgather(mine, (int)sizeof(mine), MPI_BYTE, all ? (void *)all : (void *)dummy,
                  all ? (int)sizeof(mine) : 0, MPI_BYTE, st->node);
    for (int q = 0; q < P && *err == MXH_OK; q++) {
        if (q == st->node_rank) {
            pp->e[q] = E;
            pp->r[q] = R;
            continue;
        }
        for (int w = 0; w < 2 && *err == MXH_OK; w++) {
            const mxh_ipc_desc_t *d = &all[2 * q + w];
            void *p = NULL;
            if ((w == 0 ? E : R) == NULL)
                continue; /* this collective exposes no such buffer */
            if (!d->valid) {
                mxh_error("node rank %d could not expose its buffer", q);
                *err = MXH_GPU_ERR_CUDA;
                break;
            }
            *err = mxh_gpu_ipc_open(d, &p);
            (w == 0 ? pp->e : pp->r)[q] = p;
        }
    }
    free(all);
}

static void peers_free(peers_t *pp)
{
    free(pp->e);
    free(pp->r);
}

/* shard of node rank @q: even split (regular nodes) or everything at node rank 0 */
static void shard(const gpu_state_t *st, size_t n, int q, size_t *off, size_t *cnt)
{
    if (st->regular) {
        part(n, st->node_size, q, off, cnt);
    } else {
        *off = 0;
        *cnt = q == 0 ? n : 0;
    }
}

/* Reduce-scatter inside the node (IPC) then allreduce of each shard across the
 * nodes: afterwards every node holds the whole result, shard q at node rank q's
 * R. Ends with a node barrier (shards final everywhere). */
static void ar_core(gpu_state_t *st, peers_t *pp, size_t n, const red_t *red, mxh_status_t *err)
{
    int P = st->node_size, me = st->node_rank;
    size_t es = mxh_cuda_dt_size(red->dt), off, cnt;

    shard(st, n, me, &off, &cnt);
    if (cnt > 0 && *err == MXH_OK) {
        const void **in = malloc(sizeof(void *) * (size_t)P);
        char *out = pp->r[me] + off * es, *tmp = NULL;
        if (in == NULL) {
            *err = MXH_ERR_NO_MEMORY;
        } else {
            for (int q = 0; q < P; q++)
                in[q] = pp->e[q] + off * es;
            /* beyond one launch's inputs the output must not alias an input */
            if (P > MXH_CUDA_REDUCE_MAX_INPUTS && pp->e[me] == pp->r[me])
                out = tmp = dscratch(st, 2, cnt * es, err);
            if (*err == MXH_OK)
                *err = mxh_gpu_cuda(mxh_cuda_reduce(out, in, P, cnt, red->dt, red->op, st->s_main),
                                    "reduction kernel (node reduce-scatter)");
            if (tmp != NULL && *err == MXH_OK)
                *err = mxh_gpu_cuda(cudaMemcpyAsync(pp->r[me] + off * es, tmp, cnt * es,
                                                    cudaMemcpyDeviceToDevice, st->s_main),
                                    "cudaMemcpyAsync");
            free(in);
        }
    }
    if (st->outer != MPI_COMM_NULL && st->outer_size > 1 && cnt > 0)
        ring_allreduce(st, pp->r[me] + off * es, cnt, red, err);
    if (*err == MXH_OK)
        *err = mxh_gpu_cuda(cudaStreamSynchronize(st->s_main), "cudaStreamSynchronize");
    int mine = *err != MXH_OK, any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, st->node);
    if (any && *err == MXH_OK) {
        mxh_error("the GPU reduction failed on another rank of this node");
        *err = MXH_GPU_ERR_CUDA;
    }
}

/* Copy [from, from + bytes) of node rank q's R into mine (same offsets). */
static void fetch(gpu_state_t *st, peers_t *pp, int q, size_t from, char *dst, size_t bytes,
                  mxh_status_t *err)
{
    if (bytes == 0 || *err != MXH_OK)
        return;
    *err = mxh_gpu_cuda(cudaMemcpyAsync(dst, pp->r[q] + from, bytes, cudaMemcpyDefault,
                                        st->s_main),
                        "cudaMemcpyAsync (from a peer)");
}

static void finish_copy(gpu_state_t *st, void *user, const char *d, size_t bytes,
                        mxh_status_t *err)
{
    if (d != NULL && d != user && bytes > 0 && *err == MXH_OK)
        *err = mxh_gpu_cuda(cudaMemcpyAsync(user, d, bytes, cudaMemcpyDefault, st->s_main),
                            "cudaMemcpyAsync (result)");
    if (*err == MXH_OK)
        *err = mxh_gpu_cuda(cudaStreamSynchronize(st->s_main), "cudaStreamSynchronize");
}

/* ---- plain MPI on pinned host copies (types and ops the kernels lack) ----------- */

static size_t span(MPI_Datatype dt, size_t count, MPI_Aint *lb_out)
{
    MPI_Aint lb, ext, tlb, text;
    MPI_Type_get_extent(dt, &lb, &ext);
    MPI_Type_get_true_extent(dt, &tlb, &text);
    *lb_out = tlb;
    return count ? (size_t)text + (count - 1) * (size_t)ext : 0;
}

/* Host copy of @bytes of @user (at true lb @lb) in host scratch @slot. */
static char *to_host(gpu_state_t *st, const void *user, size_t bytes, MPI_Aint lb, int slot,
                     int load, mxh_status_t *err)
{
    char *h = hscratch(st, slot, bytes, err);
    if (h != NULL && load && bytes > 0)
        *err = mxh_gpu_cuda(cudaMemcpy(h, (const char *)user + lb, bytes, cudaMemcpyDefault),
                            "cudaMemcpy (to host)");
    return h ? h - lb : NULL;
}

static void from_host(void *user, const char *h, size_t bytes, MPI_Aint lb, mxh_status_t *err)
{
    if (*err == MXH_OK && bytes > 0)
        *err = mxh_gpu_cuda(cudaMemcpy((char *)user + lb, h + lb, bytes, cudaMemcpyDefault),
                            "cudaMemcpy (from host)");
}

static mxh_status_t mpi_rc(int rc, const char *what)
{
    if (rc == MPI_SUCCESS)
        return MXH_OK;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    mxh_error("%s (on host copies of device buffers): %s", what, msg);
    return MXH_ERR_MPI;
}

/* Run a plain collective on host copies. MPI errors are collective in MPI
 * itself; a local copy failure is agreed on afterwards. */
static mxh_status_t plain_allreduce(mxh_hier_t *h, gpu_state_t *st, const void *sendbuf,
                                    void *recvbuf, int count, MPI_Datatype dt, MPI_Op op)
{
    mxh_status_t err = MXH_OK;
    MPI_Aint lb;
    size_t bytes = span(dt, (size_t)count, &lb);
    char *hr = to_host(st, recvbuf, bytes, lb, 1, sendbuf == MPI_IN_PLACE, &err);
    char *hs = sendbuf == MPI_IN_PLACE ? NULL : to_host(st, sendbuf, bytes, lb, 0, 1, &err);
    int rc = MPI_Allreduce(sendbuf == MPI_IN_PLACE ? MPI_IN_PLACE : (const void *)hs, hr, count,
                           dt, host_op(dt, op), h->comm);
    if (err == MXH_OK)
        err = mpi_rc(rc, "MPI_Allreduce");
    from_host(recvbuf, hr, bytes, lb, &err);
    last_stats.path = 2;
    return agree(h->comm, err);
}

static mxh_status_t plain_rsb(mxh_hier_t *h, gpu_state_t *st, const void *sendbuf,
                              void *recvbuf, int rcount, MPI_Datatype dt, MPI_Op op)
{
    mxh_status_t err = MXH_OK;
    MPI_Aint lb;
    size_t all = span(dt, (size_t)rcount * (size_t)h->size, &lb);
    size_t mine = span(dt, (size_t)rcount, &lb);
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    char *hs = to_host(st, in, all, lb, 0, 1, &err);
    char *hr = to_host(st, recvbuf, mine, lb, 1, 0, &err);
    int rc = MPI_Reduce_scatter_block(hs, hr, rcount, dt, host_op(dt, op), h->comm);
    if (err == MXH_OK)
        err = mpi_rc(rc, "MPI_Reduce_scatter_block");
    from_host(recvbuf, hr, mine, lb, &err);
    last_stats.path = 2;
    return agree(h->comm, err);
}

static mxh_status_t plain_allgather(mxh_hier_t *h, gpu_state_t *st, const void *sendbuf,
                                    int scount, MPI_Datatype stype, void *recvbuf, int rcount,
                                    MPI_Datatype rtype)
{
    mxh_status_t err = MXH_OK;
    MPI_Aint slb, rlb;
    size_t sb = sendbuf == MPI_IN_PLACE ? 0 : span(stype, (size_t)scount, &slb);
    size_t rb = span(rtype, (size_t)rcount * (size_t)h->size, &rlb);
    char *hr = to_host(st, recvbuf, rb, rlb, 1, sendbuf == MPI_IN_PLACE, &err);
    char *hs = sendbuf == MPI_IN_PLACE ? NULL : to_host(st, sendbuf, sb, slb, 0, 1, &err);
    int rc = MPI_Allgather(sendbuf == MPI_IN_PLACE ? MPI_IN_PLACE : (const void *)hs, scount,
                           stype, hr, rcount, rtype, h->comm);
    if (err == MXH_OK)
        err = mpi_rc(rc, "MPI_Allgather");
    from_host(recvbuf, hr, rb, rlb, &err);
    last_stats.path = 2;
    return agree(h->comm, err);
}

static mxh_status_t plain_bcast(mxh_hier_t *h, gpu_state_t *st, void *buf, int count,
                                MPI_Datatype dt, int root)
{
    mxh_status_t err = MXH_OK;
    MPI_Aint lb;
    size_t bytes = span(dt, (size_t)count, &lb);
    char *hb = to_host(st, buf, bytes, lb, 1, h->rank == root, &err);
    int rc = MPI_Bcast(hb, count, dt, root, h->comm);
    if (err == MXH_OK)
        err = mpi_rc(rc, "MPI_Bcast");
    if (h->rank != root)
        from_host(buf, hb, bytes, lb, &err);
    last_stats.path = 2;
    return agree(h->comm, err);
}

static mxh_status_t plain_reduce(mxh_hier_t *h, gpu_state_t *st, const void *sendbuf,
                                 void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, int root)
{
    mxh_status_t err = MXH_OK;
    MPI_Aint lb;
    size_t bytes = span(dt, (size_t)count, &lb);
    int am_root = h->rank == root;
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    char *hs = to_host(st, in, bytes, lb, 0, 1, &err);
    char *hr = am_root ? to_host(st, recvbuf, bytes, lb, 1, 0, &err) : NULL;
    int rc = MPI_Reduce(hs, hr, count, dt, host_op(dt, op), root, h->comm);
    if (err == MXH_OK)
        err = mpi_rc(rc, "MPI_Reduce");
    if (am_root)
        from_host(recvbuf, hr, bytes, lb, &err);
    last_stats.path = 2;
    return agree(h->comm, err);
}

/* ---- the collectives ----------------------------------------------------------------- */

/* GPU kernels apply: plain contiguous type with a kernel, hierarchy enabled,
 * IPC usable where ranks share a node. */
static int gpu_ok(mxh_hier_t *h, gpu_state_t *st, mxh_cuda_dt_t dt, mxh_cuda_op_t op, int reduce)
{
    if (!h->config.enable || dt == MXH_CUDA_DT_NONE || (st->node_size > 1 && !st->ipc_ok))
        return 0;
    return !reduce || mxh_cuda_reduce_supported(dt, op);
}

static mxh_status_t begin(mxh_hier_t *h, gpu_state_t **st)
{
    memset(&last_stats, 0, sizeof(last_stats));
    mxh_status_t err = state_get(h, st);
    if (err == MXH_OK)
        last_stats.direct = (*st)->direct && (*st)->outer_size > 1;
    return err;
}

mxh_status_t mxh_gpu_allreduce(mxh_hier_t *h, const void *sendbuf, void *recvbuf, int count,
                               MPI_Datatype datatype, MPI_Op op)
{
    gpu_state_t *st;
    mxh_status_t err = begin(h, &st);
    red_t red = {cuda_dt(datatype), cuda_op(op)};

    if (err != MXH_OK)
        return err;
    if (count == 0)
        return MXH_OK;
    if (!gpu_ok(h, st, red.dt, red.op, 1))
        return plain_allreduce(h, st, sendbuf, recvbuf, count, datatype, op);
    last_stats.path = 1;
    size_t es = mxh_cuda_dt_size(red.dt), n = (size_t)count, bytes = n * es;
    int ipc = st->node_size > 1, inplace = sendbuf == MPI_IN_PLACE;
    mxh_ipc_desc_t de, dr;
    char *R = devbuf(st, recvbuf, bytes, ipc, 1, inplace, &dr, &err);
    char *E = inplace ? R : devbuf(st, sendbuf, bytes, ipc, 0, 1, &de, &err);
    if (inplace)
        de = dr;
    peers_t pp = {NULL, NULL};
    if (ipc) {
        exchange(st, E, &de, R, &dr, &pp, &err);
    } else {
        pp.e = &E;
        pp.r = &R;
    }
    ar_core(st, &pp, n, &red, &err);
    for (int q = 0; q < st->node_size; q++) {
        size_t off, cnt;
        if (q == st->node_rank)
            continue;
        shard(st, n, q, &off, &cnt);
        fetch(st, &pp, q, off * es, R + off * es, cnt * es, &err);
    }
    finish_copy(st, recvbuf, R, bytes, &err);
    if (ipc)
        peers_free(&pp);
    return agree(h->comm, err);
}

mxh_status_t mxh_gpu_reduce(mxh_hier_t *h, const void *sendbuf, void *recvbuf, int count,
                            MPI_Datatype datatype, MPI_Op op, int root)
{
    gpu_state_t *st;
    mxh_status_t err = begin(h, &st);
    red_t red = {cuda_dt(datatype), cuda_op(op)};

    if (err != MXH_OK)
        return err;
    if (count == 0)
        return MXH_OK;
    if (!gpu_ok(h, st, red.dt, red.op, 1))
        return plain_reduce(h, st, sendbuf, recvbuf, count, datatype, op, root);
    last_stats.path = 1;
    size_t es = mxh_cuda_dt_size(red.dt), n = (size_t)count, bytes = n * es;
    int ipc = st->node_size > 1, am_root = h->rank == root, inplace = sendbuf == MPI_IN_PLACE;
    mxh_ipc_desc_t de, dr;
    /* the root reduces into recvbuf; the others into scratch */
    char *R = am_root ? devbuf(st, recvbuf, bytes, ipc, 1, inplace, &dr, &err)
                      : devbuf(st, NULL, bytes, ipc, 1, 0, &dr, &err);
    char *E = inplace ? R : devbuf(st, sendbuf, bytes, ipc, 0, 1, &de, &err);
    if (inplace)
        de = dr;
    peers_t pp = {NULL, NULL};
    if (ipc) {
        exchange(st, E, &de, R, &dr, &pp, &err);
    } else {
        pp.e = &E;
        pp.r = &R;
    }
    ar_core(st, &pp, n, &red, &err);
    if (am_root) {
        for (int q = 0; q < st->node_size; q++) {
            size_t off, cnt;
            if (q == st->node_rank)
                continue;
            shard(st, n, q, &off, &cnt);
            fetch(st, &pp, q, off * es, R + off * es, cnt * es, &err);
        }
        finish_copy(st, recvbuf, R, bytes, &err);
    }
    if (ipc)
        peers_free(&pp);
    return agree(h->comm, err);
}

mxh_status_t mxh_gpu_reduce_scatter_block(mxh_hier_t *h, const void *sendbuf, void *recvbuf,
                                          int recvcount, MPI_Datatype datatype, MPI_Op op)
{
    gpu_state_t *st;
    mxh_status_t err = begin(h, &st);
    red_t red = {cuda_dt(datatype), cuda_op(op)};

    if (err != MXH_OK)
        return err;
    if (recvcount == 0)
        return MXH_OK;
    if (!gpu_ok(h, st, red.dt, red.op, 1))
        return plain_rsb(h, st, sendbuf, recvbuf, recvcount, datatype, op);
    last_stats.path = 1;
    size_t es = mxh_cuda_dt_size(red.dt), rc = (size_t)recvcount, n = rc * (size_t)h->size;
    int ipc = st->node_size > 1;
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    mxh_ipc_desc_t de, dr;
    /* the whole reduced vector lands in work scratch W (shards spread over the
     * node); then each rank copies its block's pieces from their owners */
    char *R = devbuf(st, NULL, n * es, ipc, 1, 0, &dr, &err);
    char *E = devbuf(st, in, n * es, ipc, 0, 1, &de, &err);
    peers_t pp = {NULL, NULL};
    if (ipc) {
        exchange(st, E, &de, R, &dr, &pp, &err);
    } else {
        pp.e = &E;
        pp.r = &R;
    }
    ar_core(st, &pp, n, &red, &err);
    char *out = devbuf(st, recvbuf, rc * es, 0, 2, 0, &dr, &err);
    size_t b0 = (size_t)h->rank * rc, b1 = b0 + rc;
    for (int q = 0; q < st->node_size; q++) {
        size_t off, cnt;
        shard(st, n, q, &off, &cnt);
        size_t lo = off > b0 ? off : b0, hi = off + cnt < b1 ? off + cnt : b1;
        if (lo < hi)
            fetch(st, &pp, q, lo * es, out + (lo - b0) * es, (hi - lo) * es, &err);
    }
    finish_copy(st, recvbuf, out, rc * es, &err);
    if (ipc)
        peers_free(&pp);
    return agree(h->comm, err);
}

mxh_status_t mxh_gpu_allgather(mxh_hier_t *h, const void *sendbuf, int sendcount,
                               MPI_Datatype sendtype, void *recvbuf, int recvcount,
                               MPI_Datatype recvtype)
{
    gpu_state_t *st;
    mxh_status_t err = begin(h, &st);
    size_t es = 0;
    int plain_type = 0;

    if (err != MXH_OK)
        return err;
    if (recvcount == 0)
        return MXH_OK;
    plain_type = mxh_dtype_is_plain(recvtype, &es) &&
                 (sendbuf == MPI_IN_PLACE || (sendtype == recvtype && sendcount == recvcount));
    if (!plain_type || !st->regular || !h->config.enable || (st->node_size > 1 && !st->ipc_ok))
        return plain_allgather(h, st, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
    last_stats.path = 1;
    size_t block = (size_t)recvcount * es, all = block * (size_t)h->size;
    int ipc = st->node_size > 1, me = h->rank;
    mxh_ipc_desc_t dr, dnone;
    char *R = devbuf(st, recvbuf, all, ipc, 1, sendbuf == MPI_IN_PLACE, &dr, &err);
    if (sendbuf != MPI_IN_PLACE && err == MXH_OK)
        err = mxh_gpu_cuda(cudaMemcpyAsync(R + (size_t)me * block, sendbuf, block,
                                           cudaMemcpyDefault, st->s_main),
                           "cudaMemcpyAsync (own block)");
    /* ring across nodes over the blocks of my outer group (ranks with my local index) */
    if (st->outer != MPI_COMM_NULL && st->outer_size > 1) {
        int M = st->outer_size, r = st->outer_rank, *members = malloc(sizeof(int) * (size_t)M);
        int li = st->li_of[me], m = 0;
        for (int x = 0; x < h->size && members; x++)
            if (st->li_of[x] == li)
                members[m++] = x;
        if (members == NULL && err == MXH_OK)
            err = MXH_ERR_NO_MEMORY;
        for (int s = 0; s < M - 1; s++) {
            int sb = members ? members[(r - s + M) % M] : 0;
            int rb = members ? members[(r - s - 1 + M) % M] : 0;
            xfer(st, st->outer, R + (size_t)sb * block, block, (r + 1) % M, R + (size_t)rb * block,
                 block, (r + M - 1) % M, NULL, &err);
        }
        free(members);
    }
    peers_t pp = {NULL, NULL};
    if (ipc) {
        memset(&dnone, 0, sizeof(dnone));
        exchange(st, NULL, &dnone, R, &dr, &pp, &err);
        if (err == MXH_OK)
            err = mxh_gpu_cuda(cudaStreamSynchronize(st->s_main), "cudaStreamSynchronize");
        int mine = err != MXH_OK, any = 0;
        MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, st->node);
        if (any && err == MXH_OK)
            err = MXH_GPU_ERR_CUDA;
        /* node rank q holds the blocks of every rank with local index q */
        for (int x = 0; x < h->size; x++) {
            int q = st->li_of[x];
            if (q != st->node_rank)
                fetch(st, &pp, q, (size_t)x * block, R + (size_t)x * block, block, &err);
        }
    }
    finish_copy(st, recvbuf, R, all, &err);
    if (ipc)
        peers_free(&pp);
    return agree(h->comm, err);
}

mxh_status_t mxh_gpu_bcast(mxh_hier_t *h, void *buffer, int count, MPI_Datatype datatype,
                           int root)
{
    gpu_state_t *st;
    mxh_status_t err = begin(h, &st);
    size_t es = 0;

    if (err != MXH_OK)
        return err;
    if (count == 0)
        return MXH_OK;
    if (!mxh_dtype_is_plain(datatype, &es) || !st->regular || !h->config.enable ||
        (st->node_size > 1 && !st->ipc_ok))
        return plain_bcast(h, st, buffer, count, datatype, root);
    last_stats.path = 1;
    size_t n = (size_t)count * es; /* in bytes from here */
    int ipc = st->node_size > 1, me = st->node_rank, root_node = st->node_of[root];
    int on_root_node = st->node_of[h->rank] == root_node;
    mxh_ipc_desc_t dr, dnone;
    char *R = devbuf(st, buffer, n, ipc, 1, h->rank == root, &dr, &err);
    peers_t pp = {NULL, NULL};
    size_t off, cnt;
    part(n, st->node_size, me, &off, &cnt);
    if (ipc) {
        memset(&dnone, 0, sizeof(dnone));
        exchange(st, NULL, &dnone, R, &dr, &pp, &err);
        /* on the root's node: my shard from the root */
        if (on_root_node && h->rank != root)
            fetch(st, &pp, st->li_of[root], off, R + off, cnt, &err);
        if (err == MXH_OK)
            err = mxh_gpu_cuda(cudaStreamSynchronize(st->s_main), "cudaStreamSynchronize");
    }
    /* across nodes: chain along the outer ring from the root's node */
    if (st->outer != MPI_COMM_NULL && st->outer_size > 1 && cnt > 0) {
        int M = st->outer_size, r = st->outer_rank, src = 0, k = 0;
        for (int x = 0; x < h->size; x++)
            if (st->li_of[x] == st->li_of[h->rank]) {
                if (st->node_of[x] == root_node)
                    src = k;
                k++;
            }
        int pos = (r - src + M) % M; /* distance from the source along the ring */
        if (pos > 0)
            xfer(st, st->outer, NULL, 0, MPI_PROC_NULL, R + off, cnt, (r + M - 1) % M, NULL, &err);
        if (pos < M - 1)
            xfer(st, st->outer, R + off, cnt, (r + 1) % M, NULL, 0, MPI_PROC_NULL, NULL, &err);
    }
    if (ipc) {
        if (err == MXH_OK)
            err = mxh_gpu_cuda(cudaStreamSynchronize(st->s_main), "cudaStreamSynchronize");
        int mine = err != MXH_OK, any = 0;
        MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, st->node);
        if (any && err == MXH_OK)
            err = MXH_GPU_ERR_CUDA;
        for (int q = 0; q < st->node_size; q++) {
            size_t qo, qc;
            part(n, st->node_size, q, &qo, &qc);
            if (q != me && !(h->rank == root))
                fetch(st, &pp, q, qo, R + qo, qc, &err);
        }
    }
    if (h->rank != root)
        finish_copy(st, buffer, R, n, &err);
    else if (err == MXH_OK)
        err = mxh_gpu_cuda(cudaStreamSynchronize(st->s_main), "cudaStreamSynchronize");
    if (ipc)
        peers_free(&pp);
    return agree(h->comm, err);
}
