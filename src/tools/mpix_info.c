/* mpix_info: what mpix-hier sees, like ucx_info / lstopo.
 *
 *   mpix_info                    a short summary: this machine (GPUs, NVLink islands, NICs and
 *                                the GPUs they serve, UCX transports and memory types, MPICH
 *                                CUDA support), the hierarchy (one line per level; one
 *                                process: none) and the MPIX_HIER_* variables that differ
 *                                from their defaults, then where to see every variable
 *   mpix_info --hwloc-xml FILE   the same from an hwloc XML export (any machine)
 *   mpix_info --nccl-topo FILE   the same from an NCCL topology file
 *   mpix_info -c [--all]         only the configuration variables a user sets, with their
 *                                docs (--all: every variable, the expert ones too)
 *   mpix_info -c --markdown      the reference of every variable as markdown tables
 *   mpix_info -m                 only the metrics (MPIX_HIER_METRICS_FILE, MPIX_Hier_comm_get_stats)
 *   mpiexec -n N mpix_info       the summary with the levels of MPI_COMM_WORLD's hierarchy
 *   mpiexec -n N mpix_info --hier  the hierarchy in full: its description, the plan each
 *                                collective would use (--count N elements) and the
 *                                algorithms by message size
 *   --json                       machine-readable output: everything (the machine, every
 *                                variable, the metrics; under mpiexec the hierarchy, plans
 *                                and algorithms)
 *   mpix_info --version          the mpix-hier version and the MPI library's (no MPI_Init)
 *   mpix_info --explain COLL BYTES [--nodes N --gpus G [--leaves L | --torus XxYxZ]] [--tsize T]
 *                                the cost model's candidates for COLL (allreduce,
 *                                reduce_scatter_block, allgather, bcast, reduce) of BYTES (as mpix_bench
 *                                counts: the whole vector for the block collectives) on a
 *                                grid of N nodes x G GPUs (L leaf groups: a spine level; a
 *                                torus of nodes: the levels the library builds from torus=
 *                                coordinates, decide/levels.c), or
 *                                under mpiexec on MPI_COMM_WORLD's hierarchy: predicted times,
 *                                the bound, the model's choice and today's selection
 *   mpix_info --parallel tp=8,pp=2,dp [--nodes N --gpus G [--leaves L]] [--bytes B] [--json]
 *                                MPIX_Hier_comm_split_parallel's groups (dimensions
 *                                innermost first, one size omitted: the rest): per
 *                                dimension the level its groups span and the cost model's
 *                                allreduce and all-gather of B bytes (64 MiB) on one group,
 *                                the same for the naive rank order; exit 1 with the reason
 *                                where the sizes do not place
 */
#include "config.h"

#include "mpix_hier.h"
#include "decide/cost.h"
#include "decide/parallel.h"
#include "coll/hier.h"
#include "coll/metrics.h"
#include "decide/sched.h"
#include "topo/caps.h"
#include "topo/discover.h"
#include "topo/machine.h"
#include "util/config.h"
#include "util/log.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *hwloc_xml, *nccl_topo;
    int         json, config_only, all, markdown, metrics_only, hier, local;
    long        count;
    const char *explain_coll, *explain_bytes;
    int         nodes, gpus, leaves;
    long        tsize;
    const char *torus; /* --torus XxYxZ */
    const char *parallel, *bytes; /* --parallel NAME=SIZE,..., --bytes B */
} opts_t;

static void usage(FILE *f)
{
    fprintf(f, "usage: mpix_info [--hwloc-xml FILE] [--nccl-topo FILE] [-c|--config [--all] "
               "[--markdown]] [--json]\n"
               "                 [-m|--metrics] [--count N] [--hier] [--local] [-h] [--version]\n"
               "       mpix_info --explain COLL BYTES [--nodes N --gpus G [--leaves L | "
               "--torus XxYxZ]] [--tsize T]\n"
               "       mpix_info --parallel NAME=SIZE,... [--nodes N --gpus G [--leaves L]] "
               "[--bytes B] [--json]\n"
               "  default:         a summary: this machine (or the given file), the hierarchy\n"
               "                   (under mpiexec: MPI_COMM_WORLD's levels) and the variables\n"
               "                   that differ from their defaults\n"
               "  -c [--all]:      the variables users set, with docs (--all: every variable)\n"
               "  -m:              the metrics\n"
               "  --hier:          the hierarchy in full, each collective's plan (--count N\n"
               "                   elements) and the algorithms by message size\n"
               "  --local:         under mpiexec, without the hierarchy\n"
               "  --json:          everything, machine-readable\n"
               "  --version:       the mpix-hier version and the MPI library's version\n"
               "  --parallel:      parallelism groups (innermost first, one size omitted: the\n"
               "                   rest): each dimension's span and the cost model's allreduce\n"
               "                   and all-gather of B bytes (64 MiB) on a group, placed and\n"
               "                   in the naive rank order\n");
}

/* --version: the package's version and the first line of the MPI library's version
 * (blanks squeezed), which MPI allows to ask before MPI_Init. */
static int print_version(void)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING], line[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    size_t n = 0;
    if (MPI_Get_library_version(lib, &len) != MPI_SUCCESS)
        len = 0;
    for (int i = 0, blank = 0; i < len && lib[i] && lib[i] != '\n'; i++) {
        if (lib[i] == ' ' || lib[i] == '\t' || lib[i] == '\r')
            blank = n > 0;
        else {
            if (blank)
                line[n++] = ' ';
            line[n++] = lib[i];
            blank     = 0;
        }
    }
    line[n] = '\0';
    printf("mpix_info (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
    printf("MPI library: %s\n", n ? line : "(unknown)");
    return fflush(stdout) == 0 ? 0 : 1;
}

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c == '\n')
            printf("\\n");
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

/* A key (with the separator before it) and its string value. */
static void json_kv(const char *key, const char *value)
{
    printf("%s", key);
    json_str(value);
}

/* ---- configuration ------------------------------------------------------------ */

/* The variables users set (@all: every variable), with value, default and doc; JSON
 * always lists every variable, "user" telling which. */
static void print_config(const mxh_config_t *cfg, int json, int all)
{
    char val[MXH_CONFIG_STR_MAX];
    int nexpert = 0;
    if (json) {
        printf("\"config\": [");
        for (const mxh_config_var_t *v = mxh_config_vars; v->name; v++) {
            mxh_config_get_string(cfg, v->name, val, sizeof(val));
            printf("%s\n  {\"name\": ", v == mxh_config_vars ? "" : ",");
            json_str(v->name);
            json_kv(", \"default\": ", v->dflt);
            json_kv(", \"value\": ", val);
            printf(", \"set\": %s, \"must_agree\": %s, \"user\": %s, \"doc\": ",
                   getenv(v->name) ? "true" : "false", v->plan ? "true" : "false",
                   v->user ? "true" : "false");
            json_str(v->doc);
            printf("}");
        }
        printf("]");
        return;
    }
    printf("# Configuration (environment MPIX_HIER_*, or MPI_Info keys in lower case with "
           "MPIX_Hier_comm_init)\n");
    for (const mxh_config_var_t *v = mxh_config_vars; v->name; v++) {
        if (!v->user && !all && !getenv(v->name)) {
            nexpert++;
            continue;
        }
        mxh_config_get_string(cfg, v->name, val, sizeof(val));
        printf("%s=%s%s\n", v->name, val, getenv(v->name) ? "   (set)" : "");
        printf("    # %s\n    # default: '%s'%s\n", v->doc, v->dflt,
               v->plan ? "; must be equal on all ranks" : "");
    }
    if (nexpert)
        printf("# and %d expert variables at their defaults: mpix_info -c --all\n", nexpert);
}

/* The summary's configuration: the variables whose value differs from @ref's (the
 * defaults with the command line's files), as NAME=value (default D), and where to see
 * them all. A composite (MPIX_HIER_TUNE, _NET) has no field: it shows when set, as the
 * environment spells it, and its keys show as the variables they set. */
