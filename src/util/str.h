/* Small string helpers. */
#ifndef MXH_STR_H
#define MXH_STR_H

#include <stddef.h>
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

#endif
