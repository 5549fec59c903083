/* Cluster description file parser (see cluster_file.h for the syntax). */
#include "topo/cluster_file.h"

#include "topo/record.h"
#include "topo/topo_conf.h"
#include "util/log.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { KEY_NODE, KEY_RAIL, KEY_LEAF, KEY_TORUS, KEY_COUNT };
static const char *const key_names[KEY_COUNT] = {"node", "rail", "leaf", "torus"};

typedef struct parser {
    const char           *src;
    mxh_cluster_file_t   *cf;
    size_t                cap;
    mxh_hostlist_budget_t budget; /* of every host list and value of the file */
} parser_t;

static void host_free(mxh_cluster_host_t *h)
{
    free(h->host);
    free(h->node);
    free(h->leaf);
}

void mxh_cluster_file_destroy(mxh_cluster_file_t *cf)
{
    if (cf == NULL)
        return;
    for (int i = 0; i < cf->nhosts; i++)
        host_free(&cf->hosts[i]);
    free(cf->hosts);
    free(cf->source);
    free(cf);
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d != NULL)
        memcpy(d, s, n);
    return d;
}

/* rail value: a decimal integer in [0, INT_MAX] */
static int parse_rail(const char *s, int *out)
{
    char *end;
    long v;

    if (!isdigit((unsigned char)s[0]))
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end != '\0' || v < 0 || v > INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

/* torus value: 1 to 3 decimal integers in [0, 32767] (they go into int16_t record
 * fields) joined by 'x'. Returns the number of dimensions, or -1. */
static int parse_torus(const char *s, int coord[3])
{
    int nd = 0;
    for (;;) {
        char *end;
        long v;
        if (nd == 3 || !isdigit((unsigned char)s[0]))
            return -1;
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || v < 0 || v > 32767 || (*end != '\0' && *end != 'x'))
            return -1;
        coord[nd++] = (int)v;
        if (*end == '\0')
            return nd;
        s = end + 1;
    }
}

/* The host list of one line and the values of its keys. */
typedef struct line_vals {
    char **hosts;
    int    nhosts;
    char **vals[KEY_COUNT];
    int    nvals[KEY_COUNT], given[KEY_COUNT];
} line_vals_t;

/* Checks every value of key @k (length, and the syntax of rail and torus). */
static mxh_status_t check_values(const char *src, int lineno, int k, char **vals, int nvals)
{
    for (int i = 0; i < nvals; i++) {
        size_t len = strlen(vals[i]), max = k == KEY_NODE    ? MXH_NODE_NAME_MAX
                                            : k == KEY_LEAF  ? MXH_LEAF_NAME_MAX
                                            : k == KEY_TORUS ? 24
                                                             : 16;
        int r, tc[3];
        if (len >= max) {
            mxh_error("%s:%d: %s '%s' is longer than %zu characters", src, lineno,
                      key_names[k], vals[i], max - 1);
            return MXH_ERR_PARSE;
        }
        if (k == KEY_RAIL && parse_rail(vals[i], &r) != 0) {
            mxh_error("%s:%d: rail '%s' is not an integer >= 0", src, lineno, vals[i]);
            return MXH_ERR_PARSE;
        }
        if (k == KEY_TORUS && parse_torus(vals[i], tc) < 0) {
            mxh_error("%s:%d: torus '%s' is not a coordinate XxYxZ (1 to 3 integers in "
                      "[0, 32767])", src, lineno, vals[i]);
            return MXH_ERR_PARSE;
        }
    }
    return MXH_OK;
}

/* One KEY=VALUE token @tok (modified in place): a known key, given once, whose value
 * expands to 1 value or one per host. */
