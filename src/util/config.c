/* Configuration as one field table: each MPIX_HIER_* variable is one row {name, default,
 * doc, field, parser, plan, user}; setting, printing, the defaults and the plan hash walk
 * the table (in the style of UCX's ucs_config_field_t). */
#include "util/config.h"
#include "util/str.h"
#include "util/doctor_report.h"
#include "util/log.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

/* ---- parsers and printers ------------------------------------------------------- */

/* A parser returns 0, -1 (malformed: the setter logs the row's doc) or -2 (the cause is
 * logged already). */
struct mxh_config_type {
    int (*parse)(const mxh_config_var_t *v, mxh_config_t *cfg, const char *s,
                 const char *source);
    void (*print)(const mxh_config_var_t *v, const mxh_config_t *cfg, char *buf, size_t len);
    uint64_t (*hash)(const mxh_config_var_t *v, const mxh_config_t *cfg, uint64_t h);
};

#define FIELD(T, v, cfg)  ((T *)(void *)((char *)(cfg) + (v)->offset))
#define CFIELD(T, v, cfg) ((const T *)(const void *)((const char *)(cfg) + (v)->offset))

typedef struct { long lo, hi; } range_t;       /* int and size rows: accepted values */
typedef struct { double lo, hi; } drange_t;    /* plain numbers */
typedef enum { REAL_TIME, REAL_RATE, REAL_PLAIN } real_kind_t;
typedef struct { real_kind_t kind; double min; int zero; } real_t; /* zero: "0" accepted */
typedef struct { size_t size_off, f_off; } factors_t; /* the row's field is the count */
#define KEY_LIST  1 /* items without '=' belong to this key, joined by ',' */
#define KEY_COMMA 2 /* the variable's ';' is written ',' inside the composite string */
typedef struct { const char *key, *var; int flags; } cfg_key_t; /* composite rows: {NULL} ends */

static const mxh_config_var_t *find_var(const char *name);
static mxh_status_t set_var(mxh_config_t *cfg, const mxh_config_var_t *v, const char *value,
                            const char *source);

static const char *const level_names[]     = {"node", "rail", "spine", "island"};
static const char *const log_level_names[] = {"error", "warn", "info", "debug", "trace"};

const char *const mxh_config_algo_names[MXH_CONFIG_NALGO] = {"auto", "mpi", "shm", "hier",
                                                             "pipeline"};

static int parse_yesno(const char *s, int *out)
{
    static const char *const yes[] = {"1", "yes", "y", "true", "on"};
    static const char *const no[]  = {"0", "no", "n", "false", "off"};
    for (int i = 0; i < 5; i++) {
        if (!strcasecmp(s, yes[i]) || !strcasecmp(s, no[i])) {
            *out = !strcasecmp(s, yes[i]);
            return 0;
        }
    }
    return -1;
}

static int parse_bool(const mxh_config_var_t *v, mxh_config_t *cfg, const char *s, const char *src)
{
    (void)src;
    return parse_yesno(s, FIELD(int, v, cfg));
}

static void print_bool(const mxh_config_var_t *v, const mxh_config_t *cfg, char *buf, size_t len)
{
    snprintf(buf, len, "%s", *CFIELD(int, v, cfg) ? "yes" : "no");
}

/* yes/no/auto: arg points at the value 'auto' stores */
static int parse_tri(const mxh_config_var_t *v, mxh_config_t *cfg, const char *s, const char *src)
{
    (void)src;
    if (!strcasecmp(s, "auto")) {
        *FIELD(int, v, cfg) = *(const int *)v->arg;
        return 0;
    }
    return parse_yesno(s, FIELD(int, v, cfg));
}

static void print_tri(const mxh_config_var_t *v, const mxh_config_t *cfg, char *buf, size_t len)
{
    int x = *CFIELD(int, v, cfg);
    snprintf(buf, len, "%s", x == *(const int *)v->arg ? "auto" : x ? "yes" : "no");
}

/* A value that is a number but out of the row's range: logged here (with the value and
 * its source), -2 for the setter. */
static int out_of_range(const mxh_config_var_t *v, const char *s, const char *src,
                        const char *why)
{
    mxh_error("%s='%s' (from %s) is out of range: %s", v->name, s, src, why);
    return -2;
}

/* 0, -1 (not an integer) or -3 (an integer outside [lo, hi], overflow included). */
static int parse_int_in(const char *s, long lo, long hi, int *out)
{
    char *end;
    long v;

    errno = 0;
    v     = strtol(s, &end, 10);
    if (end == s || *end != '\0')
        return -1;
    if (errno == ERANGE || v < lo || v > hi)
        return -3;
    if (errno)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_int(const mxh_config_var_t *v, mxh_config_t *cfg, const char *s, const char *src)
{
    const range_t *r = v->arg;
    char why[96];
    int rc = parse_int_in(s, r->lo, r->hi, FIELD(int, v, cfg));

    if (rc != -3)
        return rc;
    snprintf(why, sizeof(why), "not in [%ld, %ld]", r->lo, r->hi);
    return out_of_range(v, s, src, why);
}

static void print_int(const mxh_config_var_t *v, const mxh_config_t *cfg, char *buf, size_t len)
{
    snprintf(buf, len, "%d", *CFIELD(int, v, cfg));
}

/* bytes with an optional k/m/g (binary) suffix and b; arg: a range_t or NULL. A value
 * beyond SIZE_MAX (after the suffix) is out of range, not wrapped. */
static int parse_size(const mxh_config_var_t *v, mxh_config_t *cfg, const char *s, const char *src)
{
    const range_t *r = v->arg;
    const char *s0 = s;
    char *end, why[96];
    unsigned long long x;
    int shift = 0;

    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    x     = strtoull(s, &end, 10);
    if (errno != 0 && errno != ERANGE)
        return -1;
    switch (tolower((unsigned char)*end)) {
    case 'k': shift = 10; end++; break;
    case 'm': shift = 20; end++; break;
    case 'g': shift = 30; end++; break;
    default: break;
    }
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end != '\0')
        return -1;
    if (errno == ERANGE || x > (unsigned long long)SIZE_MAX >> shift) {
        snprintf(why, sizeof(why), "more than %zu bytes", (size_t)SIZE_MAX);
        return out_of_range(v, s0, src, why);
    }
    x <<= shift;
    if (r && (x < (unsigned long long)r->lo || x > (unsigned long long)r->hi)) {
        snprintf(why, sizeof(why), "not in [%ld, %ld] bytes", r->lo, r->hi);
        return out_of_range(v, s0, src, why);
    }
    *FIELD(size_t, v, cfg) = (size_t)x;
    return 0;
}

