/* A plain MPI program (not linked with mpix-hier) for the drop-in library
 * libmpixhier_pmpi: run_pmpi_tests.sh runs it with and without LD_PRELOAD.
 * Every intercepted collective is called with known inputs (integers derived
 * from ranks) and its result checked against the value computed locally:
 * reductions, uneven and in-place reduce_scatter, allgatherv with gaps,
 * alltoallv, roots, an intercommunicator, a derived datatype (MPI_Type_vector
 * in bcast and allgather: MPI's predefined ops take predefined types only)
 * and a non-commutative user op on a contiguous type (2x2 matrix product).
 *
 * Interception: the program counts its own calls per collective. The
 * library exports MPIX_Hier_pmpi_taken (found with dlsym, so that this
 * program runs without the library too); MXH_PMPI_EXPECT says what it must
 * report: "absent" (no library loaded), or the policy's collectives ("all",
 * "none", "allreduce,bcast"): a collective taken must count exactly this
 * program's calls (the library's own inner calls are not counted), one not
 * taken zero. The bookkeeping uses PMPI_ calls, which no wrapper sees. */
#define _GNU_SOURCE
#include <mpi.h>

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, nfail;

#define CHECK(cond, ...)                                                                          \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            if (nfail++ < 20) {                                                                   \
                fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__);                    \
                fprintf(stderr, __VA_ARGS__);                                                     \
                fputc('\n', stderr);                                                              \
            }                                                                                     \
        }                                                                                         \
    } while (0)

/* calls made, by collective and form, in the names of the policy */
static const char *const names[] = {"allreduce", "reduce_scatter_block", "reduce_scatter",
                                    "allgather", "allgatherv", "alltoall", "alltoallv", "bcast",
                                    "reduce"};
enum { ALLREDUCE, RSB, RS, ALLGATHER, ALLGATHERV, ALLTOALL, ALLTOALLV, BCAST, REDUCE, NCOLL };
static long ncalls[2][NCOLL];
#define CALLED(c, nb) (ncalls[nb][c]++)

/* ---- plain collectives on MPI_COMM_WORLD ---- */

