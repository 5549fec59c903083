#include "diag/doctor_stats.h"

#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double mxh_dr_median(double *v, int n)
{
    if (n <= 0)
        return 0.0;
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The samples that crossed a flagged port, or port @ex (-1: none), are explained. */
static int explained(const mxh_dr_sample_t *x, const mxh_dr_port_t *ports, int ex)
{
    int stx = x->src * 2 + MXH_DR_TX, drx = x->dst * 2 + MXH_DR_RX;
    return ports[stx].outlier || ports[drx].outlier || stx == ex || drx == ex;
}

/* Medians of the ports over the samples not explained (flagged ports keep theirs). */
static void port_medians(const mxh_dr_sample_t *s, int ns, int nranks, mxh_dr_port_t *ports,
                         int ex, double *med, int *cnt, double *tmp)
{
    for (int q = 0; q < 2 * nranks; q++) {
        int rank = q / 2, dir = q % 2, n = 0;
        for (int i = 0; i < ns; i++) {
            int who = dir == MXH_DR_TX ? s[i].src : s[i].dst;
            if (who != rank || s[i].bw <= 0)
                continue;
            if (s[i].src < 0 || s[i].src >= nranks || s[i].dst < 0 || s[i].dst >= nranks)
                continue;
            if (q != ex && !ports[q].outlier && explained(&s[i], ports, ex))
                continue;
            tmp[n++] = s[i].bw;
        }
        med[q] = mxh_dr_median(tmp, n);
        cnt[q] = n;
    }
}

/* Median and MAD of the medians of the ports other than @ex and the flagged ones. */
static void level_stats(const mxh_dr_port_t *ports, int nq, int ex, const double *med,
                        const int *cnt, double *tmp, double *m, double *mad)
{
    int n = 0;
    for (int q = 0; q < nq; q++)
        if (q != ex && !ports[q].outlier && cnt[q] > 0)
            tmp[n++] = med[q];
    *m = mxh_dr_median(tmp, n);
    for (int i = 0; i < n; i++)
        tmp[i] = tmp[i] > *m ? tmp[i] - *m : *m - tmp[i];
    *mad = mxh_dr_median(tmp, n);
}

int mxh_dr_attribute(const mxh_dr_sample_t *s, int ns, int nranks, const mxh_dr_params_t *p,
                     mxh_dr_port_t *ports, mxh_dr_level_stats_t *stats)
{
    int nq = 2 * nranks, nout = 0, *cnt = malloc(sizeof(int) * (size_t)(nq + 1));
    double *tmp = malloc(sizeof(double) * (size_t)(ns > nq ? ns : nq) + sizeof(double));
    double *med = malloc(sizeof(double) * (size_t)(nq + 1));
    double *all = malloc(sizeof(double) * (size_t)(nq + 1));
    double gm, gmad;

    memset(ports, 0, sizeof(*ports) * (size_t)nq);
    memset(stats, 0, sizeof(*stats));
    if (tmp == NULL || cnt == NULL || med == NULL || all == NULL) {
        free(tmp), free(cnt), free(med), free(all);
        return -1;
    }
    for (;;) {
        int worst = -1;
        double worst_ratio = 0;
        /* the ports as they stand (samples through flagged ports explained) */
        port_medians(s, ns, nranks, ports, -1, all, cnt, tmp);
        level_stats(ports, nq, -1, all, cnt, tmp, &gm, &gmad);
        for (int q = 0; q < nq; q++) {
            ports[q].median   = all[q];
            ports[q].nsamples = cnt[q];
        }
        /* candidates: below the median; each tested against the others with the samples
         * through it taken out (leave one out: a slow port drags its peers' medians down,
         * which must not hide it) */
        for (int q = 0; q < nq; q++) {
            double m, mad, x = ports[q].median;
            int *c2;
            if (ports[q].outlier || ports[q].nsamples == 0 || !(x < gm))
                continue;
            c2 = malloc(sizeof(int) * (size_t)(nq + 1));
            port_medians(s, ns, nranks, ports, q, med, c2, tmp);
            level_stats(ports, nq, q, med, c2, tmp, &m, &mad);
            free(c2);
            if (!(m - x > p->k * 1.4826 * mad) || !(x < p->floor * m))
                continue;
            /* the worst; ties: lower index (tx before rx, lower rank) */
            if (worst < 0 || x / m < worst_ratio) {
                worst       = q;
                worst_ratio = x / m;
            }
        }
        if (worst < 0)
            break;
        ports[worst].outlier = 1;
        nout++;
    }
    stats->median    = gm;
    stats->mad       = gmad;
    stats->noutliers = nout;
    for (int q = 0; q < nq; q++)
        ports[q].ratio = gm > 0 ? ports[q].median / gm : 0.0;
    free(tmp);
    free(cnt);
    free(med);
    free(all);
    return nout;
}
