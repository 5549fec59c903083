/* Parallelism groups placed by the hierarchy (pure): see parallel.h. */
#include "config.h"

#include "decide/parallel.h"

#include "decide/cost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *mxh_parallel_span_name(mxh_parallel_span_t s)
{
    static const char *const names[] = {
        [MXH_SPAN_SELF] = "rank",  [MXH_SPAN_ISLAND] = "nvlink island", [MXH_SPAN_NODE] = "node",
        [MXH_SPAN_LEAF] = "leaf",  [MXH_SPAN_SPINE] = "spine",
    };
    return s <= MXH_SPAN_SPINE ? names[s] : "?";
}

/* A rank's place in topology order: the fields compared, outermost first. */
#define NKEYS 7
typedef struct {
    int key[NKEYS]; /* leaf, node's position in it, node, island, rail, GPU, local index */
    int rank;
} topo_key_t;

static int cmp_topo(const void *a, const void *b)
{
    const topo_key_t *x = a, *y = b;
    for (int i = 0; i < NKEYS; i++)
        if (x->key[i] != y->key[i])
            return x->key[i] < y->key[i] ? -1 : 1;
    return x->rank - y->rank;
}

/* The units of the three levels a block may have to fit, per position: an island (where
 * the layout splits nodes into islands), a node, a leaf. */
enum { UNIT_ISLAND, UNIT_NODE, UNIT_LEAF, NUNITS };
static const char *const unit_name[NUNITS] = {"NVLink island", "node", "leaf"};

/* Whether each block of @B consecutive positions lies inside one unit of @unit (ids per
 * position, units contiguous), @inside; else whether each consists of whole units. */
static int blocks_fit(const int *unit, int n, int B, int *inside)
{
    *inside = 1;
    for (int a = 0; a < n; a += B) {
        int e = a + B; /* one past the block */
        if (unit[a] == unit[e - 1])
            continue;
        *inside = 0;
        if ((a > 0 && unit[a - 1] == unit[a]) || (e < n && unit[e] == unit[e - 1]))
            return 0;
    }
    return 1;
}

static mxh_status_t resolve_sizes(int n, int ndims, int *size, char *why, size_t whylen)
{
    long prod = 1;
    int rest = -1;

    if (ndims < 1 || ndims > MXH_PARALLEL_MAX_DIMS) {
        snprintf(why, whylen, "ndims %d out of range [1, %d]", ndims, MXH_PARALLEL_MAX_DIMS);
        return MXH_ERR_INVALID_PARAM;
    }
    for (int d = 0; d < ndims; d++) {
        if (size[d] < 0 || (size[d] == 0 && rest >= 0)) {
            snprintf(why, whylen, "size %d of dimension %d: a size is positive, or 0 (the "
                                  "rest) for one dimension", size[d], d);
            return MXH_ERR_INVALID_PARAM;
        }
        if (size[d] == 0)
            rest = d;
        else if ((prod *= size[d]) > n)
            break;
    }
    if (prod > n || n % prod != 0 || (rest < 0 && prod != n)) {
        snprintf(why, whylen, "the sizes' product %s%ld does not %s the %d ranks",
                 rest >= 0 ? "(without the rest) " : "", prod, rest >= 0 ? "divide" : "equal", n);
        return MXH_ERR_INVALID_PARAM;
    }
    if (rest >= 0)
        size[rest] = (int)(n / prod);
    return MXH_OK;
}

/* Topology order of @L's ranks into @pos ([rank] -> position), and per position the ids
 * of its units, numbered in that order (a unit's positions are consecutive; @unit NULL:
 * the order alone). */
static mxh_status_t topo_order(const mxh_layout_t *L, int *pos, int *unit[NUNITS])
{
    static const int unit_keys[NUNITS] = {[UNIT_ISLAND] = 4, [UNIT_NODE] = 3, [UNIT_LEAF] = 1};
    int n = L->nranks;
    topo_key_t *k = malloc(sizeof(*k) * (size_t)(n > 0 ? n : 1));

    if (k == NULL)
        return MXH_ERR_NO_MEMORY;
    for (int r = 0; r < n; r++) {
        int v = L->node_of[r];
        k[r]  = (topo_key_t){{L->leaf_of_node[v], L->node_pos[v], v,
                              L->nislands ? L->island_of[r] : 0, L->rail[r], L->gpu_of[r],
                              L->local_index[r]},
                             r};
    }
    qsort(k, (size_t)n, sizeof(*k), cmp_topo);
    for (int p = 0; p < n; p++) {
        pos[k[p].rank] = p;
        /* a new unit where a key up to its own changes */
        for (int u = 0; unit != NULL && u < NUNITS; u++) {
            int same = p > 0;
            for (int i = 0; i < unit_keys[u] && same; i++)
                same = k[p].key[i] == k[p - 1].key[i];
            unit[u][p] = p == 0 ? 0 : unit[u][p - 1] + !same;
        }
    }
    free(k);
    return MXH_OK;
}

