/* The per-communicator hierarchy: records -> layout -> level communicators,
 * cached on the communicator as an MPI attribute and freed with it. */
#include "config.h"

#include "mpix_internal.h"
#include "topo/cluster_file.h"
#include "topo/discover.h"
#include "topo/topo_conf.h"
#include "util/log.h"
#include "sim/sim.h"
#include "util/str.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MXH_SLURM_TOPO_DEFAULT "/etc/slurm/topology.conf"

static int hier_keyval = MPI_KEYVAL_INVALID;
static int self_keyval = MPI_KEYVAL_INVALID;
static int lib_initialized;
static int unknown_warned;
static mxh_config_t global_config;
static mxh_status_t global_config_status; /* a malformed MPIX_HIER_* value fails builds */
static char global_config_error[512];

/* Every live hierarchy, so MPI_Finalize can release their communicators while
 * MPI is still fully up (MPI_COMM_SELF's attributes are deleted first). */
typedef struct hier_node {
    mxh_hier_t       *hier;
    struct hier_node *next;
} hier_node_t;
static hier_node_t *live_hiers;

/* The last (communicator, hierarchy) looked up: saves the attribute lookup on
 * back-to-back calls. Cleared when that hierarchy is destroyed (MPI_Comm_free
 * runs the delete callback before the handle can be reused). */
MPI_Comm           mxh_last_comm = MPI_COMM_NULL;
static mxh_hier_t *last_hier;

static void hier_free_comms(mxh_hier_t *h)
{
    for (int l = 0; l < MXH_MAX_LEVELS; l++)
        if (h->level_comm[l] != MPI_COMM_NULL)
            MPI_Comm_free(&h->level_comm[l]);
    if (h->comm != MPI_COMM_NULL)
        MPI_Comm_free(&h->comm);
}

static void hier_destroy(mxh_hier_t *h)
{
    if (h == NULL)
        return;
    if (h == last_hier) {
        mxh_last_comm = MPI_COMM_NULL;
        last_hier = NULL;
    }
    for (hier_node_t **pp = &live_hiers; *pp; pp = &(*pp)->next) {
        if ((*pp)->hier == h) {
            hier_node_t *dead = *pp;
            *pp = dead->next;
            free(dead);
            break;
        }
    }
    /* collective (MPI_Win_free), like the MPI_Comm_free that got us here */
    for (int l = MXH_MAX_LEVELS - 1; l >= 0; l--)
        mxh_shm_destroy(h->shm[l]);
    mxh_shm_destroy(h->shm_all);
    hier_free_comms(h);
    if (h->scheds) {
        for (int i = 0; i < h->config.plan_cache_size; i++)
            mxh_sched_destroy(h->scheds[i].sched);
        free(h->scheds);
    }
    mxh_layout_destroy(h->layout);
    free(h->recs);
    free(h->description);
#ifdef MXH_SIMGRID
    mxh_sim_free(h->scratch);
    mxh_sim_free(h->tmp);
#else
    free(h->scratch);
    free(h->tmp);
#endif
    free(h->blk_counts);
    free(h->blk_displs);
    free(h);
}

static int hier_delete_fn(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
#ifdef MXH_SIMGRID
    if (!lib_initialized)
        return MPI_SUCCESS; /* after MPI_Finalize under SMPI: see self_delete_fn */
#endif
    hier_destroy((mxh_hier_t *)attr);
    return MPI_SUCCESS;
}

static int self_delete_fn(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)attr;
    (void)extra;
#ifdef MXH_SIMGRID
    /* SimGrid SMPI runs this after MPI is finalized (every MPI call fails, fatally by
     * default): forget the hierarchies; the simulated process ends here anyway. */
    while (live_hiers != NULL) {
        hier_node_t *dead = live_hiers;
        live_hiers = dead->next;
        free(dead);
    }
    hier_keyval = MPI_KEYVAL_INVALID;
    (void)keyval;
    mxh_discover_cleanup();
    self_keyval     = MPI_KEYVAL_INVALID;
    lib_initialized = 0;
    return MPI_SUCCESS;
