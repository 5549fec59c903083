/* MPIX_HIER_EXCLUDE_RAILS (src/coll/rail_exclude.h) on fake nodes: MPIX_Hier_allreduce
 * with rails excluded equals MPI_Allreduce bit for bit (counts 0, 1, primes, large; int,
 * int64, float and double holding integers; sum and max; in place; blocking and
 * nonblocking), and the ranks on excluded rails put no byte on their rail communicator
 * (counted by PMPI wrappers of this program, which the library's calls reach), while the
 * healthy rails do. Exclusion is given per communicator: the rail list through an
 * MPI_Info key, then the doctor's JSON (a file) through the same key; a communicator
 * without it is the control (its excluded-rail ranks do send).
 *
 *   mpiexec -n 2 -env MPIX_HIER_HOSTNAME a ./test_xrail RAIL : -n 2 -env ... b ./test_xrail RAIL
 * Prints "PASS"/"FAIL ..." on rank 0; exit status 0 when every rank passed. */
#include <mpi.h>
#include <mpix_hier.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- bytes sent per communicator (the rail communicator watched) ------------------ */
static MPI_Comm watched = MPI_COMM_NULL;
static long long watched_bytes;

static void count(MPI_Comm c, int n, MPI_Datatype dt)
{
    int sz = 0;
    if (watched == MPI_COMM_NULL || c != watched || n <= 0)
        return;
    PMPI_Type_size(dt, &sz);
    watched_bytes += (long long)n * sz;
}
int MPI_Send(const void *b, int n, MPI_Datatype dt, int d, int t, MPI_Comm c)
{
    count(c, n, dt);
    return PMPI_Send(b, n, dt, d, t, c);
}
int MPI_Isend(const void *b, int n, MPI_Datatype dt, int d, int t, MPI_Comm c, MPI_Request *r)
{
    count(c, n, dt);
    return PMPI_Isend(b, n, dt, d, t, c, r);
}
int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op, MPI_Comm c)
{
    count(c, n, dt);
    return PMPI_Allreduce(s, r, n, dt, op, c);
}
int MPI_Iallreduce(const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op, MPI_Comm c,
                   MPI_Request *q)
{
    count(c, n, dt);
    return PMPI_Iallreduce(s, r, n, dt, op, c, q);
}
int MPI_Ireduce_scatter_block(const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op,
                              MPI_Comm c, MPI_Request *q)
{
    count(c, n, dt);
    return PMPI_Ireduce_scatter_block(s, r, n, dt, op, c, q);
}
int MPI_Iallgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                   MPI_Comm c, MPI_Request *q)
{
    count(c, rn, rt);
    return PMPI_Iallgather(s, sn, st, r, rn, rt, c, q);
}
int MPI_Reduce_scatter_block(const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op, MPI_Comm c)
{
    count(c, n, dt);
    return PMPI_Reduce_scatter_block(s, r, n, dt, op, c);
}
int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                  MPI_Comm c)
{
    count(c, rn, rt);
    return PMPI_Allgather(s, sn, st, r, rn, rt, c);
}

/* ---- the test ----------------------------------------------------------------------- */
static int failures;
static int me;

static void fail(const char *what)
{
    failures++;
    fprintf(stderr, "rank %d: FAIL %s\n", me, what);
}

static void fill(void *buf, MPI_Datatype dt, int n, int seed)
{
    for (int i = 0; i < n; i++) {
        int v = (int)((i * 7 + seed * 13) % 101) - 50;
        if (dt == MPI_INT) ((int *)buf)[i] = v;
        else if (dt == MPI_INT64_T) ((int64_t *)buf)[i] = (int64_t)v << 20;
        else if (dt == MPI_FLOAT) ((float *)buf)[i] = (float)v;
        else ((double *)buf)[i] = (double)v * 0.5;
    }
}

static void check_comm(MPI_Comm comm, const char *name)
{
    static const int counts[] = {0, 1, 2, 3, 13, 1000, 65537, (1 << 20) + 3};
    MPI_Datatype types[] = {MPI_INT, MPI_INT64_T, MPI_FLOAT, MPI_DOUBLE};
    MPI_Op ops[] = {MPI_SUM, MPI_MAX};
    size_t maxb = ((size_t)(1 << 20) + 3) * 8;
    char *s = malloc(maxb), *r = malloc(maxb), *ref = malloc(maxb), what[256];

    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
        for (int ti = 0; ti < 4; ti++)
            for (int oi = 0; oi < 2; oi++)
                for (int mode = 0; mode < 3; mode++) { /* out of place, in place, nonblocking */
                    int n = counts[ci], sz, ok, all_ok;
                    MPI_Type_size(types[ti], &sz);
                    if ((n > 1000 && ti % 2) || (n > 70000 && (ti != 2 || oi != 0)))
                        continue; /* large counts: int and float; the largest float sum (time) */
                    fill(s, types[ti], n, me + 1);
                    PMPI_Allreduce(s, ref, n, types[ti], ops[oi], comm);
                    memset(r, 0x5a, maxb);
                    if (mode == 1) {
                        memcpy(r, s, (size_t)n * sz);
                        MPIX_Hier_allreduce(MPI_IN_PLACE, r, n, types[ti], ops[oi], comm);
                    } else if (mode == 2) {
                        MPI_Request q;
                        MPIX_Hier_Iallreduce(s, r, n, types[ti], ops[oi], comm, &q);
                        MPI_Wait(&q, MPI_STATUS_IGNORE);
                    } else {
                        MPIX_Hier_allreduce(s, r, n, types[ti], ops[oi], comm);
                    }
                    ok = memcmp(r, ref, (size_t)n * sz) == 0;
                    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, comm);
                    if (!ok) {
                        snprintf(what, sizeof(what), "%s: count %d type %d op %d mode %d differs",
                                 name, n, ti, oi, mode);
                        fail(what);
                    }
                }
    free(s);
    free(r);
    free(ref);
}

