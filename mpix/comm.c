/* Public management API of the per-communicator hierarchy (the object itself
 * lives in src/coll/hier.c): argument checks, error raising. */
#include "config.h"

#include "mpix_internal.h"
#include "coll/metrics.h"
#include "exec/task.h"
#include "util/log.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mxh_entry_ready; /* mpix_internal.h */

int mxh_entry_init_slow(MPI_Comm comm, const char *func)
{
    mxh_status_t st = mxh_lib_init();
    if (st != MXH_OK)
        return mxh_raise_status(comm, st, func);
    if (!mxh_entry_ready) {
        mxh_config_error_class();
        mxh_task_set_error_fn(mxh_status_code);
        mxh_lib_on_finalize(mxh_errors_cleanup);
        mxh_args_check  = mxh_lib_config()->check;
        mxh_entry_ready = 1;
    }
    return MPI_SUCCESS;
}

int mxh_entry_hier_slow(MPI_Comm comm, const char *func, mxh_hier_t **hier_p)
{
    mxh_status_t st;
    int rc;

    if (mxh_hier_cached(comm))
        return mxh_hier_get(comm, hier_p) == MXH_OK ? MPI_SUCCESS : MPI_ERR_INTERN;
    if ((rc = mxh_entry_init(comm, func)) != MPI_SUCCESS)
        return rc;
    mxh_log_clear_last_error();
    st = mxh_hier_get(comm, hier_p);
    return st == MXH_OK ? MPI_SUCCESS : mxh_raise_status(comm, st, func);
}

/* The checks of every call on a communicator: the communicator valid, the call's output
 * arguments usable (@out_ok; else MPI_ERR_ARG saying @what), the library initialized. */
static int entry_checks(MPI_Comm comm, const char *F, int out_ok, const char *what)
{
    int rc = mxh_check_comm(comm, F);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!out_ok)
        return mxh_raise(comm, MPI_ERR_ARG, F, "%s", what);
    if ((rc = mxh_entry_init(comm, F)) != MPI_SUCCESS)
        return rc;
    mxh_log_clear_last_error();
    return MPI_SUCCESS;
}

/* An intercommunicator has no hierarchy: its collectives are MPI's own (the entry of
 * every collective sends them there), nothing is built on it. */
static int is_inter(MPI_Comm comm)
{
    int flag = 0;
    return MPI_Comm_test_inter(comm, &flag) == MPI_SUCCESS && flag;
}

/* Whether @info is MPI_INFO_NULL or a valid MPI_Info: asked of MPI with errors returned
 * (MPICH raises an invalid info handle on MPI_COMM_WORLD, fatal by default), so that a
 * bad handle is reported once, through the communicator's handler. */
static int info_valid(MPI_Info info)
{
    MPI_Errhandler ew, es;
    int nkeys = 0, rc;
    if (info == MPI_INFO_NULL)
        return 1;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &ew);
    MPI_Comm_get_errhandler(MPI_COMM_SELF, &es);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    rc = MPI_Info_get_nkeys(info, &nkeys);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, ew);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, es);
    MPI_Errhandler_free(&ew);
    MPI_Errhandler_free(&es);
    return rc == MPI_SUCCESS;
}

#define MXH_INTER_TEXT "intercommunicator: MPI's own collectives, no hierarchy\n"

static int entry_status(MPI_Comm comm, mxh_status_t st, const char *F)
{
    return st == MXH_OK ? MPI_SUCCESS : mxh_raise_status(comm, st, F);
}

int MPIX_Hier_comm_init(MPI_Comm comm, MPI_Info info)
{
    static const char F[] = "MPIX_Hier_comm_init";
    mxh_hier_t *h;
    int rc;

    if ((rc = entry_checks(comm, F, 1, "")) != MPI_SUCCESS)
        return rc;
    if (!info_valid(info))
        return mxh_raise(comm, MPI_ERR_INFO, F, "info is not a valid MPI_Info handle");
    if (is_inter(comm))
        return MPI_SUCCESS;
    return entry_status(comm, mxh_hier_init(comm, info, &h), F);
}

