/* Strict XML well-formedness check (see xml_check.h for what is accepted). One pass over
 * the bytes, no allocation: the open elements and one element's attribute names are
 * pointers into the text, bounded by the limits of the header. */
#include "topo/xml_check.h"
#include "topo/topo_conf.h"
#include "util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

enum { ENC_UTF8, ENC_LATIN1, ENC_ASCII };

typedef struct span {
    const char *s;
    size_t      n;
    int         line;
} span_t;

typedef struct xc {
    const char *src, *what, *root; /* messages: "SRC:LINE: [malformed WHAT: ]cause" */
    const char *p, *end;
    int         line;
    int         enc;
    int         hwloc; /* MXH_XML_HWLOC: hwloc's rules too */
    int         depth;
    span_t      open[MXH_XML_CHECK_MAX_DEPTH];  /* the open elements, outermost first */
    span_t      attrs[MXH_XML_CHECK_MAX_ATTRS]; /* the attribute names of one start tag */
    span_t      vals[MXH_XML_CHECK_MAX_ATTRS];  /* ... and their raw values */
} xc_t;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static mxh_status_t bad(const xc_t *x, int line, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (x->what != NULL)
        mxh_error("%s:%d: malformed %s: %s", x->src, line, x->what, msg);
    else
        mxh_error("%s:%d: %s", x->src, line, msg);
    return MXH_ERR_PARSE;
}

static int eof(const xc_t *x) { return x->p >= x->end; }

static int starts(const xc_t *x, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(x->end - x->p) >= n && memcmp(x->p, s, n) == 0;
}

static void adv(xc_t *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x->line += x->p[i] == '\n';
    x->p += n;
}

/* What is at the current position, for messages: "end of file", "'c'" or "byte 0xNN". */
static const char *found(const xc_t *x, char buf[16])
{
    unsigned char c;

    if (eof(x))
        return "end of file";
    c = (unsigned char)*x->p;
    if (c >= 0x21 && c < 0x7f)
        snprintf(buf, 16, "'%c'", c);
    else
        snprintf(buf, 16, "byte 0x%02x", c);
    return buf;
}

/* Bytes of the XML character at the current position (1 to 4), 0 when there is none:
 * a control character, a NUL, invalid or truncated UTF-8, a surrogate, U+FFFE/U+FFFF. */
static size_t char_len(const xc_t *x)
{
    const unsigned char *s = (const unsigned char *)x->p;
    size_t room = (size_t)(x->end - x->p), n;
    unsigned long cp, min;
    unsigned c = s[0];

    if (c < 0x80)
        return c >= 0x20 || c == 0x9 || c == 0xa || c == 0xd;
    if (x->enc != ENC_UTF8)
        return x->enc == ENC_LATIN1;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2, cp = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3, cp = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (room < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe ||
        cp == 0xffff)
        return 0;
    return n;
}

