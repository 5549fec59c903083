#include "util/log.h"
#include "util/status.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <stdlib.h>
#include <unistd.h>

int mxh_log_level_current = MXH_LOG_WARN;
static int log_rank = -1;
static mxh_log_hook_t log_hook;
static void *log_hook_arg;

static char last_error[1024];

const char *mxh_log_last_error(void) { return last_error; }
void mxh_log_clear_last_error(void) { last_error[0] = '\0'; }

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

const char *mxh_status_string(mxh_status_t status)
{
    switch (status) {
    case MXH_OK:                return "success";
    case MXH_ERR_NO_MEMORY:     return "out of memory";
    case MXH_ERR_INVALID_PARAM: return "invalid parameter";
    case MXH_ERR_IO:            return "input/output error";
    case MXH_ERR_PARSE:         return "parse error";
    case MXH_ERR_CONFIG:        return "configuration error";
    case MXH_ERR_MPI:           return "MPI error";
    case MXH_ERR_UNSUPPORTED:   return "unsupported";
    default:                    return "unknown status";
    }
}

int mxh_log_level_parse(const char *s, mxh_log_level_t *level)
{
    for (int i = 0; i <= MXH_LOG_TRACE; i++) {
        if (!strcasecmp(s, level_names[i]) || (s[0] == '0' + i && s[1] == '\0')) {
            *level = (mxh_log_level_t)i;
            return 0;
        }
    }
    if (!strcasecmp(s, "warning")) {
        *level = MXH_LOG_WARN;
        return 0;
    }
    return -1;
}

void mxh_log_set_level(mxh_log_level_t level) { mxh_log_level_current = (int)level; }
void mxh_log_set_rank(int rank) { log_rank = rank; }
int mxh_log_get_rank(void) { return log_rank; }

void mxh_log_set_hook(mxh_log_hook_t hook, void *arg)
{
    log_hook     = hook;
    log_hook_arg = arg;
}

void mxh_log_emit(mxh_log_level_t level, const char *file, int line, const char *fmt, ...)
{
    char msg[2048];
    char host[64] = "?";
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (level == MXH_LOG_ERROR)
        mxh_strlcpy(last_error, msg, sizeof(last_error));
    if ((int)level > mxh_log_level_current)
        return;
    if (log_hook != NULL)
        log_hook(level, msg, log_hook_arg);

    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    /* one fprintf per line keeps lines of concurrent ranks from interleaving */
    if (level >= MXH_LOG_DEBUG)
        fprintf(stderr, "mpix-hier %s:%d:%d %-5s %s (%s:%d)\n", host, (int)getpid(), log_rank,
                level_names[level], msg, base, line);
    else
        fprintf(stderr, "mpix-hier %s:%d:%d %-5s %s\n", host, (int)getpid(), log_rank,
                level_names[level], msg);
}
