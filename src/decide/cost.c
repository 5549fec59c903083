#include "decide/cost.h"
#include "decide/measure.h"
#include "decide/p2p_choose.h"
#include "decide/sched.h"
#include "decide/tune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FRAGS_MODELLED 65536
#define CAP_HIST 16

void mxh_cost_model_grid(mxh_cost_model_t *m, const mxh_config_t *cfg, int nlevels,
                         const mxh_level_type_t *type, const int *gsize)
{
    long prod = 1;
    memset(m, 0, sizeof(*m));
    m->nlevels = nlevels < MXH_MAX_LEVELS ? nlevels : MXH_MAX_LEVELS;
    for (int l = 0; l < m->nlevels; l++) {
        m->type[l]  = type[l];
        m->gsize[l] = gsize[l] > 0 ? gsize[l] : 1;
        m->net[l]   = mxh_level_is_net(type[l]);
        if (m->net[l]) {
            m->lvl[l].alpha =
                type[l] == MXH_LEVEL_SPINE ? cfg->cost_spine_latency : cfg->cost_net_latency;
            m->lvl[l].beta  = cfg->cost_net_contention / cfg->cost_net_bw;
        } else {
            m->lvl[l].alpha = cfg->cost_node_latency;
            m->lvl[l].beta  = 1.0 / cfg->cost_node_bw;
        }
        prod *= m->gsize[l];
    }
    /* the links a level's bytes take: the network levels share the NIC */
    for (int l = 0, nic = -1; l < m->nlevels; l++) {
        m->res[l] = l;
        if (m->net[l]) {
            nic       = nic < 0 ? l : nic;
            m->res[l] = nic;
        }
    }
    m->nranks = (int)prod;
    m->grid   = m->nlevels >= 1;
    m->gamma  = 1.0 / cfg->cost_reduce_bw;
    m->kappa  = 1.0 / cfg->cost_copy_bw;
    m->ramp   = mxh_sched_ramp_auto(cfg->pipeline_ramp, mxh_measure_factors_flat(cfg), 0);
    m->pace   = cfg->pipeline_pace != 0;
    m->pace_auto = cfg->pipeline_pace == 2;
    m->ahead  = cfg->pipeline_pace != 0;
    m->rstagger = 2;
    m->rsag   = cfg->rsag;
    mxh_size_factors_of(&m->fac, cfg);
    /* the spread group (decide/levels.c mxh_layout_spread_init): a node level of 2..32
     * ranks under two network levels or more, at least as many nodes as ranks per node */
    if (cfg->spread && m->nlevels >= 3 && m->type[0] == MXH_LEVEL_NODE && m->gsize[0] >= 2 &&
        m->gsize[0] <= 32) {
        long P = 1;
        int ok = 1;
        for (int l = 1; l < m->nlevels; l++) {
            ok = ok && m->net[l];
            P *= m->gsize[l];
        }
        m->spread = ok && P >= m->gsize[0] ? (int)P : 0;
    }
}

void mxh_cost_model_init(mxh_cost_model_t *m, const mxh_config_t *cfg, const mxh_layout_t *L)
{
    mxh_level_type_t type[MXH_MAX_LEVELS] = {MXH_LEVEL_NODE};
    int gsize[MXH_MAX_LEVELS] = {0}, grid = L->nlevels >= 1;
    long prod = 1;
    for (int l = 0; l < L->nlevels && l < MXH_MAX_LEVELS; l++) {
        type[l]  = L->type[l];
        gsize[l] = L->gsize[l][0];
        if (L->kind[l] != MXH_LEVEL_KIND_SCATTER && L->kind[l] != MXH_LEVEL_KIND_TOP)
            grid = 0;
        for (int r = 1; r < L->nranks; r++)
            if (L->gsize[l][r] != gsize[l])
                grid = 0;
        prod *= gsize[l];
    }
    if (L->torus_ndims > 0) { /* the torus split: its own model */
        int s = L->torus_nrails, node = L->nlevels > 0 && L->type[0] == MXH_LEVEL_NODE;
        if (L->torus_order != NULL && (s > 1) == node) {
            mxh_cost_model_torus(m, cfg, s, L->torus_ndims, L->torus_k, L->torus_order);
            m->grid = m->grid && m->nranks == L->nranks && m->nlevels == L->nlevels;
        } else {
            memset(m, 0, sizeof(*m));
        }
        return;
    }
    mxh_cost_model_grid(m, cfg, L->nlevels, type, gsize);
    m->nranks = L->nranks;
    m->grid   = grid && prod == L->nranks;
    if (!m->grid)
        m->spread = 0;
}

void mxh_cost_model_torus(mxh_cost_model_t *m, const mxh_config_t *cfg, int s, int ndims,
                          const int *k, const int *order)
{
    mxh_level_type_t type[MXH_MAX_LEVELS];
    int gsize[MXH_MAX_LEVELS], node = s > 1, nl = node + ndims;
    long prod = s;
    if (ndims < 1 || ndims > 3 || s < 1 || s > MXH_COST_RAILS || nl > MXH_MAX_LEVELS) {
        memset(m, 0, sizeof(*m)); /* grid 0: not modelled */
        return;
    }
    for (int l = 0; l < nl; l++) {
        type[l]  = node && l == 0 ? MXH_LEVEL_NODE : MXH_LEVEL_RAIL;
        gsize[l] = node && l == 0 ? s : k[order[l - node] & 3];
    }
    /* The shared fields stay what a grid of rail 0's sizes gives (NIC parameters, the
     * network levels on one NIC resource): exec.c's pacing reads them through
     * mxh_cost_latency / mxh_cost_link_time and res, as it did before the torus was
     * modelled. The torus lives in the t* fields, which only the predictions read
     * (torus_rail). */
    mxh_cost_model_grid(m, cfg, nl, type, gsize);
    m->ramp = mxh_sched_ramp_auto(cfg->pipeline_ramp, 0, 1); /* halvings: not measured linear */
    /* gen_platform.py --b-torus default: the node's torus links (2 per dimension) carry
     * as much as its s NICs */
    double bt     = cfg->cost_torus_bw > 0 ? cfg->cost_torus_bw
                                           : s * cfg->cost_net_bw / (2.0 * ndims);
    m->tlink_beta = 1.0 / bt;
    m->tnic_beta  = cfg->cost_net_contention / cfg->cost_net_bw;
    m->talpha     = cfg->cost_torus_latency; /* NIC, one torus link, NIC */
    m->trails     = s;
    m->tndims     = ndims;
    for (int j = 0; j < ndims; j++)
        prod *= k[j] > 0 ? k[j] : 1;
    for (int c = 0; c < s; c++)
        for (int l = 0; l < nl; l++) {
            int e = l >= node ? order[c * 3 + l - node] : -1;
            m->tgsize[c][l] = e < 0 ? s : k[e & 3];
            m->tlink[c][l]  = e < 0 ? -1 : 2 * (e & 3) + ((e & 4) != 0);
            if (e >= 0 && (e & 7) != (order[l - node] & 7))
                m->tmixed = 1;
        }
    /* a rank's share of its level's link direction: the rails whose same level runs
     * on it (they cross their l-th levels at about the same time, from the node's
     * steps on), by messages (SimGrid's max-min: one flow per rail), never more than
     * its NIC */
    for (int c = 0; c < s; c++)
        for (int l = 0; l < nl; l++) {
            int n = 0;
            if (m->tlink[c][l] < 0) {
                m->tbeta[c][l] = m->lvl[l].beta;
                continue;
            }
            for (int o = 0; o < s; o++)
                n += m->tlink[o][l] == m->tlink[c][l];
            m->tbeta[c][l] = n * m->tlink_beta > m->tnic_beta ? n * m->tlink_beta : m->tnic_beta;
        }
    m->nranks = (int)prod;
    m->grid   = 1;
}

/* ---- steps ------------------------------------------------------------------------ */

static int radix_factors(int p, int *fac)
{
    return mxh_p2p_factors(p, MXH_P2P_RADIX, fac);
}

static int log2i(int p)
{
    int k = 0;
    while ((1 << (k + 1)) <= p)
        k++;
    return k;
}

/* A network level p2p.c's kary can run (more than MXH_P2P_KARY_P ranks, two factors or
 * more), not a torus ring */
static int kary_level(const mxh_cost_model_t *m, int level)
{
    int fac[32];
    return m->net[level] && !m->ring[level] && m->gsize[level] > MXH_P2P_KARY_P &&
           mxh_p2p_factors(m->gsize[level], MXH_P2P_KARY_RADIX, fac) >= 2;
}

/* The algorithm p2p.c runs on a step of @level over an even split (mxh_p2p_choose); a
 * bcast or reduce step as the pipelines' rootless one, the form the model prices. */
static mxh_p2p_algo_t choose(const mxh_cost_model_t *m, int level, mxh_step_type_t type,
                             size_t bytes)
{
    mxh_step_t s;
    memset(&s, 0, sizeof(s));
    s.type     = type;
    s.level    = level;
    s.gsize    = m->gsize[level];
    s.count    = bytes;
    s.net      = m->net[level];
    s.ring     = m->ring[level];
    s.kary     = m->kary;
    s.rsag     = m->rsag == 1;
    s.rootless = type == MXH_STEP_BCAST || type == MXH_STEP_REDUCE;
    return mxh_p2p_choose(&s, 1);
}

/* Latency of one exchange of messages of @msg bytes at @level. */
static double alpha(const mxh_cost_model_t *m, int level, double msg)
{
    return m->lvl[level].alpha * mxh_link_factor(m->fac.lat_n, m->fac.lat_size, m->fac.lat_f, msg);
}

/* Seconds per byte of messages of @msg bytes at @level. */
static double beta(const mxh_cost_model_t *m, int level, double msg)
{
    return m->lvl[level].beta / mxh_link_factor(m->fac.bw_n, m->fac.bw_size, m->fac.bw_f, msg);
}

