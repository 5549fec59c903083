/* The tuning pass: every choice a schedule runs with, made once when the schedule is
 * built and stamped into it (sched.h mxh_sched_tuned_t, plan.h step.shm/p2p/algo), in
 * the spirit of MPICH's csel: the executor and the point-to-point algorithms only read
 * the stamps. Where a choice rests on a prediction the pass asks the cost model
 * (decide/cost.h); the stream's stage caps and window are rules of their own, below, and
 * the cost model prices a stream with these same rules.
 *
 * Pure: a function of the schedule, the agreed configuration and the hierarchy's models;
 * every rank stamps the same choices (the shared-memory segments a rank has are the
 * agreed view of them, shm_levels, on every rank whose group has more than one member). */
#ifndef MXH_TUNE_H
#define MXH_TUNE_H

#include <stddef.h>

#include "decide/plan.h"
#include "decide/sched.h"
#include "util/config.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mxh_cost_model;

/* ---- the stream's stage caps and window (RESULTS.md section 5 has the measurements) */

/* Fragments on one stage at a time: one transfers while the other waits on latency or
 * its reduction; more share the links and finish together. */
#define MXH_TUNE_STAGE_CAP 2
/* A step whose region is at most 1/MXH_TUNE_LIGHT of the stream's largest is light: no
 * cap (its few small messages get a sliver of the link they share). */
#define MXH_TUNE_LIGHT 32
/* Paced, a third fragment: pacing keeps it off the link until its turn, so it only
 * posts its exchange a latency ahead. */
#define MXH_TUNE_STAGE_CAP_PACED 3
/* A rootless reduce step holds a fragment for two exchanges on different links (the
 * others' reduce-scatter, their gather to the root): four keep both sides busy ... */
#define MXH_TUNE_STAGE_CAP_REDUCE 4
/* ... and floor(2 x latency / bytes time) more where latency is long, up to this. */
#define MXH_TUNE_STAGE_CAP_MAX 8
/* A rootless bcast step on the network: a third scatter posted while two wait. */
#define MXH_TUNE_STAGE_CAP_BCAST_NET 3
/* A staggered step posting its next scatter ahead: the one all-gathering, the one
 * receiving its scatter, the one posted ahead. */
#define MXH_TUNE_STAGE_CAP_STAGGER 3
/* A kary step, the schedule's only one: one more fragment per further exchange. */
#define MXH_TUNE_STAGE_CAP_KARY_EXTRA 1

/* floor(2 @lat / @tb), at most MXH_TUNE_STAGE_CAP_MAX; 0 where @tb <= 0: the fragments
 * a step whose two exchanges each wait @lat for @tb seconds of bytes needs beyond its
 * cap to keep its links busy. */
int mxh_tune_latency_extra(double lat, double tb);

/* What the cap of one stage rests on. */
typedef struct mxh_tune_stage {
    int light;      /* region at most 1/MXH_TUNE_LIGHT of the largest */
    int paced;      /* the stream is paced */
    int kary_x;     /* exchanges of the schedule's only kary stage (0: none, or not the
                       only one) */
    int rreduce;    /* a rootless reduce step of two members or more */
    int rbcast_net; /* a rootless bcast step on the network of two members or more */
    int ahead;      /* a staggered step that posts ahead by link times */
    int extra;      /* mxh_tune_latency_extra of its step */
} mxh_tune_stage_t;

/* Fragments at most on a stage (@window: the light stages' cap). */
int mxh_tune_stage_cap(const mxh_tune_stage_t *st, int window);

/* Fragments in flight at most for @n stages with a step of this rank: n + 2; plus, per
 * rootless reduce stage, its cap less two (@rextra in all); n + 3 paced, or where a
 * staggered bcast posts ahead (@ahead), on 3 stages or more; plus the latency extras of
 * the rootless network bcast stages (@bextra); 2n - 2 at least for deep schedules. */
int mxh_tune_window(int n, int rextra, int paced, int ahead, int bextra);

/* ---- the pass ---------------------------------------------------------------------- */

/* The facts a schedule is tuned by (the hierarchy's: agreed on every rank). */
typedef struct mxh_tune_in {
    const mxh_config_t *cfg;                /* MPIX_HIER_KARY, _RSAG */
    const struct mxh_cost_model *select;    /* the selecting model, or NULL */
    const struct mxh_cost_model *times;     /* link times (measured where the hierarchy
                                               has them, else configured), or NULL
                                               (MPIX_HIER_PIPELINE_PACE=no) */
    const struct mxh_cost_model *pace;      /* the link times the schedule is paced by
                                               (hier.h mxh_hier_pace), or NULL */
    const struct mxh_cost_model *pace_links; /* the same as this rank's links are
                                               (mxh_hier_pace_links) */
    unsigned shm_levels;                    /* bit l: level l is node-local with shared
                                               memory (agreed) */
    unsigned my_shm;                        /* bit l: this rank has the segment */
    int      picks;                         /* make the model's per-schedule picks (kary,
                                               rsag, the reduce's stagger, pacing) */
} mxh_tune_in_t;

/* Tune @s: the model's picks (s->kary, rsag, rstagger, unpaced), then every step's
 * transport and algorithm and the stream's window, caps, staggers and pacing. */
void mxh_tune_sched(mxh_sched_t *s, const mxh_tune_in_t *in);

/* Stamp one step built outside a schedule (@shm: it may run through a segment). */
void mxh_tune_step(mxh_step_t *s, size_t ext, int shm);

#ifdef __cplusplus
}
#endif

#endif