int MPIX_Hier_comm_get_num_levels(MPI_Comm comm, int *num_levels)
{
    static const char F[] = "MPIX_Hier_comm_get_num_levels";
    mxh_hier_t *h;
    int rc;

    if ((rc = entry_checks(comm, F, num_levels != NULL, "num_levels is NULL")) != MPI_SUCCESS)
        return rc;
    if (is_inter(comm)) {
        *num_levels = 0;
        return MPI_SUCCESS;
    }
    if ((rc = mxh_entry_hier(comm, F, &h)) != MPI_SUCCESS)
        return rc;
    *num_levels = h->layout->nlevels;
    return MPI_SUCCESS;
}

int MPIX_Hier_comm_get_level(MPI_Comm comm, int level, MPI_Comm *level_comm, char *name)
{
    static const char F[] = "MPIX_Hier_comm_get_level";
    mxh_hier_t *h;
    int rc;

    if ((rc = entry_checks(comm, F, level_comm != NULL, "level_comm is NULL")) != MPI_SUCCESS)
        return rc;
    if (is_inter(comm))
        return mxh_raise(comm, MPI_ERR_ARG, F, "level %d out of range: an intercommunicator has "
                                               "no levels", level);
    if ((rc = mxh_entry_hier(comm, F, &h)) != MPI_SUCCESS)
        return rc;
    if (level < 0 || level >= h->layout->nlevels)
        return mxh_raise(comm, MPI_ERR_ARG, F, "level %d out of range [0, %d)", level,
                         h->layout->nlevels);
    *level_comm = h->level_comm[level];
    if (name != NULL)
        snprintf(name, MPIX_HIER_MAX_LEVEL_NAME, "%s",
                 mxh_level_type_name(h->layout->type[level]));
    return MPI_SUCCESS;
}

int MPIX_Hier_comm_describe(MPI_Comm comm, char *buf, int buflen, int *resultlen)
{
    static const char F[] = "MPIX_Hier_comm_describe";
    mxh_hier_t *h;
    char what[64];
    int rc;

    snprintf(what, sizeof(what), "buf is NULL or buflen (%d) negative", buflen);
    if ((rc = entry_checks(comm, F, buflen >= 0 && (buf != NULL || buflen == 0), what)) !=
        MPI_SUCCESS)
        return rc;
    if (is_inter(comm)) {
        if (buflen > 0)
            snprintf(buf, (size_t)buflen, "%s", MXH_INTER_TEXT);
        if (resultlen)
            *resultlen = (int)strlen(MXH_INTER_TEXT);
        return MPI_SUCCESS;
    }
    if ((rc = mxh_entry_hier(comm, F, &h)) != MPI_SUCCESS)
        return rc;
    const char *off = h->config.enable ? "" : "(MPIX_HIER_ENABLE=no) ";
    if (buflen > 0)
        snprintf(buf, (size_t)buflen, "%s%s", off, h->description);
    if (resultlen)
        *resultlen = (int)(strlen(off) + strlen(h->description));
    return MPI_SUCCESS;
}

int MPIX_Hier_get_error_class(int *errorclass)
{
    if (errorclass == NULL)
        return MPI_ERR_ARG;
    *errorclass = mxh_config_error_class();
    return MPI_SUCCESS;
}

int MPIX_Hier_get_version(int *major, int *minor, int *patch)
{
    if (major)
        *major = MPIX_HIER_VERSION_MAJOR;
    if (minor)
        *minor = MPIX_HIER_VERSION_MINOR;
    if (patch)
        *patch = MPIX_HIER_VERSION_PATCH;
    return MPI_SUCCESS;
}

/* ---- metrics (src/coll/metrics.h) ---- */