static void print_size(const mxh_config_var_t *v, const mxh_config_t *cfg, char *buf, size_t len)
{
    snprintf(buf, len, "%zu", *CFIELD(size_t, v, cfg));
}

/* A positive number with a suffix: times s, ms, us, ns (seconds); rates and plain
 * factors decimal k, m, g, t ("g" = 1e9). Not finite (inf, or beyond DBL_MAX once scaled) is
 * out of range. */
static int parse_real(const mxh_config_var_t *v, mxh_config_t *cfg, const char *s, const char *src)
{
    const real_t *k = v->arg;
    char *end, why[96];
    double x;

    if (k->zero && !strcmp(s, "0")) {
        *FIELD(double, v, cfg) = 0;
        return 0;
    }
    errno = 0;
    x     = strtod(s, &end);
    if (end == s || !(x > 0))
        return -1;
    if (errno == ERANGE && x > 1)
        return out_of_range(v, s, src, "larger than the largest double");
    /* ERANGE below 1 is a gradual underflow: a subnormal, which the printer may write (a
     * rate in g of a tiny value), so it must read back */
    if (errno && errno != ERANGE)
        return -1;
    if (k->kind == REAL_TIME) {
        static const struct { const char *unit; double scale; } units[] = {
            {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}, {"s", 1}};
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            if (!strcmp(end, units[i].unit)) {
                x *= units[i].scale;
                end += strlen(units[i].unit);
                break;
            }
        }
    } else {
        const char *p = strchr("kmgt", tolower((unsigned char)*end));
        if (*end && p) {
            static const double scale[] = {1e3, 1e6, 1e9, 1e12};
            x *= scale[p - "kmgt"];
            end++;
        }
    }
    if (*end != '\0')
        return -1;
    if (!isfinite(x))
        return out_of_range(v, s, src, "not a finite number");
    if (x < k->min) {
        snprintf(why, sizeof(why), "less than %g", k->min);
        return out_of_range(v, s, src, why);
    }
    *FIELD(double, v, cfg) = x;
    return 0;
}

static void print_real(const mxh_config_var_t *v, const mxh_config_t *cfg, char *buf, size_t len)
{
    const real_t *k = v->arg;
    double x        = *CFIELD(double, v, cfg);
    if (k->zero && x == 0)
        snprintf(buf, len, "0");
    else if (k->kind == REAL_TIME && isfinite(x * 1e6))
        snprintf(buf, len, "%gus", x * 1e6);
    else if (k->kind == REAL_TIME)
        snprintf(buf, len, "%gs", x); /* beyond DBL_MAX in us */
    else if (k->kind == REAL_RATE)
        snprintf(buf, len, "%gg", x / 1e9);
    else
        snprintf(buf, len, "%g", x);
}

/* a plain number in [lo, hi] (drange_t) */
static int parse_number(const mxh_config_var_t *v, mxh_config_t *cfg, const char *s,
                        const char *src)
{
    const drange_t *r = v->arg;
    char *end, why[96];
    double x;

    errno = 0;
    x     = strtod(s, &end);
    if (end == s || *end != '\0' || x != x)
        return -1;
    if ((errno == ERANGE && fabs(x) > 1) || !isfinite(x) || x < r->lo || x > r->hi) {
        snprintf(why, sizeof(why), "not in [%g, %g]", r->lo, r->hi);
        return out_of_range(v, s, src, why);
    }
    *FIELD(double, v, cfg) = x;
    return 0;
}

static void print_number(const mxh_config_var_t *v, const mxh_config_t *cfg, char *buf, size_t len)
{
    snprintf(buf, len, "%g", *CFIELD(double, v, cfg));
}

static int parse_string(const mxh_config_var_t *v, mxh_config_t *cfg, const char *s,
                        const char *src)
{
    (void)src;
    if (strlen(s) >= v->size) {
        mxh_error("%s: value is longer than %zu characters", v->name, v->size - 1);
        return -2;
    }
    memset(FIELD(char, v, cfg), 0, v->size); /* canonical: equal values, equal bytes */
    strcpy(FIELD(char, v, cfg), s);
    return 0;
}

static void print_string(const mxh_config_var_t *v, const mxh_config_t *cfg, char *buf, size_t len)
{
    snprintf(buf, len, "%s", CFIELD(char, v, cfg));
}

static int parse_log_level(const mxh_config_var_t *v, mxh_config_t *cfg, const char *s,
                           const char *src)
{
    mxh_log_level_t l;
    (void)src;
    if (mxh_log_level_parse(s, &l) != 0)
        return -1;
    *FIELD(int, v, cfg) = (int)l;
    return 0;
}

static void print_log_level(const mxh_config_var_t *v, const mxh_config_t *cfg, char *buf,
                            size_t len)
{
    snprintf(buf, len, "%s", log_level_names[*CFIELD(int, v, cfg)]);
}

