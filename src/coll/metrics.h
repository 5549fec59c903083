/* Metrics: per-communicator counters of the collectives (calls, bytes, time,
 * per collective, blocking or not, path and algorithm), the fallbacks to plain
 * MPI and their reasons (mxh_fallbacks, decide/select.h), and the time of the
 * executor's steps per level. Kept in a process-wide registry (freed
 * communicators stay, marked not live), read by name (mxh_metrics_get) and
 * written in the Prometheus text format (to MPIX_HIER_METRICS_FILE at
 * MPI_Finalize and every MPIX_HIER_METRICS_INTERVAL seconds, or on demand).
 *
 * Cost per call: two clock reads (util/clock.h) and a few additions into the
 * communicator's counters, found through a one-entry cache of the last
 * communicator; no allocation after a communicator's first call. Per step:
 * two clock reads. */
#ifndef MXH_COLL_METRICS_H
#define MXH_COLL_METRICS_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "coll/coll.h"
#include "util/clock.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One metric family of the file (the one table: writer, reader, mpix_info). */
typedef struct mxh_metric_family {
    const char *name;   /* Prometheus name */
    const char *type;   /* "counter" or "gauge" */
    const char *labels; /* its own labels, besides the communicator's (MXH_METRICS_COMM_LABELS) */
    const char *help;
} mxh_metric_family_t;
extern const mxh_metric_family_t mxh_metric_families[]; /* terminated by a NULL name */
#define MXH_METRICS_COMM_LABELS "comm,comm_name,comm_size,rank,host"
/* The values of the labels with fixed sets (mpix_info). */
extern const char *const mxh_metrics_algo_names[]; /* algo label, NULL-terminated */
extern const char *const mxh_metrics_path_names[]; /* path label, NULL-terminated */

/* A communicator's counters (the registry's entry; inline here so that the
 * per-call counting is inlined into the call). */
enum { MXH_ALG_NONE, MXH_ALG_MPI, MXH_ALG_SHM, MXH_ALG_HIER, MXH_ALG_PIPELINE,
       MXH_ALG_RAILX, /* allreduce with excluded rails (rail_exclude.h) */
       MXH_ALG_IPC,   /* path shm on the device node level (exec/ipc.h) */
       MXH_ALG_IPC_SCHED, /* path sched, its node part on the device node level */
       MXH_NALG };
typedef struct mxh_mcell {
    uint64_t calls, bytes, ticks;
} mxh_mcell_t;
struct mxh_mstats {
    int         index; /* creation order in this process; -1: the sum of freed ones */
    int         size;
    int         live;
    MPI_Comm    comm;  /* while live */
    char        name[MPI_MAX_OBJECT_NAME];
    mxh_mcell_t c[MXH_COLL_COUNT][2][MXH_NALG];
    uint64_t    fb[MXH_COLL_COUNT][2][MXH_FB_COUNT];
    uint64_t    lvl_ticks[MXH_COLL_COUNT][MXH_NALG][MXH_LEVEL_TYPE_COUNT];
    uint64_t    lvl_steps[MXH_COLL_COUNT][MXH_NALG][MXH_LEVEL_TYPE_COUNT];
    uint64_t    staged[MXH_COLL_COUNT];      /* device bytes copied through host memory */
    uint64_t    cpu_reduced[MXH_COLL_COUNT]; /* device bytes reduced by the CPU */
    uint64_t    bounce_bytes;                /* pinned bounce pool now (gauge) */
};

struct mxh_mstats *mxh_metrics_of_slow(const mxh_coll_args_t *a);
void mxh_metrics_record_levels(struct mxh_mstats *m, const mxh_coll_args_t *a, int alg);
void mxh_metrics_poll_due(void);
extern uint64_t mxh_metrics_next_write;
extern int mxh_metrics_off; /* MPIX_HIER_METRICS=no: nothing is counted */

/* The periodic write, if due (one compare when MPIX_HIER_METRICS_INTERVAL is
 * 0). Only outside tasks. */
static inline void mxh_metrics_poll(void)
{
    if (mxh_metrics_next_write != 0)
        mxh_metrics_poll_due();
}

/* The counters of the call's communicator (created on its first call; NULL
 * if they cannot be): looked up when the call starts, on the caller's stack;
 * the hierarchy caches them. */
