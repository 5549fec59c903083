/* The test memory kind: host memory that behaves like device memory, so that
 * CI exercises the engine's staged (device) path without a GPU. See mem.h.
 *
 * Each allocation is a memfd mapped twice: the user mapping (returned by
 * mxh_mem_test_alloc; what the user and the engine see) and a private alias
 * that only these ops use. hold() makes the user mapping PROT_NONE, so any
 * direct access by the engine while a collective holds the buffer faults at
 * once, while copy_start/event_test keep working through the alias.
 *
 * Copies are deferred: copy_start records (dst, src, n) in the event and the
 * bytes move when event_test is called for the (delay + 1)-th time. So a
 * consumer that reads the destination before its copy completed reads stale
 * bytes, and a producer that overwrites the source before completion is
 * caught too (the source is read at completion, as a real asynchronous copy
 * may do).
 *
 * Thread safety: none (tests drive it from one thread; the library's
 * collectives run on one thread at a time). The allocation table is only
 * changed by mxh_mem_test_alloc/free; lookups scan it (tests hold a handful
 * of allocations).
 */
#define _GNU_SOURCE /* memfd_create */
#include "config.h"

#include "mem/mem.h"
#include "mem/mem_impl.h"
#include "util/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct test_alloc {
    char  *user;  /* the mapping handed out */
    char  *alias; /* the same pages, used only by the ops */
    size_t n;     /* bytes requested (interior pointers: [user, user + max(n, 1))) */
    size_t len;   /* bytes mapped (whole pages) */
    int    holds; /* hold count: user mapping PROT_NONE while > 0 */
} test_alloc_t;

int mxh_mem_test_live;
static test_alloc_t *allocs; /* [mxh_mem_test_live], unordered */
static int allocs_cap;
static int delay_polls = 3;
static uint64_t copies_done;

/* event words: h[0] dst, h[1] src, h[2] n, h[3] polls left before the copy */

static test_alloc_t *find_user(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    for (int i = 0; i < mxh_mem_test_live; i++) {
        test_alloc_t *t = &allocs[i];
        if (a - (uintptr_t)t->user < (t->n > 0 ? t->n : 1))
            return t;
    }
    return NULL;
}

static int test_owns(const void *p)
{
    return find_user(p) != NULL;
}

/* @p translated to the alias when it is test memory (*is_test set); the whole
 * range [p, p + n) must lie in the allocation. NULL (logged) when it does not. */
static char *translate(const void *p, size_t n, const char *what, int *is_test)
{
    test_alloc_t *t = find_user(p);
    size_t off;

    *is_test = t != NULL;
    if (t == NULL)
        return (char *)p;
    off = (size_t)((const char *)p - t->user);
    if (n > t->n - off) {
        mxh_error("test memory: copy %s [%p, +%zu) runs past the end of its allocation "
                  "[%p, +%zu)", what, p, n, (void *)t->user, t->n);
        return NULL;
    }
    return t->alias + off;
}

static mxh_status_t test_copy_start(void *dst, const void *src, size_t n, mxh_mem_event_t *ev)
{
    int dtest = 0, stest = 0;
    char *d, *s;

    ev->pending = 0;
    if (n == 0) { /* completes at the first test, whatever the pointers */
        ev->pending = 1;
        ev->h[0] = ev->h[1] = ev->h[2] = ev->h[3] = 0;
        return MXH_OK;
    }
    d = translate(dst, n, "destination", &dtest);
    s = translate(src, n, "source", &stest);
    if (d == NULL || s == NULL)
        return MXH_ERR_INVALID_PARAM;
    if (!dtest && !stest) {
        /* the engine picked the wrong kind's ops: a bug worth failing on */
        mxh_error("test memory: copy_start(%p, %p, %zu) with no test memory on either side",
                  dst, src, n);
        return MXH_ERR_INVALID_PARAM;
    }
    ev->pending = 1;
    ev->h[0]    = (uintptr_t)d;
    ev->h[1]    = (uintptr_t)s;
    ev->h[2]    = (uintptr_t)n;
    ev->h[3]    = (uintptr_t)delay_polls;
    return MXH_OK;
}

static int test_event_test(mxh_mem_event_t *ev)
{
    if (!ev->pending)
        return 1;
    if (ev->h[3] > 0) {
        ev->h[3]--;
        return 0;
    }
    if (ev->h[2] > 0) {
        /* memmove: both sides may be test memory of one allocation */
        memmove((void *)ev->h[0], (const void *)ev->h[1], (size_t)ev->h[2]);
        copies_done++;
    }
    ev->pending = 0;
    return 1;
}

