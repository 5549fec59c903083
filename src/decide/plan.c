#include "decide/plan.h"
#include "decide/p2p_choose.h"
#include "util/log.h"
#include "util/str.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *mxh_step_type_name(mxh_step_type_t type)
{
    static const char *const names[] = {"reduce_scatter", "reduce", "allreduce",
                                        "allgather",      "bcast",  "scatter",
                                        "gather",         "send",   "recv",
                                        "spread"};
    return (type >= 0 && type <= MXH_STEP_SPREAD) ? names[type] : "?";
}

int mxh_step_staggered(const mxh_step_t *s)
{
    return s->rootless && s->gsize > 2 && s->me != s->root &&
           (s->type == MXH_STEP_BCAST || (s->type == MXH_STEP_REDUCE && s->net));
}

void mxh_plan_destroy(mxh_plan_t *plan)
{
    if (plan == NULL)
        return;
    for (int i = 0; i < plan->nsteps; i++) {
        free(plan->steps[i].counts);
        free(plan->steps[i].displs);
    }
    free(plan->steps);
    free(plan->stage_step);
    free(plan->block_pos);
    free(plan);
}

/* ---- builder -------------------------------------------------------------- */

typedef struct builder {
    const mxh_layout_t *L;
    int                 me;
    mxh_plan_t         *plan;
    int                 cap;
    mxh_status_t        status;
    /* rsb/allgather: ranks sorted by key, key component -> level */
    int                *order;
    int                 ncomp;
    int                 comp_level[MXH_MAX_LEVELS];
    int                 comp_index[MXH_MAX_LEVELS];
    int                 down; /* building the down (outer -> inner) phase */
    unsigned            flags; /* MXH_PLAN_THROUGH */
    /* v-plans: elements of each rank's block, and by block position the
     * offset of the block in the work buffer (nranks + 1) */
    const size_t       *bcounts;
    size_t             *bpref;
} builder_t;

/* The through shape of bcast and reduce (MXH_PLAN_THROUGH) at @level: not on the
 * rings of a torus dimension, where a whole-region bcast by direct exchanges crosses
 * several hops to distant nodes while the scatter + ring allgather keeps every byte on
 * one link, the faster shape there in simulation (RESULTS.md section 5, "3D torus"). */
static int through(const builder_t *b, int level)
{
    return (b->flags & MXH_PLAN_THROUGH) && !b->L->ring[level];
}

static mxh_step_t *add_step(builder_t *b, mxh_step_type_t type, int level, size_t offset,
                            size_t count)
{
    mxh_plan_t *p = b->plan;
    if (b->status != MXH_OK)
        return NULL;
    if (p->nsteps == b->cap) {
        int ncap = b->cap ? 2 * b->cap : 8;
        mxh_step_t *s = realloc(p->steps, sizeof(*s) * (size_t)ncap);
        if (s == NULL) {
            b->status = MXH_ERR_NO_MEMORY;
            return NULL;
        }
        p->steps = s;
        b->cap   = ncap;
    }
    mxh_step_t *st = &p->steps[p->nsteps++];
    memset(st, 0, sizeof(*st));
    st->type   = type;
    st->level  = level;
    st->gsize  = b->L->gsize[level][b->me];
    st->me     = b->L->coord[level][b->me];
    st->offset = offset;
    st->count  = count;
    st->net    = b->L->type[level] == MXH_LEVEL_RAIL || b->L->type[level] == MXH_LEVEL_SPINE;
    st->rootless = through(b, level) && (type == MXH_STEP_BCAST || type == MXH_STEP_REDUCE);
    st->ring   = b->L->ring[level];
    /* stage: the step's slot in the canonical sequence up(0..top-1), top, down(top-1..0);
     * the same on every member of a level group, strictly increasing along a plan */
    int top   = b->L->nlevels - 1;
    st->stage = level == top ? top : (b->down ? 2 * top - level : level);
    return st;
}

static int alloc_parts(builder_t *b, mxh_step_t *st)
{
    if (st == NULL)
        return -1;
    st->counts = calloc((size_t)st->gsize, sizeof(int));
    st->displs = calloc((size_t)st->gsize, sizeof(int));
    if (st->counts == NULL || st->displs == NULL) {
        b->status = MXH_ERR_NO_MEMORY;
        return -1;
    }
    return 0;
}

/* Even split of the region into gsize parts: the first count % g get one more. */
static void split_even(builder_t *b, mxh_step_t *st)
{
    if (alloc_parts(b, st))
        return;
    size_t g = (size_t)st->gsize, q = st->count / g, rem = st->count % g, off = 0;
    for (size_t x = 0; x < g; x++) {
        st->counts[x] = (int)(q + (x < rem));
        st->displs[x] = (int)off;
        off += (size_t)st->counts[x];
    }
}

static int same_group(const mxh_layout_t *L, int level, int a, int bb)
{
    return L->color[level][a] == L->color[level][bb];
}

