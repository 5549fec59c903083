#include "config.h"

#include "sim/sim.h"

#ifdef MXH_SIMGRID
#include "util/log.h"

#include <mpi.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int    sim_inited;
static int    sim_model = 1;
static double sim_reduce_bw = 1000e9, sim_copy_bw = 1500e9;

static double env_gbps(const char *name, double dflt)
{
    const char *v = getenv(name);
    char *end;
    double x;
    if (v == NULL || *v == '\0')
        return dflt;
    x = strtod(v, &end);
    if (end == v || *end != '\0' || !(x > 0)) {
        mxh_warn("%s=%s is not a positive number of GB/s: using %g", name, v, dflt / 1e9);
        return dflt;
    }
    return x * 1e9;
}

/* SMPI privatizes globals per rank; every rank reads the same environment. */
static void sim_init(void)
{
    const char *m;
    if (sim_inited)
        return;
    sim_inited = 1;
    m = getenv("MPIX_HIER_SIM_REDUCE");
    if (m && *m) {
        if (!strcasecmp(m, "real"))
            sim_model = 0;
        else if (strcasecmp(m, "model"))
            mxh_warn("MPIX_HIER_SIM_REDUCE=%s: expected model or real; using model", m);
    }
    sim_reduce_bw = env_gbps("MPIX_HIER_SIM_REDUCE_BW", sim_reduce_bw);
    sim_copy_bw   = env_gbps("MPIX_HIER_SIM_COPY_BW", sim_copy_bw);
}

/* mxh_sim_pipeline's depth (per rank where SMPI privatizes our globals). */
int mxh_sim_in_pipeline;

/* Reserved tag of the zero-byte message to itself that mxh_sim_testsome waits
 * for last (MPI_COMM_SELF: nothing else of the library uses it). */
#define SIM_POLL_TAG 32765

/* Set when a poll cost simulated time (a platform whose hosts have a loopback
 * latency): polls then find nothing and completions come from the executors'
 * waits, as where a test is expensive (per rank where SMPI privatizes our
 * globals, else for all). */
static int poll_off;

int mxh_sim_poll_start(mxh_sim_poll_t *p)
{
    int rc;

    p->recv = p->send = MPI_REQUEST_NULL;
    p->t0 = 0;
    if (poll_off)
        return MPI_SUCCESS;
    /* synchronous send: SMPI detaches small standard sends, and SimGrid 3.32
     * keeps detached sends in the sender's activity list for good */
    rc = MPI_Irecv(NULL, 0, MPI_BYTE, 0, SIM_POLL_TAG, MPI_COMM_SELF, &p->recv);
    if (rc == MPI_SUCCESS)
        rc = MPI_Issend(NULL, 0, MPI_BYTE, 0, SIM_POLL_TAG, MPI_COMM_SELF, &p->send);
    if (rc != MPI_SUCCESS && p->recv != MPI_REQUEST_NULL) { /* no send to match it */
        MPI_Cancel(&p->recv);
        MPI_Wait(&p->recv, MPI_STATUS_IGNORE);
    }
    p->t0 = simgrid_get_clock();
    return rc;
}

/* The sentinel came: complete its send, check that the poll cost no time. */
static int poll_end(mxh_sim_poll_t *p)
{
    int rc = MPI_SUCCESS;

    if (p->recv != MPI_REQUEST_NULL)
        rc = MPI_Wait(&p->recv, MPI_STATUS_IGNORE);
    /* the clock moves only while no request is complete and the sentinel is not:
     * by the loopback latency (0 in SimGrid's default loopback) */
    if (!poll_off && simgrid_get_clock() - p->t0 > 1e-7) {
        poll_off = 1;
        mxh_warn("a poll took %g us of simulated time (the platform gives hosts a "
                 "loopback latency): no more polls, the pipelines wait instead",
                 (simgrid_get_clock() - p->t0) * 1e6);
    }
    if (p->send != MPI_REQUEST_NULL) {
        int rc2 = MPI_Wait(&p->send, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS)
            rc = rc2;
    }
    return rc;
}