int MPIX_Hier_comm_get_stats(MPI_Comm comm, const char *name, double *value)
{
    static const char F[] = "MPIX_Hier_comm_get_stats";
    int rc;

    if ((rc = entry_checks(comm, F, name != NULL && value != NULL, "name or value is NULL")) !=
        MPI_SUCCESS)
        return rc;
    return entry_status(comm, mxh_metrics_get(comm, name, value), F);
}

int MPIX_Hier_comm_reset_stats(MPI_Comm comm)
{
    static const char F[] = "MPIX_Hier_comm_reset_stats";
    int rc;

    if ((rc = entry_checks(comm, F, 1, "")) != MPI_SUCCESS)
        return rc;
    return entry_status(comm, mxh_metrics_reset(comm), F);
}

/* For the drop-in's exit line (mpix/pmpi.c finds it with dlsym; not in
 * mpix_hier.h): of the calls of collective @name ("allreduce"; "iallreduce"
 * its nonblocking form) the library took in this process, how many MPI's own
 * collective served, their reasons in @buf ("no_kernel 4, below_min_bytes 6");
 * -1 for an unknown name, or when nothing is counted (MPIX_HIER_METRICS=no). */
MPIX_HIER_API long MPIX_Hier_pmpi_fallbacks(const char *name, char *buf, int buflen)
{
    uint64_t calls[MXH_NALG], fb[MXH_FB_COUNT];
    int nb = name != NULL && name[0] == 'i', coll = -1;
    size_t len = 0;
    long sum = 0;

    for (int c = 0; name != NULL && c < MXH_COLL_COUNT; c++)
        if (!strcmp(name + nb, mxh_coll_name((mxh_coll_t)c)))
            coll = c;
    if (buf != NULL && buflen > 0)
        buf[0] = '\0';
    if (coll < 0 || mxh_metrics_off)
        return -1;
    mxh_metrics_process_calls((mxh_coll_t)coll, !nb, calls, fb);
    for (int w = 0; w < MXH_FB_COUNT; w++) {
        if (fb[w] == 0)
            continue;
        sum += (long)fb[w];
        if (buf != NULL && buflen > 0 && len < (size_t)buflen)
            len += (size_t)snprintf(buf + len, (size_t)buflen - len, "%s%s %llu",
                                    len ? ", " : "", mxh_fallbacks[w].name,
                                    (unsigned long long)fb[w]);
    }
    return sum;
}

int MPIX_Hier_metrics_write(const char *path)
{
    static const char F[] = "MPIX_Hier_metrics_write";
    mxh_status_t st;
    int rc;

    if ((rc = mxh_entry_init(MPI_COMM_WORLD, F)) != MPI_SUCCESS)
        return rc;
    mxh_log_clear_last_error();
    st = mxh_metrics_write(path);
    if (st == MXH_ERR_IO)
        return mxh_raise(MPI_COMM_WORLD, MPI_ERR_IO, F, "%s", mxh_log_last_error());
    return entry_status(MPI_COMM_WORLD, st, F);
}

int MPIX_Hier_metrics_text(char *buf, int buflen, int *resultlen)
{
    static const char F[] = "MPIX_Hier_metrics_text";
    mxh_status_t st;
    char *text = NULL;
    size_t len = 0;
    int rc;

    if (buflen < 0 || (buf == NULL && buflen > 0))
        return mxh_raise(MPI_COMM_WORLD, MPI_ERR_ARG, F, "buf is NULL or buflen (%d) negative",
                         buflen);
    if ((rc = mxh_entry_init(MPI_COMM_WORLD, F)) != MPI_SUCCESS)
        return rc;
    mxh_log_clear_last_error();
    if ((st = mxh_metrics_text(&text, &len)) != MXH_OK)
        return mxh_raise_status(MPI_COMM_WORLD, st, F);
    if (buflen > 0)
        snprintf(buf, (size_t)buflen, "%s", text);
    if (resultlen)
        *resultlen = len > INT_MAX ? INT_MAX : (int)len;
    free(text);
    return MPI_SUCCESS;
}
