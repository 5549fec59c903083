/* Measured network parameters, the pure part: sizes, fit, description (the
 * exchanges are in measure_run.c). See measure.h. */
#include "config.h"

#include "decide/measure.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

const size_t mxh_measure_sizes[MXH_MEASURE_NSIZES] = {
    8, 1 << 10, 4 << 10, 5 << 10, 6 << 10, 9 << 10, 10 << 10, 14 << 10, 16 << 10, 32 << 10,
    64 << 10, 512 << 10};

#define SINGLES 2  /* 8 B and 1 KiB: latency only */
#define FIT_A   10 /* the large class: 64 KiB */
#define FIT_B   11 /* and 512 KiB */

static int measured(const mxh_measure_t *m, int l)
{
    for (int i = 0; i < MXH_MEASURE_NSIZES; i++)
        if (!(m->t[l][i] > 0))
            return 0;
    return 1;
}

/* Latency (s) and seconds per byte of the class of sizes i < j at level @l: the
 * slope between them; where noise makes it flat, negative or steeper than the
 * larger size alone, @beta (the large messages', or for those the larger size
 * alone). */
static void fit_class(const mxh_measure_t *m, int l, int i, int j, double beta, double *a,
                      double *b)
{
    const double si = (double)mxh_measure_sizes[i], sj = (double)mxh_measure_sizes[j];
    const double ti = m->t[l][i], tj = m->t[l][j];
    double x = (tj - ti) / (sj - si);
    if (!(x > 0) || x * sj > tj)
        x = beta > 0 ? beta : tj / sj;
    *b = x;
    *a = ti - si * x;
    if (*a < 1e-9)
        *a = 1e-9;
}

static double clamp_factor(double f)
{
    return f < 0.01 ? 0.01 : f > 100 ? 100 : f;
}

int mxh_measure_fit(const mxh_measure_t *m, int torus, mxh_config_t *cfg)
{
    int used = 0, node = 0, net = 0, spine = 0;
    for (int l = 0; l < m->nlevels; l++) {
        double a, b;
        if (!measured(m, l))
            continue;
        fit_class(m, l, FIT_A, FIT_B, 0, &a, &b);
        if (!mxh_level_is_net(m->type[l])) {
            if (node++)
                continue;
            cfg->cost_node_latency = a;
            cfg->cost_node_bw      = 1.0 / b;
        } else if (m->type[l] == MXH_LEVEL_SPINE) {
            if (spine++)
                continue;
            cfg->cost_spine_latency = a;
        } else {
            if (net++)
                continue;
            cfg->cost_net_latency = a;
            cfg->cost_net_bw      = 1.0 / b;
            if (torus)
                cfg->cost_torus_latency = a;
            /* smaller messages: their classes' latency and bandwidth relative to the
             * large messages' (protocol switches, a simulator's factors); 8 B and
             * 1 KiB have latency only */
            cfg->cost_lat_n = cfg->cost_bw_n = 0;
            for (int i = 0; i < FIT_A; i += i < SINGLES ? 1 : 2) {
                double ac = (m->t[l][i] - (double)mxh_measure_sizes[i] * b) / a, bc = b;
                if (i >= SINGLES) {
                    fit_class(m, l, i, i + 1, b, &ac, &bc);
                    ac /= a;
                }
                cfg->cost_lat_size[cfg->cost_lat_n] = i == 0 ? 0 : mxh_measure_sizes[i];
                cfg->cost_lat_f[cfg->cost_lat_n++]  = clamp_factor(ac);
                cfg->cost_bw_size[cfg->cost_bw_n]   = i == 0 ? 0 : mxh_measure_sizes[i];
                cfg->cost_bw_f[cfg->cost_bw_n++]    = clamp_factor(b / bc);
            }
            cfg->cost_lat_size[cfg->cost_lat_n] = mxh_measure_sizes[FIT_A];
            cfg->cost_lat_f[cfg->cost_lat_n++]  = 1;
            cfg->cost_bw_size[cfg->cost_bw_n]   = mxh_measure_sizes[FIT_A];
            cfg->cost_bw_f[cfg->cost_bw_n++]    = 1;
        }
        used++;
    }
    return used;
}

/* f within a factor r of 1 */
static int within(double f, double r)
{
    return f <= r && f >= 1 / r;
}

