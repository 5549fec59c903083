/* Fuzz target: the XML check in front of hwloc (src/topo/xml_check.c). The check itself on
 * the bytes as given; then, where hwloc is built in, the whole hwloc loader on the same
 * bytes as a file (mxh_machine_from_hwloc): a malformed file must be refused before hwloc
 * reads it, and what the check lets through must not crash hwloc. */
#include "config.h"

#include "fuzz.h"
#include "topo/machine.h"
#include "topo/xml_check.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("HWLOC_HIDE_ERRORS", "2", 1); /* hwloc's own complaints about content */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mxh_status_t st, any;

    fuzz_quiet();
    st = mxh_xml_check((const char *)data, size, "fuzz.xml", "topology");
    FUZZ_CHECK(st == MXH_OK || st == MXH_ERR_PARSE);
    any = mxh_xml_check((const char *)data, size, "fuzz.xml", NULL);
    FUZZ_CHECK(any == MXH_OK || st != MXH_OK); /* any root: at least as permissive */
#ifdef HAVE_HWLOC
    mxh_machine_t *m = NULL;
    mxh_status_t ld = mxh_machine_from_hwloc(fuzz_file(data, size), &m);
    FUZZ_CHECK(st == MXH_OK || ld == MXH_ERR_PARSE); /* refused before hwloc */
    FUZZ_CHECK((ld == MXH_OK) == (m != NULL));
    mxh_machine_destroy(m);
#endif
    return 0;
}