#endif
    /* MPI_Finalize (MPI_COMM_SELF's attributes go first, while MPI is fully up):
     * delete the hierarchies still attached to user communicators. */
    while (live_hiers != NULL) {
        mxh_hier_t *h = live_hiers->hier;
        if (MPI_Comm_delete_attr(h->user_comm, hier_keyval) != MPI_SUCCESS ||
            (live_hiers != NULL && live_hiers->hier == h))
            hier_destroy(h); /* the attribute was already gone */
    }
    if (hier_keyval != MPI_KEYVAL_INVALID)
        MPI_Comm_free_keyval(&hier_keyval);
    MPI_Comm_free_keyval(&keyval);
    mxh_discover_cleanup();
    mxh_errors_cleanup();
    self_keyval     = MPI_KEYVAL_INVALID;
    lib_initialized = 0;
    return MPI_SUCCESS;
}

/* Process-wide set-up on first use: keyvals, log level and rank. */
static int lib_init(void)
{
    int wrank = -1;

    if (lib_initialized)
        return MPI_SUCCESS;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    mxh_log_set_rank(wrank);
    mxh_config_init_defaults(&global_config);
    global_config_status = mxh_config_apply_env(&global_config, !unknown_warned && wrank == 0);
    if (global_config_status == MXH_OK)
        mxh_log_set_level((mxh_log_level_t)global_config.log_level);
    else
        mxh_strlcpy(global_config_error, mxh_log_last_error(), sizeof(global_config_error));
    unknown_warned = 1;
    if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, hier_delete_fn, &hier_keyval, NULL) !=
            MPI_SUCCESS ||
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete_fn, &self_keyval, NULL) !=
            MPI_SUCCESS ||
        MPI_Comm_set_attr(MPI_COMM_SELF, self_keyval, NULL) != MPI_SUCCESS)
        return MPI_ERR_OTHER;
    mxh_config_error_class();
    lib_initialized = 1;
    return MPI_SUCCESS;
}

/* ---- local discovery: this rank's record ------------------------------------ */

static mxh_status_t fill_record(mxh_hier_t *h, mxh_record_t *rec)
{
    mxh_status_t st = MXH_OK;
    MPI_Comm shm = MPI_COMM_NULL;
    char name[MPI_MAX_PROCESSOR_NAME + 1];
    int len = 0;

    mxh_record_init(rec);
    rec->config_hash = mxh_config_plan_hash(&h->config);

    /* collective on every rank, whatever the configuration says */
    if (MPI_Comm_split_type(h->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm) !=
        MPI_SUCCESS) {
        mxh_error("MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed");
        return MXH_ERR_MPI;
    }
    if (h->config.hostname[0] != '\0') {
        mxh_strlcpy(rec->node, h->config.hostname, sizeof(rec->node));
        rec->shm_id = -1;
    } else {
        MPI_Group g_shm, g_comm;
        int zero = 0, leader = -1;
        MPI_Get_processor_name(name, &len);
        name[len] = '\0';
        mxh_strlcpy(rec->node, name,
                    sizeof(name) < sizeof(rec->node) ? sizeof(name) : sizeof(rec->node));
        MPI_Comm_group(shm, &g_shm);
        MPI_Comm_group(h->comm, &g_comm);
        MPI_Group_translate_ranks(g_shm, 1, &zero, g_comm, &leader);
        MPI_Group_free(&g_shm);
        MPI_Group_free(&g_comm);
        rec->shm_id = leader;
    }
    MPI_Comm_free(&shm);
    if (strlen(h->config.hostname) >= sizeof(rec->node)) {
        mxh_error("MPIX_HIER_HOSTNAME is longer than %zu characters", sizeof(rec->node) - 1);
        return MXH_ERR_CONFIG;
    }

    /* the cluster file: node, rail and leaf of this host (rec->node is the host here) */
    if (h->config.cluster_file[0] != '\0') {
        mxh_cluster_file_t *cf = NULL;
        st = mxh_cluster_file_parse_file(h->config.cluster_file, &cf);
        if (st != MXH_OK)
            return st;
        const mxh_cluster_host_t *e = mxh_cluster_file_find(cf, rec->node);
        if (e == NULL) {
            mxh_warn("host '%s' is not listed in %s: discovery decides its node, rail and leaf",
                     rec->node, h->config.cluster_file);
        } else {
            if (strcmp(e->node, rec->node) != 0)
                rec->shm_id = -1; /* a named node: the name alone identifies it */
            mxh_strlcpy(rec->node, e->node, sizeof(rec->node));
            if (e->rail >= 0)
                rec->rail = e->rail;
            if (e->leaf != NULL)
                mxh_strlcpy(rec->leaf, e->leaf, sizeof(rec->leaf));
        }
        mxh_cluster_file_destroy(cf);
    }

    if (h->config.topo_file[0] == '\0' && access(MXH_SLURM_TOPO_DEFAULT, R_OK) == 0)
        mxh_strlcpy(h->config.topo_file, MXH_SLURM_TOPO_DEFAULT, sizeof(h->config.topo_file));
    if (h->config.topo_file[0] != '\0' && rec->leaf[0] == '\0') {
        mxh_topo_conf_t *conf = NULL;
        st = mxh_topo_conf_parse_file(h->config.topo_file, &conf);
        if (st != MXH_OK)
            return st;
        int leaf = mxh_topo_conf_find_leaf(conf, rec->node);
        if (leaf >= 0) {
            mxh_strlcpy(rec->leaf, conf->switches[leaf].name, sizeof(rec->leaf));
        } else {
            mxh_debug("node '%s' is not listed in %s: default leaf", rec->node,
                      h->config.topo_file);
        }
        mxh_topo_conf_destroy(conf);
    }

    if (h->config.discover) {
        const mxh_machine_t *machine = NULL;
        st = mxh_discover_machine(&h->config, &machine);
        if (st == MXH_OK)
            st = mxh_discover_fill_record(&h->config, machine, rec);
        /* transports matter for GPU buffers only; skip the UCX query on GPU-less nodes */
        if (st == MXH_OK && rec->ngpus > 0)
            mxh_discover_caps(rec);
    }
    return st;
}

