/* Rail exclusion: the decision (pure). See rail_exclude.h. */
#include "coll/rail_exclude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mxh_xrail_free(mxh_xrail_t *x)
{
    free(x->piece);
    free(x->rail_at);
    free(x->counts);
    free(x->displs);
    memset(x, 0, sizeof(*x));
}

mxh_status_t mxh_xrail_plan(const mxh_layout_t *L, uint64_t mask, mxh_xrail_t *x, char *why,
                            size_t whylen)
{
    int g, n = L->nranks;

    memset(x, 0, sizeof(*x));
    x->spine_level = -1;
    if (why && whylen)
        why[0] = '\0';
    if (mask == 0)
        return MXH_OK;
    for (int r = 0; r < n; r++)
        if (L->rail[r] >= 0 && L->rail[r] < 64 && (mask >> L->rail[r] & 1))
            x->excluded |= (uint64_t)1 << L->rail[r];
    if (x->excluded == 0) {
        snprintf(why, whylen, "no rank of this communicator is on an excluded rail");
        return MXH_OK;
    }
    if (L->nlevels < 2 || L->type[0] != MXH_LEVEL_NODE || L->kind[0] != MXH_LEVEL_KIND_SCATTER ||
        L->type[1] != MXH_LEVEL_RAIL) {
        snprintf(why, whylen, "the hierarchy is not node (even) -> rail");
        return MXH_OK;
    }
    if (L->nlevels > 2 && L->type[2] != MXH_LEVEL_SPINE) {
        snprintf(why, whylen, "unexpected level above the rail");
        return MXH_OK;
    }
    g = L->gsize[0][0];
    x->piece   = malloc(sizeof(int) * (size_t)g);
    x->rail_at = malloc(sizeof(int) * (size_t)g);
    x->counts  = malloc(sizeof(int) * (size_t)g);
    x->displs  = malloc(sizeof(int) * (size_t)g);
    if (!x->piece || !x->rail_at || !x->counts || !x->displs) {
        mxh_xrail_free(x);
        return MXH_ERR_NO_MEMORY;
    }
    for (int j = 0; j < g; j++)
        x->rail_at[j] = -2;
    /* the rank at node coordinate j has the same rail on every node, rails distinct */
    for (int r = 0; r < n; r++) {
        int j = L->coord[0][r];
        if (L->gsize[0][r] != g || j < 0 || j >= g || L->rail[r] < 0 ||
            (x->rail_at[j] != -2 && x->rail_at[j] != L->rail[r])) {
            snprintf(why, whylen, "nodes differ in their rails");
            mxh_xrail_free(x);
            x->spine_level = -1;
            return MXH_OK;
        }
        x->rail_at[j] = L->rail[r];
    }
    for (int j = 0; j < g; j++)
        for (int k = 0; k < j; k++)
            if (x->rail_at[j] == x->rail_at[k]) {
                snprintf(why, whylen, "several ranks of a node share a rail");
                mxh_xrail_free(x);
                x->spine_level = -1;
                return MXH_OK;
            }
    for (int j = 0; j < g; j++) {
        int ex = x->rail_at[j] < 64 && (mask >> x->rail_at[j] & 1);
        x->piece[j] = ex ? -1 : x->nhealthy++;
    }
    if (x->nhealthy == 0) {
        snprintf(why, whylen, "every rail is excluded: ignored");
        x->ignored_all = 1;
        x->active      = 0;
        return MXH_OK;
    }
    x->g           = g;
    x->node_level  = 0;
    x->rail_level  = 1;
    x->spine_level = L->nlevels > 2 ? 2 : -1;
    x->active      = 1;
    return MXH_OK;
}
