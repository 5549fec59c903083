/* Slurm topology.conf parser (topology/tree and topology/block syntax) and
 * Slurm hostlist expansion.
 *
 * Syntax accepted (as Slurm's own parser): '#' starts a comment that runs to
 * the end of the line; a line whose last non-blank character is an odd number
 * of backslashes continues on the next line (the backslash is removed and the
 * two lines are joined without a separator); a record is a list of KEY=VALUE
 * tokens separated by blanks, keys are case-insensitive:
 *   SwitchName=NAME [Nodes=HOSTLIST] [Switches=HOSTLIST] [LinkSpeed=ANY]
 *   BlockName=NAME [Nodes=HOSTLIST]
 *   BlockSizes=N[,N...]                  (accepted and ignored)
 * The first token of a record names it; tree and block records may not be
 * mixed in one file.
 *
 * Tree checks (after every record is read): every Switches= name must be
 * defined; a switch may not list itself; the Switches= graph must be acyclic,
 * with one exception, a "back-edge": when A lists B and B also lists A (the
 * raw output of SHARP's topology dump lists the top switch under every spine
 * while the top switch lists the spines), the edge whose child is farther from
 * the nodes is dropped with a warning. "Farther" uses the shortest path, along
 * Switches= edges, from the switch down to a switch that has Nodes=; if both
 * ends are at the same distance the mutual listing is left alone and is
 * reported as a cycle. A dropped edge is removed from the child_names and
 * children of the switch that listed it. Parent = first switch, in file order,
 * whose (remaining) Switches= lists the switch.
 *
 * Nodes: a host may appear once in the whole file (exact-name comparison). */
#include "topo/topo_conf.h"
#include "util/log.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define TOK_SHOW 160 /* at most this many characters of a token in messages */
#define NUM_MAX_DIGITS 18 /* a range bound has at most this many digits */

/* ------------------------------------------------------------------------ */
/* small helpers                                                            */

static char *xstrndup(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d == NULL)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* Grow *arr (elements of @size bytes) so that it holds at least @need. */
static mxh_status_t grow(void **arr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return MXH_OK;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / size)
            return MXH_ERR_NO_MEMORY;
        ncap *= 2;
    }
    void *p = realloc(*arr, ncap * size);
    if (p == NULL)
        return MXH_ERR_NO_MEMORY;
    *arr = p;
    *cap = ncap;
    return MXH_OK;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Characters that can never be part of a host or switch name. */
static int bad_name_char(unsigned char c)
{
    return c < 0x20 || c == 0x7f || c == ' ' || c == '=' || c == '\\' || c == '"' || c == '\'' ||
           c == '#';
}

/* ------------------------------------------------------------------------ */
/* string -> int hash map (keys are borrowed, not copied)                   */

typedef struct strmap {
    const char **keys;
    int         *vals;
    size_t       cap; /* power of two, or 0 */
    size_t       n;
} strmap_t;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static int strmap_get(const strmap_t *m, const char *key)
{
    if (m->cap == 0)
        return -1;
    size_t i = (size_t)hash_str(key) & (m->cap - 1);
    while (m->keys[i] != NULL) {
        if (strcmp(m->keys[i], key) == 0)
            return m->vals[i];
        i = (i + 1) & (m->cap - 1);
    }
    return -1;
}

static void strmap_insert_nogrow(strmap_t *m, const char *key, int val)
{
    size_t i = (size_t)hash_str(key) & (m->cap - 1);
    while (m->keys[i] != NULL)
        i = (i + 1) & (m->cap - 1);
    m->keys[i] = key;
    m->vals[i] = val;
    m->n++;
}

/* Insert a key known to be absent. */
static mxh_status_t strmap_put(strmap_t *m, const char *key, int val)
{
    if ((m->n + 1) * 2 > m->cap) {
        strmap_t nm = {NULL, NULL, m->cap ? m->cap * 2 : 64, 0};
        nm.keys = calloc(nm.cap, sizeof(*nm.keys));
        nm.vals = malloc(nm.cap * sizeof(*nm.vals));
        if (nm.keys == NULL || nm.vals == NULL) {
            free(nm.keys);
            free(nm.vals);
            return MXH_ERR_NO_MEMORY;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i] != NULL)
                strmap_insert_nogrow(&nm, m->keys[i], m->vals[i]);
        free(m->keys);
        free(m->vals);
        *m = nm;
    }
    strmap_insert_nogrow(m, key, val);
    return MXH_OK;
}

static void strmap_free(strmap_t *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof(*m));
}

/* ------------------------------------------------------------------------ */
/* hostlist expansion                                                       */

typedef struct hl_range {
    unsigned long long lo, hi;
    int                width; /* digits of the lower bound as written */
} hl_range_t;

typedef struct hl_part {
    const char *lit;     /* literal text, or NULL for a bracket group */
    size_t      lit_len;
    size_t      first;   /* group: index of its first range */
    size_t      nranges; /* group: number of ranges */
} hl_part_t;

/* Context of an error message: "SOURCE:LINE: bad hostlist 'EXPR': " or
 * "hostlist 'EXPR': " for the public function. */
typedef struct hl_ctx {
    const char *src;
    int         line;
    const char *expr;
} hl_ctx_t;

#define HL_ERR(ctx, fmt, ...)                                                            \
    do {                                                                                 \
        if ((ctx)->src != NULL)                                                          \
            mxh_error("%s:%d: bad hostlist '%.*s': " fmt, (ctx)->src, (ctx)->line,       \
                      TOK_SHOW, (ctx)->expr, __VA_ARGS__);                               \
        else                                                                             \
            mxh_error("hostlist '%.*s': " fmt, TOK_SHOW, (ctx)->expr, __VA_ARGS__);      \
    } while (0)

/* The error for an expansion beyond @b's limits (@bytes: the byte limit, else the names). */
static mxh_status_t hl_over(const hl_ctx_t *ctx, mxh_hostlist_budget_t *b, int bytes)
{
    char what[64];

    if (bytes)
        snprintf(what, sizeof(what), "%zu MiB of names", b->max_bytes >> 20);
    else
        snprintf(what, sizeof(what), "%zu names", b->max_names);
    if (ctx->src != NULL)
        mxh_error("%s:%d: hostlist '%.*s' expands to more than %s (the limit of one file's "
                  "hostlists together: %zu names or %zu MiB, whichever first)",
                  ctx->src, ctx->line, TOK_SHOW, ctx->expr, what, b->max_names,
                  b->max_bytes >> 20);
    else
        mxh_error("hostlist '%.*s' expands to more than %s (limit: %zu names or %zu MiB, "
                  "whichever first)", TOK_SHOW, ctx->expr, what, b->max_names, b->max_bytes >> 20);
    b->exhausted = 1;
    return MXH_ERR_PARSE;
}