static void test_allreduce(void)
{
    enum { N = 1000 };
    static int in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = rank * 100 + i;
    CALLED(ALLREDUCE, 0);
    MPI_Allreduce(in, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        CHECK(out[i] == 100 * size * (size - 1) / 2 + size * i, "allreduce[%d] = %d", i, out[i]);

    /* large: pipelined hierarchical schedules (run_pmpi_tests.sh makes the
     * fragments small), blocking and nonblocking (progress by MPI_Test) */
    enum { L = 200000 };
    int *lin = malloc(sizeof(int) * L), *lout = malloc(sizeof(int) * L);
    for (int i = 0; i < L; i++)
        lin[i] = (rank + 1) * (i % 1000);
    CALLED(ALLREDUCE, 0);
    MPI_Allreduce(lin, lout, L, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < L; i++)
        if (lout[i] != size * (size + 1) / 2 * (i % 1000)) {
            CHECK(0, "large allreduce[%d] = %d", i, lout[i]);
            break;
        }
    MPI_Request lrq;
    int         lflag = 0;
    CALLED(ALLREDUCE, 1);
    MPI_Iallreduce(MPI_IN_PLACE, lin, L, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &lrq);
    while (!lflag)
        MPI_Test(&lrq, &lflag, MPI_STATUS_IGNORE);
    for (int i = 0; i < L; i++)
        if (lin[i] != lout[i]) {
            CHECK(0, "large iallreduce in place[%d] = %d", i, lin[i]);
            break;
        }
    free(lin);
    free(lout);

    /* in place, MAX on doubles */
    double d[3] = {rank, -rank, 0.5 * rank};
    CALLED(ALLREDUCE, 0);
    MPI_Allreduce(MPI_IN_PLACE, d, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    CHECK(d[0] == size - 1 && d[1] == 0 && d[2] == 0.5 * (size - 1), "allreduce max in place");

    /* nonblocking: one waited, two in flight completed by Waitall, one by a Test loop */
    int a[5], b[5], c[5], ra[5], rb[5], rc[5];
    for (int i = 0; i < 5; i++) {
        a[i] = rank + i;
        b[i] = 2 * rank + i;
        c[i] = rank * i;
    }
    MPI_Request rq[2];
    CALLED(ALLREDUCE, 1);
    MPI_Iallreduce(a, ra, 5, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    CALLED(ALLREDUCE, 1);
    MPI_Iallreduce(b, rb, 5, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[0]);
    CALLED(ALLREDUCE, 1);
    MPI_Iallreduce(c, rc, 5, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &rq[1]);
    MPI_Status sts[2];
    MPI_Waitall(2, rq, sts);
    for (int i = 0; i < 5; i++) {
        CHECK(ra[i] == size * (size - 1) / 2 + size * i, "iallreduce a[%d] = %d", i, ra[i]);
        CHECK(rb[i] == size * (size - 1) + size * i, "iallreduce b[%d] = %d", i, rb[i]);
        CHECK(rc[i] == 0, "iallreduce min c[%d] = %d", i, rc[i]);
    }
    int flag = 0;
    CALLED(ALLREDUCE, 1);
    MPI_Iallreduce(MPI_IN_PLACE, a, 5, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[0]);
    while (!flag)
        MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE);
    for (int i = 0; i < 5; i++)
        CHECK(a[i] == ra[i], "iallreduce in place a[%d] = %d", i, a[i]);

    /* persistent (MPI-4): 50 starts with new inputs, MPI_Wait, MPI_Waitall with
     * a nonblocking call, MPI_Test; the handle stays valid until MPI_Request_free */
    MPI_Request prq, two[2];
    MPI_Status  two_st[2];
    CALLED(ALLREDUCE, 1);
    MPI_Allreduce_init(a, ra, 5, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &prq);
    for (int it = 0; it < 50; it++) {
        MPI_Request h = prq;
        for (int i = 0; i < 5; i++)
            a[i] = rank * it + i;
        MPI_Start(&prq);
        if (it % 3 == 0) {
            MPI_Wait(&prq, MPI_STATUS_IGNORE);
        } else if (it % 3 == 1) {
            CALLED(ALLREDUCE, 1);
            MPI_Iallreduce(MPI_IN_PLACE, b, 5, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &two[1]);
            two[0] = prq;
            MPI_Waitall(2, two, two_st);
            CHECK(two[0] == prq && two[1] == MPI_REQUEST_NULL, "persistent in MPI_Waitall");
        } else {
            for (flag = 0; !flag;)
                MPI_Test(&prq, &flag, MPI_STATUS_IGNORE);
        }
        CHECK(prq == h, "persistent allreduce: handle changed at start %d", it);
        for (int i = 0; i < 5; i++)
            CHECK(ra[i] == it * size * (size - 1) / 2 + size * i,
                  "persistent allreduce start %d [%d] = %d", it, i, ra[i]);
    }
    MPI_Request_free(&prq);
    CHECK(prq == MPI_REQUEST_NULL, "MPI_Request_free of a persistent allreduce");
}

/* reduce_scatter with uneven counts (rank j gets j+1 elements, the last
 * rank none) and reduce_scatter_block, plain and in place */
static void test_reduce_scatter(void)
{
    int counts[64], off[64], total = 0;
    for (int j = 0; j < size; j++) {
        counts[j] = j == size - 1 && size > 1 ? 0 : j + 1;
        off[j]    = total;
        total += counts[j];
    }
    int *in = malloc(sizeof(int) * (size_t)total), *out = malloc(sizeof(int) * (size_t)total);
    for (int k = 0; k < total; k++)
        in[k] = rank * 1000 + k;
    CALLED(RS, 0);
    MPI_Reduce_scatter(in, out, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < counts[rank]; i++) {
        int k = off[rank] + i;
        CHECK(out[i] == 1000 * size * (size - 1) / 2 + size * k, "reduce_scatter[%d] = %d", i,
              out[i]);
    }
    /* in place: recvbuf holds every rank's blocks, the result lands at its start */
    memcpy(out, in, sizeof(int) * (size_t)total);
    CALLED(RS, 0);
    MPI_Reduce_scatter(MPI_IN_PLACE, out, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < counts[rank]; i++) {
        int k = off[rank] + i;
        CHECK(out[i] == 1000 * size * (size - 1) / 2 + size * k,
              "reduce_scatter in place[%d] = %d", i, out[i]);
    }
    MPI_Request rq;
    CALLED(RS, 1);
    MPI_Ireduce_scatter(in, out, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    for (int i = 0; i < counts[rank]; i++) {
        int k = off[rank] + i;
        CHECK(out[i] == 1000 * size * (size - 1) / 2 + size * k, "ireduce_scatter[%d] = %d", i,
              out[i]);
    }
    free(in);
    free(out);

    /* reduce_scatter_block: 3 elements each */
    int bin[3 * 64], bout[3];
    for (int k = 0; k < 3 * size; k++)
        bin[k] = rank + k;
    CALLED(RSB, 0);
    MPI_Reduce_scatter_block(bin, bout, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < 3; i++)
        CHECK(bout[i] == size * (size - 1) / 2 + size * (3 * rank + i), "rsb[%d] = %d", i,
              bout[i]);
    CALLED(RSB, 1);
    MPI_Ireduce_scatter_block(MPI_IN_PLACE, bin, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    for (int i = 0; i < 3; i++)
        CHECK(bin[i] == bout[i], "irsb in place[%d] = %d", i, bin[i]);
}

static void test_gathers(void)
{
    /* allgatherv: rank j contributes j+1 ints at displacement j*(size+2) (gaps stay -1) */
    int stride = size + 2, counts[64], displs[64];
    int *out = malloc(sizeof(int) * (size_t)(stride * size));
    int  in[64];
    for (int j = 0; j < size; j++) {
        counts[j] = j + 1;
        displs[j] = j * stride;
    }
    for (int i = 0; i <= rank; i++)
        in[i] = rank * 10 + i;
    for (int k = 0; k < stride * size; k++)
        out[k] = -1;
    CALLED(ALLGATHERV, 0);
    MPI_Allgatherv(in, rank + 1, MPI_INT, out, counts, displs, MPI_INT, MPI_COMM_WORLD);
    for (int j = 0; j < size; j++)
        for (int i = 0; i < stride; i++) {
            int want = i < counts[j] ? j * 10 + i : -1;
            CHECK(out[j * stride + i] == want, "allgatherv from %d [%d] = %d (want %d)", j, i,
                  out[j * stride + i], want);
        }
    /* in place */
    for (int k = 0; k < stride * size; k++)
        out[k] = -1;
    for (int i = 0; i <= rank; i++)
        out[displs[rank] + i] = rank * 10 + i;
    MPI_Request rq;
    CALLED(ALLGATHERV, 1);
    MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out, counts, displs, MPI_INT,
                    MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    for (int j = 0; j < size; j++)
        for (int i = 0; i < stride; i++) {
            int want = i < counts[j] ? j * 10 + i : -1;
            CHECK(out[j * stride + i] == want, "iallgatherv in place from %d [%d] = %d", j, i,
                  out[j * stride + i]);
        }
    free(out);

    /* allgather: 2 ints each */
    int g[2] = {rank, rank * rank}, gout[2 * 64];
    CALLED(ALLGATHER, 0);
    MPI_Allgather(g, 2, MPI_INT, gout, 2, MPI_INT, MPI_COMM_WORLD);
    for (int j = 0; j < size; j++)
        CHECK(gout[2 * j] == j && gout[2 * j + 1] == j * j, "allgather from %d", j);
    memset(gout, 0, sizeof gout);
    CALLED(ALLGATHER, 1);
    MPI_Iallgather(g, 2, MPI_INT, gout, 2, MPI_INT, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    for (int j = 0; j < size; j++)
        CHECK(gout[2 * j] == j && gout[2 * j + 1] == j * j, "iallgather from %d", j);
}

/* alltoallv: rank r sends (r+j)%3 + 1 ints to rank j, valued r*1000 + j*10 + i */
static void test_alltoall(void)
{
    int scount[64], sdispl[64], rcount[64], rdispl[64], st = 0, rt = 0;
    for (int j = 0; j < size; j++) {
        scount[j] = (rank + j) % 3 + 1;
        rcount[j] = (j + rank) % 3 + 1;
        sdispl[j] = st;
        rdispl[j] = rt + j; /* a gap of j ints before block j */
        st += scount[j];
        rt += rcount[j] + j;
    }
    int *in = malloc(sizeof(int) * (size_t)st), *out = malloc(sizeof(int) * (size_t)(rt + 1));
    for (int j = 0; j < size; j++)
        for (int i = 0; i < scount[j]; i++)
            in[sdispl[j] + i] = rank * 1000 + j * 10 + i;
    for (int k = 0; k <= rt; k++)
        out[k] = -7;
    CALLED(ALLTOALLV, 0);
    MPI_Alltoallv(in, scount, sdispl, MPI_INT, out, rcount, rdispl, MPI_INT, MPI_COMM_WORLD);
    for (int j = 0; j < size; j++)
        for (int i = 0; i < rcount[j]; i++)
            CHECK(out[rdispl[j] + i] == j * 1000 + rank * 10 + i, "alltoallv from %d [%d] = %d",
                  j, i, out[rdispl[j] + i]);
    CHECK(out[rt] == -7, "alltoallv wrote past the end");
    MPI_Request rq;
    for (int k = 0; k <= rt; k++)
        out[k] = -7;
    CALLED(ALLTOALLV, 1);
    MPI_Ialltoallv(in, scount, sdispl, MPI_INT, out, rcount, rdispl, MPI_INT, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    for (int j = 0; j < size; j++)
        for (int i = 0; i < rcount[j]; i++)
            CHECK(out[rdispl[j] + i] == j * 1000 + rank * 10 + i, "ialltoallv from %d [%d]", j,
                  i);
    free(in);
    free(out);

    int a[64], b[64];
    for (int j = 0; j < size; j++)
        a[j] = rank * 100 + j;
    CALLED(ALLTOALL, 0);
    MPI_Alltoall(a, 1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD);
    for (int j = 0; j < size; j++)
        CHECK(b[j] == j * 100 + rank, "alltoall from %d = %d", j, b[j]);
    CALLED(ALLTOALL, 1);
    MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, 1, MPI_INT, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    for (int j = 0; j < size; j++)
        CHECK(a[j] == j * 100 + rank, "ialltoall in place from %d = %d", j, a[j]);
}

static void test_rooted(void)
{
    int root = size - 1, buf[10];
    for (int i = 0; i < 10; i++)
        buf[i] = rank == root ? 7 * i + 1 : -1;
    CALLED(BCAST, 0);
    MPI_Bcast(buf, 10, MPI_INT, root, MPI_COMM_WORLD);
    for (int i = 0; i < 10; i++)
        CHECK(buf[i] == 7 * i + 1, "bcast[%d] = %d", i, buf[i]);
    MPI_Request rq;
    for (int i = 0; i < 10; i++)
        buf[i] = rank == 0 ? 3 * i : -1;
    CALLED(BCAST, 1);
    MPI_Ibcast(buf, 10, MPI_INT, 0, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    for (int i = 0; i < 10; i++)
        CHECK(buf[i] == 3 * i, "ibcast[%d] = %d", i, buf[i]);

    long in[4], out[4] = {-1, -1, -1, -1};
    int  rroot = 1 % size;
    for (int i = 0; i < 4; i++)
        in[i] = rank * 3 + i;
    CALLED(REDUCE, 0);
    MPI_Reduce(in, out, 4, MPI_LONG, MPI_SUM, rroot, MPI_COMM_WORLD);
    if (rank == rroot)
        for (int i = 0; i < 4; i++)
            CHECK(out[i] == 3L * size * (size - 1) / 2 + (long)size * i, "reduce[%d] = %ld", i,
                  out[i]);
    CALLED(REDUCE, 1);
    MPI_Ireduce(rank == 0 ? MPI_IN_PLACE : in, rank == 0 ? in : NULL, 4, MPI_LONG, MPI_MAX, 0,
                MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    if (rank == 0)
        for (int i = 0; i < 4; i++)
            CHECK(in[i] == 3L * (size - 1) + i, "ireduce max in place[%d] = %ld", i, in[i]);
}

/* ---- an intercommunicator: even world ranks against odd ones ---- */

static void test_intercomm(void)
{
    if (size < 2)
        return;
    MPI_Comm local, inter;
    int      color = rank % 2;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 99, &inter);
    int v = rank + 1, sum = 0, want = 0;
    for (int w = 0; w < size; w++)
        if (w % 2 != color)
            want += w + 1;
    CALLED(ALLREDUCE, 0);
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, inter);
    CHECK(sum == want, "intercomm allreduce = %d (want %d)", sum, want);

    /* bcast from the even group's first rank to the odd group */
    int lrank, buf[3] = {-1, -1, -1}, root;
    MPI_Comm_rank(local, &lrank);
    if (color == 0) {
        root = lrank == 0 ? MPI_ROOT : MPI_PROC_NULL;
        if (lrank == 0)
            buf[0] = 11, buf[1] = 12, buf[2] = 13;
    } else {
        root = 0;
    }
    CALLED(BCAST, 0);
    MPI_Bcast(buf, 3, MPI_INT, root, inter);
    if (color == 1)
        CHECK(buf[0] == 11 && buf[1] == 12 && buf[2] == 13, "intercomm bcast");
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
}

/* ---- a derived datatype: every other int, 3 per element ---- */

static void test_vector(void)
{
    MPI_Datatype vec;
    MPI_Type_vector(3, 1, 2, MPI_INT, &vec); /* extent 5 ints */
    MPI_Type_commit(&vec);
    /* allgather: one vector element sent (ints 0, 2, 4 of the buffer), three
     * contiguous ints received per rank (the same type signature) */
    int in[5], out[3 * 64];
    for (int k = 0; k < 5; k++)
        in[k] = rank * 10 + k;
    CALLED(ALLGATHER, 0);
    MPI_Allgather(in, 1, vec, out, 3, MPI_INT, MPI_COMM_WORLD);
    for (int j = 0; j < size; j++)
        for (int i = 0; i < 3; i++)
            CHECK(out[3 * j + i] == j * 10 + 2 * i, "allgather vector from %d [%d] = %d", j, i,
                  out[3 * j + i]);
    int b[10];
    for (int k = 0; k < 10; k++)
        b[k] = rank == 0 ? 100 + k : -1;
    CALLED(BCAST, 0);
    MPI_Bcast(b, 2, vec, 0, MPI_COMM_WORLD);
    for (int k = 0; k < 10; k++) {
        int want = (k % 5) % 2 == 0 || rank == 0 ? 100 + k : -1;
        CHECK(b[k] == want, "bcast vector[%d] = %d", k, b[k]);
    }
    MPI_Type_free(&vec);
}

/* ---- a non-commutative op: the product of 2x2 integer matrices ---- */

static void matmul(const int *a, const int *b, int *c) /* c = a * b (row major) */
{
    int r[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
    memcpy(c, r, sizeof r);
}

/* MPI's contract: inout = in op inout, in coming from lower ranks */
static void matmul_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        matmul((int *)in + 4 * i, (int *)inout + 4 * i, (int *)inout + 4 * i);
}

static void rank_matrix(int r, int e, int *m) /* element e of rank r: no two commute */
{
    m[0] = 1;
    m[1] = (r + e) % 3;
    m[2] = (r * 2 + e + 1) % 3;
    m[3] = 1 - (r % 2);
}

static void test_noncommutative(void)
{
    MPI_Datatype mat;
    MPI_Op       op;
    MPI_Type_contiguous(4, MPI_INT, &mat);
    MPI_Type_commit(&mat);
    MPI_Op_create(matmul_op, 0, &op);
    enum { E = 3 };
    int in[4 * E], out[4 * E], want[4 * E];
    for (int e = 0; e < E; e++) {
        rank_matrix(rank, e, in + 4 * e);
        rank_matrix(0, e, want + 4 * e);
        for (int r = 1; r < size; r++) {
            int m[4];
            rank_matrix(r, e, m);
            matmul(want + 4 * e, m, want + 4 * e);
        }
    }
    CALLED(ALLREDUCE, 0);
    MPI_Allreduce(in, out, E, mat, op, MPI_COMM_WORLD);
    for (int k = 0; k < 4 * E; k++)
        CHECK(out[k] == want[k], "noncommutative allreduce[%d] = %d (want %d)", k, out[k],
              want[k]);
    memset(out, 0, sizeof out);
    CALLED(REDUCE, 0);
    MPI_Reduce(in, out, E, mat, op, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int k = 0; k < 4 * E; k++)
            CHECK(out[k] == want[k], "noncommutative reduce[%d] = %d", k, out[k]);
    MPI_Request rq;
    memset(out, 0, sizeof out);
    CALLED(ALLREDUCE, 1);
    MPI_Iallreduce(in, out, E, mat, op, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    for (int k = 0; k < 4 * E; k++)
        CHECK(out[k] == want[k], "noncommutative iallreduce[%d] = %d", k, out[k]);
    MPI_Op_free(&op);
    MPI_Type_free(&mat);
}

/* ---- the large-count forms (MPI-4 _c) ---- */

/* Counts that fit an int: the library's calls (the v-forms: MPI's). */
static void test_count_c(void)
{
    enum { N = 777, B = 5 };
    static int in[N], out[N], blocks[64 * B], mine[B];
    MPI_Request rq;
    for (int i = 0; i < N; i++)
        in[i] = rank * 10 + i;
    CALLED(ALLREDUCE, 0);
    MPI_Allreduce_c(in, out, (MPI_Count)N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        CHECK(out[i] == 10 * size * (size - 1) / 2 + size * i, "allreduce_c[%d] = %d", i, out[i]);
    CALLED(ALLREDUCE, 1);
    MPI_Iallreduce_c(in, out, (MPI_Count)N, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    for (int i = 0; i < N; i++)
        CHECK(out[i] == 10 * (size - 1) + i, "iallreduce_c max[%d] = %d", i, out[i]);
    CALLED(ALLREDUCE, 1); /* a persistent request is counted at its init */
    MPI_Allreduce_init_c(in, out, (MPI_Count)N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                         &rq);
    for (int it = 0; it < 3; it++) {
        in[0] = rank + it;
        MPI_Start(&rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        CHECK(out[0] == size * (size - 1) / 2 + size * it, "allreduce_init_c start %d: %d", it,
              out[0]);
    }
    MPI_Request_free(&rq);
    in[0] = rank * 10;

    for (int i = 0; i < B; i++)
        mine[i] = rank * 1000 + i;
    CALLED(ALLGATHER, 0);
    MPI_Allgather_c(mine, B, MPI_INT, blocks, B, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size * B; i++)
        CHECK(blocks[i] == i / B * 1000 + i % B, "allgather_c[%d] = %d", i, blocks[i]);
    CALLED(BCAST, 0);
    for (int i = 0; i < B; i++)
        mine[i] = rank == size - 1 ? 3 * i + 2 : -1;
    MPI_Bcast_c(mine, B, MPI_INT, size - 1, MPI_COMM_WORLD);
    for (int i = 0; i < B; i++)
        CHECK(mine[i] == 3 * i + 2, "bcast_c[%d] = %d", i, mine[i]);
    CALLED(REDUCE, 0);
    MPI_Reduce_c(in + 1, out, B, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int i = 0; i < B; i++)
            CHECK(out[i] == 10 * size * (size - 1) / 2 + size * (i + 1), "reduce_c[%d] = %d", i,
                  out[i]);
    CALLED(RSB, 0);
    MPI_Reduce_scatter_block_c(in, out, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < 2; i++)
        CHECK(out[i] == 10 * size * (size - 1) / 2 + size * (2 * rank + i),
              "reduce_scatter_block_c[%d] = %d", i, out[i]);
    for (int i = 0; i < size; i++)
        in[i] = rank * 100 + i;
    CALLED(ALLTOALL, 0);
    MPI_Alltoall_c(in, 1, MPI_INT, out, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        CHECK(out[i] == i * 100 + rank, "alltoall_c[%d] = %d", i, out[i]);

    /* a v-form: MPI's own, counted by the drop-in's exit line, not taken */
    MPI_Count cnt[64];
    MPI_Aint  dsp[64];
    for (int i = 0; i < size; i++) {
        cnt[i] = i % 2 + 1;
        dsp[i] = (MPI_Aint)(3 * i);
    }
    for (int i = 0; i < 2; i++)
        mine[i] = rank * 7 + i;
    memset(blocks, 0xff, sizeof blocks);
    MPI_Allgatherv_c(mine, cnt[rank], MPI_INT, blocks, cnt, dsp, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < cnt[r]; i++)
            CHECK(blocks[3 * r + i] == r * 7 + i, "allgatherv_c[%d] = %d", 3 * r + i,
                  blocks[3 * r + i]);
}

/* Counts beyond INT_MAX of MPI_BYTE (MXH_PMPI_BIG=1, run_pmpi_tests.sh on 2
 * ranks): bcast and in-place allgather, every byte checked, as MPICH serves
 * them. Skipped, and said so, where the memory is not there. */
static unsigned char pattern(size_t i, int r)
{
    return (unsigned char)((i * 131u + (size_t)r * 17u + (i >> 20)) & 0xffu);
}

static void test_big_counts(void)
{
    const char *big = getenv("MXH_PMPI_BIG");
    if (big == NULL || strcmp(big, "1"))
        return;
    const MPI_Count n = (MPI_Count)INT_MAX + 13; /* bytes per rank */
    size_t bytes = (size_t)n * (size_t)size, avail = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    while (f != NULL && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %zu kB", &avail) == 1)
            break;
    if (f != NULL)
        fclose(f);
    int enough = avail * 1024 / 2 > bytes * (size_t)size, all = 0; /* half of it at most */
    PMPI_Allreduce(&enough, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (rank == 0)
            printf("pmpi_check: big counts skipped: %zu MiB needed, under half of MemAvailable "
                   "(%zu MiB) on some rank\n",
                   bytes * (size_t)size >> 20, avail >> 10);
        return;
    }
    unsigned char *buf = malloc(bytes);
    CHECK(buf != NULL, "malloc(%zu) failed", bytes);
    if (buf == NULL)
        return;
    for (size_t i = 0; i < (size_t)n; i++)
        buf[i] = rank == 0 ? pattern(i, 0) : 0;
    int rc = MPI_Bcast_c(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "MPI_Bcast_c of %lld bytes: error %d", (long long)n, rc);
    size_t bad = 0;
    for (size_t i = 0; i < (size_t)n; i++)
        bad += buf[i] != pattern(i, 0);
    CHECK(bad == 0, "bcast_c of %lld bytes: %zu bytes wrong", (long long)n, bad);

    for (size_t i = 0; i < bytes; i++)
        buf[i] = i / (size_t)n == (size_t)rank ? pattern(i % (size_t)n, rank) : 0;
    rc = MPI_Allgather_c(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, n, MPI_BYTE, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "MPI_Allgather_c of %lld bytes each: error %d", (long long)n, rc);
    bad = 0;
    for (size_t i = 0; i < bytes; i++)
        bad += buf[i] != pattern(i % (size_t)n, (int)(i / (size_t)n));
    CHECK(bad == 0, "allgather_c of %lld bytes each: %zu bytes wrong", (long long)n, bad);
    free(buf);
    if (rank == 0)
        printf("pmpi_check: big counts: bcast_c and allgather_c of %lld bytes per rank checked\n",
               (long long)n);
}

/* ---- interception ---- */

static void check_taken(void)
{
    const char *expect = getenv("MXH_PMPI_EXPECT");
    long (*taken)(const char *);
    void *p = dlsym(RTLD_DEFAULT, "MPIX_Hier_pmpi_taken");
    memcpy(&taken, &p, sizeof taken);
    if (expect == NULL) {
        if (rank == 0)
            printf("pmpi_check: MXH_PMPI_EXPECT unset: interception not checked (library %s)\n",
                   p ? "loaded" : "absent");
        return;
    }
    if (!strcmp(expect, "absent")) {
        CHECK(p == NULL, "MPIX_Hier_pmpi_taken found, the library should be absent");
        return;
    }
    CHECK(p != NULL, "MPIX_Hier_pmpi_taken not found: libmpixhier_pmpi is not loaded");
    if (p == NULL)
        return;
    for (int c = 0; c < NCOLL; c++) {
        /* is names[c] in the comma-separated list "expect" (or is it "all")? */
        int on = !strcmp(expect, "all");
        for (const char *s = expect; !on && *s;) {
            size_t n = strcspn(s, ",");
            on       = n == strlen(names[c]) && !strncmp(s, names[c], n);
            s += n + (s[n] == ',');
        }
        char iname[64];
        snprintf(iname, sizeof iname, "i%s", names[c]);
        long got0 = taken(names[c]), got1 = taken(iname);
        long want0 = on ? ncalls[0][c] : 0, want1 = on ? ncalls[1][c] : 0;
        CHECK(got0 == want0 && got1 == want1, "%s taken %ld/%ld, want %ld/%ld", names[c], got0,
              got1, want0, want1);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 64) {
        if (rank == 0)
            fprintf(stderr, "pmpi_check: at most 64 ranks\n");
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    test_allreduce();
    test_reduce_scatter();
    test_gathers();
    test_alltoall();
    test_rooted();
    test_intercomm();
    test_vector();
    test_noncommutative();
    test_count_c();
    test_big_counts();
    check_taken();

    int total = 0;
    PMPI_Allreduce(&nfail, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("pmpi_check: %d ranks, %s (%d failed checks)\n", size, total ? "FAILED" : "OK",
               total);
    MPI_Finalize();
    return total ? 1 : 0;
}