/* The error for the byte at the current position, which is no character, in @where. */
static mxh_status_t bad_char(const xc_t *x, const char *where)
{
    unsigned char c = (unsigned char)*x->p;

    if (c == 0)
        return bad(x, x->line, "NUL byte in %s (not a text file?)", where);
    if (c < 0x80)
        return bad(x, x->line, "control character 0x%02x in %s", c, where);
    if (x->enc == ENC_ASCII)
        return bad(x, x->line, "byte 0x%02x in %s of a US-ASCII document", c, where);
    return bad(x, x->line, "invalid UTF-8 (byte 0x%02x) in %s", c, where);
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Skips blanks; returns how many there were. */
static size_t skip_space(xc_t *x)
{
    const char *s = x->p;
    while (!eof(x) && is_space(*x->p))
        adv(x, 1);
    return (size_t)(x->p - s);
}

static int name_start(unsigned char c)
{
    return ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c == '_' || c == ':' || c >= 0x80;
}

static int name_char(unsigned char c)
{
    return name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

/* A name (@what in messages) at the current position into @out. */
static mxh_status_t name(xc_t *x, const char *what, span_t *out)
{
    char buf[16];

    out->s = x->p;
    out->line = x->line;
    if (eof(x) || !name_start((unsigned char)*x->p))
        return bad(x, x->line, "expected %s (found %s)", what, found(x, buf));
    while (!eof(x) && name_char((unsigned char)*x->p)) {
        size_t n = char_len(x);
        if (n == 0)
            return bad_char(x, what);
        adv(x, n);
    }
    out->n = (size_t)(x->p - out->s);
    return MXH_OK;
}

static int span_is(const span_t *s, const char *str)
{
    return s->n == strlen(str) && memcmp(s->s, str, s->n) == 0;
}

/* Characters up to and including @term; @what (started at @line) names the construct. */
static mxh_status_t text_until(xc_t *x, const char *term, const char *what, int line)
{
    for (;;) {
        if (eof(x))
            return bad(x, line, "end of file inside %s (no '%s')", what, term);
        if (starts(x, term)) {
            adv(x, strlen(term));
            return MXH_OK;
        }
        size_t n = char_len(x);
        if (n == 0)
            return bad_char(x, what);
        adv(x, n);
    }
}

/* <!-- ... -->, no "--" inside. */
static mxh_status_t comment(xc_t *x)
{
    int line = x->line;
    mxh_status_t st;

    adv(x, 4);
    if ((st = text_until(x, "--", "a comment", line)) != MXH_OK)
        return st;
    if (eof(x) || *x->p != '>')
        return bad(x, x->line, "'--' inside a comment (started at line %d)", line);
    adv(x, 1);
    return MXH_OK;
}

/* <?target ...?>; the target "xml" is reserved for the declaration at the start. */
static mxh_status_t pi(xc_t *x)
{
    int line = x->line;
    span_t t;
    mxh_status_t st;

    adv(x, 2);
    if ((st = name(x, "a processing instruction's target after '<?'", &t)) != MXH_OK)
        return st;
    if (t.n == 3 && strncasecmp(t.s, "xml", 3) == 0)
        return bad(x, line, "XML declaration '<?%.*s' not at the start of the document", 3, t.s);
    if (starts(x, "?>")) {
        adv(x, 2);
        return MXH_OK;
    }
    if (skip_space(x) == 0) {
        char buf[16];
        return bad(x, x->line, "expected a space or '?>' after '<?%.*s' (found %s)", (int)t.n,
                   t.s, found(x, buf));
    }
    return text_until(x, "?>", "a processing instruction", line);
}

/* A quoted value of the declaration or of <!DOCTYPE> (no markup, no references). */
static mxh_status_t literal(xc_t *x, const char *what, span_t *out)
{
    char q, buf[16];
    int line = x->line;

    if (eof(x) || (*x->p != '"' && *x->p != '\''))
        return bad(x, x->line, "expected a quoted %s (found %s)", what, found(x, buf));
    q = *x->p;
    adv(x, 1);
    out->s = x->p;
    out->line = line;
    for (;;) {
        if (eof(x))
            return bad(x, line, "end of file inside the %s (no closing %c)", what, q);
        if (*x->p == q)
            break;
        size_t n = char_len(x);
        if (n == 0)
            return bad_char(x, what);
        adv(x, n);
    }
    out->n = (size_t)(x->p - out->s);
    adv(x, 1);
    return MXH_OK;
}

/* The encoding named in the declaration: UTF-8, ISO-8859-1 or US-ASCII. */
static mxh_status_t set_encoding(xc_t *x, const span_t *v)
{
    static const struct { const char *name; int enc; } known[] = {
        {"UTF-8", ENC_UTF8},       {"UTF8", ENC_UTF8},   {"ISO-8859-1", ENC_LATIN1},
        {"ISO_8859-1", ENC_LATIN1}, {"LATIN1", ENC_LATIN1}, {"US-ASCII", ENC_ASCII},
        {"ASCII", ENC_ASCII}};

    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (v->n == strlen(known[i].name) && strncasecmp(v->s, known[i].name, v->n) == 0) {
            x->enc = known[i].enc;
            return MXH_OK;
        }
    }
    return bad(x, v->line,
               "encoding '%.*s' is not supported (UTF-8, ISO-8859-1 or US-ASCII)",
               (int)(v->n > 40 ? 40 : v->n), v->s);
}

/* <?xml version="1.x" [encoding="..."] [standalone="yes|no"]?>, in this order. */
static mxh_status_t xml_decl(xc_t *x)
{
    static const char *const keys[] = {"version", "encoding", "standalone"};
    int line = x->line, next = 0;
    mxh_status_t st;
    char buf[16];

    adv(x, 5);
    for (;;) {
        size_t sp = skip_space(x);
        span_t k, v;
        int i;
        if (eof(x))
            return bad(x, line, "end of file inside the XML declaration (no '?>')");
        if (starts(x, "?>"))
            break;
        if (sp == 0)
            return bad(x, x->line, "expected a space or '?>' in the XML declaration (found %s)",
                       found(x, buf));
        if ((st = name(x, "version, encoding or standalone in the XML declaration", &k)) !=
            MXH_OK)
            return st;
        for (i = 0; i < 3 && !span_is(&k, keys[i]); i++)
            ;
        if (i == 3 || i < next || (i > 0 && next == 0))
            return bad(x, k.line,
                       "unexpected '%.*s' in the XML declaration (version, then optional "
                       "encoding and standalone)",
                       (int)(k.n > 40 ? 40 : k.n), k.s);
        next = i + 1;
        skip_space(x);
        if (eof(x) || *x->p != '=')
            return bad(x, x->line, "expected '=' after '%s' in the XML declaration (found %s)",
                       keys[i], found(x, buf));
        adv(x, 1);
        skip_space(x);
        if ((st = literal(x, "value in the XML declaration", &v)) != MXH_OK)
            return st;
        if (i == 0 && !(v.n >= 3 && v.s[0] == '1' && v.s[1] == '.' &&
                        strspn(v.s + 2, "0123456789") >= v.n - 2))
            return bad(x, v.line, "XML version '%.*s' is not 1.x", (int)(v.n > 20 ? 20 : v.n),
                       v.s);
        if (i == 1 && (st = set_encoding(x, &v)) != MXH_OK)
            return st;
        if (i == 2 && !span_is(&v, "yes") && !span_is(&v, "no"))
            return bad(x, v.line, "standalone must be \"yes\" or \"no\"");
    }
    if (next == 0)
        return bad(x, line, "the XML declaration has no version");
    adv(x, 2);
    return MXH_OK;
}

/* <!DOCTYPE name [SYSTEM "uri" | PUBLIC "id" "uri"]>; its name into @dt. */
static mxh_status_t doctype(xc_t *x, span_t *dt)
{
    int line = x->line;
    span_t lit;
    mxh_status_t st;
    char buf[16];

    adv(x, 9);
    if (skip_space(x) == 0)
        return bad(x, x->line, "expected a space after '<!DOCTYPE' (found %s)", found(x, buf));
    if ((st = name(x, "the document type's name after '<!DOCTYPE'", dt)) != MXH_OK)
        return st;
    size_t sp = skip_space(x);
    if (sp > 0 && (starts(x, "SYSTEM") || starts(x, "PUBLIC"))) {
        int public = starts(x, "PUBLIC");
        adv(x, 6);
        if (skip_space(x) == 0)
            return bad(x, x->line, "expected a space after %s in <!DOCTYPE>",
                       public ? "PUBLIC" : "SYSTEM");
        if ((st = literal(x, "identifier of <!DOCTYPE>", &lit)) != MXH_OK)
            return st;
        if (public && (skip_space(x) == 0 ||
                       (st = literal(x, "system identifier of <!DOCTYPE>", &lit)) != MXH_OK))
            return st != MXH_OK ? st
                                : bad(x, x->line, "expected a space and the system identifier "
                                                  "after PUBLIC's identifier in <!DOCTYPE>");
        skip_space(x);
    }
    if (eof(x))
        return bad(x, line, "end of file inside <!DOCTYPE> (no '>')");
    if (*x->p == '[')
        return bad(x, x->line, "internal DTD subset '[...]' in <!DOCTYPE> is not accepted (it "
                               "can declare entities)");
    if (*x->p != '>')
        return bad(x, x->line, "expected '>' to end <!DOCTYPE> (found %s)", found(x, buf));
    adv(x, 1);
    return MXH_OK;
}

/* A reference at '&' in @where: a predefined entity or a character reference. */
static mxh_status_t reference(xc_t *x, const char *where)
{
    static const char *const ents[] = {"amp", "lt", "gt", "quot", "apos"};
    const char *s = x->p + 1, *e = s;
    unsigned long cp = 0;

    while (e < x->end && e - s < 12 && *e != ';' && !is_space(*e) && *e != '<' && *e != '&')
        e++;
    if (e >= x->end || *e != ';')
        return bad(x, x->line, "'&' not followed by an entity or character reference and ';' "
                               "in %s (write &amp;)", where);
    size_t n = (size_t)(e - s);
    if (n >= 2 && s[0] == '#') {
        int hex = s[1] == 'x';
        const char *d = s + 1 + hex;
        if (d == e || (size_t)(e - d) > 8)
            return bad(x, x->line, "bad character reference '&%.*s;' in %s", (int)n, s, where);
        for (; d < e; d++) {
            int v = *d >= '0' && *d <= '9'        ? *d - '0'
                    : hex && *d >= 'a' && *d <= 'f' ? *d - 'a' + 10
                    : hex && *d >= 'A' && *d <= 'F' ? *d - 'A' + 10
                                                    : -1;
            if (v < 0)
                return bad(x, x->line, "bad character reference '&%.*s;' in %s", (int)n, s,
                           where);
            cp = cp * (hex ? 16 : 10) + (unsigned long)v;
        }
        if (!(cp == 0x9 || cp == 0xa || cp == 0xd || (cp >= 0x20 && cp <= 0xd7ff) ||
              (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff)))
            return bad(x, x->line, "character reference '&%.*s;' in %s is not an XML character",
                       (int)n, s, where);
    } else {
        size_t i;
        for (i = 0; i < 5 && !(n == strlen(ents[i]) && memcmp(s, ents[i], n) == 0); i++)
            ;
        if (i == 5)
            return bad(x, x->line, "unknown entity '&%.*s;' in %s (defined: &amp; &lt; &gt; "
                                   "&quot; &apos; and &#N;)", (int)n, s, where);
    }
    adv(x, n + 2);
    return MXH_OK;
}

/* hwloc's minimalistic importer knows these references in values only; at any other it
 * stops reading the element's attributes without an error, and the object misses them. */
static mxh_status_t hwloc_reference(const xc_t *x, const char *where)
{
    static const char *const refs[] = {"&#10;", "&#13;", "&#9;", "&quot;", "&lt;", "&gt;",
                                       "&amp;"};

    for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++)
        if (starts(x, refs[i]))
            return MXH_OK;
    return bad(x, x->line, "reference in %s that hwloc does not read (it reads &#10; &#13; &#9; "
                           "&quot; &lt; &gt; &amp;)", where);
}

