/* Cost model: the predicted time of a hierarchical schedule (plan.c, sched.c)
 * from per-level parameters, so that the algorithm and the fragment count can be
 * derived from the machine instead of tuned size thresholds (issue 21).
 *
 * Pure: a function of the shape of the layout (levels, group sizes, which levels
 * cross the network), the configuration (MPIX_HIER_COST_*, the pipeline ramp) and
 * the message size; no MPI, no measurement, so every rank predicts the same.
 *
 * Per level l (the level's per-rank link: NVLink / shared memory inside a node,
 * the NIC for rail and spine levels):
 *   alpha_l  seconds per exchange (one message latency; the direct algorithm's
 *            p - 1 messages of one phase are in flight together and pay it once)
 *   beta_l   seconds per byte through a rank's link, times the level's contention
 *            factor (links shared by the level's groups, an oversubscribed spine)
 * and for the rank: gamma (seconds per byte of two-input reduction output; a fused
 * n-input reduction costs (n + 1) / 3 of it per output byte, as src/sim charges)
 * and kappa (seconds per byte of local copy).
 *
 * A step of region n bytes on a group of p ranks (the algorithm mxh_p2p_choose
 * would take):
 *   direct reduce-scatter  alpha + (p-1)/p n beta + (p+1)/3 n/p gamma
 *   direct allgather       alpha + (p-1)/p n beta
 *   direct allreduce       the two above
 *   direct bcast           the root's link: alpha + n beta (it scatters the region
 *                          among the p-1 others, its own part empty, p2p.c
 *                          rootless), then theirs: alpha + (p-2)/(p-1) n beta (they
 *                          allgather among themselves)
 *   direct reduce          theirs: alpha + n beta + (p+1)/3 n/(p-1) gamma (reduce-
 *                          scatter to the p-1 others), then the root's: alpha +
 *                          n beta (they gather to it)
 *   rhd/ring bcast, reduce a scatter from (gather to) the root, (p-1)/p n, and the
 *                          allgather (reduce-scatter) phases of the algorithm
 *   rhd (p = 2^k)          k alpha per phase, the same bytes, (p-1)/p n gamma
 *   ring                   (p-1) alpha per phase, the same bytes, (p-1)/p n gamma
 *   radix allreduce        per factor f: alpha + (f-1) n beta + (f+1)/3 n gamma
 * (alpha and beta of a message of m = n/p bytes, or n for radix, times the factors
 * for its size: MPIX_HIER_COST_LAT_FACTOR / _BW_FACTOR). Each exchange is a phase:
 * wait alpha, move the bytes, reduce.
 * A schedule runs its F fragments (sizes as sched.c cuts them, ramps included)
 * through its stages (copy in, the plan's steps, copy out) as the stream executor
 * (exec.c) runs them: in order, at most two fragments on a stage at once (any
 * number on a light stage, one on a copy), at most W in flight; the bytes in flight
 * on a link share it by messages, as SimGrid's max-min does per flow (a phase of k
 * messages at once gets k shares; two fragments entering a stage together leave
 * together). For uniform fragments and a dominant stage
 * of time t = alpha_total + x (x its bytes' time) this is about
 *   sum_s t_s + (F - 1) max(x, (alpha_total + 2 x) / 2)
 * and never less than the busiest resource: a link (the byte terms of every stage
 * on it over all fragments: the node's reduce-scatter and allgather share NVLink,
 * the rail and spine levels the NIC) or the rank (its reductions and copies). The
 * bound printed next to it is the busiest link's byte time of the whole vector (no
 * latency, perfect overlap).
 * Bcast and reduce (plan.c): the data crosses groups of different roles, each
 * stage one step on one set of ranks: bcast the holder's group at every level
 * below the top bcasts the whole region (the root's node: stage 0), the top level
 * bcasts each rank's piece, the other groups allgather on the way down; reduce
 * the mirror (reduce-scatter up in the other groups, reduce on top, the holders'
 * groups reduce the whole region on the way down). The stages' links: the root's
 * link out and in, the other members' of a holder's group in and out, the
 * non-holder groups' (five link resources per level, NIC shared by rail and
 * spine as above; the spine's holder side on the root's node's NICs); a phase may
 * load two of them at once (a scatter: the root's output and the others'
 * inputs) and runs at the pace of the slower; a rank's window counts its own
 * stages (one per level), so fragment f enters the first stage of each role when
 * fragment f - W has left that role's last one.
 * Validated against SimGrid in benchmarks/RESULTS.md section 5. */
