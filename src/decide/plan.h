/* Plans: the list of steps one rank executes for one collective shape
 * (collective, count, root) on a layout. Built by a pure function of the
 * layout, so plans of every rank can be built and checked without MPI, and
 * cached per communicator. Offsets and counts are in elements of the
 * collective's datatype; the executor (exec.h) runs the steps with MPI. */
#ifndef MXH_PLAN_H
#define MXH_PLAN_H

#include <stddef.h>

#include "util/coll_desc.h"
#include "decide/levels.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mxh_step_type {
    MXH_STEP_REDUCE_SCATTER = 0, /* in place over the region; my part lands at displs[me] */
    MXH_STEP_REDUCE,             /* region reduced to root (in place at root) */
    MXH_STEP_ALLREDUCE,          /* region, in place */
    MXH_STEP_ALLGATHER,          /* allgatherv in place: parts counts/displs of the region */
    MXH_STEP_BCAST,              /* region from root */
    MXH_STEP_SCATTER,            /* scatterv of the region from root, parts counts/displs */
    MXH_STEP_GATHER,             /* gatherv of the region to root, parts counts/displs */
    MXH_STEP_SEND,               /* region to member `root` (the peer) */
    MXH_STEP_RECV,               /* region from member `root` (the peer) */
    MXH_STEP_SPREAD              /* on the spread group (layout spread_key; gsize = P nodes,
                                    me = my node's key): the region of every node whose key
                                    is = me + port (mod ports) reduced in key order, in place
                                    (mine sent to the nodes of key = me - port) */
} mxh_step_type_t;

typedef struct mxh_step {
    mxh_step_type_t type;
    int    level;   /* index of the level communicator */
    int    root;    /* root (or peer) rank inside the level communicator */
    int    gsize;   /* size of the level communicator */
    int    me;      /* my rank inside the level communicator */
    size_t offset;  /* first element of the region in the work buffer */
    size_t count;   /* elements in the region */
    int   *counts;  /* [gsize] parts, for scatter/gather-like steps (else NULL) */
    int   *displs;  /* [gsize] part offsets relative to offset */
    int    stage;   /* pipeline slot: up-phase level l -> l, top -> top, down level l ->
                       2*top - l; identical for the same step on every group member */
    int    net;     /* the level's groups span nodes (rail, spine): messages cross the
                       network, where each one costs microseconds of latency */
    int    rootless; /* bcast/reduce of a pipeline (MXH_PLAN_THROUGH): point to point,
                        split the region among the other members only (p2p.c); a reduce
                        on the network: the root adds its own part last (root_adds) */
    int    ring;    /* the level's groups are neighbours along a torus dimension in ring
                       order (layout ring[]): rings keep every message on one link */
    int    kary;    /* network step of a schedule the cost model lets exchange in
                       log_f p rounds where the group is long (p2p.c kary; hier.c) */
    int    rsag;    /* network allreduce step of a schedule whose small regions
                       reduce-scatter + allgather instead of radix (p2p.c; hier.c) */
    int    ports;   /* spread plans: the node's ranks (g), each a port to 1/g of the nodes;
                       0 elsewhere. MXH_STEP_SPREAD: my node position is port. The node
                       allreduce after it (a radix exchange of one digit): member vectors
                       reduced in class order, member (c + rot) % g for class c */
    int    port;
    int    rot;
    /* stamped by the tuning pass (decide/tune.c) for the step's element size; plan.c
     * leaves them 0. The executor only reads them. */
    int    shm;     /* the level's shared-memory segment runs it (where this rank has one) */
    int    p2p;     /* else point to point (mxh_p2p_usable); else MPI's collective */
    int    algo;    /* the point-to-point algorithm (mxh_p2p_algo_t) + 1; 0: not tuned
                       (steps built by hand: p2p.c takes mxh_p2p_choose's) */
} mxh_step_t;

typedef struct mxh_plan {
    mxh_coll_t  coll;
    size_t      count;      /* count (allreduce, bcast, reduce) or block count (rsb, allgather) */
    int         root;       /* bcast/reduce root, else -1 */
    int         rank;       /* whose plan */
    int         nsteps;
    mxh_step_t *steps;
    size_t      work_count; /* elements of the work buffer */
    size_t      tmp_count;  /* elements of the executor's temporary buffer */
    int        *block_pos;  /* rsb/allgather: [nranks] block position of each rank in work */
    int         nranks;
    int         nstages;    /* 2 * nlevels - 1 */
    int        *stage_step; /* [nstages] index of my step of that stage, or -1 */
} mxh_plan_t;

const char *mxh_step_type_name(mxh_step_type_t type);

/* Build the plan of @rank. The layout must have at least one level. */
mxh_status_t mxh_plan_create(const mxh_layout_t *layout, int rank, mxh_coll_t coll,
                             size_t count, int root, mxh_plan_t **plan_p);

