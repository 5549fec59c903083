/* The metrics' clock: a cheap tick counter (the invariant TSC on x86-64, read
 * in a few nanoseconds; CLOCK_MONOTONIC in nanoseconds elsewhere), converted to
 * seconds only when metrics are read. Measured: the two reads per collective
 * call are within the noise of an 8-byte allreduce (README: Metrics). */
#ifndef MXH_UTIL_CLOCK_H
#define MXH_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) && !defined(MXH_SIMGRID)
#include <x86intrin.h>
#define MXH_CLOCK_TSC 1
#endif

#ifdef __cplusplus
extern "C" {
#endif

extern int mxh_clock_tsc; /* 1: ticks are TSC cycles (set by mxh_clock_init) */

static inline uint64_t mxh_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t mxh_ticks(void)
{
#ifdef MXH_CLOCK_TSC
    if (mxh_clock_tsc)
        return __rdtsc();
#endif
    return mxh_clock_ns();
}

/* Choose the tick source (idempotent; before the first mxh_ticks that counts). */
void mxh_clock_init(void);
/* Seconds per tick: calibrated once, on the first call, against CLOCK_MONOTONIC
 * over the time since mxh_clock_init (at least 20 ms: that call may wait that
 * long; relative error about 1e-4). */
double mxh_clock_seconds_per_tick(void);

#ifdef __cplusplus
}
#endif

#endif