#ifndef MXH_COST_H
#define MXH_COST_H

#include <stddef.h>

#include "decide/links.h"
#include "decide/plan.h"
#include "decide/sched.h"
#include "decide/select.h"
#include "decide/levels.h"
#include "util/config.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mxh_cost_level {
    double alpha; /* s per exchange */
    double beta;  /* s per byte through one rank's link (contention included) */
} mxh_cost_level_t;

#define MXH_COST_RAILS 64 /* torus: rails (ranks per node) modelled */

typedef struct mxh_cost_model {
    int    nranks;
    int    nlevels;
    int    grid;                     /* SCATTER levels + top, one group size each, product =
                                        nranks: the only layouts modelled (0: predict -1) */
    mxh_level_type_t type[MXH_MAX_LEVELS];
    int    gsize[MXH_MAX_LEVELS];
    int    net[MXH_MAX_LEVELS];      /* the level's groups span nodes (rail, spine) */
    int    res[MXH_MAX_LEVELS];      /* the level's links: levels of one value share them
                                        (rail and spine: the NIC) */
    int    ring[MXH_MAX_LEVELS];     /* a torus dimension's rings (p2p.c: ring above
                                        32 KiB on 3 or more ranks) */
    /* A torus split (decide/levels.c torus_levels; trails 0: none): node level, then a
     * level per dimension, rail c crossing the dimensions in its own order and ring
     * direction. Its level l has groups of tgsize[c][l] ranks on link direction
     * tlink[c][l] (2 j + 1 for dimension j's - links, -1: the node level) and a rank
     * gets tbeta[c][l] s per byte: the NIC's, or the link's share among the rails
     * whose level l is on that direction too (the rails cross their l-th levels
     * together). gsize, lvl, res and ring hold a grid of rail 0's sizes with the NIC's
 * parameters (what exec.c's pacing books), the predictions read the t* fields. */
    int    trails, tndims;
    int    tmixed;                   /* rails in different orders (no latency plan) */
    int    tgsize[MXH_COST_RAILS][MXH_MAX_LEVELS];
    int    tlink[MXH_COST_RAILS][MXH_MAX_LEVELS];
    double tbeta[MXH_COST_RAILS][MXH_MAX_LEVELS];
    double tlink_beta;               /* s per byte of one torus link, one direction */
    double tnic_beta;                /* s per byte of a rank's NIC (contention included) */
    double talpha;                   /* s per exchange of a dimension's neighbours */
    mxh_cost_level_t lvl[MXH_MAX_LEVELS];
    double gamma;                    /* s per byte of two-input reduction output */
    double kappa;                    /* s per byte of local copy */
    int    ramp;                     /* MPIX_HIER_PIPELINE_RAMP */
    int    pace;                     /* MPIX_HIER_PIPELINE_PACE (exec.c's pacing) */
    int    pace_auto;                /* MPIX_HIER_PIPELINE_PACE=auto: predictions of the
                                        pacing mxh_cost_pace_pick chooses */
    double pace_margin;              /* auto paces where predicted this much faster than
                                        unpaced (0: 1 %, the model's error there; hier.c
                                        sets MXH_COST_TRUST_MARGIN where a level's members
                                        are not equally far) */
    int    far_members;              /* a level's members not equally far (measure.h
                                        mxh_measure_uniform; hier.c sets it): a bcast
                                        keeps its head ramp (mxh_cost_bcast_bare) */
    size_t frag_max;                 /* pipeline candidates' fragments at most this
                                        (decide/tune_hier.h mxh_tune_frag_cap; 0: any) */
    int    kary;                     /* network levels of more than 16 ranks exchange as
                                        p2p.c's kary (mxh_cost_kary_pick); 0: direct */
    int    rsag;                     /* small allreduce steps on the network levels
                                        reduce-scatter + allgather instead of radix: 1
                                        yes, 0 no, 2 the model's pick (mxh_cost_rsag_pick;
                                        MPIX_HIER_RSAG, the default) */
    int    rstagger;                 /* a rootless reduce on the network is staggered
                                        where it binds (plan.h mxh_step_staggered): 1
                                        yes, 0 no, 2 the model's pick (mxh_cost_rstagger_pick;
                                        the default) */
    int    ahead;                    /* MPIX_HIER_PIPELINE_PACE yes or auto: a bcast's
                                        staggered steps post their scatters ahead by
                                        the link times, paced or not (exec.c) */
    int    spread;                   /* nodes of the spread group (plan.c's spread plan of
                                        small allreduces, MPIX_HIER_SPREAD), 0: none */
    mxh_size_factors_t fac; /* by message size (links.h) */
} mxh_cost_model_t;

