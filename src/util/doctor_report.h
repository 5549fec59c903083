/* Reading an mpix_doctor --json report (docs/doctor.md): the rails it recommends excluding,
 * for MPIX_HIER_EXCLUDE_RAILS=FILE. The document is parsed as JSON (json-c), whole and
 * strictly; only the top-level "exclude_rails" list is used. */
#ifndef MXH_UTIL_DOCTOR_REPORT_H
#define MXH_UTIL_DOCTOR_REPORT_H

#include <stdint.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest report read (the doctor's at 4,096 ranks is tens of MiB, its tree a few
 * times that while it is read). */
#define MXH_DOCTOR_REPORT_MAX_BYTES ((long long)256 << 20)
/* Nesting the reader follows (the doctor writes 4 levels). */
#define MXH_DOCTOR_REPORT_MAX_DEPTH 32

/* Reads the report at @path: *@mask gets bit r for every rail r of its "exclude_rails"
 * (integers 0-63). MXH_ERR_IO when the file cannot be opened or read or is not a regular
 * file; MXH_ERR_PARSE when it is larger than MXH_DOCTOR_REPORT_MAX_BYTES, is not JSON (the
 * line and cause logged), is not an object or its "exclude_rails" is missing or not a list
 * of such integers. Logged as "MPIX_HIER_EXCLUDE_RAILS: PATH...". */
mxh_status_t mxh_doctor_report_rails(const char *path, uint64_t *mask);

#ifdef __cplusplus
}
#endif

#endif