/* hwloc's rules for an attribute name @a of @el: [a-z_] only (the importer stops reading
 * attributes at another character, silently), '=' right after it. */
static mxh_status_t hwloc_attr_name(const xc_t *x, const span_t *el, const span_t *a)
{
    char buf[16];

    for (size_t i = 0; i < a->n; i++)
        if (!((a->s[i] >= 'a' && a->s[i] <= 'z') || a->s[i] == '_'))
            return bad(x, a->line, "attribute name '%.*s' of <%.*s> has '%c' (hwloc reads names "
                                   "of a-z and '_' only)",
                       (int)(a->n > 40 ? 40 : a->n), a->s, (int)(el->n > 40 ? 40 : el->n), el->s,
                       a->s[i]);
    if (eof(x) || *x->p != '=')
        return bad(x, x->line, "expected '=' right after attribute '%.*s' of <%.*s> (found %s; "
                               "hwloc reads no blank there)",
                   (int)(a->n > 40 ? 40 : a->n), a->s, (int)(el->n > 40 ? 40 : el->n), el->s,
                   found(x, buf));
    return MXH_OK;
}

/* The raw value of the element's attribute @name (x->attrs[0, n)), or NULL. */
static const span_t *attr_value(const xc_t *x, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (span_is(&x->attrs[i], name))
            return &x->vals[i];
    return NULL;
}

static int has_attr(const xc_t *x, int n, const char *name)
{
    return attr_value(x, n, name) != NULL;
}

/* Whether @v is a decimal number of at most @max. */
static int decimal_at_most(const span_t *v, unsigned long max)
{
    unsigned long x = 0;

    if (v->n == 0 || v->n > 12)
        return 0;
    for (size_t i = 0; i < v->n; i++) {
        if (v->s[i] < '0' || v->s[i] > '9')
            return 0;
        x = 10 * x + (unsigned long)(v->s[i] - '0');
    }
    return x <= max;
}

/* hwloc's rules for an <object>: its sets come in pairs. hwloc 2.9 dereferences a missing
 * complete_cpuset (hwloc_bitmap_compare_first) or complete_nodeset of an object that has the
 * other set of the pair. */
static mxh_status_t hwloc_object(const xc_t *x, const span_t *el, int n)
{
    static const char *const pairs[][2] = {{"cpuset", "complete_cpuset"},
                                           {"nodeset", "complete_nodeset"}};

    const span_t *v = attr_value(x, n, "nbobjs"), *type;

    /* the sizes hwloc allocates by: a distance matrix of nbobjs^2 values, a bitmap of
     * os_index bits (a hostile value took 512 MiB per rank) */
    if (v != NULL && !decimal_at_most(v, MXH_XML_HWLOC_MAX_NBOBJS))
        return bad(x, el->line, "nbobjs=\"%.*s\" of <%.*s> is not a number of at most %d",
                   (int)(v->n > 24 ? 24 : v->n), v->s, (int)(el->n > 40 ? 40 : el->n), el->s,
                   MXH_XML_HWLOC_MAX_NBOBJS);
    if (!span_is(el, "object"))
        return MXH_OK;
    type = attr_value(x, n, "type");
    v    = attr_value(x, n, "os_index");
    if (type != NULL && (span_is(type, "PU") || span_is(type, "NUMANode")) && v == NULL)
        return bad(x, el->line, "a %.*s without os_index (hwloc takes 2^32 - 1: a 512 MiB bitmap)",
                   (int)type->n, type->s);
    if (type != NULL && v != NULL && (span_is(type, "PU") || span_is(type, "NUMANode")) &&
        !decimal_at_most(v, MXH_XML_HWLOC_MAX_OS_INDEX))
        return bad(x, el->line, "os_index=\"%.*s\" of a %.*s is not a number of at most %d",
                   (int)(v->n > 24 ? 24 : v->n), v->s, (int)type->n, type->s,
                   MXH_XML_HWLOC_MAX_OS_INDEX);
    for (int i = 0; i < 2; i++)
        if (has_attr(x, n, pairs[i][0]) != has_attr(x, n, pairs[i][1]))
            return bad(x, el->line, "<object> with %s but no %s (hwloc needs both)",
                       has_attr(x, n, pairs[i][0]) ? pairs[i][0] : pairs[i][1],
                       has_attr(x, n, pairs[i][0]) ? pairs[i][1] : pairs[i][0]);
    return MXH_OK;
}

/* The quoted value of attribute @a of element @el. */
static mxh_status_t att_value(xc_t *x, const span_t *el, const span_t *a, span_t *val)
{
    char where[160], q, buf[16];
    int line = x->line;
    mxh_status_t st;

    snprintf(where, sizeof(where), "the value of attribute '%.*s' of <%.*s>",
             (int)(a->n > 40 ? 40 : a->n), a->s, (int)(el->n > 40 ? 40 : el->n), el->s);
    if (eof(x) || (*x->p != '"' && *x->p != '\''))
        return bad(x, x->line, "expected a quoted value for attribute '%.*s' of <%.*s> (found %s)",
                   (int)(a->n > 40 ? 40 : a->n), a->s, (int)(el->n > 40 ? 40 : el->n), el->s,
                   found(x, buf));
    q = *x->p;
    if (x->hwloc && q != '"')
        return bad(x, x->line, "%s is in single quotes (hwloc reads double quotes only)", where);
    adv(x, 1);
    val->s    = x->p;
    val->line = x->line;
    for (;;) {
        if (eof(x))
            return bad(x, line, "end of file inside %s (no closing %c)", where, q);
        if (*x->p == q) {
            val->n = (size_t)(x->p - val->s);
            adv(x, 1);
            return MXH_OK;
        }
        if (*x->p == '<')
            return bad(x, x->line, "'<' in %s (write &lt;)", where);
        if (x->hwloc && *x->p == '>')
            return bad(x, x->line, "'>' in %s (hwloc's reader ends the tag there: write &gt;)",
                       where);
        if (*x->p == '&') {
            if (x->hwloc && (st = hwloc_reference(x, where)) != MXH_OK)
                return st;
            if ((st = reference(x, where)) != MXH_OK)
                return st;
            continue;
        }
        size_t n = char_len(x);
        if (n == 0)
            return bad_char(x, where);
        adv(x, n);
    }
}

/* A start tag at '<': its name into @el, *@empty for '/>'. Attribute names are unique. */
static mxh_status_t start_tag(xc_t *x, span_t *el, int *empty)
{
    int line = x->line, nattrs = 0;
    mxh_status_t st;
    char buf[16];

    adv(x, 1);
    if ((st = name(x, "an element name after '<'", el)) != MXH_OK)
        return st;
    el->line = line;
    for (;;) {
        size_t sp = skip_space(x);
        span_t a;
        if (eof(x))
            return bad(x, line, "end of file inside the start tag of <%.*s> (no '>')",
                       (int)(el->n > 40 ? 40 : el->n), el->s);
        if (*x->p == '>' || starts(x, "/>")) {
            *empty = *x->p == '/';
            adv(x, *empty ? 2 : 1);
            return x->hwloc ? hwloc_object(x, el, nattrs) : MXH_OK;
        }
        if (sp == 0 || !name_start((unsigned char)*x->p))
            return bad(x, x->line, "expected %s'>' or '/>' in the start tag of <%.*s> (found %s)",
                       sp ? "an attribute name, " : "a space, ", (int)(el->n > 40 ? 40 : el->n),
                       el->s, found(x, buf));
        if ((st = name(x, "an attribute name", &a)) != MXH_OK)
            return st;
        for (int i = 0; i < nattrs; i++)
            if (x->attrs[i].n == a.n && memcmp(x->attrs[i].s, a.s, a.n) == 0)
                return bad(x, a.line, "attribute '%.*s' given twice in <%.*s>",
                           (int)(a.n > 40 ? 40 : a.n), a.s, (int)(el->n > 40 ? 40 : el->n),
                           el->s);
        if (nattrs == MXH_XML_CHECK_MAX_ATTRS)
            return bad(x, a.line, "more than %d attributes in <%.*s>", MXH_XML_CHECK_MAX_ATTRS,
                       (int)(el->n > 40 ? 40 : el->n), el->s);
        x->attrs[nattrs++] = a;
        if (x->hwloc && (st = hwloc_attr_name(x, el, &a)) != MXH_OK)
            return st;
        skip_space(x);
        if (eof(x) || *x->p != '=')
            return bad(x, x->line, "expected '=' after attribute '%.*s' of <%.*s> (found %s)",
                       (int)(a.n > 40 ? 40 : a.n), a.s, (int)(el->n > 40 ? 40 : el->n), el->s,
                       found(x, buf));
        adv(x, 1);
        skip_space(x);
        if ((st = att_value(x, el, &a, &x->vals[nattrs - 1])) != MXH_OK)
            return st;
    }
}

/* Opens element @el (nesting bounded). */
static mxh_status_t push(xc_t *x, const span_t *el)
{
    if (x->depth == MXH_XML_CHECK_MAX_DEPTH)
        return bad(x, el->line, "elements nested deeper than %d", MXH_XML_CHECK_MAX_DEPTH);
    x->open[x->depth++] = *el;
    return MXH_OK;
}

/* An end tag at "</", which must close the innermost open element. */
static mxh_status_t end_tag(xc_t *x)
{
    const span_t *top = &x->open[x->depth - 1];
    span_t el;
    mxh_status_t st;
    char buf[16];

    adv(x, 2);
    if ((st = name(x, "an element name after '</'", &el)) != MXH_OK)
        return st;
    skip_space(x);
    if (eof(x) || *x->p != '>')
        return bad(x, x->line, "expected '>' to end </%.*s> (found %s)",
                   (int)(el.n > 40 ? 40 : el.n), el.s, found(x, buf));
    if (el.n != top->n || memcmp(el.s, top->s, el.n) != 0)
        return bad(x, el.line, "</%.*s> does not close <%.*s> opened at line %d",
                   (int)(el.n > 40 ? 40 : el.n), el.s, (int)(top->n > 40 ? 40 : top->n), top->s,
                   top->line);
    adv(x, 1);
    x->depth--;
    return MXH_OK;
}

/* The content of the open elements, up to the end tag of the root. */
static mxh_status_t content(xc_t *x)
{
    mxh_status_t st = MXH_OK;
    char where[80];

    while (x->depth > 0 && st == MXH_OK) {
        const span_t *top = &x->open[x->depth - 1];
        if (eof(x))
            return bad(x, x->line, "end of file inside <%.*s> opened at line %d (truncated?)",
                       (int)(top->n > 40 ? 40 : top->n), top->s, top->line);
        if (*x->p == '<') {
            if (starts(x, "</")) {
                st = end_tag(x);
            } else if (starts(x, "<!--")) {
                st = comment(x);
            } else if (starts(x, "<![CDATA[")) {
                int line = x->line;
                adv(x, 9);
                st = text_until(x, "]]>", "a CDATA section", line);
            } else if (starts(x, "<?")) {
                st = pi(x);
            } else if (starts(x, "<!")) {
                st = bad(x, x->line, "markup '<!' inside <%.*s> (only comments and CDATA)",
                         (int)(top->n > 40 ? 40 : top->n), top->s);
            } else {
                span_t el;
                int empty = 0;
                if ((st = start_tag(x, &el, &empty)) == MXH_OK && !empty)
                    st = push(x, &el);
            }
            continue;
        }
        snprintf(where, sizeof(where), "the text of <%.*s>", (int)(top->n > 40 ? 40 : top->n),
                 top->s);
        if (*x->p == '&') {
            st = reference(x, where);
        } else if (starts(x, "]]>")) {
            st = bad(x, x->line, "']]>' in %s", where);
        } else {
            size_t n = char_len(x);
            if (n == 0)
                return bad_char(x, where);
            adv(x, n);
        }
    }
    return st;
}

/* Comments, processing instructions, blanks and (before the root, once) <!DOCTYPE>. */
static mxh_status_t misc(xc_t *x, span_t *dt)
{
    mxh_status_t st = MXH_OK;

    for (;;) {
        skip_space(x);
        if (starts(x, "<!--"))
            st = comment(x);
        else if (starts(x, "<?"))
            st = pi(x);
        else if (dt != NULL && starts(x, "<!DOCTYPE")) {
            if (dt->s != NULL)
                return bad(x, x->line, "second <!DOCTYPE> (the first at line %d)", dt->line);
            st = doctype(x, dt);
        } else
            return MXH_OK;
        if (st != MXH_OK)
            return st;
    }
}

static mxh_status_t document(xc_t *x)
{
    span_t dt = {NULL, 0, 0}, el;
    mxh_status_t st;
    int empty = 0;
    char buf[16];

    if (starts(x, "\xef\xbb\xbf"))
        adv(x, 3);
    if (starts(x, "<?xml") && x->end - x->p > 5 && (is_space(x->p[5]) || x->p[5] == '?') &&
        (st = xml_decl(x)) != MXH_OK)
        return st;
    if ((st = misc(x, &dt)) != MXH_OK)
        return st;
    if (eof(x))
        return bad(x, x->line, "no root element%s", x->line == 1 ? " (empty document)" : "");
    if (*x->p != '<' || starts(x, "<!"))
        return bad(x, x->line, "expected the root element <%s> (found %s)",
                   x->root ? x->root : "...", found(x, buf));
    if ((st = start_tag(x, &el, &empty)) != MXH_OK)
        return st;
    if (x->root != NULL && !span_is(&el, x->root))
        return bad(x, el.line, "the root element is <%.*s>, expected <%s>",
                   (int)(el.n > 40 ? 40 : el.n), el.s, x->root);
    if (dt.s != NULL && (dt.n != el.n || memcmp(dt.s, el.s, el.n) != 0))
        return bad(x, dt.line, "<!DOCTYPE %.*s> does not name the root element <%.*s>",
                   (int)(dt.n > 40 ? 40 : dt.n), dt.s, (int)(el.n > 40 ? 40 : el.n), el.s);
    if (!empty && ((st = push(x, &el)) != MXH_OK || (st = content(x)) != MXH_OK))
        return st;
    if ((st = misc(x, NULL)) != MXH_OK)
        return st;
    if (!eof(x))
        return bad(x, x->line, "%s after the root element <%.*s> (line %d) ended",
                   *x->p == '<' ? "markup" : "text", (int)(el.n > 40 ? 40 : el.n), el.s,
                   el.line);
    return MXH_OK;
}

static mxh_status_t check(const char *text, size_t len, const char *source, const char *what,
                          const char *root, int flags)
{
    xc_t *x;
    mxh_status_t st;

    if (text == NULL && len > 0) {
        mxh_error("mxh_xml_check: NULL text");
        return MXH_ERR_INVALID_PARAM;
    }
    if (source == NULL)
        source = "<XML>";
    if (len > MXH_XML_CHECK_MAX_BYTES) {
        mxh_error("%s: %zu bytes, more than the limit of %zu bytes for an XML document", source,
                  len, MXH_XML_CHECK_MAX_BYTES);
        return MXH_ERR_PARSE;
    }
    if ((x = malloc(sizeof(*x))) == NULL) {
        mxh_error("%s: out of memory", source);
        return MXH_ERR_NO_MEMORY;
    }
    x->src   = source;
    x->what  = what;
    x->root  = root;
    x->p     = text != NULL ? text : "";
    x->end   = x->p + len;
    x->line  = 1;
    x->enc   = ENC_UTF8;
    x->hwloc = (flags & MXH_XML_HWLOC) != 0;
    x->depth = 0;
    st = document(x);
    free(x);
    return st;
}

mxh_status_t mxh_xml_check(const char *text, size_t len, const char *source, const char *root)
{
    return check(text, len, source, NULL, root, 0);
}

mxh_status_t mxh_xml_check_hwloc(const char *text, size_t len, const char *source)
{
    return check(text, len, source, NULL, "topology", MXH_XML_HWLOC);
}

mxh_status_t mxh_xml_read_checked(const char *path, const char *what, const char *root,
                                  int flags, char **text_p, size_t *len_p)
{
    FILE *f;
    struct stat sb;
    mxh_status_t st;
    char *text = NULL;
    size_t len = 0;

    if (path == NULL || text_p == NULL || len_p == NULL) {
        mxh_error("mxh_xml_read_checked: NULL argument");
        return MXH_ERR_INVALID_PARAM;
    }
    *text_p = NULL;
    *len_p = 0;
    if (what == NULL)
        what = "XML file";
    if ((f = fopen(path, "rb")) == NULL) {
        mxh_error("cannot open %s %s: %s", what, path, strerror(errno));
        return MXH_ERR_IO;
    }
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) &&
        (unsigned long long)sb.st_size > (unsigned long long)MXH_XML_CHECK_MAX_BYTES) {
        mxh_error("%s: %s of %lld bytes, more than the limit of %zu bytes", path, what,
                  (long long)sb.st_size, MXH_XML_CHECK_MAX_BYTES);
        fclose(f);
        return MXH_ERR_PARSE;
    }
    st = mxh_topo_read_text(f, path, what, MXH_XML_CHECK_MAX_BYTES, &text, &len);
    fclose(f);
    if (st == MXH_OK && (st = check(text, len, path, what, root, flags)) != MXH_OK) {
        free(text);
        text = NULL;
    }
    if (st == MXH_OK) {
        *text_p = text;
        *len_p = len;
    }
    return st;
}