/* Parse a bound of [s, e): digits only, at most NUM_MAX_DIGITS. */
static mxh_status_t hl_number(const hl_ctx_t *ctx, const char *s, const char *e,
                              unsigned long long *v)
{
    if (s == e) {
        HL_ERR(ctx, "empty number in range at offset %d", (int)(s - ctx->expr));
        return MXH_ERR_PARSE;
    }
    if (e - s > NUM_MAX_DIGITS) {
        HL_ERR(ctx, "number '%.*s' has more than %d digits", (int)(e - s), s, NUM_MAX_DIGITS);
        return MXH_ERR_PARSE;
    }
    unsigned long long x = 0;
    for (const char *p = s; p < e; p++) {
        if (*p < '0' || *p > '9') {
            HL_ERR(ctx, "'%.*s' in a bracket range is not a number", (int)(e - s), s);
            return MXH_ERR_PARSE;
        }
        x = x * 10 + (unsigned long long)(*p - '0');
    }
    *v = x;
    return MXH_OK;
}

/* Parse the inside of one bracket group [s, e) ("0-3,7") into ranges. */
static mxh_status_t hl_group(const hl_ctx_t *ctx, const char *s, const char *e,
                             hl_range_t **ranges, size_t *nranges, size_t *cap,
                             unsigned long long *card)
{
    mxh_status_t st;
    unsigned long long total = 0;

    if (s == e) {
        HL_ERR(ctx, "empty brackets at offset %d", (int)(s - ctx->expr) - 1);
        return MXH_ERR_PARSE;
    }
    const char *item = s;
    for (;;) {
        const char *end = item;
        while (end < e && *end != ',')
            end++;
        if (end == item) {
            HL_ERR(ctx, "empty range item at offset %d", (int)(item - ctx->expr));
            return MXH_ERR_PARSE;
        }
        const char *dash = memchr(item, '-', (size_t)(end - item));
        hl_range_t r;
        st = hl_number(ctx, item, dash ? dash : end, &r.lo);
        if (st != MXH_OK)
            return st;
        r.width = (int)((dash ? dash : end) - item);
        if (dash != NULL) {
            st = hl_number(ctx, dash + 1, end, &r.hi);
            if (st != MXH_OK)
                return st;
            if (r.hi < r.lo) {
                HL_ERR(ctx, "range '%.*s': upper bound below lower bound", (int)(end - item),
                       item);
                return MXH_ERR_PARSE;
            }
        } else {
            r.hi = r.lo;
        }
        if ((st = grow((void **)ranges, cap, *nranges + 1, sizeof(**ranges))) != MXH_OK)
            return st;
        (*ranges)[(*nranges)++] = r;
        unsigned long long t = r.hi - r.lo + 1;
        total = total > ULLONG_MAX - t ? ULLONG_MAX : total + t; /* saturate */
        if (end == e)
            break;
        item = end + 1;
        if (item == e) {
            HL_ERR(ctx, "empty range item at offset %d", (int)(item - ctx->expr));
            return MXH_ERR_PARSE;
        }
    }
    *card = total;
    return MXH_OK;
}

/* The working arrays of one hostlist expansion. */
typedef struct hl_work {
    char              **names;
    size_t              count, names_cap;
    hl_part_t          *parts; /* the current element's parts */
    size_t              nparts, parts_cap;
    hl_range_t         *ranges; /* the ranges of its bracket groups */
    size_t              nranges, ranges_cap;
    size_t             *pos_r;    /* odometer: current range of each part */
    unsigned long long *pos_v;    /* odometer: current value of each part */
    char               *name;     /* the name being written */
    size_t              name_len; /* room for the element's longest name */
    unsigned long long  card;     /* names of the element */
} hl_work_t;

/* The end of the element at @elem into @end_p: a ',' outside brackets, or the end of the
 * text. Brackets may not nest and must close inside the element, which is not empty. */
static mxh_status_t hl_element_end(const hl_ctx_t *ctx, const char *elem, const char **end_p)
{
    const char *e = elem;
    int depth = 0;

    while (*e && !(*e == ',' && depth == 0)) {
        if (*e == '[') {
            if (depth > 0) {
                HL_ERR(ctx, "nested '[' at offset %d", (int)(e - ctx->expr));
                return MXH_ERR_PARSE;
            }
            depth = 1;
        } else if (*e == ']') {
            if (depth == 0) {
                HL_ERR(ctx, "unbalanced ']' at offset %d", (int)(e - ctx->expr));
                return MXH_ERR_PARSE;
            }
            depth = 0;
        }
        e++;
    }
    if (depth != 0) {
        HL_ERR(ctx, "unclosed '[' in '%.*s'", (int)(e - elem), elem);
        return MXH_ERR_PARSE;
    }
    if (e == elem) {
        HL_ERR(ctx, "empty element at offset %d", (int)(elem - ctx->expr));
        return MXH_ERR_PARSE;
    }
    *end_p = e;
    return MXH_OK;
}

/* Splits the element [elem, e) into literal parts and bracket groups and counts its names
 * (w->card), which must fit in what @b has left (and in an int with w->count). */
static mxh_status_t hl_split(const hl_ctx_t *ctx, hl_work_t *w, const char *elem,
                             const char *e, mxh_hostlist_budget_t *b)
{
    mxh_status_t st;
    size_t max_names = b->names < b->max_names ? b->max_names - b->names : 0;

    if (max_names > (size_t)INT_MAX - w->count)
        max_names = (size_t)INT_MAX - w->count;

    w->nparts   = 0;
    w->nranges  = 0;
    w->name_len = 1;
    w->card     = 1;
    for (const char *q = elem; q < e;) {
        if (grow((void **)&w->parts, &w->parts_cap, w->nparts + 1, sizeof(*w->parts)) != MXH_OK)
            return MXH_ERR_NO_MEMORY;
        hl_part_t *pt = &w->parts[w->nparts++];
        if (*q == '[') {
            const char *close = memchr(q, ']', (size_t)(e - q)); /* exists: checked */
            unsigned long long gc = 0;
            pt->lit     = NULL;
            pt->lit_len = 0;
            pt->first   = w->nranges;
            st = hl_group(ctx, q + 1, close, &w->ranges, &w->nranges, &w->ranges_cap, &gc);
            if (st != MXH_OK)
                return st;
            pt->nranges = w->nranges - pt->first;
            w->name_len += NUM_MAX_DIGITS; /* a number is printed in at most 18 chars */
            if (gc > max_names || w->card > max_names / gc)
                w->card = (unsigned long long)max_names + 1; /* too many: reported below */
            else
                w->card *= gc;
            q = close + 1;
        } else {
            const char *l = q;
            while (l < e && *l != '[')
                l++;
            pt->lit     = q;
            pt->lit_len = (size_t)(l - q);
            w->name_len += pt->lit_len;
            q = l;
        }
    }
    if (w->card > max_names)
        return hl_over(ctx, b, 0);
    return MXH_OK;
}

/* Writes the element's name at the odometer's position into w->name; returns its length. */
static size_t hl_format(hl_work_t *w)
{
    size_t len = 0;

    for (size_t k = 0; k < w->nparts; k++) {
        const hl_part_t *pt = &w->parts[k];
        if (pt->lit != NULL) {
            memcpy(w->name + len, pt->lit, pt->lit_len);
            len += pt->lit_len;
        } else {
            const hl_range_t *r = &w->ranges[pt->first + w->pos_r[k]];
            len += (size_t)snprintf(w->name + len, w->name_len - len, "%0*llu", r->width,
                                    w->pos_v[k]);
        }
    }
    w->name[len] = '\0';
    return len;
}

/* Advances the odometer over the groups: the rightmost group varies fastest. */
static void hl_advance(hl_work_t *w)
{
    for (size_t k = w->nparts; k-- > 0;) {
        const hl_part_t *pt = &w->parts[k];
        if (pt->lit != NULL)
            continue;
        const hl_range_t *r = &w->ranges[pt->first + w->pos_r[k]];
        if (w->pos_v[k] < r->hi) {
            w->pos_v[k]++;
            return;
        }
        if (w->pos_r[k] + 1 < pt->nranges) {
            w->pos_r[k]++;
            w->pos_v[k] = w->ranges[pt->first + w->pos_r[k]].lo;
            return;
        }
        w->pos_r[k] = 0;
        w->pos_v[k] = w->ranges[pt->first].lo; /* carry into the part on the left */
    }
}

/* Appends the w->card names of the split element to w->names, each paid from @b. */
static mxh_status_t hl_emit(const hl_ctx_t *ctx, hl_work_t *w, mxh_hostlist_budget_t *b)
{
    free(w->pos_r);
    free(w->pos_v);
    w->pos_r = calloc(w->nparts, sizeof(*w->pos_r));
    w->pos_v = calloc(w->nparts, sizeof(*w->pos_v));
    free(w->name);
    w->name = malloc(w->name_len);
    if (w->pos_r == NULL || w->pos_v == NULL || w->name == NULL)
        return MXH_ERR_NO_MEMORY;
    for (size_t k = 0; k < w->nparts; k++)
        if (w->parts[k].lit == NULL)
            w->pos_v[k] = w->ranges[w->parts[k].first].lo;
    if (grow((void **)&w->names, &w->names_cap, w->count + (size_t)w->card, sizeof(*w->names)) !=
        MXH_OK)
        return MXH_ERR_NO_MEMORY;
    for (unsigned long long n = 0; n < w->card; n++) {
        size_t len = hl_format(w), cost = len + 1 + MXH_HOSTLIST_NAME_OVERHEAD;
        if (b->bytes > b->max_bytes || cost > b->max_bytes - b->bytes)
            return hl_over(ctx, b, 1);
        if ((w->names[w->count] = xstrndup(w->name, len)) == NULL)
            return MXH_ERR_NO_MEMORY;
        w->count++;
        b->names++;
        b->bytes += cost;
        hl_advance(w);
    }
    return MXH_OK;
}

/* Expands @expr paying from @b; a failed expansion gives back what it spent. */
static mxh_status_t hl_expand(const char *expr, mxh_hostlist_budget_t *b, const char *src,
                              int line, char ***names_p, int *count_p)
{
    mxh_status_t st = MXH_OK;
    hl_ctx_t ctx = {src, line, expr};
    hl_work_t w = {0};
    const char *elem = expr, *e;
    size_t names0 = b->names, bytes0 = b->bytes;
    if (expr[0] == '\0') {
        HL_ERR(&ctx, "%s", "empty hostlist");
        st = MXH_ERR_PARSE;
        goto out;
    }
    for (const char *q = expr; *q; q++) {
        if (bad_name_char((unsigned char)*q)) {
            HL_ERR(&ctx, "invalid character 0x%02x at offset %d", (unsigned char)*q,
                   (int)(q - expr));
            st = MXH_ERR_PARSE;
            goto out;
        }
    }
    for (;;) {
        if ((st = hl_element_end(&ctx, elem, &e)) != MXH_OK ||
            (st = hl_split(&ctx, &w, elem, e, b)) != MXH_OK ||
            (st = hl_emit(&ctx, &w, b)) != MXH_OK)
            goto out;
        if (*e == '\0')
            break;
        elem = e + 1;
        if (*elem == '\0') {
            HL_ERR(&ctx, "empty element at offset %d", (int)(elem - expr));
            st = MXH_ERR_PARSE;
            goto out;
        }
    }

out:
    if (st == MXH_ERR_NO_MEMORY)
        HL_ERR(&ctx, "%s", "out of memory");
    free(w.parts);
    free(w.ranges);
    free(w.pos_r);
    free(w.pos_v);
    free(w.name);
    if (st != MXH_OK) {
        mxh_hostlist_free(w.names, (int)w.count);
        w.names = NULL;
        w.count = 0;
        b->names = names0;
        b->bytes = bytes0;
    }
    *names_p = w.names;
    *count_p = (int)w.count;
    return st;
}

mxh_status_t mxh_hostlist_expand_in(const char *expr, mxh_hostlist_budget_t *budget,
                                    const char *source, int line, char ***names_p,
                                    int *count_p)
{
    if (names_p == NULL || count_p == NULL || budget == NULL) {
        mxh_error("mxh_hostlist_expand: NULL output argument or budget");
        return MXH_ERR_INVALID_PARAM;
    }
    *names_p = NULL;
    *count_p = 0;
    if (expr == NULL) {
        mxh_error("mxh_hostlist_expand: NULL hostlist");
        return MXH_ERR_INVALID_PARAM;
    }
    return hl_expand(expr, budget, source, line, names_p, count_p);
}

mxh_status_t mxh_hostlist_expand(const char *expr, size_t max_names, char ***names_p,
                                 int *count_p)
{
    mxh_hostlist_budget_t b = {max_names, MXH_HOSTLIST_MAX_BYTES, 0, 0, 0};
    return mxh_hostlist_expand_in(expr, &b, NULL, 0, names_p, count_p);
}