static void print_config_changed(const mxh_config_t *cfg, const mxh_config_t *ref)
{
    char val[MXH_CONFIG_STR_MAX], dflt[MXH_CONFIG_STR_MAX];
    int n = 0;
    printf("# Configuration: the variables that differ from their defaults\n");
    for (const mxh_config_var_t *v = mxh_config_vars; v->name; v++) {
        const char *env = getenv(v->name);
        if (v->size == 0) {
            if (env == NULL)
                continue;
            snprintf(val, sizeof(val), "%s", env);
            snprintf(dflt, sizeof(dflt), "%s", v->dflt);
        } else {
            mxh_config_get_string(cfg, v->name, val, sizeof(val));
            mxh_config_get_string(ref, v->name, dflt, sizeof(dflt));
            if (!strcmp(val, dflt))
                continue;
        }
        printf("%s=%s (default %s)\n", v->name, val, dflt[0] ? dflt : "''");
        n++;
    }
    if (n == 0)
        printf("none: every variable at its default\n");
    printf("# every variable with its value, default and doc: mpix_info -c --all\n");
}

/* Markdown text of @s for a table cell. */
static void md_cell(const char *s)
{
    for (; *s; s++) {
        if (*s == '<' || *s == '>')
            printf("&%ct;", *s == '<' ? 'l' : 'g');
        else if (*s == '|')
            printf("\\|");
        else
            putchar(*s);
    }
}

/* mpix_info -c --markdown: the reference of every variable, users' first, from the table. */
static void print_config_markdown(void)
{
    for (int user = 1; user >= 0; user--) {
        printf("%s### %s\n\n| Variable | Default | Description |\n|---|---|---|\n",
               user ? "" : "\n", user ? "Variables users set" : "Expert variables");
        for (const mxh_config_var_t *v = mxh_config_vars; v->name; v++) {
            if (v->user != user)
                continue;
            printf("| `%s` | ", v->name);
            if (v->dflt[0])
                printf("`%s`", v->dflt);
            else
                printf("(empty)");
            printf(" | %s", v->plan ? "*plan.* " : "");
            md_cell(v->doc);
            printf(" |\n");
        }
    }
}

/* ---- metrics (src/coll/metrics.h: its tables) ----------------------------------------- */

static void print_list(const char *const *names, int n, int json)
{
    for (int i = 0; names[i] && (n < 0 || i < n); i++) {
        if (json) {
            printf("%s", i ? ", " : "");
            json_str(names[i]);
        } else {
            printf("%s%s", i ? ", " : "", names[i]);
        }
    }
}

static void print_metrics(int json)
{
    const char *lv[MXH_LEVEL_TYPE_COUNT + 1] = {NULL};
    const char *blk[] = {"1", "0", NULL}, *colls[MXH_COLL_COUNT + 1] = {NULL};
    for (int t = 0; t < MXH_LEVEL_TYPE_COUNT; t++)
        lv[t] = mxh_level_type_name((mxh_level_type_t)t);
    for (int c = 0; c < MXH_COLL_COUNT; c++)
        colls[c] = mxh_coll_name((mxh_coll_t)c);
    /* the labels whose values are a list (reason: names with their docs, below) */
    const struct {
        const char        *label;
        const char *const *names;
        int                n;
    } lists[] = {{"coll", colls, -1},
                 {"blocking", blk, -1},
                 {"path", mxh_metrics_path_names, -1},
                 {"algo", mxh_metrics_algo_names, -1},
                 {"level", lv, -1}};
    int nlists = (int)(sizeof(lists) / sizeof(lists[0]));
    if (json) {
        printf("\"metrics\": {\"families\": [");
        for (const mxh_metric_family_t *f = mxh_metric_families; f->name; f++) {
            printf("%s\n  {\"name\": ", f == mxh_metric_families ? "" : ",");
            json_str(f->name);
            json_kv(", \"type\": ", f->type);
            printf(", \"labels\": ");
            char labels[256];
            snprintf(labels, sizeof(labels), "%s%s%s", MXH_METRICS_COMM_LABELS,
                     f->labels[0] ? "," : "", f->labels);
            json_str(labels);
            json_kv(", \"help\": ", f->help);
            printf("}");
        }
        printf("],\n \"label_values\": {");
        for (int i = 0; i < nlists; i++) {
            printf("%s\"%s\": [", i ? "], " : "", lists[i].label);
            print_list(lists[i].names, lists[i].n, 1);
        }
        printf("], \"reason\": [");
        for (int r = 1; r < MXH_FB_COUNT; r++) {
            printf("%s{\"name\": ", r > 1 ? ", " : "");
            json_str(mxh_fallbacks[r].name);
            json_kv(", \"doc\": ", mxh_fallbacks[r].doc);
            printf("}");
        }
        printf("]}}");
        return;
    }
    printf("# Metrics (Prometheus text format in MPIX_HIER_METRICS_FILE at MPI_Finalize and every\n"
           "# MPIX_HIER_METRICS_INTERVAL seconds; MPIX_Hier_metrics_write/_text on demand;\n"
           "# MPIX_Hier_comm_get_stats(comm, \"NAME{label=\\\"value\\\",...}\", &v) sums a\n"
           "# communicator's matching series). Every series has the labels\n"
           "#   comm       the communicator's creation index in this process\n"
           "#   comm_name  its MPI_Comm_set_name name (\"\" if none)\n"
           "#   comm_size  its size (remote group's for an intercommunicator)\n"
           "#   rank       the MPI_COMM_WORLD rank; host: MPIX_HIER_HOSTNAME or the processor name\n");
    for (const mxh_metric_family_t *f = mxh_metric_families; f->name; f++)
        printf("%s %s {%s}\n    # %s\n", f->name, f->type, f->labels, f->help);
    printf("# label values\n");
    for (int i = 0; i < nlists; i++) {
        printf("%s: ", lists[i].label);
        if (lists[i].names == blk)
            printf("1 (MPIX_Hier_<coll>), 0 (MPIX_Hier_I<coll>)");
        else
            print_list(lists[i].names, lists[i].n, 0);
        printf("\n");
    }
    printf("reason:\n");
    for (int r = 1; r < MXH_FB_COUNT; r++)
        printf("  %-16s %s\n", mxh_fallbacks[r].name, mxh_fallbacks[r].doc);
}

/* ---- machine ---------------------------------------------------------------------- */