double mxh_cost_link_time(const mxh_cost_model_t *m, int level, size_t bytes, size_t msg)
{
    if (level < 0 || level >= m->nlevels)
        return 0;
    return (double)bytes * beta(m, level, (double)msg);
}

int mxh_cost_net_binds(const mxh_cost_model_t *m, int level, size_t bytes, int p,
                       size_t node_bytes, int node_p)
{
    if (m->nlevels < 1 || m->net[0] || node_p < 2 || node_bytes == 0 || p < 2)
        return 1;
    return mxh_cost_link_time(m, level, bytes, bytes / (size_t)(p - 1)) >=
           mxh_cost_link_time(m, 0, node_bytes, node_bytes / (size_t)(node_p - 1));
}

int mxh_cost_bcast_bare(const mxh_cost_model_t *m, mxh_coll_t coll, size_t frag_bytes)
{
    if (coll != MXH_COLL_BCAST || m->ramp != MXH_SCHED_RAMP_PICK || m->far_members ||
        !m->grid || m->trails > 0 || m->nlevels < 2 || m->net[0] || m->gsize[0] < 2)
        return 0;
    /* the through shape (plan.c build_bcast): level l's step carries the node's share
     * of the level below's region */
    size_t region = frag_bytes;
    for (int l = 1; l < m->nlevels; l++) {
        region /= (size_t)m->gsize[l - 1];
        if (m->net[l] && mxh_cost_net_binds(m, l, region, m->gsize[l], frag_bytes, m->gsize[0]))
            return 0;
    }
    return 1;
}

void mxh_cost_link_times(const mxh_cost_model_t *m, mxh_link_times_t *t)
{
    memset(t, 0, sizeof(*t));
    t->nlevels = m->nlevels;
    for (int l = 0; l < m->nlevels; l++) {
        t->alpha[l] = m->lvl[l].alpha;
        t->beta[l]  = m->lvl[l].beta;
        t->res[l]   = m->res[l];
    }
    t->fac = m->fac;
}

double mxh_cost_latency(const mxh_cost_model_t *m, int level, size_t msg)
{
    if (level < 0 || level >= m->nlevels)
        return 0;
    return alpha(m, level, (double)msg);
}

static void phase_r(mxh_cost_phases_t *ph, double a, double link, double cpu, int root,
                    int flows)
{
    if (ph->n < MXH_COST_MAX_PHASES) {
        ph->ph[ph->n].alpha = a;
        ph->ph[ph->n].link  = link;
        ph->ph[ph->n].cpu   = cpu;
        ph->ph[ph->n].root  = root;
        ph->ph[ph->n].flows = flows > 0 ? flows : 1;
        ph->ph[ph->n].root2 = -1;
        ph->ph[ph->n].flows2 = 0;
        ph->ph[ph->n].link2 = 0;
        ph->ph[ph->n].chain = 0;
        ph->n++;
    } else { /* lump the rest into the last one */
        ph->ph[ph->n - 1].alpha += a;
        ph->ph[ph->n - 1].link += link;
        ph->ph[ph->n - 1].cpu += cpu;
    }
}

/* The last phase follows the one before it unheld (@chain). */
static void chain_last(mxh_cost_phases_t *ph, int chain)
{
    if (ph->n > 0 && ph->n <= MXH_COST_MAX_PHASES)
        ph->ph[ph->n - 1].chain = chain;
}

/* The last phase's second link set. */
static void phase2(mxh_cost_phases_t *ph, int root2, double link2, int flows2)
{
    if (ph->n > 0 && ph->n <= MXH_COST_MAX_PHASES) {
        ph->ph[ph->n - 1].root2  = root2;
        ph->ph[ph->n - 1].link2  = link2;
        ph->ph[ph->n - 1].flows2 = flows2;
    }
}

static void phase(mxh_cost_phases_t *ph, double a, double link, double cpu, int flows)
{
    phase_r(ph, a, link, cpu, 0, flows);
}

void mxh_cost_step_phases(const mxh_cost_model_t *m, int level, mxh_step_type_t type,
                          size_t bytes, mxh_cost_phases_t *ph)
{
    int p = m->gsize[level], fac[32], k = log2i(p);
    double n = (double)bytes, g = m->gamma;
    double share = (double)(p - 1) / p;
    int rs = type == MXH_STEP_REDUCE_SCATTER || type == MXH_STEP_ALLREDUCE ||
             type == MXH_STEP_REDUCE;
    int ag = type == MXH_STEP_ALLGATHER || type == MXH_STEP_ALLREDUCE || type == MXH_STEP_BCAST;
    mxh_p2p_algo_t algo;

    ph->n = 0;
    if (p <= 1 || bytes == 0)
        return;
    algo = choose(m, level, type, bytes);
    if (algo == MXH_P2P_DIRECT && (type == MXH_STEP_BCAST || type == MXH_STEP_REDUCE)) {
        /* p2p.c rootless: the region split among the p - 1 others, the root's part
         * empty; the root's link carries the region once (scatter, gather), every
         * other member's as much (its parts in, or out, over both phases) */
        double q = n / (p - 1);
        if (type == MXH_STEP_BCAST) {
            phase_r(ph, alpha(m, level, q), n * beta(m, level, q), 0, MXH_COST_ROOT_OUT, p - 1);
            phase2(ph, MXH_COST_OTHERS, q * beta(m, level, q), 1);
            if (p > 2)
                phase_r(ph, alpha(m, level, q), (p - 2) * q * beta(m, level, q), 0,
                        MXH_COST_OTHERS, p - 2);
        } else if (m->net[level]) {
            /* p2p.c root_adds: the root's part stays out of the others' reduce-scatter
             * (p - 2 parts into each other); the root adds it to what it gathers */
            if (p > 2)
                phase_r(ph, alpha(m, level, q), (p - 2) * q * beta(m, level, q),
                        p / 3.0 * q * g, MXH_COST_OTHERS, p - 2);
            phase_r(ph, alpha(m, level, q), n * beta(m, level, q), n * g, MXH_COST_ROOT_IN,
                    p - 1);
            phase2(ph, MXH_COST_OTHERS_OUT, q * beta(m, level, q), 1);
        } else {
            phase_r(ph, alpha(m, level, q), n * beta(m, level, q), (p + 1) / 3.0 * q * g,
                    MXH_COST_OTHERS, p - 1);
            phase2(ph, MXH_COST_ROOT_OUT, n * beta(m, level, q), p - 1);
            phase_r(ph, alpha(m, level, q), n * beta(m, level, q), 0, MXH_COST_ROOT_IN, p - 1);
            phase2(ph, MXH_COST_OTHERS_OUT, q * beta(m, level, q), 1);
        }
        return;
    }
    if (type == MXH_STEP_BCAST) /* the scatter from the root, then the allgather */
        phase_r(ph, alpha(m, level, n / p), share * n * beta(m, level, n / p), 0,
                MXH_COST_ROOT_OUT, p - 1);
    switch (algo) {
    case MXH_P2P_RADIX_AR: /* per factor f: the whole region to f - 1 peers, an f-input reduction */
        for (int i = 0, nf = radix_factors(p, fac); i < nf; i++)
            phase(ph, alpha(m, level, n), (fac[i] - 1) * n * beta(m, level, n),
                  (fac[i] + 1) / 3.0 * n * g, fac[i] - 1);
        break;
    case MXH_P2P_DIRECT: /* one exchange per phase: my part from / to every peer */
        if (rs)
            phase(ph, alpha(m, level, n / p), share * n * beta(m, level, n / p),
                  (p + 1) / 3.0 * n / p * g, p - 1);
        if (ag)
            phase(ph, alpha(m, level, n / p), share * n * beta(m, level, n / p), 0, p - 1);
        break;
    case MXH_P2P_RHD: /* halves, quarters, ... then back */
        if (rs)
            for (int i = 1; i <= k; i++)
                phase(ph, alpha(m, level, n / (1 << i)), n / (1 << i) * beta(m, level, n / (1 << i)),
                      n / (1 << i) * g, 1);
        if (ag)
            for (int i = k; i >= 1; i--)
                phase(ph, alpha(m, level, n / (1 << i)), n / (1 << i) * beta(m, level, n / (1 << i)),
                      0, 1);
        break;
    case MXH_P2P_KARY: { /* per factor f: the range's share of each of f - 1 peers, then back */
        int nf = mxh_p2p_factors(p, MXH_P2P_KARY_RADIX, fac);
        double r = n;
        if (rs) /* ranges of n, n / f0, ...: f - 1 shares out, an f-input reduction */
            for (int i = 0; i < nf; r /= fac[i], i++) {
                double q = r / fac[i];
                phase(ph, alpha(m, level, q), (fac[i] - 1) * q * beta(m, level, q),
                      (fac[i] + 1) / 3.0 * q * g, fac[i] - 1);
                chain_last(ph, i > 0);
            }
        if (ag) { /* shares of n / p, growing by the last factor first */
            double q = n / p;
            for (int i = nf - 1; i >= 0; q *= fac[i], i--) {
                phase(ph, alpha(m, level, q), (fac[i] - 1) * q * beta(m, level, q), 0, fac[i] - 1);
                chain_last(ph, i < nf - 1);
            }
        }
        break;
    }
    case MXH_P2P_RING: /* p - 1 exchanges of n / p per phase (lumped) */
        if (rs)
            phase(ph, (p - 1) * alpha(m, level, n / p), share * n * beta(m, level, n / p),
                  share * n * g, 1);
        if (ag)
            phase(ph, (p - 1) * alpha(m, level, n / p), share * n * beta(m, level, n / p), 0, 1);
        break;
    case MXH_P2P_FLAT: /* not for the rootless steps the model prices (choose) */
        break;
    }
    if (type == MXH_STEP_REDUCE) /* the reduce-scatter, then the gather to the root */
        phase_r(ph, alpha(m, level, n / p), share * n * beta(m, level, n / p), 0,
                MXH_COST_ROOT_IN, p - 1);
}