void mxh_hostlist_free(char **names, int count)
{
    if (names == NULL)
        return;
    for (int i = 0; i < count; i++)
        free(names[i]);
    free(names);
}

/* ------------------------------------------------------------------------ */
/* topology.conf parser                                                     */

typedef struct sw_aux {
    int nodes_line;    /* line of the Nodes= token */
    int children_line; /* line of the Switches= token */
} sw_aux_t;

typedef struct parser {
    const char      *src;
    mxh_topo_conf_t *conf;
    size_t           sw_cap;  /* capacity of conf->switches */
    sw_aux_t        *aux;     /* per switch, parallel to conf->switches */
    size_t           aux_cap;
    strmap_t         sw_map;   /* switch name -> index */
    strmap_t         node_map; /* node name -> switch index */
    mxh_hostlist_budget_t budget; /* of every Nodes= and Switches= of the file */
    int              tree_line;  /* first tree record, 0: none */
    int              block_line; /* first block record, 0: none */
    /* the logical line being parsed, and where its physical lines start */
    char            *buf;
    size_t           buf_len, buf_cap;
    size_t          *seg_off;
    int             *seg_line;
    size_t           nseg, seg_cap, seg_line_cap;
} parser_t;

enum key_id { KEY_NONE = -1, KEY_SWITCHNAME, KEY_BLOCKNAME, KEY_BLOCKSIZES, KEY_NODES,
              KEY_SWITCHES, KEY_LINKSPEED, KEY_COUNT };
static const char *const key_names[KEY_COUNT] = {"SwitchName", "BlockName", "BlockSizes",
                                                 "Nodes",      "Switches",  "LinkSpeed"};

static int key_lookup(const char *key)
{
    for (int i = 0; i < KEY_COUNT; i++)
        if (strcasecmp(key, key_names[i]) == 0)
            return i;
    return KEY_NONE;
}

static int token_line(const parser_t *ps, size_t off)
{
    int line = ps->seg_line[0];
    for (size_t i = 1; i < ps->nseg && ps->seg_off[i] <= off; i++)
        line = ps->seg_line[i];
    return line;
}

static mxh_status_t check_name(const parser_t *ps, int line, const char *what,
                               const char *name)
{
    if (name[0] == '\0') {
        mxh_error("%s:%d: empty %s", ps->src, line, what);
        return MXH_ERR_PARSE;
    }
    for (const char *q = name; *q; q++) {
        unsigned char c = (unsigned char)*q;
        if (bad_name_char(c) || c == ',' || c == '[' || c == ']') {
            mxh_error("%s:%d: invalid character '%c' in %s '%.*s'", ps->src, line,
                      c >= 0x20 && c < 0x7f ? c : '?', what, TOK_SHOW, name);
            return MXH_ERR_PARSE;
        }
    }
    return MXH_OK;
}

static mxh_status_t check_block_sizes(const parser_t *ps, int line, const char *v)
{
    const char *q = v;
    if (*q == '\0')
        goto bad;
    for (;;) {
        const char *s = q;
        while (*q >= '0' && *q <= '9')
            q++;
        if (q == s || q - s > 9)
            goto bad;
        if (*q == '\0')
            return MXH_OK;
        if (*q != ',')
            goto bad;
        q++;
    }
bad:
    mxh_error("%s:%d: bad BlockSizes value '%.*s' (expected numbers separated by commas)",
              ps->src, line, TOK_SHOW, v);
    return MXH_ERR_PARSE;
}

/* Append a new zeroed switch; returns its index or -1. */
static int add_switch(parser_t *ps)
{
    mxh_topo_conf_t *conf = ps->conf;
    size_t n = (size_t)conf->num_switches;
    if (n >= (size_t)INT_MAX - 1)
        return -1;
    if (grow((void **)&conf->switches, &ps->sw_cap, n + 1, sizeof(*conf->switches)) != MXH_OK ||
        grow((void **)&ps->aux, &ps->aux_cap, n + 1, sizeof(*ps->aux)) != MXH_OK)
        return -1;
    memset(&conf->switches[n], 0, sizeof(conf->switches[n]));
    conf->switches[n].parent = -1;
    memset(&ps->aux[n], 0, sizeof(ps->aux[n]));
    conf->num_switches++;
    return (int)n;
}

static mxh_status_t parse_nomem(const parser_t *ps, int line)
{
    mxh_error("%s:%d: out of memory", ps->src, line);
    return MXH_ERR_NO_MEMORY;
}

/* Notes the syntax of a record that @key starts at @line: tree (SwitchName=) and block
 * records (BlockName=, BlockSizes=) may not be mixed in one file. */
static mxh_status_t record_syntax(parser_t *ps, int key, int line)
{
    if (key == KEY_SWITCHNAME) {
        if (ps->block_line != 0) {
            mxh_error("%s:%d: SwitchName= (tree syntax) mixed with block syntax "
                      "(line %d)",
                      ps->src, line, ps->block_line);
            return MXH_ERR_PARSE;
        }
        if (ps->tree_line == 0)
            ps->tree_line = line;
        return MXH_OK;
    }
    if (ps->tree_line != 0) {
        mxh_error("%s:%d: %s= (block syntax) mixed with tree syntax (line %d)", ps->src, line,
                  key_names[key], ps->tree_line);
        return MXH_ERR_PARSE;
    }
    if (ps->block_line == 0)
        ps->block_line = line;
    ps->conf->format = MXH_TOPO_FORMAT_BLOCK;
    return MXH_OK;
}

/* Starts a record with its first token @key=@val at @line: a new switch or block, whose
 * index goes to @sw_p (BlockSizes= only has its value checked). */
static mxh_status_t record_start(parser_t *ps, int key, const char *val, int line, int *sw_p)
{
    mxh_status_t st;
    mxh_topo_conf_t *conf = ps->conf;

    if (key != KEY_SWITCHNAME && key != KEY_BLOCKNAME && key != KEY_BLOCKSIZES) {
        mxh_error("%s:%d: a line must start with SwitchName=, BlockName= or "
                  "BlockSizes=, not '%s='",
                  ps->src, line, key_names[key]);
        return MXH_ERR_PARSE;
    }
    if ((st = record_syntax(ps, key, line)) != MXH_OK)
        return st;
    if (key == KEY_BLOCKSIZES)
        return check_block_sizes(ps, line, val);
    const char *what = key == KEY_SWITCHNAME ? "switch name" : "block name";
    if ((st = check_name(ps, line, what, val)) != MXH_OK)
        return st;
    int prev = strmap_get(&ps->sw_map, val);
    if (prev >= 0) {
        mxh_error("%s:%d: %s '%.*s' defined twice (first at line %d)", ps->src, line,
                  key == KEY_SWITCHNAME ? "switch" : "block", TOK_SHOW, val,
                  conf->switches[prev].line);
        return MXH_ERR_PARSE;
    }
    int sw = add_switch(ps);
    if (sw < 0)
        return parse_nomem(ps, line);
    *sw_p = sw;
    mxh_topo_switch_t *s = &conf->switches[sw];
    s->line = line;
    if ((s->name = strdup(val)) == NULL || strmap_put(&ps->sw_map, s->name, sw) != MXH_OK)
        return parse_nomem(ps, line);
    return MXH_OK;
}

