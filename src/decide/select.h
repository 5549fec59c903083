/* Algorithm selection: a pure function of the agreed configuration, the shape of
 * the communicator's hierarchy (identical on every rank: built from the gathered
 * records) and the message size, so every rank takes the same decision without
 * communicating. */
#ifndef MXH_SELECT_H
#define MXH_SELECT_H

#include <stddef.h>

#include "decide/plan.h"
#include "util/config.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mxh_algo {
    MXH_ALGO_AUTO = 0,
    MXH_ALGO_MPI,      /* the plain MPI collective on the user's communicator */
    MXH_ALGO_SHM,      /* single node: direct exchange through shared memory */
    MXH_ALGO_HIER,     /* the hierarchical plan, levels one after another */
    MXH_ALGO_PIPELINE, /* the hierarchical plan on fragments, levels overlapped */
    MXH_ALGO_COUNT
} mxh_algo_t;

typedef struct mxh_select_shape {
    int nranks;
    int nlevels;  /* levels of the layout: < 2 means no hierarchy to exploit */
    int shm_comm; /* the whole communicator shares memory (a shared segment exists) */
} mxh_select_shape_t;

/* Why a call runs the plain MPI collective (the metrics' reason label): the
 * one table of fallback reasons, names and meanings in mxh_fallbacks
 * (select.c). Decided where the path is: the entry layer (intercommunicator,
 * op), coll.c (view, size, all-to-all layout) and mxh_select (configuration,
 * shape, size). */
typedef enum mxh_fallback {
    MXH_FB_NONE = 0,        /* not a fallback */
    MXH_FB_INTERCOMM,
    MXH_FB_USER_OP,
    MXH_FB_LOC_OP,
    MXH_FB_NO_KERNEL,
    MXH_FB_MIXED_TYPES,
    MXH_FB_TOO_LARGE,
    MXH_FB_DISABLED,
    MXH_FB_SINGLE_RANK,
    MXH_FB_FORCED,
    MXH_FB_BELOW_MIN_BYTES,
    MXH_FB_ABOVE_SHM_MAX,
    MXH_FB_NO_HIERARCHY,
    MXH_FB_NO_SHM_FORM,
    MXH_FB_LAYOUT,
    MXH_FB_SETUP_FAILED,
    MXH_FB_COUNT
} mxh_fallback_t;

typedef struct mxh_fallback_info {
    const char *name; /* label value */
    const char *doc;
} mxh_fallback_info_t;
extern const mxh_fallback_info_t mxh_fallbacks[MXH_FB_COUNT];

typedef struct mxh_choice {
    mxh_algo_t algo;
    size_t     frag_bytes; /* pipeline: fragment size; else 0 */
    int        depth;
    int        ramp;       /* pipeline: halvings of the first and last fragment */
    mxh_fallback_t why;    /* algo MXH_ALGO_MPI: why */
    int        model;      /* the cost model chose it (hier.c paces it by the model's
                              figures) */
} mxh_choice_t;

const char *mxh_algo_name(mxh_algo_t algo);

/* Largest message (bytes of the whole vector) the shared-memory algorithm of
 * @coll serves by default: above it MPICH's single-copy (CMA) transfers win on
 * a node (measured, benchmarks/RESULTS.md). SIZE_MAX: every size. */
/* alltoall on one node through shared memory below this many bytes of a rank's
 * whole send buffer (every rank reads all of them: p times the data): faster than
 * MPICH up to 2 KiB, slower from 8 KiB (RESULTS.md section 8, "Small alltoall on
 * one node"). */
#ifndef MXH_SELECT_ALLTOALL_SHM_MAX
#define MXH_SELECT_ALLTOALL_SHM_MAX ((size_t)4 << 10)
#endif
size_t mxh_select_shm_max(mxh_coll_t coll);

/* @bytes: the per-rank message (count * element size; the block for
 * reduce_scatter_block/allgather); @work_bytes: the whole vector a schedule
 * moves (bytes, or bytes * nranks for the block collectives). */
mxh_choice_t mxh_select(const mxh_config_t *cfg, const mxh_select_shape_t *shape,
                        mxh_coll_t coll, size_t bytes, size_t work_bytes);

/* The same with the cost model of the layout (decide/cost.h; NULL: none): with
 * MPIX_HIER_COST_MODEL=yes it chooses hier or pipeline and the fragment size of the
 * collectives it models, where the size thresholds would run either. */
struct mxh_cost_sel;
mxh_choice_t mxh_select_cost(const mxh_config_t *cfg, const mxh_select_shape_t *shape,
                             struct mxh_cost_sel *cost, mxh_coll_t coll, size_t bytes,
                             size_t work_bytes);

/* "[0, 64 KiB) shm; [64 KiB, inf) pipeline" for logs: the choice over sizes. */
size_t mxh_select_describe(const mxh_config_t *cfg, const mxh_select_shape_t *shape,
                           mxh_coll_t coll, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
