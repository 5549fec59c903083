/* The per-communicator hierarchy: records -> layout -> level communicators,
 * cached on the communicator as an MPI attribute and freed with it. */
#include "config.h"

#include "mpix_internal.h"
#include "topo/discover.h"
#include "topo/topo_conf.h"
#include "util/log.h"
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
    for (hier_node_t **pp = &live_hiers; *pp; pp = &(*pp)->next) {
        if ((*pp)->hier == h) {
            hier_node_t *dead = *pp;
            *pp = dead->next;
            free(dead);
            break;
        }
    }
    hier_free_comms(h);
    if (h->plans) {
        for (int i = 0; i < h->config.plan_cache_size; i++)
            mxh_plan_destroy(h->plans[i].plan);
        free(h->plans);
    }
    mxh_layout_destroy(h->layout);
    free(h->recs);
    free(h->description);
    free(h->scratch);
    free(h->tmp);
    free(h);
}

static int hier_delete_fn(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    hier_destroy((mxh_hier_t *)attr);
    return MPI_SUCCESS;
}

static int self_delete_fn(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)attr;
    (void)extra;
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
        mxh_strlcpy(rec->node, name, sizeof(rec->node));
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

    if (h->config.topo_file[0] == '\0' && access(MXH_SLURM_TOPO_DEFAULT, R_OK) == 0)
        mxh_strlcpy(h->config.topo_file, MXH_SLURM_TOPO_DEFAULT, sizeof(h->config.topo_file));
    if (h->config.topo_file[0] != '\0') {
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

/* One line saying how the collectives cross the levels, for the info log. */
static void describe_algorithms(const mxh_hier_t *h, char *buf, size_t len)
{
    const mxh_layout_t *L = h->layout;
    size_t off = 0;

    buf[0] = '\0';
    if (!h->config.enable || L->nlevels < 2) {
        snprintf(buf, len, "every MPIX_Hier_ collective uses the plain MPI collective (%s)",
                 h->config.enable ? "trivial hierarchy" : "MPIX_HIER_ENABLE=no");
        return;
    }
    off += (size_t)snprintf(buf + off, len - off, "allreduce =");
    for (int l = 0; l < L->nlevels - 1 && off < len; l++)
        off += (size_t)snprintf(buf + off, len - off, " %s(%s) ->",
                                L->kind[l] == MXH_LEVEL_KIND_SCATTER ? "reduce_scatter" : "reduce",
                                mxh_level_type_name(L->type[l]));
    if (off < len)
        off += (size_t)snprintf(buf + off, len - off, " allreduce(%s)",
                                mxh_level_type_name(L->type[L->nlevels - 1]));
    for (int l = L->nlevels - 2; l >= 0 && off < len; l--)
        off += (size_t)snprintf(buf + off, len - off, " -> %s(%s)",
                                L->kind[l] == MXH_LEVEL_KIND_SCATTER ? "allgather" : "bcast",
                                mxh_level_type_name(L->type[l]));
    if (off < len)
        snprintf(buf + off, len - off,
                 "; the other collectives follow the same levels; plain MPI for messages under "
                 "%zu bytes, non-commutative ops, MINLOC/MAXLOC and derived datatypes",
                 h->config.min_bytes);
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
                           "configuration differs between rank 0 and rank %d: MPIX_HIER_ENABLE, MPIX_HIER_DISCOVER, "
                           "MPIX_HIER_MIN_BYTES and MPIX_HIER_LEVELS (environment or MPI_Info) "
                           "must be equal on all ranks",
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
    h->plans = calloc((size_t)h->config.plan_cache_size, sizeof(*h->plans));
    size_t dlen = mxh_layout_describe(h->layout, h->recs, NULL, 0);
    h->description = malloc(dlen + 1);
    if (h->plans == NULL || h->description == NULL) {
        hier_destroy(h);
        return mxh_raise(comm, MPI_ERR_NO_MEM, func, "out of memory");
    }
    mxh_layout_describe(h->layout, h->recs, h->description, dlen + 1);
    if (h->rank == 0) {
        char cname[MPI_MAX_OBJECT_NAME] = "";
        int clen = 0;
        MPI_Comm_get_name(comm, cname, &clen);
        char algo[512];
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

    if (lib_init() != MPI_SUCCESS)
        return mxh_raise(comm, MPI_ERR_OTHER, func, "library initialization failed");
    if (MPI_Comm_get_attr(comm, hier_keyval, &attr, &flag) == MPI_SUCCESS && flag && attr) {
        *hier_p = (mxh_hier_t *)attr;
        return MPI_SUCCESS;
    }
    return hier_attach(comm, MPI_INFO_NULL, func, hier_p);
}

int mxh_hier_active(const mxh_hier_t *hier)
{
    return hier->config.enable && hier->layout->nlevels >= 2;
}

mxh_status_t mxh_hier_plan(mxh_hier_t *h, mxh_coll_t coll, size_t count, int root,
                           const mxh_plan_t **plan_p)
{
    int victim = 0;

    h->clock++;
    for (int i = 0; i < h->config.plan_cache_size; i++) {
        mxh_plan_t *p = h->plans[i].plan;
        if (p && p->coll == coll && p->count == count && p->root == root) {
            h->plans[i].last_use = h->clock;
            *plan_p = p;
            return MXH_OK;
        }
        if (h->plans[i].last_use < h->plans[victim].last_use)
            victim = i;
    }
    mxh_plan_t *p = NULL;
    mxh_status_t st = mxh_plan_create(h->layout, h->rank, coll, count,
                                      (coll == MXH_COLL_BCAST || coll == MXH_COLL_REDUCE) ? root
                                                                                          : -1,
                                      &p);
    if (st != MXH_OK)
        return st;
    mxh_plan_destroy(h->plans[victim].plan);
    h->plans[victim].plan     = p;
    h->plans[victim].last_use = h->clock;
    if (mxh_log_level_current >= MXH_LOG_TRACE) {
        char buf[4096];
        mxh_plan_describe(p, buf, sizeof(buf));
        mxh_trace("plan %s", buf);
    }
    *plan_p = p;
    return MXH_OK;
}

static void *grow(void **buf, size_t *size, size_t bytes)
{
    if (bytes == 0)
        bytes = 1;
    if (bytes > *size) {
        /* grow geometrically so that varying sizes settle without reallocations */
        size_t want = bytes > 2 * *size ? bytes : 2 * *size;
        void *p = realloc(*buf, want);
        if (p == NULL && want > bytes)
            p = realloc(*buf, want = bytes);
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
