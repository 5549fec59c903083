/* Helpers of the fuzz targets (tests/fuzz/fuzz_*.c): each target is one
 * LLVMFuzzerTestOneInput over one parser, built with the sanitizers and run by driver.c
 * (or by libFuzzer with clang, contrib/fuzz.sh). A broken invariant of a parser's result is
 * a finding: FUZZ_CHECK aborts, and the driver keeps the input. */
#ifndef MXH_FUZZ_H
#define MXH_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"

#define FUZZ_CHECK(cond)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
            abort();                                                                         \
        }                                                                                    \
    } while (0)

/* The library's messages are formatted (they are part of what is tested) but not printed,
 * unless MXH_FUZZ_VERBOSE is set. */
static inline void fuzz_quiet(void)
{
    const char *v = getenv("MXH_FUZZ_VERBOSE");
    mxh_log_level_current = v != NULL && *v ? (int)MXH_LOG_WARN : -1;
}

/* A NUL-terminated copy of the input (the parsers of text stop at a NUL, as the file
 * readers refuse one). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    FUZZ_CHECK(s != NULL);
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* One temporary file per process, removed at exit, for parsers that read a path. */
static char fuzz_path[64];

static inline void fuzz_unlink(void) { unlink(fuzz_path); }

static inline const char *fuzz_file(const uint8_t *data, size_t size)
{
    if (fuzz_path[0] == '\0') {
        const char *dir = getenv("TMPDIR");
        snprintf(fuzz_path, sizeof(fuzz_path), "%s/mxh_fuzz_XXXXXX",
                 dir && *dir && strlen(dir) < 40 ? dir : "/tmp");
        int fd = mkstemp(fuzz_path);
        FUZZ_CHECK(fd >= 0);
        close(fd);
        atexit(fuzz_unlink);
    }
    FILE *f = fopen(fuzz_path, "wb");
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(size == 0 || fwrite(data, 1, size, f) == size);
    fclose(f);
    return fuzz_path;
}

#endif