/* How the collectives cross the levels, and which algorithm serves which
 * message sizes, for the info log. */
static void describe_algorithms(const mxh_hier_t *h, char *buf, size_t len)
{
    const mxh_layout_t *L = h->layout;
    size_t off = 0;

#define PUT(...)                                                                   \
    do {                                                                           \
        int _k = snprintf(off < len ? buf + off : NULL, off < len ? len - off : 0, \
                          __VA_ARGS__);                                            \
        if (_k > 0)                                                                \
            off += (size_t)_k;                                                     \
    } while (0)
    if (len)
        buf[0] = '\0';
    if (L->nlevels >= 2) {
        PUT("hier allreduce =");
        for (int l = 0; l < L->nlevels - 1; l++)
            PUT(" %s(%s%s) ->",
                L->kind[l] == MXH_LEVEL_KIND_SCATTER ? "reduce_scatter" : "reduce",
                mxh_level_type_name(L->type[l]), h->shm[l] ? ", shm" : "");
        PUT(" allreduce(%s)", mxh_level_type_name(L->type[L->nlevels - 1]));
        for (int l = L->nlevels - 2; l >= 0; l--)
            PUT(" -> %s(%s%s)", L->kind[l] == MXH_LEVEL_KIND_SCATTER ? "allgather" : "bcast",
                mxh_level_type_name(L->type[l]), h->shm[l] ? ", shm" : "");
        PUT(" (the other collectives follow the same levels).");
    }
    for (int c = 0; c < MXH_COLL_COUNT; c++) {
        char sel[256];
        mxh_select_describe(&h->config, &h->shape, (mxh_coll_t)c, sel, sizeof(sel));
        PUT(" %s: %s.", mxh_coll_name((mxh_coll_t)c), sel);
    }
    PUT(" Plain MPI always for non-commutative ops, MINLOC/MAXLOC and derived datatypes.");
#undef PUT
}

/* Shared-memory segments: the whole communicator when it lives on one node
 * (single-node algorithms) and every node-local level (hierarchical steps).
 * Creation is collective and agreed; a segment that cannot be made is simply
 * not used. */
static void create_shm(mxh_hier_t *h)
{
    const mxh_layout_t *L = h->layout;

    if (!h->config.shm || h->size < 2)
        return;
    if (L->nnodes == 1 && mxh_shm_create(h->comm, h->config.shm_chunk, &h->shm_all) != MXH_OK) {
        mxh_info("shared-memory collectives unavailable on this communicator");
        h->shm_all = NULL;
    }
    for (int l = 0; l < L->nlevels; l++) {
        if ((L->type[l] != MXH_LEVEL_NODE && L->type[l] != MXH_LEVEL_ISLAND) ||
            h->level_comm[l] == MPI_COMM_NULL)
            continue;
        if (mxh_shm_create(h->level_comm[l], h->config.shm_chunk, &h->shm[l]) != MXH_OK)
            h->shm[l] = NULL;
    }
}

