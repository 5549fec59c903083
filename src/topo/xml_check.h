/* Strict XML well-formedness check of a file before a third-party reader sees it.
 * hwloc 2.9's minimalistic XML importer (the one used without its libxml2 plugin)
 * trusts its input: '<topology version="2.0"' with no '>' anywhere dereferences
 * strchr()'s NULL and kills the process. The library therefore checks an hwloc XML
 * export itself and hands hwloc only documents that passed (topo/machine_hwloc.c).
 * hwloc's libxml2 importer (a plugin, e.g. Debian's libhwloc-plugins; HWLOC_LIBXML_IMPORT=1
 * prefers it) reads such files safely, but which importer hwloc picks is not the
 * library's to know, so the check runs regardless.
 *
 * Accepted (XML 1.0): an optional UTF-8 byte order mark; an XML declaration
 * <?xml version="1.x" [encoding=...] [standalone=...]?> at the very start; comments
 * (no "--" inside), processing instructions, one <!DOCTYPE root [SYSTEM|PUBLIC ...]>
 * before the root (no internal subset: it could declare entities); one root element
 * named @root; elements with balanced, matching end tags; attributes NAME="..." or
 * NAME='...' given once per element; character data without "]]>"; CDATA sections;
 * the five predefined entities and character references &#N; &#xH; of valid code
 * points; UTF-8 (or bytes as characters when the declaration says ISO-8859-1 or
 * US-ASCII); no control characters but tab, LF, CR. Everything else, and the end of
 * the text inside any construct (truncation), is an error. Limits below. */
#ifndef MXH_XML_CHECK_H
#define MXH_XML_CHECK_H

#include <stddef.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MXH_XML_CHECK_MAX_BYTES ((size_t)64 << 20) /* larger documents are refused */
#define MXH_XML_CHECK_MAX_DEPTH 256                /* nested elements */
#define MXH_XML_CHECK_MAX_ATTRS 512                /* attributes of one element */

/* Checks the @len bytes at @text (NULs are errors; it need not be NUL-terminated).
 * MXH_OK, or MXH_ERR_PARSE with one error logged: "SOURCE:LINE: what is wrong" (@source
 * names the document in messages). @root: the name the root element must have. */
mxh_status_t mxh_xml_check(const char *text, size_t len, const char *source, const char *root);

/* hwloc's rules, on top of XML's. Its minimalistic importer is no XML parser: it stops
 * reading an element's attributes, without an error, at a name with a character other than
 * a-z and '_', a blank around '=', a value in single quotes or a reference other than
 * &#10; &#13; &#9; &quot; &lt; &gt; &amp;, and it ends a tag at the first '>', even inside a
 * value. The object then lacks what followed, and hwloc 2.9 dereferences NULL on an <object>
 * with cpuset but no complete_cpuset, or nodeset but no complete_nodeset. These rules refuse
 * all of that; hwloc's own exports (v1 and v2) follow them. */
#define MXH_XML_HWLOC 1
/* hwloc's rules also bound the sizes it allocates by: the objects of a distance matrix
 * (nbobjs, squared) and a PU's or NUMA node's os_index (a bit in a bitmap). */
#define MXH_XML_HWLOC_MAX_NBOBJS   4096
#define MXH_XML_HWLOC_MAX_OS_INDEX 65535

/* mxh_xml_check with root <topology> and hwloc's rules. */
mxh_status_t mxh_xml_check_hwloc(const char *text, size_t len, const char *source);

/* Reads the file @path (called @what in messages, e.g. "hwloc XML") and checks it (@flags:
 * 0 or MXH_XML_HWLOC): MXH_ERR_IO when it cannot be opened or read (path and strerror
 * logged), MXH_ERR_PARSE when it is larger than MXH_XML_CHECK_MAX_BYTES or malformed
 * ("PATH:LINE: malformed WHAT: cause"). On MXH_OK *@text_p holds the NUL-terminated text
 * (free with free()) and *@len_p its length. */
mxh_status_t mxh_xml_read_checked(const char *path, const char *what, const char *root,
                                  int flags, char **text_p, size_t *len_p);

#ifdef __cplusplus
}
#endif

#endif