/* Checks that @key at @line may follow in the record @rec (of switch @sw) started at
 * @rec_line, and was not given before in it (@seen: the line of each key so far). */
static mxh_status_t record_check_key(const parser_t *ps, int rec, int rec_line, int sw, int key,
                                     int line, const int *seen)
{
    if (rec == KEY_BLOCKSIZES) {
        mxh_error("%s:%d: unexpected '%s=' on a BlockSizes= line", ps->src, line,
                  key_names[key]);
        return MXH_ERR_PARSE;
    }
    if (key == KEY_SWITCHNAME || key == KEY_BLOCKNAME || key == KEY_BLOCKSIZES) {
        mxh_error("%s:%d: unexpected second record key '%s=' (a line defines one %s; "
                  "the record started at line %d)",
                  ps->src, line, key_names[key], rec == KEY_SWITCHNAME ? "switch" : "block",
                  rec_line);
        return MXH_ERR_PARSE;
    }
    if (rec == KEY_BLOCKNAME && key != KEY_NODES) {
        mxh_error("%s:%d: '%s=' is not valid on a BlockName= line", ps->src, line,
                  key_names[key]);
        return MXH_ERR_PARSE;
    }
    if (seen[key]) {
        mxh_error("%s:%d: '%s=' given twice for '%s'", ps->src, line, key_names[key],
                  ps->conf->switches[sw].name);
        return MXH_ERR_PARSE;
    }
    return MXH_OK;
}

/* Expands the Nodes= or Switches= hostlist (@key=@val at @line, in the record started at
 * @rec_line) into switch @sw; a node may be under one switch only. */
static mxh_status_t record_names(parser_t *ps, int sw, int key, const char *val, int line,
                                 int rec_line)
{
    mxh_topo_conf_t *conf = ps->conf;
    mxh_topo_switch_t *s = &conf->switches[sw];
    char **names = NULL;
    int count = 0;
    mxh_status_t st = hl_expand(val, &ps->budget, ps->src, line, &names, &count);

    if (st != MXH_OK)
        return st;
    if (key == KEY_SWITCHES) {
        s->child_names = names;
        s->num_children = count;
        ps->aux[sw].children_line = line;
        return MXH_OK;
    }
    s->nodes = names;
    s->num_nodes = count;
    ps->aux[sw].nodes_line = line;
    for (int i = 0; i < count; i++) {
        int other = strmap_get(&ps->node_map, names[i]);
        if (other == sw) {
            mxh_error("%s:%d: node '%.*s' listed twice in Nodes= of '%s'", ps->src, line,
                      TOK_SHOW, names[i], s->name);
            return MXH_ERR_PARSE;
        }
        if (other >= 0) {
            mxh_error("%s:%d: node '%.*s' of '%s' is already under '%s' (line %d)", ps->src,
                      line, TOK_SHOW, names[i], s->name, conf->switches[other].name,
                      ps->aux[other].nodes_line);
            return MXH_ERR_PARSE;
        }
        if (strmap_put(&ps->node_map, names[i], sw) != MXH_OK)
            return parse_nomem(ps, rec_line);
    }
    return MXH_OK;
}

/* Parse one logical line held in ps->buf (tokens are cut in place). */
static mxh_status_t parse_record(parser_t *ps)
{
    mxh_status_t st;
    char *p = ps->buf, *end = ps->buf + ps->buf_len;
    int rec = KEY_NONE, sw = -1, rec_line = 0;
    int seen[KEY_COUNT] = {0};

    for (;;) {
        while (p < end && is_blank(*p))
            p++;
        if (p >= end)
            break;
        char *tok = p;
        while (p < end && !is_blank(*p))
            p++;
        *p = '\0'; /* buf has one spare byte at the end */
        p++;
        int line = token_line(ps, (size_t)(tok - ps->buf));

        char *eq = strchr(tok, '=');
        if (eq == NULL) {
            mxh_error("%s:%d: expected KEY=VALUE, got '%.*s'", ps->src, line, TOK_SHOW, tok);
            return MXH_ERR_PARSE;
        }
        *eq = '\0';
        const char *val = eq + 1;
        int key = key_lookup(tok);
        if (key == KEY_NONE) {
            mxh_error("%s:%d: unknown key '%.*s' (expected SwitchName, BlockName, BlockSizes, "
                      "Nodes, Switches or LinkSpeed)",
                      ps->src, line, TOK_SHOW, tok);
            return MXH_ERR_PARSE;
        }

        if (rec == KEY_NONE) { /* the first token names the record */
            if ((st = record_start(ps, key, val, line, &sw)) != MXH_OK)
                return st;
            rec       = key;
            rec_line  = line;
            seen[key] = line;
            continue;
        }
        if ((st = record_check_key(ps, rec, rec_line, sw, key, line, seen)) != MXH_OK)
            return st;
        seen[key] = line;
        if (key == KEY_LINKSPEED)
            continue; /* ignored */
        if ((st = record_names(ps, sw, key, val, line, rec_line)) != MXH_OK)
            return st;
    }
    return MXH_OK;
}

/* Append a physical line segment [s, s+n) (already stripped) to the logical line. */
static mxh_status_t append_segment(parser_t *ps, const char *s, size_t n, int line)
{
    if (grow((void **)&ps->buf, &ps->buf_cap, ps->buf_len + n + 2, 1) != MXH_OK)
        return MXH_ERR_NO_MEMORY;
    size_t cap = ps->seg_cap;
    if (grow((void **)&ps->seg_off, &cap, ps->nseg + 1, sizeof(*ps->seg_off)) != MXH_OK)
        return MXH_ERR_NO_MEMORY;
    ps->seg_cap = cap;
    if (grow((void **)&ps->seg_line, &ps->seg_line_cap, ps->nseg + 1, sizeof(*ps->seg_line)) !=
        MXH_OK)
        return MXH_ERR_NO_MEMORY;
    ps->seg_off[ps->nseg] = ps->buf_len;
    ps->seg_line[ps->nseg] = line;
    ps->nseg++;
    memcpy(ps->buf + ps->buf_len, s, n);
    ps->buf_len += n;
    ps->buf[ps->buf_len] = '\0';
    return MXH_OK;
}

