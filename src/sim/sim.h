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
/* 1 when an MPI_Test costs the simulated rank little (SMPI's smpi/test at most
 * 0.1 us; its default is 100 us, run_sim.py passes 1e-8): the stream executor
 * then polls its transfers between pieces of its copies. */
int mxh_sim_test_cheap(void);
void *mxh_sim_alloc(size_t bytes);
void *mxh_sim_realloc(void *p, size_t old_bytes, size_t bytes);
void mxh_sim_free(void *p);
/* The op to hand to MPI for @op: in model mode one commutative user op that
 * charges the modelled reduction time and computes nothing (so MPI's own
 * collectives pay for their reductions like ours do), else @op. */
MPI_Op mxh_sim_mpi_op(MPI_Op op);
#endif

/* Whether polling (MPI_Test*) is cheap enough to interleave with local work. */
static inline int mxh_test_cheap(void)
{
#ifdef MXH_SIMGRID
    return mxh_sim_test_cheap();
#else
    return 1;
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