/* A step as its exchanges: each waits alpha, moves its bytes (link seconds), then
 * reduces (cpu seconds). A bcast or reduce step's exchanges are not symmetric: root
 * says whose link the phase's bytes take (MXH_COST_OTHERS: the other members', in
 * both directions for an allgather among them, into them for the reduce-scatter to
 * them; _ROOT_OUT: the scatter from the root; _ROOT_IN: the gather to it), and a
 * second link set may carry part of them at once (root2, link2 seconds, flows2
 * messages; root2 -1: none): the non-roots' inputs in a scatter, the root's output
 * in the reduce-scatter, the non-roots' outputs in a gather. Every other step:
 * MXH_COST_OTHERS, no second set. */
#define MXH_COST_MAX_PHASES MXH_SCHED_MAX_PHASES
enum { MXH_COST_OTHERS = 0, MXH_COST_ROOT_OUT, MXH_COST_ROOT_IN, MXH_COST_OTHERS_OUT };
typedef struct mxh_cost_phases {
    int n;
    struct {
        double alpha, link, cpu;
        int    root;
        int    flows; /* messages through one link of the phase at once: bytes on a
                         link shared with other phases' get flows / (all flows on
                         it) of it (SimGrid shares max-min per message) */
        int    root2, flows2;
        double link2;
        int    chain; /* posted as the phase before completes, never held: paced, the
                         first phase of a chain books the link for all of it (kary,
                         exec.c pace_posted) */
    } ph[MXH_COST_MAX_PHASES];
} mxh_cost_phases_t;

/* Allreduce plan variants (plan.c: small_plan). */
typedef enum mxh_cost_variant {
    MXH_COST_RS = 0,  /* reduce-scatter up, allreduce on top, allgather down */
    MXH_COST_LATENCY, /* an allreduce of the whole vector at every level */
    MXH_COST_HYBRID,  /* reduce-scatter in the node, allreduces of the piece above */
    MXH_COST_SPREAD,  /* allreduce in the node, one spread exchange, allreduce in the node */
    MXH_COST_PLAN     /* the variant plan.c builds for the fragment's size */
} mxh_cost_variant_t;

/* A grid shape: @nlevels levels of types @type and group sizes @gsize (innermost
 * first), parameters from @cfg (MPIX_HIER_COST_*: node and island levels get the NODE
 * parameters, rail and spine the NET bandwidth with the NET contention, rail the NET
 * latency, spine the SPINE latency). */
void mxh_cost_model_grid(mxh_cost_model_t *m, const mxh_config_t *cfg, int nlevels,
                         const mxh_level_type_t *type, const int *gsize);
