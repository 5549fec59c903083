/* emu_preload.c: preloaded into every rank by `emu.sh run` (LD_PRELOAD).
 *
 * 1. MPI_Finalize marker. Creates $EMU_FINI_FILE once this rank reached
 *    MPI_Finalize with its output flushed, so that emu.sh tells "results
 *    complete, teardown hung" (UCX 1.13.1's TCP transport often hangs in
 *    MPI_Finalize between namespaces, see README.md) from a real hang.
 *    EMU_FINI_BARRIER=1: a barrier on MPI_COMM_WORLD first.
 *    The next MPI_Finalize in the lookup order (MPICH, or a preloaded wrapper
 *    such as libmpixhier_pmpi) is called through dlsym.
 *
 * 2. Polite polling (EMU_YIELD=1, emu.sh's default). With 2 cores and 8
 *    busy-polling ranks, a rank that waits takes the CPU from the rank it waits
 *    for, and the CPU, not the shaped links, sets the pace. ucp_worker_progress
 *    (MPICH ch4:ucx polls through it) yields when a poll made no progress and,
 *    once idle for more than 50 us, sleeps 20 us per poll (the same policy as
 *    tests/shim/mxh_test_shim.c, which the MPI test binaries carry themselves:
 *    run those with EMU_YIELD=0).
 *
 * 3. The finalize workaround (EMU_FINALIZE=skip-close, emu.sh's default).
 *    MPICH 4.0.2's MPI_Finalize closes every UCX endpoint with
 *    ucp_disconnect_nb (ucp_ep_close_nb in FLUSH mode: a handshake with the
 *    peer) and waits for all of them; over TCP between namespaces that wait
 *    often never ends (README.md). With skip-close, MPI_Finalize first does a
 *    barrier on MPI_COMM_WORLD (every rank is past its last communication),
 *    then ucp_disconnect_nb returns "done" without closing: ucp_worker_destroy
 *    releases the endpoints. (FORCE mode instead of FLUSH is refused by UCX
 *    1.13.1 for MPICH's endpoints: "Invalid parameter".) EMU_FINALIZE=close:
 *    MPICH's own behaviour. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

static int skip_close; /* set in MPI_Finalize with EMU_FINALIZE=skip-close */

int MPI_Finalize(void)
{
    int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "MPI_Finalize");
    const char *m = getenv("EMU_FINALIZE");
    const char *f = getenv("EMU_FINI_FILE");
    if (m && strcmp(m, "skip-close") == 0) {
        PMPI_Barrier(MPI_COMM_WORLD);
        skip_close = 1;
    }
    fflush(NULL);
    if (f) {
        /* the marker holds this rank's CPU time so far (user, system seconds):
         * emu.sh run --stats sums them */
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        FILE *m = fopen(f, "w");
        if (m) {
            fprintf(m, "%ld.%06ld %ld.%06ld\n", (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
                    (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec);
            fclose(m);
        }
    }
    return next ? next() : PMPI_Finalize();
}

__attribute__((visibility("default"))) unsigned ucp_worker_progress(ucp_worker_h worker);
unsigned ucp_worker_progress(ucp_worker_h worker)
{
    static unsigned (*real)(ucp_worker_h);
    static int yield = -1;
    static unsigned idle;
    static struct timespec idle_since;
    if (!real) {
        real = (unsigned (*)(ucp_worker_h))dlsym(RTLD_NEXT, "ucp_worker_progress");
        if (!real)
            return 0;
    }
    if (yield < 0) {
        const char *v = getenv("EMU_YIELD");
        yield = v && v[0] == '1';
        if (yield)
            prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); /* short sleeps stay short */
    }
    unsigned n = real(worker);
    if (n || !yield) {
        idle = 0;
        return n;
    }
    if (idle++ == 0)
        clock_gettime(CLOCK_MONOTONIC, &idle_since);
    if (idle < 16) {
        sched_yield();
        return n;
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long us = (long)(now.tv_sec - idle_since.tv_sec) * 1000000L +
              (now.tv_nsec - idle_since.tv_nsec) / 1000;
    if (us < 50) {
        sched_yield();
    } else {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    return n;
}

__attribute__((visibility("default"))) ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep);
ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep)
{
    static ucs_status_ptr_t (*real)(ucp_ep_h);
    if (skip_close)
        return UCS_OK; /* no handshake: ucp_worker_destroy releases the endpoint */
    if (!real)
        real = (ucs_status_ptr_t (*)(ucp_ep_h))dlsym(RTLD_NEXT, "ucp_disconnect_nb");
    return real ? real(ep) : UCS_OK;
}
