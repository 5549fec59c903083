/* mpix_info: what mpix-hier sees, like ucx_info / lstopo.
 *
 *   mpix_info                    this machine: GPUs, NVLink islands, NICs and the GPUs they
 *                                serve, UCX transports and memory types, MPICH CUDA support,
 *                                and every MPIX_HIER_* variable
 *   mpix_info --hwloc-xml FILE   the same from an hwloc XML export (any machine)
 *   mpix_info --nccl-topo FILE   the same from an NCCL topology file
 *   mpix_info -c                 only the configuration variables
 *   mpix_info -m                 only the metrics (MPIX_HIER_METRICS_FILE, MPIX_Hier_comm_get_stats)
 *   mpiexec -n N mpix_info       + the hierarchy built for MPI_COMM_WORLD and the plan
 *                                each collective would use (--count N elements)
 *   --json                       machine-readable output
 */
#include "config.h"

#include "mpix_hier.h"
#include "coll/hier.h"
#include "coll/metrics.h"
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
    int         json, config_only, metrics_only, hier, local;
    long        count;
} opts_t;

static void usage(FILE *f)
{
    fprintf(f, "usage: mpix_info [--hwloc-xml FILE] [--nccl-topo FILE] [-c|--config] [--json]\n"
               "                 [-m|--metrics] [--count N] [--hier] [--local] [-h]\n"
               "  without mpiexec: this machine (or the given file) and the configuration\n"
               "  under mpiexec:   also the hierarchy of MPI_COMM_WORLD and the collectives' plans\n");
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

/* ---- configuration ------------------------------------------------------------ */

static void print_config(const mxh_config_t *cfg, int json)
{
    char val[MXH_CONFIG_STR_MAX];
    if (json) {
        printf("\"config\": [");
        for (const mxh_config_var_t *v = mxh_config_vars; v->name; v++) {
            mxh_config_get_string(cfg, v->name, val, sizeof(val));
            printf("%s\n  {\"name\": ", v == mxh_config_vars ? "" : ",");
            json_str(v->name);
            printf(", \"default\": ");
            json_str(v->dflt);
            printf(", \"value\": ");
            json_str(val);
            printf(", \"set\": %s, \"must_agree\": %s, \"doc\": ", getenv(v->name) ? "true" : "false",
                   v->plan ? "true" : "false");
            json_str(v->doc);
            printf("}");
        }
        printf("]");
        return;
    }
    printf("# Configuration (environment MPIX_HIER_*, or MPI_Info keys in lower case with "
           "MPIX_Hier_comm_init)\n");
    for (const mxh_config_var_t *v = mxh_config_vars; v->name; v++) {
        mxh_config_get_string(cfg, v->name, val, sizeof(val));
        printf("%s=%s%s\n", v->name, val, getenv(v->name) ? "   (set)" : "");
        printf("    # %s\n    # default: '%s'%s\n", v->doc, v->dflt,
               v->plan ? "; must be equal on all ranks" : "");
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
    const char *blk[] = {"1", "0", NULL};
    for (int t = 0; t < MXH_LEVEL_TYPE_COUNT; t++)
        lv[t] = mxh_level_type_name((mxh_level_type_t)t);
    if (json) {
        printf("\"metrics\": {\"families\": [");
        for (const mxh_metric_family_t *f = mxh_metric_families; f->name; f++) {
            printf("%s\n  {\"name\": ", f == mxh_metric_families ? "" : ",");
            json_str(f->name);
            printf(", \"type\": ");
            json_str(f->type);
            printf(", \"labels\": ");
            char labels[256];
            snprintf(labels, sizeof(labels), "%s%s%s", MXH_METRICS_COMM_LABELS,
                     f->labels[0] ? "," : "", f->labels);
            json_str(labels);
            printf(", \"help\": ");
            json_str(f->help);
            printf("}");
        }
        printf("],\n \"label_values\": {\"coll\": [");
        print_list(mxh_config_coll_names, MXH_CONFIG_NCOLL, 1);
        printf("], \"blocking\": [");
        print_list(blk, -1, 1);
        printf("], \"path\": [");
        print_list(mxh_metrics_path_names, -1, 1);
        printf("], \"algo\": [");
        print_list(mxh_metrics_algo_names, -1, 1);
        printf("], \"level\": [");
        print_list(lv, -1, 1);
        printf("], \"reason\": [");
        for (int r = 1; r < MXH_FB_COUNT; r++) {
            printf("%s{\"name\": ", r > 1 ? ", " : "");
            json_str(mxh_fallbacks[r].name);
            printf(", \"doc\": ");
            json_str(mxh_fallbacks[r].doc);
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
    printf("# label values\ncoll: ");
    print_list(mxh_config_coll_names, MXH_CONFIG_NCOLL, 0);
    printf("\nblocking: 1 (MPIX_Hier_<coll>), 0 (MPIX_Hier_I<coll>)\npath: ");
    print_list(mxh_metrics_path_names, -1, 0);
    printf("\nalgo: ");
    print_list(mxh_metrics_algo_names, -1, 0);
    printf("\nlevel: ");
    print_list(lv, -1, 0);
    printf("\nreason:\n");
    for (int r = 1; r < MXH_FB_COUNT; r++)
        printf("  %-16s %s\n", mxh_fallbacks[r].name, mxh_fallbacks[r].doc);
}

/* ---- machine ---------------------------------------------------------------------- */

static void print_machine(const mxh_machine_t *m, const char *my_busid, int json)
{
    if (json) {
        printf("\"machine\": {\"source\": ");
        json_str(m ? m->source : "none");
        printf(", \"nvlink_info\": %s, \"gpus\": [", m && m->has_nvlink ? "true" : "false");
        for (int g = 0; m && g < m->ngpus; g++) {
            const mxh_gpu_t *G = &m->gpus[g];
            printf("%s\n  {\"index\": %d, \"busid\": ", g ? "," : "", g);
            json_str(G->busid);
            printf(", \"model\": ");
            json_str(G->model);
            printf(", \"numa\": %d, \"package\": %d, \"nvlink_island\": %d, \"rail\": %d, "
                   "\"nic\": ",
                   G->numa, G->package, G->island, G->nic);
            json_str(G->nic >= 0 ? m->nics[G->nic].name : "");
            printf(", \"nic_distance\": ");
            json_str(G->nic >= 0 ? mxh_pci_distance_name(G->nic_distance) : "");
            printf(", \"mine\": %s}", my_busid[0] && !strcmp(my_busid, G->busid) ? "true" : "false");
        }
        printf("], \"nics\": [");
        for (int i = 0; m && i < m->nnics; i++) {
            const mxh_nic_t *N = &m->nics[i];
            printf("%s\n  {\"rail\": %d, \"name\": ", i ? "," : "", i);
            json_str(N->name);
            printf(", \"busid\": ");
            json_str(N->busid);
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
            printf(", \"device\": ");
            json_str(caps->transports[i].device);
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

static void print_hierarchy(MPI_Comm comm, long count, int json)
{
    mxh_hier_t *h;
    int rank, size;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (mxh_hier_get(comm, &h) != MXH_OK) {
        fprintf(stderr, "mpix_info: building the hierarchy failed: %s\n", mxh_log_last_error());
        return;
    }
    const mxh_layout_t *L = h->layout;
    if (rank != 0)
        goto plans_barrier;
    if (json) {
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
            printf(", \"leaf\": ");
            json_str(rec->leaf);
            printf(", \"local_index\": %d, \"gpu\": %d, \"gpu_busid\": ", L->local_index[r],
                   L->gpu_of[r]);
            json_str(rec->gpu_busid);
            printf(", \"nvlink_island\": %d, \"rail\": %d, \"nic\": ", L->island_of[r], L->rail[r]);
            json_str(L->gpu_of[r] >= 0 && rec->rail < 0 && L->rail[r] < rec->nnics
                         ? rec->nic_names[L->rail[r]] : "");
            printf("}");
        }
        printf("]}");
    } else {
        printf("\n# Hierarchy of MPI_COMM_WORLD (%d ranks)\n%s", size, h->description);
    }
plans_barrier:
    /* plans of rank 0 for each collective */
    if (mxh_hier_active(h)) {
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
    /* the algorithm each collective takes, by message size (identical on every rank) */
    if (rank == 0) {
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
}

int main(int argc, char **argv)
{
    opts_t o = {NULL, NULL, 0, 0, 0, 0, 0, 1 << 20};
    mxh_config_t cfg;
    const mxh_machine_t *m = NULL;
    mxh_caps_t caps;
    char my_busid[MXH_BUSID_LEN] = "";
    int rank = 0, size = 1, rc = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--hwloc-xml") && i + 1 < argc)
            o.hwloc_xml = argv[++i];
        else if (!strcmp(argv[i], "--nccl-topo") && i + 1 < argc)
            o.nccl_topo = argv[++i];
        else if (!strcmp(argv[i], "--json"))
            o.json = 1;
        else if (!strcmp(argv[i], "-c") || !strcmp(argv[i], "--config"))
            o.config_only = 1;
        else if (!strcmp(argv[i], "-m") || !strcmp(argv[i], "--metrics"))
            o.metrics_only = 1;
        else if (!strcmp(argv[i], "--hier"))
            o.hier = 1;
        else if (!strcmp(argv[i], "--local"))
            o.local = 1;
        else if (!strcmp(argv[i], "--count") && i + 1 < argc)
            o.count = atol(argv[++i]);
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "mpix_info: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (o.count < 1)
        o.count = 1;

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
    if (o.hwloc_xml)
        snprintf(cfg.hwloc_xml, sizeof(cfg.hwloc_xml), "%s", o.hwloc_xml);
    if (o.nccl_topo)
        snprintf(cfg.nccl_topo_file, sizeof(cfg.nccl_topo_file), "%s", o.nccl_topo);

    if (rank == 0 && o.json)
        printf("{\"version\": \"%d.%d.%d\",\n", MPIX_HIER_VERSION_MAJOR, MPIX_HIER_VERSION_MINOR,
               MPIX_HIER_VERSION_PATCH);
    if (rank == 0 && !o.json)
        printf("mpix_info: mpix-hier %d.%d.%d\n\n", MPIX_HIER_VERSION_MAJOR,
               MPIX_HIER_VERSION_MINOR, MPIX_HIER_VERSION_PATCH);
    if (rank == 0 && o.metrics_only) {
        print_metrics(o.json);
        printf(o.json ? "\n" : "");
    } else if (rank == 0 && !(o.hier && size > 1)) {
        if (!o.config_only) {
            if (mxh_discover_machine(&cfg, &m) != MXH_OK) {
                fprintf(stderr, "mpix_info: cannot load the machine description: %s\n",
                        mxh_log_last_error());
                rc = 1;
            } else {
                if (!o.hwloc_xml && !o.nccl_topo) {
                    mxh_discover_cuda_busid(my_busid);
                    if (!my_busid[0] && cfg.gpu_busid[0])
                        mxh_busid_normalize(cfg.gpu_busid, my_busid);
                }
                print_machine(m, my_busid, o.json);
                printf(o.json ? ",\n" : "\n");
                mxh_caps_init(&caps);
                mxh_caps_query_ucx(&caps);
                mxh_caps_query_mpi(&caps);
                print_caps(&caps, o.json);
                printf(o.json ? ",\n" : "\n");
            }
        }
        print_config(&cfg, o.json);
        if (!o.config_only) {
            printf(o.json ? ",\n" : "\n");
            print_metrics(o.json);
        }
    }
    if ((size > 1 || o.hier) && !o.local && !o.config_only && !o.metrics_only)
        print_hierarchy(MPI_COMM_WORLD, o.count, o.json);
    if (rank == 0 && o.json)
        printf("}\n");
    fflush(stdout);
out:
    MPI_Finalize();
    return rc;
}
