/* The hierarchy's cost-model decisions at its creation (pure): see tune_hier.h. */
#include "config.h"

#include "decide/tune_hier.h"
#include "decide/sched.h"

#include <stdio.h>
#include <string.h>

int mxh_tune_measure_wanted(const mxh_config_t *cfg, int nlevels)
{
    return (cfg->cost_measure == 1 ||
            (cfg->cost_measure == 2 && cfg->cost_model && !cfg->cost_given)) &&
           (cfg->pipeline_pace || cfg->cost_model) && nlevels > 0;
}

void mxh_tune_facts(const mxh_measure_t *m, int torus, mxh_config_t *fit, mxh_tune_facts_t *f)
{
    f->measured  = m != NULL;
    f->torus     = torus;
    f->fitted    = m != NULL && mxh_measure_fit(m, torus, fit) > 0;
    f->flat      = f->fitted && mxh_measure_flat(m, fit);
    f->plausible = f->fitted && mxh_measure_plausible(m, fit);
    f->uniform   = m == NULL || mxh_measure_uniform(m);
    f->net_bw    = f->fitted ? mxh_measure_net_bw(m, fit) : 0;
}

size_t mxh_tune_frag_cap(double net_bw)
{
    double x = net_bw * MXH_TUNE_FRAG_NET_TIME;
    size_t p = MXH_TUNE_FRAG_NET_MIN;
    if (!(net_bw > 0))
        return 0;
    while (p < ((size_t)1 << 62) && (double)p * 1.41421356 < x) /* nearest power, in log */
        p <<= 1;
    return p;
}

mxh_tune_trust_t mxh_tune_trust(const mxh_config_t *cfg, const mxh_tune_facts_t *f)
{
    mxh_tune_trust_t t = {0, 0, 0, 0, 0, 0, MXH_TUNE_USED, 0};
    int model     = cfg->cost_model == 1;
    int ramp_flat = model && mxh_measure_factors_flat(cfg);

    t.model = model;
    if (f->measured) {
        int trust = cfg->cost_model == 2 && f->fitted && !cfg->frag_given &&
                    (f->flat || f->plausible);
        int used  = model || (trust && f->flat) || cfg->cost_measure == 1;
        /* where a level's members are not equally far (a dragonfly group: the model's
         * one latency per level fits neither; RESULTS.md section 5, "A dragonfly's far
         * members") selection takes a margin; so on a torus split, where the fragment
         * sizes the model ranks within a few % of each other are ranked right no more
         * than by chance (RESULTS.md section 5, "Direct exchanges along a torus ring") */
        int by_margin = trust && f->flat && !model && (f->torus || !f->uniform);
        ramp_flat     = f->flat;
        t.far_members = !f->uniform;
        t.use         = by_margin ? (f->torus ? MXH_TUNE_MARGIN_TORUS : MXH_TUNE_MARGIN_FAR)
                        : used    ? MXH_TUNE_USED
                        : trust   ? MXH_TUNE_MARGIN
                        : cfg->frag_given ? MXH_TUNE_UNUSED_FRAG
                                          : MXH_TUNE_UNUSED;
        if (trust && (!f->flat || by_margin)) {
            t.margin  = MXH_COST_TRUST_MARGIN;
            t.sel_fit = 1;
        }
        t.model = model || trust;
        if (used)
            t.use_fit = t.sel_fit = 1;
    }
    t.ramp = mxh_sched_ramp_auto(cfg->pipeline_ramp, ramp_flat, f->torus);
    if (!cfg->frag_given)
        t.frag_cap = mxh_tune_frag_cap(f->net_bw);
    return t;
}

