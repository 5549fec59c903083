/* Reduction kernels (CPU) and the half precision datatypes.
 *
 * mxh_reduce_local(in, inout, count, dt, op): inout[i] = in[i] op inout[i],
 * MPI_Reduce_local semantics, bitwise identical to MPICH's MPI_Reduce_local
 * for every predefined (type, op) pair MPI allows, plus MPIX_HIER_FLOAT16 /
 * MPIX_HIER_BFLOAT16 with SUM/PROD/MAX/MIN (computed in float, rounded once
 * per element to nearest even). Any alignment; in and inout must not overlap
 * unless they are the same pointer. Pairs without a kernel (user ops, derived
 * types, MPI_LOGICAL, MPI_REAL16, ...) go to MPI_Reduce_local.
 *
 * mxh_reduce_multi: the fused form for n inputs (below).
 *
 * mxh_reduce_mpi_op(dt, op): the op to hand to MPI for (dt, op). MPI cannot
 * apply predefined ops to a derived type, so for the half types and
 * SUM/PROD/MAX/MIN it is a commutative user-defined op (created with the
 * types, freed at MPI_Finalize); otherwise @op itself. mxh_reduce_local
 * also accepts these mapped ops (and runs the same kernels).
 */
#ifndef MXH_REDUCE_H
#define MXH_REDUCE_H

#include <mpi.h>
#include <stddef.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

mxh_status_t mxh_reduce_local(const void *in, void *inout, size_t count, MPI_Datatype dt,
                              MPI_Op op);

/* out = in[nin-1] op (... op (in[1] op in[0])), element by element, with the
 * same kernels and bitwise results as that chain of mxh_reduce_local calls
 * (except which payload survives when two NaNs meet: the compiler's operand
 * order differs between a kernel's vector body and its tail),
 * fused: each block of the output is built from all inputs while it is in cache
 * (nin + 1 passes over memory instead of 3 (nin - 1)). @out may be in[0]; no
 * other input may overlap it. nin = 1 copies. */
mxh_status_t mxh_reduce_multi(const void *const *in, int nin, void *out, size_t count,
                              MPI_Datatype dt, MPI_Op op);

MPI_Op mxh_reduce_mpi_op(MPI_Datatype dt, MPI_Op op);

/* 1 if mxh_reduce_local/mxh_reduce_multi run a kernel of their own for (dt,
 * op) (the pairs above; not those that go to MPI_Reduce_local). Fortran types
 * ask MPI_Type_size (MPI must be initialized for them). */
int mxh_reduce_has_kernel(MPI_Datatype dt, MPI_Op op);

/* ---- half precision datatypes (half_types.c) ---- */

typedef enum mxh_half_kind {
    MXH_HALF_NONE = 0,
    MXH_HALF_FP16 = 1, /* IEEE binary16, MPIX_HIER_FLOAT16 */
    MXH_HALF_BF16 = 2  /* bfloat16, MPIX_HIER_BFLOAT16 */
} mxh_half_kind_t;

/* Which half type @dt is (MXH_HALF_NONE for every other handle, and before
 * the types exist). No MPI call. */
mxh_half_kind_t mxh_half_kind(MPI_Datatype dt);
/* The datatype of @kind, created on first use (MPI_DATATYPE_NULL if MPI is
 * not initialized or already finalized, or creation failed: logged). */
MPI_Datatype mxh_half_type(mxh_half_kind_t kind);
/* If @op is one of the user ops made for the half types: its half kind and
 * the predefined op it implements (*base); 0 otherwise. */
int mxh_half_op_lookup(MPI_Op op, mxh_half_kind_t *kind, MPI_Op *base);

#ifdef __cplusplus
}
#endif

#endif