/* A torus split (what decide/levels.c torus_levels builds): @s ranks per node (a node
 * level when > 1), @ndims dimensions of lengths @k, rail c's level j on dimension
 * order[c * 3 + j] & 3, in the - direction when bit 4 is set (L->torus_order). Node
 * parameters as in a grid; a dimension's exchanges MPIX_HIER_COST_TORUS_LATENCY, its
 * bandwidth the smaller of the NIC's and the link's share (MPIX_HIER_COST_TORUS_BW,
 * default s x MPIX_HIER_COST_NET_BW / (2 ndims)) among the rails on that link direction
 * at that level. A prediction is the slowest rail's (each rail as its own grid), and
 * never less than the busiest torus link direction's or NIC's bytes over the whole
 * collective (every rail's). Allreduce, reduce_scatter_block, allgather; bcast and
 * reduce are not modelled there (plan.c runs their scatter shape on ring levels). */
void mxh_cost_model_torus(mxh_cost_model_t *m, const mxh_config_t *cfg, int s, int ndims,
                          const int *k, const int *order);
/* The links rail @c of a torus split @m runs on, as the predictions see them: a grid of
 * its group sizes, each dimension its own link resource at the torus latency and the
 * rail's share of its link direction. What exec.c paces rail @c's exchanges by (the
 * shared fields of @m put every network level on one NIC resource at the NIC's
 * figures). @m itself where it is not a torus split or @c not one of its rails. */
void mxh_cost_model_torus_rail(const mxh_cost_model_t *m, int c, mxh_cost_model_t *r);
/* The same from a layout (grid = 0 unless it is one, or a torus split). */
void mxh_cost_model_init(mxh_cost_model_t *m, const mxh_config_t *cfg, const mxh_layout_t *L);

void mxh_cost_step_phases(const mxh_cost_model_t *m, int level, mxh_step_type_t type,
                          size_t bytes, mxh_cost_phases_t *ph);
/* Seconds the link of @level (with its contention) takes for @bytes sent in messages of
 * @msg bytes (the bandwidth factor of that size). */
double mxh_cost_link_time(const mxh_cost_model_t *m, int level, size_t bytes, size_t msg);
/* Seconds of latency of an exchange of messages of @msg bytes at @level (its factor). */
double mxh_cost_latency(const mxh_cost_model_t *m, int level, size_t msg);
/* @m's link times (per level latency, seconds per byte, link resource, factors) as a
 * schedule carries them (links.h): the same figures by the same rule. */
void mxh_cost_link_times(const mxh_cost_model_t *m, mxh_link_times_t *t);

/* Whether a rootless bcast or reduce step at network level @level, of @bytes among @p
 * members, binds the stream rather than the node's (@node_bytes among @node_p at level
 * 0): its root's link time per fragment is at least the node root's. Only then is it
 * staggered (plan.h mxh_step_staggered). 1 where the layout has no node level of two
 * or more ranks. */
int mxh_cost_net_binds(const mxh_cost_model_t *m, int level, size_t bytes, int p,
                       size_t node_bytes, int node_p);

/* Whether a bcast in fragments of @frag_bytes runs without a head ramp where the model
 * picks the ramp (MXH_SCHED_RAMP_PICK): a grid whose levels' members are equally far
 * and whose root's node step binds the stream (no network level binds it, by
 * mxh_cost_net_binds with the through shape's regions). The root's link is then the
 * stream's limit from the first fragment on, and the ramp's pieces only add their
 * latencies to it; where a network level or a far member binds, the pieces fill the
 * later stages sooner, and the ramp wins (RESULTS.md section 5, "bcast without a head
 * ramp where the root binds"). */
int mxh_cost_bcast_bare(const mxh_cost_model_t *m, mxh_coll_t coll, size_t frag_bytes);

/* One step on a region of @bytes at @level (seconds); its byte term (link time)
 * and compute term (reductions) in *@link / *@cpu when not NULL. */
double mxh_cost_step(const mxh_cost_model_t *m, int level, mxh_step_type_t type, size_t bytes,
                     double *link, double *cpu);

