#include "decide/levels.h"
#include "util/log.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mxh_record_init(mxh_record_t *rec)
{
    memset(rec, 0, sizeof(*rec));
    rec->shm_id = -1;
    rec->rail   = -1;
    rec->gpu    = -1;
}

const char *mxh_level_type_name(mxh_level_type_t type)
{
    static const char *const names[] = {"node", "rail", "spine", "island"};
    return (type >= 0 && type < MXH_LEVEL_TYPE_COUNT) ? names[type] : "?";
}

const char *mxh_level_kind_name(mxh_level_kind_t kind)
{
    static const char *const names[] = {"scatter", "leader", "top"};
    return (kind >= 0 && kind <= MXH_LEVEL_KIND_TOP) ? names[kind] : "?";
}

/* ---- dense ids by order of first appearance ---------------------------- */

typedef struct {
    int64_t key;
    int     idx;
} key_idx_t;

static int cmp_key_idx(const void *a, const void *b)
{
    const key_idx_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->idx - y->idx;
}

/* ids[i] = dense id of keys[i], ids numbered by first appearance. Returns the
 * number of distinct keys, or -1 on allocation failure. */
static int dense_ids(const int64_t *keys, int n, int *ids)
{
    key_idx_t *ki = malloc(sizeof(*ki) * (size_t)(n ? n : 1));
    key_idx_t *first = malloc(sizeof(*first) * (size_t)(n ? n : 1));
    int ngroups = 0;

    if (ki == NULL || first == NULL) {
        free(ki);
        free(first);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        ki[i].key = keys[i];
        ki[i].idx = i;
    }
    qsort(ki, (size_t)n, sizeof(*ki), cmp_key_idx);
    /* provisional group number per sorted run; remember first index of each */
    for (int i = 0; i < n; i++) {
        if (i == 0 || ki[i].key != ki[i - 1].key) {
            first[ngroups].key = ki[i].idx; /* first appearance */
            first[ngroups].idx = ngroups;
            ngroups++;
        }
        ids[ki[i].idx] = ngroups - 1;
    }
    /* renumber groups by first appearance */
    qsort(first, (size_t)ngroups, sizeof(*first), cmp_key_idx);
    int *remap = (int *)ki; /* reuse: ngroups <= n ints fit in n key_idx_t */
    for (int g = 0; g < ngroups; g++)
        remap[first[g].idx] = g;
    for (int i = 0; i < n; i++)
        ids[i] = remap[ids[i]];
    free(ki);
    free(first);
    return ngroups;
}

/* Node identity: (node name, shm_id). Sort by name to get integer keys. */
static const mxh_record_t *sort_recs;
static int cmp_node_name(const void *a, const void *b)
{
    int i = *(const int *)a, j = *(const int *)b;
    int c = strcmp(sort_recs[i].node, sort_recs[j].node);
    if (c)
        return c;
    if (sort_recs[i].shm_id != sort_recs[j].shm_id)
        return sort_recs[i].shm_id < sort_recs[j].shm_id ? -1 : 1;
    return i - j;
}

static int cmp_leaf_name(const void *a, const void *b)
{
    int i = *(const int *)a, j = *(const int *)b;
    int c = strcmp(sort_recs[i].leaf, sort_recs[j].leaf);
    return c ? c : i - j;
}

/* keys[i] = rank of recs[sel[i]] among the distinct names (by @cmp); sel holds
 * distinct ranks. Returns 0, or -1 when out of memory. */
static int name_keys(const mxh_record_t *recs, const int *sel, int n,
                     int (*cmp)(const void *, const void *), int by_leaf, int64_t *keys)
{
    int *order = malloc(sizeof(int) * (size_t)(n ? n : 1));
    int *inv = NULL, maxr = 0;
    int64_t k = -1;

    if (order == NULL)
        return -1;
    for (int i = 0; i < n; i++)
        if (sel[i] > maxr)
            maxr = sel[i];
    inv = malloc(sizeof(int) * (size_t)(maxr + 1));
    if (inv == NULL) {
        free(order);
        return -1;
    }
    memcpy(order, sel, sizeof(int) * (size_t)n);
    sort_recs = recs;
    qsort(order, (size_t)n, sizeof(int), cmp);
    for (int i = 0; i < n; i++)
        inv[sel[i]] = i;
    for (int i = 0; i < n; i++) {
        const mxh_record_t *a = &recs[order[i]];
        int same = 0;
        if (i > 0) {
            const mxh_record_t *b = &recs[order[i - 1]];
            same = by_leaf ? !strcmp(a->leaf, b->leaf)
                           : (!strcmp(a->node, b->node) && a->shm_id == b->shm_id);
        }
        if (!same)
            k++;
        keys[inv[order[i]]] = k;
    }
    free(inv);
    free(order);
    return 0;
}

/* ranks inside a node: by rail, island, GPU, then local index */
static const mxh_layout_t *sort_layout;
static int cmp_in_node(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    const mxh_layout_t *L = sort_layout;
    if (L->rail[x] != L->rail[y])
        return L->rail[x] < L->rail[y] ? -1 : 1;
    if (L->island_of[x] != L->island_of[y])
        return L->island_of[x] < L->island_of[y] ? -1 : 1;
    if (L->gpu_of[x] != L->gpu_of[y])
        return L->gpu_of[x] < L->gpu_of[y] ? -1 : 1;
    return L->local_index[x] - L->local_index[y];
}

void mxh_layout_destroy(mxh_layout_t *layout)
{
    if (layout == NULL)
        return;
    for (int l = 0; l < MXH_MAX_LEVELS; l++) {
        free(layout->color[l]);
        free(layout->coord[l]);
        free(layout->gsize[l]);
        free(layout->rep[l]);
    }
    free(layout->node_of);
    free(layout->local_index);
    free(layout->rail);
    free(layout->gpu_of);
    free(layout->island_of);
    free(layout->leaf_of_node);
    free(layout->node_pos);
    free(layout->node_first_rank);
    free(layout->leaf_first_node);
    free(layout->torus_order);
    free(layout->spread_key);
    free(layout);
}