mxh_status_t mxh_parallel_place(const mxh_layout_t *L, int ndims, int *size, int *pos,
                                mxh_parallel_span_t *span, char *why, size_t whylen)
{
    int n = L->nranks, *unit[NUNITS] = {NULL, NULL, NULL};
    mxh_status_t st;
    long B = 1;

    if (whylen > 0)
        why[0] = '\0';
    if ((st = resolve_sizes(n, ndims, size, why, whylen)) != MXH_OK)
        return st;
    for (int u = 0; u < NUNITS; u++)
        if ((unit[u] = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1))) == NULL)
            st = MXH_ERR_NO_MEMORY;
    if (st == MXH_OK)
        st = topo_order(L, pos, unit);
    for (int d = 0; d < ndims && st == MXH_OK; d++) {
        int inside[NUNITS];
        B *= size[d];
        span[d] = size[d] == 1 ? MXH_SPAN_SELF : MXH_SPAN_SPINE;
        for (int u = NUNITS - 1; u >= 0 && st == MXH_OK; u--) {
            if (u == UNIT_ISLAND && !L->nislands)
                inside[u] = 0;
            else if (!blocks_fit(unit[u], n, (int)B, &inside[u])) {
                snprintf(why, whylen, "dimension %d: groups of %ld consecutive ranks (the "
                                      "sizes up to it) split a%s %s", d, B,
                         u == UNIT_ISLAND ? "n" : "", unit_name[u]);
                st = MXH_ERR_INVALID_PARAM;
            }
        }
        for (int u = NUNITS - 1; u >= 0 && st == MXH_OK && size[d] > 1; u--)
            if (inside[u])
                span[d] = u == UNIT_ISLAND ? MXH_SPAN_ISLAND
                          : u == UNIT_NODE ? MXH_SPAN_NODE
                                           : MXH_SPAN_LEAF;
    }
    for (int u = 0; u < NUNITS; u++)
        free(unit[u]);
    return st;
}

void mxh_parallel_group(const int *size, int d, int p, int *color, int *key)
{
    int stride = 1;
    for (int e = 0; e < d; e++)
        stride *= size[e];
    *key   = (p / stride) % size[d];
    *color = p - *key * stride;
}

mxh_status_t mxh_parallel_order(const mxh_layout_t *L, int *pos)
{
    return topo_order(L, pos, NULL);
}

mxh_parallel_span_t mxh_parallel_span_of(const mxh_layout_t *L, const int *members, int n)
{
    int same_node = 1, same_island = L->nislands > 0, same_leaf = 1, one = 1;
    for (int k = 1; k < n; k++) {
        int a = members[0], b = members[k], va = L->node_of[a], vb = L->node_of[b];
        one         = one && a == b;
        same_node   = same_node && va == vb;
        same_island = same_island && va == vb && L->island_of[a] == L->island_of[b];
        same_leaf   = same_leaf && L->leaf_of_node[va] == L->leaf_of_node[vb];
    }
    return one           ? MXH_SPAN_SELF
           : same_island ? MXH_SPAN_ISLAND
           : same_node   ? MXH_SPAN_NODE
           : same_leaf   ? MXH_SPAN_LEAF
                         : MXH_SPAN_SPINE;
}

/* The cost model's choice for @coll of @bytes (the whole vector; an all-gather's blocks
 * are its p-th parts) on model @m: seconds, or -1 with the reason in @why. */
static double predict(const mxh_cost_model_t *m, mxh_coll_t coll, size_t bytes, size_t ts,
                      char *why, size_t whylen)
{
    size_t per = coll == MXH_COLL_ALLGATHER ? (size_t)m->nranks : 1, count = bytes / (ts * per);
    mxh_cost_cand_t cand[64];
    int n, best;

    if (!m->grid) {
        snprintf(why, whylen, "the group's ranks are not a grid (uneven ranks per node or "
                              "leaf): the cost model describes grids only");
        return -1;
    }
    if (count == 0) {
        snprintf(why, whylen, "%s: fewer bytes than one element per rank", mxh_coll_name(coll));
        return -1;
    }
    n    = mxh_cost_candidates(m, coll, count, ts, cand, 64);
    best = mxh_cost_choose(cand, n);
    if (best < 0) {
        snprintf(why, whylen, "%s: no candidate the cost model describes", mxh_coll_name(coll));
        return -1;
    }
    return cand[best].t;
}

/* The layout of the ranks @members[0..p-1] of @L (member k is rank k) from their records,
 * each keeping the rail it has in @L (a forced rail: in a subset the local indices that
 * gave it may change). */
