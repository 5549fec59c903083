/* Persistent against blocking allreduce, in one run: per size, the time per
 * call of MPIX_Hier_allreduce, of MPI_Start + MPI_Wait on one
 * MPIX_Hier_Allreduce_init request, and of MPICH's MPI_Allreduce and its
 * persistent MPI_Allreduce_init. Each form runs ITERS calls back to back after
 * a barrier (elapsed / ITERS, the maximum over ranks); the forms take turns
 * ROUNDS times and each form's median round is reported, so that a drift of
 * the machine touches all of them alike. Results are checked once per size.
 *
 *   mpiexec -n P mpix_persist_bench [-b MIN] [-e MAX] [-n ITERS] [-r ROUNDS]
 *
 * Sizes are bytes of the float vector, doubling from MIN (8) to MAX (64k). */
#include <mpi.h>
#include <mpix_hier.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { F_HIER, F_HIER_P, F_MPI, F_MPI_P, NFORM };
static const char *const form_name[NFORM] = {"blocking", "persistent", "MPI", "MPI persistent"};

static void die(const char *what, int rc)
{
    fprintf(stderr, "mpix_persist_bench: %s failed (%d)\n", what, rc);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define CK(call)                                                                                  \
    do {                                                                                          \
        int rc_ = (call);                                                                         \
        if (rc_ != MPI_SUCCESS)                                                                   \
            die(#call, rc_);                                                                      \
    } while (0)

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'k' || *end == 'K')
        v *= 1024;
    else if (*end == 'm' || *end == 'M')
        v *= 1024 * 1024;
    return (size_t)v;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* @iters calls of form @f, back to back after a barrier: seconds per call. */
static double run(int f, int iters, float *s, float *r, int n, MPI_Request *req)
{
    double t0;
    CK(MPI_Barrier(MPI_COMM_WORLD));
    t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        switch (f) {
        case F_HIER: CK(MPIX_Hier_allreduce(s, r, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD)); break;
        case F_MPI: CK(MPI_Allreduce(s, r, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD)); break;
        default:
            CK(MPI_Start(&req[f]));
            CK(MPI_Wait(&req[f], MPI_STATUS_IGNORE));
        }
    }
    return (MPI_Wtime() - t0) / iters;
}

int main(int argc, char **argv)
{
    size_t minb = 8, maxb = 64 * 1024;
    int iters = 2000, rounds = 7, rank, size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-b") && i + 1 < argc)
            minb = parse_size(argv[++i]);
        else if (!strcmp(argv[i], "-e") && i + 1 < argc)
            maxb = parse_size(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else {
            if (rank == 0)
                fprintf(stderr, "usage: mpix_persist_bench [-b MIN] [-e MAX] [-n ITERS] "
                                "[-r ROUNDS]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (minb < sizeof(float) || maxb < minb || iters < 1 || rounds < 1) {
        if (rank == 0)
            fprintf(stderr, "mpix_persist_bench: bad sizes or counts\n");
        MPI_Finalize();
        return 2;
    }
    size_t maxn = maxb / sizeof(float);
    float *s = malloc(maxn * sizeof(float)), *r = malloc(maxn * sizeof(float)),
          *ref = malloc(maxn * sizeof(float));
    double *t = malloc((size_t)rounds * NFORM * sizeof(double));
    int wrong = 0;
    if (!s || !r || !ref || !t)
        die("malloc", -1);
    if (rank == 0) {
        printf("# allreduce, float, MPI_SUM, %d ranks: microseconds per call (%d calls back to "
               "back, median of %d rounds, max over ranks)\n",
               size, iters, rounds);
        printf("# %10s %12s %12s %12s %14s %12s %12s\n", "bytes", form_name[0], form_name[1],
               form_name[2], form_name[3], "pers/block", "pers/MPI");
    }
    for (size_t b = minb; b <= maxb; b *= 2) {
        int n = (int)(b / sizeof(float));
        MPI_Request req[NFORM];
        double med[NFORM];
        for (int i = 0; i < n; i++)
            s[i] = (float)((rank * 7 + i) % 13);
        CK(MPIX_Hier_Allreduce_init(s, r, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                                    &req[F_HIER_P]));
        CK(MPI_Allreduce_init(s, r, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &req[F_MPI_P]));
        CK(MPI_Allreduce(s, ref, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
        for (int f = 0; f < NFORM; f++) {
            memset(r, 0, (size_t)n * sizeof(float));
            run(f, 1, s, r, n, req);
            wrong += memcmp(r, ref, (size_t)n * sizeof(float)) != 0;
            run(f, iters / 10 + 1, s, r, n, req); /* warm-up */
        }
        for (int k = 0; k < rounds; k++)
            for (int f = 0; f < NFORM; f++)
                t[f * rounds + k] = run(f, iters, s, r, n, req);
        CK(MPI_Allreduce(MPI_IN_PLACE, t, rounds * NFORM, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        for (int f = 0; f < NFORM; f++) {
            qsort(t + f * rounds, (size_t)rounds, sizeof(double), cmp_double);
            med[f] = t[f * rounds + rounds / 2] * 1e6;
        }
        if (rank == 0)
            printf("  %10zu %12.3f %12.3f %12.3f %14.3f %12.3f %12.3f\n", b, med[F_HIER],
                   med[F_HIER_P], med[F_MPI], med[F_MPI_P], med[F_HIER_P] / med[F_HIER],
                   med[F_HIER_P] / med[F_MPI]);
        CK(MPI_Request_free(&req[F_HIER_P]));
        CK(MPI_Request_free(&req[F_MPI_P]));
    }
    CK(MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (rank == 0)
        printf("# results: %s\n", wrong ? "WRONG" : "all forms equal MPI_Allreduce bit for bit");
    free(s);
    free(r);
    free(ref);
    free(t);
    MPI_Finalize();
    return wrong != 0;
}