static void print_machine(const mxh_machine_t *m, const char *my_busid, int json)
{
    if (json) {
        json_kv("\"machine\": {\"source\": ", m ? m->source : "none");
        printf(", \"nvlink_info\": %s, \"gpus\": [", m && m->has_nvlink ? "true" : "false");
        for (int g = 0; m && g < m->ngpus; g++) {
            const mxh_gpu_t *G = &m->gpus[g];
            printf("%s\n  {\"index\": %d, \"busid\": ", g ? "," : "", g);
            json_str(G->busid);
            json_kv(", \"model\": ", G->model);
            printf(", \"numa\": %d, \"package\": %d, \"nvlink_island\": %d, \"rail\": %d, "
                   "\"nic\": ",
                   G->numa, G->package, G->island, G->nic);
            json_str(G->nic >= 0 ? m->nics[G->nic].name : "");
            json_kv(", \"nic_distance\": ", G->nic >= 0 ? mxh_pci_distance_name(G->nic_distance) : "");
            printf(", \"mine\": %s}", my_busid[0] && !strcmp(my_busid, G->busid) ? "true" : "false");
        }
        printf("], \"nics\": [");
        for (int i = 0; m && i < m->nnics; i++) {
            const mxh_nic_t *N = &m->nics[i];
            printf("%s\n  {\"rail\": %d, \"name\": ", i ? "," : "", i);
            json_str(N->name);
            json_kv(", \"busid\": ", N->busid);
            printf(", \"hpc\": %s, \"numa\": %d, \"gpus\": [", N->hpc ? "true" : "false", N->numa);
            for (int g = 0, k = 0; g < m->ngpus; g++)
                if (m->gpus[g].nic == i)
                    printf("%s%d", k++ ? ", " : "", g);
            printf("]}");
        }
        printf("]}");
        return;
    }
    printf("# Machine (%s)\n", m ? m->source : "no description: hwloc found nothing");
    if (m == NULL)
        return;
    printf("GPUs: %d%s\n", m->ngpus,
           m->ngpus ? (m->has_nvlink ? " (NVLink information present)"
                                     : " (no NVLink information: every GPU is its own island)")
                    : "");
    for (int g = 0; g < m->ngpus; g++) {
        const mxh_gpu_t *G = &m->gpus[g];
        printf("  gpu %-2d %s  %-24s numa %-2d nvlink island %-2d rail %d%s%s%s%s", g, G->busid,
               G->model[0] ? G->model : "(model unknown)", G->numa, G->island, G->nic,
               G->nic >= 0 ? " (" : "", G->nic >= 0 ? m->nics[G->nic].name : " (no NIC)",
               G->nic >= 0 ? ", " : "",
               G->nic >= 0 ? mxh_pci_distance_name(G->nic_distance) : "");
        if (G->nic >= 0)
            printf(")");
        if (my_busid[0] && !strcmp(my_busid, G->busid))
            printf("   <- this rank's GPU");
        printf("\n");
    }
    printf("NICs (rails, in PCI bus order): %d\n", m->nnics);
    for (int i = 0; i < m->nnics; i++) {
        const mxh_nic_t *N = &m->nics[i];
        printf("  rail %-2d %-12s %s %s numa %-2d serves GPUs:", i, N->name, N->busid,
               N->hpc ? "hpc " : "eth ", N->numa);
        int k = 0;
        for (int g = 0; g < m->ngpus; g++)
            if (m->gpus[g].nic == i)
                printf("%s %d", k++ ? "," : "", g);
        printf("%s\n", k ? "" : " none");
    }
}

static void print_caps(const mxh_caps_t *caps, int json)
{
    char buf[8192];
    if (json) {
        printf("\"transports\": {\"ucx\": %s, \"mem_host\": %s, \"mem_cuda\": %s, "
               "\"mem_cuda_managed\": %s, \"gpu_direct\": %s, \"mpi_cuda_aware\": %d, \"list\": [",
               caps->ucx_present ? "true" : "false", caps->ucx_mem_host ? "true" : "false",
               caps->ucx_mem_cuda ? "true" : "false", caps->ucx_mem_cuda_managed ? "true" : "false",
               caps->gpu_direct ? "true" : "false", caps->mpi_cuda_aware);
        for (int i = 0; i < caps->ntransports; i++) {
            printf("%s\n  {\"name\": ", i ? "," : "");
            json_str(caps->transports[i].name);
            json_kv(", \"device\": ", caps->transports[i].device);
            printf(", \"bandwidth_MBps\": %.1f, \"latency_ns\": %.1f}",
                   caps->transports[i].bandwidth_mbs, caps->transports[i].latency_ns);
        }
        printf("]}");
        return;
    }
    mxh_caps_describe(caps, buf, sizeof(buf));
    printf("# Transports\n%s", buf);
    if (buf[0] && buf[strlen(buf) - 1] != '\n')
        printf("\n");
}

/* ---- hierarchy (under mpiexec) ------------------------------------------------------ */

/* The hierarchy's levels, groups and every rank's record, as JSON. */
static void print_layout_json(const mxh_hier_t *h, int size)
{
    const mxh_layout_t *L = h->layout;
    printf(",\n\"hierarchy\": {\"ranks\": %d, \"nodes\": %d, \"leaves\": %d, \"levels\": [",
           size, L->nnodes, L->nleaves);
    for (int l = 0; l < L->nlevels; l++) {
        printf("%s\n  {\"name\": \"%s\", \"kind\": \"%s\", \"groups\": [", l ? "," : "",
               mxh_level_type_name(L->type[l]), mxh_level_kind_name(L->kind[l]));
        for (int g = 0; g < L->ngroups[l]; g++) {
            printf("%s[", g ? ", " : "");
            int k = 0;
            for (int pos = 0; pos < size; pos++)
                for (int r = 0; r < size; r++)
                    if (L->color[l][r] == g && L->coord[l][r] == pos)
                        printf("%s%d", k++ ? "," : "", r);
            printf("]");
        }
        printf("]}");
    }
    printf("], \"ranks_info\": [");
    for (int r = 0; r < size; r++) {
        const mxh_record_t *rec = &h->recs[r];
        printf("%s\n  {\"rank\": %d, \"node\": ", r ? "," : "", r);
        json_str(rec->node);
        json_kv(", \"leaf\": ", rec->leaf);
        printf(", \"local_index\": %d, \"gpu\": %d, \"gpu_busid\": ", L->local_index[r],
               L->gpu_of[r]);
        json_str(rec->gpu_busid);
        printf(", \"nvlink_island\": %d, \"rail\": %d, \"nic\": ", L->island_of[r], L->rail[r]);
        json_str(L->gpu_of[r] >= 0 && rec->rail < 0 && L->rail[r] < rec->nnics
                     ? rec->nic_names[L->rail[r]] : "");
        printf("}");
    }
    printf("]}");
}

/* Rank 0's plan of each collective (every rank builds them: collective calls). */
static void print_plans(mxh_hier_t *h, int rank, long count, int json)
{
    if (rank == 0 && json)
        printf(",\n\"plans\": [");
    for (int c = 0; c < MXH_COLL_NSCHED; c++) {
        const mxh_plan_t *p;
        int root = (c == MXH_COLL_BCAST || c == MXH_COLL_REDUCE) ? 0 : -1;
        if (mxh_hier_plan(h, (mxh_coll_t)c, (size_t)count, root, &p) != MXH_OK)
            continue;
        if (rank != 0)
            continue;
        size_t need = mxh_plan_describe(p, NULL, 0);
        char *buf = malloc(need + 1);
        if (buf == NULL)
            continue;
        mxh_plan_describe(p, buf, need + 1);
        if (json) {
            printf("%s\n  {\"collective\": \"%s\", \"count\": %ld, \"rank\": 0, \"steps\": ",
                   c ? "," : "", mxh_coll_name((mxh_coll_t)c), count);
            json_str(buf);
            printf("}");
        } else {
            printf("%s# Plan of rank 0: %s", c ? "" : "\n", buf);
        }
        free(buf);
    }
    if (rank == 0 && json)
        printf("]");
}

/* The algorithm each collective takes, by message size (identical on every rank). */
static void print_algorithms(const mxh_hier_t *h, int json)
{
    if (json)
        printf(",\n\"algorithms\": {");
    else
        printf("\n# Algorithms by message size (bytes per rank)%s\n",
               h->config.enable ? "" : " (MPIX_HIER_ENABLE=no)");
    for (int c = 0; c < MXH_COLL_COUNT; c++) {
        char sel[512];
        mxh_select_describe(&h->config, &h->shape, (mxh_coll_t)c, sel, sizeof(sel));
        if (json) {
            printf("%s\"%s\": ", c ? ", " : "", mxh_coll_name((mxh_coll_t)c));
            json_str(sel);
        } else {
            printf("  %-22s %s\n", mxh_coll_name((mxh_coll_t)c), sel);
        }
    }
    if (json)
        printf("}");
}

/* The summary's hierarchy: the description's first line and its level lines (the
 * library's words, a line per level however many nodes; --hier has the rest). */
static void print_levels(const char *d)
{
    for (const char *e; *d; d = *e ? e + 1 : e) {
        e = strchr(d, '\n');
        if (e == NULL)
            e = d + strlen(d);
        if (!strncmp(d, "hierarchy:", 10) || !strncmp(d, "  level ", 8))
            printf("%.*s\n", (int)(e - d), d);
    }
}

