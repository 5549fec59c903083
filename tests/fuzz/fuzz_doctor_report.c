/* Fuzz target: reading an mpix_doctor --json report for MPIX_HIER_EXCLUDE_RAILS. A thin
 * call through the public setter with the input as the report file, so that it holds
 * whatever reads the file behind it (a text scan today, a JSON parser tomorrow). */
#include "fuzz.h"
#include "util/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mxh_config_t cfg;

    fuzz_quiet();
    mxh_config_init_defaults(&cfg);
    mxh_status_t st = mxh_config_set(&cfg, "MPIX_HIER_EXCLUDE_RAILS", fuzz_file(data, size), "fuzz");
    FUZZ_CHECK(st == MXH_OK || st == MXH_ERR_PARSE || st == MXH_ERR_IO);
    FUZZ_CHECK(st == MXH_OK || cfg.exclude_rails == 0);
    return 0;
}