static mxh_status_t group_layout(const mxh_record_t *recs, const mxh_layout_t *L,
                                 const int *members, int p, int levels_mask,
                                 mxh_layout_t **sub)
{
    mxh_record_t *g = malloc(sizeof(*g) * (size_t)p);
    mxh_status_t st;

    if (g == NULL)
        return MXH_ERR_NO_MEMORY;
    for (int k = 0; k < p; k++) {
        g[k]      = recs[members[k]];
        g[k].rail = L->rail[members[k]];
    }
    st = mxh_layout_create(g, p, levels_mask, sub);
    free(g);
    return st;
}

/* A group's predictions, by the shape of its model: the groups of a dimension mostly
 * have one, so each shape is predicted once (@memo, @nmemo entries). */
#define COST_MEMO 8
typedef struct {
    int              nlevels, grid;
    mxh_level_type_t type[MXH_MAX_LEVELS];
    int              gsize[MXH_MAX_LEVELS];
    double           t[2];
    char             why[MXH_PARALLEL_WHY];
} cost_memo_t;

static int same_shape(const cost_memo_t *k, const mxh_cost_model_t *m)
{
    if (k->nlevels != m->nlevels || k->grid != m->grid)
        return 0;
    for (int l = 0; l < m->nlevels; l++)
        if (k->type[l] != m->type[l] || k->gsize[l] != m->gsize[l])
            return 0;
    return 1;
}

static const cost_memo_t *group_cost(const mxh_config_t *cfg, const mxh_layout_t *G,
                                     size_t bytes, size_t ts, cost_memo_t *memo, int *nmemo)
{
    static const mxh_coll_t colls[2] = {MXH_COLL_ALLREDUCE, MXH_COLL_ALLGATHER};
    mxh_cost_model_t m;
    cost_memo_t     *k;

    mxh_cost_model_init(&m, cfg, G);
    for (int i = 0; i < *nmemo; i++)
        if (same_shape(&memo[i], &m))
            return &memo[i];
    k = &memo[*nmemo < COST_MEMO ? (*nmemo)++ : COST_MEMO - 1];
    memset(k, 0, sizeof(*k));
    k->nlevels = m.nlevels;
    k->grid    = m.grid;
    for (int l = 0; l < m.nlevels; l++) {
        k->type[l]  = m.type[l];
        k->gsize[l] = m.gsize[l];
    }
    for (int c = 0; c < 2; c++)
        k->t[c] = predict(&m, colls[c], bytes, ts, k->why, sizeof(k->why));
    return k;
}

typedef struct {
    int color, key, rank;
} member_t;

static int cmp_member(const void *a, const void *b)
{
    const member_t *x = a, *y = b;
    return x->color != y->color ? (x->color < y->color ? -1 : 1) : x->key - y->key;
}

mxh_status_t mxh_parallel_cost(const mxh_config_t *cfg, const mxh_record_t *recs,
                               const mxh_layout_t *L, const int *size, int d, const int *pos,
                               size_t bytes, size_t tsize, mxh_parallel_cost_t *c)
{
    int n = L->nranks, p = size[d], nmemo = 0;
    member_t *mb = malloc(sizeof(*mb) * (size_t)(n > 0 ? n : 1));
    int *members = malloc(sizeof(int) * (size_t)(p > 0 ? p : 1));
    cost_memo_t memo[COST_MEMO];
    mxh_status_t st = MXH_OK;

    c->span = MXH_SPAN_SELF;
    c->t[0] = c->t[1] = p > 1 ? 0 : -1;
    c->why[0] = '\0';
    if (p <= 1)
        snprintf(c->why, sizeof(c->why), "groups of one rank: no collective");
    if (mb == NULL || members == NULL) {
        free(mb);
        free(members);
        return MXH_ERR_NO_MEMORY;
    }
    for (int r = 0; r < n; r++) {
        mxh_parallel_group(size, d, pos[r], &mb[r].color, &mb[r].key);
        mb[r].rank = r;
    }
    qsort(mb, (size_t)n, sizeof(*mb), cmp_member);
    for (int a = 0; a + p <= n && st == MXH_OK; a += p) { /* a group: p members in key order */
        mxh_layout_t *G = NULL;
        for (int k = 0; k < p; k++)
            members[k] = mb[a + k].rank;
        mxh_parallel_span_t s = mxh_parallel_span_of(L, members, p);
        c->span = s > c->span ? s : c->span;
        if (p <= 1 || (st = group_layout(recs, L, members, p, cfg->levels_mask, &G)) != MXH_OK)
            continue;
        const cost_memo_t *g = group_cost(cfg, G, bytes, tsize, memo, &nmemo);
        mxh_layout_destroy(G);
        if (g->why[0] && !c->why[0])
            snprintf(c->why, sizeof(c->why), "%s", g->why);
        for (int k = 0; k < 2; k++) /* the slowest group's: a step waits for every group */
            c->t[k] = c->t[k] < 0 || g->t[k] < 0 ? -1 : g->t[k] > c->t[k] ? g->t[k] : c->t[k];
    }
    free(mb);
    free(members);
    return st;
}
