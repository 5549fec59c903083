#include "util/prom.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int grow(mxh_strbuf_t *b, size_t more)
{
    size_t need = b->len + more + 1;
    char *p;
    if (b->oom)
        return -1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need)
        cap *= 2;
    if ((p = realloc(b->p, cap)) == NULL) {
        b->oom = 1;
        return -1;
    }
    b->p   = p;
    b->cap = cap;
    return 0;
}

void mxh_strbuf_printf(mxh_strbuf_t *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || grow(b, (size_t)n) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

static void put_escaped(mxh_strbuf_t *b, const char *s, int quote)
{
    for (; *s; s++) {
        const char *e = NULL;
        if (*s == '\\')
            e = "\\\\";
        else if (*s == '\n')
            e = "\\n";
        else if (*s == '"' && quote)
            e = "\\\"";
        if (grow(b, 2) != 0)
            return;
        if (e) {
            memcpy(b->p + b->len, e, 2);
            b->len += 2;
        } else {
            b->p[b->len++] = *s;
        }
        b->p[b->len] = '\0';
    }
}

void mxh_strbuf_label_value(mxh_strbuf_t *b, const char *s)
{
    put_escaped(b, s, 1);
}

void mxh_strbuf_help(mxh_strbuf_t *b, const char *s)
{
    put_escaped(b, s, 0);
}

void mxh_strbuf_value(mxh_strbuf_t *b, double v)
{
    if (isnan(v))
        mxh_strbuf_printf(b, "NaN");
    else if (isinf(v))
        mxh_strbuf_printf(b, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 9007199254740992.0)
        mxh_strbuf_printf(b, "%.0f", v);
    else
        mxh_strbuf_printf(b, "%.17g", v);
}

void mxh_strbuf_free(mxh_strbuf_t *b)
{
    free(b->p);
    b->p   = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
}

int mxh_prom_expand_path(const char *tmpl, int rank, const char *host, long pid, int nranks,
                         char *out, size_t cap)
{
    size_t o = 0;
    int per_rank = 0;
    char num[32];

#define PUT(_s)                                                                    \
    do {                                                                           \
        size_t _l = strlen(_s);                                                    \
        if (o + _l >= cap)                                                         \
            return -1;                                                             \
        memcpy(out + o, (_s), _l);                                                 \
        o += _l;                                                                   \
    } while (0)
    if (cap == 0)
        return -1;
    for (const char *p = tmpl; *p; p++) {
        if (p[0] == '%' && p[1] == 'r') {
            snprintf(num, sizeof(num), "%d", rank);
            PUT(num);
            per_rank = 1;
            p++;
        } else if (p[0] == '%' && p[1] == 'p') {
            snprintf(num, sizeof(num), "%ld", pid);
            PUT(num);
            per_rank = 1;
            p++;
        } else if (p[0] == '%' && p[1] == 'h') {
            PUT(host);
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            PUT("%");
            p++;
        } else {
            char c[2] = {*p, '\0'};
            PUT(c);
        }
    }
    if (!per_rank && nranks > 1) {
        snprintf(num, sizeof(num), ".rank%d", rank);
        PUT(num);
    }
#undef PUT
    out[o] = '\0';
    return (int)o;
}

/* [A-Za-z_:][A-Za-z0-9_:]* for names, without ':' for labels */
static size_t ident(const char *s, int colon)
{
    size_t n = 0;
    while (isalpha((unsigned char)s[n]) || s[n] == '_' || (colon && s[n] == ':') ||
           (n > 0 && isdigit((unsigned char)s[n])))
        n++;
    return n;
}

int mxh_prom_parse_selector(const char *sel, char *name, size_t cap, char keys[][64],
                            char vals[][256], int max)
{
    const char *p = sel;
    size_t n      = ident(p, 1);
    int k         = 0;

    if (n == 0 || n >= cap)
        return -1;
    memcpy(name, p, n);
    name[n] = '\0';
    p += n;
    if (*p == '\0')
        return 0;
    if (*p++ != '{')
        return -1;
    for (;;) {
        while (*p == ' ')
            p++;
        if (*p == '}')
            break;
        if (k >= max || (n = ident(p, 0)) == 0 || n >= 64)
            return -1;
        memcpy(keys[k], p, n);
        keys[k][n] = '\0';
        p += n;
        while (*p == ' ')
            p++;
        if (*p++ != '=')
            return -1;
        while (*p == ' ')
            p++;
        size_t o  = 0;
        int quote = *p == '"';
        if (quote)
            p++;
        while (*p && (quote ? *p != '"' : (*p != ',' && *p != '}' && *p != ' '))) {
            char c = *p++;
            if (quote && c == '\\') {
                c = *p++;
                if (c == 'n')
                    c = '\n';
                else if (c != '\\' && c != '"')
                    return -1;
            }
            if (o + 1 >= 256)
                return -1;
            vals[k][o++] = c;
        }
        vals[k][o] = '\0';
        if (quote && *p++ != '"')
            return -1;
        k++;
        while (*p == ' ')
            p++;
        if (*p == ',')
            p++;
        else if (*p != '}')
            return -1;
    }
    return p[1] == '\0' ? k : -1;
}
