/* Fuzz target: the configuration setter (src/util/config.c, mxh_config_set), the parser of
 * every MPIX_HIER_* value. Each input line sets one row: its first byte picks the row (modulo
 * the table), the rest is the value. What a row accepted must print as a value the row
 * accepts again. MPIX_HIER_EXCLUDE_RAILS values that are paths are skipped (fuzz_doctor_report
 * reads report files). */
#include "fuzz.h"
#include "util/config.h"

static int nrows(void)
{
    int n = 0;
    while (mxh_config_vars[n].name != NULL)
        n++;
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size), *save = NULL, buf[MXH_CONFIG_STR_MAX];
    mxh_config_t cfg, again;
    int n = nrows();

    fuzz_quiet();
    mxh_config_init_defaults(&cfg);
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        const mxh_config_var_t *v = &mxh_config_vars[(unsigned char)line[0] % n];
        const char *value = line + 1;
        if (strcmp(v->name, "MPIX_HIER_EXCLUDE_RAILS") == 0 &&
            strspn(value, " \t0123456789,") != strlen(value))
            continue;
        mxh_status_t st = mxh_config_set(&cfg, v->name, value, "fuzz");
        FUZZ_CHECK(st == MXH_OK || st == MXH_ERR_PARSE);
        if (st != MXH_OK)
            continue;
        mxh_config_get_string(&cfg, v->name, buf, sizeof(buf));
        again = cfg;
        st = mxh_config_set(&again, v->name, buf, "fuzz again");
        if (st != MXH_OK)
            fprintf(stderr, "%s='%s' printed as '%s', which does not parse\n", v->name, value,
                    buf);
        FUZZ_CHECK(st == MXH_OK);
    }
    (void)mxh_config_plan_hash(&cfg);
    free(text);
    return 0;
}
