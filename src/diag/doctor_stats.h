/* mpix_doctor's statistics: outlier detection and attribution of pairwise
 * transfers to the (rank's interface, direction) they crossed. Pure functions
 * over arrays (no MPI), unit-tested in tests/unit/test_doctor_stats.cc.
 *
 * A transfer src -> dst of bandwidth bw crossed src's interface leaving it
 * ("tx") and dst's interface arriving ("rx"). A degraded tx of one interface
 * makes every transfer out of it slow, so its median collapses, while each
 * peer's rx median sees one slow sample among many. */
#ifndef MXH_DIAG_DOCTOR_STATS_H
#define MXH_DIAG_DOCTOR_STATS_H

#ifdef __cplusplus
extern "C" {
#endif

enum { MXH_DR_TX = 0, MXH_DR_RX = 1 };

typedef struct mxh_dr_sample {
    int    src, dst; /* ranks */
    double bw;       /* bytes/s, > 0 (<= 0: not measured, ignored) */
} mxh_dr_sample_t;

typedef struct mxh_dr_params {
    double k;     /* outlier: level_median - x > k * 1.4826 * MAD ... */
    double floor; /* ... and x < floor * level_median */
} mxh_dr_params_t;

/* One (rank, direction): index rank * 2 + dir in the arrays below. */
typedef struct mxh_dr_port {
    double median;   /* median bw of the samples that crossed it (0: none) */
    int    nsamples; /* samples left after explaining away flagged ports */
    int    outlier;  /* flagged */
    double ratio;    /* median / level median */
} mxh_dr_port_t;

typedef struct mxh_dr_level_stats {
    double median; /* median of the ports' medians */
    double mad;    /* median absolute deviation of the ports' medians */
    int    noutliers;
} mxh_dr_level_stats_t;

/* Median of @n values (the array is reordered). 0 when n == 0. */
double mxh_dr_median(double *v, int n);

/* Attribute the @ns samples of one level among @nranks ranks. @ports has
 * 2 * nranks entries. Iterative: each port below the level median is tested against the
 * other ports with the samples that crossed it taken out (leave one out: a slow tx drags
 * the medians of its peers' rx down, which must not hide it); the worst that passes both
 * tests is flagged, the samples through it are explained (dropped from the other ports)
 * and the rest is tested again, so one slow link does not flag its peers too. The level
 * median and MAD returned are those of the ports not flagged. Returns the number of
 * outliers. */
int mxh_dr_attribute(const mxh_dr_sample_t *s, int ns, int nranks, const mxh_dr_params_t *p,
                     mxh_dr_port_t *ports, mxh_dr_level_stats_t *stats);

#ifdef __cplusplus
}
#endif

#endif
