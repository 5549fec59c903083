#include "hier/levels.h"
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
    free(layout);
}

int mxh_layout_participates(const mxh_layout_t *layout, int rank, int level)
{
    for (int l = 0; l < level; l++)
        if (layout->kind[l] == MXH_LEVEL_KIND_LEADER && layout->coord[l][rank] != 0)
            return 0;
    return 1;
}

#define ALLOC_INTS(_p, _n)                                                     \
    do {                                                                       \
        (_p) = calloc((size_t)((_n) > 0 ? (_n) : 1), sizeof(int));             \
        if ((_p) == NULL)                                                      \
            goto err_nomem;                                                    \
    } while (0)

mxh_status_t mxh_layout_create(const mxh_record_t *recs, int n, int levels_mask,
                               mxh_layout_t **layout_p)
{
    mxh_layout_t *L = NULL;
    int64_t *keys = NULL;
    int *sel = NULL, *c0 = NULL, *node_size = NULL, *rails_sorted = NULL, *node_off = NULL;
    int *fill = NULL, *isl_idx = NULL, *isl_pos = NULL, *cand_color[MXH_LEVEL_TYPE_COUNT] = {0};
    int *cand_coord[MXH_LEVEL_TYPE_COUNT] = {0}, cand_ngroups[MXH_LEVEL_TYPE_COUNT] = {0};
    int use_leaves = (levels_mask >> MXH_LEVEL_SPINE) & 1;

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
    keys = malloc(sizeof(*keys) * (size_t)n);
    if (keys == NULL)
        goto err_nomem;
    ALLOC_INTS(sel, n);
    ALLOC_INTS(L->node_of, n);
    ALLOC_INTS(L->local_index, n);
    ALLOC_INTS(L->rail, n);
    ALLOC_INTS(L->gpu_of, n);
    ALLOC_INTS(L->island_of, n);
    ALLOC_INTS(c0, n);

    /* ---- nodes, in order of first appearance */
    for (int r = 0; r < n; r++)
        sel[r] = r;
    if (name_keys(recs, sel, n, cmp_node_name, 0, keys) != 0)
        goto err_nomem;
    L->nnodes = dense_ids(keys, n, L->node_of);
    if (L->nnodes < 0)
        goto err_nomem;
    ALLOC_INTS(node_size, L->nnodes);
    ALLOC_INTS(L->node_first_rank, L->nnodes);
    for (int r = n - 1; r >= 0; r--)
        L->node_first_rank[L->node_of[r]] = r;
    for (int r = 0; r < n; r++)
        L->local_index[r] = node_size[L->node_of[r]]++;

    /* ---- GPU, rail and NVLink island of every rank */
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

    /* ---- order inside each node by (rail, island, GPU, local index); the node level is
     * regular when every node has the same size and the same rails in that order (ranks
     * may share a rail: the k-th rank of a rail then pairs with the k-th elsewhere) */
    ALLOC_INTS(node_off, L->nnodes + 1);
    ALLOC_INTS(rails_sorted, n); /* ranks of each node, in order */
    ALLOC_INTS(fill, L->nnodes);
    for (int v = 0; v < L->nnodes; v++)
        node_off[v + 1] = node_off[v] + node_size[v];
    for (int r = 0; r < n; r++) {
        int v = L->node_of[r];
        rails_sorted[node_off[v] + fill[v]++] = r;
    }
    sort_layout = L;
    L->node_regular = 1;
    for (int v = 0; v < L->nnodes; v++) {
        int *rs = rails_sorted + node_off[v];
        qsort(rs, (size_t)node_size[v], sizeof(int), cmp_in_node);
        if (node_size[v] != node_size[0])
            L->node_regular = 0;
        for (int k = 0; L->node_regular && k < node_size[v]; k++)
            if (L->rail[rs[k]] != L->rail[rails_sorted[k]])
                L->node_regular = 0;
    }
    for (int v = 0; v < L->nnodes; v++)
        for (int k = 0; k < node_size[v]; k++) {
            int r = rails_sorted[node_off[v] + k];
            c0[r] = L->node_regular ? k : L->local_index[r];
        }

    /* ---- NVLink islands: split the node level into island -> node when all nodes have
     * the same island pattern, at least two islands and islands of equal size > 1 */
    ALLOC_INTS(isl_idx, n);
    ALLOC_INTS(isl_pos, n);
    if (L->node_regular && (levels_mask & (1 << MXH_LEVEL_ISLAND))) {
        int s = node_size[0], ok = 1, nisl = 0, *pat, *cnt, *cur;
        ALLOC_INTS(pat, s);
        ALLOC_INTS(cnt, s);
        ALLOC_INTS(cur, s);
        /* canonical pattern of a node: island labels renumbered by first appearance */
        for (int v = 0; v < L->nnodes && ok; v++) {
            int *rs = rails_sorted + node_off[v], next = 0;
            for (int k = 0; k < s && ok; k++) {
                int isl = L->island_of[rs[k]], id = -1;
                if (isl < 0) {
                    ok = 0;
                    break;
                }
                for (int j2 = 0; j2 < k && id < 0; j2++)
                    if (L->island_of[rs[j2]] == isl)
                        id = cur[j2];
                cur[k] = id >= 0 ? id : next++;
            }
            if (!ok)
                break;
            if (v == 0) {
                memcpy(pat, cur, sizeof(int) * (size_t)s);
                nisl = next;
            } else if (memcmp(pat, cur, sizeof(int) * (size_t)s) != 0) {
                ok = 0;
            }
        }
        free(cur);
        for (int k = 0; ok && k < s; k++)
            cnt[pat[k]]++;
        for (int i2 = 1; ok && i2 < nisl; i2++)
            if (cnt[i2] != cnt[0])
                ok = 0;
        if (ok && nisl >= 2 && cnt[0] >= 2) {
            L->nislands = nisl;
            for (int r = 0; r < n; r++) {
                int k = c0[r], pos = 0;
                for (int j = 0; j < k; j++)
                    pos += pat[j] == pat[k];
                isl_idx[r] = pat[k];
                isl_pos[r] = pos;
            }
        }
        free(pat);
        free(cnt);
    }

    /* ---- leaves (the leaf of a node is its first rank's) */
    ALLOC_INTS(L->leaf_of_node, L->nnodes);
    ALLOC_INTS(L->node_pos, L->nnodes);
    if (use_leaves) {
        if (name_keys(recs, L->node_first_rank, L->nnodes, cmp_leaf_name, 1, keys) != 0)
            goto err_nomem;
        L->nleaves = dense_ids(keys, L->nnodes, L->leaf_of_node);
        if (L->nleaves < 0)
            goto err_nomem;
    } else {
        L->nleaves = 1;
    }
    ALLOC_INTS(L->leaf_first_node, L->nleaves);
    {
        int *cnt;
        ALLOC_INTS(cnt, L->nleaves);
        for (int v = L->nnodes - 1; v >= 0; v--)
            L->leaf_first_node[L->leaf_of_node[v]] = v;
        for (int v = 0; v < L->nnodes; v++)
            L->node_pos[v] = cnt[L->leaf_of_node[v]]++;
        free(cnt);
    }

    /* ---- candidate levels, inner to outer */
    int maxc0 = 0, maxpos = 0, maxisl = 0;
    for (int r = 0; r < n; r++) {
        if (c0[r] > maxc0)
            maxc0 = c0[r];
        if (isl_pos[r] > maxisl)
            maxisl = isl_pos[r];
    }
    for (int v = 0; v < L->nnodes; v++)
        if (L->node_pos[v] > maxpos)
            maxpos = L->node_pos[v];
    for (int t = 0; t < MXH_LEVEL_TYPE_COUNT; t++) {
        if ((t == MXH_LEVEL_SPINE && !use_leaves) || (t == MXH_LEVEL_ISLAND && !L->nislands))
            continue;
        ALLOC_INTS(cand_color[t], n);
        ALLOC_INTS(cand_coord[t], n);
        for (int r = 0; r < n; r++) {
            int v = L->node_of[r];
            switch (t) {
            case MXH_LEVEL_ISLAND:
                keys[r]            = (int64_t)v * (maxc0 + 1) + isl_idx[r];
                cand_coord[t][r]   = isl_pos[r];
                break;
            case MXH_LEVEL_NODE:
                if (L->nislands) { /* across the islands of the node */
                    keys[r]          = (int64_t)v * (maxisl + 1) + isl_pos[r];
                    cand_coord[t][r] = isl_idx[r];
                } else {
                    keys[r]          = v;
                    cand_coord[t][r] = c0[r];
                }
                break;
            case MXH_LEVEL_RAIL:
                keys[r]            = (int64_t)L->leaf_of_node[v] * (maxc0 + 1) + c0[r];
                cand_coord[t][r]   = L->node_pos[v];
                break;
            default: /* spine */
                keys[r]            = (int64_t)c0[r] * (maxpos + 1) + L->node_pos[v];
                cand_coord[t][r]   = L->leaf_of_node[v];
                break;
            }
        }
        cand_ngroups[t] = dense_ids(keys, n, cand_color[t]);
        if (cand_ngroups[t] < 0)
            goto err_nomem;
    }

    /* ---- keep levels that have a group larger than one */
    {
        int *size;
        ALLOC_INTS(size, n);
        static const int order[] = {MXH_LEVEL_ISLAND, MXH_LEVEL_NODE, MXH_LEVEL_RAIL,
                                    MXH_LEVEL_SPINE};
        for (int oi = 0; oi < MXH_LEVEL_TYPE_COUNT; oi++) {
            int t = order[oi], maxsize = 0;
            if (cand_color[t] == NULL)
                continue;
            memset(size, 0, sizeof(int) * (size_t)n);
            for (int r = 0; r < n; r++)
                size[cand_color[t][r]]++;
            for (int g = 0; g < cand_ngroups[t]; g++)
                if (size[g] > maxsize)
                    maxsize = size[g];
            if (maxsize <= 1)
                continue;
            int l = L->nlevels++;
            L->type[l]    = (mxh_level_type_t)t;
            L->ngroups[l] = cand_ngroups[t];
            L->color[l]   = cand_color[t];
            L->coord[l]   = cand_coord[t];
            cand_color[t] = cand_coord[t] = NULL;
            ALLOC_INTS(L->gsize[l], n);
            for (int r = 0; r < n; r++)
                L->gsize[l][r] = size[L->color[l][r]];
        }
        free(size);
    }

    /* ---- coordinates dense inside each group: 0..size-1 in key order */
    for (int l = 0; l < L->nlevels; l++) {
        key_idx_t *ki = malloc(sizeof(*ki) * (size_t)n);
        if (ki == NULL)
            goto err_nomem;
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

    /* ---- kinds: SCATTER when all participating groups have one size */
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

    /* ---- representatives: after a LEADER level a rank is represented by its leader */
    for (int l = 0; l < L->nlevels; l++) {
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
        int *leader;
        ALLOC_INTS(leader, L->ngroups[l - 1]);
        for (int r = 0; r < n; r++)
            if (L->coord[l - 1][r] == 0)
                leader[L->color[l - 1][r]] = r;
        for (int r = 0; r < n; r++)
            L->rep[l][r] = leader[L->color[l - 1][L->rep[l - 1][r]]];
        free(leader);
    }

    free(keys);
    free(sel);
    free(c0);
    free(node_size);
    free(rails_sorted);
    free(node_off);
    free(fill);
    free(isl_idx);
    free(isl_pos);
    for (int t = 0; t < MXH_LEVEL_TYPE_COUNT; t++) {
        free(cand_color[t]);
        free(cand_coord[t]);
    }
    *layout_p = L;
    return MXH_OK;

err_nomem:
    mxh_error("layout: out of memory for %d ranks", n);
    free(keys);
    free(sel);
    free(c0);
    free(node_size);
    free(rails_sorted);
    free(node_off);
    free(fill);
    free(isl_idx);
    free(isl_pos);
    for (int t = 0; t < MXH_LEVEL_TYPE_COUNT; t++) {
        free(cand_color[t]);
        free(cand_coord[t]);
    }
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
