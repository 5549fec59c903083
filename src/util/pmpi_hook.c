/* The drop-in library's reentrancy mark (see pmpi_hook.h). The mark is the
 * drop-in library's thread-local depth; it exports MPIX_Hier_pmpi_depth,
 * which returns the calling thread's counter. Found once with dlsym, so that
 * this library neither links the drop-in library nor exports anything. */
#define _GNU_SOURCE
#include "config.h"

#include "util/pmpi_hook.h"

#include <dlfcn.h>
#include <string.h>

typedef int *(*depth_fn_t)(void);

static depth_fn_t depth_fn;
static int        looked_up;

static depth_fn_t find(void)
{
    if (!looked_up) {
        void *p = dlsym(RTLD_DEFAULT, "MPIX_Hier_pmpi_depth");
        memcpy(&depth_fn, &p, sizeof depth_fn); /* object to function pointer (POSIX) */
        looked_up = 1;
    }
    return depth_fn;
}

void mxh_pmpi_enter(void)
{
    depth_fn_t f = find();
    if (f != NULL)
        ++*f();
}

void mxh_pmpi_leave(void)
{
    depth_fn_t f = find();
    if (f != NULL)
        --*f();
}