/* The hierarchy of @comm (collective): in full (@full: the description, the plans and
 * the algorithms; always for @json), or the summary's lines per level. */
static void print_hierarchy(MPI_Comm comm, long count, int json, int full)
{
    mxh_hier_t *h;
    int rank, size;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (mxh_hier_get(comm, &h) != MXH_OK) {
        fprintf(stderr, "mpix_info: building the hierarchy failed: %s\n", mxh_log_last_error());
        return;
    }
    if (rank == 0 && json)
        print_layout_json(h, size);
    else if (rank == 0 && full)
        printf("# Hierarchy of MPI_COMM_WORLD (%d ranks)\n%s", size, h->description);
    else if (rank == 0) {
        printf("# Hierarchy of MPI_COMM_WORLD (%d ranks; in full with the plans: --hier)\n",
               size);
        print_levels(h->description);
    }
    if (!json && !full) /* every rank alike: the plans are built collectively */
        return;
    if (mxh_hier_active(h))
        print_plans(h, rank, count, json);
    if (rank == 0)
        print_algorithms(h, json);
}

/* ---- cost model (--explain) ---------------------------------------------------------- */

static size_t parse_bytes(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'k': case 'K': v *= 1024; break;
    case 'm': case 'M': v *= 1024 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    default: break;
    }
    return v > 0 ? (size_t)v : 0;
}

static const char *fmt_bytes(size_t b, char *buf, size_t len)
{
    if (b >= (1u << 20) && b % (1u << 20) == 0)
        snprintf(buf, len, "%zu MiB", b >> 20);
    else if (b >= 1024 && b % 1024 == 0)
        snprintf(buf, len, "%zu KiB", b >> 10);
    else
        snprintf(buf, len, "%zu B", b);
    return buf;
}

static const char *variant_name(mxh_cost_variant_t v)
{
    static const char *const names[] = {"rs", "latency", "hybrid", "spread", "plan"};
    return v <= MXH_COST_PLAN ? names[v] : "?";
}

/* The records of a described machine: @nodes nodes of @gpus ranks, node v under leaf
 * v / @per_leaf; MPI_COMM_WORLD's rank r on node r / @gpus (block mapping), or with
 * @cyclic on node r mod @nodes (round robin). NULL where out of memory. */
static mxh_record_t *described_records(int nodes, int gpus, int per_leaf, int cyclic)
{
    int n = nodes * gpus;
    mxh_record_t *recs = calloc((size_t)n, sizeof(*recs));
    for (int r = 0; recs != NULL && r < n; r++) {
        int v = cyclic ? r % nodes : r / gpus;
        mxh_record_init(&recs[r]);
        snprintf(recs[r].node, sizeof(recs[r].node), "n%d", v);
        snprintf(recs[r].leaf, sizeof(recs[r].leaf), "l%d", v / per_leaf);
    }
    return recs;
}

/* Whether --nodes N --gpus G [--leaves L] describe a grid (N a multiple of L); else the
 * message for @what (printed). */
static int grid_ok(const opts_t *o, const char *what)
{
    if (o->nodes >= 1 && o->gpus >= 1 && (o->leaves <= 1 || o->nodes % o->leaves == 0))
        return 1;
    fprintf(stderr, "mpix_info: %s needs --nodes N --gpus G (N a multiple of --leaves) or "
                    "mpiexec\n", what);
    return 0;
}

/* The layout of --nodes N --gpus G --torus XxYxZ (product N): G ranks per node, node n
 * at coordinates n mod X, n / X mod Y, n / XY; 0, or 2 (message printed). */
static int torus_layout(const opts_t *o, const mxh_config_t *cfg, mxh_layout_t **T)
{
    int dims[3] = {1, 1, 1}, nd = 0, prod = 1, n = o->nodes * o->gpus;
    const char *p = o->torus;
    while (nd < 3 && *p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 32767)
            break;
        dims[nd++] = (int)v;
        prod *= (int)v;
        p = *end == 'x' || *end == 'X' ? end + 1 : end;
        if (end == p)
            break;
    }
    if (*p || nd == 0 || o->gpus < 1 || prod != o->nodes) {
        fprintf(stderr, "mpix_info: --torus XxY[xZ]: lengths whose product is --nodes (%d)\n",
                o->nodes);
        return 2;
    }
    mxh_record_t *recs = described_records(o->nodes, o->gpus, o->nodes, 0); /* one leaf */
    if (recs == NULL)
        return 2;
    for (int r = 0; r < n; r++) {
        int v = r / o->gpus;
        recs[r].tndims = (int16_t)nd;
        for (int d = 0; d < nd; d++) {
            recs[r].tcoord[d] = (int16_t)(v % dims[d]);
            v /= dims[d];
        }
    }
    mxh_status_t st = mxh_layout_create(recs, n, cfg->levels_mask, T);
    free(recs);
    if (st != MXH_OK || (*T)->torus_ndims == 0) {
        fprintf(stderr, "mpix_info: --torus %s: no torus levels (MPIX_HIER_LEVELS?)\n", o->torus);
        if (st == MXH_OK)
            mxh_layout_destroy(*T);
        return 2;
    }
    return 0;
}

/* The model of --explain: MPI_COMM_WORLD's layout @L, a torus (--torus) or a grid
 * (--nodes, --gpus, --leaves); 0, or 2 (message printed). */
static int explain_model(const opts_t *o, const mxh_config_t *cfg, const mxh_layout_t *L,
                         mxh_cost_model_t *m)
{
    if (L != NULL) {
        mxh_cost_model_init(m, cfg, L);
    } else if (o->torus != NULL) {
        /* N nodes x G GPUs on a torus: the records a cluster file with torus= gives (node
         * n at coordinates n mod X, n / X mod Y, ...), through the library's levels */
        mxh_layout_t *T = NULL;
        if (torus_layout(o, cfg, &T) != 0)
            return 2;
        mxh_cost_model_init(m, cfg, T);
        printf("# torus");
        for (int j = 0; j < T->torus_ndims; j++)
            printf("%s%c%d", j ? " x " : " ", "xyz"[T->torus_dim[j]], T->torus_k[j]);
        printf(", network levels per rail:");
        for (int c = 0; c < T->torus_nrails; c++) {
            printf(" %d:", c);
            for (int j = 0; j < T->torus_ndims; j++) {
                int e = T->torus_order[c * 3 + j];
                printf("%s%c%s", j ? " " : "", "xyz"[T->torus_dim[e & 3]], e & 4 ? "-" : "");
            }
            printf(c + 1 < T->torus_nrails ? "," : "\n");
        }
        mxh_layout_destroy(T);
    } else {
        mxh_level_type_t type[3] = {MXH_LEVEL_NODE, MXH_LEVEL_RAIL, MXH_LEVEL_SPINE};
        int gsize[3] = {o->gpus, o->leaves > 1 ? o->nodes / o->leaves : o->nodes, o->leaves};
        int nl = o->leaves > 1 ? 3 : 2, first = o->gpus > 1 ? 0 : 1;
        if (!grid_ok(o, "--explain"))
            return 2;
        mxh_cost_model_grid(m, cfg, nl - first, type + first, gsize + first);
    }
    return 0;
}

