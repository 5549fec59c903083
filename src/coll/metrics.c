/* Metrics (coll/metrics.h): the registry of per-communicator counters, their
 * names, the Prometheus writer and the reader by name. */
#include "config.h"

#include "coll/metrics.h"
#include "coll/hier.h"
#include "util/log.h"
#include "util/pmpi_hook.h"
#include "util/prom.h"
#include "util/str.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The algorithm a call ran: its path, and the schedule's algorithm on the
 * hierarchical path. */
const char *const mxh_metrics_algo_names[] = {"none", "mpi", "shm", "hier", "pipeline", "railx",
                                                     "ipc", "hier_ipc", NULL};
const char *const mxh_metrics_path_names[] = {"none", "plain", "shm", "sched", "railx", NULL};
static const int alg_path[MXH_NALG] = {0, 1, 2, 3, 3, 4, 2, 3};

const mxh_metric_family_t mxh_metric_families[] = {
    {"mpix_hier_calls_total", "counter", "coll,blocking,path,algo",
     "Collective calls completed on the communicator, by collective, blocking (1) or "
     "nonblocking (0) form, path (none: nothing to move, plain: MPI's collective, shm: "
     "shared memory, sched: hierarchical schedule) and algorithm (none, mpi, shm, hier, "
     "pipeline, railx; ipc / hier_ipc: the device node level, alone or as the node part of "
     "a schedule)."},
    {"mpix_hier_bytes_total", "counter", "coll,blocking,path,algo",
     "Bytes of those calls at this rank: per call the larger of the data of its send and "
     "receive buffers, in the user's datatypes (allreduce, bcast, reduce: count x type size; "
     "reduce_scatter_block, allgather, alltoall: block x communicator size; v-collectives: "
     "the sum of the counts)."},
    {"mpix_hier_call_seconds_total", "counter", "coll,blocking,path,algo",
     "Time of those calls, from the start of the collective (after the argument checks and "
     "the hierarchy's first build) to its completion (nonblocking: post to completion)."},
    {"mpix_hier_fallbacks_total", "counter", "coll,blocking,reason",
     "Calls served by MPI's own collective (path plain), by reason."},
    {"mpix_hier_level_seconds_total", "counter", "coll,algo,level",
     "Time of the hierarchical schedule's steps on a level (island, node, rail, spine): the "
     "sum of the steps' durations (steps of overlapping fragments each count); the shm path "
     "(the whole communicator on one node) counts on level node, the spread exchange of small "
     "allreduces (one step across rail and spine, MPIX_HIER_SPREAD) on level rail."},
    {"mpix_hier_level_steps_total", "counter", "coll,algo,level",
     "Steps run on a level (the shm path: one per call)."},
    {"mpix_hier_staged_bytes_total", "counter", "coll",
     "Bytes of device buffers this rank copied through host memory: the bounce buffers of "
     "network steps that cannot take device memory directly, and the host mirrors of the "
     "paths that stage a buffer whole (0 where the network takes device memory)."},
    {"mpix_hier_device_cpu_reduced_bytes_total", "counter", "coll",
     "Bytes of device data this rank reduced with the CPU (or handed to MPI's own reduction "
     "on host copies): the paths that stage device buffers whole; 0 on the device paths."},
    {"mpix_hier_bounce_bytes", "gauge", "",
     "Pinned host memory the communicator holds for the bounce buffers of network steps on "
     "device buffers (at most the fragments in flight x twice the fragment; given back when "
     "calls need much less for a while)."},
    {"mpix_hier_comm_live", "gauge", "",
     "1 while the communicator exists, 0 once freed (its counters stay; past 256 freed "
     "communicators the oldest are summed into comm=\"freed\")."},
    {NULL, NULL, NULL, NULL}};
enum { F_CALLS, F_BYTES, F_SECONDS, F_FALLBACKS, F_LVL_SECONDS, F_LVL_STEPS, F_STAGED,
       F_CPU_REDUCED, F_BOUNCE, F_LIVE, NFAM };

typedef struct mxh_mstats mstats_t;
_Static_assert((sizeof(struct mxh_mstats) - offsetof(struct mxh_mstats, c)) % sizeof(uint64_t) == 0 &&
                   offsetof(struct mxh_mstats, c) % sizeof(uint64_t) == 0,
               "the counters are an array of uint64_t (fold_oldest_freed)");

