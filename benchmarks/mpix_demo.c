/*
 * mpix_demo: build the hierarchy of MPI_COMM_WORLD, print it, and compare
 * MPIX_Hier_allreduce with MPI_Allreduce (float, MPI_SUM) on a few sizes.
 *
 * Copyright (c) 2026, The mpix-hier authors. BSD-3-Clause, see COPYING.
 *
 *   mpiexec -n 2 -env MPIX_HIER_HOSTNAME node0 ./mpix_demo : \
 *           -n 2 -env MPIX_HIER_HOSTNAME node1 ./mpix_demo
 *
 * Options: -n ITERS  timed iterations per size and per variant (default 10)
 *          -w WARMUP untimed iterations per size and per variant (default 2)
 *          -e BYTES  largest message size (default 8M; k/m/g suffixes)
 *
 * Timing follows nccl-tests: each iteration is timed on every rank after a
 * barrier, the iteration's time is the maximum over ranks, the reported time is
 * the median over iterations; algbw = bytes / time, busbw = algbw * 2(p-1)/p,
 * GB/s = 1e9 B/s. The two variants are interleaved iteration by iteration.
 * "correct" means MPIX_Hier_allreduce's result equals MPI_Allreduce's bit for
 * bit on every rank in every iteration (inputs are small integers, so both
 * sums are exact). Exit status: 0 if every result was correct, 1 otherwise,
 * 2 on a usage error.
 */
#include <mpi.h>

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "mpix_hier.h"

#define BENCH_PROG "mpix_demo"
#include "bench_util.h"

static void format_bytes(size_t b, char *buf, size_t len)
{
    if (b >= (1u << 20) && b % (1u << 20) == 0)
        snprintf(buf, len, "%zu MiB", b >> 20);
    else if (b >= (1u << 10) && b % (1u << 10) == 0)
        snprintf(buf, len, "%zu KiB", b >> 10);
    else
        snprintf(buf, len, "%zu B", b);
}

/* Number of distinct nodes, as the library sees them: MPIX_HIER_HOSTNAME if
 * set, else the processor name refined by MPI_COMM_TYPE_SHARED. */
static int count_nodes(void)
{
    enum { NAME = MPI_MAX_PROCESSOR_NAME + 16 };
    char mine[NAME];
    char *all;
    const char *env = getenv("MPIX_HIER_HOSTNAME");
    int nodes = 0;

    memset(mine, 0, sizeof(mine));
    if (env != NULL && env[0] != '\0') {
        snprintf(mine, sizeof(mine), "%s", env);
    } else {
        char proc[MPI_MAX_PROCESSOR_NAME];
        int len = 0, leader = world_rank;
        MPI_Comm shm;

        CHECK_MPI(MPI_Get_processor_name(proc, &len));
        CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                                      &shm));
        CHECK_MPI(MPI_Bcast(&leader, 1, MPI_INT, 0, shm));
        CHECK_MPI(MPI_Comm_free(&shm));
        snprintf(mine, sizeof(mine), "%.*s#%d", len, proc, leader);
    }
    all = xmalloc((size_t)world_size * NAME);
    CHECK_MPI(MPI_Allgather(mine, NAME, MPI_CHAR, all, NAME, MPI_CHAR, MPI_COMM_WORLD));
    for (int i = 0; i < world_size; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = !strncmp(all + (size_t)i * NAME, all + (size_t)j * NAME, NAME);
        nodes += !seen;
    }
    free(all);
    return nodes;
}