/* The model's parameters per level, the torus' link shares and the factors. */
static void explain_params(const mxh_cost_model_t *m, const mxh_config_t *cfg)
{
    printf("\n#   per level: alpha (us per exchange), 1/beta (GB/s per rank):");
    for (int l = 0; l < m->nlevels; l++)
        printf(" %s %.3g, %.4g;", mxh_level_type_name(m->type[l]), m->lvl[l].alpha * 1e6,
               1e-9 / m->lvl[l].beta);
    printf(" reduce %.4g GB/s, copy %.4g GB/s\n", 1e-9 / m->gamma, 1e-9 / m->kappa);
    if (m->trails > 0) { /* the torus: every rail's group sizes and link shares */
        printf("#   torus: %.3g us per exchange, link %.4g GB/s per direction, NIC %.4g GB/s; "
               "per rail, level: ranks, GB/s of its link share\n",
               m->talpha * 1e6, 1e-9 / m->tlink_beta, 1e-9 / m->tnic_beta);
        for (int c = 0; c < m->trails; c++) {
            printf("#     rail %d:", c);
            for (int l = 0; l < m->nlevels; l++)
                printf(" %d, %.4g;", m->tgsize[c][l], 1e-9 / m->tbeta[c][l]);
            printf("\n");
        }
    }
    if (m->fac.lat_n || m->fac.bw_n) {
        char f[512];
        mxh_config_get_string(cfg, "MPIX_HIER_COST_LAT_FACTOR", f, sizeof(f));
        printf("#   latency factors by message size: %s\n", m->fac.lat_n ? f : "-");
        mxh_config_get_string(cfg, "MPIX_HIER_COST_BW_FACTOR", f, sizeof(f));
        printf("#   bandwidth factors by message size: %s\n", m->fac.bw_n ? f : "-");
    }
}

/* The candidates' table, marking the model's pick and today's schedule (@tf: today's
 * fragment, 0 unpipelined). */
static void explain_candidates(const mxh_cost_model_t *m, mxh_coll_t coll, size_t count,
                               size_t ts, const mxh_cost_cand_t *cand, int n, int best,
                               double bound, const mxh_choice_t *today, size_t tf)
{
    char a[32];
    printf("  %-9s %-8s %-10s %-7s %9s %12s %8s\n", "algorithm", "plan", "fragment", "ramp",
           "fragments", "predicted us", "of bound");
    for (int i = 0; i < n; i++) {
        const mxh_cost_cand_t *k = &cand[i];
        char pt[32] = "not modelled", pb[16] = "-";
        if (k->t > 0) {
            snprintf(pt, sizeof(pt), "%.2f", k->t * 1e6);
            snprintf(pb, sizeof(pb), "%.2f", bound / k->t);
        }
        char rp[16] = "-";
        if (k->algo == MXH_ALGO_PIPELINE)
            snprintf(rp, sizeof(rp), k->ramp == MXH_SCHED_RAMP_LINEAR ? "linear" : "%d", k->ramp);
        printf("  %-9s %-8s %-10s %-7s %9zu %12s %8s%s%s\n", mxh_algo_name(k->algo),
               variant_name(k->variant),
               k->frag_bytes ? fmt_bytes(k->frag_bytes, a, sizeof(a)) : "-", rp, k->nfrag, pt, pb,
               i == best ? "  <- model" : "",
               k->variant == MXH_COST_PLAN &&
                       (today->algo == MXH_ALGO_PIPELINE || today->algo == MXH_ALGO_HIER) &&
                       k->nfrag == mxh_cost_frags(m, coll, count, ts, tf, NULL, 0) &&
                       (k->algo == MXH_ALGO_HIER || k->ramp == today->ramp) &&
                       (k->algo == MXH_ALGO_HIER) == (tf == 0)
                   ? "  <- today"
                   : "");
    }
}

/* The model's choice @best and its kary and rsag picks (@m: the model, its ramp set to
 * the choice's). */
static void explain_choice(mxh_cost_model_t *m, mxh_coll_t coll, size_t count, size_t ts,
                           const mxh_cost_cand_t *best, double bound)
{
    char a[32];
    printf("model: %s%s%s%s, %zu fragment(s): %.2f us (%.2f of the bound)\n",
           mxh_algo_name(best->algo), best->frag_bytes ? ", fragments of " : "",
           best->frag_bytes ? fmt_bytes(best->frag_bytes, a, sizeof(a)) : "",
           best->algo == MXH_ALGO_PIPELINE
               ? (best->ramp == MXH_SCHED_RAMP_LINEAR ? ", linear ramp"
                  : best->ramp == 0                   ? ", no ramp"
                                                      : ", halving ramp")
               : "",
           best->nfrag, best->t * 1e6, bound / best->t);
    double tk = -1, td = -1;
    m->ramp = best->ramp; /* the picks below predict the chosen schedule */
    int k   = mxh_cost_kary_pick(m, coll, count, ts, best->frag_bytes, &tk, &td);
    if (k || (tk > 0 && td > 0 && tk != td))
        printf("model, long network levels: kary exchanges %.2f us, direct %.2f us (%+.2f %%):"
               " %s\n",
               tk * 1e6, td * 1e6, (tk / td - 1) * 100,
               k ? "kary (within MXH_COST_KARY_MARGIN: far fewer messages)" : "direct");
    mxh_cost_model_t r = *m; /* the rsag pick is made with the kary choice */
    double ty = -1, tn = -1;
    r.kary = k;
    int y  = mxh_cost_rsag_pick(&r, coll, count, ts, best->frag_bytes, &ty, &tn);
    if (ty > 0 && tn > 0 && ty != tn)
        printf("model, small network allreduce steps: reduce-scatter + allgather %.2f us, "
               "radix %.2f us (%+.2f %%): %s\n",
               ty * 1e6, tn * 1e6, (ty / tn - 1) * 100,
               y ? "reduce-scatter + allgather (MPIX_HIER_RSAG)" : "radix");
}

/* Today's schedule (thresholds, MPIX_HIER_FRAG_SIZE) and which one the library takes. */
static void explain_today(const mxh_cost_model_t *today_m, const mxh_config_t *cfg,
                          mxh_coll_t coll, size_t count, size_t ts, const mxh_choice_t *today,
                          size_t tf, double bound)
{
    char a[32];
    double tt = (today->algo == MXH_ALGO_HIER || today->algo == MXH_ALGO_PIPELINE) &&
                        mxh_cost_shape_modelled(coll, count, ts, tf)
                    ? mxh_cost_predict(today_m, coll, count, ts, tf, MXH_COST_PLAN)
                    : -1;
    printf("today: %s%s%s (MPIX_HIER_FRAG_SIZE): ", mxh_algo_name(today->algo),
           tf ? ", fragments of " : "", tf ? fmt_bytes(tf, a, sizeof(a)) : "");
    if (tt > 0)
        printf("%zu fragment(s), %.2f us (%.2f of the bound)\n",
               mxh_cost_frags(today_m, coll, count, ts, tf, NULL, 0), tt * 1e6, bound / tt);
    else
        printf("not modelled\n");
    if (cfg->cost_model == 2 && cfg->frag_given)
        printf("library: 'today' (MPIX_HIER_COST_MODEL=auto keeps the MPIX_HIER_FRAG_SIZE set)\n");
    else if (cfg->cost_model == 2)
        printf("library: 'model' where the hierarchy measures the network flat in message "
               "size (MPIX_HIER_COST_MODEL=auto; the communicator's description says which), "
               "with its measured figures; elsewhere 'model' where it is predicted %.0f %% "
               "faster than 'today' with them, else 'today'\n",
               MXH_COST_TRUST_MARGIN * 100);
    else
        printf("library: '%s' (MPIX_HIER_COST_MODEL=%s)\n", cfg->cost_model ? "model" : "today",
               cfg->cost_model ? "yes" : "no");
}

