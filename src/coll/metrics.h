/* Metrics: per-communicator counters of the collectives (calls, bytes, time,
 * per collective, blocking or not, path and algorithm), the fallbacks to plain
 * MPI and their reasons (mxh_fallbacks, coll/select.h), and the time of the
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

/* The counters of the call's communicator (created on its first call; NULL
 * if they cannot be): looked up when the call starts, on the caller's stack. */
struct mxh_mstats *mxh_metrics_of(const mxh_coll_args_t *a);
/* A call done: count it in a->mstats (@blocking: the blocking form). a->t0
 * is when it started. Blocking calls also write the periodic file when it is
 * due. */
void mxh_metrics_record(const mxh_coll_args_t *a, int blocking);
/* A call served by MPI before the library looked at it (intercommunicator):
 * counted as a fallback with @why; @t0 its start, 0 for a nonblocking post
 * (no time counted). */
void mxh_metrics_record_plain(MPI_Comm comm, mxh_coll_t coll, int blocking, size_t bytes,
                              mxh_fallback_t why, uint64_t t0);
/* The periodic write, if due (cheap when not: one compare, no clock read when
 * MPIX_HIER_METRICS_INTERVAL is 0). Only outside tasks. */
void mxh_metrics_poll(void);

/* The sum of the series of @comm that match @selector (NAME or
 * NAME{label="value",...}, names and labels as in the file). MXH_OK, or
 * MXH_ERR_INVALID_PARAM (logged) for an unknown name, label or value. */
mxh_status_t mxh_metrics_get(MPI_Comm comm, const char *selector, double *value);
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