static mxh_status_t parse_key(parser_t *ps, int lineno, char *tok, line_vals_t *lv)
{
    const char *src = ps->src;
    char *eq = strchr(tok, '=');
    int k;
    mxh_status_t st;

    if (eq == NULL) {
        mxh_error("%s:%d: '%s' is not KEY=VALUE (keys: node, rail, leaf, torus)", src, lineno, tok);
        return MXH_ERR_PARSE;
    }
    *eq = '\0';
    for (k = 0; k < KEY_COUNT && strcasecmp(tok, key_names[k]) != 0; k++)
        ;
    if (k == KEY_COUNT) {
        mxh_error("%s:%d: unknown key '%s' (keys: node, rail, leaf, torus)", src, lineno, tok);
        return MXH_ERR_PARSE;
    }
    if (lv->given[k]) {
        mxh_error("%s:%d: key '%s' given twice", src, lineno, key_names[k]);
        return MXH_ERR_PARSE;
    }
    lv->given[k] = 1;
    if (eq[1] == '\0') {
        mxh_error("%s:%d: empty value for '%s'", src, lineno, key_names[k]);
        return MXH_ERR_PARSE;
    }
    st = mxh_hostlist_expand_in(eq + 1, &ps->budget, src, lineno, &lv->vals[k], &lv->nvals[k]);
    if (st != MXH_OK && ps->budget.exhausted)
        return st; /* the limit was said */
    if (st != MXH_OK || lv->nvals[k] == 0) {
        mxh_error("%s:%d: malformed %s value '%s'", src, lineno, key_names[k], eq + 1);
        return st == MXH_ERR_NO_MEMORY ? st : MXH_ERR_PARSE;
    }
    if (lv->nvals[k] != 1 && lv->nvals[k] != lv->nhosts) {
        mxh_error("%s:%d: %s value '%s' gives %d values for %d hosts (give 1 or %d)", src,
                  lineno, key_names[k], eq + 1, lv->nvals[k], lv->nhosts, lv->nhosts);
        return MXH_ERR_PARSE;
    }
    return check_values(src, lineno, k, lv->vals[k], lv->nvals[k]);
}

/* Room in ps->cf->hosts for @more hosts. */
static mxh_status_t hosts_reserve(parser_t *ps, int lineno, int more)
{
    size_t need = (size_t)ps->cf->nhosts + (size_t)more;

    if (need > (size_t)INT_MAX) { /* cannot happen: the budget holds fewer names */
        mxh_error("%s:%d: more than %d hosts in the file", ps->src, lineno, INT_MAX);
        return MXH_ERR_PARSE;
    }
    if (need > ps->cap) {
        size_t cap = ps->cap ? ps->cap : 64;
        while (cap < need)
            cap *= 2;
        mxh_cluster_host_t *h = realloc(ps->cf->hosts, cap * sizeof(*h));
        if (h == NULL) {
            mxh_error("%s:%d: out of memory", ps->src, lineno);
            return MXH_ERR_NO_MEMORY;
        }
        ps->cf->hosts = h;
        ps->cap       = cap;
    }
    return MXH_OK;
}

/* The value of key @k for host @i of the line (one value serves every host). */
static const char *host_value(const line_vals_t *lv, int k, int i)
{
    return lv->vals[k][lv->nvals[k] == 1 ? 0 : i];
}

/* Appends the line's hosts to ps->cf, each with its values (moving the host names). */
static mxh_status_t add_hosts(parser_t *ps, int lineno, line_vals_t *lv)
{
    mxh_status_t st = hosts_reserve(ps, lineno, lv->nhosts);

    if (st != MXH_OK)
        return st;
    for (int i = 0; i < lv->nhosts; i++) {
        mxh_cluster_host_t *h = &ps->cf->hosts[ps->cf->nhosts];
        memset(h, 0, sizeof(*h));
        h->rail = -1;
        h->line = lineno;
        if (strlen(lv->hosts[i]) >= MXH_NODE_NAME_MAX && !lv->given[KEY_NODE]) {
            mxh_error("%s:%d: host '%s' is longer than %d characters (give node=)", ps->src,
                      lineno, lv->hosts[i], MXH_NODE_NAME_MAX - 1);
            return MXH_ERR_PARSE;
        }
        h->host      = lv->hosts[i];
        lv->hosts[i] = NULL;
        h->node      = dup_str(lv->given[KEY_NODE] ? host_value(lv, KEY_NODE, i) : h->host);
        if (lv->given[KEY_LEAF])
            h->leaf = dup_str(host_value(lv, KEY_LEAF, i));
        if (lv->given[KEY_RAIL])
            parse_rail(host_value(lv, KEY_RAIL, i), &h->rail);
        if (lv->given[KEY_TORUS])
            h->tndims = parse_torus(host_value(lv, KEY_TORUS, i), h->tcoord);
        ps->cf->nhosts++;
        if (h->node == NULL || (lv->given[KEY_LEAF] && h->leaf == NULL)) {
            mxh_error("%s:%d: out of memory", ps->src, lineno);
            return MXH_ERR_NO_MEMORY;
        }
    }
    return MXH_OK;
}

