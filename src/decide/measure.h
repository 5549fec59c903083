/* Measured network parameters (MPIX_HIER_COST_MEASURE, issue 21).
 *
 * The cost model (decide/cost.h) paces streams and, with MPIX_HIER_COST_MODEL=yes,
 * chooses fragments from per-level latency and bandwidth. Its defaults describe one
 * machine (H100 + NDR); on another fabric, or under a simulator's network model that
 * multiplies latency by 11.6 for large messages, they book the links wrongly. So the
 * hierarchy measures them when it is built:
 *
 *   run  (MPI)   rank 0 ping-pongs messages of mxh_measure_sizes with one other
 *                member of its group at each level (a rank of its node, of its rail,
 *                across the spine); the fastest round trip of a few, halved, is the
 *                one-way time. It also ping-pongs 8 B with the last member of the
 *                group, whose latency says whether the level is uniform (rails, a
 *                torus ring: the same; a dragonfly group: a router farther than the
 *                first member). Rank 0 broadcasts the times: every rank fits the same.
 *   fit  (pure)  per level, latency and bandwidth from the slope between two sizes
 *                of one class (8 B and 1 KiB alone); the classes follow the
 *                protocol steps of MPICH/UCX (eager, rendezvous) and of SimGrid's
 *                factor tables: 4-5 KiB, 6-9 KiB, 10-14 KiB, 16-32 KiB, and the
 *                large messages' 64-512 KiB, which give the level's latency alpha and
 *                seconds per byte beta. The first network level's smaller classes
 *                give the latency and bandwidth factors by size (MPIX_HIER_COST_
 *                LAT_FACTOR / _BW_FACTOR): a class of latency a_c and seconds per
 *                byte b_c has factors a_c / alpha and beta / b_c.
 *
 * The exchanges are in measure_run.h (MPI); the rest is pure (unit tests).
 *
 * Cost: 2 x MXH_MEASURE_NSIZES x reps messages per level, on two ranks, once when the
 * hierarchy is built (one rep under SimGrid, where times are exact; 1 + 3 elsewhere). */
#ifndef MXH_COLL_MEASURE_H
#define MXH_COLL_MEASURE_H

#include <stddef.h>

#include "decide/levels.h"
#include "util/config.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MXH_MEASURE_NSIZES 12

/* 8 B, 1 KiB, then pairs of one class each: 4 and 5 KiB, 6 and 9, 10 and 14, 16 and
 * 32, 64 and 512 KiB (the last pair fits the level's latency and bandwidth) */
extern const size_t mxh_measure_sizes[MXH_MEASURE_NSIZES];

typedef struct mxh_measure {
    int    nlevels;
    mxh_level_type_t type[MXH_MAX_LEVELS];
    double t[MXH_MAX_LEVELS][MXH_MEASURE_NSIZES]; /* one-way seconds; 0: not measured
                                                    (rank 0 alone in its group, or an
                                                    exchange failed) */
    double far[MXH_MAX_LEVELS]; /* one-way seconds of 8 B to the last member of rank 0's
                                   group (0: not measured, or the first is the last) */
} mxh_measure_t;

/* Pure: the parameters @m gives, written into @cfg (node latency and bandwidth from
 * the first level inside a node; network latency and NIC bandwidth from the first
 * network level, the torus latency too on a torus; the spine latency from the
 * spine level; latency and bandwidth factors for messages below 64 KiB from the
 * first network level). Levels not measured keep @cfg's values. Returns the number of levels
 * used. */
int mxh_measure_fit(const mxh_measure_t *m, int torus, mxh_config_t *cfg);

/* Pure: whether the first network level's message-size classes (the latency and
 * bandwidth factors mxh_measure_fit wrote into @fitted) all lie within MXH_MEASURE_FLAT of the large
 * messages', i.e. the network behaves as the cost model's alpha-beta assumes and its
 * choices hold (link-exact networks; not SimGrid's default model, whose large
 * messages pay 11.6 times the latency of 64 KiB ones and 16-32 KiB ones 0.74 of their
 * bandwidth, nor a real fabric's eager/rendezvous steps). 0 without a network level. */
#define MXH_MEASURE_FLAT 1.5
int mxh_measure_flat(const mxh_measure_t *m, const mxh_config_t *fitted);
/* The latency and bandwidth factors of @cfg (MPIX_HIER_COST_*_FACTOR) all within
 * MXH_MEASURE_FLAT of 1 (none: 1). */
int mxh_measure_factors_flat(const mxh_config_t *cfg);

/* Pure: whether the fit describes a network rather than a disturbed measurement: a
 * network level measured, every fitted latency at least MXH_MEASURE_MIN_LATENCY and
 * the first network level's latency factors within MXH_MEASURE_PLAUSIBLE_LAT of 1, its
 * bandwidth factors within MXH_MEASURE_PLAUSIBLE_BW. The bounds let SimGrid's default
 * model pass and reject the fits of ranks oversubscribed on a busy machine (RESULTS.md
 * section 5, "Measured parameters"). */
#define MXH_MEASURE_MIN_LATENCY  0.1e-6
#define MXH_MEASURE_PLAUSIBLE_LAT 20.0
#define MXH_MEASURE_PLAUSIBLE_BW  4.0
int mxh_measure_plausible(const mxh_measure_t *m, const mxh_config_t *fitted);

/* Pure: the bandwidth (bytes/s) mxh_measure_fit wrote into @fitted for the first network
 * level, where one was measured; 0 otherwise. */
double mxh_measure_net_bw(const mxh_measure_t *m, const mxh_config_t *fitted);

/* Pure: whether every level's last member answers 8 B within MXH_MEASURE_UNIFORM of
 * its first member's time (levels without both: uniform). A fabric whose members of one
 * level sit at different distances (a dragonfly group's routers) breaks the model's one
 * latency per level; MPIX_HIER_COST_MODEL=auto then selects with a margin, as on a
 * torus (hier.c). */
#define MXH_MEASURE_UNIFORM 1.25
int mxh_measure_uniform(const mxh_measure_t *m);

/* One line for the communicator's description: what was measured and fitted into
 * @cfg, and how the hierarchy uses it (@how, after a comma; NULL: as its parameters). */
void mxh_measure_describe(const mxh_measure_t *m, const mxh_config_t *cfg, const char *how,
                          char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