/* The element region a rank holds before crossing @level with even splits. */
static void even_region(const mxh_layout_t *L, int r, int level, size_t count, size_t *off,
                        size_t *cnt)
{
    *off = 0;
    *cnt = count;
    for (int l = 0; l < level; l++) {
        if (L->kind[l] != MXH_LEVEL_KIND_SCATTER)
            continue;
        size_t g = (size_t)L->gsize[l][r], x = (size_t)L->coord[l][r];
        size_t q = *cnt / g, rem = *cnt % g;
        *off += x * q + (x < rem ? x : rem);
        *cnt = q + (x < rem);
    }
}

/* ---- allreduce -------------------------------------------------------------- */

static void build_allreduce(builder_t *b, size_t count)
{
    const mxh_layout_t *L = b->L;
    int top = L->nlevels - 1, stop = top;
    size_t off, cnt;

    for (int l = 0; l < top; l++) {
        even_region(L, b->me, l, count, &off, &cnt);
        if (L->kind[l] == MXH_LEVEL_KIND_SCATTER) {
            split_even(b, add_step(b, MXH_STEP_REDUCE_SCATTER, l, off, cnt));
        } else {
            add_step(b, MXH_STEP_REDUCE, l, off, cnt);
            if (L->coord[l][b->me] != 0) {
                stop = l;
                break;
            }
        }
    }
    if (stop == top) {
        even_region(L, b->me, top, count, &off, &cnt);
        add_step(b, MXH_STEP_ALLREDUCE, top, off, cnt);
    }
    b->down = 1;
    for (int l = (stop == top ? top - 1 : stop); l >= 0; l--) {
        even_region(L, b->me, l, count, &off, &cnt);
        if (L->kind[l] == MXH_LEVEL_KIND_SCATTER)
            split_even(b, add_step(b, MXH_STEP_ALLGATHER, l, off, cnt));
        else
            add_step(b, MXH_STEP_BCAST, l, off, cnt);
    }
}

/* Latency plan for small allreduces: an allreduce of the whole vector at every
 * level, innermost first (node, then the same rail across nodes, ...): one
 * step per level instead of two, every step a few exchanges (p2p.h: radix).
 * Valid on grid layouts only, where every group of a level spans all groups of
 * the level below: then after level l every member of a level-(l+1) group holds
 * the same bits, and every level-(l+1) group computes the same sum in the same
 * order. */
static int grid_layout(const mxh_layout_t *L)
{
    return mxh_layout_same_order(L) && mxh_layout_grid(L);
}

static int net_level(const mxh_layout_t *L, int l)
{
    return L->type[l] == MXH_LEVEL_RAIL || L->type[l] == MXH_LEVEL_SPINE;
}

typedef enum small_plan {
    SMALL_NONE = 0, /* reduce-scatter at every level, allreduce on top, allgathers */
    SMALL_LATENCY,  /* an allreduce of the whole vector at every level */
    SMALL_HYBRID,   /* reduce-scatter in the node, allreduces of the node's piece above */
    SMALL_SPREAD    /* allreduce in the node, one spread exchange, allreduce in the node */
} small_plan_t;

/* The radix exchanges of small allreduces send the whole region to every peer:
 * p - 1 copies through the NIC at a network level of p ranks. The latency plan
 * pays while the copies of the whole vector cost less than the node level's two
 * extra steps of the others (MXH_PLAN_LATENCY_NET_BYTES); the hybrid plan while
 * the copies of the node's piece (1/g of it) cost less than the reduce-scatter
 * plan's second step per network level (MXH_PLAN_HYBRID_NET_BYTES). Both need a
 * grid layout, where every group of a level computes the same sum in the same
 * order. */
static small_plan_t small_plan(const mxh_layout_t *L, size_t count, size_t tsize)
{
    size_t copies = 0, bytes = count * tsize;
    /* a torus split (decide/levels.c) whose rails cross the dimensions in different orders
     * is no grid, but the hybrid plan holds there: after the node's reduce-scatter each
     * piece stays on its rail, whose groups cross every dimension once (one group size
     * per level and rail), until the node's allgather; copies (sum of k_d - 1 over the
     * dimensions) are the same on every rail */
    int grid = grid_layout(L), torus = L->torus_ndims > 0 && L->type[0] == MXH_LEVEL_NODE;
    if (tsize == 0 || !(grid || torus))
        return SMALL_NONE;
    for (int l = 0; l < L->nlevels; l++)
        if (net_level(L, l))
            copies += (size_t)(L->gsize[l][0] - 1);
    if (L->spread_p > 0 && bytes <= MXH_PLAN_LATENCY_BYTES) {
        size_t g = (size_t)L->gsize[0][0], per = ((size_t)L->spread_p + g - 1) / g;
        if (per * bytes <= MXH_PLAN_SPREAD_NET_BYTES)
            return SMALL_SPREAD;
    }
    if (grid && bytes <= MXH_PLAN_LATENCY_BYTES && copies * bytes <= MXH_PLAN_LATENCY_NET_BYTES)
        return SMALL_LATENCY;
    if (L->nlevels >= 2 && !net_level(L, 0) && copies > 0) {
        size_t g = (size_t)L->gsize[0][0], piece = (count + g - 1) / g * tsize;
        if (copies * piece <= MXH_PLAN_HYBRID_NET_BYTES)
            return SMALL_HYBRID;
    }
    return SMALL_NONE;
}

