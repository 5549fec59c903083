/* MPIX_HIER_CHECK=yes: before each collective the ranks compare what MPI
 * requires them to agree on (the collective, root, op, the type signature of
 * the data, the per-rank counts of the v-collectives) in one MPI_Allreduce of
 * each field and its negation under MPI_MAX. Only when they differ does an
 * MPI_Allgather of the fields name the ranks; every rank then returns the
 * same error, so that none enters a collective the others do not. */
#include "config.h"

#include "coll/coll.h"
#include "coll/dtype.h"
#include "mpix_internal.h"
#include "util/log.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mxh_args_check;

/* The fields compared, in the order a mismatch is reported (the first one
 * that differs gives the error class). */
enum { F_COLL, F_ROOT, F_OP, F_TYPE, F_COUNT, F_COUNTS, F_LOCAL, NF };

static const struct {
    const char *name;
    int         cls;
} fields[NF] = {
    [F_COLL]   = {"collective", MPI_ERR_OTHER},
    [F_ROOT]   = {"root", MPI_ERR_ROOT},
    [F_OP]     = {"op", MPI_ERR_OP},
    [F_TYPE]   = {"basic datatype of the type signature", MPI_ERR_TYPE},
    [F_COUNT]  = {"count (elements of that basic datatype)", MPI_ERR_COUNT},
    [F_COUNTS] = {"per-rank counts (recvcounts)", MPI_ERR_COUNT},
    [F_LOCAL]  = {"send signature equal to the receive signature", MPI_ERR_TYPE},
};

#define MIXED_TYPE ((int64_t)-1) /* a signature of several basic types: bytes compared */
#define USER_OP    ((int64_t)-1) /* user ops: handles need not be equal across ranks */

/* @count elements of @dt as (basic type, elements of it); a signature that
 * mixes basic types as (MIXED_TYPE, bytes). */
static void signature(MPI_Datatype dt, int64_t count, int64_t *type, int64_t *n)
{
    MPI_Datatype base = MPI_DATATYPE_NULL;
    size_t per = 0;
    int size = 0;

    if (mxh_dtype_signature(dt, &base, &per) == 0 && base != MPI_DATATYPE_NULL) {
        *type = (int64_t)(intptr_t)base;
        *n    = count * (int64_t)per;
        return;
    }
    MPI_Type_size(dt, &size);
    *type = MIXED_TYPE;
    *n    = count * size;
}

/* FNV-1a over @n counts scaled to elements of the signature (one element of
 * @dt = @per elements): equal arrays of equal signatures hash equal. */
static int64_t counts_hash(const int *counts, int n, int64_t per)
{
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; counts != NULL && i < n; i++) {
        uint64_t v = (uint64_t)((int64_t)counts[i] * per);
        for (int b = 0; b < 8; b++) {
            h ^= (v >> (8 * b)) & 0xff;
            h *= 1099511628211ULL;
        }
    }
    return (int64_t)(h >> 1); /* non-negative: its negation is representable */
}

/* This rank's fields of call @a. */
static void fill(const mxh_coll_args_t *a, int rank, int size, int64_t f[NF])
{
    const mxh_coll_desc_t *d = mxh_coll_info(a->coll);
    int64_t per, stype, sn;

    memset(f, 0, NF * sizeof(*f));
    f[F_COLL]  = (int64_t)a->coll + 1;
    f[F_ROOT]  = d->rooted ? a->root : -1;
    f[F_OP]    = !d->reducing ? 0 : mxh_dtype_op_name(a->op) != NULL ? (int64_t)(intptr_t)a->op
                                                                     : USER_OP;
    f[F_LOCAL] = 1;
    signature(a->dt, 1, &f[F_TYPE], &per);
    switch (a->coll) {
    case MXH_COLL_ALLGATHERV:
    case MXH_COLL_REDUCE_SCATTER:
        f[F_COUNTS] = counts_hash(a->rcounts, size, per);
        if (a->coll == MXH_COLL_ALLGATHERV && a->sendbuf != MPI_IN_PLACE) {
            signature(a->sendtype, a->sendcount, &stype, &sn);
            f[F_LOCAL] = stype == f[F_TYPE] && sn == (int64_t)a->rcounts[rank] * per;
        }
        break;
    case MXH_COLL_ALLTOALLV:
        break; /* pairwise counts: not compared (only the basic datatype) */
    default:
        f[F_COUNT] = (int64_t)a->count * per;
        if (d->sendtype && a->sendbuf != MPI_IN_PLACE) {
            signature(a->sendtype, a->sendcount, &stype, &sn);
            f[F_LOCAL] = stype == f[F_TYPE] && sn == f[F_COUNT];
        }
    }
}

