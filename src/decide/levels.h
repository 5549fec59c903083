/* Decision: gathered records -> levels. Pure functions over arrays, no MPI,
 * so every rank computes the same answer and unit tests can feed fabricated
 * layouts of any size. */
#ifndef MXH_LEVELS_H
#define MXH_LEVELS_H

#include <stddef.h>

#include "topo/record.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MXH_MAX_LEVELS 4

typedef enum mxh_level_type {
    MXH_LEVEL_NODE = 0, /* ranks of one node */
    MXH_LEVEL_RAIL,     /* same rail, nodes under one leaf switch */
    MXH_LEVEL_SPINE,    /* same rail and position, across leaf switches */
    MXH_LEVEL_ISLAND,   /* ranks of one NVLink island inside a node (innermost) */
    MXH_LEVEL_TYPE_COUNT
} mxh_level_type_t;

/* How a (non-top) level is crossed. SCATTER: all groups have the same size,
 * the data is reduce-scattered / all-gathered across the group (bandwidth
 * optimal). LEADER: groups differ in size (uneven ranks per node, ...), the
 * data is reduced to / broadcast from the group member with coordinate 0;
 * only those leaders take part in the outer levels. The top level is always
 * crossed whole (allreduce, reduce-scatter, allgather, bcast, reduce). */
typedef enum mxh_level_kind {
    MXH_LEVEL_KIND_SCATTER = 0,
    MXH_LEVEL_KIND_LEADER,
    MXH_LEVEL_KIND_TOP
} mxh_level_kind_t;

typedef struct mxh_layout {
    int nranks;
    int nlevels;                          /* levels kept (groups larger than 1 exist) */
    mxh_level_type_t type[MXH_MAX_LEVELS];
    mxh_level_kind_t kind[MXH_MAX_LEVELS];
    int  ngroups[MXH_MAX_LEVELS];
    int *color[MXH_MAX_LEVELS];           /* [rank]: group id at the level, 0..ngroups-1 */
    int *coord[MXH_MAX_LEVELS];           /* [rank]: position inside the group (split key) */
    int *gsize[MXH_MAX_LEVELS];           /* [rank]: size of the rank's group */
    int *rep[MXH_MAX_LEVELS];             /* [rank]: who stands for the rank at the level:
                                             itself, or after a LEADER level its leader */
    /* structure, for descriptions and tests */
    int  nnodes, nleaves;
    int *node_of;                         /* [rank] node index (first appearance order) */
    int *local_index;                     /* [rank] index among the ranks of its node */
    int *rail;                            /* [rank] rail: forced, the GPU's NIC, or local index */
    int *gpu_of;                          /* [rank] GPU index on its node, -1 none */
    int *island_of;                       /* [rank] NVLink island of its GPU, -1 none */
    int  nislands;                        /* islands per node when the island level is used */
    int *leaf_of_node;                    /* [node] leaf index */
    int *node_pos;                        /* [node] position among the nodes of its leaf */
    int *node_first_rank;                 /* [node] lowest rank of the node */
    int *leaf_first_node;                 /* [leaf] first node of the leaf */
    int  node_regular;                    /* all nodes have the same rails */
    /* torus of nodes (records with torus coordinates, see torus_levels in levels.c):
       one network level per dimension longer than 1, each rail its own order */
    int  ring[MXH_MAX_LEVELS];            /* level's groups are neighbours along a torus
                                             dimension, in ring order (coord +1 = next) */
    int  torus_ndims;                     /* dimensions longer than 1; 0 = no torus split */
    int  torus_dim[3];                    /* [j] the record's dimension index */
    int  torus_k[3];                      /* [j] its length */
    int  torus_nrails;                    /* rail positions (ranks per node) */
    int *torus_order;                     /* [rail * 3 + j] dimension (0..ndims-1) of the
                                             rail's network level j; + 4 when its ring runs
                                             in the - direction */
    /* the spread group (mxh_layout_spread_init): the ranks of one node position across
       every node, which small allreduces cross in one exchange (decide/plan.c) */
    int  spread_p;                        /* its size (nodes), 0 = not used */
    int *spread_key;                      /* [rank] position in it (node order) */
} mxh_layout_t;

/* Compute the levels from @n records (index = rank in the communicator).
 * @levels_mask: bit per mxh_level_type_t allowed by configuration; NODE and
 * RAIL are required, without SPINE leaf switches are ignored. */
mxh_status_t mxh_layout_create(const mxh_record_t *recs, int n, int levels_mask,
                               mxh_layout_t **layout_p);
void mxh_layout_destroy(mxh_layout_t *layout);

const char *mxh_level_type_name(mxh_level_type_t type);
/* The level's groups span nodes (rail, spine: their exchanges take the NIC). */
static inline int mxh_level_is_net(mxh_level_type_t type)
{
    return type == MXH_LEVEL_RAIL || type == MXH_LEVEL_SPINE;
}
const char *mxh_level_kind_name(mxh_level_kind_t kind);

/* Coordinate of the rank's representative at @level (= its own coordinate when
 * it participates there). Orders the blocks of reduce_scatter/allgather. */
static inline int mxh_layout_ecoord(const mxh_layout_t *layout, int level, int rank)
{
    return layout->coord[level][layout->rep[level][rank]];
}

/* 1 when every rail crosses the levels alike, 0 on a torus split whose rails have
 * different level orders or ring directions: there a level's groups of different rails
 * cross different dimensions, so plans that reduce the whole vector at every level (the
 * latency plan) would sum in a different order on different rails. */
int mxh_layout_same_order(const mxh_layout_t *layout);

/* 1 when every level is SCATTER (or the top) with one group size on every rank and the
 * sizes multiply to the ranks: every group of a level spans all groups of the level
 * below (plan.c's latency and spread plans need it). */
int mxh_layout_grid(const mxh_layout_t *layout);

/* The spread group of small allreduces: where the levels are a node level of g ranks
 * (2..32) and two network levels or more above it (rails under leaf switches, then the
 * spine; not a torus), every level's groups of one size spanning the groups below (a
 * grid), the ranks of node position i across all P >= g nodes form one group (key:
 * the node's position, coordinates of the network levels in mixed radix). Sets
 * spread_p and spread_key, or leaves spread_p 0 where the layout has no such group.
 * Pure: every rank computes the same. Called by the hierarchy when it creates the
 * group's communicator (MPIX_HIER_SPREAD), and by tests. */
mxh_status_t mxh_layout_spread_init(mxh_layout_t *layout);

/* Participates at @level: coordinate 0 at every LEADER level below it. */
int mxh_layout_participates(const mxh_layout_t *layout, int rank, int level);

/* Human-readable description (same text on every rank). Returns the length
 * the full text needs (without NUL), like snprintf. */
size_t mxh_layout_describe(const mxh_layout_t *layout, const mxh_record_t *recs, char *buf,
                           size_t len);

#ifdef __cplusplus
}
#endif

#endif
