/* MPIX_HIER_FLOAT16 / MPIX_HIER_BFLOAT16: two derived datatypes (one
 * MPI_UINT16_T each, named after the macro) and, for each, commutative user
 * ops implementing SUM, PROD, MAX and MIN with the CPU kernels, so that MPI
 * itself can reduce them (mxh_reduce_mpi_op). Created together on first use;
 * freed at MPI_Finalize by the delete callback of an attribute on
 * MPI_COMM_SELF (independent of the entry layer's own teardown). */
#include "config.h"

#include "mpix_hier.h"
#include "reduce/reduce.h"
#include "util/log.h"

#define NHALF 2 /* index = mxh_half_kind_t - 1 */
#define NHOP  4

static MPI_Datatype half_types[NHALF] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};
static MPI_Op half_ops[NHALF][NHOP] = {{MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL},
                                       {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL}};
static int half_keyval = MPI_KEYVAL_INVALID;

static MPI_Op base_op(int j)
{
    switch (j) {
    case 0: return MPI_SUM;
    case 1: return MPI_PROD;
    case 2: return MPI_MAX;
    default: return MPI_MIN;
    }
}

/* MPI hands the user function the datatype it was called with; should it
 * ever pass another one, the element count is recomputed from its size. */
static void apply(int h, int j, void *in, void *inout, int *len, MPI_Datatype *dt)
{
    size_t n = *len > 0 ? (size_t)*len : 0;
    if (dt != NULL && *dt != half_types[h]) {
        int sz = 0;
        MPI_Type_size(*dt, &sz);
        n = n * (size_t)(sz > 0 ? sz : 0) / 2;
    }
    mxh_reduce_local(in, inout, n, half_types[h], base_op(j));
}

#define OPFN(h, j, name)                                                        \
    static void name(void *in, void *inout, int *len, MPI_Datatype *dt)         \
    {                                                                           \
        apply(h, j, in, inout, len, dt);                                        \
    }
OPFN(0, 0, fp16_sum)
OPFN(0, 1, fp16_prod)
OPFN(0, 2, fp16_max)
OPFN(0, 3, fp16_min)
OPFN(1, 0, bf16_sum)
OPFN(1, 1, bf16_prod)
OPFN(1, 2, bf16_max)
OPFN(1, 3, bf16_min)

static MPI_User_function *const op_fns[NHALF][NHOP] = {
    {fp16_sum, fp16_prod, fp16_max, fp16_min}, {bf16_sum, bf16_prod, bf16_max, bf16_min}};

static void destroy_all(void)
{
    for (int h = 0; h < NHALF; h++) {
        for (int j = 0; j < NHOP; j++)
            if (half_ops[h][j] != MPI_OP_NULL)
                MPI_Op_free(&half_ops[h][j]);
        if (half_types[h] != MPI_DATATYPE_NULL)
            MPI_Type_free(&half_types[h]);
    }
}

static int self_delete_fn(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)attr;
    (void)extra;
    destroy_all();
    MPI_Comm_free_keyval(&keyval);
    half_keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}

static mxh_status_t create_all(void)
{
    static const char *const names[NHALF] = {"MPIX_HIER_FLOAT16", "MPIX_HIER_BFLOAT16"};
    int initialized = 0, finalized = 0;

    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized) {
        mxh_error("MPIX_HIER_FLOAT16/MPIX_HIER_BFLOAT16 used %s MPI",
                  finalized ? "after finalizing" : "before initializing");
        return MXH_ERR_INVALID_PARAM;
    }
    for (int h = 0; h < NHALF; h++) {
        if (MPI_Type_contiguous(1, MPI_UINT16_T, &half_types[h]) != MPI_SUCCESS ||
            MPI_Type_commit(&half_types[h]) != MPI_SUCCESS)
            goto fail;
        MPI_Type_set_name(half_types[h], names[h]);
        for (int j = 0; j < NHOP; j++)
            if (MPI_Op_create(op_fns[h][j], 1, &half_ops[h][j]) != MPI_SUCCESS)
                goto fail;
    }
    if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete_fn, &half_keyval, NULL) !=
            MPI_SUCCESS ||
        MPI_Comm_set_attr(MPI_COMM_SELF, half_keyval, NULL) != MPI_SUCCESS)
        goto fail;
    return MXH_OK;

fail:
    mxh_error("cannot create the half precision datatypes and their ops");
    if (half_keyval != MPI_KEYVAL_INVALID)
        MPI_Comm_free_keyval(&half_keyval);
    destroy_all();
    return MXH_ERR_MPI;
}

MPI_Datatype mxh_half_type(mxh_half_kind_t kind)
{
    if (kind != MXH_HALF_FP16 && kind != MXH_HALF_BF16)
        return MPI_DATATYPE_NULL;
    if (half_types[kind - 1] == MPI_DATATYPE_NULL && create_all() != MXH_OK)
        return MPI_DATATYPE_NULL;
    return half_types[kind - 1];
}

mxh_half_kind_t mxh_half_kind(MPI_Datatype dt)
{
    if (dt == MPI_DATATYPE_NULL)
        return MXH_HALF_NONE;
    if (dt == half_types[0])
        return MXH_HALF_FP16;
    if (dt == half_types[1])
        return MXH_HALF_BF16;
#ifdef MPIX_C_FLOAT16
    /* MPICH's name for binary16 (mpi4py's MPI.FLOAT16_T): reduced by us, since
     * MPICH 4.0.2 asserts when it reduces it itself */
    if (dt == MPIX_C_FLOAT16)
        return MXH_HALF_FP16;
#endif
#ifdef MPIX_BFLOAT16
    if (dt == MPIX_BFLOAT16)
        return MXH_HALF_BF16;
#endif
    return MXH_HALF_NONE;
}

int mxh_half_op_lookup(MPI_Op op, mxh_half_kind_t *kind, MPI_Op *base)
{
    if (op == MPI_OP_NULL)
        return 0;
    for (int h = 0; h < NHALF; h++)
        for (int j = 0; j < NHOP; j++)
            if (half_ops[h][j] == op) {
                *kind = (mxh_half_kind_t)(h + 1);
                *base = base_op(j);
                return 1;
            }
    return 0;
}

MPI_Op mxh_reduce_mpi_op(MPI_Datatype dt, MPI_Op op)
{
    mxh_half_kind_t k = mxh_half_kind(dt);

    if (k == MXH_HALF_NONE || mxh_half_type(k) == MPI_DATATYPE_NULL) /* creates the ops */
        return op;
    for (int j = 0; j < NHOP; j++)
        if (op == base_op(j))
            return half_ops[k - 1][j];
    return op;
}

MPI_Datatype MPIX_Hier_type_float16(void)
{
    return mxh_half_type(MXH_HALF_FP16);
}

MPI_Datatype MPIX_Hier_type_bfloat16(void)
{
    return mxh_half_type(MXH_HALF_BF16);
}