static void format_cycle(const mxh_topo_conf_t *conf, const int *stack, int depth, int from,
                         char *out, size_t outlen)
{
    size_t len = 0;
    out[0] = '\0';
    for (int k = from; k < depth && len + 1 < outlen; k++) {
        int n = snprintf(out + len, outlen - len, "%s -> ", conf->switches[stack[k]].name);
        if (n < 0 || (size_t)n >= outlen - len)
            return; /* truncated: the message shows the start of the cycle */
        len += (size_t)n;
    }
    if (len + 1 < outlen)
        snprintf(out + len, outlen - len, "%s", conf->switches[stack[from]].name);
}

/* The Switches= graph of resolve_tree. Edges are numbered in (switch, position in its
 * Switches=) order; the arrays of the edges and of the switches are one allocation each. */
typedef struct tree_edges {
    int  *esrc;    /* edge -> switch that lists the child */
    int  *rev;     /* edge indices grouped by child */
    char *drop;    /* edge -> dropped as a back-edge */
    int  *rev_off; /* n + 1: edges into each switch, as ranges of rev */
    int  *dist;    /* each switch's distance down to a switch with nodes */
    int  *queue;   /* n: scratch of the distance search */
    int  *mark;    /* n: scratch */
} tree_edges_t;

/* Resolves every switch's Switches= names into children (defined, not itself) and counts
 * the edges into @nedges_p. */
static mxh_status_t tree_children(parser_t *ps, size_t *nedges_p)
{
    mxh_topo_conf_t *conf = ps->conf;
    size_t nedges = 0;

    for (int i = 0; i < conf->num_switches; i++) {
        mxh_topo_switch_t *s = &conf->switches[i];
        if (s->num_children == 0)
            continue;
        s->children = malloc((size_t)s->num_children * sizeof(*s->children));
        if (s->children == NULL)
            return MXH_ERR_NO_MEMORY;
        for (int c = 0; c < s->num_children; c++) {
            int idx = strmap_get(&ps->sw_map, s->child_names[c]);
            if (idx < 0) {
                mxh_error("%s:%d: switch '%.*s' in Switches= of '%s' is not defined", ps->src,
                          ps->aux[i].children_line, TOK_SHOW, s->child_names[c], s->name);
                return MXH_ERR_PARSE;
            }
            if (idx == i) {
                mxh_error("%s:%d: switch '%s' lists itself in Switches=", ps->src,
                          ps->aux[i].children_line, s->name);
                return MXH_ERR_PARSE;
            }
            s->children[c] = idx;
        }
        nedges += (size_t)s->num_children;
    }
    if (nedges > (size_t)INT_MAX) {
        mxh_error("%s: too many Switches= entries (%zu)", ps->src, nedges);
        return MXH_ERR_PARSE;
    }
    *nedges_p = nedges;
    return MXH_OK;
}

/* Allocates @te for @nedges edges and indexes them by child (esrc, rev_off, rev); a switch
 * may list a child once. */
static mxh_status_t tree_edges_build(const parser_t *ps, size_t nedges, tree_edges_t *te)
{
    const mxh_topo_conf_t *conf = ps->conf;
    int n = conf->num_switches, e = 0;
    size_t ne = nedges ? nedges : 1;

    te->esrc    = malloc(2 * ne * sizeof(*te->esrc));
    te->drop    = calloc(ne, 1);
    te->rev_off = calloc(4 * (size_t)n + 1, sizeof(*te->rev_off));
    if (!te->esrc || !te->drop || !te->rev_off)
        return MXH_ERR_NO_MEMORY;
    te->rev   = te->esrc + ne;
    te->dist  = te->rev_off + n + 1;
    te->queue = te->dist + n;
    te->mark  = te->queue + n;

    /* duplicates inside one Switches= (mark[child] = the switch listing it) */
    for (int i = 0; i < n; i++)
        te->mark[i] = -1;
    for (int a = 0; a < n; a++) {
        const mxh_topo_switch_t *s = &conf->switches[a];
        for (int c = 0; c < s->num_children; c++, e++) {
            int b = s->children[c];
            if (te->mark[b] == a) {
                mxh_error("%s:%d: switch '%s' listed twice in Switches= of '%s'", ps->src,
                          ps->aux[a].children_line, conf->switches[b].name, s->name);
                return MXH_ERR_PARSE;
            }
            te->mark[b]        = a;
            te->esrc[e]        = a;
            te->rev_off[b + 1]++;
        }
    }
    for (int i = 0; i < n; i++)
        te->rev_off[i + 1] += te->rev_off[i];
    for (int i = 0; i < n; i++)
        te->mark[i] = te->rev_off[i];
    e = 0;
    for (int a = 0; a < n; a++)
        for (int c = 0; c < conf->switches[a].num_children; c++, e++)
            te->rev[te->mark[conf->switches[a].children[c]]++] = e;
    return MXH_OK;
}

/* The distance from each switch down to a switch with nodes (a search towards parents). */
static void tree_distances(const mxh_topo_conf_t *conf, tree_edges_t *te)
{
    int n = conf->num_switches, qh = 0, qt = 0;

    for (int i = 0; i < n; i++) {
        te->dist[i] = INT_MAX;
        if (conf->switches[i].num_nodes > 0) {
            te->dist[i]     = 0;
            te->queue[qt++] = i;
        }
    }
    while (qh < qt) {
        int b = te->queue[qh++];
        for (int k = te->rev_off[b]; k < te->rev_off[b + 1]; k++) {
            int a = te->esrc[te->rev[k]];
            if (te->dist[a] == INT_MAX) {
                te->dist[a]     = te->dist[b] + 1;
                te->queue[qt++] = a;
            }
        }
    }
}

/* Removes the edges marked in @drop from the children and child_names of their switches. */
static void tree_remove_edges(mxh_topo_conf_t *conf, const char *drop)
{
    int e = 0;

    for (int a = 0; a < conf->num_switches; a++) {
        mxh_topo_switch_t *s = &conf->switches[a];
        int w = 0;
        for (int c = 0; c < s->num_children; c++, e++) {
            if (drop[e]) {
                free(s->child_names[c]);
                continue;
            }
            s->child_names[w] = s->child_names[c];
            s->children[w] = s->children[c];
            w++;
        }
        s->num_children = w;
        if (w == 0) {
            free(s->child_names);
            free(s->children);
            s->child_names = NULL;
            s->children = NULL;
        }
    }
}

/* Drops the back-edges, with a warning: a lists b, b lists a, and b is farther from the
 * nodes than a. */