/* Print the hierarchy: the library's description, then the groups of each level. */
static void print_hierarchy(void)
{
    int len = 0, num_levels = 0;
    int buflen = 1 << 16;
    char *buf = xmalloc((size_t)buflen);

    CHECK_MPI(MPIX_Hier_comm_describe(MPI_COMM_WORLD, buf, buflen, &len));
    if (len >= buflen) {
        free(buf);
        buflen = len + 1;
        buf = xmalloc((size_t)buflen);
        CHECK_MPI(MPIX_Hier_comm_describe(MPI_COMM_WORLD, buf, buflen, &len));
    }
    if (world_rank == 0) {
        printf("== Hierarchy of MPI_COMM_WORLD (MPIX_Hier_comm_describe) ==\n%s", buf);
        if (len == 0 || buf[len - 1] != '\n')
            printf("\n");
    }
    free(buf);

    CHECK_MPI(MPIX_Hier_comm_get_num_levels(MPI_COMM_WORLD, &num_levels));
    if (world_rank == 0)
        printf("\n== Groups per level (%d level%s, 0 = innermost) ==\n", num_levels,
               num_levels == 1 ? "" : "s");

    /* Per rank and level: {rank in level comm, size of level comm, world rank
     * of the level comm's rank 0 (identifies the group)}; -1 if not a member. */
    int *mine = xmalloc(3 * sizeof(int));
    int *all = xmalloc((size_t)world_size * 3 * sizeof(int));
    for (int lvl = 0; lvl < num_levels; lvl++) {
        char name[MPIX_HIER_MAX_LEVEL_NAME];
        MPI_Comm lc = MPI_COMM_NULL;

        memset(name, 0, sizeof(name));
        CHECK_MPI(MPIX_Hier_comm_get_level(MPI_COMM_WORLD, lvl, &lc, name));
        mine[0] = mine[1] = mine[2] = -1;
        if (lc != MPI_COMM_NULL) {
            MPI_Group lg, wg;
            int zero = 0;
            CHECK_MPI(MPI_Comm_rank(lc, &mine[0]));
            CHECK_MPI(MPI_Comm_size(lc, &mine[1]));
            CHECK_MPI(MPI_Comm_group(lc, &lg));
            CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));
            CHECK_MPI(MPI_Group_translate_ranks(lg, 1, &zero, wg, &mine[2]));
            CHECK_MPI(MPI_Group_free(&lg));
            CHECK_MPI(MPI_Group_free(&wg));
        }
        CHECK_MPI(MPI_Allgather(mine, 3, MPI_INT, all, 3, MPI_INT, MPI_COMM_WORLD));
        if (world_rank != 0)
            continue;
        int ngroups = 0, outside = 0;
        for (int r = 0; r < world_size; r++)
            ngroups += all[3 * r + 2] == r;
        printf("level %d \"%s\": %d group%s\n", lvl, name, ngroups, ngroups == 1 ? "" : "s");
        for (int r = 0; r < world_size; r++) {
            int leader = all[3 * r + 2];
            if (leader < 0) {
                outside++;
                continue;
            }
            if (leader != r)
                continue;
            /* members of the group led by world rank r, in level-comm rank order */
            int size = all[3 * r + 1];
            printf("  group of %d: world ranks", size);
            for (int k = 0; k < size; k++)
                for (int m = 0; m < world_size; m++)
                    if (all[3 * m + 2] == leader && all[3 * m] == k)
                        printf(" %d", m);
            printf("\n");
        }
        if (outside)
            printf("  (%d rank%s not in any group of this level)\n", outside,
                   outside == 1 ? "" : "s");
    }
    free(mine);
    free(all);
    if (world_rank == 0)
        fflush(stdout);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median over iterations of (max over ranks of each iteration's time). */
static double median_of_max(double *t, double *tmax, int iters)
{
    CHECK_MPI(MPI_Allreduce(t, tmax, iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    qsort(tmax, (size_t)iters, sizeof(double), cmp_double);
    return iters % 2 ? tmax[iters / 2] : 0.5 * (tmax[iters / 2 - 1] + tmax[iters / 2]);
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [-n ITERS] [-w WARMUP] [-e MAXBYTES]\n"
            "  -n ITERS    timed iterations per size and variant (default 10)\n"
            "  -w WARMUP   warm-up iterations per size and variant (default 2)\n"
            "  -e MAXBYTES largest message in bytes, k/m/g suffixes (default 8M)\n"
            "Sizes 8 B, 1 KiB, 64 KiB, 1 MiB, 8 MiB up to MAXBYTES; float, MPI_SUM.\n",
            prog);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {8, 1 << 10, 64 << 10, 1 << 20, 8 << 20};
    const int nsizes = (int)(sizeof(sizes) / sizeof(sizes[0]));
    int iters = 10, warmup = 2, opt, bad_usage = 0, all_ok = 1;
    size_t max_bytes = 8u << 20;

    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world_size));

    opterr = world_rank == 0; /* one complaint, not one per rank */
    while ((opt = getopt(argc, argv, "n:w:e:h")) != -1) {
        switch (opt) {
        case 'n': bad_usage |= parse_int(optarg, 1, INT_MAX, &iters) != 0; break;
        case 'w': bad_usage |= parse_int(optarg, 0, INT_MAX, &warmup) != 0; break;
        case 'e': bad_usage |= parse_bytes(optarg, &max_bytes) != 0; break;
        default: bad_usage = 1; break;
        }
    }
    if (optind < argc)
        bad_usage = 1;
    if (bad_usage) {
        if (world_rank == 0)
            usage(argv[0]);
        MPI_Finalize();
        return 2;
    }

    int major = 0, minor = 0, patch = 0;
    CHECK_MPI(MPIX_Hier_get_version(&major, &minor, &patch));
    CHECK_MPI(MPIX_Hier_comm_init(MPI_COMM_WORLD, MPI_INFO_NULL));
    int nodes = count_nodes();
    if (world_rank == 0) {
        printf("mpix_demo: mpix-hier %d.%d.%d, %d rank%s on %d node%s\n\n", major, minor, patch,
               world_size, world_size == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s");
        fflush(stdout);
    }
    print_hierarchy();

    size_t max_count = 0;
    for (int s = 0; s < nsizes; s++)
        if (sizes[s] <= max_bytes && sizes[s] / sizeof(float) > max_count)
            max_count = sizes[s] / sizeof(float);
    float *send = xmalloc(max_count * sizeof(float));
    float *ref = xmalloc(max_count * sizeof(float));
    float *out = xmalloc(max_count * sizeof(float));
    double *t_mpi = xmalloc((size_t)iters * sizeof(double));
    double *t_hier = xmalloc((size_t)iters * sizeof(double));
    double *t_max = xmalloc((size_t)iters * sizeof(double));
    /* Small integers: every partial sum is exact in float, whatever the order. */
    for (size_t i = 0; i < max_count; i++)
        send[i] = (float)((world_rank * 7 + (int)(i % 1021)) % 13 - 6);

    if (world_rank == 0) {
        printf("\n== MPIX_Hier_allreduce vs MPI_Allreduce (float, MPI_SUM) ==\n"
               "# %d ranks, %d nodes, %d timed + %d warm-up iterations per size, interleaved;\n"
               "# time = median over iterations of the max over ranks; "
               "busbw = bytes/time * 2(p-1)/p, GB/s = 1e9 B/s;\n"
               "# hier/mpi = hier time / mpi time (< 1: hierarchical is faster).\n"
               "# Times on an oversubscribed small machine are illustrative, "
               "not performance claims.\n",
               world_size, nodes, iters, warmup);
        printf("%10s %10s %13s %15s %13s %16s %9s %8s\n", "size", "count", "mpi time(us)",
               "mpi busbw(GB/s)", "hier time(us)", "hier busbw(GB/s)", "hier/mpi", "correct");
        fflush(stdout);
    }

    const double busfac = world_size > 1 ? 2.0 * (world_size - 1) / world_size : 0.0;
    for (int s = 0; s < nsizes; s++) {
        size_t bytes = sizes[s];
        int count = (int)(bytes / sizeof(float));
        int ok = 1, all_ok_size = 0;

        if (bytes > max_bytes)
            break;
        for (int it = 0; it < warmup; it++) {
            CHECK_MPI(MPI_Allreduce(send, ref, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
            CHECK_MPI(MPIX_Hier_allreduce(send, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
        }
        for (int it = 0; it < iters; it++) {
            double t0;

            /* Poison both outputs so a call that writes nothing cannot pass. */
            memset(ref, 0xff, (size_t)count * sizeof(float));
            memset(out, 0xfe, (size_t)count * sizeof(float));
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            t0 = MPI_Wtime();
            CHECK_MPI(MPI_Allreduce(send, ref, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
            t_mpi[it] = MPI_Wtime() - t0;

            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            t0 = MPI_Wtime();
            CHECK_MPI(MPIX_Hier_allreduce(send, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
            t_hier[it] = MPI_Wtime() - t0;

            if (memcmp(ref, out, (size_t)count * sizeof(float)) != 0)
                ok = 0;
        }
        CHECK_MPI(MPI_Allreduce(&ok, &all_ok_size, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
        double tm = median_of_max(t_mpi, t_max, iters);
        double th = median_of_max(t_hier, t_max, iters);
        if (!all_ok_size)
            all_ok = 0;
        if (world_rank == 0) {
            char sz[32];
            format_bytes(bytes, sz, sizeof(sz));
            printf("%10s %10d %13.1f %15.3f %13.1f %16.3f %9.2f %8s\n", sz, count, tm * 1e6,
                   tm > 0 ? (double)bytes / tm * busfac / 1e9 : 0.0, th * 1e6,
                   th > 0 ? (double)bytes / th * busfac / 1e9 : 0.0, tm > 0 ? th / tm : 0.0,
                   all_ok_size ? "yes" : "NO");
            fflush(stdout);
        }
    }
    if (world_rank == 0)
        printf("\n%s\n", all_ok ? "All MPIX_Hier_allreduce results matched MPI_Allreduce bit for bit."
                                : "ERROR: some MPIX_Hier_allreduce results differ from MPI_Allreduce.");

    free(send);
    free(ref);
    free(out);
    free(t_mpi);
    free(t_hier);
    free(t_max);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