static void build_allreduce_latency(builder_t *b, size_t count)
{
    for (int l = 0; l < b->L->nlevels; l++)
        add_step(b, MXH_STEP_ALLREDUCE, l, 0, count);
}

/* Spread (layout spread_key; cost: 2 NVLink latencies + the farthest node's network
 * latency, ceil(P/g) copies of the vector through each NIC): the node's allreduce
 * leaves the node sum on all g ranks; the one of node position i reduces the node sums
 * of the nodes in class c = (key + i) % g (keys = c mod g, in key order: the same
 * partial sum on every node), then the node's allreduce adds the g classes in class
 * order: bitwise the same result everywhere. Balanced: every rank sends and receives
 * about P/g vectors, on its own rail. */
static void build_allreduce_spread(builder_t *b, size_t count)
{
    const mxh_layout_t *L = b->L;
    int g = L->gsize[0][b->me], i = L->coord[0][b->me], k = L->spread_key[b->me];

    add_step(b, MXH_STEP_ALLREDUCE, 0, 0, count);
    mxh_step_t *st = add_step(b, MXH_STEP_SPREAD, 1, 0, count);
    if (st != NULL) {
        st->gsize = L->spread_p;
        st->me    = k;
        st->ports = g;
        st->port  = i;
    }
    b->down = 1;
    st = add_step(b, MXH_STEP_ALLREDUCE, 0, 0, count);
    if (st != NULL) {
        st->ports = g;
        st->rot   = ((-k) % g + g) % g;
    }
}

/* Hybrid: reduce-scatter among the node's GPUs (NVLink), an allreduce of my
 * piece at every level above (one radix exchange each, instead of a
 * reduce-scatter and an allgather), allgather in the node. */
static void build_allreduce_hybrid(builder_t *b, size_t count)
{
    size_t off, cnt;
    split_even(b, add_step(b, MXH_STEP_REDUCE_SCATTER, 0, 0, count));
    even_region(b->L, b->me, 1, count, &off, &cnt);
    for (int l = 1; l < b->L->nlevels; l++)
        add_step(b, MXH_STEP_ALLREDUCE, l, off, cnt);
    b->down = 1;
    split_even(b, add_step(b, MXH_STEP_ALLGATHER, 0, 0, count));
}

/* ---- rooted: holder chains (bcast up-phase, reduce down-phase) --------------- */

/* holders[l][r] != 0: r holds (bcast) or must collect (reduce) data at level l. */
static unsigned char **holder_sets(builder_t *b, int root)
{
    const mxh_layout_t *L = b->L;
    int n = L->nranks, nl = L->nlevels;
    unsigned char **h = calloc((size_t)nl, sizeof(*h));

    if (h == NULL)
        goto fail;
    for (int l = 0; l < nl; l++) {
        h[l] = calloc((size_t)n, 1);
        if (h[l] == NULL)
            goto fail;
    }
    h[0][root] = 1;
    for (int l = 0; l + 1 < nl; l++) {
        /* O(n): mark the groups that contain a holder, then their members or leaders */
        unsigned char *grp = calloc((size_t)L->ngroups[l], 1);
        if (grp == NULL)
            goto fail;
        for (int t = 0; t < n; t++)
            if (h[l][t])
                grp[L->color[l][t]] = 1;
        for (int x = 0; x < n; x++)
            if (grp[L->color[l][x]] &&
                (L->kind[l] == MXH_LEVEL_KIND_SCATTER || L->coord[l][x] == 0))
                h[l + 1][x] = 1;
        free(grp);
    }
    return h;
fail:
    if (h)
        for (int l = 0; l < nl; l++)
            free(h[l]);
    free(h);
    b->status = MXH_ERR_NO_MEMORY;
    return NULL;
}

static void free_holders(const mxh_layout_t *L, unsigned char **h)
{
    if (h == NULL)
        return;
    for (int l = 0; l < L->nlevels; l++)
        free(h[l]);
    free(h);
}

/* The holder in my group at @level, or -1. */
static int holder_in_group(const mxh_layout_t *L, unsigned char **h, int level, int me)
{
    for (int x = 0; x < L->nranks; x++)
        if (h[level][x] && same_group(L, level, x, me))
            return x;
    return -1;
}

/* ---- rooted: the chain of small bcasts and reduces -------------------------------- */

/* The chain (cost: one flat exchange per level, p2p.h): a bcast of the whole region
 * at every network level from the root outwards (its rail, then the spine from each
 * rail member; on a torus the dimensions in the root's rail's order), then in every
 * node from the rank on the root's node position; a reduce the mirror. One latency
 * per level, where a scatter and an allgather (gather and reduce-scatter) take two per
 * level below the top. Where the node's copies are too many, the node level scatters
 * first (reduce: reduce-scatters) and the chain carries each node position's piece
 * over the network levels from the root's node, the node all-gathers last (gathers to
 * the root): one network exchange per level still. Where every chained level's step
 * is flat (at most MXH_P2P_FLAT_P ranks, its p - 1 copies within
 * MXH_PLAN_CHAIN_BYTES), no level has leaders, and the steps form a tree: no group
 * holds the data twice when its step comes, and every rank holds it at the end. Never
 * for pipelines. The same answer on every rank (global facts of the layout).
 * Simulated, RESULTS.md section 5, "Small bcast and reduce: one exchange per level". */