int mxh_layout_same_order(const mxh_layout_t *L)
{
    for (int c = 1; c < L->torus_nrails; c++)
        for (int j = 0; j < L->torus_ndims; j++)
            if (L->torus_order[c * 3 + j] != L->torus_order[j])
                return 0;
    return 1;
}

int mxh_layout_grid(const mxh_layout_t *L)
{
    long prod = 1;
    for (int l = 0; l < L->nlevels; l++) {
        if (L->kind[l] != MXH_LEVEL_KIND_SCATTER && L->kind[l] != MXH_LEVEL_KIND_TOP)
            return 0;
        for (int r = 1; r < L->nranks; r++)
            if (L->gsize[l][r] != L->gsize[l][0])
                return 0;
        prod *= L->gsize[l][0];
    }
    return prod == L->nranks;
}

mxh_status_t mxh_layout_spread_init(mxh_layout_t *L)
{
    int n = L->nranks, g, P = 1;

    free(L->spread_key);
    L->spread_key = NULL;
    L->spread_p   = 0;
    if (L->nlevels < 3 || L->torus_ndims > 0 || L->type[0] != MXH_LEVEL_NODE ||
        !mxh_layout_grid(L))
        return MXH_OK;
    for (int l = 1; l < L->nlevels; l++) {
        if (L->type[l] != MXH_LEVEL_RAIL && L->type[l] != MXH_LEVEL_SPINE)
            return MXH_OK;
        P *= L->gsize[l][0];
    }
    g = L->gsize[0][0];
    if (g < 2 || g > 32 || P < g)
        return MXH_OK;
    int *key = malloc((size_t)n * sizeof(*key));
    /* seen[i * P + k]: a rank of node position i has key k (each exactly once) */
    unsigned char *seen = calloc((size_t)g * (size_t)P, 1);
    if (key == NULL || seen == NULL) {
        free(key);
        free(seen);
        return MXH_ERR_NO_MEMORY;
    }
    int ok = 1;
    for (int r = 0; r < n && ok; r++) {
        int k = 0, stride = 1;
        for (int l = 1; l < L->nlevels; l++) {
            k += L->coord[l][r] * stride;
            stride *= L->gsize[l][r];
        }
        key[r] = k;
        size_t at = (size_t)L->coord[0][r] * (size_t)P + (size_t)k;
        ok = !seen[at];
        seen[at] = 1;
    }
    /* the ranks of one node share the key (one node position of each node per group) */
    for (int r = 0; r < n && ok; r++)
        ok = key[r] == key[L->node_first_rank[L->node_of[r]]];
    free(seen);
    if (!ok) {
        free(key);
        return MXH_OK;
    }
    L->spread_key = key;
    L->spread_p   = P;
    return MXH_OK;
}

int mxh_layout_participates(const mxh_layout_t *layout, int rank, int level)
{
    for (int l = 0; l < level; l++)
        if (layout->kind[l] == MXH_LEVEL_KIND_LEADER && layout->coord[l][rank] != 0)
            return 0;
    return 1;
}

/* ---- a torus of nodes -------------------------------------------------------------
 *
 * When every record carries a torus coordinate (cluster file torus=XxYxZ) and the nodes
 * fill the grid of the coordinates they use, the network levels follow the dimensions:
 * after the node level (which leaves rail position c with the c-th part of the vector),
 * rail c crosses the dimensions one by one, in an order of its own, each a ring of the
 * nodes along that dimension (coordinate order, so ring neighbours are torus neighbours).
 * A single order for every rail (x, then y, then z) puts (k_x - 1)/k_x of the vector on
 * the x links and ever less on the others; different orders per rail spread the bytes
 * over every dimension at once. The shards of different rails never meet before the
 * node's allgather, so each rail may order its levels as it likes as long as a group's
 * members agree: they do, a group lies inside one rail.
 *
 * Links modelled: a dimension of length k >= 3 has two per node (+ and -; a ring uses
 * one, by its orientation), a dimension of length 2 one (both neighbours are the same
 * node; dimension-order routes with ties to + send both ways over the + link). A
 * reduce-scatter over the dimensions in order d_1, d_2, ... sends (k_j - 1)/k_j of what
 * it still holds across d_j, i.e. (k_j - 1) * prod_{i>j} k_i / K of the vector (K the
 * product of the lengths; the allgather mirrors it). The orders and orientations are
 * chosen greedily per rail, then improved one rail at a time, to minimise the most
 * loaded link (then the sum of squared loads): 4x2x2, 8 rails balances exactly
 * (x y z, x- z y, y x z twice, y x- z, z x- y twice, z x y). Integer arithmetic, the
 * same answer on every rank. */

#define TORUS_MAXC 48 /* 3! orders x 2^3 orientations */

typedef struct {
    int     n;                  /* choices */
    int     nlinks;             /* 2 per active dimension: + and - */
    int     dim[TORUS_MAXC][3]; /* [choice][j] active dimension index, + 4 for - */
    int64_t vol[TORUS_MAXC][6]; /* [choice][link] */
} torus_choices_t;

