/* Parallelism groups placed by the hierarchy (pure): see parallel.h. */
#include "config.h"

#include "decide/parallel.h"

#include <stdio.h>
#include <stdlib.h>

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
 * of its units, numbered in that order (a unit's positions are consecutive). */
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
        for (int u = 0; u < NUNITS; u++) { /* a new unit where a key up to its own changes */
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