/* Fragments (sched.c's cut) of a message: @count elements of @tsize bytes (per
 * rank; the block for reduce_scatter_block/allgather), @frag_bytes (0: one).
 * Writes at most @max sizes (elements of the count) to @sizes; returns the number
 * of fragments (may exceed @max). */
size_t mxh_cost_frags(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count, size_t tsize,
                      size_t frag_bytes, size_t *sizes, size_t max);

/* Predicted seconds of @coll (allreduce, reduce_scatter_block, allgather, bcast,
 * reduce: a root's, the same for every root on a grid) on
 * @count elements of @tsize bytes cut into fragments of @frag_bytes (0: one
 * fragment, the hier algorithm); allreduce plans of @variant. -1: not modelled
 * (not a grid, another collective, more than 65536 fragments). */
/* kary where it is predicted to cost at most this much: a schedule of direct exchanges
 * keeps 2(p - 1) requests per fragment in flight on every rank of a long rail, work the
 * model does not count (posting, completing; SimGrid's per-request bookkeeping too). The
 * model sees kary's extra latency per exchange, but only part of its cost in the
 * three-stage pipelines: it predicts the allreduce's cost and underrates allgather's and
 * reduce_scatter_block's, so the margin admits only the allreduce (RESULTS.md section 5,
 * "Fewer messages on long rails"). */
#define MXH_COST_KARY_MARGIN 0.0025

/* Whether the reduce of @count elements in fragments of @frag_bytes is predicted at
 * least 5 % faster (cost.c RSTAGGER_MARGIN) with its rootless network steps staggered
 * where they bind (m->rstagger 2; else m->rstagger): where the NIC binds the stagger
 * keeps the root's link busy, but on deeper schedules it holds the fragments behind it
 * (RESULTS.md section 5, "Staggered on the network too"). */
int mxh_cost_rstagger_pick(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count,
                           size_t tsize, size_t frag_bytes);

/* 1 when the schedule of @frag_bytes fragments has a network level of more than 16
 * ranks that p2p.c's kary can run (reduce-scatter and allgather in log_f p exchanges)
 * and kary is predicted at most MXH_COST_KARY_MARGIN slower there than direct. Pure:
 * every rank picks the same. */
int mxh_cost_kary_pick(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count, size_t tsize,
                       size_t frag_bytes, double *t_kary, double *t_direct);
/* m->rsag 2 (MPIX_HIER_RSAG=auto): 1 when an allreduce in fragments of @frag_bytes is
 * predicted at least 1 % faster (cost.c RSAG_MARGIN) with its allreduce steps of up to
 * 32 KiB on the network levels as reduce-scatter + allgather than as radix exchanges
 * (the 1024-GPU pipelines' spine steps: half the bytes through a NIC that binds, for
 * a second latency that other fragments' transfers hide); otherwise m->rsag. The two
 * predictions in *@t_rsag, *@t_radix (-1 where not compared). Pure: every rank picks
 * the same. */
int mxh_cost_rsag_pick(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count, size_t tsize,
                       size_t frag_bytes, double *t_rsag, double *t_radix);

/* MPIX_HIER_PIPELINE_PACE=auto (m->pace_auto): 1 when the schedule of @frag_bytes
 * fragments is predicted faster paced than unpaced, or not modelled (the stream's
 * default); otherwise m->pace. Pure: every rank picks the same. */
int mxh_cost_pace_pick(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count, size_t tsize,
                       size_t frag_bytes);
double mxh_cost_predict(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count, size_t tsize,
                        size_t frag_bytes, mxh_cost_variant_t variant);

/* The stream's window (returned) and the caps of its first @ncap slots (slot 0 the copy
 * in, slot s + 1 the plan's stage s) as the model runs the largest fragment of @coll in
 * fragments of @frag_bytes: the tuning pass's rules (tune.h) on the model's stages; -1
 * where not modelled. */
int mxh_cost_stream_caps(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count,
                         size_t tsize, size_t frag_bytes, int *cap, int ncap);

