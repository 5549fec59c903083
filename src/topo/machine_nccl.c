/* Machine record from an NCCL topology file (the XML that NCCL_TOPO_FILE
 * names and NCCL_TOPO_DUMP_FILE writes; root <system version="1">).
 *
 * XML: a small self-contained tokenizer (no libxml2) builds a tree of
 * elements and attributes. Accepted: an optional UTF-8 byte order mark, the
 * <?xml ...?> declaration and other processing instructions, comments
 * <!-- -->, one <!DOCTYPE ...> before the root, CDATA sections and text
 * inside elements (ignored), self-closing tags, attribute values in '...' or
 * "..." with the entities &amp; &lt; &gt; &quot; &apos; and character
 * references &#N; &#xH; decoded. Everything else that is not well-formed XML
 * (mismatched or unclosed tags, attributes without a quoted value, duplicate
 * attributes, '<' in a value, unknown entities, control characters, text or a
 * second element outside the root, nesting deeper than XML_MAX_DEPTH) is
 * MXH_ERR_PARSE with "FILE:LINE: cause" logged at error level.
 *
 * Semantics (NCCL's own reading of the file, src/graph/topo.cc):
 *  - <cpu numaid=N> is a NUMA node; nested <pci> elements are PCIe switches
 *    (bridges) and devices, in the order of the PCIe tree.
 *  - GPU: a <pci> with a <gpu> child, or whose class is 0x0300xx/0x0302xx and
 *    whose vendor is NVIDIA (0x10de) or not given (static files such as
 *    Azure's ndv5 list bare <pci busid class="0x030200"/> leaves). A display
 *    controller of another vendor without <gpu> (a BMC's VGA) is not a GPU.
 *  - NIC: a <pci> with a <nic> child or whose class is 0x02xxxx; a <nic>
 *    directly under a <cpu> (no PCI path) is also accepted (bus id "").
 *  - Rails are counted per network PORT, as NCCL counts net devices: each
 *    <net> child of a <nic> is one entry of nics[] (name = the net name,
 *    e.g. "mlx5_0"; bus id = the PCI function). A NIC without <net> children
 *    is one entry with an empty name. OCI's BM.GPU.H100.8 has 8 dual-port
 *    ConnectX-7 functions = 16 ports = 16 nics[] entries; 8 GPUs then take 8
 *    distinct ports (one per NIC function), the other 8 serve no GPU.
 *  - When some ports are HPC (InfiniBand/Omni-Path class 0x0207/0x0208,
 *    Mellanox 0x15b3, AWS EFA 0x1d0f:efaX, a <net gdr="1">, or an RDMA
 *    device name mlx*, hfi*, rdmap*, efa*, bnxt_re*, irdma*, qedr*, ib*),
 *    only those are kept as rails; plain Ethernet ports are dropped.
 *  - PCIe distance GPU<->NIC from the nesting (NCCL path types in brackets):
 *    same parent <pci> (switch) = MXH_PCI_SAME_SWITCH [PIX];
 *    same top-level <pci> under the <cpu> = MXH_PCI_SAME_HOSTBRIDGE [PXB];
 *    same <cpu> = MXH_PCI_SAME_NUMA [PHB];
 *    different <cpu> = MXH_PCI_OTHER_SOCKET [SYS]; no <cpu> known = UNKNOWN.
 *  - Assignment: GPUs in bus order; among the ports at the smallest distance
 *    the one with the fewest GPUs so far, ties by bus order (then port
 *    order). Equal counts give a one-to-one map; more GPUs than ports share
 *    (AWS p4d: 2 A100 per EFA).
 *  - NVLink: <nvlink target=BUSID tclass=...> children of <gpu>. All GPUs
 *    with a link to an NVSwitch (tclass 0x068000) form one island; a link to
 *    another GPU (tclass 0x03xxxx, or no tclass and the target is a GPU of the
 *    file) joins the two islands; links to CPUs (0x068001) are ignored.
 *    Islands are numbered by their first GPU in bus order. has_nvlink = the
 *    file holds at least one <nvlink>; without any, every GPU is its own
 *    island.
 *  - numa = the enclosing <cpu>'s numaid (-1 if none or not a number);
 *    package = -1 (the format does not say); model = "" (the format has no
 *    model name).
 * The NCCL format may carry more (<nvlink> counts, <c2c>, link speeds); it is
 * read and ignored. */
#include "topo/machine.h"
#include "util/log.h"
#include "util/str.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XML_MAX_DEPTH 64
#define XML_MAX_BYTES ((size_t)64 << 20)
#define XML_MAX_ATTRS 256

/* ------------------------------------------------------------------------ */
/* XML tree                                                                 */

typedef struct xattr {
    char *name;
    char *value;
} xattr_t;

typedef struct xnode {
    char         *name;
    int           line;
    xattr_t      *attrs;
    int           nattrs, cap_attrs;
    struct xnode *parent, *child, *last, *next;
} xnode_t;

static void xnode_free(xnode_t *n)
{
    while (n != NULL) {
        xnode_t *next = n->next;
        xnode_free(n->child); /* recursion bounded by XML_MAX_DEPTH */
        for (int i = 0; i < n->nattrs; i++) {
            free(n->attrs[i].name);
            free(n->attrs[i].value);
        }
        free(n->attrs);
        free(n->name);
        free(n);
        n = next;
    }
}

static const char *xattr_get(const xnode_t *n, const char *name)
{
    for (int i = 0; i < n->nattrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return n->attrs[i].value;
    return NULL;
}

static const xnode_t *xchild(const xnode_t *n, const char *name)
{
    for (const xnode_t *c = n->child; c != NULL; c = c->next)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* XML tokenizer                                                            */

typedef struct xparser {
    const char *path;
    const char *p, *end;
    int         line;
    xnode_t    *root;
    xnode_t    *cur;   /* innermost open element, NULL at top level */
    int         depth;
    int         root_closed;
} xparser_t;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static mxh_status_t xerr(const xparser_t *x, int line, const char *fmt, ...)
{
    char    msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    mxh_error("%s:%d: %s", x->path, line, msg);
    return MXH_ERR_PARSE;
}

static int x_eof(const xparser_t *x) { return x->p >= x->end; }

static int x_starts(const xparser_t *x, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(x->end - x->p) >= n && memcmp(x->p, s, n) == 0;
}

/* Advance one character, counting lines. */
static void x_adv(xparser_t *x)
{
    if (*x->p == '\n')
        x->line++;
    x->p++;
}

static void x_advn(xparser_t *x, size_t n)
{
    while (n-- > 0 && !x_eof(x))
        x_adv(x);
}

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Bytes that may never appear in an XML document. */
static int is_bad_char(unsigned char c) { return c < 0x20 && !is_space(c); }

static int is_name_start(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || c >= 0x80;
}

static int is_name_char(unsigned char c)
{
    return is_name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

static void x_skip_space(xparser_t *x)
{
    while (!x_eof(x) && is_space((unsigned char)*x->p))
        x_adv(x);
}

/* Printable form of the character at the cursor, for messages. */
static const char *x_show(const xparser_t *x, char buf[8])
{
    if (x_eof(x))
        return "end of file";
    unsigned char c = (unsigned char)*x->p;
    if (c >= 0x21 && c < 0x7f)
        snprintf(buf, 8, "'%c'", c);
    else
        snprintf(buf, 8, "0x%02x", c);
    return buf;
}

/* Skip up to and including @term; error at @start_line if absent. Control
 * characters are errors. */
static mxh_status_t x_skip_until(xparser_t *x, const char *term, int start_line, const char *what)
{
    while (!x_eof(x)) {
        if (x_starts(x, term)) {
            x_advn(x, strlen(term));
            return MXH_OK;
        }
        if (is_bad_char((unsigned char)*x->p))
            return xerr(x, x->line, "invalid character 0x%02x in %s", (unsigned char)*x->p, what);
        x_adv(x);
    }
    return xerr(x, start_line, "unterminated %s (no '%s' before the end of file)", what, term);
}

/* Read a name at the cursor into a new string. */
static mxh_status_t x_name(xparser_t *x, const char *what, char **out)
{
    char        buf[8];
    const char *s = x->p;
    if (x_eof(x) || !is_name_start((unsigned char)*x->p))
        return xerr(x, x->line, "expected %s, found %s", what, x_show(x, buf));
    while (!x_eof(x) && is_name_char((unsigned char)*x->p))
        x->p++; /* names hold no newline */
    size_t n = (size_t)(x->p - s);
    char  *d = malloc(n + 1);
    if (d == NULL) {
        mxh_error("%s: out of memory", x->path);
        return MXH_ERR_NO_MEMORY;
    }
    memcpy(d, s, n);
    d[n] = '\0';
    *out = d;
    return MXH_OK;
}

/* Append code point @cp as UTF-8. */
static size_t utf8_put(char *d, unsigned long cp)
{
    if (cp < 0x80) {
        d[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (char)(0xc0 | (cp >> 6));
        d[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (char)(0xe0 | (cp >> 12));
        d[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        d[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    d[0] = (char)(0xf0 | (cp >> 18));
    d[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    d[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    d[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Decode the entity at the cursor ('&'), append it to @d; returns bytes
 * written (<= the entity's own length), or -1 after logging. */
static int x_entity(xparser_t *x, char *d)
{
    static const struct {
        const char *name;
        char        c;
    } named[] = {{"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}};
    const char *s = x->p + 1;
    size_t      avail = (size_t)(x->end - s);
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
        size_t n = strlen(named[i].name);
        if (avail >= n && memcmp(s, named[i].name, n) == 0) {
            x->p = s + n;
            d[0] = named[i].c;
            return 1;
        }
    }
    if (avail >= 1 && *s == '#') {
        int           hex = avail >= 2 && s[1] == 'x';
        const char   *q = s + 1 + hex;
        unsigned long cp = 0;
        int           nd = 0;
        for (; q < x->end && nd < 8; q++, nd++) {
            int v;
            if (*q >= '0' && *q <= '9')
                v = *q - '0';
            else if (hex && *q >= 'a' && *q <= 'f')
                v = *q - 'a' + 10;
            else if (hex && *q >= 'A' && *q <= 'F')
                v = *q - 'A' + 10;
            else
                break;
            cp = cp * (hex ? 16 : 10) + (unsigned long)v;
        }
        if (nd > 0 && q < x->end && *q == ';' && cp != 0 && cp <= 0x10ffff &&
            !(cp >= 0xd800 && cp <= 0xdfff) && (cp >= 0x20 || is_space((unsigned char)cp)) &&
            (size_t)(q + 1 - x->p) >= 4) {
            /* "&#N;" is at least 4 bytes; the UTF-8 form is at most 4 */
            size_t w = utf8_put(d, cp);
            if (w <= (size_t)(q + 1 - x->p)) {
                x->p = q + 1;
                return (int)w;
            }
        }
        xerr(x, x->line, "invalid character reference");
        return -1;
    }
    xerr(x, x->line, "unknown or unterminated entity (only &amp; &lt; &gt; &quot; &apos; &#N; "
                     "are allowed; a literal '&' must be written &amp;)");
    return -1;
}

/* Quoted attribute value at the cursor -> new decoded string. */
static mxh_status_t x_value(xparser_t *x, char **out)
{
    char buf[8];
    if (x_eof(x) || (*x->p != '"' && *x->p != '\''))
        return xerr(x, x->line, "attribute value must be quoted, found %s", x_show(x, buf));
    char        q = *x->p;
    int         start_line = x->line;
    const char *s = ++x->p;
    const char *e = memchr(s, q, (size_t)(x->end - s));
    if (e == NULL)
        return xerr(x, start_line, "unterminated attribute value (no closing %c)", q);
    char *d = malloc((size_t)(e - s) + 1);
    if (d == NULL) {
        mxh_error("%s: out of memory", x->path);
        return MXH_ERR_NO_MEMORY;
    }
    size_t n = 0;
    while (x->p < e) {
        unsigned char c = (unsigned char)*x->p;
        if (c == '<') {
            free(d);
            return xerr(x, x->line, "'<' is not allowed in an attribute value");
        } else if (c == '&') {
            int w = x_entity(x, d + n);
            if (w < 0 || x->p > e) {
                free(d);
                if (w >= 0)
                    return xerr(x, x->line, "entity runs past the end of the value");
                return MXH_ERR_PARSE;
            }
            n += (size_t)w;
        } else if (is_bad_char(c)) {
            free(d);
            return xerr(x, x->line, "invalid character 0x%02x in an attribute value", c);
        } else {
            d[n++] = is_space(c) ? ' ' : (char)c; /* attribute-value normalization */
            x_adv(x);
        }
    }
    d[n] = '\0';
    x->p = e + 1;
    *out = d;
    return MXH_OK;
}

static mxh_status_t x_add_attr(xparser_t *x, xnode_t *n, char *name, char *value, int line)
{
    for (int i = 0; i < n->nattrs; i++) {
        if (strcmp(n->attrs[i].name, name) == 0) {
            mxh_status_t st = xerr(x, line, "duplicate attribute '%s' in <%s>", name, n->name);
            free(name);
            free(value);
            return st;
        }
    }
    if (n->nattrs >= XML_MAX_ATTRS) {
        free(name);
        free(value);
        return xerr(x, line, "more than %d attributes in <%s>", XML_MAX_ATTRS, n->name);
    }
    if (n->nattrs == n->cap_attrs) {
        int      ncap = n->cap_attrs ? 2 * n->cap_attrs : 8;
        xattr_t *a = realloc(n->attrs, (size_t)ncap * sizeof(*a));
        if (a == NULL) {
            free(name);
            free(value);
            mxh_error("%s: out of memory", x->path);
            return MXH_ERR_NO_MEMORY;
        }
        n->attrs = a;
        n->cap_attrs = ncap;
    }
    n->attrs[n->nattrs].name = name;
    n->attrs[n->nattrs].value = value;
    n->nattrs++;
    return MXH_OK;
}

/* Start tag at the cursor ('<' already consumed). */
static mxh_status_t x_start_tag(xparser_t *x, int line)
{
    char         buf[8];
    mxh_status_t st;
    if (x->cur == NULL && x->root_closed)
        return xerr(x, line, "a second top-level element after the root <%s> was closed",
                    x->root->name);
    if (x->depth >= XML_MAX_DEPTH)
        return xerr(x, line, "elements nested deeper than %d levels", XML_MAX_DEPTH);

    xnode_t *n = calloc(1, sizeof(*n));
    if (n == NULL) {
        mxh_error("%s: out of memory", x->path);
        return MXH_ERR_NO_MEMORY;
    }
    n->line = line;
    st = x_name(x, "an element name after '<'", &n->name);
    if (st != MXH_OK) {
        free(n);
        return st;
    }
    /* link it into the tree now so that it is freed with it */
    n->parent = x->cur;
    if (x->cur == NULL) {
        x->root = n;
        if (strcmp(n->name, "system") != 0)
            return xerr(x, line,
                        "root element is <%s>, expected <system> (not an NCCL topology file)",
                        n->name);
    } else {
        if (x->cur->last)
            x->cur->last->next = n;
        else
            x->cur->child = n;
        x->cur->last = n;
    }

    for (;;) {
        int had_space = !x_eof(x) && is_space((unsigned char)*x->p);
        x_skip_space(x);
        if (x_eof(x))
            return xerr(x, line, "unexpected end of file inside the tag <%s>", n->name);
        if (*x->p == '>') {
            x->p++;
            x->cur = n;
            x->depth++;
            return MXH_OK;
        }
        if (x_starts(x, "/>")) {
            x->p += 2;
            if (x->cur == NULL)
                x->root_closed = 1;
            return MXH_OK;
        }
        if (!had_space)
            return xerr(x, x->line, "expected white space, '>' or '/>' in <%s>, found %s",
                        n->name, x_show(x, buf));
        int   aline = x->line;
        char *aname = NULL, *aval = NULL;
        st = x_name(x, "an attribute name", &aname);
        if (st != MXH_OK)
            return st;
        x_skip_space(x);
        if (x_eof(x) || *x->p != '=') {
            st = xerr(x, x->line, "attribute '%.64s' in <%s> has no '=' and value", aname,
                      n->name);
            free(aname);
            return st;
        }
        x->p++;
        x_skip_space(x);
        st = x_value(x, &aval);
        if (st != MXH_OK) {
            free(aname);
            return st;
        }
        st = x_add_attr(x, n, aname, aval, aline);
        if (st != MXH_OK)
            return st;
    }
}

/* End tag at the cursor ("</" already consumed). */
static mxh_status_t x_end_tag(xparser_t *x, int line)
{
    char         buf[8];
    char        *name = NULL;
    mxh_status_t st = x_name(x, "an element name after '</'", &name);
    if (st != MXH_OK)
        return st;
    x_skip_space(x);
    if (x_eof(x) || *x->p != '>') {
        st = xerr(x, x->line, "expected '>' to end </%s>, found %s", name, x_show(x, buf));
        free(name);
        return st;
    }
    x->p++;
    if (x->cur == NULL) {
        st = xerr(x, line, "closing tag </%s> without an open element", name);
    } else if (strcmp(name, x->cur->name) != 0) {
        st = xerr(x, line, "closing tag </%s> does not match <%s> opened at line %d", name,
                  x->cur->name, x->cur->line);
    } else {
        x->cur = x->cur->parent;
        x->depth--;
        if (x->cur == NULL)
            x->root_closed = 1;
    }
    free(name);
    return st;
}

/* Skip <!DOCTYPE ...> including an internal subset in [...]. */
static mxh_status_t x_doctype(xparser_t *x, int line)
{
    int  bracket = 0;
    char quote = 0;
    if (x->root != NULL)
        return xerr(x, line, "<!DOCTYPE> after the root element");
    while (!x_eof(x)) {
        char c = *x->p;
        if (is_bad_char((unsigned char)c))
            return xerr(x, x->line, "invalid character 0x%02x in <!DOCTYPE>", (unsigned char)c);
        x_adv(x);
        if (quote) {
            if (c == quote)
                quote = 0;
        } else if (c == '"' || c == '\'') {
            quote = c;
        } else if (c == '[') {
            bracket++;
        } else if (c == ']' && bracket > 0) {
            bracket--;
        } else if (c == '>' && bracket == 0) {
            return MXH_OK;
        }
    }
    return xerr(x, line, "unterminated <!DOCTYPE>");
}

static mxh_status_t xml_parse(const char *path, const char *buf, size_t len, xnode_t **root_p)
{
    char         show[8];
    mxh_status_t st = MXH_OK;
    xparser_t    x = {.path = path, .p = buf, .end = buf + len, .line = 1};

    if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
        x.p += 3;
    while (!x_eof(&x)) {
        unsigned char c = (unsigned char)*x.p;
        int           line = x.line;
        if (c == '<') {
            if (x_starts(&x, "<!--")) {
                x.p += 4;
                st = x_skip_until(&x, "-->", line, "comment");
            } else if (x_starts(&x, "<?")) {
                x.p += 2;
                if (x_eof(&x) || !is_name_start((unsigned char)*x.p)) {
                    st = xerr(&x, line, "expected a processing-instruction target after '<?'");
                } else {
                    st = x_skip_until(&x, "?>", line, "processing instruction");
                }
            } else if (x_starts(&x, "<![CDATA[")) {
                if (x.cur == NULL)
                    st = xerr(&x, line, "CDATA section outside the root element");
                else {
                    x.p += 9;
                    st = x_skip_until(&x, "]]>", line, "CDATA section");
                }
            } else if (x_starts(&x, "<!DOCTYPE")) {
                x.p += 9;
                st = x_doctype(&x, line);
            } else if (x_starts(&x, "<!")) {
                st = xerr(&x, line, "unsupported markup '<!' (only comments, CDATA and DOCTYPE)");
            } else if (x_starts(&x, "</")) {
                x.p += 2;
                st = x_end_tag(&x, line);
            } else {
                x.p++;
                st = x_start_tag(&x, line);
            }
        } else if (is_bad_char(c)) {
            st = xerr(&x, line, "invalid character 0x%02x", c);
        } else if (x.cur == NULL && !is_space(c)) {
            st = xerr(&x, line, "text %s outside the root element", x_show(&x, show));
        } else {
            x_adv(&x); /* character data inside an element: not used */
        }
        if (st != MXH_OK)
            goto out;
    }
    if (x.cur != NULL) {
        st = xerr(&x, x.line, "unexpected end of file: <%s> opened at line %d is not closed",
                  x.cur->name, x.cur->line);
    } else if (x.root == NULL) {
        st = xerr(&x, x.line, "no root element (empty file?)");
    }
out:
    if (st != MXH_OK) {
        xnode_free(x.root);
        return st;
    }
    *root_p = x.root;
    return MXH_OK;
}

/* ------------------------------------------------------------------------ */
/* values                                                                   */

/* "0x030200" / "030200" -> value; -1 if absent or not hex. */
static long hex_attr(const xnode_t *n, const char *name)
{
    const char *s = xattr_get(n, name);
    if (s == NULL)
        return -1;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    if (*s == '\0' || strlen(s) > 8)
        return -1;
    long v = 0;
    for (; *s; s++) {
        int d;
        if (*s >= '0' && *s <= '9')
            d = *s - '0';
        else if (*s >= 'a' && *s <= 'f')
            d = *s - 'a' + 10;
        else if (*s >= 'A' && *s <= 'F')
            d = *s - 'A' + 10;
        else
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Decimal attribute; -1 if absent or not a non-negative number. */
static int int_attr(const xnode_t *n, const char *name)
{
    const char *s = xattr_get(n, name);
    if (s == NULL || *s == '\0' || strlen(s) > 9)
        return -1;
    int v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (*s - '0');
    }
    return v;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Parse up to @maxd hex digits (at least 1) from *s into *v. */
static int hexfield(const char **s, int maxd, unsigned long *v)
{
    int n = 0;
    *v = 0;
    while (n < maxd && hexval(**s) >= 0) {
        *v = *v * 16 + (unsigned long)hexval(**s);
        (*s)++;
        n++;
    }
    return n > 0;
}

/* [dddd:]bb:dd.f (any case; the domain may have up to 8 digits if its value
 * fits in 16 bits) -> "dddd:bb:dd.f". Own helper so that this file does not
 * depend on mxh_busid_normalize's implementation. */
static int nccl_busid(const char *in, char out[MXH_BUSID_LEN])
{
    unsigned long dom = 0, bus, dev, fn;
    const char   *s = in, *colon1, *colon2;
    if (in == NULL)
        return -1;
    colon1 = strchr(s, ':');
    colon2 = colon1 ? strchr(colon1 + 1, ':') : NULL;
    if (colon2 != NULL) {
        if (!hexfield(&s, 8, &dom) || *s != ':' || dom > 0xffff)
            return -1;
        s++;
    }
    if (!hexfield(&s, 2, &bus) || *s++ != ':')
        return -1;
    if (!hexfield(&s, 2, &dev) || *s++ != '.' || dev > 0x1f)
        return -1;
    if (!hexfield(&s, 1, &fn) || *s != '\0' || fn > 7)
        return -1;
    snprintf(out, MXH_BUSID_LEN, "%04lx:%02lx:%02lx.%lx", dom, bus, dev, fn);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* devices                                                                  */

enum { DEV_GPU, DEV_NIC };

typedef struct ndev {
    int            kind;
    char           busid[MXH_BUSID_LEN];
    const xnode_t *node;   /* the <pci> (or a cpu-level <nic>) */
    const xnode_t *gpu;    /* <gpu> child, GPU only */
    const xnode_t *net;    /* <net>, NIC port only (may be NULL) */
    const xnode_t *cpu;    /* enclosing <cpu>, or NULL */
    const xnode_t *sw;     /* parent <pci>, or NULL */
    const xnode_t *top;    /* outermost ancestor <pci> below the cpu, or NULL */
    int            numa;
    int            hpc;
    int            order;  /* document order */
} ndev_t;

typedef struct nccl_ctx {
    const char *path;
    ndev_t     *devs;
    int         ndevs, cap;
} nccl_ctx_t;

static mxh_status_t add_dev(nccl_ctx_t *c, const ndev_t *d)
{
    if (c->ndevs == c->cap) {
        if (c->cap > (1 << 20)) {
            mxh_error("%s: too many devices", c->path);
            return MXH_ERR_PARSE;
        }
        int     ncap = c->cap ? 2 * c->cap : 32;
        ndev_t *a = realloc(c->devs, (size_t)ncap * sizeof(*a));
        if (a == NULL) {
            mxh_error("%s: out of memory", c->path);
            return MXH_ERR_NO_MEMORY;
        }
        c->devs = a;
        c->cap = ncap;
    }
    c->devs[c->ndevs] = *d;
    c->devs[c->ndevs].order = c->ndevs;
    c->ndevs++;
    return MXH_OK;
}

static int has_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static int rdma_name(const char *s)
{
    static const char *const pfx[] = {"mlx", "hfi", "rdmap", "efa", "bnxt_re", "irdma",
                                      "qedr", "ib", "erdma", "cxi"};
    for (size_t i = 0; i < sizeof(pfx) / sizeof(pfx[0]); i++)
        if (has_prefix(s, pfx[i]))
            return 1;
    return 0;
}

/* HPC (RDMA-capable) port: by PCI class/vendor of the function (if any) or
 * by the <net> description. */
static int nic_is_hpc(const xnode_t *pci, const xnode_t *net)
{
    if (pci != NULL) {
        long cls = hex_attr(pci, "class"), ven = hex_attr(pci, "vendor"),
             dev = hex_attr(pci, "device");
        if (cls >= 0 && ((cls >> 8) == 0x0207 || (cls >> 8) == 0x0208))
            return 1;
        if (ven == 0x15b3)
            return 1;
        if (ven == 0x1d0f && dev >= 0 && (dev & 0xfff0) == 0xefa0)
            return 1;
    }
    if (net != NULL) {
        const char *name = xattr_get(net, "name");
        const char *gdr = xattr_get(net, "gdr");
        if (gdr != NULL && strcmp(gdr, "1") == 0)
            return 1;
        if (name != NULL && rdma_name(name))
            return 1;
    }
    return 0;
}

/* One NIC record per <net> of the <nic> @holder, or of each <nic> child of
 * the <pci> @holder (one record without a name when there is no <net>). */
static mxh_status_t add_nic_ports(nccl_ctx_t *c, const ndev_t *base, const xnode_t *holder,
                                  const xnode_t *pci)
{
    mxh_status_t   st;
    int            nports = 0;
    int            single = strcmp(holder->name, "nic") == 0;
    const xnode_t *nic = single ? holder : holder->child;
    for (; nic != NULL; nic = single ? NULL : nic->next) {
        if (strcmp(nic->name, "nic") != 0)
            continue;
        for (const xnode_t *net = nic->child; net != NULL; net = net->next) {
            if (strcmp(net->name, "net") != 0)
                continue;
            ndev_t d = *base;
            d.net = net;
            d.hpc = nic_is_hpc(pci, net);
            st = add_dev(c, &d);
            if (st != MXH_OK)
                return st;
            nports++;
        }
    }
    if (nports == 0) {
        ndev_t d = *base;
        d.net = NULL;
        d.hpc = nic_is_hpc(pci, NULL);
        return add_dev(c, &d);
    }
    return MXH_OK;
}

static mxh_status_t classify_pci(nccl_ctx_t *c, const xnode_t *pci, const xnode_t *cpu,
                                 const xnode_t *top, const xnode_t *sw, int numa)
{
    const xnode_t *gpu = xchild(pci, "gpu");
    const xnode_t *nic = xchild(pci, "nic");
    long           cls = hex_attr(pci, "class");
    long           ven = hex_attr(pci, "vendor");
    int            is_gpu, is_nic;

    is_gpu = gpu != NULL || (cls >= 0 && ((cls >> 8) == 0x0300 || (cls >> 8) == 0x0302) &&
                             (ven < 0 || ven == 0x10de || ven == 0 || ven == 0xffff));
    is_nic = !is_gpu && (nic != NULL || (cls >= 0 && (cls >> 16) == 0x02));
    if (!is_gpu && !is_nic)
        return MXH_OK;

    ndev_t d;
    memset(&d, 0, sizeof(d));
    d.kind = is_gpu ? DEV_GPU : DEV_NIC;
    d.node = pci;
    d.gpu = gpu;
    d.cpu = cpu;
    d.sw = sw;
    d.top = top;
    d.numa = numa;
    const char *busid = xattr_get(pci, "busid");
    if (busid == NULL) {
        mxh_error("%s:%d: %s <pci> has no busid attribute", c->path, pci->line,
                  is_gpu ? "GPU" : "NIC");
        return MXH_ERR_PARSE;
    }
    if (nccl_busid(busid, d.busid) != 0) {
        mxh_error("%s:%d: invalid PCI bus id \"%.40s\" (expected [dddd:]bb:dd.f)", c->path,
                  pci->line, busid);
        return MXH_ERR_PARSE;
    }
    if (is_gpu)
        return add_dev(c, &d);
    return add_nic_ports(c, &d, pci, pci);
}

static mxh_status_t walk(nccl_ctx_t *c, const xnode_t *n, const xnode_t *cpu, const xnode_t *top,
                         const xnode_t *sw, int numa)
{
    mxh_status_t st;
    for (const xnode_t *ch = n->child; ch != NULL; ch = ch->next) {
        if (strcmp(ch->name, "cpu") == 0) {
            st = walk(c, ch, ch, NULL, NULL, int_attr(ch, "numaid"));
        } else if (strcmp(ch->name, "pci") == 0) {
            st = classify_pci(c, ch, cpu, top, sw, numa);
            if (st == MXH_OK)
                st = walk(c, ch, cpu, top ? top : ch, ch, numa);
        } else if (strcmp(ch->name, "nic") == 0 && strcmp(n->name, "pci") != 0) {
            /* a NIC without PCI path (NCCL writes those under the <cpu>) */
            ndev_t d;
            memset(&d, 0, sizeof(d));
            d.kind = DEV_NIC;
            d.node = ch;
            d.cpu = cpu;
            d.numa = numa;
            st = add_nic_ports(c, &d, ch, NULL);
        } else {
            st = MXH_OK; /* <gpu>, <nic> of a pci, <nvlink>, <net>, unknown: read elsewhere */
        }
        if (st != MXH_OK)
            return st;
    }
    return MXH_OK;
}

static int cmp_dev(const void *a, const void *b)
{
    const ndev_t *x = a, *y = b;
    /* bus ids are fixed-width lower case, so strcmp is bus order; "" last */
    if (x->busid[0] == '\0' && y->busid[0] != '\0')
        return 1;
    if (y->busid[0] == '\0' && x->busid[0] != '\0')
        return -1;
    int r = strcmp(x->busid, y->busid);
    if (r != 0)
        return r;
    return (x->order > y->order) - (x->order < y->order);
}

static mxh_pci_distance_t dev_distance(const ndev_t *g, const ndev_t *n)
{
    if (g->sw != NULL && g->sw == n->sw)
        return MXH_PCI_SAME_SWITCH;
    if (g->top != NULL && g->top == n->top)
        return MXH_PCI_SAME_HOSTBRIDGE;
    if (g->cpu != NULL && n->cpu != NULL) {
        if (g->cpu == n->cpu || (g->numa >= 0 && g->numa == n->numa))
            return MXH_PCI_SAME_NUMA;
        return MXH_PCI_OTHER_SOCKET;
    }
    return MXH_PCI_UNKNOWN;
}

/* NVLink islands over the sorted GPUs @g[0..ng). */
static mxh_status_t nvlink_islands(const char *path, const ndev_t *g, int ng, mxh_machine_t *m)
{
    int *parent = malloc(((size_t)ng + 1) * sizeof(int));
    int *id = malloc(((size_t)ng + 1) * sizeof(int));
    if (parent == NULL || id == NULL) {
        free(parent);
        free(id);
        mxh_error("%s: out of memory", path);
        return MXH_ERR_NO_MEMORY;
    }
    for (int i = 0; i <= ng; i++) {
        parent[i] = i; /* index ng stands for the NVSwitch fabric */
        id[i] = -1;
    }
    int nlinks = 0;
    for (int i = 0; i < ng; i++) {
        if (g[i].gpu == NULL)
            continue;
        for (const xnode_t *l = g[i].gpu->child; l != NULL; l = l->next) {
            if (strcmp(l->name, "nvlink") != 0)
                continue;
            nlinks++;
            long        tclass = hex_attr(l, "tclass");
            const char *target = xattr_get(l, "target");
            char        tb[MXH_BUSID_LEN];
            int         tgpu = -1;
            if (target != NULL && nccl_busid(target, tb) == 0)
                for (int j = 0; j < ng; j++)
                    if (strcmp(g[j].busid, tb) == 0)
                        tgpu = j;
            if (tclass == 0x068000) {
                mxh_uf_union(parent, i, ng);
            } else if (tgpu >= 0 && (tclass < 0 || (tclass >> 16) == 0x03)) {
                mxh_uf_union(parent, i, tgpu);
            } else {
                mxh_debug("%s:%d: <nvlink target=\"%.20s\" tclass=\"%.12s\"> ignored (not an "
                          "NVSwitch nor a GPU of this file)",
                          path, l->line, target ? target : "", xattr_get(l, "tclass") ?
                          xattr_get(l, "tclass") : "");
            }
        }
    }
    mxh_machine_number_islands(m, parent, id);
    m->has_nvlink = nlinks > 0;
    free(parent);
    free(id);
    return MXH_OK;
}

static mxh_status_t read_file(const char *path, char **buf_p, size_t *len_p)
{
    mxh_status_t st = MXH_OK;
    char        *buf = NULL;
    size_t       len = 0, cap = 0;
    FILE        *f = fopen(path, "rb");
    if (f == NULL) {
        mxh_error("cannot open NCCL topology file %s: %s", path, strerror(errno));
        return MXH_ERR_IO;
    }
    for (;;) {
        if (cap - len < 65536) {
            if (cap >= XML_MAX_BYTES) {
                mxh_error("%s: larger than %zu MiB, not an NCCL topology file", path,
                          XML_MAX_BYTES >> 20);
                st = MXH_ERR_PARSE;
                goto out;
            }
            size_t ncap = cap ? 2 * cap : 65536;
            char  *nb = realloc(buf, ncap + 1);
            if (nb == NULL) {
                mxh_error("%s: out of memory", path);
                st = MXH_ERR_NO_MEMORY;
                goto out;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f)) {
                mxh_error("cannot read NCCL topology file %s: %s", path, strerror(errno));
                st = MXH_ERR_IO;
                goto out;
            }
            break;
        }
    }
    buf[len] = '\0';
out:
    fclose(f);
    if (st != MXH_OK) {
        free(buf);
        return st;
    }
    *buf_p = buf;
    *len_p = len;
    return MXH_OK;
}

/* The GPUs and the rails among the devices of @c into @gpus and @nics (room for every
 * device), sorted by bus id: the HPC ports if there are any, else every port. Two GPUs
 * may not share a bus id. */
static mxh_status_t split_devs(const nccl_ctx_t *c, const char *path, ndev_t *gpus, int *ng_p,
                               ndev_t *nics, int *nn_p)
{
    int ng = 0, nn = 0, nhpc = 0;

    for (int i = 0; i < c->ndevs; i++) {
        if (c->devs[i].kind == DEV_GPU)
            gpus[ng++] = c->devs[i];
        else if (c->devs[i].hpc)
            nhpc++;
    }
    for (int i = 0; i < c->ndevs; i++) {
        if (c->devs[i].kind != DEV_NIC)
            continue;
        if (nhpc > 0 && !c->devs[i].hpc) {
            mxh_debug("%s:%d: NIC %s not counted as a rail (not RDMA-capable)", path,
                      c->devs[i].node->line, c->devs[i].busid);
            continue;
        }
        nics[nn++] = c->devs[i];
    }
    qsort(gpus, (size_t)ng, sizeof(*gpus), cmp_dev);
    qsort(nics, (size_t)nn, sizeof(*nics), cmp_dev);
    *ng_p = ng;
    *nn_p = nn;
    for (int i = 1; i < ng; i++) {
        if (strcmp(gpus[i].busid, gpus[i - 1].busid) == 0) {
            mxh_error("%s:%d: GPU bus id %s already given at line %d", path,
                      gpus[i].node->line > gpus[i - 1].node->line ? gpus[i].node->line
                                                                  : gpus[i - 1].node->line,
                      gpus[i].busid,
                      gpus[i].node->line > gpus[i - 1].node->line ? gpus[i - 1].node->line
                                                                  : gpus[i].node->line);
            return MXH_ERR_PARSE;
        }
    }
    return MXH_OK;
}

/* A new machine of the @ng GPUs and @nn NIC ports; NULL when out of memory. */
static mxh_machine_t *machine_new(const char *path, const ndev_t *gpus, int ng,
                                  const ndev_t *nics, int nn)
{
    mxh_machine_t *m = calloc(1, sizeof(*m));

    if (m == NULL)
        return NULL;
    if ((ng > 0 && (m->gpus = calloc((size_t)ng, sizeof(*m->gpus))) == NULL) ||
        (nn > 0 && (m->nics = calloc((size_t)nn, sizeof(*m->nics))) == NULL)) {
        free(m->gpus);
        free(m);
        return NULL;
    }
    snprintf(m->source, sizeof(m->source), "NCCL topology %s", path);
    m->ngpus = ng;
    m->nnics = nn;
    for (int i = 0; i < nn; i++) {
        mxh_nic_t  *n = &m->nics[i];
        const char *name = nics[i].net ? xattr_get(nics[i].net, "name") : NULL;
        mxh_strlcpy(n->busid, nics[i].busid, sizeof(n->busid));
        mxh_strlcpy(n->name, name ? name : "", sizeof(n->name));
        n->hpc = nics[i].hpc;
        n->numa = nics[i].numa;
        n->package = -1;
        n->ngpus = 0;
    }
    for (int i = 0; i < ng; i++) {
        mxh_gpu_t *g = &m->gpus[i];
        mxh_strlcpy(g->busid, gpus[i].busid, sizeof(g->busid));
        g->model[0] = '\0';
        g->numa = gpus[i].numa;
        g->package = -1;
    }
    return m;
}

/* Parses the @len bytes at @buf (named @path in messages) into its XML tree @root_p and
 * devices @c. */
static mxh_status_t read_devices(const char *path, const char *buf, size_t len, xnode_t **root_p,
                                 nccl_ctx_t *c)
{
    mxh_status_t st = xml_parse(path, buf, len, root_p);

    if (st != MXH_OK)
        return st;
    const char *ver = xattr_get(*root_p, "version");
    if (ver != NULL && strcmp(ver, "1") != 0)
        mxh_warn("%s:%d: <system version=\"%.16s\">, expected \"1\"; reading it anyway", path,
                 (*root_p)->line, ver);
    return walk(c, *root_p, NULL, NULL, NULL, -1);
}

mxh_status_t mxh_machine_from_nccl(const char *path, mxh_machine_t **machine_p)
{
    mxh_status_t st;
    char *buf = NULL;
    size_t len = 0;

    if (path == NULL || machine_p == NULL) {
        mxh_error("mxh_machine_from_nccl: %s is NULL", path == NULL ? "path" : "machine_p");
        return MXH_ERR_INVALID_PARAM;
    }
    *machine_p = NULL;
    if ((st = read_file(path, &buf, &len)) != MXH_OK)
        return st;
    st = mxh_machine_from_nccl_text(buf, len, path, machine_p);
    free(buf);
    return st;
}

mxh_status_t mxh_machine_from_nccl_text(const char *text, size_t len, const char *path,
                                        mxh_machine_t **machine_p)
{
    mxh_status_t   st;
    xnode_t       *root = NULL;
    nccl_ctx_t     c = {.path = path};
    mxh_machine_t *m = NULL;
    ndev_t        *gpus = NULL, *nics = NULL;
    int            ng = 0, nn = 0;
    mxh_pci_distance_t *dist = NULL;

    if (path == NULL || machine_p == NULL || (text == NULL && len > 0)) {
        mxh_error("mxh_machine_from_nccl_text: %s is NULL",
                  path == NULL ? "path" : machine_p == NULL ? "machine_p" : "text");
        return MXH_ERR_INVALID_PARAM;
    }
    *machine_p = NULL;
    if (len > XML_MAX_BYTES) {
        mxh_error("%s: larger than %zu MiB, not an NCCL topology file", path, XML_MAX_BYTES >> 20);
        return MXH_ERR_PARSE;
    }
    st = read_devices(path, text != NULL ? text : "", len, &root, &c);
    if (st != MXH_OK)
        goto out;
    gpus = malloc(((size_t)c.ndevs + 1) * sizeof(*gpus));
    nics = malloc(((size_t)c.ndevs + 1) * sizeof(*nics));
    if (gpus == NULL || nics == NULL)
        goto nomem;
    st = split_devs(&c, path, gpus, &ng, nics, &nn);
    if (st != MXH_OK)
        goto out;
    if ((m = machine_new(path, gpus, ng, nics, nn)) == NULL)
        goto nomem;
    if (ng > 0 && nn > 0) {
        dist = malloc(sizeof(*dist) * (size_t)ng * (size_t)nn);
        if (dist == NULL)
            goto nomem;
        for (int i = 0; i < ng; i++)
            for (int j = 0; j < nn; j++)
                dist[(size_t)i * (size_t)nn + (size_t)j] = dev_distance(&gpus[i], &nics[j]);
    }
    mxh_machine_assign_rails(m, dist);
    st = nvlink_islands(path, gpus, ng, m);
    if (st != MXH_OK)
        goto out;
    mxh_info("%s: NCCL topology: %d GPUs, %d NIC ports (rails), %d NVLink island(s)%s", path,
             m->ngpus, m->nnics, m->nislands, m->has_nvlink ? "" : " (no NVLink information)");
    *machine_p = m;
    m = NULL;
    goto out;

nomem:
    mxh_error("%s: out of memory", path);
    st = MXH_ERR_NO_MEMORY;
out:
    if (m != NULL) {
        free(m->gpus);
        free(m->nics);
        free(m);
    }
    free(dist);
    free(gpus);
    free(nics);
    free(c.devs);
    xnode_free(root);
    return st;
}
