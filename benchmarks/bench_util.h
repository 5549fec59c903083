/* Helpers shared by the benchmark programs (mpix_demo, mpix_bench, mpix_gpu_bench).
 * Each program defines BENCH_PROG (its name) before including this header. */
#ifndef MPIX_BENCH_UTIL_H
#define MPIX_BENCH_UTIL_H

#include <mpi.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef BENCH_PROG
#error "define BENCH_PROG before including bench_util.h"
#endif

static int world_rank, world_size;

static void fail_mpi(const char *what, int rc, int line)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;

    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof(msg), "error code %d", rc);
    fprintf(stderr, BENCH_PROG ": rank %d: line %d: %s failed: %s\n", world_rank, line, what,
            msg);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

/* An MPI call that must succeed: on an error, a message (the call, its line) and
 * MPI_Abort. */
#define CHECK_MPI(call)                                                                 \
    do {                                                                                \
        int rc_ = (call);                                                               \
        if (rc_ != MPI_SUCCESS)                                                         \
            fail_mpi(#call, rc_, __LINE__);                                             \
    } while (0)

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, BENCH_PROG ": rank %d: out of memory (%zu bytes)\n", world_rank, n);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    return p;
}

/* "64K", "8m", "1G", "128MB" -> bytes; 0 on success. */
static int parse_bytes(const char *s, size_t *out)
{
    char *end;
    unsigned long long v;

    if (*s == '-')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end != '\0')
        return -1;
    *out = (size_t)v;
    return 0;
}

/* An integer in [lo, hi]; 0 on success. */
static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

#endif
