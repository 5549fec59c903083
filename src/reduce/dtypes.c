/* The predefined datatypes and ops (reduce/dtypes.h). */
#include "config.h"

#include "reduce/dtypes.h"

#define SINT(T) (sizeof(T) == 1 ? MXH_ELEM_I8 : sizeof(T) == 2 ? MXH_ELEM_I16          \
                 : sizeof(T) == 4 ? MXH_ELEM_I32 : sizeof(T) == 8 ? MXH_ELEM_I64 : MXH_ELEM_NONE)
#define UINT(T) (sizeof(T) == 1 ? MXH_ELEM_U8 : sizeof(T) == 2 ? MXH_ELEM_U16          \
                 : sizeof(T) == 4 ? MXH_ELEM_U32 : sizeof(T) == 8 ? MXH_ELEM_U64 : MXH_ELEM_NONE)

#define CHAR_ELEM ((char)-1 < 0 ? MXH_ELEM_I8 : MXH_ELEM_U8)

#define C_INT(t, e)  {t, #t, MXH_DT_C_INT, e, 0}
#define F_INT(t, e)  {t, #t, MXH_DT_F_INT, e, 0}
#define FLT(t, e)    {t, #t, MXH_DT_FLOAT, e, 0}
#define LOGIC(t, e)  {t, #t, MXH_DT_LOGICAL, e, 0}
#define CPLX(t, e)   {t, #t, MXH_DT_COMPLEX, e, 0}
#define PAIR(t)      {t, #t, MXH_DT_PAIR, MXH_ELEM_NONE, 0}
#define CXX(t, c, e) {t, #t, c, e, 1}

const mxh_dtype_desc_t mxh_dtypes[] = {
    /* the common ones first */
    FLT(MPI_FLOAT, MXH_ELEM_F32), FLT(MPI_DOUBLE, MXH_ELEM_F64),
    C_INT(MPI_INT, SINT(int)), C_INT(MPI_LONG, SINT(long)),
    C_INT(MPI_UNSIGNED, UINT(unsigned)),
    C_INT(MPI_INT32_T, MXH_ELEM_I32), C_INT(MPI_INT64_T, MXH_ELEM_I64),
    C_INT(MPI_UINT64_T, MXH_ELEM_U64), C_INT(MPI_UINT32_T, MXH_ELEM_U32),
    C_INT(MPI_INT8_T, MXH_ELEM_I8), C_INT(MPI_UINT8_T, MXH_ELEM_U8),
    C_INT(MPI_INT16_T, MXH_ELEM_I16), C_INT(MPI_UINT16_T, MXH_ELEM_U16),
    {MPI_BYTE, "MPI_BYTE", MXH_DT_BYTE, MXH_ELEM_BYTE, 0},
    LOGIC(MPI_C_BOOL, MXH_ELEM_BOOL),
    C_INT(MPI_SHORT, SINT(short)), C_INT(MPI_UNSIGNED_SHORT, UINT(unsigned short)),
    C_INT(MPI_UNSIGNED_LONG, UINT(unsigned long)), C_INT(MPI_LONG_LONG_INT, SINT(long long)),
    C_INT(MPI_LONG_LONG, SINT(long long)), C_INT(MPI_UNSIGNED_LONG_LONG, UINT(unsigned long long)),
    C_INT(MPI_SIGNED_CHAR, SINT(signed char)), C_INT(MPI_UNSIGNED_CHAR, UINT(unsigned char)),
    /* MPICH reduces MPI_CHAR and MPI_CHARACTER with every integer op (as C's char: its
     * signedness for MAX/MIN); OSU's benchmarks default to MPI_CHAR */
    C_INT(MPI_CHAR, CHAR_ELEM), C_INT(MPI_CHARACTER, CHAR_ELEM),
    /* Fortran integers in MPI's groups, C's sizes */
    F_INT(MPI_AINT, SINT(MPI_Aint)), F_INT(MPI_OFFSET, SINT(MPI_Offset)),
    F_INT(MPI_COUNT, SINT(MPI_Count)),
    FLT(MPI_LONG_DOUBLE, MXH_ELEM_LD),
    CXX(MPI_CXX_BOOL, MXH_DT_LOGICAL, MXH_ELEM_BOOL),
    /* Fortran: sizes from MPI */
    F_INT(MPI_INTEGER, MXH_ELEM_FINT), F_INT(MPI_INTEGER1, MXH_ELEM_FINT),
    F_INT(MPI_INTEGER2, MXH_ELEM_FINT), F_INT(MPI_INTEGER4, MXH_ELEM_FINT),
    F_INT(MPI_INTEGER8, MXH_ELEM_FINT),
    FLT(MPI_REAL, MXH_ELEM_FREAL), FLT(MPI_DOUBLE_PRECISION, MXH_ELEM_FREAL),
    FLT(MPI_REAL4, MXH_ELEM_FREAL), FLT(MPI_REAL8, MXH_ELEM_FREAL),
    /* No kernel, MPI_Reduce_local: MPI_LOGICAL (Fortran .TRUE. encoding),
     * MPI_REAL16, MPI_INTEGER16. Complex types have no CPU kernel (reduce_cpu.c
     * says why), C's float and double complex have device ones. */
#ifdef MPI_INTEGER16
    F_INT(MPI_INTEGER16, MXH_ELEM_NONE),
#endif
    FLT(MPI_REAL16, MXH_ELEM_NONE), LOGIC(MPI_LOGICAL, MXH_ELEM_NONE),
    CPLX(MPI_C_COMPLEX, MXH_ELEM_C32), CPLX(MPI_C_FLOAT_COMPLEX, MXH_ELEM_C32),
    CPLX(MPI_C_DOUBLE_COMPLEX, MXH_ELEM_C64), CPLX(MPI_C_LONG_DOUBLE_COMPLEX, MXH_ELEM_NONE),
    CXX(MPI_CXX_FLOAT_COMPLEX, MXH_DT_COMPLEX, MXH_ELEM_C32),
    CXX(MPI_CXX_DOUBLE_COMPLEX, MXH_DT_COMPLEX, MXH_ELEM_C64),
    CXX(MPI_CXX_LONG_DOUBLE_COMPLEX, MXH_DT_COMPLEX, MXH_ELEM_NONE),
    CPLX(MPI_COMPLEX, MXH_ELEM_NONE), CPLX(MPI_DOUBLE_COMPLEX, MXH_ELEM_NONE),
    CPLX(MPI_COMPLEX8, MXH_ELEM_NONE), CPLX(MPI_COMPLEX16, MXH_ELEM_NONE),
    CPLX(MPI_COMPLEX32, MXH_ELEM_NONE),
    /* MINLOC/MAXLOC pairs */
    PAIR(MPI_FLOAT_INT), PAIR(MPI_DOUBLE_INT), PAIR(MPI_LONG_INT), PAIR(MPI_2INT),
    PAIR(MPI_SHORT_INT), PAIR(MPI_LONG_DOUBLE_INT), PAIR(MPI_2REAL),
    PAIR(MPI_2DOUBLE_PRECISION), PAIR(MPI_2INTEGER),
};

const int mxh_ndtypes = (int)(sizeof(mxh_dtypes) / sizeof(mxh_dtypes[0]));
_Static_assert(sizeof(mxh_dtypes) / sizeof(mxh_dtypes[0]) <= MXH_DTYPES_MAX,
               "MXH_DTYPES_MAX bounds the per-row caches");

const mxh_dtype_desc_t *mxh_dtype_find(MPI_Datatype dt)
{
    if (dt == MPI_DATATYPE_NULL)
        return NULL; /* types a build lacks may be MPI_DATATYPE_NULL in the table */
    for (int i = 0; i < mxh_ndtypes; i++)
        if (mxh_dtypes[i].dt == dt)
            return &mxh_dtypes[i];
    return NULL;
}

#define BIT(k) (1u << (k))
#define ARITH  (BIT(MXH_OP_SUM) | BIT(MXH_OP_PROD))
#define ORDER  (BIT(MXH_OP_MAX) | BIT(MXH_OP_MIN))
#define LOGICS (BIT(MXH_OP_LAND) | BIT(MXH_OP_LOR) | BIT(MXH_OP_LXOR))
#define BITS   (BIT(MXH_OP_BAND) | BIT(MXH_OP_BOR) | BIT(MXH_OP_BXOR))

/* The ops MPI defines on each group. */
static const unsigned class_ops[] = {
    [MXH_DT_C_INT]   = ARITH | ORDER | LOGICS | BITS,
    [MXH_DT_F_INT]   = ARITH | ORDER | BITS,
    [MXH_DT_FLOAT]   = ARITH | ORDER,
    [MXH_DT_LOGICAL] = LOGICS,
    [MXH_DT_COMPLEX] = ARITH,
    [MXH_DT_BYTE]    = BITS,
    [MXH_DT_PAIR]    = BIT(MXH_OP_MINLOC) | BIT(MXH_OP_MAXLOC),
    [MXH_DT_HALF]    = ARITH | ORDER,
};

int mxh_dtype_op_defined(mxh_dtype_class_t cls, int kind)
{
    return cls >= 0 && cls < (int)(sizeof(class_ops) / sizeof(class_ops[0])) && kind >= 0 &&
           kind < MXH_OP_COUNT && (class_ops[cls] >> kind & 1u);
}

/* In mxh_op_kind_t order. */
static const struct {
    MPI_Op      op;
    const char *name;
} ops[MXH_OP_COUNT] = {
    {MPI_SUM, "MPI_SUM"},       {MPI_PROD, "MPI_PROD"},     {MPI_MAX, "MPI_MAX"},
    {MPI_MIN, "MPI_MIN"},       {MPI_LAND, "MPI_LAND"},     {MPI_LOR, "MPI_LOR"},
    {MPI_LXOR, "MPI_LXOR"},     {MPI_BAND, "MPI_BAND"},     {MPI_BOR, "MPI_BOR"},
    {MPI_BXOR, "MPI_BXOR"},     {MPI_MINLOC, "MPI_MINLOC"}, {MPI_MAXLOC, "MPI_MAXLOC"},
    {MPI_REPLACE, "MPI_REPLACE"}, {MPI_NO_OP, "MPI_NO_OP"},
};

int mxh_dtype_op_kind(MPI_Op op)
{
    for (int k = 0; k < MXH_OP_COUNT; k++)
        if (ops[k].op == op)
            return k;
    return -1;
}

const char *mxh_dtype_op_name(MPI_Op op)
{
    int k = mxh_dtype_op_kind(op);
    return k >= 0 ? ops[k].name : NULL;
}