/* The model's candidates, its choice and today's selection for one collective and size. */
static int explain(const opts_t *o, const mxh_config_t *cfg, const mxh_layout_t *L)
{
    mxh_cost_model_t m;
    mxh_coll_t coll = MXH_COLL_COUNT;
    size_t bytes = parse_bytes(o->explain_bytes), ts = (size_t)o->tsize;
    char a[32], b[32];

    for (int c = 0; c < MXH_COLL_NSCHED; c++)
        if (!strcmp(o->explain_coll, mxh_coll_name((mxh_coll_t)c)))
            coll = (mxh_coll_t)c;
    if (coll == MXH_COLL_COUNT || bytes == 0) {
        fprintf(stderr, "mpix_info: --explain COLL BYTES: COLL one of allreduce, "
                        "reduce_scatter_block, allgather, bcast, reduce; BYTES > 0 (k/m/g "
                        "suffixes)\n");
        return 2;
    }
    if (explain_model(o, cfg, L, &m) != 0)
        return 2;
    int block = coll == MXH_COLL_REDUCE_SCATTER_BLOCK || coll == MXH_COLL_ALLGATHER;
    size_t per = block ? (size_t)m.nranks : 1, count = bytes / (ts * per);
    int rooted = mxh_coll_info(coll)->rooted;
    if (count == 0 || !m.grid || (m.trails > 0 && rooted)) {
        fprintf(stderr, "mpix_info: %s: not modelled (%s)\n", o->explain_coll,
                count == 0  ? "fewer bytes than one element per rank"
                : !m.grid   ? "not a grid hierarchy"
                            : "bcast and reduce on torus levels: plan.c's scatter shape there");
        return 1;
    }
    printf("# Cost model: %s of %s (%s for every rank, %zu-byte elements), %d ranks:",
           mxh_coll_name(coll), fmt_bytes(bytes, a, sizeof(a)),
           fmt_bytes(count * ts, b, sizeof(b)), ts, m.nranks);
    for (int l = 0; l < m.nlevels; l++)
        printf("%s %s %d", l ? " x" : "", mxh_level_type_name(m.type[l]), m.gsize[l]);
    explain_params(&m, cfg);
    double bound = mxh_cost_bound(&m, coll, count, ts);
    printf("#   bound (busiest link's bytes, no latency): %.2f us\n", bound * 1e6);

    mxh_cost_cand_t cand[64];
    int n = mxh_cost_candidates(&m, coll, count, ts, cand, 64), best = mxh_cost_choose(cand, n);
    /* today's selection (size thresholds, MPIX_HIER_FRAG_SIZE) */
    mxh_select_shape_t shape = {m.nranks, m.nlevels, 0};
    mxh_config_t c0 = *cfg;
    c0.cost_model = 0;
    mxh_choice_t today = mxh_select(&c0, &shape, coll, count * ts, count * ts * per);
    size_t tf = today.algo == MXH_ALGO_PIPELINE ? today.frag_bytes : 0;
    explain_candidates(&m, coll, count, ts, cand, n, best, bound, &today, tf);
    mxh_cost_model_t today_m = m; /* the thresholds' schedule runs halvings where m picks */
    if (best >= 0)
        explain_choice(&m, coll, count, ts, &cand[best], bound);
    explain_today(&today_m, cfg, coll, count, ts, &today, tf, bound);
    return 0;
}

/* ---- parallelism groups (--parallel) ------------------------------------------------ */

/* The dimensions of --parallel NAME=SIZE,... (innermost first): a label of letters, digits
 * or '_' and its size, NAME, NAME= or NAME=0 for the rest; a bare SIZE is named dN.
 * Returns the number of dimensions, 0 where malformed (message printed). */
typedef struct {
    int  nd;
    char name[MXH_PARALLEL_MAX_DIMS][16];
    int  size[MXH_PARALLEL_MAX_DIMS];
} par_dims_t;

/* Whether @s[0..len) is non-empty and all of @set (digits, or a label's characters). */
static int all_of(const char *s, size_t len, int label)
{
    size_t k = 0;
    while (k < len && ((s[k] >= '0' && s[k] <= '9') ||
                       (label && (s[k] == '_' || ((s[k] | 0x20) >= 'a' && (s[k] | 0x20) <= 'z')))))
        k++;
    return len > 0 && k == len;
}

static int parse_parallel(const char *spec, par_dims_t *D)
{
    const char *p = spec;
    int ok = 1;
    for (D->nd = 0; ok && *p; D->nd++) {
        size_t len = strcspn(p, ","), nl = strcspn(p, "=,");
        const char *v = nl < len ? p + nl + 1 : p + len; /* the size, "" for the rest */
        size_t vl = (size_t)(p + len - v);
        int d = D->nd, bare = nl == len && all_of(p, len, 0);
        ok = d < MXH_PARALLEL_MAX_DIMS && nl < sizeof(D->name[d]) && all_of(p, nl, 1) &&
             (vl == 0 || (all_of(v, vl, 0) && vl <= 7));
        if (!ok)
            break;
        if (bare)
            snprintf(D->name[d], sizeof(D->name[d]), "d%d", d);
        else
            snprintf(D->name[d], sizeof(D->name[d]), "%.*s", (int)nl, p);
        D->size[d] = bare ? atoi(p) : vl ? atoi(v) : 0;
        p += len + (p[len] == ',');
        ok = !(p[-1] == ',' && *p == '\0'); /* no empty last item */
    }
    if (!ok || D->nd == 0) {
        fprintf(stderr, "mpix_info: --parallel NAME=SIZE,... (innermost first, at most %d; "
                        "one NAME, NAME= or NAME=0: the rest): cannot read '%s'\n",
                MXH_PARALLEL_MAX_DIMS, spec);
        return 0;
    }
    return D->nd;
}

/* One rank order --parallel prices: its ranks' records and layout, each rank's position
 * (dimension 0 fastest) and per dimension the model's view of its groups. */
typedef struct {
    const char          *label, *doc;
    const mxh_record_t  *recs;
    const mxh_layout_t  *L;
    int                 *pos;
    int                  ok; /* positions exist (the placement may have none) */
    mxh_parallel_cost_t  c[MXH_PARALLEL_MAX_DIMS];
} par_order_t;

/* Bus bandwidth in GB/s of collective @k (0 allreduce, 1 all-gather) of @bytes on @p ranks
 * in @t seconds, as nccl-tests counts it: the algorithm's bandwidth times 2(p-1)/p for an
 * allreduce, (p-1)/p for an all-gather (its bytes: the gathered vector). */
static double busbw(int k, size_t bytes, int p, double t)
{
    return (double)bytes / t * (k == 0 ? 2.0 : 1.0) * (p - 1) / p * 1e-9;
}

static void par_print_json(const par_dims_t *D, const par_order_t *O, int no, size_t bytes,
                           size_t ts, const char *why)
{
    static const char *const coll[2] = {"allreduce", "allgather"};
    printf("{\"parallel\": {\"ranks\": %d, \"nodes\": %d, \"leaves\": %d, \"bytes\": %zu, "
           "\"tsize\": %zu, \"dims\": [",
           O[0].L->nranks, O[0].L->nnodes, O[0].L->nleaves, bytes, ts);
    for (int d = 0; d < D->nd; d++) {
        printf("%s{\"name\": ", d ? ", " : "");
        json_str(D->name[d]);
        printf(", \"size\": %d}", D->size[d]);
    }
    printf("],\n  \"placement\": {\"ok\": %s, \"why\": ", O[0].ok ? "true" : "false");
    json_str(why);
    printf("},\n  \"orders\": [");
    for (int i = 0, first = 1; i < no; i++) {
        if (!O[i].ok)
            continue;
        printf("%s\n    {\"order\": ", first ? "" : ",");
        first = 0;
        json_str(O[i].label);
        json_kv(", \"doc\": ", O[i].doc);
        printf(", \"dims\": [");
        for (int d = 0; d < D->nd; d++) {
            const mxh_parallel_cost_t *c = &O[i].c[d];
            printf("%s\n      {\"name\": ", d ? "," : "");
            json_str(D->name[d]);
            printf(", \"size\": %d", D->size[d]);
            json_kv(", \"span\": ", mxh_parallel_span_name(c->span));
            for (int k = 0; k < 2; k++)
                if (c->t[k] > 0)
                    printf(", \"%s\": {\"busbw_GBps\": %.6g, \"us\": %.6g}", coll[k],
                           busbw(k, bytes, D->size[d], c->t[k]), c->t[k] * 1e6);
                else
                    printf(", \"%s\": null", coll[k]);
            json_kv(", \"why\": ", c->why);
            printf("}");
        }
        printf("]}");
    }
    printf("]}}\n");
}

