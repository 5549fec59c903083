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

/* Medians of the ports over the samples not explained by a flagged port. */
static void port_medians(const mxh_dr_sample_t *s, int ns, int nranks, mxh_dr_port_t *ports,
                         double *tmp)
{
    for (int q = 0; q < 2 * nranks; q++) {
        int rank = q / 2, dir = q % 2, n = 0;
        for (int i = 0; i < ns; i++) {
            int who = dir == MXH_DR_TX ? s[i].src : s[i].dst;
            if (who != rank || s[i].bw <= 0)
                continue;
            if (s[i].src < 0 || s[i].src >= nranks || s[i].dst < 0 || s[i].dst >= nranks)
                continue;
            /* explained by the other end's flagged port */
            if (dir == MXH_DR_TX ? ports[s[i].dst * 2 + MXH_DR_RX].outlier
                                 : ports[s[i].src * 2 + MXH_DR_TX].outlier)
                continue;
            tmp[n++] = s[i].bw;
        }
        if (!ports[q].outlier) {
            ports[q].nsamples = n;
            ports[q].median   = mxh_dr_median(tmp, n);
        }
    }
}

int mxh_dr_attribute(const mxh_dr_sample_t *s, int ns, int nranks, const mxh_dr_params_t *p,
                     mxh_dr_port_t *ports, mxh_dr_level_stats_t *stats)
{
    int nq = 2 * nranks, nout = 0, n = 0;
    double *tmp = malloc(sizeof(double) * (size_t)(ns > nq ? ns : nq) + sizeof(double));

    memset(ports, 0, sizeof(*ports) * (size_t)nq);
    memset(stats, 0, sizeof(*stats));
    if (tmp == NULL)
        return -1;
    port_medians(s, ns, nranks, ports, tmp);
    for (int q = 0; q < nq; q++)
        if (ports[q].nsamples > 0)
            tmp[n++] = ports[q].median;
    stats->median = mxh_dr_median(tmp, n);
    for (int i = 0; i < n; i++)
        tmp[i] = tmp[i] > stats->median ? tmp[i] - stats->median : stats->median - tmp[i];
    stats->mad = mxh_dr_median(tmp, n);
    for (;;) {
        int worst = -1;
        for (int q = 0; q < nq; q++) {
            const mxh_dr_port_t *pt = &ports[q];
            if (pt->outlier || pt->nsamples == 0)
                continue;
            if (!(stats->median - pt->median > p->k * 1.4826 * stats->mad) ||
                !(pt->median < p->floor * stats->median))
                continue;
            /* the worst; ties: tx before rx, lower rank first (deterministic) */
            if (worst < 0 || pt->median < ports[worst].median)
                worst = q;
        }
        if (worst < 0)
            break;
        ports[worst].outlier = 1;
        nout++;
        port_medians(s, ns, nranks, ports, tmp);
    }
    for (int q = 0; q < nq; q++)
        ports[q].ratio = stats->median > 0 ? ports[q].median / stats->median : 0.0;
    stats->noutliers = nout;
    free(tmp);
    return nout;
}
