/* Prometheus text exposition format (version 0.0.4) helpers and the metrics
 * file's name: pure string functions, no MPI (unit-tested in
 * tests/unit/test_prom.cc). The metrics themselves live in src/coll/metrics.c. */
#ifndef MXH_UTIL_PROM_H
#define MXH_UTIL_PROM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A growing text buffer; on out-of-memory it keeps what it has and sets oom. */
typedef struct mxh_strbuf {
    char  *p;
    size_t len, cap;
    int    oom;
} mxh_strbuf_t;

void mxh_strbuf_printf(mxh_strbuf_t *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* @s as a label value: backslash, double quote and line feed escaped as \\, \"
 * and \n (the format's only escapes in label values). */
void mxh_strbuf_label_value(mxh_strbuf_t *b, const char *s);
/* @s as HELP text: backslash and line feed escaped. */
void mxh_strbuf_help(mxh_strbuf_t *b, const char *s);
/* A sample value: integers exactly, others with 17 significant digits; NaN, +Inf, -Inf. */
void mxh_strbuf_value(mxh_strbuf_t *b, double v);
void mxh_strbuf_free(mxh_strbuf_t *b);

/* The metrics file of a rank from a template: %r the MPI_COMM_WORLD rank, %h the
 * host name, %p the process id, %% a percent sign (any other %x is kept as it
 * is). A template without %r or %p in a job of more than one rank gets
 * ".rank<r>" appended, so that ranks never share a file. Returns the length of
 * the result, or -1 if it does not fit @cap (NUL included). */
int mxh_prom_expand_path(const char *tmpl, int rank, const char *host, long pid, int nranks,
                         char *out, size_t cap);

/* A selector: NAME or NAME{label="value",...} (the quotes are optional;
 * escapes as in label values). Fills @name and up to @max label pairs into
 * @keys/@vals (each of @cap chars); returns the number of pairs, or -1 if
 * malformed or too long. */
#define MXH_PROM_MAX_SEL 8
int mxh_prom_parse_selector(const char *sel, char *name, size_t cap, char keys[][64],
                            char vals[][256], int max);

#ifdef __cplusplus
}
#endif

#endif
