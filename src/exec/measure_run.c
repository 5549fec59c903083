/* Measured network parameters, the exchanges (MPI): see measure.h. */
#include "config.h"

#include "exec/measure_run.h"
#include "sim/sim.h"

#include <stdlib.h>
#include <string.h>

#define MEASURE_TAG 0x4d58 /* on the hierarchy's private communicator */

#ifdef MXH_SIMGRID
#define WARMUP 0 /* simulated time is exact: one round trip says it */
#define REPS   1
#else
#define WARMUP 1
#define REPS   3
#endif

/* The first (@last: the last) rank other than 0 in rank 0's group at level @l, or -1. */
static int partner(const mxh_layout_t *L, int l, int last)
{
    int found = -1;
    for (int r = 1; r < L->nranks; r++)
        if (L->color[l][r] == L->color[l][0]) {
            found = r;
            if (!last)
                break;
        }
    return found;
}

/* Rank 0's side: the fastest round trip of REPS, halved (0: an exchange failed).
 * Without a buffer it sends empty messages, which the partner returns. */
static double ping(MPI_Comm comm, int peer, char *buf, size_t bytes)
{
    double best = 0;
    int n = buf != NULL ? (int)bytes : 0;
    for (int k = 0; k < WARMUP + REPS; k++) {
        double t0 = MPI_Wtime(), dt;
        if (mxh_send(buf, n, MPI_BYTE, peer, MEASURE_TAG, comm) != MPI_SUCCESS ||
            MPI_Recv(buf, n, MPI_BYTE, peer, MEASURE_TAG, comm, MPI_STATUS_IGNORE) !=
                MPI_SUCCESS)
            return 0;
        dt = MPI_Wtime() - t0;
        if (k >= WARMUP && (best == 0 || dt < best))
            best = dt;
    }
    return buf != NULL ? best / 2 : 0;
}

/* The partner's side: return what arrives (its size, at most what fits here). */
static void pong(MPI_Comm comm, char *buf, size_t bytes)
{
    for (int k = 0; k < WARMUP + REPS; k++) {
        MPI_Status st;
        int got = 0;
        if (MPI_Recv(buf, buf != NULL ? (int)bytes : 0, MPI_BYTE, 0, MEASURE_TAG, comm, &st) !=
            MPI_SUCCESS)
            got = 0; /* truncated (no buffer here): rank 0 gets an empty reply */
        else
            MPI_Get_count(&st, MPI_BYTE, &got);
        mxh_send(buf, got, MPI_BYTE, 0, MEASURE_TAG, comm);
    }
}

void mxh_measure_run(MPI_Comm comm, const mxh_layout_t *L, int rank, mxh_measure_t *m)
{
    const size_t max = mxh_measure_sizes[MXH_MEASURE_NSIZES - 1];
    char *buf = NULL;

    memset(m, 0, sizeof(*m));
    m->nlevels = L->nlevels < MXH_MAX_LEVELS ? L->nlevels : MXH_MAX_LEVELS;
    for (int l = 0; l < m->nlevels; l++) {
        int peer = partner(L, l, 0), last = partner(L, l, 1);
        m->type[l] = L->type[l];
        if (last != peer && (rank == 0 || rank == last)) {
            char b8[8] = {0};
            if (rank == 0)
                m->far[l] = ping(comm, last, b8, sizeof(b8));
            else
                pong(comm, b8, sizeof(b8));
        }
        if (peer < 0 || (rank != 0 && rank != peer))
            continue;
        if (buf == NULL)
            buf = calloc(1, max);
        for (int i = 0; i < MXH_MEASURE_NSIZES; i++) {
            if (rank == 0)
                m->t[l][i] = ping(comm, peer, buf, mxh_measure_sizes[i]);
            else
                pong(comm, buf, mxh_measure_sizes[i]);
        }
    }
    free(buf);
    if (MPI_Bcast(m->t, (int)(sizeof(m->t) / sizeof(double)), MPI_DOUBLE, 0, comm) !=
            MPI_SUCCESS ||
        MPI_Bcast(m->far, MXH_MAX_LEVELS, MPI_DOUBLE, 0, comm) != MPI_SUCCESS) {
        memset(m->t, 0, sizeof(m->t));
        memset(m->far, 0, sizeof(m->far));
    }
}