/* Whether the chain from level @c (0: the whole region everywhere; 1: the node's
 * pieces over the network levels) applies to @count elements of @tsize bytes. */
static int chain_applies(const builder_t *b, size_t count, size_t tsize, int c)
{
    const mxh_layout_t *L = b->L;
    int nl = L->nlevels;
    size_t region = count;
    if (tsize == 0 || (b->flags & MXH_PLAN_THROUGH) || nl < 2)
        return 0;
    for (int l = 0; l < nl; l++) {
        int p = 0, pmin = INT32_MAX;
        for (int x = 0; x < L->nranks; x++) {
            p    = L->gsize[l][x] > p ? L->gsize[l][x] : p;
            pmin = L->gsize[l][x] < pmin ? L->gsize[l][x] : pmin;
        }
        if (L->kind[l] == MXH_LEVEL_KIND_LEADER)
            return 0;
        if (l < c) { /* scattered: the largest piece goes on */
            region = (region + (size_t)pmin - 1) / (size_t)pmin;
            continue;
        }
        if (p > MXH_P2P_FLAT_P || (size_t)(p - 1) * region * tsize > MXH_PLAN_CHAIN_BYTES)
            return 0;
    }
    return 1;
}

static int build_rooted_chain(builder_t *b, size_t count, size_t tsize, int root, int bcast)
{
    const mxh_layout_t *L = b->L;
    int nl = L->nlevels, n = L->nranks, top = nl - 1, c, ok = 1, nk;
    int order[MXH_MAX_LEVELS], troot[MXH_MAX_LEVELS];
    unsigned char *hold = NULL;
    int *cnt = NULL;
    size_t off = 0, cnt_me = count;

    if (chain_applies(b, count, tsize, 0))
        c = 0;
    else if (chain_applies(b, count, tsize, 1))
        c = 1;
    else
        return 0;
    if ((hold = calloc((size_t)n, 1)) == NULL) {
        b->status = MXH_ERR_NO_MEMORY;
        return 1;
    }
    /* the bcast's order: the network levels outwards, then the node (c = 0) */
    nk = nl - c;
    for (int k = 0; k < nk; k++)
        order[k] = k + 1 < nl ? k + 1 : 0;
    for (int x = 0; x < n; x++) /* c = 1: every rank of the root's node holds its piece */
        hold[x] = x == root || (c == 1 && same_group(L, 0, x, root));
    for (int k = 0; k < nk && ok; k++) {
        int l = order[k];
        troot[k] = -1;
        free(cnt);
        if ((cnt = calloc((size_t)L->ngroups[l], sizeof(int))) == NULL) {
            b->status = MXH_ERR_NO_MEMORY;
            break;
        }
        for (int x = 0; x < n; x++)
            if (hold[x] && ++cnt[L->color[l][x]] > 1)
                ok = 0; /* a group with two holders: not a tree */
            else if (hold[x] && same_group(L, l, x, b->me))
                troot[k] = L->coord[l][x]; /* my group's holder at this step */
        for (int x = 0; x < n; x++)
            hold[x] |= cnt[L->color[l][x]] > 0;
        /* c = 1: every group carries one node position's piece (rails, torus rings):
         * cnt becomes each group's position + 1 */
        if (c == 1) {
            memset(cnt, 0, sizeof(int) * (size_t)L->ngroups[l]);
            for (int x = 0; x < n && ok; x++) {
                int *g = &cnt[L->color[l][x]];
                if (*g == 0)
                    *g = L->coord[0][x] + 1;
                ok = *g == L->coord[0][x] + 1;
            }
        }
    }
    for (int x = 0; x < n && ok; x++)
        ok = hold[x];
    if (ok && b->status == MXH_OK && c == 1) { /* my node piece; the node's first step */
        even_region(L, b->me, 1, count, &off, &cnt_me);
        b->down = 0;
        if (bcast && same_group(L, 0, b->me, root)) {
            mxh_step_t *st = add_step(b, MXH_STEP_SCATTER, 0, 0, count);
            split_even(b, st);
            if (st)
                st->root = L->coord[0][root];
        } else if (!bcast) {
            split_even(b, add_step(b, MXH_STEP_REDUCE_SCATTER, 0, 0, count));
        }
    }
    for (int i = 0; i < nk && ok && b->status == MXH_OK; i++) {
        int k = bcast ? i : nk - 1 - i, l = order[k];
        /* stages ascend: bcast up to the top then the node's down; reduce the node's
         * up, the top, then the levels below it down */
        b->down = bcast ? l == 0 && top > 0 : l != 0 && l != top;
        if (troot[k] < 0)
            continue;
        mxh_step_t *st =
            add_step(b, bcast ? MXH_STEP_BCAST : MXH_STEP_REDUCE, l, off, cnt_me);
        if (st)
            st->root = troot[k];
    }
    if (ok && b->status == MXH_OK && c == 1) { /* the node's last step */
        b->down = 1;
        if (bcast) {
            split_even(b, add_step(b, MXH_STEP_ALLGATHER, 0, 0, count));
        } else if (same_group(L, 0, b->me, root)) {
            mxh_step_t *st = add_step(b, MXH_STEP_GATHER, 0, 0, count);
            split_even(b, st);
            if (st)
                st->root = L->coord[0][root];
        }
    }
    free(cnt);
    free(hold);
    return ok || b->status != MXH_OK;
}