double mxh_cost_step(const mxh_cost_model_t *m, int level, mxh_step_type_t type, size_t bytes,
                     double *link_p, double *cpu_p)
{
    mxh_cost_phases_t ph;
    double t = 0, link = 0, cpu = 0;
    mxh_cost_step_phases(m, level, type, bytes, &ph);
    for (int i = 0; i < ph.n; i++) {
        t += ph.ph[i].alpha + ph.ph[i].link + ph.ph[i].cpu;
        link += ph.ph[i].link;
        cpu += ph.ph[i].cpu;
    }
    if (link_p)
        *link_p = link;
    if (cpu_p)
        *cpu_p = cpu;
    return t;
}

/* ---- fragments (sched.c's cut) ----------------------------------------------------- */

static int block_coll(mxh_coll_t coll)
{
    return coll == MXH_COLL_REDUCE_SCATTER_BLOCK || coll == MXH_COLL_ALLGATHER;
}

size_t mxh_cost_frags(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count, size_t tsize,
                      size_t frag_bytes, size_t *sizes, size_t max)
{
    size_t per = block_coll(coll) ? (size_t)m->nranks : 1;
    return mxh_sched_cut(coll, count, tsize, per, frag_bytes, m->ramp, sizes, max);
}

/* ---- schedules ---------------------------------------------------------------------- */

/* slots: 0 copy in, 1 .. 2 nlevels - 1 the plan's stages, 2 nlevels copy out */
#define NSLOT (2 * MXH_MAX_LEVELS + 1)

/* Link resources: m->res[level] (the level's links; rail and spine share the NIC)
 * for the steps every member of a group runs alike, and for bcast/reduce steps
 * in a holder's group (plan.c) that + ROLE_ROOT_OUT, _ROOT_IN (the root's link,
 * each direction), _OTHER (the others', inputs, both ways for their allgather),
 * _OTHER_OUT (their outputs to the root): different ranks' links, which the
 * simulator does not share (a rank in the root's node never runs the other nodes'
 * allgather). */
#define ROLE_ROOT_OUT  MXH_MAX_LEVELS
#define ROLE_ROOT_IN   (2 * MXH_MAX_LEVELS)
#define ROLE_OTHER     (3 * MXH_MAX_LEVELS)
#define ROLE_OTHER_OUT (4 * MXH_MAX_LEVELS)
#define NRES           (5 * MXH_MAX_LEVELS)

typedef struct stage_cost {
    mxh_cost_phases_t ph[NSLOT];
    int    res[NSLOT][MXH_COST_MAX_PHASES];  /* each phase's link resource */
    int    res2[NSLOT][MXH_COST_MAX_PHASES]; /* its second one (-1: none) */
    int    level[NSLOT];         /* -1: a copy */
    double region[NSLOT];        /* bytes of the slot's step (light stages) */
    double link[NRES];           /* byte time per link resource */
    double dlink[NRES];          /* the part of it in direct exchanges (or radix) along a
                                    torus ring of more than 2 nodes (torus_spread) */
    double cpu;                  /* reductions and copies */
    double scpu[NSLOT];          /* the same by slot */
    int    gate_ph[NSLOT];       /* > 0: ... or has done that many phases of it (a
                                    role that runs only the first phases there) */
    int    gate[NSLOT];          /* window: fragment f enters slot s when fragment
                                    f - W has left slot gate[s] (-1: no such rule;
                                    the first slot's is the admission) */
    int    rooted;               /* bcast/reduce: every stage runs on other ranks */
    int    rreduce[NSLOT];       /* a rootless reduce step (exec.c: four fragments) */
    int    rbcast_net[NSLOT];    /* a rootless bcast step on the network (three) */
    int    stagger[NSLOT];       /* a rootless bcast (reduce) step of 3+ members (exec.c
                                    stream_stagger: fragment f enters once f - 1
                                    has left its first phase, the scatter) */
} stage_cost_t;

/* The resource of side @root (mxh_cost_phases_t) of a step at @level; @holder:
 * a bcast/reduce step of a holder's group. Above the first level on the NIC (the
 * spine), the root side is the root's node's NICs (the rail's root side: the
 * root's node's ranks hold the window that paces the others, RESULTS.md section
 * 5) and the other side the non-holder groups'. */
static int side_res(const mxh_cost_model_t *m, int level, int holder, int root)
{
    int r = m->res[level], first = r == level;
    if (!holder || root < 0)
        return r;
    switch (root) {
    case MXH_COST_ROOT_OUT:
        return r + ROLE_ROOT_OUT;
    case MXH_COST_ROOT_IN:
        return r + ROLE_ROOT_IN;
    case MXH_COST_OTHERS_OUT:
        return r + (first ? ROLE_OTHER_OUT : 0);
    default:
        return r + (first ? ROLE_OTHER : 0);
    }
}

/* A step at @stage; @holder: a bcast/reduce step of a holder's group, whose
 * phases go through the root's link or the others' (mxh_cost_phases_t.root). */
static void add_role(const mxh_cost_model_t *m, stage_cost_t *sc, int stage, int level,
                     mxh_step_type_t type, double bytes, int holder)
{
    mxh_cost_phases_t *ph = &sc->ph[1 + stage];
    if (bytes < 1)
        bytes = 1;
    mxh_cost_step_phases(m, level, type, (size_t)bytes, ph);
    sc->level[1 + stage]   = level;
    sc->region[1 + stage]  = bytes;
    sc->rreduce[1 + stage] = holder && type == MXH_STEP_REDUCE;
    sc->rbcast_net[1 + stage] = holder && type == MXH_STEP_BCAST && m->net[level];
    /* plan.c mxh_step_staggered: the rootless step (the direct algorithm) of more
     * than two members; on the network where it binds the stream (exec.c
     * stream_staggers; the node's region is the path's first, set before) */
    sc->stagger[1 + stage] =
        holder &&
        (type == MXH_STEP_BCAST || (type == MXH_STEP_REDUCE && m->net[level] && m->rstagger)) &&
        m->gsize[level] > 2 && choose(m, level, type, (size_t)bytes) == MXH_P2P_DIRECT &&
        (!m->net[level] || sc->level[1 + 0] != 0 ||
         mxh_cost_net_binds(m, level, (size_t)bytes, m->gsize[level],
                            (size_t)sc->region[1 + 0], m->gsize[0]));
    for (int i = 0; i < ph->n; i++) {
        int res = side_res(m, level, holder, ph->ph[i].root);
        sc->res[1 + stage][i]  = res;
        sc->res2[1 + stage][i] = -1;
        if (holder && ph->ph[i].root2 >= 0 && ph->ph[i].link2 > 0) {
            int r2 = side_res(m, level, holder, ph->ph[i].root2);
            sc->res2[1 + stage][i] = r2;
            sc->link[r2] += ph->ph[i].link2;
        }
        sc->link[res] += ph->ph[i].link;
        sc->cpu += ph->ph[i].cpu;
        sc->scpu[1 + stage] += ph->ph[i].cpu;
    }
    if (m->ring[level] && m->gsize[level] > 2 && choose(m, level, type, (size_t)bytes) != MXH_P2P_RING)
        for (int i = 0; i < ph->n; i++)
            sc->dlink[sc->res[1 + stage][i]] += ph->ph[i].link;
}

static void add(const mxh_cost_model_t *m, stage_cost_t *sc, int stage, int level,
                mxh_step_type_t type, double bytes)
{
    add_role(m, sc, stage, level, type, bytes, 0);
}

/* The spread exchange (plan.c build_allreduce_spread, p2p.c spread_post): one exchange
 * at the farthest network level's latency, ceil(P/g) copies of the region through the
 * NIC each way, (P/g - 1) two-input reductions. Booked on that level's links. */
static void add_spread(const mxh_cost_model_t *m, stage_cost_t *sc, int stage, double bytes)
{
    mxh_cost_phases_t *ph = &sc->ph[1 + stage];
    int far = -1, g = m->gsize[0], per = (m->spread + g - 1) / g;
    for (int l = 0; l < m->nlevels; l++)
        if (m->net[l] && (far < 0 || m->lvl[l].alpha > m->lvl[far].alpha))
            far = l;
    if (far < 0 || bytes < 1)
        return;
    ph->n = 0;
    phase(ph, alpha(m, far, bytes), per * bytes * beta(m, far, bytes),
          (per - 1) * bytes * m->gamma, per);
    sc->level[1 + stage]  = far;
    sc->region[1 + stage] = bytes;
    sc->res[1 + stage][0] = side_res(m, far, 0, ph->ph[0].root);
    sc->res2[1 + stage][0] = -1;
    sc->link[sc->res[1 + stage][0]] += ph->ph[0].link;
    sc->cpu += ph->ph[0].cpu;
    sc->scpu[1 + stage] += ph->ph[0].cpu;
}

static void copy(const mxh_cost_model_t *m, stage_cost_t *sc, int slot, double bytes)
{
    phase(&sc->ph[slot], 0, 0, bytes * m->kappa, 1);
    sc->level[slot] = -1;
    sc->cpu += bytes * m->kappa;
    sc->scpu[slot] += bytes * m->kappa;
}

/* The latency extra (tune.h) of a rootless step of @region bytes at @level */
static int latency_extra(const mxh_cost_model_t *m, int level, double region)
{
    if (level < 0 || level >= m->nlevels || m->gsize[level] < 2)
        return 0;
    double msg = (double)(size_t)(region / (m->gsize[level] - 1));
    return mxh_tune_latency_extra(alpha(m, level, msg), region * beta(m, level, msg));
}

