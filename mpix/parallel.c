/* MPIX_Hier_comm_split_parallel and _describe_parallel: argument checks and their
 * agreement, then the placement (src/decide/parallel.h) and one MPI_Comm_split a
 * dimension. MPIX_Hier_comm_reorder: the same topology order, one MPI_Comm_split. */
#include "config.h"

#include "mpix_internal.h"
#include "decide/parallel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What one call places: the resolved sizes, the calling rank's position, the spans. */
typedef struct {
    int ndims;
    int size[MXH_PARALLEL_MAX_DIMS];
    mxh_parallel_span_t span[MXH_PARALLEL_MAX_DIMS];
    int pos; /* the calling rank's */
    char why[256];
} placement_t;

/* The ranks agree on @ndims and @sizes (one MPI_Allreduce of their maxima and minima,
 * with whether any rank's are unusable): 0 where they do, else the reason in @why. */
static int agree(MPI_Comm comm, int ndims, const int sizes[], int ok, char *why, size_t len)
{
    enum { N = 2 + MXH_PARALLEL_MAX_DIMS };
    int v[2 * N] = {0}, rc;

    v[0] = ok ? ndims : 0;
    v[1] = !ok;
    for (int d = 0; ok && d < ndims; d++)
        v[2 + d] = sizes[d];
    for (int i = 0; i < N; i++)
        v[N + i] = -v[i];
    if ((rc = MPI_Allreduce(MPI_IN_PLACE, v, 2 * N, MPI_INT, MPI_MAX, comm)) != MPI_SUCCESS)
        return rc;
    if (v[1]) {
        snprintf(why, len, "%s", ok ? "another rank's ndims or sizes are unusable"
                                    : "ndims out of range [1, MPIX_HIER_MAX_PARALLEL_DIMS] "
                                      "or sizes NULL");
        return MPI_ERR_ARG;
    }
    for (int i = 0; i < N; i++)
        if (v[i] != -v[N + i]) {
            snprintf(why, len, "the ranks differ in %s", i == 0 ? "ndims" : "sizes");
            return MPI_ERR_ARG;
        }
    return MPI_SUCCESS;
}

/* The hierarchy of the intracommunicator @comm (built if needed: collective), else the
 * error raised for @F. */
static int intra_hier(MPI_Comm comm, const char *F, mxh_hier_t **h)
{
    int rc, flag = 0;
    if ((rc = mxh_check_comm(comm, F)) != MPI_SUCCESS)
        return rc;
    if (MPI_Comm_test_inter(comm, &flag) == MPI_SUCCESS && flag)
        return mxh_raise(comm, MPI_ERR_COMM, F, "an intercommunicator has no hierarchy");
    return mxh_entry_hier(comm, F, h);
}

/* Checks, agreement and placement for @F: MPI_SUCCESS, a raised error, or NO_PLACEMENT
 * (not raised; the reason in pl->why) where the sizes do not fit the hierarchy. */
#define NO_PLACEMENT (-1)
static int place(MPI_Comm comm, const char *F, int ndims, const int sizes[], placement_t *pl,
                 mxh_hier_t **hier, int **all_pos)
{
    int ok = ndims >= 1 && ndims <= MXH_PARALLEL_MAX_DIMS && sizes != NULL;
    int rc, rank, n, *pos = NULL;
    mxh_hier_t *h;
    mxh_status_t st;

    pl->why[0] = '\0';
    if ((rc = intra_hier(comm, F, &h)) != MPI_SUCCESS)
        return rc;
    if ((rc = agree(comm, ndims, sizes, ok, pl->why, sizeof(pl->why))) != MPI_SUCCESS)
        return rc == MPI_ERR_ARG ? mxh_raise(comm, rc, F, "%s", pl->why) : rc;
    pl->ndims = ndims;
    memcpy(pl->size, sizes, sizeof(int) * (size_t)ndims);
    MPI_Comm_rank(comm, &rank);
    n = h->layout->nranks;
    if ((pos = malloc(sizeof(int) * (size_t)n)) == NULL)
        return mxh_raise(comm, MPI_ERR_NO_MEM, F, "out of memory for %d ranks' positions", n);
    st = mxh_parallel_place(h->layout, ndims, pl->size, pos, pl->span, pl->why,
                            sizeof(pl->why));
    pl->pos = pos[rank];
    if (hier != NULL && st == MXH_OK) { /* every rank's position, for the cost model */
        *hier    = h;
        *all_pos = pos;
    } else {
        free(pos);
    }
    if (st == MXH_ERR_INVALID_PARAM)
        return NO_PLACEMENT;
    return st == MXH_OK ? MPI_SUCCESS : mxh_raise_status(comm, st, F);
}