/* Level @l's step between my group's holder @t and its other members: a bcast from
 * it (@bcast) or a reduce to it. Whole-region at the top and where the holder's group
 * takes the region whole (through: a scatter here and an allgather after the levels
 * above would send the holder's own part out a second time, 2(p-1)/p of the region
 * through its link where a bcast sends it once); a scatter / gather on the other
 * scatter levels; elsewhere a send / receive between the holder and the group's first
 * member. */
static void holder_step(builder_t *b, int bcast, int l, int t, size_t off, size_t cnt)
{
    const mxh_layout_t *L = b->L;
    int root = L->coord[l][t];
    mxh_step_t *st = NULL;

    if (l == L->nlevels - 1 || (L->kind[l] == MXH_LEVEL_KIND_SCATTER && through(b, l))) {
        st = add_step(b, bcast ? MXH_STEP_BCAST : MXH_STEP_REDUCE, l, off, cnt);
    } else if (L->kind[l] == MXH_LEVEL_KIND_SCATTER) {
        st = add_step(b, bcast ? MXH_STEP_SCATTER : MXH_STEP_GATHER, l, off, cnt);
        split_even(b, st);
    } else if (root != 0 && t == b->me) {
        st   = add_step(b, bcast ? MXH_STEP_SEND : MXH_STEP_RECV, l, off, cnt);
        root = 0;
    } else if (root != 0 && L->coord[l][b->me] == 0) {
        st = add_step(b, bcast ? MXH_STEP_RECV : MXH_STEP_SEND, l, off, cnt);
    }
    if (st)
        st->root = root;
}

static void build_bcast(builder_t *b, unsigned char **h, size_t count, int root)
{
    const mxh_layout_t *L = b->L;
    int top = L->nlevels - 1, me = b->me;
    size_t off, cnt;

    for (int l = 0; l <= top; l++) {
        int t;
        if (!mxh_layout_participates(L, me, l))
            break;
        t = holder_in_group(L, h, l, me);
        if (l == top && t < 0) {
            mxh_debug("plan: bcast root %d: no holder in rank %d's top group", root, me);
            b->status = MXH_ERR_UNSUPPORTED;
            break;
        }
        if (t < 0)
            continue;
        even_region(L, me, l, count, &off, &cnt);
        holder_step(b, 1, l, t, off, cnt);
    }
    b->down = 1;
    for (int l = top - 1; l >= 0; l--) {
        if (!mxh_layout_participates(L, me, l))
            continue;
        even_region(L, me, l, count, &off, &cnt);
        if (L->kind[l] == MXH_LEVEL_KIND_SCATTER) {
            if (!through(b, l) || holder_in_group(L, h, l, me) < 0)
                split_even(b, add_step(b, MXH_STEP_ALLGATHER, l, off, cnt));
        } else {
            add_step(b, MXH_STEP_BCAST, l, off, cnt);
        }
    }
}

static void build_reduce(builder_t *b, unsigned char **h, size_t count)
{
    const mxh_layout_t *L = b->L;
    int top = L->nlevels - 1, me = b->me;
    size_t off, cnt;

    for (int l = 0; l < top; l++) {
        if (!mxh_layout_participates(L, me, l))
            break;
        even_region(L, me, l, count, &off, &cnt);
        if (L->kind[l] != MXH_LEVEL_KIND_SCATTER)
            add_step(b, MXH_STEP_REDUCE, l, off, cnt);
        else if (!through(b, l) || holder_in_group(L, h, l, me) < 0)
            split_even(b, add_step(b, MXH_STEP_REDUCE_SCATTER, l, off, cnt));
        /* else the holder's group reduces the whole region to it on the way down
         * (bcast's mirror): the levels above reduce each member's part with only
         * its own contribution in it, the final reduce adds the others' */
    }
    b->down = 1;
    for (int l = top; l >= 0; l--) {
        int t;
        if (!mxh_layout_participates(L, me, l))
            continue;
        t = holder_in_group(L, h, l, me);
        if (t < 0)
            continue;
        even_region(L, me, l, count, &off, &cnt);
        holder_step(b, 0, l, t, off, cnt);
    }
}

/* A rooted collective's steps by the holders of its data (bcast) or of its result
 * (reduce) at each level. */
