/* This rank's record, with the precedence of the topology sources: an explicit
 * node name (MPIX_HIER_HOSTNAME) or the processor name, then the cluster file
 * (node, rail, leaf of this host), then the Slurm topology.conf (leaf, where the
 * cluster file gave none; /etc/slurm/topology.conf when present and no file is
 * named), then machine discovery (NCCL topology file or hwloc: GPU, NICs, NVLink
 * islands) and, on GPU nodes, the UCX/MPICH transport capabilities.
 * Collective over @comm (one MPI_Comm_split_type). */
#include "config.h"

#include "topo/cluster_file.h"
#include "topo/discover.h"
#include "topo/local_record.h"
#include "topo/topo_conf.h"
#include "util/log.h"
#include "util/str.h"

#include <string.h>
#include <unistd.h>

#define MXH_SLURM_TOPO_DEFAULT "/etc/slurm/topology.conf"

mxh_status_t mxh_discover_local_record(MPI_Comm comm, mxh_config_t *cfg, mxh_record_t *rec)
{
    mxh_status_t st = MXH_OK;
    MPI_Comm shm = MPI_COMM_NULL;
    char name[MPI_MAX_PROCESSOR_NAME + 1];
    int len = 0;

    mxh_record_init(rec);
    rec->config_hash = mxh_config_plan_hash(cfg);

    /* collective on every rank, whatever the configuration says */
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm) !=
        MPI_SUCCESS) {
        mxh_error("MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed");
        return MXH_ERR_MPI;
    }
    if (cfg->hostname[0] != '\0') {
        mxh_strlcpy(rec->node, cfg->hostname, sizeof(rec->node));
        rec->shm_id = -1;
    } else {
        MPI_Group g_shm, g_comm;
        int zero = 0, leader = -1;
        MPI_Get_processor_name(name, &len);
        name[len] = '\0';
        mxh_strlcpy(rec->node, name,
                    sizeof(name) < sizeof(rec->node) ? sizeof(name) : sizeof(rec->node));
        MPI_Comm_group(shm, &g_shm);
        MPI_Comm_group(comm, &g_comm);
        MPI_Group_translate_ranks(g_shm, 1, &zero, g_comm, &leader);
        MPI_Group_free(&g_shm);
        MPI_Group_free(&g_comm);
        rec->shm_id = leader;
    }
    MPI_Comm_free(&shm);
    if (strlen(cfg->hostname) >= sizeof(rec->node)) {
        mxh_error("MPIX_HIER_HOSTNAME is longer than %zu characters", sizeof(rec->node) - 1);
        return MXH_ERR_CONFIG;
    }

    /* the cluster file: node, rail, leaf and torus coordinate of this host (rec->node is the host here) */
    if (cfg->cluster_file[0] != '\0') {
        mxh_cluster_file_t *cf = NULL;
        st = mxh_cluster_file_parse_file(cfg->cluster_file, &cf);
        if (st != MXH_OK)
            return st;
        const mxh_cluster_host_t *e = mxh_cluster_file_find(cf, rec->node);
        if (e == NULL) {
            mxh_warn("host '%s' is not listed in %s: discovery decides its node, rail and leaf",
                     rec->node, cfg->cluster_file);
        } else {
            if (strcmp(e->node, rec->node) != 0)
                rec->shm_id = -1; /* a named node: the name alone identifies it */
            mxh_strlcpy(rec->node, e->node, sizeof(rec->node));
            if (e->rail >= 0)
                rec->rail = e->rail;
            if (e->leaf != NULL)
                mxh_strlcpy(rec->leaf, e->leaf, sizeof(rec->leaf));
            rec->tndims = (int16_t)e->tndims;
            for (int d = 0; d < e->tndims && d < MXH_REC_TORUS_DIMS; d++)
                rec->tcoord[d] = (int16_t)e->tcoord[d];
        }
        mxh_cluster_file_destroy(cf);
    }

    if (cfg->topo_file[0] == '\0' && access(MXH_SLURM_TOPO_DEFAULT, R_OK) == 0)
        mxh_strlcpy(cfg->topo_file, MXH_SLURM_TOPO_DEFAULT, sizeof(cfg->topo_file));
    if (cfg->topo_file[0] != '\0' && rec->leaf[0] == '\0') {
        mxh_topo_conf_t *conf = NULL;
        st = mxh_topo_conf_parse_file(cfg->topo_file, &conf);
        if (st != MXH_OK)
            return st;
        int leaf = mxh_topo_conf_find_leaf(conf, rec->node);
        if (leaf >= 0) {
            mxh_strlcpy(rec->leaf, conf->switches[leaf].name, sizeof(rec->leaf));
        } else {
            mxh_debug("node '%s' is not listed in %s: default leaf", rec->node,
                      cfg->topo_file);
        }
        mxh_topo_conf_destroy(conf);
    }

    if (cfg->discover) {
        const mxh_machine_t *machine = NULL;
        st = mxh_discover_machine(cfg, &machine);
        if (st == MXH_OK)
            st = mxh_discover_fill_record(cfg, machine, rec);
        /* transports matter for GPU buffers only; skip the UCX query on GPU-less nodes */
        if (st == MXH_OK && rec->ngpus > 0)
            mxh_discover_caps(rec);
    }
    return st;
}

