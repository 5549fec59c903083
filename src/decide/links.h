/* Link times: per level the latency of one exchange and the seconds per byte through a
 * rank's link, scaled by message-size factor tables. The one rule by which the cost
 * model prices an exchange and by which a stream paces one (the tuning pass copies a
 * model's figures into the schedule, decide/tune.c). Pure. */
#ifndef MXH_LINKS_H
#define MXH_LINKS_H

#include <stddef.h>
#include <string.h>

#include "decide/levels.h"
#include "util/config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Message-size factors (MPIX_HIER_COST_LAT_FACTOR, _BW_FACTOR): a message of s bytes
 * pays alpha x lat_f[i] and its bytes beta / bw_f[j], i, j the last entries whose size
 * is at most s (none: 1). */
typedef struct mxh_size_factors {
    int    lat_n, bw_n;
    size_t lat_size[MXH_CONFIG_FACTORS], bw_size[MXH_CONFIG_FACTORS];
    double lat_f[MXH_CONFIG_FACTORS], bw_f[MXH_CONFIG_FACTORS];
} mxh_size_factors_t;

static inline void mxh_size_factors_of(mxh_size_factors_t *f, const mxh_config_t *cfg)
{
    f->lat_n = cfg->cost_lat_n;
    f->bw_n  = cfg->cost_bw_n;
    memcpy(f->lat_size, cfg->cost_lat_size, sizeof(f->lat_size));
    memcpy(f->lat_f, cfg->cost_lat_f, sizeof(f->lat_f));
    memcpy(f->bw_size, cfg->cost_bw_size, sizeof(f->bw_size));
    memcpy(f->bw_f, cfg->cost_bw_f, sizeof(f->bw_f));
}

typedef struct mxh_link_times {
    int    nlevels;
    double alpha[MXH_MAX_LEVELS]; /* s per exchange */
    double beta[MXH_MAX_LEVELS];  /* s per byte through one rank's link */
    int    res[MXH_MAX_LEVELS];   /* the level's link resource (rail and spine: the NIC) */
    mxh_size_factors_t fac;
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
    return t->alpha[level] * mxh_link_factor(t->fac.lat_n, t->fac.lat_size, t->fac.lat_f, (double)msg);
}

/* Seconds @level's link takes for @bytes sent in messages of @msg bytes. */
static inline double mxh_link_time(const mxh_link_times_t *t, int level, size_t bytes,
                                   size_t msg)
{
    if (level < 0 || level >= t->nlevels)
        return 0;
    return (double)bytes *
           (t->beta[level] / mxh_link_factor(t->fac.bw_n, t->fac.bw_size, t->fac.bw_f, (double)msg));
}

#ifdef __cplusplus
}
#endif

#endif
