/* mpix_gpu_bench: an MPIX_Hier_* collective on device (or managed) buffers
 * against what a user of a non-CUDA-aware MPI does: copy the input to pinned
 * host memory, call the MPI collective, copy the result back. Same run, same
 * buffers, interleaved; median over iterations of the slowest rank. float
 * sum (integer values: exact in any order); the result is checked bit for bit
 * against MPI's on host copies once per size.
 *
 *   mpiexec -n 4 mpix_gpu_bench [-c COLL] [-i] [-b MINBYTES] [-e MAXBYTES] [-n ITERS]
 *                               [-m device|managed]
 *
 *   -c  allreduce (default), reduce_scatter_block, allgather, bcast, reduce
 *       (rooted collectives: root 0). BYTES is the size of the full vector:
 *       allreduce/bcast/reduce buffer, reduce_scatter_block input, allgather
 *       output (rounded down to a multiple of 4 * ranks for the last two).
 *   -i  the nonblocking form (MPIX_Hier_I<coll> + MPI_Wait) instead of the
 *       blocking one.
 *
 * Only the public API (mpix_hier.h). Rank i uses CUDA device i % ndev
 * (several ranks per GPU are fine). Exit 2 (after a message on rank 0) when
 * some rank has no CUDA device or -i is asked of a library without the
 * nonblocking forms; 1 when a result was wrong. */
#define BENCH_PROG "mpix_gpu_bench"
#include "bench_util.h"

#include <mpix_hier.h>

#include <cuda_runtime_api.h>
#include <string.h>