/* Bytes this rank sent on its rail communicator during large allreduces on @comm. */
static long long rail_bytes(MPI_Comm comm)
{
    int nlev = 0, n = 4 << 20;
    char name[MPIX_HIER_MAX_LEVEL_NAME];
    float *b = malloc(sizeof(float) * (size_t)n), *o = malloc(sizeof(float) * (size_t)n);
    MPIX_Hier_comm_get_num_levels(comm, &nlev);
    watched = MPI_COMM_NULL;
    for (int l = 0; l < nlev; l++) {
        MPI_Comm c;
        MPIX_Hier_comm_get_level(comm, l, &c, name);
        if (!strcmp(name, "rail"))
            watched = c;
    }
    watched_bytes = 0;
    fill(b, MPI_FLOAT, n, me);
    for (int i = 0; i < 3; i++)
        MPIX_Hier_allreduce(b, o, n, MPI_FLOAT, MPI_SUM, comm);
    watched = MPI_COMM_NULL;
    free(b);
    free(o);
    return watched_bytes;
}

int main(int argc, char **argv)
{
    MPI_Comm ctl, xc, jc;
    MPI_Info info;
    int excl = argc > 1 ? atoi(argv[1]) : 1, nlev = 0, local, size, bad = 0;
    char desc[4096], path[256], what[256];
    long long b;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    {
        MPI_Comm node;
        MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
        MPIX_Hier_comm_get_num_levels(ctl, &nlev);
        MPIX_Hier_comm_get_level(ctl, 0, &node, NULL);
        MPI_Comm_rank(node, &local); /* rail = local index on fake nodes */
    }
    /* exclusion by rail list */
    MPI_Comm_dup(MPI_COMM_WORLD, &xc);
    MPI_Info_create(&info);
    snprintf(path, sizeof(path), "%d", excl);
    MPI_Info_set(info, "mpix_hier_exclude_rails", path);
    MPIX_Hier_comm_init(xc, info);
    MPI_Info_free(&info);
    MPIX_Hier_comm_describe(xc, desc, sizeof(desc), NULL);
    if (me == 0)
        printf("%s", desc);
    if (strstr(desc, "rails excluded") == NULL || strstr(desc, "sends over the other rails") == NULL)
        fail("describe does not say that rails are excluded");

    /* exclusion by the doctor's JSON */
    snprintf(path, sizeof(path), "/tmp/mpix_xrail_%d.json", me);
    {
        FILE *f = fopen(path, "w");
        fprintf(f, "{\"tool\": \"mpix_doctor\", \"outliers\": [], \"exclude_rails\": [%d], "
                   "\"healthy\": false}\n", excl);
        fclose(f);
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &jc);
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpix_hier_exclude_rails", path);
    MPIX_Hier_comm_init(jc, info);
    MPI_Info_free(&info);

    check_comm(xc, "rail list");
    check_comm(jc, "doctor json");
    check_comm(ctl, "control");

    b = rail_bytes(xc);
    if (local == excl && b != 0) {
        snprintf(what, sizeof(what), "excluded rail %d sent %lld bytes on its rail communicator",
                 excl, b);
        fail(what);
    }
    if (local != excl && b == 0)
        fail("a healthy rail sent nothing (exclusion path not taken?)");
    b = rail_bytes(jc);
    if (local == excl && b != 0)
        fail("doctor json: excluded rail sent bytes");
    b = rail_bytes(ctl); /* collective: every rank */
    if (local == excl && b == 0)
        fail("control: the excluded rank sent nothing without exclusion (counter broken?)");
    remove(path);

    PMPI_Allreduce(&failures, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
        printf("%s: test_xrail exclude %d, %d ranks, %d levels, %d failures\n",
               bad ? "FAIL" : "PASS", excl, size, nlev, bad);
    fflush(stdout);
    MPI_Comm_free(&xc);
    MPI_Comm_free(&jc);
    MPI_Comm_free(&ctl);
    MPI_Finalize();
    return bad ? 1 : 0;
}