static void build_rooted(builder_t *b, size_t count, int root, int bcast)
{
    unsigned char **h = holder_sets(b, root);

    if (h == NULL)
        return;
    if (bcast)
        build_bcast(b, h, count, root);
    else
        build_reduce(b, h, count);
    free_holders(b->L, h);
}

/* ---- block collectives: blocks ordered by a key of level coordinates -------- */

static const builder_t *key_builder;
static int cmp_key(const void *a, const void *bb)
{
    int x = *(const int *)a, y = *(const int *)bb;
    const builder_t *b = key_builder;
    for (int c = 0; c < b->ncomp; c++) {
        int l = b->comp_level[c];
        int cx = mxh_layout_ecoord(b->L, l, x), cy = mxh_layout_ecoord(b->L, l, y);
        if (cx != cy)
            return cx < cy ? -1 : 1;
    }
    return x - y;
}

/* Key components: SCATTER levels inner->outer, the top, LEADER levels outer->inner.
 * That is the order in which a reduce-scatter fixes them, so every set of blocks a
 * rank holds is a contiguous range of positions. */
static int build_block_order(builder_t *b)
{
    const mxh_layout_t *L = b->L;
    int n = L->nranks, top = L->nlevels - 1;

    b->ncomp = 0;
    for (int l = 0; l < top; l++)
        if (L->kind[l] == MXH_LEVEL_KIND_SCATTER)
            b->comp_level[b->ncomp++] = l;
    b->comp_level[b->ncomp++] = top;
    for (int l = top - 1; l >= 0; l--)
        if (L->kind[l] == MXH_LEVEL_KIND_LEADER)
            b->comp_level[b->ncomp++] = l;
    for (int c = 0; c < b->ncomp; c++)
        b->comp_index[b->comp_level[c]] = c;

    b->order            = malloc(sizeof(int) * (size_t)n);
    b->plan->block_pos  = malloc(sizeof(int) * (size_t)n);
    if (b->order == NULL || b->plan->block_pos == NULL) {
        b->status = MXH_ERR_NO_MEMORY;
        return -1;
    }
    for (int r = 0; r < n; r++)
        b->order[r] = r;
    key_builder = b;
    qsort(b->order, (size_t)n, sizeof(int), cmp_key);
    for (int i = 0; i < n; i++)
        b->plan->block_pos[b->order[i]] = i;
    if (b->bcounts != NULL) {
        b->bpref = malloc(sizeof(size_t) * ((size_t)n + 1));
        if (b->bpref == NULL) {
            b->status = MXH_ERR_NO_MEMORY;
            return -1;
        }
        b->bpref[0] = 0;
        for (int i = 0; i < n; i++)
            b->bpref[i + 1] = b->bpref[i] + b->bcounts[b->order[i]];
    }
    return 0;
}

/* First element of block position @pos in the work buffer. */
static size_t pos_offset(const builder_t *b, int pos, size_t bc)
{
    return b->bpref != NULL ? b->bpref[pos] : (size_t)pos * bc;
}

/* Block range [lo,hi) of ranks whose first @prefix key components equal mine. */
static void block_range(const builder_t *b, int prefix, int *lo, int *hi)
{
    const mxh_layout_t *L = b->L;
    int p = b->plan->block_pos[b->me], n = L->nranks;
    int l0 = p, h0 = p + 1;

    while (l0 > 0) {
        int same = 1;
        for (int c = 0; c < prefix && same; c++)
            same = mxh_layout_ecoord(L, b->comp_level[c], b->order[l0 - 1]) ==
                   mxh_layout_ecoord(L, b->comp_level[c], b->me);
        if (!same)
            break;
        l0--;
    }
    while (h0 < n) {
        int same = 1;
        for (int c = 0; c < prefix && same; c++)
            same = mxh_layout_ecoord(L, b->comp_level[c], b->order[h0]) ==
                   mxh_layout_ecoord(L, b->comp_level[c], b->me);
        if (!same)
            break;
        h0++;
    }
    *lo = l0;
    *hi = h0;
}

/* A step over the blocks sharing my first @prefix components, split among the
 * members of the level by component @prefix (the level's own coordinate). */
static mxh_step_t *block_step(builder_t *b, mxh_step_type_t type, int level, int prefix,
                              int split, size_t bc)
{
    int lo, hi;
    block_range(b, prefix, &lo, &hi);
    size_t off     = pos_offset(b, lo, bc);
    mxh_step_t *st = add_step(b, type, level, off, pos_offset(b, hi, bc) - off);
    if (!split || st == NULL)
        return st;
    if (alloc_parts(b, st))
        return st;
    for (int i = lo; i < hi; i++) {
        int x = mxh_layout_ecoord(b->L, level, b->order[i]);
        if (x >= 0 && x < st->gsize)
            st->counts[x] += (int)(b->bcounts != NULL ? b->bcounts[b->order[i]] : bc);
    }
    for (int x = 1; x < st->gsize; x++)
        st->displs[x] = st->displs[x - 1] + st->counts[x - 1];
    return st;
}

/* A block step of leader level @l between the group's first member and the others. */
static void leader_step(builder_t *b, mxh_step_type_t type, int l, size_t bc)
{
    mxh_step_t *st = block_step(b, type, l, b->comp_index[l], 1, bc);
    if (st)
        st->root = 0;
}

