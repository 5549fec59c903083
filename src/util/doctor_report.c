/* The doctor report reader (doctor_report.h): json-c's tokener fed in chunks, so that the
 * line of an error is known and no copy of the file is held beside the tree. */
#define _GNU_SOURCE
#include "util/doctor_report.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

#define WHO "MPIX_HIER_EXCLUDE_RAILS"

/* Lines ended before byte @n of @p. */
static long count_lines(const char *p, size_t n)
{
    long lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += p[i] == '\n';
    return lines;
}

/* Parses the open regular file @fd (named @path) into *@root_p. */
static mxh_status_t parse_fd(int fd, const char *path, json_object **root_p)
{
    json_tokener *tok = json_tokener_new_ex(MXH_DOCTOR_REPORT_MAX_DEPTH);
    json_object *root = NULL;
    char *chunk       = malloc(1 << 16);
    long line         = 1;
    long long total   = 0;
    mxh_status_t st   = MXH_OK;

    if (tok == NULL || chunk == NULL) {
        st = MXH_ERR_NO_MEMORY;
        goto out;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    for (;;) {
        ssize_t n = read(fd, chunk, 1 << 16);
        size_t at = 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            mxh_error(WHO ": cannot read '%s': %s", path, strerror(errno));
            st = MXH_ERR_IO;
            goto out;
        }
        total += n;
        if (total > MXH_DOCTOR_REPORT_MAX_BYTES) { /* grew while read */
            mxh_error(WHO ": '%s' is larger than %lld MiB, not a doctor report", path,
                      MXH_DOCTOR_REPORT_MAX_BYTES >> 20);
            st = MXH_ERR_PARSE;
            goto out;
        }
        if (n == 0 && root == NULL) {
            /* a number at the very end waits for what follows it: a blank ends it */
            root = json_tokener_parse_ex(tok, " ", 1);
            if (root == NULL) {
                enum json_tokener_error e = json_tokener_get_error(tok);
                mxh_error(WHO ": '%s':%ld: not a doctor report: %s", path, line,
                          e == json_tokener_continue ? "end of file inside the document"
                                                     : json_tokener_error_desc(e));
                st = MXH_ERR_PARSE;
                goto out;
            }
        }
        if (n == 0)
            break;
        if (root == NULL) {
            const char *nul = memchr(chunk, '\0', (size_t)n);
            size_t len      = nul ? (size_t)(nul - chunk) : (size_t)n;
            root            = json_tokener_parse_ex(tok, chunk, (int)len);
            enum json_tokener_error e = json_tokener_get_error(tok);
            at = json_tokener_get_parse_end(tok);
            if (root == NULL && e != json_tokener_continue) {
                mxh_error(WHO ": '%s':%ld: not a doctor report: %s", path,
                          line + count_lines(chunk, at), json_tokener_error_desc(e));
                st = MXH_ERR_PARSE;
                goto out;
            }
            if (root == NULL && nul != NULL) {
                mxh_error(WHO ": '%s':%ld: not a doctor report: a NUL byte", path,
                          line + count_lines(chunk, len));
                st = MXH_ERR_PARSE;
                goto out;
            }
            if (root == NULL) {
                line += count_lines(chunk, (size_t)n);
                continue;
            }
        }
        /* after the document: blanks only */
        for (size_t i = at; i < (size_t)n; i++) {
            if (chunk[i] != ' ' && chunk[i] != '\t' && chunk[i] != '\n' && chunk[i] != '\r') {
                mxh_error(WHO ": '%s':%ld: not a doctor report: text after the document", path,
                          line + count_lines(chunk, i));
                st = MXH_ERR_PARSE;
                goto out;
            }
        }
        line += count_lines(chunk, (size_t)n);
    }
out:
    if (st != MXH_OK && root != NULL) {
        json_object_put(root);
        root = NULL;
    }
    *root_p = root;
    json_tokener_free(tok);
    free(chunk);
    return st;
}

/* The rails of @root's "exclude_rails" into *@mask. */
static mxh_status_t rails_of(json_object *root, const char *path, uint64_t *mask)
{
    json_object *list = NULL;
    uint64_t m        = 0;

    if (!json_object_is_type(root, json_type_object)) {
        mxh_error(WHO ": '%s' is not a doctor report: a JSON %s, not an object", path,
                  json_type_to_name(json_object_get_type(root)));
        return MXH_ERR_PARSE;
    }
    int found = json_object_object_get_ex(root, "exclude_rails", &list);
    if (!found || !json_object_is_type(list, json_type_array)) {
        mxh_error(WHO ": '%s' has no \"exclude_rails\": [RAIL, ...] (%s)", path,
                  !found ? "missing" : json_type_to_name(json_object_get_type(list)));
        return MXH_ERR_PARSE;
    }
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        json_object *e = json_object_array_get_idx(list, i);
        int64_t r      = json_object_is_type(e, json_type_int) ? json_object_get_int64(e) : -1;
        if (r < 0 || r > 63) {
            mxh_error(WHO ": '%s': \"exclude_rails\"[%zu] is %s, not a rail 0-63", path, i,
                      json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN));
            return MXH_ERR_PARSE;
        }
        m |= (uint64_t)1 << r;
    }
    *mask = m;
    return MXH_OK;
}

mxh_status_t mxh_doctor_report_rails(const char *path, uint64_t *mask)
{
    struct stat sb;
    json_object *root = NULL;
    mxh_status_t st;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

    if (fd < 0) {
        mxh_error(WHO ": cannot open '%s': %s", path, strerror(errno));
        return MXH_ERR_IO;
    }
    /* a FIFO or device could block or never end */
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        mxh_error(WHO ": '%s' is not a regular file", path);
        close(fd);
        return MXH_ERR_IO;
    }
    if ((long long)sb.st_size > MXH_DOCTOR_REPORT_MAX_BYTES) {
        mxh_error(WHO ": '%s' is larger than %lld MiB, not a doctor report", path,
                  MXH_DOCTOR_REPORT_MAX_BYTES >> 20);
        close(fd);
        return MXH_ERR_PARSE;
    }
    st = parse_fd(fd, path, &root);
    close(fd);
    if (st == MXH_OK)
        st = rails_of(root, path, mask);
    json_object_put(root);
    return st;
}