static mstats_t **reg; /* every communicator's, in creation order */
static int nreg, capreg, next_index; /* next_index: never reused (entries get folded) */
static int stats_keyval = MPI_KEYVAL_INVALID;
static MPI_Comm last_comm = MPI_COMM_NULL;
static mstats_t *last_stats;
static int world_rank = -1, world_size = 1;
static char host[256];
uint64_t mxh_metrics_next_write; /* periodic file: 0 = none */
int mxh_metrics_off;
static uint64_t interval_ticks;
static int writing;
static int finalized; /* after MPI_Finalize's write: nothing is counted any more */

static void refresh_name(mstats_t *m, MPI_Comm comm)
{
    int len = 0;
    char buf[MPI_MAX_OBJECT_NAME] = "";
    if (MPI_Comm_get_name(comm, buf, &len) == MPI_SUCCESS)
        memcpy(m->name, buf, sizeof(m->name));
}

/* Freed communicators kept one by one at most; older ones are summed into one
 * entry, comm="freed" (programs that split communicators in a loop keep a
 * bounded registry and file). */
#define MAX_FREED 256
static mstats_t *freed_sum;
static int nfreed;

static void fold_oldest_freed(void)
{
    int i;
    for (i = 0; i < nreg && (reg[i]->live || reg[i] == freed_sum); i++)
        ;
    if (i == nreg)
        return;
    mstats_t *m = reg[i];
    if (freed_sum == NULL) {
        /* reuse the slot: the first folded entry becomes the sum */
        freed_sum        = m;
        m->index         = -1;
        m->size          = 0;
        m->name[0]       = '\0';
        nfreed--;
        return;
    }
    const uint64_t *src = (const uint64_t *)&m->c;
    uint64_t *dst       = (uint64_t *)&freed_sum->c;
    /* the counters are uint64_t from c to the end of the struct */
    size_t n = (sizeof(mstats_t) - offsetof(mstats_t, c)) / sizeof(uint64_t);
    for (size_t k = 0; k < n; k++)
        dst[k] += src[k];
    memmove(&reg[i], &reg[i + 1], (size_t)(nreg - i - 1) * sizeof(*reg));
    nreg--;
    nfreed--;
    free(m);
}

static int stats_delete_fn(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    mstats_t *m = attr;
    (void)keyval;
    (void)extra;
    /* collectives still queued on the communicator complete later in
     * MPI_Comm_free (MPICH deletes the attributes last set first): they count
     * through the pointer their call took when it started */
#ifndef MXH_SIMGRID
    refresh_name(m, comm);
#else
    (void)comm; /* SMPI fails MPI_Comm_get_name on a communicator whose attributes
                 * MPI_Finalize is deleting, and aborts: keep the last name seen */
#endif
    m->live = 0;
    m->comm = MPI_COMM_NULL;
    if (m == last_stats) {
        last_comm  = MPI_COMM_NULL;
        last_stats = NULL;
    }
    if (!finalized && ++nfreed > MAX_FREED)
        fold_oldest_freed();
    return MPI_SUCCESS;
}

static void setup_once(void)
{
    const mxh_config_t *cfg = mxh_lib_config();
    mxh_clock_init();
    mxh_metrics_off = !cfg->metrics;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    if (cfg->hostname[0] != '\0') {
        mxh_strlcpy(host, cfg->hostname, sizeof(host));
    } else {
        char name[MPI_MAX_PROCESSOR_NAME + 1] = "";
        int len = 0;
        if (MPI_Get_processor_name(name, &len) == MPI_SUCCESS)
            snprintf(host, sizeof(host), "%s", name);
        else if (gethostname(host, sizeof(host)) != 0)
            host[0] = '\0';
        host[sizeof(host) - 1] = '\0';
    }
    if (cfg->metrics_file[0] != '\0' && cfg->metrics_interval > 0) {
        interval_ticks = (uint64_t)(cfg->metrics_interval / mxh_clock_seconds_per_tick());
        mxh_metrics_next_write = mxh_ticks() + (interval_ticks ? interval_ticks : 1);
        mxh_task_poll_hook     = mxh_metrics_poll_due;
    }
}

