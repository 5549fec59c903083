/* Configuration: one table of MPIX_HIER_* variables {name, default, doc, field, parser,
 * plan, user}. Precedence: default < environment < MPI_Info key (lower-case name); within
 * one source a specific variable wins over the same key of MPIX_HIER_TUNE / MPIX_HIER_NET. */
#ifndef MXH_CONFIG_H
#define MXH_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "util/coll_desc.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MXH_CONFIG_STR_MAX 1024
#define MXH_CONFIG_NALGO   5 /* algorithms, in mxh_algo_t order */
#define MXH_CONFIG_FACTORS 16 /* entries of a cost factor table */
/* MPIX_HIER_PIPELINE_RAMP besides 0..4 halvings (decide/sched.h: MXH_SCHED_RAMP_*) */
#define MXH_RAMP_LINEAR (-1)
#define MXH_RAMP_AUTO   (-2)

/* Names of the algorithms as MPIX_HIER_ALGO spells them (the collectives': coll_desc.c). */
extern const char *const mxh_config_algo_names[MXH_CONFIG_NALGO];

typedef struct mxh_config {
    int    enable;                          /* MPIX_HIER_ENABLE */
    int    log_level;                       /* MPIX_HIER_LOG_LEVEL (mxh_log_level_t) */
    char   hostname[256];                   /* MPIX_HIER_HOSTNAME ("" = processor name) */
    char   topo_file[MXH_CONFIG_STR_MAX];   /* MPIX_HIER_TOPO_FILE ("" = none) */
    char   cluster_file[MXH_CONFIG_STR_MAX]; /* MPIX_HIER_CLUSTER_FILE ("" = none) */
    size_t min_bytes;                       /* MPIX_HIER_MIN_BYTES */
    int    levels_mask;                     /* MPIX_HIER_LEVELS (bit per mxh_level_type) */
    int    plan_cache_size;                 /* MPIX_HIER_PLAN_CACHE_SIZE */
    char   hwloc_xml[MXH_CONFIG_STR_MAX];   /* MPIX_HIER_HWLOC_XML ("" = HWLOC_XMLFILE or live) */
    char   nccl_topo_file[MXH_CONFIG_STR_MAX]; /* MPIX_HIER_NCCL_TOPO_FILE ("" = NCCL_TOPO_FILE) */
    char   gpu_busid[64];                   /* MPIX_HIER_GPU_BUSID */
    int    gpu_mps;                         /* MPIX_HIER_GPU_MPS: -1 auto, 0 no, 1 yes */
    int    discover;                        /* MPIX_HIER_DISCOVER */
    int    algo[MXH_COLL_COUNT];          /* MPIX_HIER_ALGO (mxh_algo_t per mxh_coll_t) */
    size_t frag_size;                       /* MPIX_HIER_FRAG_SIZE (0 = no pipelining) */
    int    pipeline_depth;                  /* MPIX_HIER_PIPELINE_DEPTH (0 = every stage) */
    int    pipeline_ramp;                   /* MPIX_HIER_PIPELINE_RAMP: halvings (0 = uniform
                                               fragments), MXH_RAMP_LINEAR or _AUTO */
    /* yes/no/auto switches: 0 no, 1 yes, 2 auto (the cost model picks per schedule) */
    int    pipeline_pace;                   /* MPIX_HIER_PIPELINE_PACE */
    int    kary;                            /* MPIX_HIER_KARY */
    int    rsag;                            /* MPIX_HIER_RSAG */
    int    spread;                          /* MPIX_HIER_SPREAD (yes/no) */
    int    shm;                             /* MPIX_HIER_SHM */
    size_t shm_chunk;                       /* MPIX_HIER_SHM_CHUNK */
    int    ipc;                             /* MPIX_HIER_IPC: -1 auto, 0 no, 1 yes */
    size_t ipc_min;                         /* MPIX_HIER_IPC_MIN */
    uint64_t exclude_rails;                 /* MPIX_HIER_EXCLUDE_RAILS: bit per rail (< 64) */
    int    check;                           /* MPIX_HIER_CHECK (yes/no) */
    /* metrics (coll/metrics.h) */
    int    metrics;                         /* MPIX_HIER_METRICS */
    char   metrics_file[MXH_CONFIG_STR_MAX]; /* MPIX_HIER_METRICS_FILE ("" = none) */
    double metrics_interval;                /* MPIX_HIER_METRICS_INTERVAL (s, 0 = finalize only) */
    /* cost model (decide/cost.h) */
    int    cost_model;                      /* MPIX_HIER_COST_MODEL (0, 1, 2 auto; a
                                               hierarchy's copy holds the resolved 0/1) */
    int    cost_measure;                    /* MPIX_HIER_COST_MEASURE: 0 no, 1 yes, 2 auto */
    int    cost_given;                      /* a network parameter or factor was set
                                               (environment, MPI_Info): 'auto' keeps them */
    int    frag_given;                      /* MPIX_HIER_FRAG_SIZE was set: 'auto' keeps
                                               the thresholds (the user's fragments) */
    double cost_node_latency;               /* MPIX_HIER_COST_NODE_LATENCY (s per exchange) */
    double cost_node_bw;                    /* MPIX_HIER_COST_NODE_BW (bytes/s per rank) */
    double cost_net_latency;                /* MPIX_HIER_COST_NET_LATENCY (s per exchange) */
    double cost_net_bw;                     /* MPIX_HIER_COST_NET_BW (bytes/s per rank) */
    double cost_net_contention;             /* MPIX_HIER_COST_NET_CONTENTION (>= 1) */
    double cost_spine_latency;              /* MPIX_HIER_COST_SPINE_LATENCY (s per exchange) */
    double cost_torus_latency;              /* MPIX_HIER_COST_TORUS_LATENCY (s per exchange) */
    double cost_torus_bw;                   /* MPIX_HIER_COST_TORUS_BW (bytes/s per link and
                                               direction; 0: g NET_BW / (2 dims)) */
    double cost_reduce_bw;                  /* MPIX_HIER_COST_REDUCE_BW (bytes/s of output) */
    double cost_copy_bw;                    /* MPIX_HIER_COST_COPY_BW (bytes/s) */
    /* MPIX_HIER_COST_LAT_FACTOR / _BW_FACTOR: by message size, ascending sizes */
    int    cost_lat_n, cost_bw_n;
    size_t cost_lat_size[MXH_CONFIG_FACTORS], cost_bw_size[MXH_CONFIG_FACTORS];
    double cost_lat_f[MXH_CONFIG_FACTORS], cost_bw_f[MXH_CONFIG_FACTORS];
    /* Rows (bit = index in mxh_config_vars) set under their own name from the source
     * hashed in named_src: MPIX_HIER_TUNE and MPIX_HIER_NET leave those fields alone, so
     * the specific variable wins within one source (a later source still overrides). */
    uint64_t named;
    uint32_t named_src;
} mxh_config_t;

