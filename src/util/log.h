/* Logging: levels error..trace chosen by MPIX_HIER_LOG_LEVEL (default warn).
 * Lines go to stderr prefixed "mpix-hier host:pid:rank LEVEL". Never printf
 * elsewhere in the library. */
#ifndef MXH_LOG_H
#define MXH_LOG_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mxh_log_level {
    MXH_LOG_ERROR = 0,
    MXH_LOG_WARN,
    MXH_LOG_INFO,
    MXH_LOG_DEBUG,
    MXH_LOG_TRACE
} mxh_log_level_t;

extern int mxh_log_level_current; /* as mxh_log_level_t */

/* Parse "error|warn|info|debug|trace" (or 0..4); returns 0 on success. */
int mxh_log_level_parse(const char *s, mxh_log_level_t *level);
void mxh_log_set_level(mxh_log_level_t level);
/* World rank shown in the prefix; -1 before MPI is known. */
void mxh_log_set_rank(int rank);
int mxh_log_get_rank(void);

void mxh_log_emit(mxh_log_level_t level, const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* The last message logged at error level (kept even when not printed), so the
 * entry layer can put the first detector's cause into MPI error strings. */
const char *mxh_log_last_error(void);
void mxh_log_clear_last_error(void);

/* Capture hook for tests: when set, messages also go to it (NULL to remove). */
typedef void (*mxh_log_hook_t)(mxh_log_level_t level, const char *msg, void *arg);
void mxh_log_set_hook(mxh_log_hook_t hook, void *arg);

/* Errors are always formatted (they are kept for MPI error strings). */
#define mxh_log(_lvl, ...)                                                     \
    do {                                                                       \
        if ((int)(_lvl) <= mxh_log_level_current || (_lvl) == MXH_LOG_ERROR)   \
            mxh_log_emit((_lvl), __FILE__, __LINE__, __VA_ARGS__);             \
    } while (0)

#define mxh_error(...) mxh_log(MXH_LOG_ERROR, __VA_ARGS__)
#define mxh_warn(...)  mxh_log(MXH_LOG_WARN, __VA_ARGS__)
#define mxh_info(...)  mxh_log(MXH_LOG_INFO, __VA_ARGS__)
#define mxh_debug(...) mxh_log(MXH_LOG_DEBUG, __VA_ARGS__)
#define mxh_trace(...) mxh_log(MXH_LOG_TRACE, __VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif
