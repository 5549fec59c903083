/* mpix_gpu_bench: MPIX_Hier_allreduce on device buffers against what a user of
 * a non-CUDA-aware MPI does: copy to (pinned) host memory, MPI_Allreduce,
 * copy back. Same run, same buffers, interleaved; median over iterations of
 * the slowest rank. float sum; results checked once per size.
 *
 *   mpiexec -n 4 mpix_gpu_bench [-b MINBYTES] [-e MAXBYTES] [-n ITERS] [-m device|managed]
 *
 * Rank i uses CUDA device i % ndev (several ranks per GPU are fine).
 * Exit 2 (after a message on rank 0) when some rank has no CUDA device. */
#define BENCH_PROG "mpix_gpu_bench"
#include "bench_util.h"

#include <mpix_hier.h>

#include <cuda_runtime_api.h>
#include <math.h>
#include <string.h>

#define CK(_call)                                                              \
    do {                                                                       \
        cudaError_t _rc = (_call);                                             \
        if (_rc != cudaSuccess) {                                              \
            fprintf(stderr, BENCH_PROG ": rank %d: %s: %s\n", world_rank, #_call, \
                    cudaGetErrorString(_rc));                                  \
            MPI_Abort(MPI_COMM_WORLD, 3);                                      \
        }                                                                      \
    } while (0)
#define MPI_CK(_call)                                                          \
    do {                                                                       \
        int _rc = (_call);                                                     \
        if (_rc != MPI_SUCCESS)                                                \
            fail_mpi(#_call, _rc, __LINE__);                                   \
    } while (0)

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

int main(int argc, char **argv)
{
    size_t minb = 1024, maxb = (size_t)64 << 20;
    int iters = 20, managed = 0, ndev = 0, have = 0, all = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-b") && i + 1 < argc && parse_bytes(argv[i + 1], &minb) == 0) {
            i++;
        } else if (!strcmp(argv[i], "-e") && i + 1 < argc && parse_bytes(argv[i + 1], &maxb) == 0) {
            i++;
        } else if (!strcmp(argv[i], "-n") && i + 1 < argc &&
                   parse_int(argv[i + 1], 1, 1000000, &iters) == 0) {
            i++;
        } else if (!strcmp(argv[i], "-m") && i + 1 < argc) {
            managed = !strcmp(argv[++i], "managed");
        } else {
            if (world_rank == 0)
                fprintf(stderr, "usage: %s [-b MINBYTES] [-e MAXBYTES] [-n ITERS] [-m device|managed]\n",
                        argv[0]);
            MPI_Finalize();
            return 1;
        }
    }
    if (iters < 1)
        iters = 1;
    have = cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0;
    MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (world_rank == 0)
            printf(BENCH_PROG ": no CUDA device\n");
        MPI_Finalize();
        return 2;
    }
    CK(cudaSetDevice(world_rank % ndev));
    struct cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, world_rank % ndev));
    MPI_CK(MPIX_Hier_comm_init(MPI_COMM_WORLD, MPI_INFO_NULL));
    if (world_rank == 0) {
        char desc[1024];
        int len = 0;
        MPIX_Hier_comm_describe(MPI_COMM_WORLD, desc, sizeof(desc), &len);
        printf("# " BENCH_PROG ": %d ranks, %s buffers, GPU %s (%d device(s) visible), float sum, "
               "median of %d (max over ranks)\n# hierarchy: %s\n",
               world_size, managed ? "managed" : "device", prop.name, ndev, iters, desc);
        printf("%12s %14s %16s %9s %12s\n", "bytes", "mpix_hier_us", "host_staged_us", "speedup",
               "mpix_busbw");
    }

    size_t cap = maxb / sizeof(float);
    float *dsend, *drecv, *hsend, *hrecv, *ref = xmalloc(cap * sizeof(float) + 4);
    if (managed) {
        CK(cudaMallocManaged((void **)&dsend, cap * sizeof(float) + 4, cudaMemAttachGlobal));
        CK(cudaMallocManaged((void **)&drecv, cap * sizeof(float) + 4, cudaMemAttachGlobal));
    } else {
        CK(cudaMalloc((void **)&dsend, cap * sizeof(float) + 4));
        CK(cudaMalloc((void **)&drecv, cap * sizeof(float) + 4));
    }
    CK(cudaMallocHost((void **)&hsend, cap * sizeof(float) + 4));
    CK(cudaMallocHost((void **)&hrecv, cap * sizeof(float) + 4));
    for (size_t i = 0; i < cap; i++)
        hsend[i] = (float)((i * 7 + (size_t)world_rank * 3) % 17);
    CK(cudaMemcpy(dsend, hsend, cap * sizeof(float), cudaMemcpyDefault));
    double *tm = xmalloc(sizeof(double) * (size_t)iters), *ts = xmalloc(sizeof(double) * (size_t)iters);
    int bad_any = 0;

    for (size_t bytes = minb; bytes <= maxb; bytes *= 2) {
        int count = (int)(bytes / sizeof(float)), bad = 0;
        for (int it = -2; it < iters; it++) {
            double t0, t1, a, b;
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            MPI_CK(MPIX_Hier_allreduce(dsend, drecv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
            t1 = MPI_Wtime() - t0;
            MPI_Allreduce(&t1, &a, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            CK(cudaMemcpy(hsend, dsend, bytes, cudaMemcpyDeviceToHost));
            MPI_CK(MPI_Allreduce(hsend, hrecv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
            CK(cudaMemcpy(drecv, hrecv, bytes, cudaMemcpyHostToDevice));
            t1 = MPI_Wtime() - t0;
            MPI_Allreduce(&t1, &b, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (it >= 0) {
                tm[it] = a;
                ts[it] = b;
            }
        }
        /* check: mpix-hier result == MPI's on host copies */
        MPI_CK(MPIX_Hier_allreduce(dsend, drecv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
        CK(cudaMemcpy(ref, drecv, bytes, cudaMemcpyDefault));
        MPI_CK(MPI_Allreduce(hsend, hrecv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
        for (int i = 0; i < count && !bad; i++)
            bad = ref[i] != hrecv[i];
        MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        bad_any |= bad;
        double m = median(tm, iters), s = median(ts, iters);
        double busbw = (double)bytes / m * 2.0 * (world_size - 1) / world_size / 1e9;
        if (world_rank == 0)
            printf("%12zu %14.1f %16.1f %8.2fx %9.2f GB/s%s\n", bytes, m * 1e6, s * 1e6, s / m,
                   busbw, bad ? "  WRONG RESULT" : "");
        if (bytes > maxb / 2)
            break;
    }
    free(tm);
    free(ts);
    free(ref);
    cudaFreeHost(hrecv);
    cudaFreeHost(hsend);
    cudaFree(drecv);
    cudaFree(dsend);
    MPI_Finalize();
    return bad_any ? 1 : 0;
}
