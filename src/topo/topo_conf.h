/* Slurm topology.conf parser (topology/tree and topology/block syntax) and
 * Slurm hostlist expansion. Produces plain records: no decisions here. */
#ifndef MXH_TOPO_CONF_H
#define MXH_TOPO_CONF_H

#include <stddef.h>
#include <stdio.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits. A file larger than MXH_TOPO_CONF_MAX_FILE_BYTES is refused (MXH_ERR_PARSE). */
#define MXH_TOPO_CONF_MAX_FILE_BYTES ((size_t)16 << 20)

/* The hostlists of one file (every Nodes= and Switches= of a topology.conf, every host
 * list and value of a cluster file) expand together to at most MXH_HOSTLIST_MAX_NAMES
 * names and MXH_HOSTLIST_MAX_BYTES bytes, whichever is reached first; more is
 * MXH_ERR_PARSE naming the limits. A name of L characters costs L + 1 +
 * MXH_HOSTLIST_NAME_OVERHEAD bytes (its pointer and malloc's bookkeeping): 1 Mi names of
 * 8 characters fit in 33 MiB. Without it, 320 bytes of 'SwitchName=sK Nodes=X[0-999999]'
 * lines took 920 MiB per rank. The parsers' indexes of the names are a few words per
 * name on top. */
#define MXH_HOSTLIST_MAX_NAMES     ((size_t)1 << 20)
#define MXH_HOSTLIST_MAX_BYTES     ((size_t)64 << 20)
#define MXH_HOSTLIST_NAME_OVERHEAD (sizeof(char *) + 16)

/* What one file's expansions may still take: the limits and what was spent. */
typedef struct mxh_hostlist_budget {
    size_t max_names, max_bytes;
    size_t names, bytes; /* spent */
    int    exhausted;    /* an expansion failed on the budget (it logged why) */
} mxh_hostlist_budget_t;
#define MXH_HOSTLIST_BUDGET_INIT {MXH_HOSTLIST_MAX_NAMES, MXH_HOSTLIST_MAX_BYTES, 0, 0, 0}

typedef struct mxh_topo_switch {
    char  *name;          /* SwitchName= (or BlockName= in block format) */
    char **nodes;         /* expanded Nodes= host names (may be empty) */
    int    num_nodes;
    char **child_names;   /* expanded Switches= names */
    int    num_children;
    int   *children;      /* indices of child switches (resolved), num_children long */
    int    parent;        /* index of the first switch listing this one in Switches=, -1: top */
    int    line;          /* line of the definition, for messages */
} mxh_topo_switch_t;

typedef enum mxh_topo_format {
    MXH_TOPO_FORMAT_TREE = 0, /* SwitchName= lines */
    MXH_TOPO_FORMAT_BLOCK     /* BlockName= lines (+ BlockSizes=): each block is a leaf */
} mxh_topo_format_t;

typedef struct mxh_topo_conf {
    char              *source;   /* file name or label used in messages */
    mxh_topo_format_t  format;
    mxh_topo_switch_t *switches;
    int                num_switches;
} mxh_topo_conf_t;

/* Syntax: '#' comments, blank lines, a trailing backslash continues a line
 * (joined without a separator, as Slurm does), KEY=VALUE tokens separated by
 * blanks, keys case-insensitive. Tree: SwitchName= [Nodes=] [Switches=]
 * [LinkSpeed= (ignored)]. Block: BlockName= [Nodes=] (each block becomes a
 * switch with its nodes, no parent, no children; format BLOCK) and BlockSizes=
 * (checked to be numbers, otherwise ignored). Nodes=/Switches= are hostlists.
 * Back-edges: when two switches list each other in Switches= (SHARP's raw
 * output lists the top switch under every spine), the edge towards the switch
 * farther from the nodes (shortest Switches= path down to a switch with Nodes=)
 * is dropped from child_names/children with one warning; at equal distance it
 * is a cycle. A host may appear under one switch only (exact names).
 *
 * Parse a topology.conf text. Errors (unknown key, missing '=', bad hostlist,
 * a switch defined twice, a Switches= name never defined, a cycle, a node under
 * two leaves, tree and block syntax mixed) return MXH_ERR_PARSE and log one
 * error line "SOURCE:LINE: what is wrong". */
mxh_status_t mxh_topo_conf_parse_string(const char *text, const char *source,
                                        mxh_topo_conf_t **conf_p);
/* Same from a file; an unreadable file is MXH_ERR_IO with the path and strerror. */
mxh_status_t mxh_topo_conf_parse_file(const char *path, mxh_topo_conf_t **conf_p);
void mxh_topo_conf_destroy(mxh_topo_conf_t *conf);

/* Reads the text file @f (@path, called @what in messages) into @text_p, NUL-terminated,
 * and its length into @len_p; more than @max bytes is MXH_ERR_PARSE. Free with free(). */
mxh_status_t mxh_topo_read_text(FILE *f, const char *path, const char *what, size_t max,
                                char **text_p, size_t *len_p);

/* Index of the leaf switch of @host (the switch whose Nodes= lists it), or -1.
 * Matches the exact name, else the short names (up to the first '.') of both
 * (not for names made of digits and dots only, such as IPv4 addresses). The
 * first matching switch in file order wins. */
int mxh_topo_conf_find_leaf(const mxh_topo_conf_t *conf, const char *host);

/* Depth of a switch: 0 for a top switch, parent's depth + 1 otherwise. */
int mxh_topo_conf_depth(const mxh_topo_conf_t *conf, int sw);

/* Expand a Slurm hostlist ("a,node[0-3,7],rack[1-2]-n[01-02]") into names, in
 * order, zero-padding kept from the range bounds. At most @max_names names
 * (guards against "n[0-999999999]") and MXH_HOSTLIST_MAX_BYTES bytes; more is
 * MXH_ERR_PARSE. Free with mxh_hostlist_free. */
mxh_status_t mxh_hostlist_expand(const char *expr, size_t max_names, char ***names_p,
                                 int *count_p);
/* The same, spending from @budget (shared by the hostlists of one file); errors are logged
 * as "SOURCE:LINE: ..." when @source is not NULL. */
mxh_status_t mxh_hostlist_expand_in(const char *expr, mxh_hostlist_budget_t *budget,
                                    const char *source, int line, char ***names_p,
                                    int *count_p);
void mxh_hostlist_free(char **names, int count);

#ifdef __cplusplus
}
#endif

#endif