/* One logical line: HOSTLIST key=value...; @line is modified in place. */
static mxh_status_t parse_line(parser_t *ps, char *line, int lineno)
{
    char *tok, *save = NULL;
    line_vals_t lv = {0};
    mxh_status_t st = MXH_OK;
    const char *src = ps->src;

    tok = strtok_r(line, " \t\r\v\f", &save);
    if (tok == NULL)
        return MXH_OK; /* blank */
    if (strchr(tok, '=') != NULL) {
        mxh_error("%s:%d: expected a host list first, got '%s'", src, lineno, tok);
        return MXH_ERR_PARSE;
    }
    st = mxh_hostlist_expand_in(tok, &ps->budget, src, lineno, &lv.hosts, &lv.nhosts);
    if (st != MXH_OK && ps->budget.exhausted)
        goto cleanup; /* the limit was said */
    if (st != MXH_OK || lv.nhosts == 0) {
        mxh_error("%s:%d: malformed host list '%s'", src, lineno, tok);
        st = st == MXH_ERR_NO_MEMORY ? st : MXH_ERR_PARSE;
        goto cleanup;
    }
    while ((tok = strtok_r(NULL, " \t\r\v\f", &save)) != NULL)
        if ((st = parse_key(ps, lineno, tok, &lv)) != MXH_OK)
            goto cleanup;
    st = add_hosts(ps, lineno, &lv);

cleanup:
    mxh_hostlist_free(lv.hosts, lv.nhosts);
    for (int k = 0; k < KEY_COUNT; k++)
        mxh_hostlist_free(lv.vals[k], lv.nvals[k]);
    return st;
}

static int cmp_host(const void *a, const void *b)
{
    const mxh_cluster_host_t *x = a, *y = b;
    int c = strcmp(x->host, y->host);
    if (c != 0)
        return c;
    return x->line < y->line ? -1 : x->line > y->line;
}

mxh_status_t mxh_cluster_file_parse_string(const char *text, const char *source,
                                           mxh_cluster_file_t **cf_p)
{
    parser_t ps;
    mxh_status_t st = MXH_OK;
    char *buf = NULL;
    int lineno = 0;

    if (cf_p == NULL || text == NULL) {
        mxh_error("mxh_cluster_file_parse_string: NULL %s", cf_p == NULL ? "cf_p" : "text");
        return MXH_ERR_INVALID_PARAM;
    }
    *cf_p = NULL;
    if (source == NULL)
        source = "(cluster file)";
    memset(&ps, 0, sizeof(ps));
    ps.src    = source;
    ps.budget = (mxh_hostlist_budget_t)MXH_HOSTLIST_BUDGET_INIT;
    ps.cf     = calloc(1, sizeof(*ps.cf));
    buf    = dup_str(text);
    if (ps.cf == NULL || buf == NULL || (ps.cf->source = dup_str(source)) == NULL) {
        mxh_error("%s: out of memory", source);
        st = MXH_ERR_NO_MEMORY;
        goto out;
    }
    for (char *line = buf; line != NULL && st == MXH_OK;) {
        char *nl = strchr(line, '\n'), *hash;
        if (nl != NULL)
            *nl = '\0';
        lineno++;
        if ((hash = strchr(line, '#')) != NULL)
            *hash = '\0';
        st   = parse_line(&ps, line, lineno);
        line = nl ? nl + 1 : NULL;
    }
    if (st != MXH_OK)
        goto out;
    if (ps.cf->nhosts > 1) /* an empty file has no array: qsort(NULL, 0) is undefined */
        qsort(ps.cf->hosts, (size_t)ps.cf->nhosts, sizeof(*ps.cf->hosts), cmp_host);
    for (int i = 1; i < ps.cf->nhosts; i++) {
        if (strcmp(ps.cf->hosts[i].host, ps.cf->hosts[i - 1].host) == 0) {
            mxh_error("%s:%d: host '%s' is already listed on line %d", source,
                      ps.cf->hosts[i].line, ps.cf->hosts[i].host, ps.cf->hosts[i - 1].line);
            st = MXH_ERR_PARSE;
            goto out;
        }
    }
    *cf_p = ps.cf;
    ps.cf = NULL;
out:
    free(buf);
    mxh_cluster_file_destroy(ps.cf);
    return st;
}

