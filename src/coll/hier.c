/* The per-communicator object (coll/hier.h), cached on the communicator as an MPI
 * attribute and freed with it. Created in three steps: build (records -> layout ->
 * level communicators, shared memory), measure (the network, exec/measure_run.h) and
 * tune (the cost-model state, decide/tune_hier.h). */
#include "config.h"

#include "coll/hier.h"
#include "decide/cost.h"
#include "decide/tune.h"
#include "exec/measure_run.h"
#include "decide/tune_hier.h"
#include "exec/ipc.h"
#include "exec/p2p.h"
#include "coll/alltoall.h"
#include "coll/metrics.h"
#include "mem/ipc_cache.h"
#include "topo/discover.h"
#include "topo/local_record.h"
#include "util/log.h"
#include "sim/sim.h"
#include "util/str.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static int hier_keyval = MPI_KEYVAL_INVALID;
static int self_keyval = MPI_KEYVAL_INVALID;
static int queue_keyval = MPI_KEYVAL_INVALID;

/* A communicator's queue: referenced by its attribute and by the hierarchy
 * object (which may be rebuilt, or deleted before or after the attribute). */
struct mxh_comm_queue {
    mxh_task_queue_t q;
    int              refs;
};

static void comm_queue_unref(struct mxh_comm_queue *cq)
{
    if (cq != NULL && --cq->refs == 0)
        free(cq);
}

static int queue_delete_fn(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    struct mxh_comm_queue *cq = attr;
    (void)comm;
    (void)keyval;
    (void)extra;
    mxh_task_queue_drain(&cq->q); /* MPI_Comm_free is collective: every rank drains */
    comm_queue_unref(cq);
    return MPI_SUCCESS;
}

static struct mxh_comm_queue *comm_queue_get(MPI_Comm comm, int create)
{
    struct mxh_comm_queue *cq = NULL;
    int flag = 0;

    if (queue_keyval == MPI_KEYVAL_INVALID)
        return NULL;
    if (MPI_Comm_get_attr(comm, queue_keyval, &cq, &flag) == MPI_SUCCESS && flag && cq)
        return cq;
    if (!create || (cq = calloc(1, sizeof(*cq))) == NULL)
        return NULL;
    mxh_task_queue_init(&cq->q);
    cq->refs = 1;
    if (MPI_Comm_set_attr(comm, queue_keyval, cq) != MPI_SUCCESS) {
        free(cq);
        return NULL;
    }
    return cq;
}

mxh_task_queue_t *mxh_comm_queue(MPI_Comm comm)
{
    struct mxh_comm_queue *cq;
    if (mxh_lib_init() != MXH_OK || (cq = comm_queue_get(comm, 1)) == NULL)
        return NULL;
    return &cq->q;
}

mxh_task_queue_t *mxh_comm_queue_find(MPI_Comm comm)
{
    struct mxh_comm_queue *cq = comm_queue_get(comm, 0);
    return cq ? &cq->q : NULL;
}
int mxh_lib_initialized; /* hier.h */
static void (*finalize_hook)(void);

void mxh_lib_on_finalize(void (*fn)(void))
{
    finalize_hook = fn;
}
static int unknown_warned;
static mxh_config_t global_config;
const mxh_config_t *mxh_lib_config(void)
{
    return &global_config;
}
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
MPI_Comm    mxh_hier_last_comm = MPI_COMM_NULL; /* hier.h: mxh_hier_cached */
mxh_hier_t *mxh_hier_last;

static void hier_free_comms(mxh_hier_t *h)
{
    for (int l = 0; l < MXH_MAX_LEVELS; l++)
        if (h->level_comm[l] != MPI_COMM_NULL)
            MPI_Comm_free(&h->level_comm[l]);
    if (h->spread_comm != MPI_COMM_NULL)
        MPI_Comm_free(&h->spread_comm);
    if (h->node_comm != MPI_COMM_NULL)
        MPI_Comm_free(&h->node_comm);
    if (h->comm != MPI_COMM_NULL)
        MPI_Comm_free(&h->comm);
}

static void hier_destroy(mxh_hier_t *h)
{
    if (h == NULL)
        return;
    /* nonblocking collectives still queued on it complete first (MPI_Comm_free
     * is collective: every rank drains) */
    if (h->queue != NULL)
        mxh_task_queue_drain(h->queue);
    if (h == mxh_hier_last) {
        mxh_hier_last_comm = MPI_COMM_NULL;
        mxh_hier_last = NULL;
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
    mxh_ipc_destroy(h->ipc);
    mxh_ipc_destroy(h->ipc_node);
    mxh_shm_destroy(h->shm_node);
    mxh_ipc_cache_release_owner(h); /* peer device mappings opened for this communicator */
    mxh_alltoall_destroy(h->a2a);   /* its communicators: collective too */
    mxh_xrail_free(&h->xrail);
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
    mxh_sim_free(h->scratch.p);
    mxh_sim_free(h->tmp.p);
#else
    free(h->scratch.p);
    free(h->tmp.p);
#endif
    for (int k = 0; k < MXH_MEM_NKINDS; k++)
        for (int w = 0; w < 2; w++)
            if (h->stage[k][w].p != NULL)
                mxh_mem_ops((mxh_mem_kind_t)k)->stage_free(h->stage[k][w].p, h->stage[k][w].size);
    for (int k = 0; k < MXH_MEM_NKINDS; k++) {
        const mxh_mem_ops_t *o = mxh_mem_ops((mxh_mem_kind_t)k);
        for (int w = 0; w < 2; w++)
            if (h->dev[k][w].p != NULL)
                o->work_free(h->dev[k][w].p, h->dev[k][w].size);
        if (h->bounce[k].p != NULL)
            o->stage_free(h->bounce[k].p, h->bounce[k].size);
    }
    free(h->devs.p);
    free(h->blk_counts);
    free(h->blk_displs);
    mxh_hier_grow_free(&h->ipc_regs);
    mxh_sched_destroy(h->vsched);
    free(h->vsched_counts);
    comm_queue_unref(h->cq);
    free(h);
}

static int hier_delete_fn(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
#ifdef MXH_SIMGRID
    if (!mxh_lib_initialized)
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
    mxh_lib_initialized = 0;
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
    mxh_metrics_finalize(); /* after the queues drained: their calls are counted */
    if (hier_keyval != MPI_KEYVAL_INVALID)
        MPI_Comm_free_keyval(&hier_keyval);
    if (queue_keyval != MPI_KEYVAL_INVALID)
        MPI_Comm_free_keyval(&queue_keyval);
    MPI_Comm_free_keyval(&keyval);
    mxh_discover_cleanup();
    if (finalize_hook)
        finalize_hook();
    self_keyval     = MPI_KEYVAL_INVALID;
    mxh_lib_initialized = 0;
    return MPI_SUCCESS;
}

/* Process-wide set-up on first use: keyvals, log level and rank. */
mxh_status_t mxh_lib_init(void)
{
    int wrank = -1;

    if (mxh_lib_initialized)
        return MXH_OK;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    mxh_log_set_rank(wrank);
    mxh_config_init_defaults(&global_config);
    global_config_status = mxh_config_apply_env(&global_config, !unknown_warned && wrank == 0);
    if (global_config_status == MXH_OK)
        mxh_log_set_level((mxh_log_level_t)global_config.log_level);
    else
        mxh_strlcpy(global_config_error, mxh_log_last_error(), sizeof(global_config_error));
    unknown_warned = 1;
    if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, queue_delete_fn, &queue_keyval, NULL) !=
            MPI_SUCCESS ||
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, hier_delete_fn, &hier_keyval, NULL) !=
            MPI_SUCCESS ||
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete_fn, &self_keyval, NULL) !=
            MPI_SUCCESS ||
        MPI_Comm_set_attr(MPI_COMM_SELF, self_keyval, NULL) != MPI_SUCCESS) {
        mxh_error("cannot create the library's MPI attribute keys");
        return MXH_ERR_MPI;
    }
    mxh_lib_initialized = 1;
    return MXH_OK;
}

/* How the collectives cross the levels, and which algorithm serves which
 * message sizes, for the info log. */
static void describe_algorithms(const mxh_hier_t *h, char *buf, size_t len)
{
    const mxh_layout_t *L = h->layout;
    size_t off = 0;

#define PUT(...) mxh_str_put(buf, len, &off, __VA_ARGS__)
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
    PUT(" Plain MPI always for user-defined ops, MINLOC/MAXLOC, (type, op) pairs without a "
        "kernel, reductions whose type signature mixes basic types, intercommunicators.");
#undef PUT
}

/* Shared-memory segments: the whole communicator when it lives on one node
 * (single-node algorithms) and every node-local level (hierarchical steps).
 * Creation is collective and agreed; a segment that cannot be made is simply
 * not used. */