static void torus_enum(torus_choices_t *tc, int D, const int *k)
{
    static const int perms3[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                     {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    static const int perms2[2][3] = {{0, 1, 0}, {1, 0, 0}};
    static const int perms1[1][3] = {{0, 0, 0}};
    const int(*perms)[3] = D == 3 ? perms3 : D == 2 ? perms2 : perms1;
    int nperm = D == 3 ? 6 : D == 2 ? 2 : 1;

    tc->n      = 0;
    tc->nlinks = 2 * D;
    for (int pi = 0; pi < nperm; pi++)
        for (int signs = 0; signs < (1 << D); signs++) {
            int skip = 0, c = tc->n;
            for (int d = 0; d < D; d++) /* a 2-ring has no - direction */
                if ((signs >> d & 1) && k[d] < 3)
                    skip = 1;
            if (skip)
                continue;
            memset(tc->vol[c], 0, sizeof(tc->vol[c]));
            for (int j = 0; j < D; j++) {
                int d = perms[pi][j], neg = signs >> d & 1;
                int64_t v = k[d] - 1;
                for (int i = j + 1; i < D; i++)
                    v *= k[perms[pi][i]];
                tc->dim[c][j] = d + (neg ? 4 : 0);
                tc->vol[c][2 * d + neg] += v;
            }
            tc->n++;
        }
}

/* (most loaded link, sum of squared loads) of the choices @sel[0..nsel) */
static void torus_score(const torus_choices_t *tc, const int *sel, int nsel, int64_t sc[2])
{
    int64_t load[6] = {0};
    for (int i = 0; i < nsel; i++)
        for (int l = 0; l < tc->nlinks; l++)
            load[l] += tc->vol[sel[i]][l];
    sc[0] = sc[1] = 0;
    for (int l = 0; l < tc->nlinks; l++) {
        if (load[l] > sc[0])
            sc[0] = load[l];
        sc[1] += load[l] * load[l];
    }
}

static int score_less(const int64_t a[2], const int64_t b[2])
{
    return a[0] < b[0] || (a[0] == b[0] && a[1] < b[1]);
}

/* sel[0..s): a choice per rail position */
static void torus_assign(const torus_choices_t *tc, int s, int *sel)
{
    int64_t cur[2], t[2];
    for (int i = 0; i < s; i++) { /* greedy */
        int best = 0;
        int64_t bs[2] = {INT64_MAX, INT64_MAX};
        for (int c = 0; c < tc->n; c++) {
            sel[i] = c;
            torus_score(tc, sel, i + 1, t);
            if (score_less(t, bs)) {
                bs[0] = t[0];
                bs[1] = t[1];
                best  = c;
            }
        }
        sel[i] = best;
    }
    torus_score(tc, sel, s, cur);
    for (int improved = 1; improved;) { /* one rail at a time; strictly decreasing */
        improved = 0;
        for (int i = 0; i < s; i++)
            for (int c = 0; c < tc->n; c++) {
                int old = sel[i];
                sel[i]  = c;
                torus_score(tc, sel, s, t);
                if (score_less(t, cur)) {
                    cur[0] = t[0];
                    cur[1] = t[1];
                    improved = 1;
                } else {
                    sel[i] = old;
                }
            }
    }
}

/* The per-rank arrays of level @l (color, coord, gsize) for @n ranks; 0 or -1. */
static int level_arrays(mxh_layout_t *L, int l, int n)
{
    L->color[l] = malloc(sizeof(int) * (size_t)n);
    L->coord[l] = malloc(sizeof(int) * (size_t)n);
    L->gsize[l] = malloc(sizeof(int) * (size_t)n);
    return L->color[l] == NULL || L->coord[l] == NULL || L->gsize[l] == NULL ? -1 : 0;
}

/* The grid of the nodes' torus coordinates. */
typedef struct torus_grid {
    int      nd;        /* dimensions of the records */
    int      k[3];      /* distinct coordinates used along each dimension */
    int      D, act[3]; /* the dimensions longer than 1 */
    int     *pos;       /* [node * 3 + d]: index of the node's coordinate among those of d */
    int     *lin;       /* [node]: its linear index in the grid */
    int64_t  stride[3], prod;
} torus_grid_t;

/* Fills @tg's positions, lengths, strides and linear indices from the nodes' coordinates.
 * Returns 1 when the nodes fill the grid, one node per coordinate, 0 when they do not,
 * -1 when out of memory. */
static int torus_grid(const mxh_layout_t *L, const mxh_record_t *recs, torus_grid_t *tg)
{
    int ret = -1, *idx = malloc(sizeof(int) * 32768), *seen = NULL;
    int64_t prod = 1;

    if (idx == NULL)
        return -1;
    for (int d = 0; d < tg->nd; d++) {
        for (int v = 0; v < 32768; v++)
            idx[v] = -1;
        for (int v = 0; v < L->nnodes; v++) {
            int c = recs[L->node_first_rank[v]].tcoord[d];
            if (c < 0 || c > 32767) {
                ret = 0;
                goto out;
            }
            idx[c] = 0;
        }
        tg->k[d] = 0;
        for (int v = 0; v < 32768; v++)
            if (idx[v] == 0)
                idx[v] = tg->k[d]++;
        for (int v = 0; v < L->nnodes; v++)
            tg->pos[v * 3 + d] = idx[recs[L->node_first_rank[v]].tcoord[d]];
        tg->stride[d] = prod;
        prod *= tg->k[d];
    }
    tg->prod = prod;
    /* a full grid: every coordinate combination is one node */
    if (prod != L->nnodes) {
        mxh_debug("layout: %d nodes on a torus grid of %lld coordinates: no torus levels",
                  L->nnodes, (long long)prod);
        ret = 0;
        goto out;
    }
    seen = calloc((size_t)prod, sizeof(int));
    if (seen == NULL)
        goto out;
    for (int v = 0; v < L->nnodes; v++) {
        tg->lin[v] = 0;
        for (int d = 0; d < tg->nd; d++)
            tg->lin[v] += tg->pos[v * 3 + d] * (int)tg->stride[d];
        if (seen[tg->lin[v]]++) {
            mxh_debug("layout: two nodes at one torus coordinate: no torus levels");
            ret = 0;
            goto out;
        }
    }
    ret = 1;
out:
    free(idx);
    free(seen);
    return ret;
}

/* The levels of the torus @tg into @L: the node level when @s > 1 ranks per node (c0:
 * each rank's rail position), then one ring level per active dimension, in each rail's
 * order (sel[c]: rail c's choice in @tc). @keys: n int64_t of scratch. Returns 1, or -1
 * when out of memory. */
static int torus_build_levels(mxh_layout_t *L, const int *c0, int s, const torus_grid_t *tg,
                              const torus_choices_t *tc, const int *sel, int64_t *keys)
{
    int n = L->nranks, D = tg->D;

    L->torus_ndims  = D;
    L->torus_nrails = s;
    for (int j = 0; j < D; j++) {
        L->torus_dim[j] = tg->act[j];
        L->torus_k[j]   = tg->k[tg->act[j]];
    }
    L->torus_order = malloc(sizeof(int) * (size_t)s * 3);
    if (L->torus_order == NULL)
        return -1;
    for (int c = 0; c < s; c++)
        for (int j = 0; j < 3; j++)
            L->torus_order[c * 3 + j] = j < D ? tc->dim[sel[c]][j] : -1;

    L->nlevels = 0;
    if (s > 1) {
        int l = L->nlevels++;
        L->type[l]    = MXH_LEVEL_NODE;
        L->ngroups[l] = L->nnodes;
        if (level_arrays(L, l, n))
            return -1;
        for (int r = 0; r < n; r++) {
            L->color[l][r] = L->node_of[r];
            L->coord[l][r] = c0[r];
            L->gsize[l][r] = s;
        }
    }
    for (int j = 0; j < D; j++) {
        int l = L->nlevels++;
        L->type[l]  = MXH_LEVEL_RAIL;
        L->ring[l]  = 1;
        if (level_arrays(L, l, n))
            return -1;
        for (int r = 0; r < n; r++) {
            int v = L->node_of[r], e = L->torus_order[c0[r] * 3 + j];
            int d = tg->act[e & 3], kd = tg->k[d], p = tg->pos[v * 3 + d];
            /* the group: my rail, my coordinates but along d */
            keys[r]        = (int64_t)c0[r] * tg->prod + tg->lin[v] - (int64_t)p * tg->stride[d];
            L->coord[l][r] = (e & 4) ? (kd - p) % kd : p;
            L->gsize[l][r] = kd;
        }
        L->ngroups[l] = dense_ids(keys, n, L->color[l]);
        if (L->ngroups[l] < 0)
            return -1;
    }
    for (int l = 0; l < L->nlevels; l++)
        L->kind[l] = l == L->nlevels - 1 ? MXH_LEVEL_KIND_TOP : MXH_LEVEL_KIND_SCATTER;
    return 1;
}

/* Builds the levels of a torus into @L (node level when @s > 1 ranks per node, then one
 * level per dimension longer than 1). Returns 1 when built, 0 when the records do not
 * describe a full torus grid (the leaf-based levels apply), -1 when out of memory.
 * Needs a regular node level (c0: rail position of every rank, s per node). */
static int torus_levels(mxh_layout_t *L, const mxh_record_t *recs, const int *c0, int s)
{
    int n = L->nranks, nd = recs[0].tndims, ret = -1, *sel = NULL;
    int64_t *keys = NULL;
    torus_grid_t tg = {.nd = nd, .k = {1, 1, 1}};
    torus_choices_t tc;

    if (nd <= 0 || nd > MXH_REC_TORUS_DIMS)
        return 0;
    for (int r = 0; r < n; r++) {
        const mxh_record_t *a = &recs[r], *b = &recs[L->node_first_rank[L->node_of[r]]];
        if (a->tndims != nd || memcmp(a->tcoord, b->tcoord, sizeof(a->tcoord[0]) * (size_t)nd)) {
            mxh_debug("layout: rank %d's torus coordinate differs from its node's or has "
                      "another number of dimensions: no torus levels", r);
            return 0;
        }
    }
    tg.pos = malloc(sizeof(int) * (size_t)L->nnodes * 3);
    tg.lin = malloc(sizeof(int) * (size_t)L->nnodes);
    sel    = malloc(sizeof(int) * (size_t)(s > 0 ? s : 1));
    keys   = malloc(sizeof(int64_t) * (size_t)n);
    if (tg.pos == NULL || tg.lin == NULL || sel == NULL || keys == NULL)
        goto out;
    ret = torus_grid(L, recs, &tg);
    if (ret <= 0)
        goto out;
    for (int d = 0; d < nd; d++)
        if (tg.k[d] > 1)
            tg.act[tg.D++] = d;
    if (tg.D == 0 || (s > 1) + tg.D > MXH_MAX_LEVELS) {
        ret = 0;
        goto out;
    }
    {
        int ka[3];
        for (int j = 0; j < tg.D; j++)
            ka[j] = tg.k[tg.act[j]];
        torus_enum(&tc, tg.D, ka);
    }
    torus_assign(&tc, s, sel);
    ret = torus_build_levels(L, c0, s, &tg, &tc, sel, keys);
out:
    free(tg.pos);
    free(tg.lin);
    free(sel);
    free(keys);
    return ret;
}

#define ALLOC_INTS(_p, _n)                                                     \
    do {                                                                       \
        (_p) = calloc((size_t)((_n) > 0 ? (_n) : 1), sizeof(int));             \
        if ((_p) == NULL)                                                      \
            goto err_nomem;                                                    \
    } while (0)

/* The scratch arrays of mxh_layout_create, freed when it returns. */
typedef struct {
    const mxh_record_t *recs;
    int      n, levels_mask, use_leaves;
    int64_t *keys;         /* n sort keys, reused by every step */
    int     *c0;           /* each rank's position inside its node (rail order when regular) */
    int     *node_size;    /* ranks per node */
    int     *node_off;     /* nnodes + 1 offsets into rails_sorted */
    int     *rails_sorted; /* the ranks of each node, in (rail, island, GPU, local index) order */
    int     *isl_idx;      /* each rank's NVLink island inside its node */
    int     *isl_pos;      /* each rank's position inside its island */
    int     *cand_color[MXH_LEVEL_TYPE_COUNT], *cand_coord[MXH_LEVEL_TYPE_COUNT];
    int      cand_ngroups[MXH_LEVEL_TYPE_COUNT];
} layout_build_t;

static void layout_build_free(layout_build_t *b)
{
    free(b->keys);
    free(b->c0);
    free(b->node_size);
    free(b->node_off);
    free(b->rails_sorted);
    for (int t = 0; t < MXH_LEVEL_TYPE_COUNT; t++) {
        free(b->cand_color[t]);
        free(b->cand_coord[t]);
    }
    free(b->isl_idx);
    free(b->isl_pos);
}

/* Nodes in order of first appearance: node_of, local_index, node_size, node_first_rank.
 * Returns 0, or -1 when out of memory. */
static int layout_nodes(mxh_layout_t *L, layout_build_t *b)
{
    int n = b->n, *sel = NULL;

    ALLOC_INTS(sel, n);
    for (int r = 0; r < n; r++)
        sel[r] = r;
    if (name_keys(b->recs, sel, n, cmp_node_name, 0, b->keys) != 0)
        goto err_nomem;
    L->nnodes = dense_ids(b->keys, n, L->node_of);
    if (L->nnodes < 0)
        goto err_nomem;
    ALLOC_INTS(b->node_size, L->nnodes);
    ALLOC_INTS(L->node_first_rank, L->nnodes);
    for (int r = n - 1; r >= 0; r--)
        L->node_first_rank[L->node_of[r]] = r;
    for (int r = 0; r < n; r++)
        L->local_index[r] = b->node_size[L->node_of[r]]++;
    free(sel);
    return 0;

err_nomem:
    free(sel);
    return -1;
}

/* The GPU, rail and NVLink island of every rank. */
static void layout_gpus(mxh_layout_t *L, const mxh_record_t *recs, int n)
{
    for (int r = 0; r < n; r++) {
        const mxh_record_t *rec = &recs[r];
        int g = rec->gpu, ng = rec->ngpus < MXH_REC_MAX_GPUS ? rec->ngpus : MXH_REC_MAX_GPUS;
        if (g < 0 && ng > 0) {
            if (rec->nvisible > 0)
                g = rec->visible[L->local_index[r] % rec->nvisible];
            else
                g = L->local_index[r] % ng;
        }
        if (g >= ng)
            g = -1;
        L->gpu_of[r]    = g;
        L->island_of[r] = g >= 0 ? rec->gpu_island[g] : -1;
        if (rec->rail >= 0)
            L->rail[r] = rec->rail;
        else if (g >= 0 && rec->gpu_rail[g] >= 0)
            L->rail[r] = rec->gpu_rail[g];
        else
            L->rail[r] = L->local_index[r];
    }
}

/* Orders the ranks inside each node by (rail, island, GPU, local index) and sets c0. The
 * node level is regular when every node has the same size and the same rails in that order
 * (ranks may share a rail: the k-th rank of a rail then pairs with the k-th elsewhere).
 * Returns 0, or -1 when out of memory. */
static int layout_node_order(mxh_layout_t *L, layout_build_t *b)
{
    int n = b->n, *fill = NULL;

    ALLOC_INTS(b->node_off, L->nnodes + 1);
    ALLOC_INTS(b->rails_sorted, n);
    ALLOC_INTS(fill, L->nnodes);
    for (int v = 0; v < L->nnodes; v++)
        b->node_off[v + 1] = b->node_off[v] + b->node_size[v];
    for (int r = 0; r < n; r++) {
        int v = L->node_of[r];
        b->rails_sorted[b->node_off[v] + fill[v]++] = r;
    }
    free(fill);
    sort_layout     = L;
    L->node_regular = 1;
    for (int v = 0; v < L->nnodes; v++) {
        int *rs = b->rails_sorted + b->node_off[v];
        qsort(rs, (size_t)b->node_size[v], sizeof(int), cmp_in_node);
        if (b->node_size[v] != b->node_size[0])
            L->node_regular = 0;
        for (int k = 0; L->node_regular && k < b->node_size[v]; k++)
            if (L->rail[rs[k]] != L->rail[b->rails_sorted[k]])
                L->node_regular = 0;
    }
    for (int v = 0; v < L->nnodes; v++)
        for (int k = 0; k < b->node_size[v]; k++) {
            int r = b->rails_sorted[b->node_off[v] + k];
            b->c0[r] = L->node_regular ? k : L->local_index[r];
        }
    return 0;

err_nomem:
    return -1;
}

/* The island pattern every node of @s ranks shares (island labels renumbered by first
 * appearance in node order) into @pat and its number of islands into @nisl; @cur is
 * scratch of @s ints. Returns 0 when a rank has no island or two nodes differ. */
static int island_pattern(const mxh_layout_t *L, const layout_build_t *b, int s, int *pat,
                          int *cur, int *nisl)
{
    for (int v = 0; v < L->nnodes; v++) {
        int *rs = b->rails_sorted + b->node_off[v], next = 0;
        for (int k = 0; k < s; k++) {
            int isl = L->island_of[rs[k]], id = -1;
            if (isl < 0)
                return 0;
            for (int j = 0; j < k && id < 0; j++)
                if (L->island_of[rs[j]] == isl)
                    id = cur[j];
            cur[k] = id >= 0 ? id : next++;
        }
        if (v == 0) {
            memcpy(pat, cur, sizeof(int) * (size_t)s);
            *nisl = next;
        } else if (memcmp(pat, cur, sizeof(int) * (size_t)s) != 0) {
            return 0;
        }
    }
    return 1;
}

/* NVLink islands: the node level splits into island -> node when all nodes have the same
 * island pattern, at least two islands and islands of equal size > 1 (sets L->nislands,
 * isl_idx and isl_pos). Returns 0, or -1 when out of memory. */
static int layout_islands(mxh_layout_t *L, layout_build_t *b)
{
    int n = b->n, s, ok, nisl = 0, *pat = NULL, *cnt = NULL, *cur = NULL;

    ALLOC_INTS(b->isl_idx, n);
    ALLOC_INTS(b->isl_pos, n);
    if (!L->node_regular || !(b->levels_mask & (1 << MXH_LEVEL_ISLAND)))
        return 0;
    s = b->node_size[0];
    ALLOC_INTS(pat, s);
    ALLOC_INTS(cnt, s);
    ALLOC_INTS(cur, s);
    ok = island_pattern(L, b, s, pat, cur, &nisl);
    for (int k = 0; ok && k < s; k++)
        cnt[pat[k]]++;
    for (int i = 1; ok && i < nisl; i++)
        if (cnt[i] != cnt[0])
            ok = 0;
    if (ok && nisl >= 2 && cnt[0] >= 2) {
        L->nislands = nisl;
        for (int r = 0; r < n; r++) {
            int k = b->c0[r], pos = 0;
            for (int j = 0; j < k; j++)
                pos += pat[j] == pat[k];
            b->isl_idx[r] = pat[k];
            b->isl_pos[r] = pos;
        }
    }
    free(pat);
    free(cnt);
    free(cur);
    return 0;

err_nomem:
    free(pat);
    free(cnt);
    free(cur);
    return -1;
}

/* Leaf switches (the leaf of a node is its first rank's; one leaf without the spine
 * level) and each node's position under its leaf. Returns 0, or -1 when out of memory. */
static int layout_leaves(mxh_layout_t *L, layout_build_t *b)
{
    int *cnt = NULL;

    ALLOC_INTS(L->leaf_of_node, L->nnodes);
    ALLOC_INTS(L->node_pos, L->nnodes);
    if (b->use_leaves) {
        if (name_keys(b->recs, L->node_first_rank, L->nnodes, cmp_leaf_name, 1, b->keys) != 0)
            goto err_nomem;
        L->nleaves = dense_ids(b->keys, L->nnodes, L->leaf_of_node);
        if (L->nleaves < 0)
            goto err_nomem;
    } else {
        L->nleaves = 1;
    }
    ALLOC_INTS(L->leaf_first_node, L->nleaves);
    ALLOC_INTS(cnt, L->nleaves);
    for (int v = L->nnodes - 1; v >= 0; v--)
        L->leaf_first_node[L->leaf_of_node[v]] = v;
    for (int v = 0; v < L->nnodes; v++)
        L->node_pos[v] = cnt[L->leaf_of_node[v]]++;
    free(cnt);
    return 0;

err_nomem:
    return -1;
}

/* The candidate levels, inner to outer: each rank's group key and coordinate at every
 * level type the layout has. Returns 0, or -1 when out of memory. */
static int layout_candidates(mxh_layout_t *L, layout_build_t *b)
{
    int n = b->n, maxc0 = 0, maxpos = 0, maxisl = 0;
    int64_t *keys = b->keys;

    for (int r = 0; r < n; r++) {
        if (b->c0[r] > maxc0)
            maxc0 = b->c0[r];
        if (b->isl_pos[r] > maxisl)
            maxisl = b->isl_pos[r];
    }
    for (int v = 0; v < L->nnodes; v++)
        if (L->node_pos[v] > maxpos)
            maxpos = L->node_pos[v];
    for (int t = 0; t < MXH_LEVEL_TYPE_COUNT; t++) {
        int *coord;
        if ((t == MXH_LEVEL_SPINE && !b->use_leaves) || (t == MXH_LEVEL_ISLAND && !L->nislands))
            continue;
        ALLOC_INTS(b->cand_color[t], n);
        ALLOC_INTS(b->cand_coord[t], n);
        coord = b->cand_coord[t];
        for (int r = 0; r < n; r++) {
            int v = L->node_of[r];
            switch (t) {
            case MXH_LEVEL_ISLAND:
                keys[r]  = (int64_t)v * (maxc0 + 1) + b->isl_idx[r];
                coord[r] = b->isl_pos[r];
                break;
            case MXH_LEVEL_NODE:
                if (L->nislands) { /* across the islands of the node */
                    keys[r]  = (int64_t)v * (maxisl + 1) + b->isl_pos[r];
                    coord[r] = b->isl_idx[r];
                } else {
                    keys[r]  = v;
                    coord[r] = b->c0[r];
                }
                break;
            case MXH_LEVEL_RAIL:
                keys[r]  = (int64_t)L->leaf_of_node[v] * (maxc0 + 1) + b->c0[r];
                coord[r] = L->node_pos[v];
                break;
            default: /* spine */
                keys[r]  = (int64_t)b->c0[r] * (maxpos + 1) + L->node_pos[v];
                coord[r] = L->leaf_of_node[v];
                break;
            }
        }
        b->cand_ngroups[t] = dense_ids(keys, n, b->cand_color[t]);
        if (b->cand_ngroups[t] < 0)
            goto err_nomem;
    }
    return 0;

err_nomem:
    return -1;
}

/* Keeps the candidate levels that have a group larger than one, moving their arrays into
 * @L. Returns 0, or -1 when out of memory. */
static int layout_keep_levels(mxh_layout_t *L, layout_build_t *b)
{
    static const int order[] = {MXH_LEVEL_ISLAND, MXH_LEVEL_NODE, MXH_LEVEL_RAIL,
                                MXH_LEVEL_SPINE};
    int n = b->n, *size = NULL;

    ALLOC_INTS(size, n);
    for (int oi = 0; oi < MXH_LEVEL_TYPE_COUNT; oi++) {
        int t = order[oi], maxsize = 0;
        if (b->cand_color[t] == NULL)
            continue;
        memset(size, 0, sizeof(int) * (size_t)n);
        for (int r = 0; r < n; r++)
            size[b->cand_color[t][r]]++;
        for (int g = 0; g < b->cand_ngroups[t]; g++)
            if (size[g] > maxsize)
                maxsize = size[g];
        if (maxsize <= 1)
            continue;
        int l = L->nlevels++;
        L->type[l]       = (mxh_level_type_t)t;
        L->ngroups[l]    = b->cand_ngroups[t];
        L->color[l]      = b->cand_color[t];
        L->coord[l]      = b->cand_coord[t];
        b->cand_color[t] = b->cand_coord[t] = NULL;
        ALLOC_INTS(L->gsize[l], n);
        for (int r = 0; r < n; r++)
            L->gsize[l][r] = size[L->color[l][r]];
    }
    free(size);
    return 0;

err_nomem:
    free(size);
    return -1;
}

/* Makes the coordinates dense inside each group: 0..size-1 in key order. Returns 0, or -1
 * when out of memory. */
static int layout_dense_coords(mxh_layout_t *L, int n)
{
    for (int l = 0; l < L->nlevels; l++) {
        key_idx_t *ki = malloc(sizeof(*ki) * (size_t)n);
        if (ki == NULL)
            return -1;
        for (int r = 0; r < n; r++) {
            ki[r].key = ((int64_t)L->color[l][r] << 32) | (int64_t)L->coord[l][r];
            ki[r].idx = r;
        }
        qsort(ki, (size_t)n, sizeof(*ki), cmp_key_idx);
        for (int i = 0, pos = 0; i < n; i++) {
            if (i > 0 && L->color[l][ki[i].idx] != L->color[l][ki[i - 1].idx])
                pos = 0;
            L->coord[l][ki[i].idx] = pos++;
        }
        free(ki);
    }
    return 0;
}

/* The kind of each level: SCATTER when all participating groups have one size, else
 * LEADER; the last level is the TOP. */
static void layout_kinds(mxh_layout_t *L, int n)
{
    for (int l = 0; l < L->nlevels; l++) {
        int gs = -1, equal = 1;
        if (l == L->nlevels - 1) {
            L->kind[l] = MXH_LEVEL_KIND_TOP;
            break;
        }
        for (int r = 0; r < n; r++) {
            if (!mxh_layout_participates(L, r, l))
                continue;
            if (gs < 0)
                gs = L->gsize[l][r];
            else if (gs != L->gsize[l][r])
                equal = 0;
        }
        L->kind[l] = equal ? MXH_LEVEL_KIND_SCATTER : MXH_LEVEL_KIND_LEADER;
    }
}

/* The representatives: after a LEADER level a rank is represented by its leader. Returns
 * 0, or -1 when out of memory. */
static int layout_representatives(mxh_layout_t *L, int n)
{
    for (int l = 0; l < L->nlevels; l++) {
        int *leader;
        ALLOC_INTS(L->rep[l], n);
        if (l == 0) {
            for (int r = 0; r < n; r++)
                L->rep[0][r] = r;
            continue;
        }
        if (L->kind[l - 1] != MXH_LEVEL_KIND_LEADER) {
            memcpy(L->rep[l], L->rep[l - 1], sizeof(int) * (size_t)n);
            continue;
        }
        ALLOC_INTS(leader, L->ngroups[l - 1]);
        for (int r = 0; r < n; r++)
            if (L->coord[l - 1][r] == 0)
                leader[L->color[l - 1][r]] = r;
        for (int r = 0; r < n; r++)
            L->rep[l][r] = leader[L->color[l - 1][L->rep[l - 1][r]]];
        free(leader);
    }
    return 0;

err_nomem:
    return -1;
}

mxh_status_t mxh_layout_create(const mxh_record_t *recs, int n, int levels_mask,
                               mxh_layout_t **layout_p)
{
    mxh_layout_t  *L = NULL;
    layout_build_t b = {.recs        = recs,
                        .n           = n,
                        .levels_mask = levels_mask,
                        .use_leaves  = (levels_mask >> MXH_LEVEL_SPINE) & 1};
    int            torus = 0;

    if (n <= 0 || recs == NULL) {
        mxh_error("layout: %d records", n);
        return MXH_ERR_INVALID_PARAM;
    }
    if (!(levels_mask & (1 << MXH_LEVEL_NODE)) || !(levels_mask & (1 << MXH_LEVEL_RAIL))) {
        mxh_error("MPIX_HIER_LEVELS must include node and rail");
        return MXH_ERR_CONFIG;
    }

    L = calloc(1, sizeof(*L));
    if (L == NULL)
        goto err_nomem;
    L->nranks = n;
    b.keys    = malloc(sizeof(*b.keys) * (size_t)n);
    if (b.keys == NULL)
        goto err_nomem;
    ALLOC_INTS(L->node_of, n);
    ALLOC_INTS(L->local_index, n);
    ALLOC_INTS(L->rail, n);
    ALLOC_INTS(L->gpu_of, n);
    ALLOC_INTS(L->island_of, n);
    ALLOC_INTS(b.c0, n);
    if (layout_nodes(L, &b) != 0)
        goto err_nomem;
    layout_gpus(L, recs, n);
    if (layout_node_order(L, &b) != 0 || layout_islands(L, &b) != 0 || layout_leaves(L, &b) != 0)
        goto err_nomem;

    /* a torus of nodes: one network level per dimension (torus_levels); else the levels
     * from the candidates */
    if (b.use_leaves && L->node_regular && !L->nislands && recs[0].tndims > 0)
        torus = torus_levels(L, recs, b.c0, b.node_size[0]);
    if (torus < 0)
        goto err_nomem;
    if (torus == 0) {
        if (layout_candidates(L, &b) != 0 || layout_keep_levels(L, &b) != 0 ||
            layout_dense_coords(L, n) != 0)
            goto err_nomem;
        layout_kinds(L, n);
    }
    if (layout_representatives(L, n) != 0)
        goto err_nomem;
    layout_build_free(&b);
    *layout_p = L;
    return MXH_OK;

err_nomem:
    mxh_error("layout: out of memory for %d ranks", n);
    layout_build_free(&b);
    mxh_layout_destroy(L);
    return MXH_ERR_NO_MEMORY;
}

/* ---- description ---------------------------------------------------------- */

typedef struct {
    char  *buf;
    size_t len, off;
} sbuf_t;

static void sb_printf(sbuf_t *sb, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void sb_printf(sbuf_t *sb, const char *fmt, ...)
{
    va_list ap;
    size_t room = sb->off < sb->len ? sb->len - sb->off : 0;
    va_start(ap, fmt);
    int k = vsnprintf(room ? sb->buf + sb->off : NULL, room, fmt, ap);
    va_end(ap);
    if (k > 0)
        sb->off += (size_t)k;
}

#define DESCRIBE_MAX_GROUPS 8
#define DESCRIBE_MAX_MEMBERS 16

size_t mxh_layout_describe(const mxh_layout_t *L, const mxh_record_t *recs, char *buf,
                           size_t len)
{
    sbuf_t sb = {buf, len, 0};

    if (len)
        buf[0] = '\0';
    sb_printf(&sb, "hierarchy: %d ranks, %d node%s, %d leaf switch%s, %d level%s%s\n", L->nranks,
              L->nnodes, L->nnodes == 1 ? "" : "s", L->nleaves, L->nleaves == 1 ? "" : "es",
              L->nlevels, L->nlevels == 1 ? "" : "s",
              L->nlevels <= 1 ? " (no hierarchy to exploit: one node uses shared memory, else plain MPI)" : "");
    for (int l = 0; l < L->nlevels; l++) {
        int shown = 0;
        int minsz = L->nranks, maxsz = 0;
        for (int r = 0; r < L->nranks; r++) {
            if (L->gsize[l][r] < minsz)
                minsz = L->gsize[l][r];
            if (L->gsize[l][r] > maxsz)
                maxsz = L->gsize[l][r];
        }
        sb_printf(&sb, "  level %d %-5s %-7s %d group%s of ", l, mxh_level_type_name(L->type[l]),
                  mxh_level_kind_name(L->kind[l]), L->ngroups[l], L->ngroups[l] == 1 ? "" : "s");
        if (minsz == maxsz)
            sb_printf(&sb, "%d:", minsz);
        else
            sb_printf(&sb, "%d..%d:", minsz, maxsz);
        for (int g = 0; g < L->ngroups[l] && shown < DESCRIBE_MAX_GROUPS; g++, shown++) {
            int m = 0;
            sb_printf(&sb, " {");
            for (int r = 0; r < L->nranks; r++) {
                if (L->color[l][r] != g)
                    continue;
                if (m < DESCRIBE_MAX_MEMBERS)
                    sb_printf(&sb, "%s%d", m ? "," : "", r);
                else if (m == DESCRIBE_MAX_MEMBERS)
                    sb_printf(&sb, ",...");
                m++;
            }
            sb_printf(&sb, "}");
        }
        if (L->ngroups[l] > DESCRIBE_MAX_GROUPS)
            sb_printf(&sb, " ... (%d more)", L->ngroups[l] - DESCRIBE_MAX_GROUPS);
        sb_printf(&sb, "\n");
    }
    if (L->torus_ndims > 0) { /* the torus split: dimensions and each rail's order */
        sb_printf(&sb, "  torus");
        for (int j = 0; j < L->torus_ndims; j++)
            sb_printf(&sb, "%s%c%d", j ? " x " : " ", "xyz"[L->torus_dim[j]], L->torus_k[j]);
        sb_printf(&sb, ", network levels per rail:");
        for (int c = 0; c < L->torus_nrails && c < DESCRIBE_MAX_MEMBERS; c++) {
            sb_printf(&sb, "%s%d:", c ? ", " : " ", c);
            for (int j = 0; j < L->torus_ndims; j++) {
                int e = L->torus_order[c * 3 + j];
                sb_printf(&sb, "%s%c%s", j ? " " : "", "xyz"[L->torus_dim[e & 3]],
                          (e & 4) ? "-" : "");
            }
        }
        sb_printf(&sb, "%s\n", L->torus_nrails > DESCRIBE_MAX_MEMBERS ? ", ..." : "");
    }
    for (int v = 0; v < L->nnodes && v < DESCRIBE_MAX_GROUPS * 4; v++) {
        int fr = L->node_first_rank[v], m = 0;
        const char *leaf = recs ? recs[fr].leaf : "";
        sb_printf(&sb, "  node %-12s leaf %-10s ranks", recs ? recs[fr].node : "?",
                  (L->nleaves > 1 && leaf[0]) ? leaf : "-");
        for (int r = fr; r < L->nranks; r++) {
            if (L->node_of[r] != v)
                continue;
            if (m < DESCRIBE_MAX_MEMBERS) {
                const mxh_record_t *rec = recs ? &recs[r] : NULL;
                sb_printf(&sb, " %d(rail %d", r, L->rail[r]);
                if (rec && rec->rail < 0 && L->gpu_of[r] >= 0 && L->rail[r] < rec->nnics &&
                    rec->gpu_rail[L->gpu_of[r]] == L->rail[r])
                    sb_printf(&sb, " %s", rec->nic_names[L->rail[r]]);
                if (L->gpu_of[r] >= 0)
                    sb_printf(&sb, ", gpu %d", L->gpu_of[r]);
                if (L->nislands && L->island_of[r] >= 0)
                    sb_printf(&sb, " nvlink island %d", L->island_of[r]);
                sb_printf(&sb, ")");
            }
            else if (m == DESCRIBE_MAX_MEMBERS)
                sb_printf(&sb, " ...");
            m++;
        }
        sb_printf(&sb, "\n");
    }
    if (L->nnodes > DESCRIBE_MAX_GROUPS * 4)
        sb_printf(&sb, "  ... (%d more nodes)\n", L->nnodes - DESCRIBE_MAX_GROUPS * 4);
    return sb.off;
}