/* a network level was measured */
static int net_measured(const mxh_measure_t *m)
{
    for (int l = 0; l < m->nlevels; l++)
        if (mxh_level_is_net(m->type[l]) && measured(m, l))
            return 1;
    return 0;
}

/* every latency factor of @fitted within @rlat of 1, every bandwidth factor within @rbw */
static int factors_within(const mxh_config_t *fitted, double rlat, double rbw)
{
    for (int i = 0; i < fitted->cost_lat_n; i++)
        if (!within(fitted->cost_lat_f[i], rlat))
            return 0;
    for (int i = 0; i < fitted->cost_bw_n; i++)
        if (!within(fitted->cost_bw_f[i], rbw))
            return 0;
    return 1;
}

int mxh_measure_factors_flat(const mxh_config_t *cfg)
{
    return factors_within(cfg, MXH_MEASURE_FLAT, MXH_MEASURE_FLAT);
}

int mxh_measure_plausible(const mxh_measure_t *m, const mxh_config_t *fitted)
{
    return net_measured(m) && fitted->cost_net_latency >= MXH_MEASURE_MIN_LATENCY &&
           fitted->cost_node_latency >= MXH_MEASURE_MIN_LATENCY &&
           fitted->cost_spine_latency >= MXH_MEASURE_MIN_LATENCY &&
           factors_within(fitted, MXH_MEASURE_PLAUSIBLE_LAT, MXH_MEASURE_PLAUSIBLE_BW);
}

double mxh_measure_net_bw(const mxh_measure_t *m, const mxh_config_t *fitted)
{
    return net_measured(m) ? fitted->cost_net_bw : 0;
}

int mxh_measure_flat(const mxh_measure_t *m, const mxh_config_t *fitted)
{
    return net_measured(m) && fitted->cost_lat_n > 0 && mxh_measure_factors_flat(fitted);
}

/* level @l's last member within MXH_MEASURE_UNIFORM of its first (or not both measured) */
static int level_uniform(const mxh_measure_t *m, int l)
{
    return !(m->far[l] > 0 && m->t[l][0] > 0) ||
           within(m->far[l] / m->t[l][0], MXH_MEASURE_UNIFORM);
}

int mxh_measure_uniform(const mxh_measure_t *m)
{
    for (int l = 0; l < m->nlevels; l++)
        if (!level_uniform(m, l))
            return 0;
    return 1;
}

void mxh_measure_describe(const mxh_measure_t *m, const mxh_config_t *cfg, const char *how,
                          char *buf, size_t len)
{
    size_t off = 0;
    int node = 0, net = 0, spine = 0;
#define PUT(...) mxh_str_put(buf, len, &off, __VA_ARGS__)
    if (len > 0)
        buf[0] = '\0';
    PUT("  cost parameters measured (MPIX_HIER_COST_MEASURE)%s%s:", how ? ", " : "",
        how ? how : "");
    for (int l = 0; l < m->nlevels; l++) {
        if (!measured(m, l)) {
            PUT(" level %d %s not measured;", l, mxh_level_type_name(m->type[l]));
        } else if (!mxh_level_is_net(m->type[l]) && !node++) {
            PUT(" node %.3g us %.4g GB/s;", cfg->cost_node_latency * 1e6,
                cfg->cost_node_bw / 1e9);
        } else if (m->type[l] == MXH_LEVEL_SPINE && !spine++) {
            PUT(" spine %.3g us;", cfg->cost_spine_latency * 1e6);
        } else if (m->type[l] == MXH_LEVEL_RAIL && !net++) {
            PUT(" network %.3g us %.4g GB/s, factors (bytes:latency,bandwidth)",
                cfg->cost_net_latency * 1e6, cfg->cost_net_bw / 1e9);
            for (int i = 0; i < cfg->cost_lat_n && i < cfg->cost_bw_n; i++)
                PUT(" %zu:%.3g,%.3g", cfg->cost_lat_size[i], cfg->cost_lat_f[i],
                    cfg->cost_bw_f[i]);
            PUT(";");
        }
    }
    for (int l = 0; l < m->nlevels; l++)
        if (!level_uniform(m, l))
            PUT(" level %d %s not uniform (8 B: %.3g us to its first member, %.3g to its last);",
                l, mxh_level_type_name(m->type[l]), m->t[l][0] * 1e6, m->far[l] * 1e6);
    PUT("\n");
#undef PUT
}