static mxh_cost_variant_t plan_variant(const mxh_cost_model_t *m, size_t count, size_t tsize)
{
    size_t copies = 0, bytes = count * tsize;
    for (int l = 0; l < m->nlevels; l++)
        if (m->net[l])
            copies += (size_t)(m->gsize[l] - 1);
    if (m->spread > 0 && bytes <= MXH_PLAN_LATENCY_BYTES) {
        size_t g = (size_t)m->gsize[0], per = ((size_t)m->spread + g - 1) / g;
        if (per * bytes <= MXH_PLAN_SPREAD_NET_BYTES)
            return MXH_COST_SPREAD;
    }
    if (!m->tmixed && bytes <= MXH_PLAN_LATENCY_BYTES &&
        copies * bytes <= MXH_PLAN_LATENCY_NET_BYTES) /* plan.c: not where rails differ */
        return MXH_COST_LATENCY;
    if (m->nlevels >= 2 && !m->net[0] && copies > 0) {
        size_t g = (size_t)m->gsize[0], piece = (count + g - 1) / g * tsize;
        if (copies * piece <= MXH_PLAN_HYBRID_NET_BYTES)
            return MXH_COST_HYBRID;
    }
    return MXH_COST_RS;
}

/* The stage costs of one fragment of @c elements (per block for block collectives). */
static void frag_cost(const mxh_cost_model_t *m, mxh_coll_t coll, size_t c, size_t tsize,
                      mxh_cost_variant_t variant, int nfrag, stage_cost_t *sc)
{
    int top = m->nlevels - 1;
    double n = (double)c * (double)tsize, reg;
    memset(sc, 0, sizeof(*sc));
    for (int k = 0; k < NSLOT; k++) {
        sc->level[k] = sc->gate[k] = -1;
        for (int i = 0; i < MXH_COST_MAX_PHASES; i++)
            sc->res2[k][i] = -1;
    }

    switch (coll) {
    case MXH_COLL_ALLREDUCE:
        if (variant == MXH_COST_PLAN)
            variant = plan_variant(m, c, tsize);
        if (variant == MXH_COST_SPREAD && m->spread > 0) {
            add(m, sc, 0, 0, MXH_STEP_ALLREDUCE, n);
            add_spread(m, sc, 1, n);
            add(m, sc, 2 * top, 0, MXH_STEP_ALLREDUCE, n);
        } else if (variant == MXH_COST_LATENCY) {
            for (int l = 0; l <= top; l++)
                add(m, sc, l, l, MXH_STEP_ALLREDUCE, n);
        } else if (variant == MXH_COST_HYBRID && m->nlevels >= 2) {
            add(m, sc, 0, 0, MXH_STEP_REDUCE_SCATTER, n);
            for (int l = 1; l <= top; l++)
                add(m, sc, l, l, MXH_STEP_ALLREDUCE, n / m->gsize[0]);
            add(m, sc, 2 * top, 0, MXH_STEP_ALLGATHER, n);
        } else {
            reg = n;
            for (int l = 0; l < top; l++) {
                add(m, sc, l, l, MXH_STEP_REDUCE_SCATTER, reg);
                reg /= m->gsize[l];
            }
            add(m, sc, top, top, MXH_STEP_ALLREDUCE, reg);
            for (int l = top - 1; l >= 0; l--) {
                reg *= m->gsize[l];
                add(m, sc, 2 * top - l, l, MXH_STEP_ALLGATHER, reg);
            }
        }
        break;
    case MXH_COLL_REDUCE_SCATTER_BLOCK:
        reg = n * m->nranks;
        copy(m, sc, 0, reg); /* every block's piece packed into the work buffer */
        for (int l = 0; l <= top; l++) {
            add(m, sc, l, l, MXH_STEP_REDUCE_SCATTER, reg);
            reg /= m->gsize[l];
        }
        copy(m, sc, 2 * m->nlevels, n); /* my block out */
        break;
    case MXH_COLL_ALLGATHER:
        reg = n * m->nranks;
        for (int l = 0; l < top; l++)
            reg /= m->gsize[l];
        add(m, sc, top, top, MXH_STEP_ALLGATHER, reg);
        for (int l = top - 1; l >= 0; l--) {
            reg *= m->gsize[l];
            add(m, sc, 2 * top - l, l, MXH_STEP_ALLGATHER, reg);
        }
        /* fragment-major work buffer: my piece in, every block's piece out (one
         * fragment in rank order needs neither: only a single level does) */
        if (nfrag > 1 || m->nlevels > 1) {
            copy(m, sc, 0, n);
            copy(m, sc, 2 * m->nlevels, n * m->nranks);
        }
        break;
    case MXH_COLL_BCAST:
        /* the root's group bcasts the whole region at every level below the top
         * (holders' groups), the top bcasts my piece, the groups without a
         * holder allgather on the way down. A rank of role k (its groups hold
         * the data from level k up; k = 0: the root's node) runs stages k .. top
         * and, k > 0, the allgathers 2 top - k + 1 .. 2 top. */
        reg = n;
        for (int l = 0; l <= top; l++) {
            add_role(m, sc, l, l, MXH_STEP_BCAST, reg, 1);
            reg /= m->gsize[l];
        }
        reg *= m->gsize[top];
        for (int l = top - 1; l >= 0; l--) {
            reg *= m->gsize[l];
            add(m, sc, 2 * top - l, l, MXH_STEP_ALLGATHER, reg);
        }
        sc->rooted = 1;
        sc->gate[1 + 0] = 1 + top;
        /* the root's node's ranks only scatter in the top level's rootless step:
         * their part of it is its first phase */
        if (sc->ph[1 + top].n > 1 && sc->ph[1 + top].ph[0].root == MXH_COST_ROOT_OUT)
            sc->gate_ph[1 + 0] = 1;
        /* role k's last stages are the last k allgathers; on the fragments' one
         * path the slots before them are other roles' allgathers of about the
         * same time: its window closes as the path leaves the k-th after the top */
        for (int k = 1; k <= top; k++)
            sc->gate[1 + k] = 1 + top + k;
        break;
    case MXH_COLL_REDUCE:
        /* the mirror: reduce-scatter up in the groups without a holder, reduce on
         * top, the holders' groups reduce the whole region to the holder on the
         * way down. Role k runs stages 0 .. k - 1 and top .. 2 top - k; the
         * input's copy (a root's node rank, whose first step is not a
         * reduce-scatter of the whole region) overlaps the others' first stages
         * and is left out. */
        reg = n;
        for (int l = 0; l < top; l++) {
            add(m, sc, l, l, MXH_STEP_REDUCE_SCATTER, reg);
            reg /= m->gsize[l];
        }
        add_role(m, sc, top, top, MXH_STEP_REDUCE, reg, 1);
        for (int l = top - 1; l >= 0; l--) {
            reg *= m->gsize[l];
            add_role(m, sc, 2 * top - l, l, MXH_STEP_REDUCE, reg, 1);
        }
        sc->rooted = 1;
        sc->gate[1 + top] = 1 + 2 * top;
        if (top > 0)
            sc->gate[1 + 0] = 1 + 2 * top - 1;
        break;
    default:
        break;
    }
}

static int modelled(const mxh_cost_model_t *m, mxh_coll_t coll)
{
    if (coll < 0 || coll >= MXH_COLL_NSCHED) /* the collectives with schedules */
        return 0;
    if (m->trails > 0 && mxh_coll_info(coll)->rooted)
        return 0; /* plan.c's scatter shape on ring levels: not described */
    return m->grid && m->nlevels >= 1;
}

/* The stream simulation's fragment states (stream_sim) */
enum { WAIT, PACE, DELAY, LINK, CPU, DONE };
typedef struct sim {
    const mxh_cost_model_t *m;
    const stage_cost_t     *kinds;
    const int              *kind_of, *slots, *k, *ph, *mode;
    double                 *t, *rate;
    const double           *hold, *next_ok;
} sim_t;

/* The time of the next event of fragments [@lo, @hi) from @now (HUGE_VAL: none), the
 * flows on the links advanced to it: bytes share their link resources by messages; a
 * phase with a second link set moves at the pace of the slower of the two. */
static double sim_next_event(const sim_t *S, size_t lo, size_t hi, double now)
{
    const stage_cost_t *kinds = S->kinds;
    const int *kind_of = S->kind_of, *slots = S->slots, *k = S->k, *ph = S->ph;
    const int *mode = S->mode;
    double *t = S->t, *rate = S->rate;
    const double *hold = S->hold, *next_ok = S->next_ok;
    const mxh_cost_model_t *m = S->m;
#define PH(f) (&kinds[kind_of[f]].ph[slots[k[f]]].ph[ph[f]])
#define RES(f) (kinds[kind_of[f]].res[slots[k[f]]][ph[f]])
#define RES2(f) (kinds[kind_of[f]].res2[slots[k[f]]][ph[f]])
    double nlink[NRES] = {0};
    double tn = HUGE_VAL;
    for (size_t f = lo; f < hi; f++)
        if (mode[f] == LINK) {
            nlink[RES(f)] += PH(f)->flows;
            if (RES2(f) >= 0)
                nlink[RES2(f)] += PH(f)->flows2;
        }
    for (size_t f = lo; f < hi; f++) {
        if (mode[f] == LINK) { /* seconds of the first set's bytes per second */
            rate[f] = PH(f)->flows / nlink[RES(f)];
            if (RES2(f) >= 0) {
                double r2 = PH(f)->flows2 / nlink[RES2(f)] * PH(f)->link / PH(f)->link2;
                rate[f] = r2 < rate[f] ? r2 : rate[f];
            }
        }
        double e = mode[f] == LINK ? now + t[f] / rate[f]
                   : mode[f] == WAIT && hold[f] > now && hold[f] < HUGE_VAL ? hold[f]
                   : mode[f] == DELAY || mode[f] == CPU ? t[f]
                   : mode[f] == PACE ? next_ok[m->res[kinds[kind_of[f]].level[slots[k[f]]]]]
                                     : HUGE_VAL;
        tn = e < tn ? e : tn;
    }
    if (tn == HUGE_VAL)
        return tn;
    /* a flow that ends at tn is done: set, not computed, so that every event ends
     * something even where tn - now is below the clock's resolution (a late clock:
     * slow links, huge messages) */
    for (size_t f = lo; f < hi; f++)
        if (mode[f] == LINK) {
            int ends = now + t[f] / rate[f] <= tn;
            t[f] -= (tn - now) * rate[f];
            if (ends || t[f] < 1e-15)
                t[f] = 0;
        }
#undef PH
#undef RES
#undef RES2
    return tn;
}

