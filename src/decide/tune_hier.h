/* The hierarchy's cost-model decisions at its creation (pure): whether to measure the
 * network, whether to trust the model with the measured figures ("trust the model?"),
 * and the cost-model state selection and pacing read afterwards.
 *
 * The network's parameters for selection and pacing (decide/measure.h) are rank 0's
 * times, broadcast, so every rank fits the same (agreed). MPIX_HIER_COST_MODEL=auto
 * selects by the model where the network is flat in message size (mxh_measure_flat),
 * as on the link-exact networks it was validated on; elsewhere selection and pacing
 * keep the configured figures, which simulated as well or better there (RESULTS.md
 * section 5, "Measured parameters"), except where the model, with the measured
 * figures, predicts its choice at least MXH_COST_TRUST_MARGIN faster than theirs (its
 * schedules are then paced by the measured figures, as simulated). A fragment size the
 * user set (MPIX_HIER_FRAG_SIZE) is kept: 'auto' does not override it.
 *
 * Every input is agreed (configuration, layout, rank 0's measurement), so every rank
 * decides alike. */
#ifndef MXH_COLL_TUNE_HIER_H
#define MXH_COLL_TUNE_HIER_H

#include <stddef.h>

#include "decide/cost.h"
#include "decide/measure.h"
#include "decide/levels.h"
#include "util/config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether the hierarchy measures the network at creation (MPIX_HIER_COST_MEASURE):
 * asked for, or (auto) the model selects on figures nobody set; and something reads
 * them (pacing or the model), and there is a level to measure. */
int mxh_tune_measure_wanted(const mxh_config_t *cfg, int nlevels);

/* What the model-trust rules read of the layout and the measurement. */
typedef struct mxh_tune_facts {
    int measured;  /* the network was measured (mxh_tune_measure_wanted) */
    int fitted;    /* some level fitted (mxh_measure_fit) */
    int flat;      /* fitted and flat in message size (mxh_measure_flat) */
    int plausible; /* fitted and plausible as a network's (mxh_measure_plausible) */
    int uniform;   /* every level's members equally far (mxh_measure_uniform); 1 unmeasured */
    int torus;     /* the layout is a torus split */
    double net_bw; /* the measured network's bandwidth, bytes/s (mxh_measure_net_bw; 0:
                      no network level measured) */
} mxh_tune_facts_t;

/* The facts of measurement @m (NULL: not measured) on a layout that is a torus split
 * or not (@torus); the fitted figures go into @fit (a copy of the configuration). */
void mxh_tune_facts(const mxh_measure_t *m, int torus, mxh_config_t *fit, mxh_tune_facts_t *f);

/* How the description says the measurement is used (mxh_tune_describe). */
typedef enum mxh_tune_use {
    MXH_TUNE_USED,            /* as the hierarchy's parameters */
    MXH_TUNE_MARGIN_TORUS,    /* and the model selects with a margin: a torus split */
    MXH_TUNE_MARGIN_FAR,      /* and the model selects with a margin: a level's members
                                 not equally far */
    MXH_TUNE_MARGIN,          /* only where the model predicts its choice the margin faster
                                 (not flat in message size) */
    MXH_TUNE_UNUSED_FRAG,     /* not used: MPIX_HIER_FRAG_SIZE is set */
    MXH_TUNE_UNUSED           /* not used: neither flat nor plausible */
} mxh_tune_use_t;

/* The trust decision. */
typedef struct mxh_tune_trust {
    int            model;       /* selection by the model (MPIX_HIER_COST_MODEL resolved) */
    int            use_fit;     /* the fitted figures become the hierarchy's configuration */
    int            sel_fit;     /* the model selects by the fitted figures */
    double         margin;      /* the model's choice only where predicted at least this
                                   fraction faster than the thresholds'; 0: always */
    int            ramp;        /* MPIX_HIER_PIPELINE_RAMP resolved (mxh_sched_ramp_auto):
                                   linear where the network measured flat, or (not
                                   measured) the model is asked for with flat factors */
    int            far_members; /* a level's members not equally far (pacing takes the
                                   margin too) */
    mxh_tune_use_t use;         /* for the description (measured and fitted only) */
    size_t         frag_cap;    /* fragments at most this (mxh_tune_frag_cap; 0: no cap) */
} mxh_tune_trust_t;

/* A fragment of a pipeline should not take longer than MXH_TUNE_FRAG_NET_TIME on the
 * measured network: on slow networks (the emulated rails' TCP at 100-200 Mbit/s) fewer,
 * longer fragments leave the links idle at the ends of each step while one fragment's
 * exchanges finish unevenly, and small fragments overlap them (RESULTS.md section 9,
 * "Fragments on a slow network"). The cap is the power of two nearest (in log) to
 * bandwidth x MXH_TUNE_FRAG_NET_TIME, at least MXH_TUNE_FRAG_NET_MIN; it binds only below
 * ~10 Gbit/s per rank, so fast fabrics keep the configured 8 MiB. */
#define MXH_TUNE_FRAG_NET_TIME 5e-3
#define MXH_TUNE_FRAG_NET_MIN  ((size_t)64 << 10)
/* The cap for network bandwidth @net_bw (bytes/s): 0 (none) where @net_bw is not
 * positive, else as above. */
size_t mxh_tune_frag_cap(double net_bw);

/* "Trust the model?": a function of the configuration @cfg and the facts @f; the
 * fragment cap of a measured network where the user did not set MPIX_HIER_FRAG_SIZE. */
mxh_tune_trust_t mxh_tune_trust(const mxh_config_t *cfg, const mxh_tune_facts_t *f);

/* The description's line on the measurement ("" where nothing fitted). */
void mxh_tune_describe(const mxh_tune_trust_t *t, const mxh_tune_facts_t *f,
                       const mxh_measure_t *m, const mxh_config_t *fit, char *buf, size_t len);

/* The hierarchy's cost-model state: the model selection asks and the link times
 * streams pace by. */
typedef struct mxh_hier_cost {
    int              selects;  /* the model selects (MPIX_HIER_COST_MODEL resolved yes) */
    mxh_cost_sel_t   sel;      /* the model of the layout, then */
    int              npace;    /* pace[0, npace) are set: 0 unpaced (MPIX_HIER_PIPELINE_PACE
                                  =no), 1 the configured figures, 2 and the measured ones */
    mxh_cost_model_t pace[2];  /* [0] the configured figures; [1] the measured ones, which
                                  pace what the model selects with a margin */
    mxh_cost_model_t links[2]; /* pace[] as this rank's links are (a torus: its rail's,
                                  mxh_cost_model_torus_rail) */
} mxh_hier_cost_t;

/* Resolves the hierarchy's configuration @cfg by @t (the fitted figures @fit where
 * used) and builds its cost-model state @c for rank @rank of layout @L. */
void mxh_tune_hier(const mxh_tune_trust_t *t, const mxh_config_t *fit, const mxh_layout_t *L,
                   int rank, mxh_config_t *cfg, mxh_hier_cost_t *c);

#ifdef __cplusplus
}
#endif

#endif