/* One cell of the table: bus bandwidth and time, or why there is none. */
static void par_cell(int k, size_t bytes, int p, double t)
{
    if (t > 0)
        printf(" %14.1f %8.1f", busbw(k, bytes, p, t), t * 1e6);
    else
        printf(" %23s", p > 1 ? "not modelled" : "-");
}

static void par_print_text(const par_dims_t *D, const par_order_t *O, int no, size_t bytes,
                           size_t ts, const char *machine, const char *why)
{
    char b[32];
    printf("# Parallel groups on %s (%d ranks):", machine, O[0].L->nranks);
    for (int d = 0; d < D->nd; d++)
        printf(" %s=%d", D->name[d], D->size[d]);
    printf(" (innermost first)\n"
           "# per group: allreduce and all-gather of %s (%zu-byte elements), the cost model's\n"
           "#   prediction of its choice (decide/cost.h, MPIX_HIER_COST_*): bus bandwidth\n"
           "#   (nccl-tests' busbw) and time, the slowest group's. Each group alone: a\n"
           "#   dimension's other groups run on other GPUs and, one rail per GPU, other NICs;\n"
           "#   other dimensions' traffic at the same time is not modelled\n",
           fmt_bytes(bytes, b, sizeof(b)), ts);
    printf("%-11s %-4s %4s  %-13s %14s %8s %14s %8s  %s\n", "order", "dim", "size", "span",
           "allreduce GB/s", "us", "allgather GB/s", "us", "x placement");
    for (int i = 0; i < no; i++) {
        if (!O[i].ok) {
            printf("%-11s no placement: %s\n", O[i].label, why);
            continue;
        }
        for (int d = 0; d < D->nd; d++) {
            const mxh_parallel_cost_t *c = &O[i].c[d], *p0 = &O[0].c[d];
            printf("%-11s %-4s %4d  %-13s", O[i].label, D->name[d], D->size[d],
                   mxh_parallel_span_name(c->span));
            for (int k = 0; k < 2; k++)
                par_cell(k, bytes, D->size[d], c->t[k]);
            if (i > 0 && O[0].ok && c->t[0] > 0 && p0->t[0] > 0 && c->t[1] > 0 && p0->t[1] > 0)
                printf("  %.2f %.2f", c->t[0] / p0->t[0], c->t[1] / p0->t[1]);
            printf("\n");
        }
    }
    for (int i = 0; i < no; i++)
        printf("# %s: %s\n", O[i].label, O[i].doc);
    printf("# x placement: the order's allreduce and all-gather times over the placement's\n");
    for (int i = 0; i < no; i++)
        for (int d = 0; d < D->nd && O[i].ok; d++)
            if (D->size[d] > 1 && O[i].c[d].why[0])
                printf("# %s %s not modelled: %s\n", O[i].label, D->name[d], O[i].c[d].why);
}

/* --parallel on @L (records @recs) and, for the described machine, @rr (round robin):
 * the placement and the naive orders, priced; 0, 1 where the sizes do not place. */
static int parallel_report(const opts_t *o, const mxh_config_t *cfg, par_dims_t *D,
                           const mxh_record_t *recs, const mxh_layout_t *L,
                           const mxh_record_t *rr_recs, const mxh_layout_t *rr,
                           const char *machine)
{
    size_t bytes = o->bytes ? parse_bytes(o->bytes) : (size_t)64 << 20, ts = (size_t)o->tsize;
    int n = L->nranks, no = rr ? 3 : 2, rc = 0;
    int *pos = malloc(sizeof(int) * (size_t)n * 2);
    mxh_parallel_span_t span[MXH_PARALLEL_MAX_DIMS];
    char why[256] = "", block_doc[160], rr_doc[160];
    par_order_t O[3] = {
        {.label = "placement", .recs = recs, .L = L, .pos = pos, .ok = 1,
         .doc   = "MPIX_Hier_comm_split_parallel's groups (topology order, dimension 0 "
                  "fastest)"},
        {.label = "naive", .recs = recs, .L = L, .pos = pos + n, .ok = 1,
         .doc   = "MPI_COMM_WORLD order, dimension 0 fastest as Megatron takes it "
                  "(consecutive ranks: the innermost groups)"},
        {.label = "naive-rr", .doc = rr_doc, .recs = rr_recs, .L = rr, .pos = pos + n, .ok = 1},
    };

    if (pos == NULL || bytes == 0) {
        fprintf(stderr, "mpix_info: --parallel: %s\n",
                pos ? "--bytes B: B > 0 (k/m/g suffixes)" : "out of memory");
        free(pos);
        return 2;
    }
    if (rr != NULL) {
        snprintf(block_doc, sizeof(block_doc), "MPI_COMM_WORLD order, dimension 0 fastest as "
                 "Megatron takes it; rank r on node r / %d (block mapping)", o->gpus);
        snprintf(rr_doc, sizeof(rr_doc), "the same order, rank r on node r mod %d (round-robin "
                 "mapping)", o->nodes);
        O[1].label = "naive-block";
        O[1].doc   = block_doc;
    }
    if (mxh_parallel_place(L, D->nd, D->size, pos, span, why, sizeof(why)) != MXH_OK) {
        long prod = 1;
        for (int d = 0; d < D->nd; d++)
            prod *= D->size[d];
        fprintf(stderr, "mpix_info: --parallel: no placement: %s\n", why);
        O[0].ok = 0;
        rc      = 1;
        if (prod != n) { /* the sizes did not resolve: no order has groups */
            free(pos);
            return rc;
        }
    }
    for (int r = 0; r < n; r++)
        pos[n + r] = r;
    for (int i = 0; i < no; i++)
        for (int d = 0; d < D->nd && O[i].ok; d++)
            if (mxh_parallel_cost(cfg, O[i].recs, O[i].L, D->size, d, O[i].pos, bytes, ts,
                                  &O[i].c[d]) != MXH_OK) {
                fprintf(stderr, "mpix_info: --parallel: out of memory\n");
                free(pos);
                return 1;
            }
    for (int d = 0; d < D->nd && O[0].ok; d++)
        O[0].c[d].span = span[d]; /* the placement's own word for it */
    if (o->json)
        par_print_json(D, O, no, bytes, ts, why);
    else
        par_print_text(D, O, no, bytes, ts, machine, why);
    free(pos);
    return rc;
}

/* --parallel: on the described machine (--nodes, --gpus, --leaves), else on
 * MPI_COMM_WORLD's hierarchy. */
static int run_parallel(opts_t *o, const mxh_config_t *cfg, int rank, int size)
{
    par_dims_t D;
    mxh_hier_t *h;
    char machine[160];
    int rc = 2;

    if (!parse_parallel(o->parallel, &D))
        return 2;
    if (o->tsize < 1)
        o->tsize = 4;
    if (o->nodes > 0 || size == 1) {
        if (rank != 0)
            return 0;
        if (!grid_ok(o, "--parallel"))
            return 2;
        int per_leaf = o->leaves > 1 ? o->nodes / o->leaves : o->nodes;
        mxh_record_t *b = described_records(o->nodes, o->gpus, per_leaf, 0);
        mxh_record_t *c = described_records(o->nodes, o->gpus, per_leaf, 1);
        mxh_layout_t *Lb = NULL, *Lc = NULL;
        if (b && c && mxh_layout_create(b, o->nodes * o->gpus, cfg->levels_mask, &Lb) == MXH_OK &&
            mxh_layout_create(c, o->nodes * o->gpus, cfg->levels_mask, &Lc) == MXH_OK) {
            snprintf(machine, sizeof(machine), "%d nodes x %d GPUs, %d leaf group%s", o->nodes,
                     o->gpus, Lb->nleaves, Lb->nleaves > 1 ? "s" : "");
            rc = parallel_report(o, cfg, &D, b, Lb, c, Lc, machine);
        } else {
            fprintf(stderr, "mpix_info: --parallel: the described machine's layout: %s\n",
                    mxh_log_last_error());
        }
        mxh_layout_destroy(Lb);
        mxh_layout_destroy(Lc);
        free(b);
        free(c);
        return rc;
    }
    if (mxh_hier_get(MPI_COMM_WORLD, &h) != MXH_OK) {
        fprintf(stderr, "mpix_info: building the hierarchy failed: %s\n", mxh_log_last_error());
        return 1;
    }
    snprintf(machine, sizeof(machine), "MPI_COMM_WORLD's hierarchy, %d node%s, %d leaf group%s",
             h->layout->nnodes, h->layout->nnodes > 1 ? "s" : "", h->layout->nleaves,
             h->layout->nleaves > 1 ? "s" : "");
    return rank == 0 ? parallel_report(o, &h->config, &D, h->recs, h->layout, NULL, NULL,
                                       machine)
                     : 0;
}