/* The stream executor, event by event: fragments @kind_of (their stage costs in
 * @kinds) through the slots; a fragment enters a slot in order, while fewer than
 * @cap[s] are on it and, for its first step, fragment f - @W has left its last
 * slot (bcast, reduce: the slot of the gate, for each role's first slot). On a
 * slot each exchange waits its latency, moves its bytes (the bytes in flight on
 * one link resource, whichever slot they belong to, share it by messages: a
 * phase of k messages at once gets k shares), then
 * reduces. Returns when the last fragment leaves, -1 without memory. */
static double stream_sim(const mxh_cost_model_t *m, const stage_cost_t *kinds,
                         const int *kind_of, int big, const int *cap, int W, size_t nf)
{
    /* pacing: per level link, no exchange posted before next_ok; its booked bytes
     * cross by free_at (exec.c books a rank's own links: here by the level's link
     * resource, whatever the role) */
    double next_ok[MXH_MAX_LEVELS] = {0}, free_at[MXH_MAX_LEVELS] = {0};
    int pace = m->pace && !kinds[big].rooted; /* coll.c: bcast and reduce stream unpaced */
    int slots[NSLOT], pos[NSLOT], gate[NSLOT], gph0 = 0, ns = 0;
    for (int s = 0; s < NSLOT; s++) {
        pos[s] = ns;
        if (kinds[big].ph[s].n > 0)
            slots[ns++] = s;
    }
    /* gates by position: left position j = its k beyond j (or done) */
    for (int i = 0; i < ns; i++) {
        int g = kinds[big].gate[slots[i]];
        gate[i] = g < 0 ? (i == 0 ? ns - 1 : -1) : (pos[g] < ns ? pos[g] : ns - 1);
    }
    if (gate[0] < 0)
        gate[0] = ns - 1;
    else
        gph0 = kinds[big].gate_ph[slots[0]];
#define GATE_PASSED(g) /* fragment g has left position gate[0] (its role's part) */    \
    (mode[g] == DONE || k[g] > gate[0] ||                                            \
     (gph0 > 0 && k[g] == gate[0] && mode[g] != WAIT && ph[g] >= gph0))
    int *k = calloc(nf, sizeof(int)), *ph = calloc(nf, sizeof(int)),
        *mode = calloc(nf, sizeof(int));
    double *t = calloc(nf, sizeof(double)), *done = calloc(nf, sizeof(double));
    double *rate = calloc(nf, sizeof(double));
    double *t_in = calloc(nf, sizeof(double)), *hold = calloc(nf, sizeof(double));
    size_t next[NSLOT] = {0}, lo = 0, hi = 0; /* fragments [lo, hi) have entered */
    int act[NSLOT] = {0};
    double now = 0;
    const sim_t S = {m, kinds, kind_of, slots, k, ph, mode, t, rate, hold, next_ok};
    if (!k || !ph || !mode || !t || !done || !rate || !t_in || !hold) {
        free(k), free(ph), free(mode), free(t), free(done), free(rate), free(t_in), free(hold);
        return -1;
    }
    while (lo < nf) {
        /* settle everything due now: admissions and zero-length states */
        for (int changed = 1; changed;) {
            changed = 0;
            while (hi < nf && (hi < (size_t)W || GATE_PASSED(hi - (size_t)W)))
                hi++; /* window: fragment f waits for f - W to be done (to have
                         left the gate's slot) */
            for (size_t f = lo; f < hi; f++) {
                const mxh_cost_phases_t *P = NULL;
                int s = k[f] < ns ? slots[k[f]] : -1;
                if (mode[f] == DONE)
                    continue;
                P = &kinds[kind_of[f]].ph[s];
                if (mode[f] == WAIT) {
                    if (next[s] != f || act[s] >= cap[s])
                        continue;
                    if (k[f] > 0 && gate[k[f]] >= 0 && f >= (size_t)W &&
                        mode[f - (size_t)W] != DONE && k[f - (size_t)W] <= gate[k[f]])
                        continue; /* this role's window is full */
                    if (kinds[kind_of[f]].stagger[s] && f > 0 && k[f - 1] == k[f] &&
                        mode[f - 1] != WAIT && mode[f - 1] != DONE && ph[f - 1] == 0) {
                        /* fragment f - 1 still receives its scatter; with exec.c's
                         * link times f goes its bytes' time after f - 1 entered (a
                         * reduce's: when f - 1 has left its reduce-scatter) */
                        hold[f] = m->ahead && !kinds[kind_of[f]].rreduce[s]
                                      ? t_in[f - 1] + kinds[kind_of[f - 1]].ph[s].ph[0].link
                                      : HUGE_VAL;
                        if (hold[f] > now + 1e-15)
                            continue;
                    }
                    hold[f] = 0;
                    t_in[f] = now;
                    next[s]++;
                    if (P->n == 0) { /* nothing here for this fragment's size */
                        changed = 1;
                        goto leave;
                    }
                    act[s]++;
                    ph[f]   = 0;
                    mode[f] = PACE;
                    changed = 1;
                }
                if (mode[f] == PACE) {
                    /* exec.c's pacing: an exchange is posted once its latency would end
                     * as the bytes booked on its link have crossed; it books its own */
                    int lv    = kinds[kind_of[f]].level[s];
                    int chain = P->ph[ph[f]].chain;
                    if (pace && lv >= 0 && !chain && next_ok[m->res[lv]] > now + 1e-15)
                        continue;
                    if (pace && lv >= 0 && !chain) { /* it books its chain's bytes too */
                        int r       = m->res[lv];
                        double a    = P->ph[ph[f]].alpha, link = P->ph[ph[f]].link;
                        for (int j = ph[f] + 1; j < P->n && P->ph[j].chain; j++)
                            link += P->ph[j].link;
                        free_at[r] = (now + a > free_at[r] ? now + a : free_at[r]) + link;
                        next_ok[r] = free_at[r] - a;
                    }
                    mode[f] = DELAY;
                    t[f]    = now + P->ph[ph[f]].alpha;
                    changed = 1;
                }
                if (mode[f] == DELAY && t[f] <= now) {
                    mode[f] = LINK;
                    t[f]    = P->ph[ph[f]].link;
                    changed = 1;
                }
                if (mode[f] == LINK && t[f] <= 1e-15) {
                    mode[f] = CPU;
                    t[f]    = now + P->ph[ph[f]].cpu;
                    changed = 1;
                }
                if (mode[f] == CPU && t[f] <= now) {
                    changed = 1;
                    if (++ph[f] < P->n) {
                        mode[f] = PACE;
                        f--; /* settle its next phase now if it is empty */
                        continue;
                    }
                    act[s]--;
                leave:
                    if (++k[f] < ns) {
                        mode[f] = WAIT;
                    } else {
                        mode[f] = DONE;
                        done[f] = now;
                    }
                }
            }
            while (lo < hi && mode[lo] == DONE)
                lo++;
        }
        if (lo >= nf)
            break;
        double tn = sim_next_event(&S, lo, hi, now);
        if (tn == HUGE_VAL)
            break; /* cannot happen: something is always running */
        now = tn;
    }
    double T = 0;
    for (size_t f = 0; f < nf; f++)
        T = done[f] > T ? done[f] : T;
    free(k), free(ph), free(mode), free(t), free(done), free(rate), free(t_in), free(hold);
#undef GATE_PASSED
    return T;
}

/* The reduce's stagger only where predicted this much faster: a small predicted gain
 * can simulate as a loss, a large one holds (RESULTS.md section 5, "Staggered on the
 * network too"). */
#define RSTAGGER_MARGIN 0.05

/* The reduce's predictions staggered (*@ts) and not (*@tn); 1 if the stagger wins */
static int rstagger_both(const mxh_cost_model_t *m, size_t count, size_t tsize,
                         size_t frag_bytes, mxh_cost_variant_t variant, double *ts, double *tn)
{
    mxh_cost_model_t c = *m;
    c.rstagger         = 1;
    *ts                = mxh_cost_predict(&c, MXH_COLL_REDUCE, count, tsize, frag_bytes, variant);
    c.rstagger         = 0;
    *tn                = mxh_cost_predict(&c, MXH_COLL_REDUCE, count, tsize, frag_bytes, variant);
    return *ts > 0 && *tn > 0 && *ts < *tn * (1 - RSTAGGER_MARGIN);
}

/* The rsag pick only where predicted this much faster: radix's one latency per step is
 * what the latency plans are built on, the pick only changes pipelines whose NIC binds,
 * such as the spine's small steps of a large allreduce (RESULTS.md section 5, "Half the
 * spine's bytes"). */
#define RSAG_MARGIN 0.01

/* Whether an allreduce plan can have an allreduce step that radix would run on a
 * network level (choose(): up to P2P_SMALL bytes, a group radix can factor) */
static int rsag_relevant(const mxh_cost_model_t *m, mxh_coll_t coll)
{
    int fac[32];
    for (int l = 0; l < m->nlevels && coll == MXH_COLL_ALLREDUCE; l++)
        if (m->net[l] && m->gsize[l] > 1 && radix_factors(m->gsize[l], fac) > 0)
            return 1;
    return 0;
}

/* The predictions with small network allreduce steps as reduce-scatter + allgather
 * (*@ty) and as radix (*@tn); 1 if the former wins by RSAG_MARGIN */