/* Library and registry set up (the keyval, this rank's labels). */
static mxh_status_t ensure_ready(void)
{
    mxh_status_t st = mxh_lib_init();
    if (st != MXH_OK || stats_keyval != MPI_KEYVAL_INVALID)
        return st;
    if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, stats_delete_fn, &stats_keyval, NULL) !=
        MPI_SUCCESS) {
        mxh_error("metrics: cannot create an attribute key");
        return MXH_ERR_MPI;
    }
    setup_once();
    return MXH_OK;
}

/* The counters of @comm, created on its first call (NULL: out of memory). */
static mstats_t *stats_of(MPI_Comm comm)
{
    mstats_t *m = NULL;
    int flag    = 0;

    if (comm == last_comm && last_stats != NULL)
        return last_stats;
    if (finalized || ensure_ready() != MXH_OK)
        return NULL;
    if (MPI_Comm_get_attr(comm, stats_keyval, &m, &flag) != MPI_SUCCESS || !flag || !m) {
        if (nreg == capreg) {
            int cap       = capreg ? 2 * capreg : 16;
            mstats_t **nr = realloc(reg, (size_t)cap * sizeof(*nr));
            if (nr == NULL)
                return NULL;
            reg    = nr;
            capreg = cap;
        }
        if ((m = calloc(1, sizeof(*m))) == NULL)
            return NULL;
        m->index = next_index++;
        m->live  = 1;
        m->comm  = comm;
        int inter = 0;
        MPI_Comm_test_inter(comm, &inter);
        if (inter)
            MPI_Comm_remote_size(comm, &m->size);
        else
            MPI_Comm_size(comm, &m->size);
        refresh_name(m, comm);
        if (MPI_Comm_set_attr(comm, stats_keyval, m) != MPI_SUCCESS) {
            free(m);
            return NULL;
        }
        reg[nreg++] = m;
    }
    last_comm  = comm;
    last_stats = m;
    return m;
}

void mxh_metrics_poll_due(void)
{
    if (mxh_metrics_next_write != 0 && !writing) {
        uint64_t now = mxh_ticks();
        if (now >= mxh_metrics_next_write) {
            mxh_metrics_next_write = now + interval_ticks;
            mxh_metrics_write(NULL);
        }
    }
}

mstats_t *mxh_metrics_of_slow(const mxh_coll_args_t *a)
{
    mstats_t *m = stats_of(a->comm);
    if (mxh_metrics_off)
        return NULL; /* known once the registry is set up (stats_of) */
    if (a->hier != NULL)
        a->hier->mstats = m;
    return m;
}

void mxh_metrics_record_levels(mstats_t *m, const mxh_coll_args_t *a, int alg)
{
    for (int l = 0; l < a->hier->layout->nlevels; l++)
        if (a->lvl.steps[l] != 0) {
            int t = a->hier->layout->type[l];
            m->lvl_ticks[a->coll][alg][t] += a->lvl.ticks[l];
            m->lvl_steps[a->coll][alg][t] += a->lvl.steps[l];
        }
}

void mxh_metrics_record_plain(MPI_Comm comm, mxh_coll_t coll, int blocking, size_t bytes,
                              mxh_fallback_t why, uint64_t t0)
{
    mstats_t *m = mxh_metrics_off ? NULL : stats_of(comm);
    if (m == NULL || mxh_metrics_off)
        return;
    mxh_mcell_t *c = &m->c[coll][blocking][MXH_ALG_MPI];
    c->calls++;
    c->bytes += bytes;
    if (t0 != 0)
        c->ticks += mxh_ticks() - t0;
    m->fb[coll][blocking][why]++;
    if (blocking)
        mxh_metrics_poll();
}

/* ---- series: one enumeration for the writer and the reader --------------------------- */

#define NLAB 9
typedef struct series {
    const char *key[NLAB];
    const char *val[NLAB];
    int         n;
} series_t;
typedef void (*series_fn)(void *arg, const series_t *s, double v);

