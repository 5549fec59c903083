/* Fuzz target: the cluster file (src/topo/cluster_file.c). On success the hosts must be
 * sorted and unique, each found by its own name, with values in their documented ranges. */
#include "fuzz.h"
#include "topo/cluster_file.h"
#include "topo/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    mxh_cluster_file_t *cf = (mxh_cluster_file_t *)&text; /* must be reset */
    mxh_status_t st;

    fuzz_quiet();
    st = mxh_cluster_file_parse_string(text, "fuzz.cluster", &cf);
    FUZZ_CHECK(st == MXH_OK || st == MXH_ERR_PARSE || st == MXH_ERR_NO_MEMORY);
    FUZZ_CHECK((st == MXH_OK) == (cf != NULL));
    if (cf != NULL) {
        FUZZ_CHECK(cf->nhosts >= 0 && (cf->nhosts == 0 || cf->hosts != NULL));
        for (int i = 0; i < cf->nhosts; i++) {
            const mxh_cluster_host_t *h = &cf->hosts[i];
            FUZZ_CHECK(h->host[0] != '\0' && h->node != NULL && h->node[0] != '\0');
            FUZZ_CHECK(strlen(h->node) < MXH_NODE_NAME_MAX);
            FUZZ_CHECK(h->leaf == NULL || strlen(h->leaf) < MXH_LEAF_NAME_MAX);
            FUZZ_CHECK(h->rail >= -1 && h->tndims >= 0 && h->tndims <= 3);
            for (int d = 0; d < h->tndims; d++)
                FUZZ_CHECK(h->tcoord[d] >= 0 && h->tcoord[d] <= 32767);
            FUZZ_CHECK(i == 0 || strcmp(cf->hosts[i - 1].host, h->host) < 0);
            FUZZ_CHECK(mxh_cluster_file_find(cf, h->host) == h);
        }
        (void)mxh_cluster_file_find(cf, "n1.example.org");
    }
    mxh_cluster_file_destroy(cf);
    free(text);
    return 0;
}