/* The top level's step of @type unless I stopped below it (@stop), then the way down:
 * the level it starts from. */
static int top_then_down(builder_t *b, mxh_step_type_t type, int top, int stop, size_t bc)
{
    if (stop == top)
        block_step(b, type, top, b->comp_index[top], 1, bc);
    b->down = 1;
    return stop == top ? top - 1 : stop;
}

static void build_reduce_scatter_block(builder_t *b, size_t bc)
{
    const mxh_layout_t *L = b->L;
    int top = L->nlevels - 1, stop = top, nscatter_below = 0;

    if (build_block_order(b))
        return;
    for (int l = 0; l < top; l++) {
        if (L->kind[l] == MXH_LEVEL_KIND_SCATTER) {
            block_step(b, MXH_STEP_REDUCE_SCATTER, l, b->comp_index[l], 1, bc);
            nscatter_below++;
        } else {
            block_step(b, MXH_STEP_REDUCE, l, nscatter_below, 0, bc);
            if (L->coord[l][b->me] != 0) {
                stop = l;
                break;
            }
        }
    }
    for (int l = top_then_down(b, MXH_STEP_REDUCE_SCATTER, top, stop, bc); l >= 0; l--)
        if (L->kind[l] == MXH_LEVEL_KIND_LEADER)
            leader_step(b, MXH_STEP_SCATTER, l, bc);
}

static void build_allgather(builder_t *b, size_t bc)
{
    const mxh_layout_t *L = b->L;
    int top = L->nlevels - 1, stop = top;

    if (build_block_order(b))
        return;
    for (int l = 0; l < top; l++) {
        if (L->kind[l] != MXH_LEVEL_KIND_LEADER)
            continue;
        leader_step(b, MXH_STEP_GATHER, l, bc);
        if (L->coord[l][b->me] != 0) {
            stop = l;
            break;
        }
    }
    for (int l = top_then_down(b, MXH_STEP_ALLGATHER, top, stop, bc); l >= 0; l--) {
        if (L->kind[l] == MXH_LEVEL_KIND_SCATTER) {
            block_step(b, MXH_STEP_ALLGATHER, l, b->comp_index[l], 1, bc);
        } else {
            int nscatter_below = 0;
            for (int k = 0; k < l; k++)
                nscatter_below += L->kind[k] == MXH_LEVEL_KIND_SCATTER;
            block_step(b, MXH_STEP_BCAST, l, nscatter_below, 0, bc);
        }
    }
}

mxh_status_t mxh_plan_create(const mxh_layout_t *layout, int rank, mxh_coll_t coll,
                             size_t count, int root, mxh_plan_t **plan_p)
{
    return mxh_plan_create_sized(layout, rank, coll, count, root, 0, plan_p);
}

static mxh_status_t plan_build(const mxh_layout_t *layout, int rank, mxh_coll_t coll,
                               size_t count, int root, size_t tsize, const size_t *bcounts,
                               unsigned flags, mxh_plan_t **plan_p);

mxh_status_t mxh_plan_create_sized(const mxh_layout_t *layout, int rank, mxh_coll_t coll,
                                   size_t count, int root, size_t tsize, mxh_plan_t **plan_p)
{
    return plan_build(layout, rank, coll, count, root, tsize, NULL, 0, plan_p);
}

mxh_status_t mxh_plan_create_flags(const mxh_layout_t *layout, int rank, mxh_coll_t coll,
                                   size_t count, int root, size_t tsize, unsigned flags,
                                   mxh_plan_t **plan_p)
{
    return plan_build(layout, rank, coll, count, root, tsize, NULL, flags, plan_p);
}

mxh_status_t mxh_plan_create_v(const mxh_layout_t *layout, int rank, mxh_coll_t coll,
                               const size_t *bcounts, mxh_plan_t **plan_p)
{
    size_t total = 0;
    if (layout == NULL || bcounts == NULL ||
        (coll != MXH_COLL_ALLGATHERV && coll != MXH_COLL_REDUCE_SCATTER)) {
        mxh_error("plan: invalid v-plan request (coll %d)", (int)coll);
        return MXH_ERR_INVALID_PARAM;
    }
    for (int r = 0; r < layout->nranks; r++)
        total += bcounts[r];
    return plan_build(layout, rank, coll, total, -1, 0, bcounts, 0, plan_p);
}