static void tree_drop_back_edges(parser_t *ps, tree_edges_t *te)
{
    mxh_topo_conf_t *conf = ps->conf;
    int n = conf->num_switches, ndropped = 0, ex_a = -1, ex_b = -1;

    for (int i = 0; i < n; i++)
        te->mark[i] = -1;
    for (int b = 0; b < n; b++) {
        const mxh_topo_switch_t *sb = &conf->switches[b];
        for (int c = 0; c < sb->num_children; c++)
            te->mark[sb->children[c]] = b; /* now mark[x] == b <=> b lists x */
        for (int k = te->rev_off[b]; k < te->rev_off[b + 1]; k++) {
            int a = te->esrc[te->rev[k]];
            if (te->mark[a] != b || te->dist[b] <= te->dist[a])
                continue;
            te->drop[te->rev[k]] = 1;
            ndropped++;
            if (ex_a < 0 || a < ex_a) {
                ex_a = a;
                ex_b = b;
            }
            mxh_debug("%s:%d: ignoring back-edge %s -> %s (%s also lists %s, line %d)",
                      ps->src, ps->aux[a].children_line, conf->switches[a].name, sb->name,
                      sb->name, conf->switches[a].name, ps->aux[b].children_line);
        }
    }
    if (ndropped == 0)
        return;
    mxh_warn("%s:%d: ignored %d back-edge(s) in Switches= where two switches list each "
             "other (e.g. '%s' lists '%s', which lists it at line %d); the one farther "
             "from the nodes is kept as the parent",
             ps->src, ps->aux[ex_a].children_line, ndropped, conf->switches[ex_a].name,
             conf->switches[ex_b].name, ps->aux[ex_b].children_line);
    tree_remove_edges(conf, te->drop);
}

/* Rejects a cycle in the Switches= graph: iterative DFS, colour 0 new, 1 on the stack,
 * 2 done. */
static mxh_status_t tree_check_cycles(const parser_t *ps)
{
    const mxh_topo_conf_t *conf = ps->conf;
    int n = conf->num_switches;
    mxh_status_t st = MXH_OK;
    char *color = calloc((size_t)n, 1);
    int *stack = malloc((size_t)n * sizeof(*stack));
    int *next = malloc((size_t)n * sizeof(*next));

    if (!color || !stack || !next) {
        st = MXH_ERR_NO_MEMORY;
        goto out;
    }
    for (int root = 0; root < n; root++) {
        if (color[root])
            continue;
        int depth = 1;
        stack[0] = root;
        next[0] = 0;
        color[root] = 1;
        while (depth > 0) {
            int u = stack[depth - 1];
            const mxh_topo_switch_t *s = &conf->switches[u];
            if (next[depth - 1] >= s->num_children) {
                color[u] = 2;
                depth--;
                continue;
            }
            int v = s->children[next[depth - 1]++];
            if (color[v] == 1) {
                char path[512];
                int from = depth - 1;
                while (stack[from] != v)
                    from--;
                format_cycle(conf, stack, depth, from, path, sizeof(path));
                mxh_error("%s:%d: cycle in Switches=: %s", ps->src, ps->aux[u].children_line,
                          path);
                st = MXH_ERR_PARSE;
                goto out;
            }
            if (color[v] == 0) {
                color[v] = 1;
                stack[depth] = v;
                next[depth] = 0;
                depth++;
            }
        }
    }
out:
    free(color);
    free(stack);
    free(next);
    return st;
}

/* Resolve Switches= names, drop back-edges, reject cycles, set parents. */
static mxh_status_t resolve_tree(parser_t *ps)
{
    mxh_topo_conf_t *conf = ps->conf;
    tree_edges_t te = {0};
    size_t nedges = 0;
    mxh_status_t st;

    if ((st = tree_children(ps, &nedges)) != MXH_OK ||
        (st = tree_edges_build(ps, nedges, &te)) != MXH_OK)
        goto out;
    tree_distances(conf, &te);
    tree_drop_back_edges(ps, &te);
    if ((st = tree_check_cycles(ps)) != MXH_OK)
        goto out;

    /* parent: the first switch (file order) listing it */
    for (int a = 0; a < conf->num_switches; a++) {
        const mxh_topo_switch_t *s = &conf->switches[a];
        for (int c = 0; c < s->num_children; c++)
            if (conf->switches[s->children[c]].parent < 0)
                conf->switches[s->children[c]].parent = a;
    }
out:
    if (st == MXH_ERR_NO_MEMORY)
        mxh_error("%s: out of memory resolving Switches=", ps->src);
    free(te.esrc);
    free(te.drop);
    free(te.rev_off);
    return st;
}

mxh_status_t mxh_topo_conf_parse_string(const char *text, const char *source,
                                        mxh_topo_conf_t **conf_p)
{
    mxh_status_t st = MXH_OK;
    parser_t ps;

    if (conf_p == NULL || text == NULL) {
        mxh_error("mxh_topo_conf_parse_string: NULL %s", conf_p == NULL ? "conf_p" : "text");
        return MXH_ERR_INVALID_PARAM;
    }
    *conf_p = NULL;
    memset(&ps, 0, sizeof(ps));
    ps.src = source != NULL ? source : "<string>";
    ps.budget = (mxh_hostlist_budget_t)MXH_HOSTLIST_BUDGET_INIT;
    ps.conf = calloc(1, sizeof(*ps.conf));
    if (ps.conf == NULL) {
        mxh_error("%s: out of memory", ps.src);
        return MXH_ERR_NO_MEMORY;
    }
    ps.conf->format = MXH_TOPO_FORMAT_TREE;
    if ((ps.conf->source = strdup(ps.src)) == NULL)
        goto nomem;

    const char *p = text;
    int lineno = 0;
    while (*p != '\0') {
        ps.buf_len = 0;
        ps.nseg = 0;
        int cont;
        do {
            const char *eol = strchr(p, '\n');
            if (eol == NULL)
                eol = p + strlen(p);
            lineno++;
            if (lineno == INT_MAX) {
                mxh_error("%s:%d: too many lines", ps.src, lineno);
                st = MXH_ERR_PARSE;
                goto out;
            }
            const char *hash = memchr(p, '#', (size_t)(eol - p));
            const char *e = hash != NULL ? hash : eol;
            while (e > p && is_blank(e[-1]))
                e--;
            size_t bs = 0;
            while (e - bs > p && e[-1 - (ptrdiff_t)bs] == '\\')
                bs++;
            cont = bs % 2 == 1;
            if (cont)
                e--;
            if (append_segment(&ps, p, (size_t)(e - p), lineno) != MXH_OK)
                goto nomem;
            p = *eol == '\n' ? eol + 1 : eol;
        } while (cont && *p != '\0');

        st = parse_record(&ps);
        if (st != MXH_OK)
            goto out;
    }

    if (ps.conf->num_switches == 0) {
        mxh_error("%s:%d: no SwitchName= or BlockName= line found", ps.src, lineno);
        st = MXH_ERR_PARSE;
        goto out;
    }
    if (ps.conf->format == MXH_TOPO_FORMAT_TREE)
        st = resolve_tree(&ps);
    goto out;

nomem:
    mxh_error("%s: out of memory", ps.src);
    st = MXH_ERR_NO_MEMORY;
out:
    strmap_free(&ps.sw_map);
    strmap_free(&ps.node_map);
    free(ps.aux);
    free(ps.buf);
    free(ps.seg_off);
    free(ps.seg_line);
    if (st != MXH_OK) {
        mxh_topo_conf_destroy(ps.conf);
        return st;
    }
    *conf_p = ps.conf;
    return MXH_OK;
}