/* Every series of family @f of @m; @all: also those that are zero. */
static void each_series(const mstats_t *m, int f, int all, double spt, series_fn fn, void *arg)
{
    char idx[16], size[16], rank[16];
    series_t s;

    if (m->index >= 0)
        snprintf(idx, sizeof(idx), "%d", m->index);
    else
        snprintf(idx, sizeof(idx), "freed");
    snprintf(size, sizeof(size), "%d", m->size);
    snprintf(rank, sizeof(rank), "%d", world_rank);
    s.key[0] = "comm", s.val[0] = idx;
    s.key[1] = "comm_name", s.val[1] = m->name;
    s.key[2] = "comm_size", s.val[2] = size;
    s.key[3] = "rank", s.val[3] = rank;
    s.key[4] = "host", s.val[4] = host;
    if (f == F_LIVE || f == F_BOUNCE) {
        s.n = 5;
        fn(arg, &s, f == F_LIVE ? m->live : (double)m->bounce_bytes);
        return;
    }
    for (int c = 0; c < MXH_COLL_COUNT; c++) {
        s.key[5] = "coll", s.val[5] = mxh_coll_name((mxh_coll_t)c);
        if (f == F_STAGED || f == F_CPU_REDUCED) {
            uint64_t v = f == F_STAGED ? m->staged[c] : m->cpu_reduced[c];
            s.n = 6;
            if (all || v)
                fn(arg, &s, (double)v);
            continue;
        }
        if (f == F_LVL_SECONDS || f == F_LVL_STEPS) {
            s.n = 8;
            for (int g = MXH_ALG_SHM; g < MXH_NALG; g++) { /* the algorithms that have levels */
                s.key[6] = "algo", s.val[6] = mxh_metrics_algo_names[g];
                for (int t = 0; t < MXH_LEVEL_TYPE_COUNT; t++) {
                    s.key[7] = "level", s.val[7] = mxh_level_type_name((mxh_level_type_t)t);
                    if (all || m->lvl_steps[c][g][t])
                        fn(arg, &s, f == F_LVL_STEPS ? (double)m->lvl_steps[c][g][t]
                                                     : (double)m->lvl_ticks[c][g][t] * spt);
                }
            }
            continue;
        }
        for (int b = 1; b >= 0; b--) {
            s.key[6] = "blocking", s.val[6] = b ? "1" : "0";
            if (f == F_FALLBACKS) {
                s.n = 8;
                for (int r = 1; r < MXH_FB_COUNT; r++) {
                    s.key[7] = "reason", s.val[7] = mxh_fallbacks[r].name;
                    if (all || m->fb[c][b][r])
                        fn(arg, &s, (double)m->fb[c][b][r]);
                }
                continue;
            }
            s.n = 9;
            for (int g = 0; g < MXH_NALG; g++) {
                const mxh_mcell_t *x = &m->c[c][b][g];
                s.key[7] = "path", s.val[7] = mxh_metrics_path_names[alg_path[g]];
                s.key[8] = "algo", s.val[8] = mxh_metrics_algo_names[g];
                if (!all && x->calls == 0)
                    continue;
                fn(arg, &s, f == F_CALLS   ? (double)x->calls
                            : f == F_BYTES ? (double)x->bytes
                                           : (double)x->ticks * spt);
            }
        }
    }
}

typedef struct write_arg {
    mxh_strbuf_t *b;
    const char   *name;
} write_arg_t;

static void write_series(void *arg, const series_t *s, double v)
{
    write_arg_t *w = arg;
    mxh_strbuf_printf(w->b, "%s{", w->name);
    for (int i = 0; i < s->n; i++) {
        mxh_strbuf_printf(w->b, "%s%s=\"", i ? "," : "", s->key[i]);
        mxh_strbuf_label_value(w->b, s->val[i]);
        mxh_strbuf_printf(w->b, "\"");
    }
    mxh_strbuf_printf(w->b, "} ");
    mxh_strbuf_value(w->b, v);
    mxh_strbuf_printf(w->b, "\n");
}