/* Allreduces of at most this many bytes on grid layouts (every level's groups of
 * one size, spanning the groups below) may get the latency plan: an allreduce of the
 * whole vector at every level, innermost first. */
#define MXH_PLAN_LATENCY_BYTES 4096
/* ... and at most this many bytes of copies through the NIC: (p - 1) * bytes
 * summed over the network levels (rail, spine) of p ranks each. Simulated on 16 nodes
 * x 8 GPUs (one rail of 16), the latency plan wins at 1 KiB and loses at 4 KiB. */
#define MXH_PLAN_LATENCY_NET_BYTES (32u << 10)
/* Larger allreduces on grid layouts get the hybrid plan (reduce-scatter in the
 * node, an allreduce of the node's piece at every network level, allgather in
 * the node) while the piece's copies through the NIC stay within this. Simulated on
 * 32 x 8 GPUs (rail 16, spine 2), the hybrid beats the reduce-scatter plan at 16 and
 * 32 KiB and loses at 64 KiB (hence 96 KiB: 32 KiB hybrid, 64 KiB not). */
#define MXH_PLAN_HYBRID_NET_BYTES (96u << 10)
/* Layouts with a spread group (two network levels or more: rails under leaf switches,
 * a spine; mxh_layout_spread_init) give allreduces of at most MXH_PLAN_LATENCY_BYTES
 * the spread plan instead of the latency plan while its copies through the NIC,
 * ceil(P / g) * bytes, stay within this: an allreduce in the node, one exchange in
 * which each of the node's g ranks reduces the node sums of 1/g of the P nodes (a
 * port to them: every NIC of the node in use), an allreduce of the g partial sums in
 * the node. One network latency (the farthest node's) instead of one per network
 * level, for one more NVLink latency. See benchmarks/RESULTS.md section 5. */
#define MXH_PLAN_SPREAD_NET_BYTES (64u << 10)

/* Small bcasts and reduces take the chain (plan.c build_rooted_chain: the whole region
 * at every level, one flat exchange each, or the node's pieces over the network levels)
 * while every chained level's p - 1 copies stay within this: on a rail of 16 the chain
 * beats the scatter shape at 2 KiB and, on exact links, loses at 4 KiB (RESULTS.md
 * section 5, "Small bcast and reduce: one exchange per level"). */
#define MXH_PLAN_CHAIN_BYTES (32u << 10)

/* The same, knowing the element size (@tsize bytes; 0: unknown), which picks the
 * latency plan for small allreduces. */
mxh_status_t mxh_plan_create_sized(const mxh_layout_t *layout, int rank, mxh_coll_t coll,
                                   size_t count, int root, size_t tsize, mxh_plan_t **plan_p);
/* Plan shape flags (mxh_plan_create_flags). MXH_PLAN_THROUGH: bcast and reduce
 * for pipelines: the group holding the root's data at a level bcasts the whole
 * region to its members (reduce: reduces it to the holder on the way down)
 * instead of a scatter up and an allgather down (gather down, reduce-scatter
 * up), so no link carries the data twice; one exchange more on the root's path
 * (worth it once fragments stream, not for one). */
#define MXH_PLAN_THROUGH 1u

/* The same with shape @flags. */
mxh_status_t mxh_plan_create_flags(const mxh_layout_t *layout, int rank, mxh_coll_t coll,
                                   size_t count, int root, size_t tsize, unsigned flags,
                                   mxh_plan_t **plan_p);
/* Whether the stream executor may start a fragment on step @s only once the
 * fragment before it has left the step's first exchange: a member other than the
 * root of a rootless step of more than two members, bcast (scatter from the root,
 * then allgather among the others) on every level, reduce (reduce-scatter among
 * the others, then gather to the root) on the network (exec.c stream_stagger says
 * why). On the network the executor and the model stagger only where the step binds
 * the stream (cost.h mxh_cost_net_binds): there the stagger is what a bcast or
 * reduce needs, and where NVLink binds it slows the reduce (RESULTS.md section 5,
 * "Staggered on the network too"). */
int mxh_step_staggered(const mxh_step_t *s);

/* v-plans: MXH_COLL_ALLGATHERV or MXH_COLL_REDUCE_SCATTER with @bcounts[r]
 * elements in rank r's block (any of them 0). The plans of allgather and
 * reduce_scatter_block with blocks of those sizes: the work buffer holds the
 * blocks back to back in block_pos order (plan->work_count = their sum). */
mxh_status_t mxh_plan_create_v(const mxh_layout_t *layout, int rank, mxh_coll_t coll,
                               const size_t *bcounts, mxh_plan_t **plan_p);
void mxh_plan_destroy(mxh_plan_t *plan);

/* One line per step, for logs and golden tests; returns the length needed. */
size_t mxh_plan_describe(const mxh_plan_t *plan, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