static mxh_status_t plan_build(const mxh_layout_t *layout, int rank, mxh_coll_t coll,
                               size_t count, int root, size_t tsize, const size_t *bcounts,
                               unsigned flags, mxh_plan_t **plan_p)
{
    builder_t b;

    if (layout == NULL || layout->nlevels < 1 || rank < 0 || rank >= layout->nranks ||
        coll < 0 || coll >= MXH_COLL_COUNT || (coll >= MXH_COLL_NSCHED && bcounts == NULL) ||
        (mxh_coll_info(coll)->rooted &&
         (root < 0 || root >= layout->nranks))) {
        mxh_error("plan: invalid request (coll %d, rank %d, root %d)", (int)coll, rank, root);
        return MXH_ERR_INVALID_PARAM;
    }
    memset(&b, 0, sizeof(b));
    b.L    = layout;
    b.me   = rank;
    b.bcounts = bcounts;
    b.flags   = flags;
    b.plan = calloc(1, sizeof(*b.plan));
    if (b.plan == NULL)
        return MXH_ERR_NO_MEMORY;
    b.plan->coll   = coll;
    b.plan->count  = count;
    b.plan->root   = mxh_coll_info(coll)->rooted ? root : -1;
    b.plan->rank   = rank;
    b.plan->nranks = layout->nranks;

    switch (coll) {
    case MXH_COLL_ALLREDUCE:
        b.plan->work_count = count;
        switch (small_plan(layout, count, tsize)) {
        case SMALL_LATENCY:
            build_allreduce_latency(&b, count);
            break;
        case SMALL_HYBRID:
            build_allreduce_hybrid(&b, count);
            break;
        case SMALL_SPREAD:
            build_allreduce_spread(&b, count);
            break;
        default:
            build_allreduce(&b, count);
        }
        break;
    case MXH_COLL_BCAST:
    case MXH_COLL_REDUCE:
        b.plan->work_count = count;
        if (!build_rooted_chain(&b, count, tsize, root, coll == MXH_COLL_BCAST))
            build_rooted(&b, count, root, coll == MXH_COLL_BCAST);
        break;
    case MXH_COLL_REDUCE_SCATTER_BLOCK:
        b.plan->work_count = count * (size_t)layout->nranks;
        build_reduce_scatter_block(&b, count);
        break;
    case MXH_COLL_ALLGATHER:
        b.plan->work_count = count * (size_t)layout->nranks;
        build_allgather(&b, count);
        break;
    case MXH_COLL_REDUCE_SCATTER: /* v-plans: count is the total */
        b.plan->work_count = count;
        build_reduce_scatter_block(&b, 0);
        break;
    case MXH_COLL_ALLGATHERV:
        b.plan->work_count = count;
        build_allgather(&b, 0);
        break;
    default:
        break;
    }
    free(b.order);
    free(b.bpref);
    for (int i = 0; i < b.plan->nsteps; i++)
        if (b.plan->steps[i].count > b.plan->tmp_count)
            b.plan->tmp_count = b.plan->steps[i].count;
    b.plan->nstages    = 2 * layout->nlevels - 1;
    b.plan->stage_step = malloc(sizeof(int) * (size_t)b.plan->nstages);
    if (b.plan->stage_step == NULL && b.status == MXH_OK)
        b.status = MXH_ERR_NO_MEMORY;
    if (b.status == MXH_OK) {
        for (int s = 0; s < b.plan->nstages; s++)
            b.plan->stage_step[s] = -1;
        for (int i = 0; i < b.plan->nsteps; i++) {
            int s = b.plan->steps[i].stage;
            if (s < 0 || s >= b.plan->nstages || b.plan->stage_step[s] >= 0 ||
                (i > 0 && s <= b.plan->steps[i - 1].stage)) {
                mxh_error("plan: %s rank %d: step %d has stage %d out of order",
                          mxh_coll_name(coll), rank, i, s);
                b.status = MXH_ERR_UNSUPPORTED;
                break;
            }
            b.plan->stage_step[s] = i;
        }
    }
    if (b.status != MXH_OK) {
        mxh_plan_destroy(b.plan);
        return b.status;
    }
    *plan_p = b.plan;
    return MXH_OK;
}

size_t mxh_plan_describe(const mxh_plan_t *plan, char *buf, size_t len)
{
    size_t off = 0;
#define PUT(...) mxh_str_put(buf, len, &off, __VA_ARGS__)

    if (len)
        buf[0] = '\0';
    PUT("%s count=%zu root=%d rank=%d steps=%d\n", mxh_coll_name(plan->coll), plan->count,
        plan->root, plan->rank, plan->nsteps);
    for (int i = 0; i < plan->nsteps; i++) {
        const mxh_step_t *s = &plan->steps[i];
        PUT("  S%d L%d %-14s [%zu,+%zu) me=%d/%d", s->stage, s->level, mxh_step_type_name(s->type), s->offset,
            s->count, s->me, s->gsize);
        if (s->type == MXH_STEP_REDUCE || s->type == MXH_STEP_BCAST ||
            s->type == MXH_STEP_SCATTER || s->type == MXH_STEP_GATHER)
            PUT(" root=%d", s->root);
        if (s->type == MXH_STEP_SEND || s->type == MXH_STEP_RECV)
            PUT(" peer=%d", s->root);
        if (s->type == MXH_STEP_SPREAD)
            PUT(" port=%d/%d", s->port, s->ports);
        else if (s->ports)
            PUT(" rot=%d", s->rot);
        if (s->counts) {
            PUT(" parts=");
            for (int x = 0; x < s->gsize; x++)
                PUT("%s%d", x ? "," : "", s->counts[x]);
        }
        PUT("\n");
    }
#undef PUT
    return off;
}
