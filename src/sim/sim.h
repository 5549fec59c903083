/* SimGrid SMPI cost model. In the simulation build (MXH_SIMGRID) a thousand
 * simulated ranks share two host cores, so the library does not execute its
 * local reductions and copies: it charges their modelled duration to the
 * simulated clock of the rank instead (smpi_execute), as a GPU would spend that
 * time in its kernels. MPIX_HIER_SIM_REDUCE=real executes them (results are then
 * real and checkable) and charges the same modelled time.
 *
 *   MPIX_HIER_SIM_REDUCE     model (default) | real
 *   MPIX_HIER_SIM_REDUCE_BW  GB/s of reduction output (default 1000: H100 HBM3
 *                            ~3 TB/s moving two inputs and one output per byte)
 *   MPIX_HIER_SIM_COPY_BW    GB/s of local copies (default 1500: read + write)
 *
 * Scratch buffers follow the same rule: in model mode they are SMPI shared
 * allocations (every simulated rank maps the same pages), so memory stays
 * bounded at any scale. Outside the simulation build everything here is plain
 * memcpy/malloc. Process-wide (SMPI ranks share one environment). */
#ifndef MXH_SIM_H
#define MXH_SIM_H

#include <mpi.h>
#include <stddef.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef MXH_SIMGRID
/* 1 when reductions and copies are modelled, not executed. */
int mxh_sim_model(void);
/* Charge the modelled time of a reduction producing @bytes / a copy of @bytes. */
void mxh_sim_charge_reduce(size_t bytes);
void mxh_sim_charge_copy(size_t bytes);
/* Let @seconds of simulated time pass on this rank (its transfers go on). */
void mxh_sim_sleep(double seconds);
/* MPI_Testsome (statuses ignored) answered with waits: SimGrid 3.32 keeps every
 * communication that a test finds complete in the rank's activity list for good,
 * and every later completion walks that list (a 1024-rank pipelined allgather
 * did not finish); waits unlist what they complete. A zero-byte message to
 * itself, which completes at the current simulated time, goes last in an
 * MPI_Waitany over @reqs: SimGrid's waitany takes the first finished
 * request in array order, so those already complete come out first, one per
 * call, then the sentinel. Costs no smpi/test time. @idx may be NULL. If a
 * poll costs simulated time (the platform gives hosts a loopback latency),
 * warns once and stops polling: the executors complete requests by waits. */
int mxh_sim_testsome(int n, MPI_Request *reqs, int *outcount, int *idx);
/* The same poll over requests that change while it runs: mxh_sim_poll_start posts
 * the sentinel; each mxh_sim_poll_next waits on @reqs (the caller's current
 * ones: an exchange whose request completed may put its next one in) and the
 * sentinel, and returns with *@k, the completed request (now MPI_REQUEST_NULL),
 * or -1 once the sentinel came (the poll is over; nothing more is complete at
 * this simulated time). The stream executor waits on one request per exchange;
 * repeating mxh_sim_testsome until a poll finds nothing would cost a sentinel (two
 * completions, each walking the rank's activity list) for every request an exchange
 * completed; one sentinel for the whole look saves a large simulation much of its CPU
 * time (benchmarks/RESULTS.md section 5, "One sentinel per poll"). Polls off: *@k = -1
 * at once. */
typedef struct mxh_sim_poll {
    MPI_Request recv, send;
    double      t0;
} mxh_sim_poll_t;
int mxh_sim_poll_start(mxh_sim_poll_t *p);
int mxh_sim_poll_next(mxh_sim_poll_t *p, int n, MPI_Request *reqs, int *k);
void *mxh_sim_alloc(size_t bytes);
void *mxh_sim_realloc(void *p, size_t old_bytes, size_t bytes);
void mxh_sim_free(void *p);
/* The op to hand to MPI for @op: in model mode one commutative user op that
 * charges the modelled reduction time and computes nothing (so MPI's own
 * collectives pay for their reductions like ours do), else @op. */
MPI_Op mxh_sim_mpi_op(MPI_Op op);
#endif

/* The library's sends. In the simulation, above MXH_SIM_EAGER_BYTES, synchronous
 * (MPI_Issend, MPI_Ssend): SMPI detaches a standard send below
 * smpi/send-is-detached-thresh (65536 bytes unless the run sets it), and SimGrid
 * 3.32 keeps a detached send in its sender's activity list for good, which every
 * later completion of that rank walks; a synchronous send is never detached. It
 * completes when its receive has the data, as every send does with the threshold
 * at 0 (run_sim.py's setting), so the simulated times do not depend on that option
 * (benchmarks/RESULTS.md section 5, "Sends that SimGrid does not keep"). Up to
 * MXH_SIM_EAGER_BYTES a standard send, which SMPI may detach: MPICH over UCX sends
 * such messages eagerly (the sender is done once it has posted), and synchronous
 * they held a small reduce's senders until the root had received. Not in a pipeline
 * (mxh_sim_pipeline): its many small sends (ramp pieces, the 4 KiB spine messages
 * at 1024 GPUs) would fill the lists and multiply the CPU of a run ("Small sends
 * eager"). */
