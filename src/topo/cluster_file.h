/* Cluster description file (MPIX_HIER_CLUSTER_FILE): maps host names (what
 * MPI_Get_processor_name returns, or MPIX_HIER_HOSTNAME when set; under SimGrid
 * SMPI the simulated host) to the node, rail and leaf switch group of the ranks
 * on that host. Useful where discovery cannot see the layout: simulations (each
 * simulated GPU is a host) and clusters with incomplete hwloc/Slurm data.
 *
 * Syntax: one entry per line, '#' starts a comment, blank lines are ignored.
 *
 *   HOSTLIST [node=VALUE] [rail=VALUE] [leaf=VALUE] [torus=VALUE]
 *
 * HOSTLIST is a Slurm hostlist ("gpu[0-7]", "a,b,c[01-04]"). A VALUE is either a
 * single value applied to every host of the line, or a hostlist that expands to
 * exactly as many values as there are hosts, applied element-wise
 * ("n0g[0-7] node=n0 rail=[0-7] leaf=su0"). rail values are integers >= 0.
 * torus values are the coordinate of the node's router in a torus of nodes, one
 * integer >= 0 per dimension joined by 'x' ("torus=2x0x1"; 1 to 3 dimensions, at
 * most 32767 each; element-wise lists as above: "n[0-3]g0 node=n[0-3] torus=[0-3]x0"):
 * with every node on the torus the network levels follow its dimensions (decide/levels.h).
 * Keys are case-insensitive and given at most once per line. A host may appear
 * on one line only. Defaults: node = the host itself, rail = from discovery,
 * leaf = from topology.conf (MPIX_HIER_TOPO_FILE) or the default leaf.
 * Produces plain data: the decision is taken elsewhere (topo/local_record.c, decide/levels.c). */
#ifndef MXH_CLUSTER_FILE_H
#define MXH_CLUSTER_FILE_H

#include <stddef.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Larger files are refused; the host lists and values of one file expand to at most
 * MXH_HOSTLIST_MAX_NAMES names and MXH_HOSTLIST_MAX_BYTES bytes together (topo_conf.h). */
#define MXH_CLUSTER_FILE_MAX_BYTES ((size_t)16 << 20)

typedef struct mxh_cluster_host {
    char *host; /* host name as listed */
    char *node; /* node name (never NULL: the host when not given) */
    char *leaf; /* leaf switch group, NULL when not given */
    int   rail; /* rail, -1 when not given */
    int   tndims;   /* torus dimensions given, 0 when not given */
    int   tcoord[3];/* torus coordinate (MXH_REC_TORUS_DIMS values) */
    int   line; /* line of the entry, for messages */
} mxh_cluster_host_t;

typedef struct mxh_cluster_file {
    char               *source; /* file name or label used in messages */
    mxh_cluster_host_t *hosts;  /* sorted by host name */
    int                 nhosts;
} mxh_cluster_file_t;

/* Parse a cluster file text. Errors (a line without a hostlist, unknown key, a
 * token without '=', an empty or malformed value, a value list whose length is
 * neither 1 nor the number of hosts, a rail that is not an integer >= 0, a torus
 * coordinate that is not 1 to 3 integers in [0, 32767] joined by 'x', a name
 * too long for a record, a host listed twice, hostlists beyond the file's expansion limit)
 * return MXH_ERR_PARSE and log "SOURCE:LINE: what is wrong". */
mxh_status_t mxh_cluster_file_parse_string(const char *text, const char *source,
                                           mxh_cluster_file_t **cf_p);
/* Same from a file; an unreadable file is MXH_ERR_IO with the path and strerror. */
mxh_status_t mxh_cluster_file_parse_file(const char *path, mxh_cluster_file_t **cf_p);
void mxh_cluster_file_destroy(mxh_cluster_file_t *cf);

/* The entry of @host, or NULL. Matches the exact name, else the short names (up
 * to the first '.') of both, as mxh_topo_conf_find_leaf does. */
const mxh_cluster_host_t *mxh_cluster_file_find(const mxh_cluster_file_t *cf, const char *host);

#ifdef __cplusplus
}
#endif

#endif