/* auto, linear, or 0..4 halvings */
static int parse_ramp(const mxh_config_var_t *v, mxh_config_t *cfg, const char *s, const char *src)
{
    (void)src;
    if (!strcasecmp(s, "auto"))
        *FIELD(int, v, cfg) = MXH_RAMP_AUTO;
    else if (!strcasecmp(s, "linear"))
        *FIELD(int, v, cfg) = MXH_RAMP_LINEAR;
    else
        return parse_int_in(s, 0, 4, FIELD(int, v, cfg)) != 0 ? -1 : 0; /* the doc says 0..4 */
    return 0;
}

static void print_ramp(const mxh_config_var_t *v, const mxh_config_t *cfg, char *buf, size_t len)
{
    int x = *CFIELD(int, v, cfg);
    if (x == MXH_RAMP_AUTO || x == MXH_RAMP_LINEAR)
        snprintf(buf, len, "%s", x == MXH_RAMP_AUTO ? "auto" : "linear");
    else
        snprintf(buf, len, "%d", x);
}

/* comma-separated level names as a bit mask */
static int parse_levels(const mxh_config_var_t *v, mxh_config_t *cfg, const char *s,
                        const char *src)
{
    char buf[256];
    char *tok, *save = NULL;
    int m = 0;

    (void)src;
    if (strlen(s) >= sizeof(buf))
        return -1;
    strcpy(buf, s);
    for (tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        int found = 0;
        for (int i = 0; i < 4; i++) {
            if (!strcasecmp(tok, level_names[i])) {
                m |= 1 << i;
                found = 1;
            }
        }
        if (!found)
            return -1;
    }
    *FIELD(int, v, cfg) = m;
    return 0;
}

static void print_levels(const mxh_config_var_t *v, const mxh_config_t *cfg, char *buf, size_t len)
{
    size_t off = 0;
    buf[0]     = '\0';
    for (int i = 0; i < 4; i++)
        if (*CFIELD(int, v, cfg) & (1 << i))
            off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s%s",
                                    off ? "," : "", level_names[i]);
}

static int find_name(const char *const *names, int n, const char *s, size_t len)
{
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) == len && !strncasecmp(names[i], s, len))
            return i;
    return -1;
}