#define MXH_SIM_EAGER_BYTES 8192

#ifdef MXH_SIMGRID
extern int mxh_sim_in_pipeline;
static inline int mxh_sim_eager(int count, MPI_Datatype dt)
{
    int size = 0;
    return mxh_sim_in_pipeline == 0 && MPI_Type_size(dt, &size) == MPI_SUCCESS &&
           (long long)count * size <= MXH_SIM_EAGER_BYTES;
}
#endif

/* Around a schedule's execution: @d = 1 when it enters a pipeline of several
 * fragments, -1 when it leaves, 0 otherwise (the simulation's send choice above;
 * nothing in the real build). */
static inline void mxh_sim_pipeline(int d)
{
#ifdef MXH_SIMGRID
    mxh_sim_in_pipeline += d;
#else
    (void)d;
#endif
}

static inline int mxh_isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                            MPI_Comm comm, MPI_Request *req)
{
#ifdef MXH_SIMGRID
    if (!mxh_sim_eager(count, dt))
        return MPI_Issend(buf, count, dt, dest, tag, comm, req);
#endif
    return MPI_Isend(buf, count, dt, dest, tag, comm, req);
}

static inline int mxh_send(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                           MPI_Comm comm)
{
#ifdef MXH_SIMGRID
    if (!mxh_sim_eager(count, dt))
        return MPI_Ssend(buf, count, dt, dest, tag, comm);
#endif
    return MPI_Send(buf, count, dt, dest, tag, comm);
}

/* MPI_Testsome (in the simulation mxh_sim_testsome, which leaves @stats alone). */
static inline int mxh_testsome(int n, MPI_Request *reqs, int *outcount, int *idx,
                               MPI_Status *stats)
{
#ifdef MXH_SIMGRID
    (void)stats;
    return mxh_sim_testsome(n, reqs, outcount, idx);
#else
    return MPI_Testsome(n, reqs, outcount, idx, stats);
#endif
}

/* MPI_Testall over point-to-point requests, except that completed requests may
 * become MPI_REQUEST_NULL while *@flag is 0 (in the simulation: mxh_sim_testsome,
 * no smpi/test time, no leak). */
static inline int mxh_testall(int n, MPI_Request *reqs, int *flag, MPI_Status *stats)
{
#ifdef MXH_SIMGRID
    int out, rc = mxh_sim_testsome(n, reqs, &out, NULL);
    (void)stats;
    *flag = rc == MPI_SUCCESS;
    for (int i = 0; i < n; i++)
        if (reqs[i] != MPI_REQUEST_NULL)
            *flag = 0;
    return rc;
#else
    return MPI_Testall(n, reqs, flag, stats);
#endif
}

/* Let MPI progress nonblocking collectives (an MPI_Testall whose answer is not
 * needed: the caller waits for them later). In the simulation nothing: SMPI
 * moves them without tests, and each failed test would cost smpi/test of
 * simulated time (100 us under SMPI's default). */
static inline void mxh_progress(int n, MPI_Request *reqs, MPI_Status *stats)
{
#ifdef MXH_SIMGRID
    (void)n, (void)reqs, (void)stats;
#else
    int flag;
    MPI_Testall(n, reqs, &flag, stats);
#endif
}

/* A local copy of @n bytes (memcpy; in the simulation charged, and skipped in
 * model mode). */
static inline void mxh_copy(void *dst, const void *src, size_t n)
{
#ifdef MXH_SIMGRID
    mxh_sim_charge_copy(n);
    if (mxh_sim_model())
        return;
#endif
    memcpy(dst, src, n);
}

/* Copies charged as one (a batch of small pieces: in the simulation one
 * smpi_execute instead of one per piece): mxh_copy_uncharged for each, then
 * mxh_copy_charge with their total. */
static inline void mxh_copy_uncharged(void *dst, const void *src, size_t n)
{
#ifdef MXH_SIMGRID
    if (mxh_sim_model())
        return;
#endif
    memcpy(dst, src, n);
}

static inline void mxh_copy_charge(size_t n)
{
#ifdef MXH_SIMGRID
    mxh_sim_charge_copy(n);
#else
    (void)n;
#endif
}

#ifdef __cplusplus
}
#endif

#endif