void mxh_tune_describe(const mxh_tune_trust_t *t, const mxh_tune_facts_t *f,
                       const mxh_measure_t *m, const mxh_config_t *fit, char *buf, size_t len)
{
    static const char *const margin_fmt[] = {
        [MXH_TUNE_MARGIN_TORUS] = "used; selection by the model where it predicts its choice "
                                  "%.0f %% faster than the thresholds' (MPIX_HIER_COST_MODEL="
                                  "auto on a torus split)",
        [MXH_TUNE_MARGIN_FAR]   = "used; selection by the model where it predicts its choice "
                                  "%.0f %% faster than the thresholds' (MPIX_HIER_COST_MODEL="
                                  "auto: a level's members not equally far)",
        [MXH_TUNE_MARGIN] = "used where the model predicts its choice %.0f %% faster than the "
                            "thresholds' (MPIX_HIER_COST_MODEL=auto: not flat in message size; "
                            "pacing and the thresholds' choices keep the configured ones)",
    };
    char how[256];
    const char *h = NULL;

    if (len > 0)
        buf[0] = '\0';
    if (!f->fitted)
        return;
    switch (t->use) {
    case MXH_TUNE_USED:
        break;
    case MXH_TUNE_MARGIN_TORUS:
    case MXH_TUNE_MARGIN_FAR:
    case MXH_TUNE_MARGIN:
        snprintf(how, sizeof(how), margin_fmt[t->use], MXH_COST_TRUST_MARGIN * 100);
        h = how;
        break;
    case MXH_TUNE_UNUSED_FRAG:
        h = "not used (MPIX_HIER_COST_MODEL=auto: MPIX_HIER_FRAG_SIZE is set; the "
            "configured ones stay)";
        break;
    case MXH_TUNE_UNUSED:
        h = "not used (MPIX_HIER_COST_MODEL=auto: not flat in message size, and not "
            "plausible as a network's; the configured ones stay)";
        break;
    }
    mxh_measure_describe(m, fit, h, buf, len);
    size_t off = strlen(buf);
    if (t->frag_cap > 0 && t->frag_cap < fit->frag_size && off > 0 && off < len) {
        buf[off - 1] = '\0'; /* the line goes on */
        snprintf(buf + off - 1, len - off + 1,
                 " fragments at most %zu KiB (%.0f ms of the measured network's %.4g GB/s)\n",
                 t->frag_cap >> 10, MXH_TUNE_FRAG_NET_TIME * 1e3, f->net_bw / 1e9);
    }
}

void mxh_tune_hier(const mxh_tune_trust_t *t, const mxh_config_t *fit, const mxh_layout_t *L,
                   int rank, mxh_config_t *cfg, mxh_hier_cost_t *c)
{
    mxh_config_t sel = t->sel_fit ? *fit : *cfg; /* what the model selects by */

    if (t->use_fit)
        *cfg = *fit;
    if (t->frag_cap > 0 && cfg->frag_size > t->frag_cap)
        cfg->frag_size = t->frag_cap;
    cfg->cost_model    = t->model;
    cfg->pipeline_ramp = sel.pipeline_ramp = t->ramp;
    c->selects         = cfg->cost_model;
    if (c->selects) { /* a function of the layout and the configuration: agreed */
        mxh_cost_sel_init(&c->sel, &sel, L, t->margin);
        c->sel.m.far_members = t->far_members;
        c->sel.m.frag_max    = t->frag_cap;
    }
    c->npace = 0;
    if (!cfg->pipeline_pace)
        return;
    c->npace = t->margin > 0 ? 2 : 1;
    mxh_cost_model_init(&c->pace[0], cfg, L);
    if (c->npace > 1)
        mxh_cost_model_init(&c->pace[1], &sel, L);
    /* where a level's members are not equally far the model's pacing call takes the
     * margin too (RESULTS.md section 5, "A dragonfly's far members") */
    if (t->far_members)
        c->pace[0].pace_margin = c->pace[1].pace_margin = MXH_COST_TRUST_MARGIN;
    /* a torus: this rank's rail (its position in the node, the node level's coord; the
     * only one where a node has one rank and no node level) */
    int node = L->nlevels > 0 && L->type[0] == MXH_LEVEL_NODE;
    int rail = L->torus_ndims == 0 ? -1 : node ? L->coord[0][rank] : 0;
    for (int i = 0; i < c->npace; i++)
        mxh_cost_model_torus_rail(&c->pace[i], rail, &c->links[i]);
}