/* The bandwidth bound: the busiest link's byte time for the whole vector. */
double mxh_cost_bound(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count, size_t tsize);

typedef struct mxh_cost_cand {
    mxh_algo_t         algo;       /* MXH_ALGO_HIER (one fragment) or MXH_ALGO_PIPELINE */
    size_t             frag_bytes; /* pipeline: MPIX_HIER_FRAG_SIZE that gives it */
    size_t             nfrag;      /* fragments (ramp pieces included) */
    size_t             units;      /* uniform fragments (without the ramps; hier: 1) */
    int                ramp;       /* pipeline: the ramp it runs (sched.h; the model's
                                      m->ramp, or both shapes where that is PICK) */
    mxh_cost_variant_t variant;
    double             t;          /* predicted seconds */
} mxh_cost_cand_t;

/* Whether the model describes the schedule of @frag_bytes fragments: bcast and
 * reduce only as pipelines of the through shape (MXH_SCHED_THROUGH_FRAGS
 * fragments or more); candidates it does not describe get t = -1. */
int mxh_cost_shape_modelled(mxh_coll_t coll, size_t count, size_t tsize, size_t frag_bytes);

/* The candidates for a message: hier (the plan variant plan.c builds, and for
 * allreduce the other variants that apply), pipelines of fragments of 2^k bytes
 * (256 KiB .. the whole vector / 2) giving distinct fragment counts; fewest
 * fragments first. Returns how many (at most @max). */
int mxh_cost_candidates(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count, size_t tsize,
                        mxh_cost_cand_t *c, int max);
/* Index of the candidate the library runs (variant MXH_COST_PLAN, at most 128
 * fragments): the fewest fragments among those predicted within 1 % of the fastest;
 * -1 if none. */
int mxh_cost_choose(const mxh_cost_cand_t *c, int n);

/* Selection by the model (MPIX_HIER_COST_MODEL=yes, select.c): the model of the
 * communicator's layout and the choices made, by collective and size. Inputs are
 * agreed (the layout, the configuration), so every rank chooses alike. */
#define MXH_COST_MEMO 64
/* On a network measured not flat in message size (MPIX_HIER_COST_MODEL=auto, measure.h)
 * the model's predictions are off by several per cent, and its choices lost to the
 * thresholds' where it predicted them only slightly faster (RESULTS.md section 5,
 * "Selection with a margin"). There it replaces the thresholds' choice only where it
 * predicts its own at least this much faster; so on a torus split, where its small
 * predicted gains simulated slower (RESULTS.md section 5, "Direct exchanges along a
 * torus ring"). */
#define MXH_COST_TRUST_MARGIN 0.05
typedef struct mxh_cost_sel {
    mxh_cost_model_t m;
    double           margin; /* the model's choice only where predicted at least this
                                fraction faster than the thresholds'; 0: always */
    struct {
        int        coll; /* -1: empty */
        size_t     bytes;
        mxh_algo_t algo;
        size_t     frag;
        int        ramp;
        int        kept; /* the thresholds' choice (margin) */
    } memo[MXH_COST_MEMO];
} mxh_cost_sel_t;

void mxh_cost_sel_init(mxh_cost_sel_t *s, const mxh_config_t *cfg, const mxh_layout_t *L,
                       double margin);
/* The model's choice for @coll of @bytes per rank (the block for the block
 * collectives): hier (*@frag 0) or pipeline with fragments of *@frag bytes of the
 * whole vector and the ramp *@ramp (sched.h). 0; 1 where the thresholds' choice
 * (@today_algo, @today_frag, halvings where the model picks) stays (within the margin);
 * -1 where the model does not apply (the thresholds decide). */
int mxh_cost_select(mxh_cost_sel_t *s, mxh_coll_t coll, size_t bytes, mxh_algo_t today_algo,
                    size_t today_frag, mxh_algo_t *algo, size_t *frag, int *ramp);

#ifdef __cplusplus
}
#endif

#endif