mxh_status_t mxh_cluster_file_parse_file(const char *path, mxh_cluster_file_t **cf_p)
{
    mxh_status_t st = MXH_OK;
    FILE *f = NULL;
    char *text = NULL;
    size_t len = 0;

    if (cf_p == NULL || path == NULL) {
        mxh_error("mxh_cluster_file_parse_file: NULL %s", cf_p == NULL ? "cf_p" : "path");
        return MXH_ERR_INVALID_PARAM;
    }
    *cf_p = NULL;
    f = fopen(path, "rb");
    if (f == NULL) {
        mxh_error("%s: cannot open cluster file: %s", path, strerror(errno));
        return MXH_ERR_IO;
    }
    st = mxh_topo_read_text(f, path, "cluster file", MXH_CLUSTER_FILE_MAX_BYTES, &text, &len);
    if (st != MXH_OK)
        goto out;
    if (memchr(text, '\0', len) != NULL) {
        mxh_error("%s: cluster file contains a NUL byte (not a text file?)", path);
        st = MXH_ERR_PARSE;
        goto out;
    }
    st = mxh_cluster_file_parse_string(text, path, cf_p);
out:
    free(text);
    if (f != NULL)
        fclose(f);
    return st;
}

/* Length of the short name (up to the first '.'); 0 when the name has no usable
 * short form (no dot, empty short part, or a dotted IPv4-like number). */
static size_t short_len(const char *name)
{
    const char *dot = strchr(name, '.');
    if (dot == NULL || dot == name)
        return 0;
    for (const char *q = name; *q; q++)
        if (!((*q >= '0' && *q <= '9') || *q == '.'))
            return (size_t)(dot - name);
    return 0;
}

const mxh_cluster_host_t *mxh_cluster_file_find(const mxh_cluster_file_t *cf, const char *host)
{
    const mxh_cluster_host_t *hit;
    size_t hlen;
    int host_dotted;

    if (cf == NULL || host == NULL || host[0] == '\0' || cf->nhosts == 0)
        return NULL;
    /* exact: the entries are sorted by name and unique */
    size_t lo = 0, hi = (size_t)cf->nhosts;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(cf->hosts[mid].host, host);
        if (c == 0)
            return &cf->hosts[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* short names: "a.b" matches "a", "a" matches "a.b", "a.b" matches "a.c"; the
     * first match in name order wins */
    hit         = NULL;
    hlen        = short_len(host);
    host_dotted = hlen > 0;
    if (!host_dotted) {
        if (strchr(host, '.') != NULL)
            return NULL; /* ".x" or an IPv4 address: exact match only */
        hlen = strlen(host);
    }
    for (int i = 0; i < cf->nhosts && hit == NULL; i++) {
        const char *name = cf->hosts[i].host;
        size_t nlen = short_len(name);
        if (nlen == 0) {
            if (!host_dotted || strchr(name, '.') != NULL)
                continue;
            nlen = strlen(name);
        }
        if (nlen == hlen && strncmp(name, host, hlen) == 0)
            hit = &cf->hosts[i];
    }
    return hit;
}
