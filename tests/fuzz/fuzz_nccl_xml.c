/* Fuzz target: the NCCL topology XML (src/topo/machine_nccl.c), from the bytes as given
 * (no NUL added: reads past the end are findings). On success the machine must be
 * consistent: rails and islands in range, each NIC's GPU count what the GPUs say. */
#include "fuzz.h"
#include "topo/machine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mxh_machine_t *m = (mxh_machine_t *)&size; /* must be reset */
    mxh_status_t st;

    fuzz_quiet();
    st = mxh_machine_from_nccl_text((const char *)data, size, "fuzz.xml", &m);
    FUZZ_CHECK(st == MXH_OK || st == MXH_ERR_PARSE || st == MXH_ERR_NO_MEMORY);
    FUZZ_CHECK((st == MXH_OK) == (m != NULL));
    if (m != NULL) {
        FUZZ_CHECK(m->ngpus >= 0 && m->nnics >= 0);
        FUZZ_CHECK(m->nislands >= (m->ngpus > 0) && m->nislands <= m->ngpus);
        for (int n = 0; n < m->nnics; n++) {
            int served = 0;
            for (int g = 0; g < m->ngpus; g++)
                served += m->gpus[g].nic == n;
            FUZZ_CHECK(m->nics[n].ngpus == served);
        }
        for (int g = 0; g < m->ngpus; g++) {
            FUZZ_CHECK(m->gpus[g].nic >= -1 && m->gpus[g].nic < m->nnics);
            FUZZ_CHECK(m->gpus[g].island >= 0 && m->gpus[g].island < m->nislands);
            FUZZ_CHECK(mxh_machine_find_gpu(m, m->gpus[g].busid) == g);
        }
    }
    mxh_machine_destroy(m);
    return 0;
}