/* Reads the arguments into @o: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, opts_t *o)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--hwloc-xml") && i + 1 < argc)
            o->hwloc_xml = argv[++i];
        else if (!strcmp(argv[i], "--nccl-topo") && i + 1 < argc)
            o->nccl_topo = argv[++i];
        else if (!strcmp(argv[i], "--json"))
            o->json = 1;
        else if (!strcmp(argv[i], "-c") || !strcmp(argv[i], "--config"))
            o->config_only = 1;
        else if (!strcmp(argv[i], "--all"))
            o->all = 1;
        else if (!strcmp(argv[i], "--markdown"))
            o->markdown = o->config_only = 1;
        else if (!strcmp(argv[i], "-m") || !strcmp(argv[i], "--metrics"))
            o->metrics_only = 1;
        else if (!strcmp(argv[i], "--hier"))
            o->hier = 1;
        else if (!strcmp(argv[i], "--local"))
            o->local = 1;
        else if (!strcmp(argv[i], "--count") && i + 1 < argc)
            o->count = atol(argv[++i]);
        else if (!strcmp(argv[i], "--explain") && i + 2 < argc) {
            o->explain_coll  = argv[++i];
            o->explain_bytes = argv[++i];
        } else if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
            o->nodes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--gpus") && i + 1 < argc)
            o->gpus = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--leaves") && i + 1 < argc)
            o->leaves = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--torus") && i + 1 < argc)
            o->torus = argv[++i];
        else if (!strcmp(argv[i], "--parallel") && i + 1 < argc)
            o->parallel = argv[++i];
        else if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
            o->bytes = argv[++i];
        else if (!strcmp(argv[i], "--tsize") && i + 1 < argc)
            o->tsize = atol(argv[++i]);
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--version"))
            return print_version();
        else {
            fprintf(stderr, "mpix_info: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (o->count < 1)
        o->count = 1;
    return -1;
}

/* --explain: on the given grid or torus, else on MPI_COMM_WORLD's hierarchy. */
static int run_explain(opts_t *o, const mxh_config_t *cfg, int rank, int size)
{
    mxh_hier_t *h;
    if (o->tsize < 1)
        o->tsize = 4;
    if (o->nodes > 0 || size == 1)
        return rank == 0 ? explain(o, cfg, NULL) : 0;
    if (mxh_hier_get(MPI_COMM_WORLD, &h) != MXH_OK) {
        fprintf(stderr, "mpix_info: building the hierarchy failed: %s\n", mxh_log_last_error());
        return 1;
    }
    return rank == 0 ? explain(o, &h->config, h->layout) : 0;
}

/* Rank 0's report before the hierarchy: the machine and transports, then the
 * configuration and the metrics (or the parts -c and -m ask for); the summary (@summary)
 * stops after the transports: its changed variables follow the hierarchy. */
static int print_local(const opts_t *o, mxh_config_t *cfg, int summary)
{
    const mxh_machine_t *m = NULL;
    char my_busid[MXH_BUSID_LEN] = "";
    mxh_caps_t caps;
    int rc = 0;

    if (o->metrics_only) {
        print_metrics(o->json);
        printf(o->json ? "\n" : "");
        return 0;
    }
    if (!o->config_only) {
        if (mxh_discover_machine(cfg, &m) != MXH_OK) {
            fprintf(stderr, "mpix_info: cannot load the machine description: %s\n",
                    mxh_log_last_error());
            rc = 1;
        } else {
            if (!o->hwloc_xml && !o->nccl_topo) {
                mxh_discover_cuda_busid(my_busid);
                if (!my_busid[0] && cfg->gpu_busid[0])
                    mxh_busid_normalize(cfg->gpu_busid, my_busid);
            }
            print_machine(m, my_busid, o->json);
            printf(o->json ? ",\n" : "\n");
            mxh_caps_init(&caps);
            mxh_caps_query_ucx(&caps);
            mxh_caps_query_mpi(&caps);
            print_caps(&caps, o->json);
            printf(o->json ? ",\n" : "\n");
        }
    }
    if (summary)
        return rc;
    print_config(cfg, o->json, o->all);
    if (!o->config_only) {
        printf(o->json ? ",\n" : "\n");
        print_metrics(o->json);
    }
    return rc;
}

int main(int argc, char **argv)
{
    opts_t o = {.count = 1 << 20, .leaves = 0, .tsize = 4};
    mxh_config_t cfg, ref; /* ref: the defaults, what the summary's variables differ from */
    int rank = 0, size = 1, rc = parse_args(argc, argv, &o);
    int summary = !o.json && !o.config_only && !o.metrics_only;

    if (rc >= 0)
        return rc;
    rc = 0;
    if (o.markdown) { /* the reference of every variable, no MPI needed */
        print_config_markdown();
        return 0;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mxh_log_set_rank(rank);

    mxh_config_init_defaults(&cfg);
    if (mxh_config_apply_env(&cfg, rank == 0) != MXH_OK) {
        rc = 1;
        goto out;
    }
    mxh_log_set_level((mxh_log_level_t)cfg.log_level);
    mxh_config_init_defaults(&ref);
    /* the command line's files: in both, the summary lists the environment's changes */
    if (o.hwloc_xml) {
        snprintf(cfg.hwloc_xml, sizeof(cfg.hwloc_xml), "%s", o.hwloc_xml);
        snprintf(ref.hwloc_xml, sizeof(ref.hwloc_xml), "%s", o.hwloc_xml);
    }
    if (o.nccl_topo) {
        snprintf(cfg.nccl_topo_file, sizeof(cfg.nccl_topo_file), "%s", o.nccl_topo);
        snprintf(ref.nccl_topo_file, sizeof(ref.nccl_topo_file), "%s", o.nccl_topo);
    }

    if (o.explain_coll) {
        rc = run_explain(&o, &cfg, rank, size);
        goto out;
    }
    if (o.parallel) {
        rc = run_parallel(&o, &cfg, rank, size);
        goto out;
    }
    if (rank == 0 && o.json)
        printf("{\"version\": \"%d.%d.%d\",\n", MPIX_HIER_VERSION_MAJOR, MPIX_HIER_VERSION_MINOR,
               MPIX_HIER_VERSION_PATCH);
    if (rank == 0 && !o.json)
        printf("mpix_info: mpix-hier %d.%d.%d\n\n", MPIX_HIER_VERSION_MAJOR,
               MPIX_HIER_VERSION_MINOR, MPIX_HIER_VERSION_PATCH);
    if (rank == 0)
        rc = print_local(&o, &cfg, summary);
    if ((size > 1 || o.hier) && !o.local && !o.config_only && !o.metrics_only)
        print_hierarchy(MPI_COMM_WORLD, o.count, o.json, o.hier);
    else if (rank == 0 && summary)
        printf("# Hierarchy\nnone: %s\n",
               o.local ? "not built (--local)"
                       : "one process (under mpiexec -n N: the levels of MPI_COMM_WORLD)");
    if (rank == 0 && summary) {
        printf("\n");
        print_config_changed(&cfg, &ref);
    }
    if (rank == 0 && o.json)
        printf("}\n");
    fflush(stdout);
out:
    MPI_Finalize();
    return rc;
}