int mxh_sim_poll_next(mxh_sim_poll_t *p, int n, MPI_Request *reqs, int *k)
{
    MPI_Request stack[16], *all = stack;
    int rc;

    *k = -1;
    if (p->recv == MPI_REQUEST_NULL) /* polls off: no sentinel */
        return poll_end(p);
    if (n + 1 > (int)(sizeof(stack) / sizeof(stack[0])) &&
        (all = malloc((size_t)(n + 1) * sizeof(*all))) == NULL) {
        poll_end(p);
        return MPI_ERR_NO_MEM;
    }
    memcpy(all, reqs, (size_t)n * sizeof(*all));
    all[n] = p->recv;
    rc     = MPI_Waitany(n + 1, all, k, MPI_STATUS_IGNORE);
    if (all != stack)
        free(all);
    if (rc == MPI_SUCCESS && *k >= 0 && *k < n) {
        reqs[*k] = MPI_REQUEST_NULL;
        return MPI_SUCCESS;
    }
    if (rc == MPI_SUCCESS && *k == n)
        p->recv = MPI_REQUEST_NULL; /* completed and freed by the wait */
    *k = -1;
    int rc2 = poll_end(p);
    return rc != MPI_SUCCESS ? rc : rc2;
}

int mxh_sim_testsome(int n, MPI_Request *reqs, int *outcount, int *idx)
{
    mxh_sim_poll_t p;
    int k, out = 0, active = 0, rc;

    for (int i = 0; i < n; i++)
        active += reqs[i] != MPI_REQUEST_NULL;
    if (active == 0 || poll_off) {
        *outcount = active == 0 ? MPI_UNDEFINED : 0;
        return MPI_SUCCESS;
    }
    if ((rc = mxh_sim_poll_start(&p)) != MPI_SUCCESS)
        return rc;
    while ((rc = mxh_sim_poll_next(&p, n, reqs, &k)) == MPI_SUCCESS && k >= 0)
        if (idx != NULL)
            idx[out++] = k;
        else
            out++;
    *outcount = out;
    return rc;
}

int mxh_sim_model(void)
{
    sim_init();
    return sim_model;
}

/* Charge @seconds of simulated time. (smpi_execute() scales by smpi/host-speed, a
 * benchmark-calibration factor; flops at this host's own speed are exact.) */
static void charge(double seconds)
{
    double speed = sg_host_get_speed(sg_host_self());
    if (seconds > 0 && speed > 0)
        smpi_execute_flops(seconds * speed);
}

void mxh_sim_sleep(double seconds)
{
    charge(seconds);
}

void mxh_sim_charge_reduce(size_t bytes)
{
    sim_init();
    if (bytes)
        charge((double)bytes / sim_reduce_bw);
}

void mxh_sim_charge_copy(size_t bytes)
{
    sim_init();
    if (bytes)
        charge((double)bytes / sim_copy_bw);
}

void *mxh_sim_alloc(size_t bytes)
{
    return mxh_sim_model() ? SMPI_SHARED_MALLOC(bytes ? bytes : 1) : malloc(bytes ? bytes : 1);
}

void *mxh_sim_realloc(void *p, size_t old_bytes, size_t bytes)
{
    void *q;
    if (!mxh_sim_model())
        return realloc(p, bytes);
    /* shared allocations hold no data worth keeping in model mode */
    (void)old_bytes;
    q = SMPI_SHARED_MALLOC(bytes ? bytes : 1);
    if (q != NULL && p != NULL)
        SMPI_SHARED_FREE(p);
    return q;
}

static void costed_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int size = 0;
    (void)in;
    (void)inout;
    MPI_Type_size(*dt, &size);
    if (*len > 0 && size > 0)
        mxh_sim_charge_reduce((size_t)*len * (size_t)size);
}

MPI_Op mxh_sim_mpi_op(MPI_Op op)
{
    static MPI_Op costed = MPI_OP_NULL;
    if (!mxh_sim_model())
        return op;
    if (costed == MPI_OP_NULL && MPI_Op_create(costed_fn, 1, &costed) != MPI_SUCCESS)
        return op;
    return costed;
}

void mxh_sim_free(void *p)
{
    if (p == NULL)
        return;
    if (mxh_sim_model())
        SMPI_SHARED_FREE(p);
    else
        free(p);
}
#endif