static void *test_stage_alloc(size_t n)
{
    return malloc(n > 0 ? n : 1);
}

static void test_stage_free(void *p, size_t n)
{
    (void)n;
    free(p);
}

static void set_access(test_alloc_t *t, int prot)
{
    if (mprotect(t->user, t->len, prot) != 0)
        mxh_error("test memory: mprotect(%p, %zu): %s", (void *)t->user, t->len,
                  strerror(errno));
}

static void test_hold(const void *p)
{
    test_alloc_t *t = find_user(p);
    if (t == NULL) {
        mxh_error("test memory: hold(%p): not test memory", p);
        return;
    }
    if (t->holds++ == 0)
        set_access(t, PROT_NONE);
}

static void test_release(const void *p)
{
    test_alloc_t *t = find_user(p);
    if (t == NULL || t->holds <= 0) {
        mxh_error("test memory: release(%p) without a hold", p);
        return;
    }
    if (--t->holds == 0)
        set_access(t, PROT_READ | PROT_WRITE);
}

const mxh_mem_ops_t mxh_mem_test_ops = {
    .kind        = MXH_MEM_TEST,
    .name        = "test",
    .owns        = test_owns,
    .copy_start  = test_copy_start,
    .event_test  = test_event_test,
    .stage_alloc = test_stage_alloc,
    .stage_free  = test_stage_free,
    .hold        = test_hold,
    .release     = test_release,
};

void *mxh_mem_test_alloc(size_t n)
{
    long pg = sysconf(_SC_PAGESIZE);
    size_t page = pg > 0 ? (size_t)pg : 4096, len;
    void *user = MAP_FAILED, *alias = MAP_FAILED;
    int fd;

    if (n > SIZE_MAX - page) {
        mxh_error("test memory: %zu bytes is too large", n);
        return NULL;
    }
    len = (n > 0 ? n + page - 1 : page) / page * page;
    if (mxh_mem_test_live == allocs_cap) {
        int cap = allocs_cap ? 2 * allocs_cap : 16;
        test_alloc_t *a = realloc(allocs, (size_t)cap * sizeof(*a));
        if (a == NULL)
            return NULL;
        allocs     = a;
        allocs_cap = cap;
    }
    fd = memfd_create("mpix-hier-test-mem", MFD_CLOEXEC);
    if (fd < 0) {
        mxh_error("test memory: memfd_create: %s", strerror(errno));
        return NULL;
    }
    /* a new file's pages read as zeros: the allocation is zeroed */
    if (ftruncate(fd, (off_t)len) == 0) {
        user  = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        alias = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    if (user == MAP_FAILED || alias == MAP_FAILED) {
        mxh_error("test memory: mapping %zu bytes: %s", len, strerror(errno));
        if (user != MAP_FAILED)
            munmap(user, len);
        if (alias != MAP_FAILED)
            munmap(alias, len);
        close(fd);
        return NULL;
    }
    close(fd); /* the mappings keep the pages */
    allocs[mxh_mem_test_live++] = (test_alloc_t){user, alias, n, len, 0};
    return user;
}

void mxh_mem_test_free(void *p)
{
    if (p == NULL)
        return;
    for (int i = 0; i < mxh_mem_test_live; i++) {
        test_alloc_t *t = &allocs[i];
        if (t->user != p)
            continue;
        if (t->holds > 0)
            mxh_error("test memory: %p freed while held %d time(s)", p, t->holds);
        munmap(t->user, t->len);
        munmap(t->alias, t->len);
        allocs[i] = allocs[--mxh_mem_test_live];
        if (mxh_mem_test_live == 0) { /* back to a process without test memory */
            free(allocs);
            allocs     = NULL;
            allocs_cap = 0;
        }
        return;
    }
    mxh_error("test memory: free(%p): not the start of a test allocation", p);
}

void mxh_mem_test_set_delay(int polls)
{
    delay_polls = polls > 0 ? polls : 0;
}

uint64_t mxh_mem_test_copies(void)
{
    return copies_done;
}

int mxh_mem_test_holds(const void *p)
{
    test_alloc_t *t = find_user(p);
    return t ? t->holds : 0;
}