static int rsag_both(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count, size_t tsize,
                     size_t frag_bytes, mxh_cost_variant_t variant, double *ty, double *tn)
{
    mxh_cost_model_t c = *m;
    c.rsag             = 0;
    *tn                = mxh_cost_predict(&c, coll, count, tsize, frag_bytes, variant);
    if (!rsag_relevant(m, coll)) {
        *ty = *tn;
        return 0;
    }
    c.rsag = 1;
    *ty    = mxh_cost_predict(&c, coll, count, tsize, frag_bytes, variant);
    return *ty > 0 && *tn > 0 && *ty < *tn * (1 - RSAG_MARGIN);
}

int mxh_cost_rsag_pick(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count, size_t tsize,
                       size_t frag_bytes, double *t_rsag, double *t_radix)
{
    double ty = -1, tn = -1;
    int pick = m->rsag == 1;
    if (m->rsag == 2)
        pick = rsag_both(m, coll, count, tsize, frag_bytes, MXH_COST_PLAN, &ty, &tn);
    if (t_rsag)
        *t_rsag = ty;
    if (t_radix)
        *t_radix = tn;
    return pick;
}

int mxh_cost_rstagger_pick(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count,
                           size_t tsize, size_t frag_bytes)
{
    double ts, tn;
    if (coll != MXH_COLL_REDUCE || m->rstagger != 2)
        return m->rstagger == 1;
    return rstagger_both(m, count, tsize, frag_bytes, MXH_COST_PLAN, &ts, &tn);
}

static double predict_grid(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count,
                           size_t tsize, size_t frag_bytes, mxh_cost_variant_t variant);

/* ---- the torus split ----------------------------------------------------------------- */

/* Rail @c of a torus model as a grid of its own: its group sizes, and per level its
 * share of the link (@shared) or the whole link (the floor's byte times). */
static void torus_rail(const mxh_cost_model_t *m, int c, int shared, mxh_cost_model_t *r)
{
    *r        = *m;
    r->trails = 0;
    for (int l = 0; l < m->nlevels; l++) {
        r->gsize[l] = m->tgsize[c][l];
        if (m->tlink[c][l] >= 0) { /* a dimension: its rings, its own links */
            r->lvl[l].alpha = m->talpha;
            r->lvl[l].beta  = shared ? m->tbeta[c][l] : m->tlink_beta;
            r->ring[l]      = 1;
            r->res[l]       = l;
        }
    }
}

void mxh_cost_model_torus_rail(const mxh_cost_model_t *m, int c, mxh_cost_model_t *r)
{
    if (m->trails > 0 && c >= 0 && c < m->trails)
        torus_rail(m, c, 1, r);
    else
        *r = *m;
}

/* 1 when rail @c runs as an earlier rail does (same group sizes and shares). */
static int torus_seen(const mxh_cost_model_t *m, int c)
{
    for (int o = 0; o < c; o++)
        if (!memcmp(m->tgsize[o], m->tgsize[c], sizeof(m->tgsize[c])) &&
            !memcmp(m->tbeta[o], m->tbeta[c], sizeof(m->tbeta[c])))
            return 1;
    return 0;
}

/* Every rail's byte time per level over all fragments, each torus level at the whole
 * link's speed (the node level at NVLink's): t[c][l], of which d[c][l] in direct
 * exchanges along a ring of 3 or more nodes (torus_spread). */
typedef struct {
    double t[MXH_COST_RAILS][MXH_MAX_LEVELS];
    double d[MXH_COST_RAILS][MXH_MAX_LEVELS];
} torus_bytes_t;

/* 0, or -1 without memory. */
static int torus_bytes(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count, size_t tsize,
                       size_t frag_bytes, mxh_cost_variant_t variant, torus_bytes_t *tb)
{
    size_t nf = mxh_cost_frags(m, coll, count, tsize, frag_bytes, NULL, 0);
    size_t *sizes = nf > 0 && nf <= MAX_FRAGS_MODELLED ? malloc(nf * sizeof(*sizes)) : NULL;
    stage_cost_t *sc = malloc(sizeof(*sc));
    mxh_cost_model_t *r = malloc(sizeof(*r));
    if (sizes == NULL || sc == NULL || r == NULL) {
        free(sizes), free(sc), free(r);
        return -1;
    }
    mxh_cost_frags(m, coll, count, tsize, frag_bytes, sizes, nf);
    memset(tb, 0, sizeof(*tb));
    for (int c = 0; c < m->trails; c++) {
        torus_rail(m, c, 0, r);
        for (size_t f = 0; f < nf; f++) {
            if (f == 0 || sizes[f] != sizes[f - 1])
                frag_cost(r, coll, sizes[f], tsize, variant, (int)nf, sc);
            for (int l = 0; l < m->nlevels; l++) {
                tb->t[c][l] += sc->link[l];
                tb->d[c][l] += sc->dlink[l];
            }
        }
    }
    free(sizes), free(sc), free(r);
    return 0;
}

/* Where rail @c's level @l puts its byte time @t (of which @d direct) on the six torus
 * link directions (2 x dimension, + then -): @w[i]. A ring sends every byte to the
 * next node over its own direction. A direct exchange along a ring of p nodes sends
 * each peer its part by the shortest way round (p2p.c), the peer at distance k over
 * k links, a tie (p even) the + way (gen_platform.py's routes): of its p - 1 parts the
 * + direction carries S + p/2 link crossings, the - direction S (S = 1 + ... +
 * floor((p - 1) / 2)): on a ring of 4 the whole byte time on + and a third on -, where
 * the ring puts the whole on its one direction. Returns 0 where the level is not on
 * the torus. */
static int torus_spread(const mxh_cost_model_t *m, int c, int l, double t, double d, double *w)
{
    int e = m->tlink[c][l], p = m->tgsize[c][l];
    memset(w, 0, 6 * sizeof(*w));
    if (e < 0)
        return 0;
    w[e] += t - d;
    if (d > 0 && p > 2) {
        int half = (p - 1) / 2, S = half * (half + 1) / 2;
        w[e & ~1] += d * (S + (p % 2 == 0 ? p / 2 : 0)) / (p - 1);
        w[(e & ~1) + 1] += d * S / (p - 1);
    }
    return 1;
}

/* The floor of a torus schedule from torus_bytes' @tb: the busiest torus link direction
 * (every rail's bytes on it), NIC (a rail's bytes over its dimensions) or NVLink. */
static double torus_floor(const mxh_cost_model_t *m, const torus_bytes_t *tb)
{
    double load[6] = {0}, w[6], most = 0;
    for (int c = 0; c < m->trails; c++) {
        double nic = 0;
        for (int l = 0; l < m->nlevels; l++) {
            if (!torus_spread(m, c, l, tb->t[c][l], tb->d[c][l], w)) {
                most = tb->t[c][l] > most ? tb->t[c][l] : most;
                continue;
            }
            for (int i = 0; i < 6; i++)
                load[i] += w[i];
            nic += tb->t[c][l] / m->tlink_beta * m->tnic_beta;
        }
        most = nic > most ? nic : most;
    }
    for (int i = 0; i < 6; i++)
        most = load[i] > most ? load[i] : most;
    return most;
}

/* The slowest rail (each a grid of its own sizes and shares), at least the floor. One
 * fragment: the rails cross their l-th levels together, a link's share is per rail on
 * it at that level (tbeta). A pipeline: every stage of every rail is in flight at once,
 * so a link direction is shared by all the rails' levels on it, each getting it in
 * proportion to its bytes (all finish together, as max-min does for flows that start
 * together and keep their rates): a level's bytes take as long as the busiest direction
 * they cross (torus_spread) takes for all its bytes: beta = that direction's bytes over
 * the level's bytes times the link's beta, never less than the NIC's. */
static double torus_predict(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count,
                            size_t tsize, size_t frag_bytes, mxh_cost_variant_t variant)
{
    double T = 0, load[6] = {0}, w[6];
    torus_bytes_t *tb = malloc(sizeof(*tb));
    mxh_cost_model_t *r = malloc(sizeof(*r)), *pm = malloc(sizeof(*pm));
    size_t nf = mxh_cost_frags(m, coll, count, tsize, frag_bytes, NULL, 0);
    if (r == NULL || tb == NULL || pm == NULL ||
        torus_bytes(m, coll, count, tsize, frag_bytes, variant, tb) != 0) {
        free(r), free(tb), free(pm);
        return -1;
    }
    *pm = *m;
    if (nf > 1) {
        for (int c = 0; c < m->trails; c++)
            for (int l = 0; l < m->nlevels; l++)
                if (torus_spread(m, c, l, tb->t[c][l], tb->d[c][l], w))
                    for (int i = 0; i < 6; i++)
                        load[i] += w[i];
        for (int c = 0; c < m->trails; c++)
            for (int l = 0; l < m->nlevels; l++) {
                double busiest = 0;
                if (!torus_spread(m, c, l, tb->t[c][l], tb->d[c][l], w) || tb->t[c][l] <= 0)
                    continue;
                for (int i = 0; i < 6; i++)
                    busiest = w[i] > 0 && load[i] > busiest ? load[i] : busiest;
                double b = m->tlink_beta * busiest / tb->t[c][l];
                pm->tbeta[c][l] = b > m->tnic_beta ? b : m->tnic_beta;
            }
    }
    for (int c = 0; c < m->trails; c++) {
        if (torus_seen(pm, c))
            continue;
        torus_rail(pm, c, 1, r);
        double tc = predict_grid(r, coll, count, tsize, frag_bytes, variant);
        if (tc < 0) {
            T = -1;
            break;
        }
        T = tc > T ? tc : T;
    }
    double f = T < 0 ? 0 : torus_floor(m, tb);
    free(r), free(tb), free(pm);
    return f > T ? f : T;
}

/* Paced where the model predicts it faster by more than 1 %, its error on the question:
 * below that a predicted gain simulated as a loss under SimGrid's default network model,
 * above it pacing won on exact links (RESULTS.md section 5, "Pacing per schedule"). */
