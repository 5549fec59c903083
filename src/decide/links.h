/* Link times: per level the latency of one exchange and the seconds per byte through a
 * rank's link, scaled by message-size factor tables. The one rule by which the cost
 * model prices an exchange and by which a stream paces one (the tuning pass copies a
 * model's figures into the schedule, decide/tune.c). Pure. */
#ifndef MXH_LINKS_H
#define MXH_LINKS_H

#include <stddef.h>

#include "decide/levels.h"
#include "util/config.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mxh_link_times {
    int    nlevels;
    double alpha[MXH_MAX_LEVELS]; /* s per exchange */
    double beta[MXH_MAX_LEVELS];  /* s per byte through one rank's link */
    int    res[MXH_MAX_LEVELS];   /* the level's link resource (rail and spine: the NIC) */
    /* by message size: a message of s bytes pays alpha x lat_f[i] and its bytes
     * beta / bw_f[j], i, j the last entries whose size is at most s (none: 1) */
    int    lat_n, bw_n;
    size_t lat_size[MXH_CONFIG_FACTORS], bw_size[MXH_CONFIG_FACTORS];
    double lat_f[MXH_CONFIG_FACTORS], bw_f[MXH_CONFIG_FACTORS];
} mxh_link_times_t;

/* The factor of a message of @msg bytes in a table of @n ascending sizes. */
static inline double mxh_link_factor(int n, const size_t *size, const double *f, double msg)
{
    double v = 1;
    for (int i = 0; i < n && (double)size[i] <= msg; i++)
        v = f[i];
    return v;
}

/* Seconds of latency of an exchange of messages of @msg bytes at @level. */
static inline double mxh_link_latency(const mxh_link_times_t *t, int level, size_t msg)
{
    if (level < 0 || level >= t->nlevels)
        return 0;
    return t->alpha[level] * mxh_link_factor(t->lat_n, t->lat_size, t->lat_f, (double)msg);
}

/* Seconds @level's link takes for @bytes sent in messages of @msg bytes. */
static inline double mxh_link_time(const mxh_link_times_t *t, int level, size_t bytes,
                                   size_t msg)
{
    if (level < 0 || level >= t->nlevels)
        return 0;
    return (double)bytes *
           (t->beta[level] / mxh_link_factor(t->bw_n, t->bw_size, t->bw_f, (double)msg));
}

#ifdef __cplusplus
}
#endif

#endif