/* The device node level over @shm (members of @comm), or NULL (agreed over @comm). */
static mxh_ipc_t *create_ipc(mxh_hier_t *h, mxh_shm_t *shm, MPI_Comm comm)
{
    mxh_ipc_t *x = NULL;
    int n = 1, me = 0, ok, all = 0;

    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    ok = mxh_ipc_create(shm, n, me, h, &x) == MXH_OK;
    if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS || !all) {
        mxh_ipc_destroy(x);
        return NULL;
    }
    return x;
}

/* Append @line to the description (whose length is *@dlen); out of memory: left out. */
static void describe_add(mxh_hier_t *h, size_t *dlen, const char *line)
{
    char *d = realloc(h->description, *dlen + strlen(line) + 1);
    if (d != NULL) {
        h->description = d;
        strcpy(d + *dlen, line);
        *dlen += strlen(line);
    }
}

static void create_shm(mxh_hier_t *h)
{
    const mxh_layout_t *L = h->layout;

    h->ipc_min       = h->config.ipc_min;
    h->ipc_shared[0] = h->ipc_shared[1] = -1;
    if (!h->config.shm || h->size < 2)
        return;
    if (L->nnodes == 1 && mxh_shm_create(h->comm, h->config.shm_chunk, &h->shm_all) != MXH_OK) {
        mxh_info("shared-memory collectives unavailable on this communicator");
        h->shm_all = NULL;
    }
    /* the device node level (exec/ipc.h), over the same segment: asked for, or
     * (auto) every rank drives a GPU (the layout is agreed) */
    int want = h->config.ipc != 0;
    for (int r = 0; r < h->size && want && h->config.ipc < 0; r++)
        want = L->gpu_of[r] >= 0;
    /* auto, ranks of one node on one GPU: only from MXH_IPC_SHARED_GPU_MIN bytes, unless
     * both share it through MPS (one context: no time slicing, exec/ipc.h) */
    if (want && h->config.ipc < 0) {
        int g = 0, *first;
        for (int r = 0; r < h->size; r++)
            g = L->gpu_of[r] >= g ? L->gpu_of[r] + 1 : g;
        if ((first = malloc(sizeof(int) * (size_t)L->nnodes * (size_t)g)) != NULL) {
            for (size_t i = 0; i < (size_t)L->nnodes * (size_t)g; i++)
                first[i] = -1;
            for (int r = 0; r < h->size && h->ipc_shared[0] < 0; r++) {
                int *f = &first[(size_t)L->node_of[r] * (size_t)g + (size_t)L->gpu_of[r]];
                if (*f >= 0 && !(h->recs[*f].flags & h->recs[r].flags & MXH_REC_GPU_MPS)) {
                    h->ipc_shared[0] = *f;
                    h->ipc_shared[1] = r;
                    if (h->ipc_min < MXH_IPC_SHARED_GPU_MIN)
                        h->ipc_min = MXH_IPC_SHARED_GPU_MIN;
                }
                if (*f >= 0)
                    h->ipc_mps = h->ipc_shared[0] < 0;
                else
                    *f = r;
            }
            free(first);
        }
    }
    if (want && h->shm_all != NULL)
        h->ipc = create_ipc(h, h->shm_all, h->comm);
    /* several nodes: the node part of device allreduces (coll.c,
     * ipc_hybrid_allreduce) over a communicator and segment of the whole node;
     * only the ranks of one node need to agree on it */
    if (want && L->nnodes > 1 &&
        MPI_Comm_split(h->comm, L->node_of[h->rank], h->rank, &h->node_comm) == MPI_SUCCESS) {
        int nsize = 1;
        MPI_Comm_size(h->node_comm, &nsize);
        h->node_alone = nsize == 1;
        if (nsize > 1 && mxh_shm_create(h->node_comm, h->config.shm_chunk, &h->shm_node) == MXH_OK)
            h->ipc_node = create_ipc(h, h->shm_node, h->node_comm);
        else
            h->shm_node = NULL;
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
        if (strncasecmp(key, "mpix_hier_", 10) != 0) /* upper case as in the environment too */
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

/* Every rank's record on every rank: see hier.h. MPICH's allgather of more than 512 KB
 * (592 B x 1024 ranks) is a ring of p - 1 steps, p(p - 1) messages: a large share of
 * a 1024-rank simulation's CPU (RESULTS.md section 5, "A 1024-rank setup's CPU"); below
 * 80 KB it takes recursive doubling or Bruck, log2 p steps. A resized receive type
 * instead of the contiguous scratch broke SMPI 3.32's allgather at 1024 ranks. */
mxh_status_t mxh_allgather_sliced(const void *mine, void *all, size_t bytes, size_t slice,
                                  MPI_Comm comm)
{
    int size = 1;
    MPI_Comm_size(comm, &size);
    size_t len = slice / (size_t)size;
    if (len == 0)
        len = 1;
    if (len > bytes)
        len = bytes;
    /* one slice lands in @all itself; several go through a contiguous scratch */
    unsigned char *scratch = len == bytes && all != NULL ? all : malloc(len * (size_t)size);
    int ok = 1, have = scratch != NULL;
    for (size_t off = 0; off < bytes; off += len) {
        size_t n = bytes - off < len ? bytes - off : len;
        /* a rank without scratch still calls, receiving nothing (its build fails) */
        int rc = MPI_Allgather((const unsigned char *)mine + off, (int)n, MPI_BYTE, scratch,
                               have ? (int)n : 0, MPI_BYTE, comm);
        if (rc != MPI_SUCCESS)
            ok = 0;
        if (all != NULL && have && scratch != (unsigned char *)all)
            for (int r = 0; r < size; r++)
                memcpy((unsigned char *)all + (size_t)r * bytes + off, scratch + (size_t)r * n,
                       n);
    }
    if (scratch != (unsigned char *)all)
        free(scratch);
    if (!ok) {
        mxh_error("MPI_Allgather of the rank records failed");
        return MXH_ERR_MPI;
    }
    if (!have && all != NULL) {
        mxh_error("cannot allocate %zu bytes to gather the rank records", len * (size_t)size);
        return MXH_ERR_NO_MEMORY;
    }
    return MXH_OK;
}

/* A hierarchy with nothing built yet (its communicators null) holding a reference to
 * @comm's queue; NULL, logged, if out of memory. */
static mxh_hier_t *hier_new(MPI_Comm comm)
{
    mxh_hier_t *h = calloc(1, sizeof(*h));

    if (h == NULL) {
        mxh_error("cannot allocate the hierarchy");
        return NULL;
    }
    h->comm        = MPI_COMM_NULL;
    h->node_comm   = MPI_COMM_NULL;
    h->spread_comm = MPI_COMM_NULL;
    h->user_comm   = comm;
    for (int l = 0; l < MXH_MAX_LEVELS; l++)
        h->level_comm[l] = MPI_COMM_NULL;
    h->cq = comm_queue_get(comm, 1);
    if (h->cq == NULL) {
        free(h);
        mxh_error("cannot allocate the communicator's queue");
        return NULL;
    }
    h->cq->refs++;
    h->queue = &h->cq->q;
    return h;
}

/* The configuration: default < environment < info. Its error is returned, to be
 * reported after the records are exchanged, so that every rank fails together. */
static mxh_status_t hier_config(mxh_hier_t *h, MPI_Info info)
{
    mxh_status_t local;

    mxh_log_clear_last_error();
    h->config = global_config;
    local     = global_config_status;
    if (local == MXH_OK)
        local = apply_info(&h->config, info);
    if (local == MXH_OK)
        mxh_log_set_level((mxh_log_level_t)h->config.log_level);
    return local;
}

/* The collective verdicts on the gathered records, identical on every rank: some rank
 * failed (this one with @local, @msg), or the configurations differ. */
static mxh_status_t records_agree(const mxh_hier_t *h, mxh_status_t local, const char *msg)
{
    int bad_rank = -1;

    for (int r = 0; r < h->size && bad_rank < 0; r++)
        if (h->recs[r].status != MXH_OK)
            bad_rank = r;
    if (bad_rank >= 0) {
        if (local != MXH_OK)
            mxh_error("building the hierarchy failed on this rank (%d): %s", h->rank,
                      msg[0] ? msg : mxh_status_string(local));
        else
            mxh_error("building the hierarchy failed on rank %d (%s); see that rank's "
                      "log for the cause",
                      bad_rank, mxh_status_string((mxh_status_t)h->recs[bad_rank].status));
        return MXH_ERR_CONFIG;
    }
    for (int r = 1; r < h->size; r++) {
        if (h->recs[r].config_hash != h->recs[0].config_hash) {
            char names[2048];
            mxh_config_plan_names(names, sizeof(names));
            mxh_error("configuration differs between rank 0 and rank %d: the variables that "
                      "change the plan must be equal on all ranks (environment or MPI_Info): %s",
                      r, names);
            return MXH_ERR_CONFIG;
        }
    }
    return MXH_OK;
}

/* Every rank's record on every rank (collective over h->comm), this rank's carrying
 * the configuration's status @local. */
static mxh_status_t hier_records(mxh_hier_t *h, mxh_status_t local)
{
    mxh_record_t mine;
    char msg[512] = "";
    mxh_status_t st = mxh_discover_local_record(h->comm, &h->config, &mine);

    if (local == MXH_OK)
        local = st;
    mine.status = (int32_t)local;
    if (local != MXH_OK)
        mxh_strlcpy(msg, global_config_status != MXH_OK ? global_config_error : mxh_log_last_error(),
                    sizeof(msg));
    h->recs = malloc(sizeof(mxh_record_t) * (size_t)h->size);
    st = mxh_allgather_sliced(&mine, h->recs, sizeof(mine), MXH_RECORDS_SLICE_BYTES, h->comm);
    if (h->recs == NULL) {
        mxh_error("cannot allocate %d records", h->size);
        return MXH_ERR_NO_MEMORY;
    }
    if (st != MXH_OK)
        return st;
    return records_agree(h, local, msg);
}

/* The layout, its level and spread communicators and the shared-memory segments
 * (collective over h->comm); what selection may use of them. */
static mxh_status_t hier_levels(mxh_hier_t *h)
{
    mxh_status_t st = mxh_layout_create(h->recs, h->size, h->config.levels_mask, &h->layout);

    if (st != MXH_OK)
        return st;
    for (int l = 0; l < h->layout->nlevels; l++) {
        if (MPI_Comm_split(h->comm, h->layout->color[l][h->rank], h->layout->coord[l][h->rank],
                           &h->level_comm[l]) != MPI_SUCCESS) {
            mxh_error("MPI_Comm_split for level %d failed", l);
            return MXH_ERR_MPI;
        }
        MPI_Comm_set_errhandler(h->level_comm[l], MPI_ERRORS_RETURN);
    }
    /* the spread group of small allreduces (plan.c): same decision on every rank */
    if (h->config.spread && (st = mxh_layout_spread_init(h->layout)) != MXH_OK)
        return st;
    if (h->layout->spread_p > 0) {
        if (MPI_Comm_split(h->comm, h->layout->coord[0][h->rank],
                           h->layout->spread_key[h->rank], &h->spread_comm) != MPI_SUCCESS) {
            mxh_error("MPI_Comm_split for the spread group failed");
            return MXH_ERR_MPI;
        }
        MPI_Comm_set_errhandler(h->spread_comm, MPI_ERRORS_RETURN);
    }
    create_shm(h);
    /* the executors' agreed view of the shared-memory levels: where a segment exists
     * (none under SimGrid, none where creation failed), not where one was configured */
    unsigned mine = 0;
    for (int l = 0; l < h->layout->nlevels; l++)
        if (h->shm[l] != NULL)
            mine |= 1u << l;
    if (MPI_Allreduce(&mine, &h->shm_levels, 1, MPI_UNSIGNED, MPI_BOR, h->comm) !=
        MPI_SUCCESS) {
        mxh_error("MPI_Allreduce of the shared-memory levels failed");
        return MXH_ERR_MPI;
    }
    h->shape.nranks   = h->size;
    h->shape.nlevels  = h->layout->nlevels;
    h->shape.shm_comm = h->shm_all != NULL;
    return MXH_OK;
}

/* ---- measure and tune ----------------------------------------------------------- */

/* The network's parameters where the configuration wants them (decide/tune_hier.h):
 * collective over h->comm, rank 0 measures and broadcasts. Returns @m, or NULL where
 * not measured. */
static const mxh_measure_t *hier_measure(const mxh_hier_t *h, mxh_measure_t *m)
{
    if (!mxh_tune_measure_wanted(&h->config, h->layout->nlevels))
        return NULL;
    mxh_measure_run(h->comm, h->layout, h->rank, m);
    return m;
}

/* The cost-model state from the measurement @m (NULL: none), the configuration resolved
 * by it (decide/tune_hier.h); @measured: the description's line on the measurement. */
static void hier_tune(mxh_hier_t *h, const mxh_measure_t *m, char *measured, size_t len)
{
    mxh_config_t fit = h->config; /* the measured figures */
    mxh_tune_facts_t f;

    mxh_tune_facts(m, h->layout->torus_ndims > 0, &fit, &f);
    mxh_tune_trust_t t = mxh_tune_trust(&h->config, &f);
    mxh_tune_describe(&t, &f, m, &fit, measured, len);
    mxh_tune_hier(&t, &fit, h->layout, h->rank, &h->config, &h->cost);
}

/* ---- describe ------------------------------------------------------------------- */

/* The description's line on a device node level raised for ranks sharing a GPU. */
static void describe_ipc(mxh_hier_t *h, size_t *dlen)
{
    char line[256];

    if (h->ipc_shared[0] >= 0)
        snprintf(line, sizeof(line),
                 "  device node level (MPIX_HIER_IPC=auto) from %zu bytes: ranks %d and %d share "
                 "GPU %d of their node\n",
                 h->ipc_min, h->ipc_shared[0], h->ipc_shared[1], h->layout->gpu_of[h->ipc_shared[0]]);
    else if (h->ipc_mps)
        snprintf(line, sizeof(line),
                 "  device node level (MPIX_HIER_IPC=auto) from %zu bytes: ranks of a node share "
                 "a GPU through MPS\n",
                 h->ipc_min);
    else
        return;
    describe_add(h, dlen, line);
}

/* The description's line on device buffers across nodes (coll.c device_net): where the
 * node part runs, and how this rank's network steps move device memory and why (the
 * transport capabilities, queried here only on a rank that drives a GPU). */
static void describe_dnet(mxh_hier_t *h, size_t *dlen)
{
    char line[512], why[128];
    int direct;

    if (h->ipc_node == NULL && !h->node_alone)
        return;
    if (h->layout->gpu_of[h->rank] >= 0) {
        direct = mxh_caps_net_direct(mxh_discover_caps(NULL), why, sizeof(why));
    } else { /* no GPU: only the test kind's buffers take the path */
        direct = mxh_mem_test_mpi_direct();
        snprintf(why, sizeof(why), "%s", direct ? "test memory, its test-only direct mode"
                                                : "no GPU");
    }
    snprintf(line, sizeof(line),
             "  device buffers across nodes (from %zu bytes): node part on the device node "
             "level, network steps on the device, their messages %s (%s)\n",
             h->ipc_min, direct ? "direct" : "through a bounded pinned bounce pool", why);
    describe_add(h, dlen, line);
}

/* MPIX_HIER_EXCLUDE_RAILS: pure decision on agreed data (the mask is in the plan hash),
 * and its line of the description. */
static mxh_status_t describe_xrail(mxh_hier_t *h, size_t *dlen)
{
    char why[128], line[512];
    size_t off = 0;

    if (h->config.exclude_rails == 0)
        return MXH_OK;
    if (mxh_xrail_plan(h->layout, h->config.exclude_rails, &h->xrail, why, sizeof(why)) !=
        MXH_OK)
        return MXH_ERR_NO_MEMORY;
    off += (size_t)snprintf(line + off, sizeof(line) - off, "  rails excluded:");
    for (int r = 0; r < 64 && off < sizeof(line); r++)
        if (h->config.exclude_rails >> r & 1)
            off += (size_t)snprintf(line + off, sizeof(line) - off, " %d", r);
    if (off < sizeof(line))
        snprintf(line + off, sizeof(line) - off, " (MPIX_HIER_EXCLUDE_RAILS): %s\n",
                 h->xrail.active ? "allreduce sends over the other rails" : why);
    describe_add(h, dlen, line);
    if (h->rank == 0 && !h->xrail.active)
        mxh_warn("MPIX_HIER_EXCLUDE_RAILS ignored on this communicator: %s", why);
    return MXH_OK;
}

/* The schedule cache, the block tables and the description (with the measurement's
 * line @measured). */
static mxh_status_t hier_describe(mxh_hier_t *h, const char *measured)
{
    h->scheds = calloc((size_t)h->config.plan_cache_size, sizeof(*h->scheds));
    size_t dlen = mxh_layout_describe(h->layout, h->recs, NULL, 0);
    h->description = malloc(dlen + 1);
    h->blk_counts = malloc(sizeof(int) * (size_t)h->size);
    h->blk_displs = malloc(sizeof(int) * (size_t)h->size);
    if (h->scheds == NULL || h->description == NULL || h->blk_counts == NULL ||
        h->blk_displs == NULL) {
        mxh_error("out of memory");
        return MXH_ERR_NO_MEMORY;
    }
    mxh_layout_describe(h->layout, h->recs, h->description, dlen + 1);
    if (measured[0] != '\0')
        describe_add(h, &dlen, measured);
    describe_ipc(h, &dlen);
    describe_dnet(h, &dlen);
    return describe_xrail(h, &dlen);
}

/* Rank 0's info line on the communicator @comm's hierarchy, and a topology file's
 * unlisted nodes. */
static void hier_log(const mxh_hier_t *h, MPI_Comm comm)
{
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

/* The hierarchy of @comm (collective): build, measure, tune, describe. */
static mxh_status_t hier_build(MPI_Comm comm, MPI_Info info, mxh_hier_t **hier_p)
{
    mxh_hier_t *h = hier_new(comm);
    mxh_measure_t m;
    char measured[512];
    mxh_status_t st, local;

    if (h == NULL)
        return MXH_ERR_NO_MEMORY;
    local = hier_config(h, info);
    if (MPI_Comm_dup(comm, &h->comm) != MPI_SUCCESS) {
        mxh_error("MPI_Comm_dup failed");
        st = MXH_ERR_MPI;
        goto err_new;
    }
    MPI_Comm_set_errhandler(h->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(h->comm, &h->rank);
    MPI_Comm_size(h->comm, &h->size);
    if ((st = hier_records(h, local)) != MXH_OK || (st = hier_levels(h)) != MXH_OK)
        goto err_built;
    /* the all-to-all communicators now, while the build is collective anyway: at
     * a nonblocking post their splits would block on ranks busy elsewhere */
    if (mxh_hier_active(h) && mxh_alltoall_applicable(h->layout))
        (void)mxh_alltoall_setup(h); /* agreed verdict; without it alltoall falls back */
    hier_tune(h, hier_measure(h, &m), measured, sizeof(measured));
    if ((st = hier_describe(h, measured)) != MXH_OK)
        goto err_built;
    if (h->rank == 0)
        hier_log(h, comm);
    hier_node_t *node = malloc(sizeof(*node));
    if (node == NULL) {
        mxh_error("out of memory");
        st = MXH_ERR_NO_MEMORY;
        goto err_built;
    }
    node->hier = h;
    node->next = live_hiers;
    live_hiers = node;
    *hier_p    = h;
    return MXH_OK;

err_built: /* frees what is set (collective, like the build) */
    hier_destroy(h);
    return st;
err_new: /* no private communicator: nothing queued on it to drain */
    comm_queue_unref(h->cq);
    free(h);
    return st;
}

static mxh_status_t hier_attach(MPI_Comm comm, MPI_Info info, mxh_hier_t **hier_p)
{
    mxh_hier_t *h = NULL;
    mxh_status_t st = hier_build(comm, info, &h);
    if (st != MXH_OK)
        return st;
    if (MPI_Comm_set_attr(comm, hier_keyval, h) != MPI_SUCCESS) {
        hier_destroy(h);
        mxh_error("MPI_Comm_set_attr failed");
        return MXH_ERR_MPI;
    }
    *hier_p = h;
    return MXH_OK;
}

mxh_status_t mxh_hier_get(MPI_Comm comm, mxh_hier_t **hier_p)
{
    void *attr = NULL;
    int flag = 0;
    mxh_status_t st;

    if (comm == mxh_hier_last_comm && mxh_hier_last != NULL) {
        *hier_p = mxh_hier_last;
        return MXH_OK;
    }
    if ((st = mxh_lib_init()) != MXH_OK)
        return st;
    if (MPI_Comm_get_attr(comm, hier_keyval, &attr, &flag) == MPI_SUCCESS && flag && attr) {
        *hier_p = (mxh_hier_t *)attr;
    } else {
        st = hier_attach(comm, MPI_INFO_NULL, hier_p);
        if (st != MXH_OK)
            return st;
    }
    mxh_hier_last_comm = comm;
    mxh_hier_last = *hier_p;
    return MXH_OK;
}


mxh_status_t mxh_hier_init(MPI_Comm comm, MPI_Info info, mxh_hier_t **hier_p)
{
    void *attr = NULL;
    int flag = 0;
    mxh_status_t st;

    if ((st = mxh_lib_init()) != MXH_OK)
        return st;
    if (MPI_Comm_get_attr(comm, hier_keyval, &attr, &flag) == MPI_SUCCESS && flag)
        MPI_Comm_delete_attr(comm, hier_keyval);
    return hier_attach(comm, info, hier_p);
}

int mxh_hier_active(const mxh_hier_t *hier)
{
    return hier->config.enable && hier->layout->nlevels >= 2;
}

void mxh_hier_tune(const mxh_hier_t *h, mxh_sched_t *s, int picks)
{
    mxh_tune_in_t in = {.cfg        = &h->config,
                        .select     = h->cost.selects ? &h->cost.sel.m : NULL,
                        .times      = mxh_hier_times(h),
                        .pace       = mxh_hier_pace(h, s),
                        .pace_links = mxh_hier_pace_links(h, s),
                        .shm_levels = h->shm_levels,
                        .picks      = picks};
    for (int l = 0; l < h->layout->nlevels && l < MXH_MAX_LEVELS; l++)
        in.my_shm |= (h->shm[l] != NULL) << l;
    mxh_tune_sched(s, &in);
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
    /* a schedule the model chose with measured figures is paced by them */
    s->by_model = choice->model;
    mxh_hier_tune(h, s, 1);
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
    mxh_choice_t whole = {MXH_ALGO_HIER, 0, 0, 0, MXH_FB_NONE, 0};
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

void *mxh_hier_grow(mxh_grow_buf_t *b, size_t bytes)
{
    return grow(&b->p, &b->size, bytes);
}

void mxh_hier_grow_free(mxh_grow_buf_t *b)
{
#ifdef MXH_SIMGRID
    mxh_sim_free(b->p);
#else
    free(b->p);
#endif
    b->p    = NULL;
    b->size = 0;
}

void *mxh_hier_scratch(mxh_hier_t *h, size_t bytes)
{
    return grow(&h->scratch.p, &h->scratch.size, bytes);
}

void *mxh_hier_tmp(mxh_hier_t *h, size_t bytes)
{
    return grow(&h->tmp.p, &h->tmp.size, bytes);
}

/* Buffer @b of a memory kind's own memory (@alloc/@release: staging or work memory), at
 * least @bytes: no realloc for pinned or device memory, a new, geometrically larger buffer. */
static void *grow_kind(mxh_grow_buf_t *b, void *(*alloc)(size_t), void (*release)(void *, size_t),
                       size_t bytes, const char *what, const char *kind)
{
    if (bytes == 0)
        bytes = 1;
    if (bytes > b->size) {
        size_t want = bytes > 2 * b->size ? bytes : 2 * b->size;
        void *p     = alloc(want);
        if (p == NULL && want > bytes)
            p = alloc(want = bytes);
        if (p == NULL) {
            mxh_error("cannot allocate %zu bytes of %s %s memory", bytes, kind, what);
            return NULL;
        }
        if (b->p != NULL)
            release(b->p, b->size);
        b->p    = p;
        b->size = want;
    }
    return b->p;
}

void *mxh_hier_stage(mxh_hier_t *h, const mxh_mem_ops_t *ops, int which, size_t bytes)
{
    return grow_kind(&h->stage[ops->kind][which], ops->stage_alloc, ops->stage_free, bytes,
                     "staging", ops->name);
}

void *mxh_hier_dev(mxh_hier_t *h, const mxh_mem_ops_t *ops, int which, size_t bytes)
{
    return grow_kind(&h->dev[ops->kind][which], ops->work_alloc, ops->work_free, bytes, "work",
                     ops->name);
}

struct mxh_p2p_dev *mxh_hier_devs(mxh_hier_t *h, const mxh_mem_ops_t *ops, int n, size_t bounce)
{
    mxh_grow_buf_t *pool = &h->bounce[ops->kind];
    size_t need = (size_t)n * bounce;
    mxh_p2p_dev_t *d = NULL;

    if (n < 1 || (d = mxh_hier_grow(&h->devs, (size_t)n * sizeof(*d))) == NULL)
        return NULL;
    /* exactly what the call needs (no geometric growth: the bound is the point), given
     * back once calls have needed much less for a while */
    unsigned *idle = &h->bounce_idle[ops->kind];
    int shrink     = 0;
    if (pool->p != NULL && need < pool->size / 4)
        shrink = ++*idle >= MXH_HIER_BOUNCE_IDLE;
    else
        *idle = 0;
    if (pool->p != NULL && (need > pool->size || shrink)) {
        ops->stage_free(pool->p, pool->size);
        pool->p    = NULL;
        pool->size = 0;
        *idle      = 0;
    }
    if (need > 0 && pool->p == NULL) {
        if ((pool->p = ops->stage_alloc(need)) == NULL) {
            mxh_error("cannot allocate %zu bytes of %s bounce memory", need, ops->name);
            return NULL;
        }
        pool->size = need;
    }
    for (int i = 0; i < n; i++) {
        d[i].bounce = need > 0 ? (char *)pool->p + (size_t)i * bounce : NULL;
        d[i].cap    = bounce;
        d[i].used   = 0;
        d[i].nev    = 0;
        d[i].nmsg   = 0;
        d[i].staged = 0;
    }
    return d;
}