/* A parser with its printer (and hash), in config.c; rows name one. */
typedef struct mxh_config_type mxh_config_type_t;

/* What setting a row records besides its field: MPIX_HIER_COST_MEASURE=auto and
 * MPIX_HIER_COST_MODEL=auto read these (coll/hier.c). */
#define MXH_CONFIG_GIVEN_COST 1 /* sets cost_given: a network parameter or factor */
#define MXH_CONFIG_GIVEN_FRAG 2 /* sets frag_given: the fragment size */

/* One variable: one row. The setter, getter, defaults and plan hash walk the table. */
typedef struct mxh_config_var {
    const char *name;      /* "MPIX_HIER_..." */
    const char *dflt;      /* default, as a string (parsed by mxh_config_init_defaults) */
    const char *doc;       /* one or two sentences */
    size_t      offset;    /* offsetof(mxh_config_t, field) */
    size_t      size;      /* sizeof the field (0: a composite row, no field of its own) */
    const mxh_config_type_t *type;
    const void *arg;       /* the parser's argument (range, unit, keys), or NULL */
    int         plan;      /* nonzero: changes the plan, must agree on all ranks (hashed) */
    int         user;      /* nonzero: a variable users set (mpix_info -c); 0: expert (--all) */
    int         given;     /* MXH_CONFIG_GIVEN_* */
} mxh_config_var_t;

/* The table (terminated by a NULL name). */
extern const mxh_config_var_t mxh_config_vars[];

/* Every row's default string, parsed. */
void mxh_config_init_defaults(mxh_config_t *cfg);

/* Set one variable by name (upper case MPIX_HIER_X or lower case mpix_hier_x).
 * @source names where the value came from ("environment", "MPI_Info") for
 * messages and for precedence: a key of MPIX_HIER_TUNE / _NET leaves a variable set by
 * its own name from the same source. Unknown name -> MXH_ERR_CONFIG; malformed value ->
 * MXH_ERR_PARSE; the cause is logged. */
mxh_status_t mxh_config_set(mxh_config_t *cfg, const char *name, const char *value,
                            const char *source);

/* Apply every MPIX_HIER_* variable of the environment. Unknown MPIX_HIER_* names are
 * ignored (with a warning naming them when @warn_unknown); a malformed value is an error. */
mxh_status_t mxh_config_apply_env(mxh_config_t *cfg, int warn_unknown);

/* Current value of a variable as a string (for tools and logs). */
void mxh_config_get_string(const mxh_config_t *cfg, const char *name, char *buf, size_t len);

/* Hash of everything that changes the plan (FNV-1a, 64 bit). */
uint64_t mxh_config_plan_hash(const mxh_config_t *cfg);
/* The names of the variables that hash, comma-separated, into @buf (truncated). */
void mxh_config_plan_names(char *buf, size_t len);

/* FNV-1a helpers. */
uint64_t mxh_hash_bytes(uint64_t h, const void *data, size_t len);
#define MXH_HASH_INIT 1469598103934665603ULL

#ifdef __cplusplus
}
#endif

#endif