#define PACE_MARGIN 0.01

static int paced_wins(const mxh_cost_model_t *m, double tp, double tu)
{
    return tp < tu * (1 - (m->pace_margin > 0 ? m->pace_margin : PACE_MARGIN));
}

/* Predictions paced (*tp) and unpaced (*tu); whether pacing is the pick (unpaced only
 * where both predict and paced does not win by the margin). */
static int pace_both(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count, size_t tsize,
                     size_t frag_bytes, mxh_cost_variant_t variant, double *tp, double *tu)
{
    mxh_cost_model_t c = *m;
    c.pace_auto = 0;
    c.pace      = 1;
    *tp         = mxh_cost_predict(&c, coll, count, tsize, frag_bytes, variant);
    c.pace      = 0;
    *tu         = mxh_cost_predict(&c, coll, count, tsize, frag_bytes, variant);
    return !(*tp > 0 && *tu > 0 && !paced_wins(m, *tp, *tu));
}

double mxh_cost_predict(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count, size_t tsize,
                        size_t frag_bytes, mxh_cost_variant_t variant)
{
    if (!modelled(m, coll) || count == 0 || tsize == 0)
        return -1;
    if (m->rsag == 2) { /* mxh_cost_rsag_pick's */
        double ty, tn;
        return rsag_both(m, coll, count, tsize, frag_bytes, variant, &ty, &tn) ? ty : tn;
    }
    if (coll == MXH_COLL_REDUCE && m->rstagger == 2) { /* mxh_cost_rstagger_pick's */
        double ts, tn;
        return rstagger_both(m, count, tsize, frag_bytes, variant, &ts, &tn) ? ts : tn;
    }
    if (m->pace_auto) { /* mxh_cost_pace_pick's */
        double tp, tu;
        return pace_both(m, coll, count, tsize, frag_bytes, variant, &tp, &tu) ? tp : tu;
    }
    if (m->trails > 0)
        return torus_predict(m, coll, count, tsize, frag_bytes, variant);
    return predict_grid(m, coll, count, tsize, frag_bytes, variant);
}

int mxh_cost_kary_pick(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count, size_t tsize,
                       size_t frag_bytes, double *t_kary, double *t_direct)
{
    int any = 0;
    for (int l = 0; l < m->nlevels && m->trails == 0; l++)
        any |= kary_level(m, l);
    if (!any || (coll != MXH_COLL_ALLREDUCE && coll != MXH_COLL_REDUCE_SCATTER_BLOCK &&
                 coll != MXH_COLL_ALLGATHER))
        return 0;
    mxh_cost_model_t c = *m;
    c.kary     = 0;
    double td  = mxh_cost_predict(&c, coll, count, tsize, frag_bytes, MXH_COST_PLAN);
    c.kary     = 1;
    double tk  = mxh_cost_predict(&c, coll, count, tsize, frag_bytes, MXH_COST_PLAN);
    if (t_kary)
        *t_kary = tk;
    if (t_direct)
        *t_direct = td;
    return td > 0 && tk > 0 && tk <= td * (1 + MXH_COST_KARY_MARGIN);
}

/* Pacing wins where latency is a large share of a fragment's link time and loses
 * where deep schedules (a spine stage) let paced fragments idle a link that unpaced
 * ones would fill; the model predicts both sides (RESULTS.md section 5, "Pacing per
 * schedule"). */
int mxh_cost_pace_pick(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count, size_t tsize,
                       size_t frag_bytes)
{
    double tp, tu;
    if (!m->pace_auto)
        return m->pace;
    return pace_both(m, coll, count, tsize, frag_bytes, MXH_COST_PLAN, &tp, &tu);
}

/* The stream's window and stage caps for fragments of the stage costs @sc, by the
 * tuning pass's rules (tune.h) on the model's stages; returns the window. Where the
 * model's stages differ from a rank's: its window counts the plan's stages (not the
 * copy out), a rooted collective's one per level; a copy takes one fragment; a light
 * stage at most CAP_HIST; a kary stage no extra fragments and a bcast posting ahead no
 * extra window (this sharing model gives a third fragment its share of the link at
 * once: RESULTS.md section 5, "Fewer messages on long rails"); a rootless network
 * bcast's latency extra as the part of it its cap can take. */
static int stream_caps(const mxh_cost_model_t *m, const stage_cost_t *sc, int *cap)
{
    int nst = 0, r = 0, b = 0, W;
    double most = 0;
    for (int s = 1; s < 2 * m->nlevels; s++)
        if (sc->ph[s].n > 0) {
            nst++;
            most = sc->region[s] > most ? sc->region[s] : most;
        }
    if (sc->rooted)
        nst = m->nlevels;
    int paced = m->pace && !sc->rooted;
    mxh_tune_stage_t st[NSLOT];
    for (int s = 0; s < NSLOT; s++) {
        int live  = sc->ph[s].n > 0;
        int extra = latency_extra(m, sc->level[s], sc->region[s]);
        st[s] = (mxh_tune_stage_t){.light      = sc->region[s] * MXH_TUNE_LIGHT <= most,
                                   .paced      = paced,
                                   .rreduce    = sc->rreduce[s],
                                   .rbcast_net = sc->rbcast_net[s],
                                   .ahead      = sc->stagger[s] && m->ahead,
                                   .extra      = extra};
        if (live && sc->rreduce[s])
            r += mxh_tune_stage_cap(&(mxh_tune_stage_t){.rreduce = 1, .extra = extra}, 0) - 2;
        if (live && sc->rbcast_net[s] && sc->region[s] * MXH_TUNE_LIGHT > most)
            b += mxh_tune_stage_cap(&(mxh_tune_stage_t){.rbcast_net = 1, .extra = extra}, 0) -
                 MXH_TUNE_STAGE_CAP_BCAST_NET;
    }
    W = mxh_tune_window(nst, r, paced, 0, b);
    for (int s = 0; s < NSLOT; s++)
        cap[s] = sc->level[s] < 0 ? 1 : mxh_tune_stage_cap(&st[s], W < CAP_HIST ? W : CAP_HIST);
    return W;
}

int mxh_cost_stream_caps(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count,
                         size_t tsize, size_t frag_bytes, int *cap, int ncap)
{
    if (!modelled(m, coll) || count == 0 || tsize == 0)
        return -1;
    size_t nf = mxh_cost_frags(m, coll, count, tsize, frag_bytes, NULL, 0), most = 0;
    size_t *sizes = nf > 0 && nf <= MAX_FRAGS_MODELLED ? malloc(nf * sizeof(*sizes)) : NULL;
    if (sizes == NULL)
        return -1;
    mxh_cost_frags(m, coll, count, tsize, frag_bytes, sizes, nf);
    for (size_t f = 0; f < nf; f++)
        most = sizes[f] > most ? sizes[f] : most;
    free(sizes);
    stage_cost_t sc;
    int all[NSLOT];
    frag_cost(m, coll, most, tsize, MXH_COST_PLAN, (int)nf, &sc);
    int W = stream_caps(m, &sc, all);
    for (int s = 0; s < ncap && s < NSLOT; s++)
        cap[s] = all[s];
    return W;
}

static double predict_grid(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count,
                           size_t tsize, size_t frag_bytes, mxh_cost_variant_t variant)
{
    if (!modelled(m, coll) || count == 0 || tsize == 0)
        return -1;
    size_t nf = mxh_cost_frags(m, coll, count, tsize, frag_bytes, NULL, 0);
    if (nf == 0 || nf > MAX_FRAGS_MODELLED)
        return -1;
    size_t *sizes = malloc(nf * sizeof(*sizes));
    if (sizes == NULL)
        return -1;
    mxh_cost_frags(m, coll, count, tsize, frag_bytes, sizes, nf);

    /* The stream executor (exec.c): fragments enter each stage in order; at most
     * two work on a stage at once (MXH_STREAM_STAGE_CAP: one transfers while the
     * other waits on latency), any number on a light stage (a region of at most
     * 1/32 of the largest step's), one on a copy; at most W in their stages. On a
     * stage each exchange waits its latency, then moves its bytes over the stage's
     * links, shared equally with the other fragment's bytes in flight, then runs
     * its reduction. Stages are simulated one after another (the arrivals at a
     * stage are the departures from the one before), three times, so that the
     * window (fragment f starts once fragment f - W is done) sees the departures
     * of the pass before. Levels shared by two stages (the node's reduce-scatter
     * and allgather) and the rank's reductions and copies are bounded below by
     * their totals. */
    stage_cost_t kinds[MXH_SCHED_MAX_PLANS + 2]; /* per distinct fragment size */
    size_t ksize[MXH_SCHED_MAX_PLANS + 2];
    int nkinds = 0, big = 0, cap[NSLOT], W;
    int *kind_of  = malloc(nf * sizeof(int));
    double *arr   = calloc(nf, sizeof(double)), *dep = calloc(nf, sizeof(double));
    double *last  = calloc(nf, sizeof(double));
    double link[NRES] = {0}, scpu[NSLOT] = {0}, cpu = 0, T = 0;
    if (kind_of == NULL || arr == NULL || dep == NULL || last == NULL) {
        free(kind_of), free(arr), free(dep), free(last), free(sizes);
        return -1;
    }
    for (size_t f = 0; f < nf; f++) {
        int k = 0;
        while (k < nkinds && ksize[k] != sizes[f])
            k++;
        if (k == nkinds && nkinds < MXH_SCHED_MAX_PLANS + 2) {
            frag_cost(m, coll, sizes[f], tsize, variant, (int)nf, &kinds[k]);
            ksize[k] = sizes[f];
            if (sizes[f] > ksize[big])
                big = k;
            nkinds++;
        }
        kind_of[f] = k < nkinds ? k : nkinds - 1;
        for (int r = 0; r < NRES; r++)
            link[r] += kinds[kind_of[f]].link[r];
        for (int s = 0; s < NSLOT; s++)
            scpu[s] += kinds[kind_of[f]].scpu[s];
        cpu += kinds[kind_of[f]].cpu;
    }
    if (kinds[big].rooted) { /* every stage on other ranks: the busiest stage's */
        cpu = 0;
        for (int s = 0; s < NSLOT; s++)
            cpu = scpu[s] > cpu ? scpu[s] : cpu;
    }
    W = stream_caps(m, &kinds[big], cap);
    T = stream_sim(m, kinds, kind_of, big, cap, W, nf);
    free(kind_of), free(arr), free(dep), free(last), free(sizes);
    if (T < 0)
        return -1;
    for (int r = 0; r < NRES; r++)
        T = link[r] > T ? link[r] : T;
    return cpu > T ? cpu : T;
}