int MPIX_Hier_comm_split_parallel(MPI_Comm comm, int ndims, const int sizes[],
                                  MPI_Comm newcomms[])
{
    static const char F[] = "MPIX_Hier_comm_split_parallel";
    placement_t pl;
    int rc;

    if ((rc = place(comm, F, ndims, sizes, &pl, NULL, NULL)) == NO_PLACEMENT)
        return mxh_raise(comm, MPI_ERR_ARG, F, "%s", pl.why);
    if (rc != MPI_SUCCESS)
        return rc;
    if (newcomms == NULL) /* agreed: every rank got the same sizes, a pointer is local */
        return mxh_raise(comm, MPI_ERR_ARG, F, "newcomms is NULL");
    for (int d = 0; d < ndims; d++) {
        int color, key;
        mxh_parallel_group(pl.size, d, pl.pos, &color, &key);
        if ((rc = MPI_Comm_split(comm, color, key, &newcomms[d])) != MPI_SUCCESS) {
            while (d-- > 0)
                MPI_Comm_free(&newcomms[d]);
            return rc;
        }
    }
    return MPI_SUCCESS;
}

/* The cost model's line for dimension @d: bus bandwidth (nccl-tests' busbw: the
 * algorithm's times 2(p-1)/p for allreduce, (p-1)/p for all-gather) and time. */
static size_t model_line(char *out, size_t len, const mxh_parallel_cost_t *c, int p,
                         size_t bytes)
{
    static const char *const coll[2] = {"allreduce", "all-gather"};
    size_t off = (size_t)snprintf(out, len, "  model, %zu MiB of floats, each group alone:",
                                  bytes >> 20);
    for (int k = 0; k < 2 && off < len; k++) {
        if (c->t[k] > 0)
            off += (size_t)snprintf(out + off, len - off, "%s %s %.1f GB/s bus (%.0f us)",
                                    k ? "," : "", coll[k],
                                    (double)bytes / c->t[k] * (k == 0 ? 2.0 : 1.0) * (p - 1) /
                                        p * 1e-9,
                                    c->t[k] * 1e6);
        else
            off += (size_t)snprintf(out + off, len - off, "%s %s not modelled (%s)",
                                    k ? "," : "", coll[k], c->why);
    }
    if (off < len)
        off += (size_t)snprintf(out + off, len - off, "\n");
    return off;
}

int MPIX_Hier_comm_describe_parallel(MPI_Comm comm, int ndims, const int sizes[], char *buf,
                                     int buflen, int *resultlen)
{
    static const char F[] = "MPIX_Hier_comm_describe_parallel";
    const size_t bytes = (size_t)64 << 20; /* mpix_info --parallel's default */
    placement_t pl;
    char text[MXH_PARALLEL_MAX_DIMS * 400 + 300];
    size_t off = 0;
    mxh_hier_t *h = NULL;
    int rc, *pos = NULL;

    if (buflen < 0 || (buf == NULL && buflen > 0))
        return mxh_raise(comm, MPI_ERR_ARG, F, "buf is NULL or buflen (%d) negative", buflen);
    rc = place(comm, F, ndims, sizes, &pl, &h, &pos);
    if (rc == NO_PLACEMENT) {
        snprintf(text, sizeof(text), "no placement: %s\n", pl.why);
    } else if (rc != MPI_SUCCESS) {
        free(pos);
        return rc;
    } else {
        text[0] = '\0';
        for (int d = 0; d < ndims && off < sizeof(text); d++) {
            mxh_parallel_cost_t c;
            off += (size_t)snprintf(text + off, sizeof(text) - off,
                                    "dimension %d: %d ranks a group, level %s\n", d,
                                    pl.size[d], mxh_parallel_span_name(pl.span[d]));
            if (off < sizeof(text) && pl.size[d] > 1 &&
                mxh_parallel_cost(&h->config, h->recs, h->layout, pl.size, d, pos, bytes,
                                  sizeof(float), &c) == MXH_OK)
                off += model_line(text + off, sizeof(text) - off, &c, pl.size[d], bytes);
        }
    }
    free(pos);
    if (buflen > 0)
        snprintf(buf, (size_t)buflen, "%s", text);
    if (resultlen)
        *resultlen = (int)strlen(text);
    return MPI_SUCCESS;
}

int MPIX_Hier_comm_reorder(MPI_Comm comm, MPI_Comm *newcomm)
{
    static const char F[] = "MPIX_Hier_comm_reorder";
    mxh_hier_t *h;
    mxh_status_t st;
    int rc, rank, key, *pos;

    if ((rc = mxh_check_comm(comm, F)) != MPI_SUCCESS)
        return rc;
    if (newcomm == NULL) /* before the collective part: a local argument */
        return mxh_raise(comm, MPI_ERR_ARG, F, "newcomm is NULL");
    if ((rc = intra_hier(comm, F, &h)) != MPI_SUCCESS)
        return rc;
    MPI_Comm_rank(comm, &rank);
    if ((pos = malloc(sizeof(int) * (size_t)h->layout->nranks)) == NULL)
        return mxh_raise(comm, MPI_ERR_NO_MEM, F, "out of memory for %d ranks' positions",
                         h->layout->nranks);
    st  = mxh_parallel_order(h->layout, pos); /* the same on every rank: the agreed layout */
    key = pos[rank];
    free(pos);
    if (st != MXH_OK)
        return mxh_raise_status(comm, st, F);
    return MPI_Comm_split(comm, 0, key, newcomm);
}