/* ---- build ---------------------------------------------------------------------- */

static mxh_status_t apply_info(mxh_config_t *cfg, MPI_Info info)
{
    int nkeys = 0;

    if (info == MPI_INFO_NULL)
        return MXH_OK;
    MPI_Info_get_nkeys(info, &nkeys);
    for (int i = 0; i < nkeys; i++) {
        char key[MPI_MAX_INFO_KEY + 1], val[MXH_CONFIG_STR_MAX];
        int vlen = 0, flag = 0;
        MPI_Info_get_nthkey(info, i, key);
        if (strncmp(key, "mpix_hier_", 10) != 0)
            continue;
        MPI_Info_get_valuelen(info, key, &vlen, &flag);
        if (!flag)
            continue;
        if (vlen >= (int)sizeof(val)) {
            mxh_error("MPI_Info key %s: value longer than %zu characters", key, sizeof(val) - 1);
            return MXH_ERR_CONFIG;
        }
        MPI_Info_get(info, key, (int)sizeof(val) - 1, val, &flag);
        mxh_status_t st = mxh_config_set(cfg, key, val, "MPI_Info");
        if (st != MXH_OK)
            return st;
    }
    return MXH_OK;
}

static int hier_build(MPI_Comm comm, MPI_Info info, const char *func, mxh_hier_t **hier_p)
{
    mxh_hier_t *h;
    mxh_record_t mine;
    mxh_status_t st = MXH_OK, local = MXH_OK;
    int rc = MPI_SUCCESS, bad_rank = -1;
    char msg[512] = "";

    h = calloc(1, sizeof(*h));
    if (h == NULL)
        return mxh_raise(comm, MPI_ERR_NO_MEM, func, "cannot allocate the hierarchy");
    h->comm      = MPI_COMM_NULL;
    h->user_comm = comm;
    for (int l = 0; l < MXH_MAX_LEVELS; l++)
        h->level_comm[l] = MPI_COMM_NULL;

    /* configuration: default < environment < info (errors are reported after the
     * records are exchanged, so that every rank fails together) */
    mxh_log_clear_last_error();
    h->config = global_config;
    local = global_config_status;
    if (local == MXH_OK)
        local = apply_info(&h->config, info);
    if (local == MXH_OK)
        mxh_log_set_level((mxh_log_level_t)h->config.log_level);

    if (MPI_Comm_dup(comm, &h->comm) != MPI_SUCCESS) {
        free(h);
        return mxh_raise(comm, MPI_ERR_OTHER, func, "MPI_Comm_dup failed");
    }
    MPI_Comm_set_errhandler(h->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(h->comm, &h->rank);
    MPI_Comm_size(h->comm, &h->size);

    st = fill_record(h, &mine);
    if (local == MXH_OK)
        local = st;
    mine.status = (int32_t)local;
    if (local != MXH_OK)
        mxh_strlcpy(msg, global_config_status != MXH_OK ? global_config_error : mxh_log_last_error(),
                    sizeof(msg));

    h->recs = malloc(sizeof(mxh_record_t) * (size_t)h->size);
    if (h->recs == NULL) {
        /* must still take part in the exchange */
        mxh_record_t *tmp = malloc(sizeof(mxh_record_t) * (size_t)h->size);
        MPI_Allgather(&mine, (int)sizeof(mine), MPI_BYTE, tmp, tmp ? (int)sizeof(mine) : 0,
                      MPI_BYTE, h->comm);
        free(tmp);
        hier_destroy(h);
        return mxh_raise(comm, MPI_ERR_NO_MEM, func, "cannot allocate %d records", h->size);
    }
    if (MPI_Allgather(&mine, (int)sizeof(mine), MPI_BYTE, h->recs, (int)sizeof(mine), MPI_BYTE,
                      h->comm) != MPI_SUCCESS) {
        hier_destroy(h);
        return mxh_raise(comm, MPI_ERR_OTHER, func, "MPI_Allgather of the rank records failed");
    }

    /* collective verdicts: identical on every rank */
    for (int r = 0; r < h->size && bad_rank < 0; r++)
        if (h->recs[r].status != MXH_OK)
            bad_rank = r;
    if (bad_rank >= 0) {
        if (local != MXH_OK)
            rc = mxh_raise(comm, mxh_config_error_class(), func,
                           "building the hierarchy failed on this rank (%d): %s", h->rank,
                           msg[0] ? msg : mxh_status_string(local));
        else
            rc = mxh_raise(comm, mxh_config_error_class(), func,
                           "building the hierarchy failed on rank %d (%s); see that rank's "
                           "log for the cause",
                           bad_rank, mxh_status_string((mxh_status_t)h->recs[bad_rank].status));
        hier_destroy(h);
        return rc;
    }
    for (int r = 1; r < h->size; r++) {
        if (h->recs[r].config_hash != h->recs[0].config_hash) {
            rc = mxh_raise(comm, mxh_config_error_class(), func,
                           "configuration differs between rank 0 and rank %d: the variables that "
                           "change the plan (MPIX_HIER_ENABLE, _DISCOVER, _MIN_BYTES, _LEVELS, "
                           "_ALGO, _FRAG_SIZE, _PIPELINE_DEPTH, _PIPELINE_RAMP, _SHM, _SHM_CHUNK; "
                           "environment or MPI_Info) must be equal on all ranks",
                           r);
            hier_destroy(h);
            return rc;
        }
    }

    st = mxh_layout_create(h->recs, h->size, h->config.levels_mask, &h->layout);
    if (st != MXH_OK) {
        rc = mxh_raise_status(comm, st, func);
        hier_destroy(h);
        return rc;
    }
    for (int l = 0; l < h->layout->nlevels; l++) {
        if (MPI_Comm_split(h->comm, h->layout->color[l][h->rank], h->layout->coord[l][h->rank],
                           &h->level_comm[l]) != MPI_SUCCESS) {
            hier_destroy(h);
            return mxh_raise(comm, MPI_ERR_OTHER, func, "MPI_Comm_split for level %d failed", l);
        }
        MPI_Comm_set_errhandler(h->level_comm[l], MPI_ERRORS_RETURN);
    }
    create_shm(h);
    h->shape.nranks   = h->size;
    h->shape.nlevels  = h->layout->nlevels;
    h->shape.shm_comm = h->shm_all != NULL;
    h->scheds = calloc((size_t)h->config.plan_cache_size, sizeof(*h->scheds));
    size_t dlen = mxh_layout_describe(h->layout, h->recs, NULL, 0);
    h->description = malloc(dlen + 1);
    h->blk_counts = malloc(sizeof(int) * (size_t)h->size);
    h->blk_displs = malloc(sizeof(int) * (size_t)h->size);
    if (h->scheds == NULL || h->description == NULL || h->blk_counts == NULL ||
        h->blk_displs == NULL) {
        hier_destroy(h);
        return mxh_raise(comm, MPI_ERR_NO_MEM, func, "out of memory");
    }
    mxh_layout_describe(h->layout, h->recs, h->description, dlen + 1);
    if (h->rank == 0) {
        char cname[MPI_MAX_OBJECT_NAME] = "";
        int clen = 0;
        MPI_Comm_get_name(comm, cname, &clen);
        char algo[2048];
        describe_algorithms(h, algo, sizeof(algo));
        mxh_info("communicator %s: %s  algorithms: %s", cname[0] ? cname : "(unnamed)",
                 h->description, algo);
        if (h->config.topo_file[0] != '\0') {
            int unlisted = 0;
            for (int v = 0; v < h->layout->nnodes; v++)
                unlisted += h->recs[h->layout->node_first_rank[v]].leaf[0] == '\0';
            if (unlisted)
                mxh_warn("%d of %d nodes are not listed in %s (e.g. '%s'): they share a "
                         "default leaf switch",
                         unlisted, h->layout->nnodes, h->config.topo_file, h->recs[0].node);
        }
    }

    hier_node_t *node = malloc(sizeof(*node));
    if (node == NULL) {
        hier_destroy(h);
        return mxh_raise(comm, MPI_ERR_NO_MEM, func, "out of memory");
    }
    node->hier = h;
    node->next = live_hiers;
    live_hiers = node;
    *hier_p    = h;
    return MPI_SUCCESS;
}

static int hier_attach(MPI_Comm comm, MPI_Info info, const char *func, mxh_hier_t **hier_p)
{
    mxh_hier_t *h = NULL;
    int rc = hier_build(comm, info, func, &h);
    if (rc != MPI_SUCCESS)
        return rc;
    if (MPI_Comm_set_attr(comm, hier_keyval, h) != MPI_SUCCESS) {
        hier_destroy(h);
        return mxh_raise(comm, MPI_ERR_OTHER, func, "MPI_Comm_set_attr failed");
    }
    *hier_p = h;
    return MPI_SUCCESS;
}

int mxh_hier_get(MPI_Comm comm, const char *func, mxh_hier_t **hier_p)
{
    void *attr = NULL;
    int flag = 0;

    if (comm == mxh_last_comm && last_hier != NULL) {
        *hier_p = last_hier;
        return MPI_SUCCESS;
    }
    if (lib_init() != MPI_SUCCESS)
        return mxh_raise(comm, MPI_ERR_OTHER, func, "library initialization failed");
    if (MPI_Comm_get_attr(comm, hier_keyval, &attr, &flag) == MPI_SUCCESS && flag && attr) {
        *hier_p = (mxh_hier_t *)attr;
    } else {
        int rc = hier_attach(comm, MPI_INFO_NULL, func, hier_p);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    mxh_last_comm = comm;
    last_hier = *hier_p;
    return MPI_SUCCESS;
}

int mxh_hier_active(const mxh_hier_t *hier)
{
    return hier->config.enable && hier->layout->nlevels >= 2;
}

mxh_status_t mxh_hier_sched(mxh_hier_t *h, mxh_coll_t coll, size_t count, int root,
                            size_t tsize, const mxh_choice_t *choice,
                            const mxh_sched_t **sched_p)
{
    size_t frag = choice->algo == MXH_ALGO_PIPELINE ? choice->frag_bytes : 0;
    int depth   = choice->algo == MXH_ALGO_PIPELINE ? choice->depth : 0;
    int ramp    = choice->algo == MXH_ALGO_PIPELINE ? choice->ramp : 0;
    int victim  = 0;

    if (coll != MXH_COLL_BCAST && coll != MXH_COLL_REDUCE)
        root = -1;
    h->clock++;
    for (int i = 0; i < h->config.plan_cache_size; i++) {
        mxh_sched_t *s = h->scheds[i].sched;
        if (s && s->coll == coll && s->count == count && s->root == root && s->tsize == tsize &&
            s->frag_bytes == frag && s->depth == depth && s->ramp == ramp) {
            h->scheds[i].last_use = h->clock;
            *sched_p = s;
            return MXH_OK;
        }
        if (h->scheds[i].last_use < h->scheds[victim].last_use)
            victim = i;
    }
    mxh_sched_t *s  = NULL;
    mxh_status_t st = mxh_sched_create(h->layout, h->rank, coll, count, root, tsize, frag, depth,
                                       ramp, &s);
    if (st != MXH_OK)
        return st;
    mxh_sched_destroy(h->scheds[victim].sched);
    h->scheds[victim].sched    = s;
    h->scheds[victim].last_use = h->clock;
    if (mxh_log_level_current >= MXH_LOG_DEBUG) {
        char buf[256];
        mxh_sched_describe(s, buf, sizeof(buf));
        mxh_debug("schedule %s (%s)", buf, mxh_algo_name(choice->algo));
    }
    if (mxh_log_level_current >= MXH_LOG_TRACE) {
        char buf[4096];
        mxh_plan_describe(s->plan, buf, sizeof(buf));
        mxh_trace("plan %s", buf);
    }
    *sched_p = s;
    return MXH_OK;
}

mxh_status_t mxh_hier_plan(mxh_hier_t *h, mxh_coll_t coll, size_t count, int root,
                           const mxh_plan_t **plan_p)
{
    mxh_choice_t whole = {MXH_ALGO_HIER, 0, 0, 0};
    const mxh_sched_t *s;
    mxh_status_t st = mxh_hier_sched(h, coll, count, root, 1, &whole, &s);
    if (st == MXH_OK)
        *plan_p = s->plan;
    return st;
}

static void *grow(void **buf, size_t *size, size_t bytes)
{
    if (bytes == 0)
        bytes = 1;
    if (bytes > *size) {
        /* grow geometrically so that varying sizes settle without reallocations */
        size_t want = bytes > 2 * *size ? bytes : 2 * *size;
#ifdef MXH_SIMGRID
        /* shared pages in model mode: bounded memory at any simulated scale */
        void *p = mxh_sim_realloc(*buf, *size, want);
        if (p == NULL && want > bytes)
            p = mxh_sim_realloc(*buf, *size, want = bytes);
#else
        void *p = realloc(*buf, want);
        if (p == NULL && want > bytes)
            p = realloc(*buf, want = bytes);
#endif
        if (p == NULL)
            return NULL;
        *buf  = p;
        *size = want;
    }
    return *buf;
}

void *mxh_hier_scratch(mxh_hier_t *h, size_t bytes)
{
    return grow(&h->scratch, &h->scratch_size, bytes);
}

void *mxh_hier_tmp(mxh_hier_t *h, size_t bytes)
{
    return grow(&h->tmp, &h->tmp_size, bytes);
}

/* ---- public management API ------------------------------------------------------- */

int MPIX_Hier_comm_init(MPI_Comm comm, MPI_Info info)
{
    static const char F[] = "MPIX_Hier_comm_init";
    mxh_hier_t *h;
    void *attr = NULL;
    int flag = 0, rc;

    if ((rc = mxh_check_comm(comm, F)) != MPI_SUCCESS)
        return rc;
    if (lib_init() != MPI_SUCCESS)
        return mxh_raise(comm, MPI_ERR_OTHER, F, "library initialization failed");
    if (MPI_Comm_get_attr(comm, hier_keyval, &attr, &flag) == MPI_SUCCESS && flag)
        MPI_Comm_delete_attr(comm, hier_keyval);
    return hier_attach(comm, info, F, &h);
}

int MPIX_Hier_comm_get_num_levels(MPI_Comm comm, int *num_levels)
{
    static const char F[] = "MPIX_Hier_comm_get_num_levels";
    mxh_hier_t *h;
    int rc;

    if ((rc = mxh_check_comm(comm, F)) != MPI_SUCCESS)
        return rc;
    if (num_levels == NULL)
        return mxh_raise(comm, MPI_ERR_ARG, F, "num_levels is NULL");
    if ((rc = mxh_hier_get(comm, F, &h)) != MPI_SUCCESS)
        return rc;
    *num_levels = h->layout->nlevels;
    return MPI_SUCCESS;
}

int MPIX_Hier_comm_get_level(MPI_Comm comm, int level, MPI_Comm *level_comm, char *name)
{
    static const char F[] = "MPIX_Hier_comm_get_level";
    mxh_hier_t *h;
    int rc;

    if ((rc = mxh_check_comm(comm, F)) != MPI_SUCCESS)
        return rc;
    if (level_comm == NULL)
        return mxh_raise(comm, MPI_ERR_ARG, F, "level_comm is NULL");
    if ((rc = mxh_hier_get(comm, F, &h)) != MPI_SUCCESS)
        return rc;
    if (level < 0 || level >= h->layout->nlevels)
        return mxh_raise(comm, MPI_ERR_ARG, F, "level %d out of range [0, %d)", level,
                         h->layout->nlevels);
    *level_comm = h->level_comm[level];
    if (name != NULL)
        snprintf(name, MPIX_HIER_MAX_LEVEL_NAME, "%s",
                 mxh_level_type_name(h->layout->type[level]));
    return MPI_SUCCESS;
}

int MPIX_Hier_comm_describe(MPI_Comm comm, char *buf, int buflen, int *resultlen)
{
    static const char F[] = "MPIX_Hier_comm_describe";
    mxh_hier_t *h;
    int rc;

    if ((rc = mxh_check_comm(comm, F)) != MPI_SUCCESS)
        return rc;
    if (buflen < 0 || (buf == NULL && buflen > 0))
        return mxh_raise(comm, MPI_ERR_ARG, F, "buf is NULL or buflen (%d) negative", buflen);
    if ((rc = mxh_hier_get(comm, F, &h)) != MPI_SUCCESS)
        return rc;
    if (buflen > 0)
        snprintf(buf, (size_t)buflen, "%s%s", h->config.enable ? "" : "(MPIX_HIER_ENABLE=no) ",
                 h->description);
    if (resultlen)
        *resultlen = (int)strlen(h->description) + (h->config.enable ? 0 : 23);
    return MPI_SUCCESS;
}

int MPIX_Hier_get_error_class(int *errorclass)
{
    if (errorclass == NULL)
        return MPI_ERR_ARG;
    *errorclass = mxh_config_error_class();
    return MPI_SUCCESS;
}

int MPIX_Hier_get_version(int *major, int *minor, int *patch)
{
    if (major)
        *major = MPIX_HIER_VERSION_MAJOR;
    if (minor)
        *minor = MPIX_HIER_VERSION_MINOR;
    if (patch)
        *patch = MPIX_HIER_VERSION_PATCH;
    return MPI_SUCCESS;
}