/* Value @v of field @k for the report (@group: its group, 1 = rank 0's). */
static void value_text(int k, int64_t v, int group, char *buf, size_t len)
{
    char name[MPI_MAX_OBJECT_NAME] = "";
    int rl = 0;

    if (k == F_COLL)
        snprintf(buf, len, "%s", v > 0 && v <= MXH_COLL_COUNT ? mxh_coll_name((mxh_coll_t)(v - 1))
                                                              : "?");
    else if (k == F_OP)
        snprintf(buf, len, "%s", v == USER_OP ? "a user op"
                                 : v == 0     ? "none"
                                              : mxh_dtype_op_name((MPI_Op)(intptr_t)v));
    else if (k == F_TYPE && v == MIXED_TYPE)
        snprintf(buf, len, "several (bytes compared)");
    else if (k == F_TYPE) {
        MPI_Type_get_name((MPI_Datatype)(intptr_t)v, name, &rl);
        snprintf(buf, len, "%s", name[0] ? name : "?");
    } else if (k == F_COUNTS)
        snprintf(buf, len, "%s", group == 1 ? "one array" : "another");
    else if (k == F_ROOT && v < 0)
        snprintf(buf, len, "none");
    else if (k == F_LOCAL)
        snprintf(buf, len, "%s", v ? "yes" : "no");
    else
        snprintf(buf, len, "%lld", (long long)v);
}

/* The report of field @k over every rank's fields @all: the ranks grouped by
 * value, rank 0's group first (at most 4 groups, 8 ranks each, shown). */
static size_t report_field(int k, const int64_t *all, int size, char *buf, size_t len)
{
    size_t at = (size_t)snprintf(buf, len, "%s:", fields[k].name);
    int *seen = calloc((size_t)size, sizeof(int)), groups = 0;

    for (int r = 0; seen != NULL && r < size && at < len; r++) {
        if (seen[r])
            continue;
        int64_t v = all[(size_t)r * NF + k];
        char vt[MPI_MAX_OBJECT_NAME + 32];
        int shown = 0, count = 0;
        if (++groups > 4) {
            at += (size_t)snprintf(buf + at, len - at, " ...");
            break;
        }
        for (int q = r; q < size; q++)
            count += all[(size_t)q * NF + k] == v;
        at += (size_t)snprintf(buf + at, len - at, "%s rank%s", groups > 1 ? ";" : "",
                               count > 1 ? "s" : "");
        for (int q = r; q < size; q++) {
            if (all[(size_t)q * NF + k] != v)
                continue;
            seen[q] = 1;
            if (shown < 8 && at < len)
                at += (size_t)snprintf(buf + at, len - at, "%s %d", shown ? "," : "", q);
            shown++;
        }
        value_text(k, v, groups, vt, sizeof vt);
        if (at < len)
            at += (size_t)snprintf(buf + at, len - at, "%s: %s", shown > 8 ? ", ..." : "", vt);
    }
    free(seen);
    return at < len ? at : len - 1;
}

/* Whether field @k differs across ranks (@red: the maxima, then minus the
 * minima); the local consistency is an error on any rank, all of them too. */
static int differs(const int64_t *red, int k)
{
    return red[k] != -red[NF + k] || (k == F_LOCAL && -red[NF + k] == 0);
}

int mxh_check_args(const mxh_coll_args_t *a)
{
    int64_t mine[NF], both[2 * NF], red[2 * NF];
    int rank, size, k, first = -1, rc;

    MPI_Comm_rank(a->comm, &rank);
    MPI_Comm_size(a->comm, &size);
    fill(a, rank, size, mine);
    for (k = 0; k < NF; k++) {
        both[k]      = mine[k];
        both[NF + k] = -mine[k]; /* MAX of the negation: minus the minimum */
    }
    if ((rc = MPI_Allreduce(both, red, 2 * NF, MPI_INT64_T, MPI_MAX, a->comm)) != MPI_SUCCESS)
        return rc; /* MPI reported it through the communicator's handler */
    for (k = 0; k < NF && first < 0; k++)
        if (differs(red, k))
            first = k;
    if (first < 0)
        return MPI_SUCCESS;

    int64_t *all = malloc((size_t)size * NF * sizeof(*all));
    char msg[700];
    size_t at;
    if (all == NULL)
        return mxh_raise(a->comm, MPI_ERR_NO_MEM, a->func, "MPIX_HIER_CHECK: no memory");
    if ((rc = MPI_Allgather(mine, NF, MPI_INT64_T, all, NF, MPI_INT64_T, a->comm)) !=
        MPI_SUCCESS) {
        free(all);
        return rc;
    }
    at = (size_t)snprintf(msg, sizeof msg, "arguments differ across ranks (MPIX_HIER_CHECK): ");
    for (k = first; k < NF && at + 2 < sizeof msg; k++)
        if (differs(red, k)) {
            if (k != first)
                at += (size_t)snprintf(msg + at, sizeof msg - at, "; ");
            at += report_field(k, all, size, msg + at, sizeof msg - at);
        }
    free(all);
    return mxh_raise(a->comm, fields[first].cls, a->func, "%s", msg);
}