static inline struct mxh_mstats *mxh_metrics_of(const mxh_coll_args_t *a)
{
    if (mxh_metrics_off)
        return NULL;
    if (a->hier != NULL && a->hier->mstats != NULL)
        return a->hier->mstats;
    return mxh_metrics_of_slow(a);
}

/* A call done: count it in a->mstats (@blocking: the blocking form). a->t0
 * is when it started. Blocking calls also write the periodic file when it is
 * due. */
/* always_inline: called once per call, its frame cost more than its body */
__attribute__((always_inline)) static inline void mxh_metrics_record(const mxh_coll_args_t *a,
                                                                    int blocking)
{
    struct mxh_mstats *m = a->mstats;
    uint64_t dt;
    int alg;

    if (m == NULL)
        return;
    dt = mxh_ticks() - a->t0;
    switch (a->path) {
    case MXH_PATH_NONE:  alg = MXH_ALG_NONE; break;
    case MXH_PATH_PLAIN: alg = MXH_ALG_MPI; break;
    case MXH_PATH_SHM:   alg = a->ipc ? MXH_ALG_IPC : MXH_ALG_SHM; break;
    case MXH_PATH_RAILX: alg = MXH_ALG_RAILX; break;
    default:             alg = a->ipc ? MXH_ALG_IPC_SCHED
                               : a->choice.algo == MXH_ALGO_PIPELINE ? MXH_ALG_PIPELINE : MXH_ALG_HIER;
    }
    mxh_mcell_t *c = &m->c[a->coll][blocking][alg];
    c->calls++;
    c->bytes += a->mbytes;
    c->ticks += dt;
    if (a->path == MXH_PATH_PLAIN) {
        m->fb[a->coll][blocking][a->why]++;
    } else if (a->path == MXH_PATH_SHM) {
        m->lvl_ticks[a->coll][alg][MXH_LEVEL_NODE] += dt;
        m->lvl_steps[a->coll][alg][MXH_LEVEL_NODE]++;
    } else if (a->path == MXH_PATH_SCHED && a->hier != NULL) {
        mxh_metrics_record_levels(m, a, alg);
    }
    if (blocking)
        mxh_metrics_poll();
}

/* A blocking call on the plain path that the entry layer handed to MPI
 * itself (mpix/colls.c: a call decided like the last of its shape): what
 * mxh_metrics_record counts for it, without its argument record. */
static inline void mxh_metrics_record_plain_fast(struct mxh_mstats *m, mxh_coll_t coll,
                                                 size_t bytes, mxh_fallback_t why, uint64_t dt)
{
    mxh_mcell_t *c = &m->c[coll][1][MXH_ALG_MPI];
    c->calls++;
    c->bytes += bytes;
    c->ticks += dt;
    m->fb[coll][1][why]++;
    mxh_metrics_poll();
}

/* A call served by MPI before the library looked at it (intercommunicator):
 * counted as a fallback with @why; @t0 its start, 0 for a nonblocking post
 * (no time counted). */
void mxh_metrics_record_plain(MPI_Comm comm, mxh_coll_t coll, int blocking, size_t bytes,
                              mxh_fallback_t why, uint64_t t0);

/* The sum of the series of @comm that match @selector (NAME or
 * NAME{label="value",...}, names and labels as in the file). MXH_OK, or
 * MXH_ERR_INVALID_PARAM (logged) for an unknown name, label or value. */
mxh_status_t mxh_metrics_get(MPI_Comm comm, const char *selector, double *value);
/* The calls of @coll (@blocking form) this process made, on every
 * communicator since MPI_Init, per algorithm (MXH_ALG_*) and, for those MPI
 * served, per fallback reason; also after MPI_Finalize. */
void mxh_metrics_process_calls(mxh_coll_t coll, int blocking, uint64_t calls[MXH_NALG],
                               uint64_t fb[MXH_FB_COUNT]);
/* Zero @comm's counters. */
mxh_status_t mxh_metrics_reset(MPI_Comm comm);
/* The whole registry in the Prometheus text format (malloc'd, NUL-terminated). */
mxh_status_t mxh_metrics_text(char **text, size_t *len);
/* Write it atomically (a temporary file, then rename) to @tmpl with its
 * placeholders expanded (util/prom.h); NULL: MPIX_HIER_METRICS_FILE. */
mxh_status_t mxh_metrics_write(const char *tmpl);
/* MPI_Finalize (coll/hier.c): the last write, then everything is released. */
void mxh_metrics_finalize(void);

#ifdef __cplusplus
}
#endif

#endif
