/* Cross-check of the simulator against the analytic model (benchmarks/sim/README.md):
 *   p2p:  rank 0 sends n bytes to rank 1 (ranks 1.. wait): t = L + n / B
 *   ring: flat ring allreduce over all ranks (reduce-scatter then allgather with
 *         MPI_Sendrecv to the right neighbour), blocks of n/p:
 *         t = 2 (p-1) (L + n / (p B))
 * where L is the end-to-end latency and B the bottleneck bandwidth of a path.
 * Prints one line per size: "kind bytes time_us". Build with smpicc; run under
 * smpirun (run_sim.sh --check-model does both).
 * Copyright (c) 2026, The mpix-hier authors. BSD-3-Clause, see COPYING. */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void ring_allreduce(float *buf, float *tmp, size_t n, MPI_Comm comm)
{
    int p, r;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &r);
    size_t blk = n / (size_t)p;
    int right = (r + 1) % p, left = (r + p - 1) % p;
    for (int s = 0; s < p - 1; s++) { /* reduce-scatter */
        int sb = (r - s + p) % p, rb = (r - s - 1 + p) % p;
        MPI_Sendrecv(buf + (size_t)sb * blk, (int)blk, MPI_FLOAT, right, 0, tmp, (int)blk,
                     MPI_FLOAT, left, 0, comm, MPI_STATUS_IGNORE);
        for (size_t i = 0; i < blk; i++)
            buf[(size_t)rb * blk + i] += tmp[i];
    }
    for (int s = 0; s < p - 1; s++) { /* allgather */
        int sb = (r + 1 - s + p) % p, rb = (r - s + p) % p;
        MPI_Sendrecv(buf + (size_t)sb * blk, (int)blk, MPI_FLOAT, right, 1,
                     buf + (size_t)rb * blk, (int)blk, MPI_FLOAT, left, 1, comm,
                     MPI_STATUS_IGNORE);
    }
}

int main(int argc, char **argv)
{
    int rank, size;
    size_t maxb = argc > 1 ? strtoull(argv[1], NULL, 10) : (size_t)64 << 20;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *buf = SMPI_SHARED_MALLOC(maxb), *tmp = SMPI_SHARED_MALLOC(maxb);
    for (size_t n = 8; n <= maxb; n *= 8) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (rank == 0)
            MPI_Send(buf, (int)n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        else if (rank == 1)
            MPI_Recv(buf, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double t = MPI_Wtime() - t0;
        if (rank == 1)
            printf("p2p %zu %.4f\n", n, t * 1e6);
        fflush(stdout);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    for (size_t n = (size_t)size * 64; n <= maxb; n *= 8) {
        size_t cnt = n / sizeof(float) / (size_t)size * (size_t)size;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        ring_allreduce((float *)buf, (float *)tmp, cnt, MPI_COMM_WORLD);
        double t = MPI_Wtime() - t0, tmax;
        MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("ring %zu %.4f\n", cnt * sizeof(float), tmax * 1e6);
        fflush(stdout);
    }
    SMPI_SHARED_FREE(buf);
    SMPI_SHARED_FREE(tmp);
    MPI_Finalize();
    return 0;
}