mxh_status_t mxh_metrics_text(char **text, size_t *len)
{
    mxh_strbuf_t b = {0};
    double spt;

    mxh_status_t st = ensure_ready();
    if (st != MXH_OK)
        return st;
    spt = mxh_clock_seconds_per_tick();
    for (int i = 0; i < nreg; i++)
        if (reg[i]->live)
            refresh_name(reg[i], reg[i]->comm);
    for (int f = 0; f < NFAM; f++) {
        const mxh_metric_family_t *fam = &mxh_metric_families[f];
        write_arg_t w                  = {&b, fam->name};
        mxh_strbuf_printf(&b, "# HELP %s ", fam->name);
        mxh_strbuf_help(&b, fam->help);
        mxh_strbuf_printf(&b, "\n# TYPE %s %s\n", fam->name, fam->type);
        for (int i = 0; i < nreg; i++)
            each_series(reg[i], f, 0, spt, write_series, &w);
    }
    if (b.oom || b.p == NULL) {
        mxh_strbuf_free(&b);
        mxh_error("metrics: out of memory");
        return MXH_ERR_NO_MEMORY;
    }
    *text = b.p;
    if (len)
        *len = b.len;
    return MXH_OK;
}

mxh_status_t mxh_metrics_write(const char *tmpl)
{
    char path[MXH_CONFIG_STR_MAX + 64], tmp[MXH_CONFIG_STR_MAX + 96];
    char *text = NULL;
    size_t len = 0;
    mxh_status_t st;
    int fd;

    if (tmpl == NULL)
        tmpl = mxh_lib_config()->metrics_file;
    if (tmpl == NULL || tmpl[0] == '\0') {
        mxh_error("metrics: no file (MPIX_HIER_METRICS_FILE is not set)");
        return MXH_ERR_INVALID_PARAM;
    }
    if ((st = ensure_ready()) != MXH_OK)
        return st;
    if (mxh_prom_expand_path(tmpl, world_rank, host, (long)getpid(), world_size, path,
                             sizeof(path)) < 0) {
        mxh_error("metrics: the file name from '%s' is too long", tmpl);
        return MXH_ERR_INVALID_PARAM;
    }
    if ((st = mxh_metrics_text(&text, &len)) != MXH_OK)
        return st;
    writing = 1;
    /* a new file of our own in the target directory (mkstemp: O_CREAT | O_EXCL, so a
     * symlink or file planted under the name is never followed or overwritten), then
     * renamed over the path: a reader never sees half a file */
    snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path); /* mkstemp fills the Xs */
    fd = mkstemp(tmp);
    int ok = fd >= 0 && fchmod(fd, 0644) == 0;
    for (size_t off = 0; ok && off < len;) {
        ssize_t w = write(fd, text + off, len - off);
        ok        = w > 0;
        off += ok ? (size_t)w : 0;
    }
    if (fd >= 0 && close(fd) != 0)
        ok = 0;
    if (!ok || rename(tmp, path) != 0) {
        mxh_error("metrics: cannot write %s", path);
        if (fd >= 0)
            remove(tmp);
        st = MXH_ERR_IO;
    }
    writing = 0;
    free(text);
    return st;
}

/* ---- the reader ------------------------------------------------------------------------ */

typedef struct get_arg {
    int    n;
    char (*keys)[64];
    char (*vals)[256];
    double sum;
    int    matched;
} get_arg_t;

static void get_series(void *arg, const series_t *s, double v)
{
    get_arg_t *g = arg;
    for (int k = 0; k < g->n; k++) {
        int i;
        for (i = 0; i < s->n && strcmp(s->key[i], g->keys[k]); i++)
            ;
        if (i == s->n || strcmp(s->val[i], g->vals[k]))
            return;
    }
    g->sum += v;
    g->matched = 1;
}

