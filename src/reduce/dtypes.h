/* MPI's predefined datatypes and reduction ops: the one table of what each
 * one is. A row gives the handle, its name, the group the MPI standard puts it
 * in for reductions (which ops MPI defines on it) and the element the
 * reduction kernels see. The entry checks (mpix/errors.c), the CPU kernels
 * (reduce_cpu.c) and the CUDA memory kind (mem/mem_cuda.c) read it; which ops
 * have kernels is each engine's own table of kernels, keyed by the element.
 * Pure data, no MPI call: in the internals library. */
#ifndef MXH_REDUCE_DTYPES_H
#define MXH_REDUCE_DTYPES_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The groups of MPI 4.0 section 6.9.2 (the ops MPI defines on each). */
typedef enum mxh_dtype_class {
    MXH_DT_DERIVED = 0, /* not predefined: plain MPI decides */
    MXH_DT_C_INT, MXH_DT_F_INT, MXH_DT_FLOAT, MXH_DT_LOGICAL, MXH_DT_COMPLEX, MXH_DT_BYTE,
    MXH_DT_PAIR,        /* MINLOC/MAXLOC pair types */
    MXH_DT_OTHER,       /* predefined, not reducible (MPI_CHAR, MPI_PACKED, ...) */
    MXH_DT_HALF         /* MPIX_HIER_FLOAT16 / MPIX_HIER_BFLOAT16 (SUM, PROD, MAX, MIN) */
} mxh_dtype_class_t;

/* Elements as the kernels see them. The signed and unsigned integers are in
 * the same width order (a kernel of one maps to the other by offset). */
typedef enum mxh_elem {
    MXH_ELEM_NONE = 0, /* no kernel anywhere: MPI_Reduce_local */
    MXH_ELEM_I8, MXH_ELEM_I16, MXH_ELEM_I32, MXH_ELEM_I64,
    MXH_ELEM_U8, MXH_ELEM_U16, MXH_ELEM_U32, MXH_ELEM_U64,
    MXH_ELEM_F32, MXH_ELEM_F64, MXH_ELEM_LD, /* long double */
    MXH_ELEM_C32, MXH_ELEM_C64,              /* complex float, complex double */
    MXH_ELEM_BOOL, MXH_ELEM_BYTE, MXH_ELEM_FP16, MXH_ELEM_BF16,
    MXH_ELEM_COUNT,
    /* Fortran integers and reals: the element of the size MPI_Type_size reports */
    MXH_ELEM_FINT, MXH_ELEM_FREAL
} mxh_elem_t;

typedef struct mxh_dtype_desc {
    MPI_Datatype      dt;
    const char       *name;
    mxh_dtype_class_t cls;
    mxh_elem_t        elem;
    int               host_only; /* C++ types: the device kernels take C and MPI's own only */
} mxh_dtype_desc_t;

/* The rows, the common types first (looked up linearly). */
#define MXH_DTYPES_MAX 96
extern const mxh_dtype_desc_t mxh_dtypes[];
extern const int              mxh_ndtypes;

/* The row of the predefined type @dt, or NULL (derived types, the half types,
 * predefined types that are not reducible, MPI_DATATYPE_NULL). */
const mxh_dtype_desc_t *mxh_dtype_find(MPI_Datatype dt);

/* The predefined reduction ops, in the kernels' order (reduce_cpu.c,
 * reduce_cuda.h's mxh_cuda_op_t): SUM .. BXOR have kernels. */
typedef enum mxh_dtype_op_kind {
    MXH_OP_SUM = 0, MXH_OP_PROD, MXH_OP_MAX, MXH_OP_MIN,
    MXH_OP_LAND, MXH_OP_LOR, MXH_OP_LXOR, MXH_OP_BAND, MXH_OP_BOR, MXH_OP_BXOR,
    MXH_OP_NKERNEL, /* the ops above have kernels */
    MXH_OP_MINLOC = MXH_OP_NKERNEL, MXH_OP_MAXLOC,
    MXH_OP_REPLACE, MXH_OP_NO_OP,   /* one-sided accumulate only */
    MXH_OP_COUNT
} mxh_op_kind_t;

/* The kind of the predefined op @op, -1 for any other handle (user ops). */
int mxh_dtype_op_kind(MPI_Op op);
/* Its name ("MPI_SUM"), NULL for any other handle. */
const char *mxh_dtype_op_name(MPI_Op op);
/* 1 if MPI defines op @kind on the types of group @cls. */
int mxh_dtype_op_defined(mxh_dtype_class_t cls, int kind);

#ifdef __cplusplus
}
#endif

#endif
