#include "util/clock.h"

#include <errno.h>

#ifdef MXH_CLOCK_TSC
#include <cpuid.h>
#endif

int mxh_clock_tsc;
static int clock_ready;
static uint64_t t0_ticks, t0_ns;

void mxh_clock_init(void)
{
    if (clock_ready)
        return;
#ifdef MXH_CLOCK_TSC
    {
        unsigned a = 0, b = 0, c = 0, d = 0;
        /* invariant TSC: constant rate in every P-, C- and T-state */
        if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000007u &&
            __get_cpuid(0x80000007u, &a, &b, &c, &d) && (d & (1u << 8)))
            mxh_clock_tsc = 1;
    }
#endif
    t0_ticks    = mxh_ticks();
    t0_ns       = mxh_clock_ns();
    clock_ready = 1;
}

/* The tick source is fixed before any tick is read (a library constructor). */
__attribute__((constructor)) static void clock_ctor(void)
{
    mxh_clock_init();
}

double mxh_clock_seconds_per_tick(void)
{
    static double spt; /* once: the same values in every report of the process */
    uint64_t ns, ticks;

    if (!clock_ready)
        mxh_clock_init();
    if (!mxh_clock_tsc)
        return 1e-9;
    if (spt > 0)
        return spt;
    /* the rate over the whole time since init: the longer, the more exact */
    while ((ns = mxh_clock_ns()) - t0_ns < 20000000u) {
        struct timespec ts = {0, (long)(20000000u - (ns - t0_ns))};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
    ticks = mxh_ticks();
    if (ticks <= t0_ticks)
        return 1e-9;
    spt = (double)(ns - t0_ns) * 1e-9 / (double)(ticks - t0_ticks);
    return spt;
}
