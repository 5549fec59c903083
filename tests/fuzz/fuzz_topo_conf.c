/* Fuzz target: Slurm topology.conf (src/topo/topo_conf.c) and its hostlists. On success
 * the tree must be consistent: children and parents in range, depths finite (acyclic),
 * every node found under the one switch that lists it. */
#include "fuzz.h"
#include "topo/topo_conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    mxh_topo_conf_t *conf = (mxh_topo_conf_t *)&text; /* must be reset */
    mxh_status_t st;

    fuzz_quiet();
    st = mxh_topo_conf_parse_string(text, "fuzz.conf", &conf);
    FUZZ_CHECK(st == MXH_OK || st == MXH_ERR_PARSE || st == MXH_ERR_NO_MEMORY);
    FUZZ_CHECK((st == MXH_OK) == (conf != NULL));
    if (conf != NULL) {
        FUZZ_CHECK(conf->num_switches > 0);
        for (int i = 0; i < conf->num_switches; i++) {
            const mxh_topo_switch_t *s = &conf->switches[i];
            FUZZ_CHECK(s->name != NULL && s->name[0] != '\0');
            FUZZ_CHECK(s->parent >= -1 && s->parent < conf->num_switches && s->parent != i);
            FUZZ_CHECK(mxh_topo_conf_depth(conf, i) >= 0);
            for (int c = 0; c < s->num_children; c++)
                FUZZ_CHECK(s->children[c] >= 0 && s->children[c] < conf->num_switches &&
                           s->children[c] != i);
            for (int k = 0; k < s->num_nodes; k++) {
                FUZZ_CHECK(s->nodes[k][0] != '\0');
                /* a lookup scans every node: a few per switch, or 1 Mi names take hours */
                if (k < 4 || k == s->num_nodes - 1)
                    FUZZ_CHECK(mxh_topo_conf_find_leaf(conf, s->nodes[k]) == i);
            }
            if (conf->format == MXH_TOPO_FORMAT_BLOCK)
                FUZZ_CHECK(s->num_children == 0 && s->parent == -1);
        }
        (void)mxh_topo_conf_find_leaf(conf, "n1.example.org");
    }
    mxh_topo_conf_destroy(conf);
    free(text);
    return 0;
}