#define CK(_call)                                                              \
    do {                                                                       \
        cudaError_t _rc = (_call);                                             \
        if (_rc != cudaSuccess) {                                              \
            fprintf(stderr, BENCH_PROG ": rank %d: line %d: %s: %s\n", world_rank, __LINE__, \
                    #_call, cudaGetErrorString(_rc));                          \
            MPI_Abort(MPI_COMM_WORLD, 3);                                      \
        }                                                                      \
    } while (0)

enum coll { ALLREDUCE, REDUCE_SCATTER_BLOCK, ALLGATHER, BCAST, REDUCE, NCOLLS };
static const char *const coll_names[NCOLLS] = {"allreduce", "reduce_scatter_block", "allgather",
                                               "bcast", "reduce"};
/* bus bandwidth factor (NCCL's convention) times (p - 1) / p or 1 */
static double busbw_factor(enum coll c, int p)
{
    switch (c) {
    case ALLREDUCE:
        return 2.0 * (p - 1) / p;
    case REDUCE_SCATTER_BLOCK:
    case ALLGATHER:
        return (double)(p - 1) / p;
    default:
        return 1.0;
    }
}

/* Element counts of one call for a full vector of @n floats. */
typedef struct shape {
    int n_in, n_out; /* floats this rank sends / receives (0: not significant here) */
    int count;       /* the count argument */
} shape_t;

static shape_t shape_of(enum coll c, size_t n, int p, int rank)
{
    shape_t s = {0, 0, 0};
    switch (c) {
    case ALLREDUCE:
        s.count = s.n_in = s.n_out = (int)n;
        break;
    case REDUCE_SCATTER_BLOCK:
        s.count = (int)(n / (size_t)p);
        s.n_in  = s.count * p;
        s.n_out = s.count;
        break;
    case ALLGATHER:
        s.count = (int)(n / (size_t)p);
        s.n_in  = s.count;
        s.n_out = s.count * p;
        break;
    case BCAST: /* one buffer: input on the root, output elsewhere */
        s.count = (int)n;
        s.n_in  = rank == 0 ? (int)n : 0;
        s.n_out = rank == 0 ? 0 : (int)n;
        break;
    case REDUCE:
        s.count = s.n_in = (int)n;
        s.n_out = rank == 0 ? (int)n : 0;
        break;
    default:
        break;
    }
    return s;
}

/* The library's collective, blocking or posted and waited for. For bcast the
 * buffer is @recv (the root's holds the data). */
static int run_mpix(enum coll c, int nb, const float *send, float *recv, const shape_t *s)
{
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Comm w = MPI_COMM_WORLD;
    int rc;

    switch (c) {
    case ALLREDUCE:
        rc = nb ? MPIX_Hier_Iallreduce(send, recv, s->count, MPI_FLOAT, MPI_SUM, w, &req)
                : MPIX_Hier_allreduce(send, recv, s->count, MPI_FLOAT, MPI_SUM, w);
        break;
    case REDUCE_SCATTER_BLOCK:
        rc = nb ? MPIX_Hier_Ireduce_scatter_block(send, recv, s->count, MPI_FLOAT, MPI_SUM, w,
                                                  &req)
                : MPIX_Hier_reduce_scatter_block(send, recv, s->count, MPI_FLOAT, MPI_SUM, w);
        break;
    case ALLGATHER:
        rc = nb ? MPIX_Hier_Iallgather(send, s->count, MPI_FLOAT, recv, s->count, MPI_FLOAT, w,
                                       &req)
                : MPIX_Hier_allgather(send, s->count, MPI_FLOAT, recv, s->count, MPI_FLOAT, w);
        break;
    case BCAST:
        rc = nb ? MPIX_Hier_Ibcast(recv, s->count, MPI_FLOAT, 0, w, &req)
                : MPIX_Hier_bcast(recv, s->count, MPI_FLOAT, 0, w);
        break;
    default:
        rc = nb ? MPIX_Hier_Ireduce(send, recv, s->count, MPI_FLOAT, MPI_SUM, 0, w, &req)
                : MPIX_Hier_reduce(send, recv, s->count, MPI_FLOAT, MPI_SUM, 0, w);
        break;
    }
    if (rc == MPI_SUCCESS && nb)
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    return rc;
}

/* The plain MPI collective on host buffers (bcast: in place on @recv). */
static int run_mpi(enum coll c, const float *send, float *recv, const shape_t *s)
{
    MPI_Comm w = MPI_COMM_WORLD;
    switch (c) {
    case ALLREDUCE:
        return MPI_Allreduce(send, recv, s->count, MPI_FLOAT, MPI_SUM, w);
    case REDUCE_SCATTER_BLOCK:
        return MPI_Reduce_scatter_block(send, recv, s->count, MPI_FLOAT, MPI_SUM, w);
    case ALLGATHER:
        return MPI_Allgather(send, s->count, MPI_FLOAT, recv, s->count, MPI_FLOAT, w);
    case BCAST:
        return MPI_Bcast(recv, s->count, MPI_FLOAT, 0, w);
    default:
        return MPI_Reduce(send, recv, s->count, MPI_FLOAT, MPI_SUM, 0, w);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return v[n / 2];
}

static double max_over_ranks(double t)
{
    double m = 0;
    CHECK_MPI(MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    return m;
}

int main(int argc, char **argv)
{
    size_t minb = 1024, maxb = (size_t)64 << 20;
    int iters = 20, managed = 0, nb = 0, ndev = 0, have = 0, all = 0;
    enum coll coll = ALLREDUCE;
    cudaError_t crc;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    for (int i = 1; i < argc; i++) {
        int ok = 1;
        if (!strcmp(argv[i], "-b") && i + 1 < argc) {
            ok = parse_bytes(argv[++i], &minb) == 0;
        } else if (!strcmp(argv[i], "-e") && i + 1 < argc) {
            ok = parse_bytes(argv[++i], &maxb) == 0;
        } else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            ok = parse_int(argv[++i], 1, 1000000, &iters) == 0;
        } else if (!strcmp(argv[i], "-m") && i + 1 < argc) {
            i++;
            managed = !strcmp(argv[i], "managed");
            ok      = managed || !strcmp(argv[i], "device");
        } else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
            i++;
            ok = 0;
            for (int c = 0; c < NCOLLS; c++)
                if (!strcmp(argv[i], coll_names[c])) {
                    coll = (enum coll)c;
                    ok   = 1;
                }
        } else if (!strcmp(argv[i], "-i")) {
            nb = 1;
        } else {
            ok = 0;
        }
        if (!ok || minb == 0 || maxb < minb || maxb > ((size_t)1 << 33)) {
            if (world_rank == 0)
                fprintf(stderr,
                        "usage: %s [-c allreduce|reduce_scatter_block|allgather|bcast|reduce] "
                        "[-i] [-b MINBYTES] [-e MAXBYTES (<= 8G)] [-n ITERS] [-m device|managed]\n",
                        argv[0]);
            MPI_Finalize();
            return 1;
        }
    }
    crc  = cudaGetDeviceCount(&ndev);
    have = crc == cudaSuccess && ndev > 0;
    CHECK_MPI(MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (!all) {
        if (world_rank == 0)
            printf(BENCH_PROG ": no CUDA device on some rank (rank 0: %s)\n",
                   have ? "has one" : crc != cudaSuccess ? cudaGetErrorString(crc) : "0 devices");
        MPI_Finalize();
        return 2;
    }
    CK(cudaSetDevice(world_rank % ndev));
    struct cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, world_rank % ndev));
    CHECK_MPI(MPIX_Hier_comm_init(MPI_COMM_WORLD, MPI_INFO_NULL));
    if (world_rank == 0) {
        char desc[1024];
        int len = 0;
        CHECK_MPI(MPIX_Hier_comm_describe(MPI_COMM_WORLD, desc, sizeof(desc), &len));
        printf("# " BENCH_PROG ": %s%s, %d ranks, %s buffers, GPU %s (%d device(s) visible), "
               "float sum, median of %d (max over ranks)\n# hierarchy: %s\n",
               nb ? "MPIX_Hier_I" : "MPIX_Hier_", coll_names[coll], world_size,
               managed ? "managed" : "device", prop.name, ndev, iters, desc);
        printf("%12s %14s %16s %9s %12s\n", "bytes", "mpix_hier_us", "host_staged_us", "speedup",
               "mpix_busbw");
    }

    /* buffers of the full vector (the largest any collective here needs) */
    size_t cap = maxb / sizeof(float) + 1, capb = cap * sizeof(float);
    float *dsend, *drecv, *hsend, *hrecv, *got = xmalloc(capb);
    if (managed) {
        CK(cudaMallocManaged((void **)&dsend, capb, cudaMemAttachGlobal));
        CK(cudaMallocManaged((void **)&drecv, capb, cudaMemAttachGlobal));
    } else {
        CK(cudaMalloc((void **)&dsend, capb));
        CK(cudaMalloc((void **)&drecv, capb));
    }
    CK(cudaMallocHost((void **)&hsend, capb));
    CK(cudaMallocHost((void **)&hrecv, capb));
    for (size_t i = 0; i < cap; i++)
        hsend[i] = (float)((i * 7 + (size_t)world_rank * 3) % 17);
    CK(cudaMemcpy(dsend, hsend, capb, cudaMemcpyHostToDevice));
    double *tm = xmalloc(sizeof(double) * (size_t)iters), *ts = xmalloc(sizeof(double) * (size_t)iters);
    int bad_any = 0;

    for (size_t bytes = minb; bytes <= maxb; bytes *= 2) {
        shape_t s  = shape_of(coll, bytes / sizeof(float), world_size, world_rank);
        int bad    = 0;
        /* bcast: the root's buffer holds the data; the library's buffer is drecv */
        float *din = coll == BCAST ? drecv : dsend, *hin = coll == BCAST ? hrecv : hsend;
        size_t in_b = (size_t)s.n_in * sizeof(float), out_b = (size_t)s.n_out * sizeof(float);

        if (s.count == 0)
            continue; /* fewer floats than ranks */
        if (coll == BCAST && world_rank == 0)
            CK(cudaMemcpy(drecv, dsend, (size_t)s.count * sizeof(float), cudaMemcpyDeviceToDevice));
        for (int it = -2; it < iters; it++) {
            double t0, a, b;
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            t0 = MPI_Wtime();
            CHECK_MPI(run_mpix(coll, nb, dsend, drecv, &s));
            a = max_over_ranks(MPI_Wtime() - t0);
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            t0 = MPI_Wtime();
            if (in_b)
                CK(cudaMemcpy(hin, din, in_b, cudaMemcpyDeviceToHost));
            CHECK_MPI(run_mpi(coll, hsend, hrecv, &s));
            if (out_b)
                CK(cudaMemcpy(drecv, hrecv, out_b, cudaMemcpyHostToDevice));
            b = max_over_ranks(MPI_Wtime() - t0);
            if (it >= 0) {
                tm[it] = a;
                ts[it] = b;
            }
        }
        /* check: the library's result on a poisoned output == MPI's on host copies */
        if (out_b)
            CK(cudaMemset(drecv, 0xff, out_b));
        CHECK_MPI(run_mpix(coll, nb, dsend, drecv, &s));
        if (out_b)
            CK(cudaMemcpy(got, drecv, out_b, cudaMemcpyDeviceToHost));
        if (coll == BCAST && world_rank == 0)
            memcpy(hrecv, hsend, (size_t)s.count * sizeof(float));
        CHECK_MPI(run_mpi(coll, hsend, hrecv, &s));
        bad = out_b && memcmp(got, hrecv, out_b) != 0;
        if (coll == BCAST && world_rank == 0) /* restore the root's data for the next size */
            CK(cudaMemcpy(drecv, dsend, (size_t)s.count * sizeof(float), cudaMemcpyDeviceToDevice));
        CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
        bad_any |= bad;
        double m = median(tm, iters), t = median(ts, iters);
        double full = (double)s.count * sizeof(float) *
                      (coll == REDUCE_SCATTER_BLOCK || coll == ALLGATHER ? world_size : 1);
        double busbw = full / m * busbw_factor(coll, world_size) / 1e9;
        if (world_rank == 0)
            printf("%12.0f %14.1f %16.1f %8.2fx %9.2f GB/s%s\n", full, m * 1e6, t * 1e6, t / m,
                   busbw, bad ? "  WRONG RESULT" : "");
        if (bytes > maxb / 2)
            break;
    }
    free(tm);
    free(ts);
    free(got);
    CK(cudaFreeHost(hrecv));
    CK(cudaFreeHost(hsend));
    CK(cudaFree(drecv));
    CK(cudaFree(dsend));
    MPI_Finalize();
    return bad_any ? 1 : 0;
}