/* auto | algo | [algo,]coll:algo[,coll:algo...] */
static int parse_algo(const mxh_config_var_t *v, mxh_config_t *cfg, const char *s, const char *src)
{
    int out[MXH_COLL_COUNT] = {0};
    const char *p = s;

    (void)src;
    while (*p) {
        const char *end = strchr(p, ','), *colon;
        size_t len      = end ? (size_t)(end - p) : strlen(p);
        int a, c;

        colon = memchr(p, ':', len);
        if (colon == NULL) {
            a = find_name(mxh_config_algo_names, MXH_CONFIG_NALGO, p, len);
            if (a < 0)
                return -1;
            for (c = 0; c < MXH_COLL_COUNT; c++)
                out[c] = a;
        } else {
            for (c = MXH_COLL_COUNT - 1; c >= 0; c--)
                if (strlen(mxh_coll_name((mxh_coll_t)c)) == (size_t)(colon - p) &&
                    !strncmp(mxh_coll_name((mxh_coll_t)c), p, (size_t)(colon - p)))
                    break;
            a = find_name(mxh_config_algo_names, MXH_CONFIG_NALGO, colon + 1,
                          len - (size_t)(colon + 1 - p));
            if (c < 0 || a < 0)
                return -1;
            out[c] = a;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    memcpy(FIELD(int, v, cfg), out, sizeof(out));
    return 0;
}

static void print_algo(const mxh_config_var_t *v, const mxh_config_t *cfg, char *buf, size_t len)
{
    const int *algo = CFIELD(int, v, cfg);
    int same        = 1;
    size_t off      = 0;

    for (int c = 1; c < MXH_COLL_COUNT; c++)
        same &= algo[c] == algo[0];
    if (same) {
        snprintf(buf, len, "%s", mxh_config_algo_names[algo[0]]);
        return;
    }
    buf[0] = '\0';
    for (int c = 0; c < MXH_COLL_COUNT; c++)
        if (algo[c] && off < len)
            off += (size_t)snprintf(buf + off, len - off, "%s%s:%s", off ? "," : "",
                                    mxh_coll_name((mxh_coll_t)c), mxh_config_algo_names[algo[c]]);
}

/* Rails as a mask, so ranks reading equal lists from different paths agree. */
static int parse_rail_list(const char *s, const char *end, uint64_t *mask)
{
    uint64_t m = 0;
    while (s < end) {
        char *e;
        long x;
        while (s < end && (isspace((unsigned char)*s) || *s == ','))
            s++;
        if (s >= end)
            break;
        if (!isdigit((unsigned char)*s))
            return -1;
        x = strtol(s, &e, 10);
        if (e > end || x < 0 || x > 63)
            return -1;
        m |= (uint64_t)1 << x;
        s = e;
    }
    *mask = m;
    return 0;
}

/* "" | "1,3" | the path of an mpix_doctor --json report (its "exclude_rails") */
static int parse_rails(const mxh_config_var_t *v, mxh_config_t *cfg, const char *s, const char *src)
{
    const char *p = s;

    (void)src;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '\0' || isdigit((unsigned char)*p))
        return parse_rail_list(p, p + strlen(p), FIELD(uint64_t, v, cfg));
    return mxh_doctor_report_rails(s, FIELD(uint64_t, v, cfg)) == MXH_OK ? 0 : -1;
}

static void print_rails(const mxh_config_var_t *v, const mxh_config_t *cfg, char *buf, size_t len)
{
    uint64_t m = *CFIELD(uint64_t, v, cfg);
    size_t off = 0;
    buf[0]     = '\0';
    for (int r = 0; r < 64 && off < len; r++)
        if (m >> r & 1)
            off += (size_t)snprintf(buf + off, len - off, "%s%d", off ? "," : "", r);
}

/* 'BYTES:FACTOR;BYTES:FACTOR...' (any order; kept sorted by size), "" = none */
static int parse_factors(const mxh_config_var_t *v, mxh_config_t *cfg, const char *s,
                         const char *src)
{
    const factors_t *t = v->arg;
    const char *s0 = s;
    size_t size[MXH_CONFIG_FACTORS];
    double f[MXH_CONFIG_FACTORS];
    int k = 0;

    while (*s) {
        char *end;
        unsigned long long b;
        double x;
        while (*s == ' ' || *s == ';')
            s++;
        if (!*s)
            break;
        if (k == MXH_CONFIG_FACTORS || !isdigit((unsigned char)*s))
            return -1;
        errno = 0;
        b     = strtoull(s, &end, 10);
        if (*end != ':')
            return -1;
        if (errno == ERANGE || b > SIZE_MAX)
            return out_of_range(v, s0, src, "a size is more than SIZE_MAX bytes");
        if (errno)
            return -1;
        x = strtod(end + 1, &end);
        if (!(x > 0) || (*end && *end != ';'))
            return -1;
        if (!isfinite(x))
            return out_of_range(v, s0, src, "a factor is not a finite number");
        int i = k++;
        while (i > 0 && size[i - 1] > b) { /* insertion: ascending sizes */
            size[i] = size[i - 1];
            f[i]    = f[i - 1];
            i--;
        }
        size[i] = (size_t)b;
        f[i]    = x;
        s       = end;
    }
    memset((char *)cfg + t->size_off, 0, sizeof(size)); /* canonical: unused entries 0 */
    memset((char *)cfg + t->f_off, 0, sizeof(f));
    memcpy((char *)cfg + t->size_off, size, (size_t)k * sizeof(size[0]));
    memcpy((char *)cfg + t->f_off, f, (size_t)k * sizeof(f[0]));
    *FIELD(int, v, cfg) = k;
    return 0;
}

static void print_factors(const mxh_config_var_t *v, const mxh_config_t *cfg, char *buf,
                          size_t len)
{
    const factors_t *t = v->arg;
    const size_t *size = (const size_t *)(const void *)((const char *)cfg + t->size_off);
    const double *f    = (const double *)(const void *)((const char *)cfg + t->f_off);
    size_t off         = 0;

    buf[0] = '\0';
    for (int i = *CFIELD(int, v, cfg) - 1; i >= 0 && off < len; i--) {
        int k = snprintf(buf + off, len - off, "%s%zu:%g", off ? ";" : "", size[i], f[i]);
        if (k < 0)
            break;
        off += (size_t)k;
    }
}

/* the entries in use, then their count */
static uint64_t hash_factors(const mxh_config_var_t *v, const mxh_config_t *cfg, uint64_t h)
{
    const factors_t *t = v->arg;
    int n              = *CFIELD(int, v, cfg);
    h = mxh_hash_bytes(h, (const char *)cfg + t->size_off, (size_t)n * sizeof(size_t));
    h = mxh_hash_bytes(h, (const char *)cfg + t->f_off, (size_t)n * sizeof(double));
    return mxh_hash_bytes(h, &n, sizeof(n));
}

static int row_index(const mxh_config_var_t *v)
{
    return (int)(v - mxh_config_vars);
}

/* 'key=value;key=value;...': each key sets the variable its cfg_key_t names, as that variable
 * would, except where the variable was set under its own name from this same source. */
static int parse_composite(const mxh_config_var_t *v, mxh_config_t *cfg, const char *s,
                           const char *source)
{
    char buf[MXH_CONFIG_STR_MAX], list[MXH_CONFIG_STR_MAX] = "", sub[128];
    const cfg_key_t *keys = v->arg, *list_key = NULL;
    char *tok, *save = NULL;

    if (strlen(s) >= sizeof(buf))
        return -1;
    strcpy(buf, s);
    snprintf(sub, sizeof(sub), "%s from %s", v->name, source);
    for (tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(tok, '='), *val;
        const cfg_key_t *k;
        while (isspace((unsigned char)*tok))
            tok++;
        if (!*tok)
            continue;
        if (eq)
            *eq = '\0';
        for (k = keys; k->key && (eq ? strcasecmp(k->key, tok) : !(k->flags & KEY_LIST)); k++)
            ;
        if (k->key == NULL)
            return -1;
        val = eq ? eq + 1 : tok;
        if (k->flags & KEY_LIST) { /* applied once, after the loop */
            size_t off = strlen(list);
            if (off + strlen(val) + 2 > sizeof(list))
                return -1;
            snprintf(list + off, sizeof(list) - off, "%s%s", off ? "," : "", val);
            list_key = k;
            continue;
        }
        const mxh_config_var_t *target = find_var(k->var);
        if (k->flags & KEY_COMMA)
            for (char *c = val; *c; c++)
                *c = *c == ',' ? ';' : *c;
        if (cfg->named >> row_index(target) & 1) {
            mxh_debug("%s: %s ignored: %s is set", v->name, k->key, target->name);
            continue;
        }
        if (set_var(cfg, target, val, sub) != MXH_OK)
            return -2;
    }
    if (list_key) {
        const mxh_config_var_t *target = find_var(list_key->var);
        if (cfg->named >> row_index(target) & 1)
            mxh_debug("%s: %s ignored: %s is set", v->name, list_key->key, target->name);
        else if (set_var(cfg, target, list, sub) != MXH_OK)
            return -2;
    }
    return 0;
}

static void print_composite(const mxh_config_var_t *v, const mxh_config_t *cfg, char *buf,
                            size_t len)
{
    size_t off = 0;
    buf[0]     = '\0';
    for (const cfg_key_t *k = v->arg; k->key && off < len; k++) {
        char val[MXH_CONFIG_STR_MAX];
        mxh_config_get_string(cfg, k->var, val, sizeof(val));
        if (k->flags & KEY_COMMA)
            for (char *c = val; *c; c++)
                *c = *c == ';' ? ',' : *c;
        off += (size_t)snprintf(buf + off, len - off, "%s%s=%s", off ? ";" : "", k->key, val);
    }
}

static const mxh_config_type_t t_bool = {parse_bool, print_bool, NULL};
static const mxh_config_type_t t_tri = {parse_tri, print_tri, NULL};
static const mxh_config_type_t t_int = {parse_int, print_int, NULL};
static const mxh_config_type_t t_size = {parse_size, print_size, NULL};
static const mxh_config_type_t t_real = {parse_real, print_real, NULL};
static const mxh_config_type_t t_number = {parse_number, print_number, NULL};
static const mxh_config_type_t t_string = {parse_string, print_string, NULL};
static const mxh_config_type_t t_log_level = {parse_log_level, print_log_level, NULL};
static const mxh_config_type_t t_ramp = {parse_ramp, print_ramp, NULL};
static const mxh_config_type_t t_levels = {parse_levels, print_levels, NULL};
static const mxh_config_type_t t_algo = {parse_algo, print_algo, NULL};
static const mxh_config_type_t t_rails = {parse_rails, print_rails, NULL};
static const mxh_config_type_t t_factors = {parse_factors, print_factors, hash_factors};
static const mxh_config_type_t t_composite = {parse_composite, print_composite, NULL};

/* ---- the table ------------------------------------------------------------------ */

/* A row's flags: PLAN changes the plan (hashed, must agree); USER is shown by mpix_info -c
 * (the others are expert: --all); COST and FRAG record cost_given / frag_given. */
#define PLAN 1
#define USER 2
#define COST (MXH_CONFIG_GIVEN_COST << 2)
#define FRAG (MXH_CONFIG_GIVEN_FRAG << 2)
#define VAR(NAME, DFLT, FLD, TYPE, ARG, FLAGS, DOC)                                           \
    {"MPIX_HIER_" NAME, DFLT, DOC, offsetof(mxh_config_t, FLD),                               \
     sizeof(((mxh_config_t *)0)->FLD), &t_##TYPE, ARG, (FLAGS) & PLAN, ((FLAGS) & USER) != 0, \
     (FLAGS) >> 2}
#define COMPOSITE(NAME, KEYS, FLAGS, DOC) \
    {"MPIX_HIER_" NAME, "", DOC, 0, 0, &t_composite, KEYS, (FLAGS) & PLAN, ((FLAGS) & USER) != 0, 0}
#define RANGE(LO, HI)  (&(const range_t){(LO), (HI)})
#define AUTO(X)        (&(const int){X})
#define TIME           (&(const real_t){REAL_TIME, 0, 0})
#define RATE           (&(const real_t){REAL_RATE, 0, 0})
#define FACTORS(N, F)  (&(const factors_t){offsetof(mxh_config_t, N), offsetof(mxh_config_t, F)})

static const cfg_key_t tune_keys[] = {
    {"algo", "MPIX_HIER_ALGO", KEY_LIST},           {"frag", "MPIX_HIER_FRAG_SIZE", 0},
    {"depth", "MPIX_HIER_PIPELINE_DEPTH", 0},       {"ramp", "MPIX_HIER_PIPELINE_RAMP", 0},
    {"pace", "MPIX_HIER_PIPELINE_PACE", 0},         {"kary", "MPIX_HIER_KARY", 0},
    {"rsag", "MPIX_HIER_RSAG", 0},                  {"spread", "MPIX_HIER_SPREAD", 0},
    {"model", "MPIX_HIER_COST_MODEL", 0},           {"measure", "MPIX_HIER_COST_MEASURE", 0},
    {NULL, NULL, 0}};
static const cfg_key_t net_keys[] = {
    {"node_lat", "MPIX_HIER_COST_NODE_LATENCY", 0}, {"node_bw", "MPIX_HIER_COST_NODE_BW", 0},
    {"net_lat", "MPIX_HIER_COST_NET_LATENCY", 0},   {"net_bw", "MPIX_HIER_COST_NET_BW", 0},
    {"contention", "MPIX_HIER_COST_NET_CONTENTION", 0},
    {"spine_lat", "MPIX_HIER_COST_SPINE_LATENCY", 0},
    {"torus_lat", "MPIX_HIER_COST_TORUS_LATENCY", 0},
    {"torus_bw", "MPIX_HIER_COST_TORUS_BW", 0},     {"reduce_bw", "MPIX_HIER_COST_REDUCE_BW", 0},
    {"copy_bw", "MPIX_HIER_COST_COPY_BW", 0},
    {"lat_factor", "MPIX_HIER_COST_LAT_FACTOR", KEY_COMMA},
    {"bw_factor", "MPIX_HIER_COST_BW_FACTOR", KEY_COMMA},
    {NULL, NULL, 0}};

/* Defaults: H100 + NDR as benchmarks/sim/gen_platform.py describes them (link-exact); the
 * tuning defaults are the simulated best (benchmarks/RESULTS.md). */
const mxh_config_var_t mxh_config_vars[] = {
    VAR("ENABLE", "yes", enable, bool, NULL, PLAN | USER,
        "Use hierarchical algorithms (yes/no); 'no' makes every MPIX_Hier_ call the plain MPI "
        "collective."),
    VAR("LOG_LEVEL", "warn", log_level, log_level, NULL, USER,
        "Log level: error, warn, info, debug, trace; 'info' prints each communicator's "
        "hierarchy once."),
    VAR("HOSTNAME", "", hostname, string, NULL, USER,
        "Node identity of this rank (default: MPI_Get_processor_name refined by "
        "MPI_COMM_TYPE_SHARED); set it per rank to fake several nodes on one machine."),
    VAR("TOPO_FILE", "", topo_file, string, NULL, USER,
        "Slurm topology.conf (tree or block) giving each node's leaf switch; empty: "
        "/etc/slurm/topology.conf if readable, else one leaf."),
    VAR("CLUSTER_FILE", "", cluster_file, string, NULL, USER,
        "Cluster description, lines 'HOSTLIST node=NAME rail=N leaf=NAME' (docs: Cluster "
        "file); its values override discovery and MPIX_HIER_TOPO_FILE."),
    VAR("HWLOC_XML", "", hwloc_xml, string, NULL, 0,
        "hwloc XML export to discover GPUs, NICs and NVLink from (default: HWLOC_XMLFILE, else "
        "the live machine)."),
    VAR("NCCL_TOPO_FILE", "", nccl_topo_file, string, NULL, 0,
        "NCCL topology XML of GPU/NIC/NVLink placement, preferred over hwloc where they "
        "disagree (default: NCCL_TOPO_FILE)."),
    VAR("GPU_BUSID", "", gpu_busid, string, NULL, 0,
        "PCI bus id of this rank's GPU (e.g. 0000:07:00.0); default: CUDA's current device, "
        "else CUDA_VISIBLE_DEVICES / the local index."),
    VAR("GPU_MPS", "auto", gpu_mps, tri, AUTO(-1), 0,
        "Whether the GPU contexts are shared through CUDA MPS (yes/no/auto: the device's "
        "cudaDevAttrMpsEnabled); it sets MPIX_HIER_IPC_MIN's default for shared GPUs."),
    VAR("DISCOVER", "yes", discover, bool, NULL, PLAN,
        "Discover GPUs, NICs and NVLink with hwloc/CUDA/UCX (yes/no; no: rails are local "
        "indices, nodes whole nodes)."),
    VAR("MIN_BYTES", "0", min_bytes, size, NULL, PLAN,
        "Messages smaller than this many bytes per rank (k/m/g suffixes) use the plain MPI "
        "collective."),
    VAR("LEVELS", "island,node,rail,spine", levels_mask, levels, NULL, PLAN,
        "Comma-separated levels the hierarchy may use (node and rail are required); without "
        "spine, leaf switches and torus coordinates are ignored."),
    VAR("PLAN_CACHE_SIZE", "16", plan_cache_size, int, RANGE(1, 4096), 0,
        "Schedules (per collective, count, root and element size) cached per communicator."),
    COMPOSITE("TUNE", tune_keys, PLAN | USER,
              "Tuning in one string, 'key=value;...': algo (or bare coll:algo items), frag, "
              "depth, ramp, pace, kary, rsag, spread, model, measure set MPIX_HIER_ALGO, "
              "_FRAG_SIZE, _PIPELINE_DEPTH, _PIPELINE_RAMP, _PIPELINE_PACE, _KARY, _RSAG, "
              "_SPREAD, _COST_MODEL, _COST_MEASURE; the specific variable, where set from "
              "the same source, wins."),
    VAR("ALGO", "auto", algo, algo, NULL, PLAN,
        "Force algorithms: auto, one of mpi, shm, hier, pipeline for every collective, or "
        "coll:algo items (e.g. 'allreduce:pipeline,bcast:mpi'); one that cannot run degrades "
        "(shm -> hier -> mpi)."),
    VAR("FRAG_SIZE", "8m", frag_size, size, NULL, PLAN | FRAG,
        "Pipelining fragment in bytes of the whole vector (messages of two fragments or more "
        "overlap levels; from 1m on at most 64 fragments); 0 disables pipelining. Unset, a "
        "network measured slower than ~10 Gbit/s per rank caps it at 5 ms of that network."),
    VAR("PIPELINE_DEPTH", "0", pipeline_depth, int, RANGE(0, 1 << 20), PLAN,
        "Fragments in flight at most (0: one per stage of the schedule, more for streamed "
        "and long schedules; 1: no overlap)."),
    VAR("PIPELINE_RAMP", "auto", pipeline_ramp, ramp, NULL, PLAN,
        "How pipelines of fragments of 1m or more fill and drain: k (at most 4) halvings, "
        "linear (pieces of 1/8 .. 7/8), 0 uniform fragments, auto (the cost model picks "
        "linear or 2 per schedule on a flat network, else 2)."),
    VAR("PIPELINE_PACE", "auto", pipeline_pace, tri, AUTO(2), PLAN,
        "Streamed pipelines post a fragment's exchange on a link only once the bytes booked "
        "before it have crossed, by the cost model's link times (yes/no/auto: per schedule, "
        "where predicted faster)."),
    VAR("KARY", "auto", kary, tri, AUTO(2), PLAN,
        "Network levels of more than 16 ranks reduce-scatter and allgather in log_f p "
        "exchanges of at most 7 messages instead of one with every peer (yes/no/auto: per "
        "schedule, by the cost model)."),
    VAR("RSAG", "auto", rsag, tri, AUTO(2), PLAN,
        "Allreduce steps of up to 32 KiB on a network level as reduce-scatter + allgather "
        "instead of radix (yes/no/auto: per schedule, where the cost model predicts it "
        "faster)."),
    VAR("SPREAD", "yes", spread, bool, NULL, PLAN,
        "Small allreduces (up to 4 KiB) on layouts of two network levels or more cross them "
        "in one exchange over every rank's rail (yes/no; no: an allreduce per level)."),
    VAR("SHM", "yes", shm, bool, NULL, PLAN,
        "Shared-memory algorithms between the ranks of a node (yes/no): the single-node "
        "collectives and the node level of hierarchical schedules."),
    VAR("SHM_CHUNK", "128k", shm_chunk, size, RANGE(64, 1L << 30), PLAN,
        "Shared-memory slot per rank in bytes; larger messages are pipelined through it "
        "chunk by chunk."),
    VAR("IPC", "auto", ipc, tri, AUTO(-1), PLAN,
        "Read the device buffers of a node's ranks through CUDA IPC peer mappings and reduce "
        "them on the device instead of staging through host memory (yes/no/auto: when every "
        "rank of the node drives a GPU)."),
    VAR("IPC_MIN", "256k", ipc_min, size, NULL, PLAN,
        "Smallest message (bytes of the whole vector) that tries the device node level "
        "(with auto, 4 MiB where two ranks share a GPU without MPS)."),
    VAR("EXCLUDE_RAILS", "", exclude_rails, rails, NULL, PLAN | USER,
        "Rails whose ranks send nothing on the network: a comma list of rail indices, or the "
        "path of an mpix_doctor --json report (its exclude_rails)."),
    VAR("CHECK", "no", check, bool, NULL, PLAN | USER,
        "Compare count, type signature, op and root across ranks before every collective "
        "(yes/no; one small MPI_Allreduce per call when yes): a mismatch is an error on every "
        "rank naming the ranks that disagree."),
    VAR("METRICS", "yes", metrics, bool, NULL, USER,
        "Count calls, bytes, time, fallbacks and level times per communicator (yes/no; 'no' "
        "saves two clock reads per call)."),
    VAR("METRICS_FILE", "", metrics_file, string, NULL, USER,
        "Write the metrics (Prometheus text) to this file at MPI_Finalize and every "
        "MPIX_HIER_METRICS_INTERVAL s; %r rank, %h host, %p pid, else .rank<r> is appended."),
    VAR("METRICS_INTERVAL", "0", metrics_interval, number, (&(const drange_t){0, 1e9}), USER,
        "Seconds between writes of MPIX_HIER_METRICS_FILE (0: only at MPI_Finalize)."),
    VAR("COST_MODEL", "auto", cost_model, tri, AUTO(2), PLAN,
        "Choose hier or pipeline and the fragment size by the cost model instead of "
        "MPIX_HIER_FRAG_SIZE (yes/no/auto: where the measured network is flat in message "
        "size and MPIX_HIER_FRAG_SIZE is not set)."),
    VAR("COST_MEASURE", "auto", cost_measure, tri, AUTO(2), PLAN,
        "Measure the cost model's latencies, bandwidths and factors when a hierarchy is built "
        "(yes/no/auto: with MPIX_HIER_COST_MODEL on, unless a network parameter is set)."),
    COMPOSITE("NET", net_keys, PLAN | USER,
              "The network in one string, 'key=value;...': node_lat, node_bw, net_lat, net_bw, "
              "contention, spine_lat, torus_lat, torus_bw, reduce_bw, copy_bw, lat_factor, "
              "bw_factor (entries split by ',') set the MPIX_HIER_COST_* variable of that "
              "name; the specific variable, where set from the same source, wins."),
    VAR("COST_NODE_LATENCY", "1us", cost_node_latency, real, TIME, PLAN | COST,
        "Cost model: seconds per exchange inside a node (suffix s, ms, us or ns)."),
    VAR("COST_NODE_BW", "370g", cost_node_bw, real, RATE, PLAN | COST,
        "Cost model: bytes per second of a rank's link inside a node, each direction "
        "(decimal suffix k, m, g, t)."),
    VAR("COST_NET_LATENCY", "2us", cost_net_latency, real, TIME, PLAN | COST,
        "Cost model: seconds per exchange across nodes under one leaf switch."),
    VAR("COST_NET_BW", "48g", cost_net_bw, real, RATE, PLAN | COST,
        "Cost model: bytes per second of one rank's NIC (rail and spine levels)."),
    VAR("COST_SPINE_LATENCY", "4us", cost_spine_latency, real, TIME, PLAN | COST,
        "Cost model: seconds per exchange between leaf groups (the spine level)."),
    VAR("COST_TORUS_LATENCY", "3us", cost_torus_latency, real, TIME, PLAN | COST,
        "Cost model: seconds per exchange between neighbours of a torus of nodes."),
    VAR("COST_TORUS_BW", "0", cost_torus_bw, real, (&(const real_t){REAL_RATE, 0, 1}),
        PLAN | COST,
        "Cost model: bytes per second of one torus link, each direction; 0: the node's NICs "
        "over 2 links per dimension."),
    VAR("COST_NET_CONTENTION", "1", cost_net_contention, real, (&(const real_t){REAL_PLAIN, 1, 0}),
        PLAN, "Cost model: factor (>= 1) on the network levels' byte time."),
    VAR("COST_REDUCE_BW", "1000g", cost_reduce_bw, real, RATE, PLAN,
        "Cost model: bytes per second of a rank's two-input reduction output."),
    VAR("COST_COPY_BW", "1500g", cost_copy_bw, real, RATE, PLAN,
        "Cost model: bytes per second of local copies."),
    VAR("COST_LAT_FACTOR", "", cost_lat_n, factors, FACTORS(cost_lat_size, cost_lat_f),
        PLAN | COST,
        "Cost model: latency factors by message size, 'BYTES:FACTOR;...' (SimGrid's "
        "smpi/lat-factor syntax); empty: 1."),
    VAR("COST_BW_FACTOR", "", cost_bw_n, factors, FACTORS(cost_bw_size, cost_bw_f), PLAN | COST,
        "Cost model: bandwidth factors by message size, the same syntax (smpi/bw-factor); "
        "empty: 1."),
    {NULL, NULL, NULL, 0, 0, NULL, NULL, 0, 0, 0}};

_Static_assert(sizeof(mxh_config_vars) / sizeof(mxh_config_vars[0]) <= 65,
               "mxh_config_t.named holds a bit per row");

/* ---- walking the table ---------------------------------------------------------- */

static const mxh_config_var_t *find_var(const char *name)
{
    for (const mxh_config_var_t *v = mxh_config_vars; v->name; v++)
        if (!strcasecmp(v->name, name))
            return v;
    return NULL;
}

void mxh_config_init_defaults(mxh_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    for (const mxh_config_var_t *v = mxh_config_vars; v->name; v++)
        if (v->size > 0 && v->type->parse(v, cfg, v->dflt, "default") != 0)
            mxh_error("%s: default '%s' does not parse", v->name, v->dflt);
}

static mxh_status_t set_var(mxh_config_t *cfg, const mxh_config_var_t *v, const char *value,
                            const char *source)
{
    int rc = v->type->parse(v, cfg, value, source);
    if (rc == -1)
        mxh_error("%s='%s' (from %s) is malformed: %s", v->name, value, source, v->doc);
    if (rc != 0)
        return MXH_ERR_PARSE;
    if (v->given & MXH_CONFIG_GIVEN_COST)
        cfg->cost_given = 1;
    if (v->given & MXH_CONFIG_GIVEN_FRAG)
        cfg->frag_given = 1;
    return MXH_OK;
}

mxh_status_t mxh_config_set(mxh_config_t *cfg, const char *name, const char *value,
                            const char *source)
{
    const mxh_config_var_t *v = find_var(name);
    uint32_t src;

    if (v == NULL) {
        mxh_error("unknown configuration variable %s (from %s)", name, source);
        return MXH_ERR_CONFIG;
    }
    src = (uint32_t)mxh_hash_bytes(MXH_HASH_INIT, source, strlen(source));
    if (src != cfg->named_src) { /* a new source: its composites may override the last */
        cfg->named     = 0;
        cfg->named_src = src;
    }
    mxh_status_t st = set_var(cfg, v, value, source);
    if (st == MXH_OK)
        cfg->named |= (uint64_t)1 << row_index(v);
    return st;
}

/* An empty value in the environment (MPIX_HIER_FRAG_SIZE= ./prog) leaves a variable of
 * these types unset, as NCCL reads its variables; where empty has a meaning of its own
 * (a file, a list, factors) it is that. */
static int empty_is_unset(const mxh_config_type_t *t)
{
    return t == &t_bool || t == &t_tri || t == &t_int || t == &t_size || t == &t_real ||
           t == &t_number || t == &t_log_level || t == &t_ramp;
}

mxh_status_t mxh_config_apply_env(mxh_config_t *cfg, int warn_unknown)
{
    for (char **e = environ; e && *e; e++) {
        const char *eq;
        char name[128];

        if (strncmp(*e, "MPIX_HIER_", 10) != 0)
            continue;
        eq = strchr(*e, '=');
        if (eq == NULL || (size_t)(eq - *e) >= sizeof(name))
            continue;
        memcpy(name, *e, (size_t)(eq - *e));
        name[eq - *e] = '\0';
        if (!strncmp(name, "MPIX_HIER_SIM_", 14))
            continue; /* the SimGrid cost model's own (src/sim/sim.h) */
        if (!strcmp(name, "MPIX_HIER_LIBRARY"))
            continue; /* the Python package's: which libmpixhier it loads (python/mpix_hier) */
        if (!strncmp(name, "MPIX_HIER_PMPI", 14))
            continue; /* the drop-in library's own (mpix/pmpi.c), read there */
        const mxh_config_var_t *v = find_var(name);
        if (v == NULL) {
            if (warn_unknown)
                mxh_warn("unknown environment variable %s ignored (the README lists the "
                         "MPIX_HIER_* variables)", name);
            continue;
        }
        if (eq[1] == '\0' && empty_is_unset(v->type))
            continue;
        mxh_status_t st = mxh_config_set(cfg, name, eq + 1, "environment");
        if (st != MXH_OK)
            return st;
    }
    return MXH_OK;
}

void mxh_config_get_string(const mxh_config_t *cfg, const char *name, char *buf, size_t len)
{
    const mxh_config_var_t *v = find_var(name);

    buf[0] = '\0';
    if (v != NULL)
        v->type->print(v, cfg, buf, len);
}

uint64_t mxh_hash_bytes(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* The fields of the plan rows, and the flags those rows set (the cost model's 'auto'
 * reads them). The topology file need not agree: leaf names travel in the records. */
uint64_t mxh_config_plan_hash(const mxh_config_t *cfg)
{
    uint64_t h = MXH_HASH_INIT;

    for (const mxh_config_var_t *v = mxh_config_vars; v->name; v++) {
        if (!v->plan || v->size == 0)
            continue;
        h = v->type->hash ? v->type->hash(v, cfg, h)
                          : mxh_hash_bytes(h, (const char *)cfg + v->offset, v->size);
    }
    h = mxh_hash_bytes(h, &cfg->cost_given, sizeof(cfg->cost_given));
    return mxh_hash_bytes(h, &cfg->frag_given, sizeof(cfg->frag_given));
}

void mxh_config_plan_names(char *buf, size_t len)
{
    size_t off = 0;
    if (len)
        buf[0] = '\0';
    for (const mxh_config_var_t *v = mxh_config_vars; v->name; v++)
        if (v->plan && v->size != 0)
            mxh_str_put(buf, len, &off, "%s%s", off ? ", " : "", v->name);
}