mxh_status_t mxh_metrics_get(MPI_Comm comm, const char *selector, double *value)
{
    char name[128], keys[MXH_PROM_MAX_SEL][64], vals[MXH_PROM_MAX_SEL][256];
    int n = mxh_prom_parse_selector(selector, name, sizeof(name), keys, vals, MXH_PROM_MAX_SEL);
    get_arg_t g = {n, keys, vals, 0.0, 0};
    mstats_t *m;
    int f;

    if (n < 0) {
        mxh_error("metrics: malformed selector '%s' (NAME or NAME{label=\"value\",...})",
                  selector);
        return MXH_ERR_INVALID_PARAM;
    }
    for (f = 0; f < NFAM && strcmp(mxh_metric_families[f].name, name); f++)
        ;
    if (f == NFAM) {
        mxh_error("metrics: unknown metric '%s' (mpix_info --metrics lists them)", name);
        return MXH_ERR_INVALID_PARAM;
    }
    for (int k = 0; k < n; k++) {
        char list[128];
        snprintf(list, sizeof(list), "%s,%s", MXH_METRICS_COMM_LABELS,
                 mxh_metric_families[f].labels);
        int ok = 0;
        for (char *save = NULL, *t = strtok_r(list, ",", &save); t && !ok;
             t = strtok_r(NULL, ",", &save))
            ok = !strcmp(t, keys[k]);
        if (!ok) {
            mxh_error("metrics: %s has no label '%s'", name, keys[k]);
            return MXH_ERR_INVALID_PARAM;
        }
    }
    if ((m = stats_of(comm)) == NULL)
        return MXH_ERR_NO_MEMORY;
    if (m->live)
        refresh_name(m, comm);
    each_series(m, f, 1, f == F_SECONDS || f == F_LVL_SECONDS ? mxh_clock_seconds_per_tick() : 0,
                get_series, &g);
    if (!g.matched) {
        mxh_error("metrics: no series of %s matches '%s'", name, selector);
        return MXH_ERR_INVALID_PARAM;
    }
    *value = g.sum;
    return MXH_OK;
}

mxh_status_t mxh_metrics_reset(MPI_Comm comm)
{
    mstats_t *m = stats_of(comm);
    if (m == NULL)
        return MXH_ERR_NO_MEMORY;
    memset(m->c, 0, sizeof(m->c));
    memset(m->fb, 0, sizeof(m->fb));
    memset(m->lvl_ticks, 0, sizeof(m->lvl_ticks));
    memset(m->lvl_steps, 0, sizeof(m->lvl_steps));
    return MXH_OK;
}

/* The process's calls per algorithm and fallbacks per reason, summed at
 * MPI_Finalize (the registry goes then): the drop-in's exit line. */
static uint64_t fin_calls[MXH_COLL_COUNT][2][MXH_NALG];
static uint64_t fin_fb[MXH_COLL_COUNT][2][MXH_FB_COUNT];

static void add_calls(const mstats_t *m, mxh_coll_t coll, int blocking, uint64_t *calls,
                      uint64_t *fb)
{
    for (int a = 0; a < MXH_NALG; a++)
        calls[a] += m->c[coll][blocking][a].calls;
    for (int w = 0; w < MXH_FB_COUNT; w++)
        fb[w] += m->fb[coll][blocking][w];
}

void mxh_metrics_process_calls(mxh_coll_t coll, int blocking, uint64_t calls[MXH_NALG],
                               uint64_t fb[MXH_FB_COUNT])
{
    memcpy(calls, fin_calls[coll][blocking], sizeof(fin_calls[coll][blocking]));
    memcpy(fb, fin_fb[coll][blocking], sizeof(fin_fb[coll][blocking]));
    for (int i = 0; !finalized && i < nreg; i++)
        add_calls(reg[i], coll, blocking, calls, fb);
}

void mxh_metrics_finalize(void)
{
    if (finalized)
        return;
    for (int c = 0; c < MXH_COLL_COUNT; c++)
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < nreg; i++)
                add_calls(reg[i], (mxh_coll_t)c, b, fin_calls[c][b], fin_fb[c][b]);
    /* every rank that used the library writes its file, calls or not */
    if (mxh_lib_config()->metrics_file[0] != '\0')
        mxh_metrics_write(NULL);
    finalized = 1; /* from here on: no new counters, no folding */
    if (stats_keyval == MPI_KEYVAL_INVALID)
        return;
    /* detach from the communicators still alive (their delete callbacks mark them) */
    for (int i = 0; i < nreg; i++)
        if (reg[i]->live)
            MPI_Comm_delete_attr(reg[i]->comm, stats_keyval);
    MPI_Comm_free_keyval(&stats_keyval);
    stats_keyval = MPI_KEYVAL_INVALID;
    for (int i = 0; i < nreg; i++)
        free(reg[i]);
    free(reg);
    reg        = NULL;
    nreg       = capreg = 0;
    freed_sum  = NULL;
    nfreed     = 0;
    last_comm  = MPI_COMM_NULL;
    last_stats = NULL;
    mxh_metrics_next_write = interval_ticks = 0;
    mxh_task_poll_hook     = NULL;
}