double mxh_cost_bound(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count, size_t tsize)
{
    stage_cost_t sc;
    double b = 0;
    if (!modelled(m, coll))
        return -1;
    if (m->trails > 0) { /* every rail's bytes on the busiest torus link, NIC or NVLink */
        torus_bytes_t *tb = malloc(sizeof(*tb));
        if (tb == NULL || torus_bytes(m, coll, count, tsize, 0, MXH_COST_RS, tb) != 0) {
            free(tb);
            return -1;
        }
        b = torus_floor(m, tb);
        free(tb);
        return b;
    }
    /* the bytes of the fewest: network allreduces as reduce-scatter + allgather, not
     * radix's whole vector to every peer */
    mxh_cost_model_t c = *m;
    c.rsag             = 1;
    frag_cost(&c, coll, count, tsize, MXH_COST_RS, 1, &sc);
    for (int r = 0; r < NRES; r++)
        b = sc.link[r] > b ? sc.link[r] : b;
    return b;
}

/* bcast and reduce: the model is the pipelines' shape (plan.c MXH_PLAN_THROUGH);
 * schedules of fewer than MXH_SCHED_THROUGH_FRAGS fragments run the scatter shape,
 * which it does not describe: no prediction for them (selection keeps its
 * thresholds where no candidate is predicted). */
int mxh_cost_shape_modelled(mxh_coll_t coll, size_t count, size_t tsize, size_t frag_bytes)
{
    if (coll != MXH_COLL_BCAST && coll != MXH_COLL_REDUCE)
        return 1;
    size_t fcnt = mxh_sched_frag_elems(count, tsize, 1, frag_bytes);
    return (count + fcnt - 1) / fcnt >= MXH_SCHED_THROUGH_FRAGS;
}

int mxh_cost_candidates(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count, size_t tsize,
                        mxh_cost_cand_t *c, int max)
{
    int n = 0;
    size_t per = block_coll(coll) ? (size_t)m->nranks : 1, work = count * tsize * per;
    /* the ramps predicted: the model's, or both shapes where it picks (sched.h) */
    int nr = m->ramp == MXH_SCHED_RAMP_PICK ? 2 : 1;
    mxh_cost_model_t mr[2] = {*m, *m};
    mr[0].ramp = mxh_sched_ramp_run(m->ramp);
    mr[1].ramp = MXH_SCHED_RAMP_LINEAR;
    if (!modelled(m, coll))
        return 0;
#define CAND(M, A, F, NF, U, V)                                                        \
    do {                                                                              \
        if (n < max) {                                                                \
            c[n].algo = (A), c[n].frag_bytes = (F), c[n].nfrag = (NF);                \
            c[n].units = (U), c[n].ramp = (M)->ramp, c[n].variant = (V);              \
            c[n].t = mxh_cost_shape_modelled(coll, count, tsize, (F))                 \
                         ? mxh_cost_predict((M), coll, count, tsize, (F), (V))        \
                         : -1;                                                        \
            n++;                                                                      \
        }                                                                             \
    } while (0)
    CAND(&mr[0], MXH_ALGO_HIER, 0, 1, 1, MXH_COST_PLAN);
    if (coll == MXH_COLL_ALLREDUCE && m->nlevels >= 2)
        for (int v = MXH_COST_RS; v <= (m->spread ? MXH_COST_SPREAD : MXH_COST_HYBRID); v++)
            if (v != (int)plan_variant(m, count, tsize))
                CAND(&mr[0], MXH_ALGO_HIER, 0, 1, 1, (mxh_cost_variant_t)v);
    /* pipelines (select.c: at least two fragments of frag_bytes in the work) */
    size_t last_nf = 1, last_first = count;
    for (int k = 62; k >= 16; k--) { /* 256 KiB and up; below, the cap alone */
        size_t fb = (size_t)1 << k, first;
        if (fb > work / 2 || (m->frag_max > 0 && fb > m->frag_max) ||
            (k < 18 && fb != m->frag_max))
            continue;
        size_t nf = mxh_cost_frags(&mr[0], coll, count, tsize, fb, &first, 1);
        if (nf > 4096)
            break;
        if (nf == last_nf && first == last_first)
            continue;
        size_t units = mxh_sched_cut(coll, count, tsize, per, fb, 0, NULL, 0);
        if (mxh_cost_bcast_bare(m, coll, fb)) { /* no head ramp: the one candidate */
            mxh_cost_model_t bare = *m;
            bare.ramp             = 0;
            CAND(&bare, MXH_ALGO_PIPELINE, fb, units, units, MXH_COST_PLAN);
        } else {
            CAND(&mr[0], MXH_ALGO_PIPELINE, fb, nf, units, MXH_COST_PLAN);
            if (nr == 2)
                CAND(&mr[1], MXH_ALGO_PIPELINE, fb,
                     mxh_cost_frags(&mr[1], coll, count, tsize, fb, NULL, 0), units, MXH_COST_PLAN);
        }
        last_nf    = nf;
        last_first = first;
    }
#undef CAND
    return n;
}

/* Within 1 % of the fastest prediction the fewest fragments win: the model's error on
 * a fragment count is a few per cent, and each fragment costs the ranks work it does not
 * count (posting, polling), so a marginally faster prediction with many small fragments
 * loses to fewer large ones (RESULTS.md section 5, "The cost model's paced third
 * fragment and small fragments"). Counted in uniform fragments, so that of two ramps of
 * one fragment size the faster wins. */
#define CHOOSE_MARGIN 0.01

/* At most this many fragments (ramp pieces included): each costs the ranks posting and
 * completion work the model does not count, so its choices of hundreds of small fragments
 * simulated slower than it predicted while those of a few dozen held (RESULTS.md
 * section 5, "Measured parameters"). */
#define CHOOSE_MAX_FRAGS 128

int mxh_cost_choose(const mxh_cost_cand_t *c, int n)
{
    int best = -1, pick = -1;
    for (int i = 0; i < n; i++)
        if (c[i].variant == MXH_COST_PLAN && c[i].t >= 0 && c[i].nfrag <= CHOOSE_MAX_FRAGS &&
            (best < 0 || c[i].t < c[best].t))
            best = i;
    for (int i = 0; i < n && best >= 0; i++)
        if (c[i].variant == MXH_COST_PLAN && c[i].t >= 0 && c[i].nfrag <= CHOOSE_MAX_FRAGS &&
            c[i].t <= c[best].t * (1 + CHOOSE_MARGIN) &&
            (pick < 0 || c[i].units < c[pick].units ||
             (c[i].units == c[pick].units && c[i].t < c[pick].t)))
            pick = i;
    return pick;
}

void mxh_cost_sel_init(mxh_cost_sel_t *s, const mxh_config_t *cfg, const mxh_layout_t *L,
                       double margin)
{
    mxh_cost_model_init(&s->m, cfg, L);
    s->margin = margin;
    for (int i = 0; i < MXH_COST_MEMO; i++)
        s->memo[i].coll = -1;
}

int mxh_cost_select(mxh_cost_sel_t *s, mxh_coll_t coll, size_t bytes, mxh_algo_t today_algo,
                    size_t today_frag, mxh_algo_t *algo, size_t *frag, int *ramp)
{
    /* sizes in bytes: one-byte elements cut fragments of frag bytes as sched.c cuts
     * those of any element size (fragment sizes are multiples of the element) */
    size_t h = (bytes * 0x9E3779B97F4A7C15ull + (size_t)coll) % MXH_COST_MEMO;
    if (!modelled(&s->m, coll) || bytes == 0)
        return -1;
    if (s->memo[h].coll == (int)coll && s->memo[h].bytes == bytes) {
        *algo = s->memo[h].algo;
        *frag = s->memo[h].frag;
        *ramp = s->memo[h].ramp;
        return s->memo[h].kept;
    }
    mxh_cost_cand_t c[64];
    int n = mxh_cost_candidates(&s->m, coll, bytes, 1, c, 64), b = mxh_cost_choose(c, n);
    int kept = 0;
    if (b < 0)
        return -1;
    *algo = c[b].algo;
    *frag = c[b].frag_bytes;
    *ramp = c[b].ramp;
    if (s->margin > 0 && (today_algo == MXH_ALGO_HIER || today_algo == MXH_ALGO_PIPELINE)) {
        /* the thresholds' schedule runs halvings where the model picks (sched.h) */
        size_t tf    = today_algo == MXH_ALGO_PIPELINE ? today_frag : 0;
        double today = mxh_cost_predict(&s->m, coll, bytes, 1, tf, MXH_COST_PLAN);
        if (today >= 0 && c[b].t > (1 - s->margin) * today) {
            *algo = today_algo;
            *frag = tf;
            *ramp = mxh_sched_ramp_run(s->m.ramp);
            kept  = 1;
        }
    }
    s->memo[h].coll  = (int)coll;
    s->memo[h].bytes = bytes;
    s->memo[h].algo  = *algo;
    s->memo[h].frag  = *frag;
    s->memo[h].ramp  = *ramp;
    s->memo[h].kept  = kept;
    return kept;
}
