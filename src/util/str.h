/* Small string helpers. */
#ifndef MXH_STR_H
#define MXH_STR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Copy @src into @dst of @size bytes, truncating, always NUL-terminated. */
static inline void mxh_strlcpy(char *dst, const char *src, size_t size)
{
    size_t n;
    if (size == 0)
        return;
    n = strnlen(src, size - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Append printf-style text at *@off of @buf (@len bytes, kept NUL-terminated) and
 * advance *@off by the text's whole length, as snprintf counts it: past @len when
 * the buffer is too small, so that the caller can report the length it needs. */
__attribute__((format(printf, 4, 5))) static inline void
mxh_str_put(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
    size_t room = *off < len ? len - *off : 0;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(room ? buf + *off : NULL, room, fmt, ap);
    va_end(ap);
    if (k > 0)
        *off += (size_t)k;
}

#endif