mxh_status_t mxh_topo_read_text(FILE *f, const char *path, const char *what, size_t max,
                                char **text_p, size_t *len_p)
{
    mxh_status_t st;
    char *text = NULL;
    size_t len = 0, cap = 0;

    for (;;) {
        if (grow((void **)&text, &cap, len + 65536 + 1, 1) != MXH_OK) {
            mxh_error("%s: out of memory reading %s", path, what);
            st = MXH_ERR_NO_MEMORY;
            goto err;
        }
        size_t got = fread(text + len, 1, 65536, f);
        len += got;
        if (len > max) {
            mxh_error("%s: %s is larger than the limit of %zu bytes", path, what, max);
            st = MXH_ERR_PARSE;
            goto err;
        }
        if (got < 65536) {
            if (ferror(f)) {
                mxh_error("%s: cannot read %s: %s", path, what, strerror(errno));
                st = MXH_ERR_IO;
                goto err;
            }
            break;
        }
    }
    text[len] = '\0';
    *text_p = text;
    *len_p  = len;
    return MXH_OK;

err:
    free(text);
    return st;
}

mxh_status_t mxh_topo_conf_parse_file(const char *path, mxh_topo_conf_t **conf_p)
{
    mxh_status_t st = MXH_OK;
    FILE *f = NULL;
    char *text = NULL;
    size_t len = 0;
    struct stat sb;

    if (conf_p == NULL || path == NULL) {
        mxh_error("mxh_topo_conf_parse_file: NULL %s", conf_p == NULL ? "conf_p" : "path");
        return MXH_ERR_INVALID_PARAM;
    }
    *conf_p = NULL;
    f = fopen(path, "rb");
    if (f == NULL) {
        mxh_error("%s: cannot open topology file: %s", path, strerror(errno));
        return MXH_ERR_IO;
    }
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) &&
        (unsigned long long)sb.st_size > (unsigned long long)MXH_TOPO_CONF_MAX_FILE_BYTES) {
        mxh_error("%s: topology file is %lld bytes, more than the limit of %zu bytes", path,
                  (long long)sb.st_size, MXH_TOPO_CONF_MAX_FILE_BYTES);
        st = MXH_ERR_PARSE;
        goto out;
    }
    st = mxh_topo_read_text(f, path, "topology file", MXH_TOPO_CONF_MAX_FILE_BYTES, &text, &len);
    if (st != MXH_OK)
        goto out;
    const char *nul = memchr(text, '\0', len);
    if (nul != NULL) {
        int line = 1;
        for (const char *q = text; q < nul; q++)
            line += *q == '\n';
        mxh_error("%s:%d: NUL byte in topology file (not a text file?)", path, line);
        st = MXH_ERR_PARSE;
        goto out;
    }
    st = mxh_topo_conf_parse_string(text, path, conf_p);
out:
    free(text);
    if (f != NULL)
        fclose(f);
    return st;
}

void mxh_topo_conf_destroy(mxh_topo_conf_t *conf)
{
    if (conf == NULL)
        return;
    for (int i = 0; i < conf->num_switches; i++) {
        mxh_topo_switch_t *s = &conf->switches[i];
        free(s->name);
        mxh_hostlist_free(s->nodes, s->num_nodes);
        mxh_hostlist_free(s->child_names, s->num_children);
        free(s->children);
    }
    free(conf->switches);
    free(conf->source);
    free(conf);
}

/* Length of the short name (up to the first '.'); 0 when the name should not
 * be compared by short name (empty short part, or a dotted IPv4-like number). */
static size_t short_len(const char *name)
{
    const char *dot = strchr(name, '.');
    if (dot == NULL || dot == name)
        return 0;
    int numeric = 1;
    for (const char *q = name; *q && numeric; q++)
        numeric = (*q >= '0' && *q <= '9') || *q == '.';
    return numeric ? 0 : (size_t)(dot - name);
}

int mxh_topo_conf_find_leaf(const mxh_topo_conf_t *conf, const char *host)
{
    if (conf == NULL || host == NULL || host[0] == '\0')
        return -1;
    for (int i = 0; i < conf->num_switches; i++)
        for (int k = 0; k < conf->switches[i].num_nodes; k++)
            if (strcmp(conf->switches[i].nodes[k], host) == 0)
                return i;

    /* short-name comparison: "a.b" matches "a", "a" matches "a.b", "a.b" matches "a.c" */
    size_t hlen = short_len(host);
    int host_dotted = hlen > 0;
    if (!host_dotted) {
        if (strchr(host, '.') != NULL)
            return -1; /* ".x" or an IPv4 address: exact match only */
        hlen = strlen(host);
    }
    for (int i = 0; i < conf->num_switches; i++) {
        for (int k = 0; k < conf->switches[i].num_nodes; k++) {
            const char *node = conf->switches[i].nodes[k];
            size_t nlen = short_len(node);
            if (nlen == 0) {
                if (!host_dotted || strchr(node, '.') != NULL)
                    continue; /* both undotted (exact already failed), or unusable node */
                nlen = strlen(node);
            }
            if (nlen == hlen && strncmp(node, host, hlen) == 0)
                return i;
        }
    }
    return -1;
}

int mxh_topo_conf_depth(const mxh_topo_conf_t *conf, int sw)
{
    if (conf == NULL || sw < 0 || sw >= conf->num_switches)
        return -1;
    int depth = 0;
    for (int p = conf->switches[sw].parent; p >= 0; p = conf->switches[p].parent) {
        if (p >= conf->num_switches || ++depth > conf->num_switches)
            return -1; /* cannot happen for a parsed conf: parents are acyclic */
    }
    return depth;
}
