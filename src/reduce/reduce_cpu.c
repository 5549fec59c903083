/* CPU reduction kernels: inout[i] = in[i] op inout[i] for the predefined MPI
 * types and ops, bitwise identical to MPICH's MPI_Reduce_local, plus the
 * half precision types. See reduce.h.
 *
 * Each kernel is a plain loop over restrict pointers with a branch-free body,
 * written in MPICH's operand order (a = inout, b = in: MAX is a > b ? a : b,
 * which decides NaN and signed-zero results). Kernels run on aligned data;
 * misaligned buffers go through a small aligned bounce buffer. */
#include "config.h"

/* Vectorize at -O2 too (GCC's default -O2 cost model rejects loops that need
 * an epilogue) and never fuse a*b+c into an FMA (MPICH, built for the x86-64
 * baseline, does not; results must match it bit for bit).
 * no-trapping-math lets the branch-free half conversions be if-converted (it
 * changes no result, only what may be assumed about FP exception flags). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "fp-contract=off", "no-trapping-math")
#endif

#include "reduce/dtypes.h"
#include "reduce/half.h"
#include "sim/sim.h"
#include "reduce/reduce.h"
#include "util/log.h"

#include <limits.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ---- operations and element kinds ----------------------------------------- */

/* The kernels' ops and elements are reduce/dtypes.h's: the op kinds SUM .. BXOR,
 * the elements of the datatype table's rows. */
enum { NOPK = MXH_OP_NKERNEL };

typedef void (*kern_t)(const void *restrict in, void *restrict inout, size_t n);

/* The element kind of @dt (*row: its datatype table row, NULL if none): the
 * Fortran types' by the size MPI reports, the half types' by their handles. */
static mxh_elem_t kind_of(MPI_Datatype dt, const mxh_dtype_desc_t **row)
{
    const mxh_dtype_desc_t *d = mxh_dtype_find(dt);
    int sz = 0;

    *row = d;
    if (d == NULL) {
        switch (mxh_half_kind(dt)) {
        case MXH_HALF_FP16: return MXH_ELEM_FP16;
        case MXH_HALF_BF16: return MXH_ELEM_BF16;
        default: return MXH_ELEM_NONE;
        }
    }
    if (d->elem < MXH_ELEM_COUNT)
        return d->elem;
    if (MPI_Type_size(dt, &sz) != MPI_SUCCESS)
        return MXH_ELEM_NONE;
    switch (d->elem) {
    case MXH_ELEM_FINT:
        return sz == 1 ? MXH_ELEM_I8 : sz == 2 ? MXH_ELEM_I16 : sz == 4 ? MXH_ELEM_I32
             : sz == 8 ? MXH_ELEM_I64 : MXH_ELEM_NONE;
    case MXH_ELEM_FREAL: return sz == 4 ? MXH_ELEM_F32 : sz == 8 ? MXH_ELEM_F64 : MXH_ELEM_NONE;
    default: return MXH_ELEM_NONE;
    }
}

/* The kernel op of @op, -1: none. */
static int opk_of(MPI_Op op)
{
    int k = mxh_dtype_op_kind(op);
    return k < NOPK ? k : -1;
}

/* ---- kernels ---------------------------------------------------------------- */

#define KERNEL(name, T, EXPR)                                                   \
    static void name(const void *restrict in_, void *restrict io_, size_t n)    \
    {                                                                           \
        const T *restrict b = (const T *)in_;                                   \
        T *restrict a       = (T *)io_;                                         \
        for (size_t i = 0; i < n; i++)                                          \
            a[i] = EXPR;                                                        \
    }

/* Integers: SUM and PROD in an unsigned type of at least int's width (wraps
 * like MPICH's signed arithmetic does, without C's undefined overflow). */
#define INT_KERNELS(sfx, T, WT)                                                        \
    KERNEL(sum_##sfx, T, (T)((WT)a[i] + (WT)b[i]))                                     \
    KERNEL(prod_##sfx, T, (T)((WT)a[i] * (WT)b[i]))                                    \
    KERNEL(max_##sfx, T, a[i] > b[i] ? a[i] : b[i])                                    \
    KERNEL(min_##sfx, T, a[i] < b[i] ? a[i] : b[i])                                    \
    KERNEL(land_##sfx, T, (T)((a[i] != 0) & (b[i] != 0)))                              \
    KERNEL(lor_##sfx, T, (T)((a[i] != 0) | (b[i] != 0)))                               \
    KERNEL(lxor_##sfx, T, (T)((a[i] != 0) ^ (b[i] != 0)))                              \
    KERNEL(band_##sfx, T, (T)(a[i] & b[i]))                                            \
    KERNEL(bor_##sfx, T, (T)(a[i] | b[i]))                                             \
    KERNEL(bxor_##sfx, T, (T)(a[i] ^ b[i]))

INT_KERNELS(i8, int8_t, unsigned)
INT_KERNELS(i16, int16_t, unsigned)
INT_KERNELS(i32, int32_t, uint32_t)
INT_KERNELS(i64, int64_t, uint64_t)
INT_KERNELS(u8, uint8_t, unsigned)
INT_KERNELS(u16, uint16_t, unsigned)
INT_KERNELS(u32, uint32_t, uint32_t)
INT_KERNELS(u64, uint64_t, uint64_t)

#define FLOAT_KERNELS(sfx, T)                                                          \
    KERNEL(sum_##sfx, T, a[i] + b[i])                                                  \
    KERNEL(prod_##sfx, T, a[i] * b[i])                                                 \
    KERNEL(max_##sfx, T, a[i] > b[i] ? a[i] : b[i])                                    \
    KERNEL(min_##sfx, T, a[i] < b[i] ? a[i] : b[i])

FLOAT_KERNELS(f32, float)
FLOAT_KERNELS(f64, double)
FLOAT_KERNELS(ld, long double)

KERNEL(land_bool, bool, a[i] & b[i])
KERNEL(lor_bool, bool, a[i] | b[i])
KERNEL(lxor_bool, bool, a[i] ^ b[i])

/* half types: compute in float, round once (float has >= 2p+2 bits for both
 * formats, so the result is the correctly rounded one); MAX/MIN select an
 * input's bits. */
#define HALF_KERNELS(sfx, TOF, FROMF)                                                  \
    KERNEL(sum_##sfx, uint16_t, FROMF(TOF(a[i]) + TOF(b[i])))                          \
    KERNEL(max_##sfx, uint16_t, TOF(a[i]) > TOF(b[i]) ? a[i] : b[i])                   \
    KERNEL(min_##sfx, uint16_t, TOF(a[i]) < TOF(b[i]) ? a[i] : b[i])

HALF_KERNELS(fp16, mxh_fp16_to_float, mxh_float_to_fp16)
HALF_KERNELS(bf16, mxh_bf16_to_float, mxh_float_to_bf16)
/* fp16 products are exact in float (22 bits, normal range) */
KERNEL(prod_fp16, uint16_t, mxh_float_to_fp16(mxh_fp16_to_float(a[i]) * mxh_fp16_to_float(b[i])))

/* bf16 products are exact in double; those below float's normal range would
 * be rounded twice through float (at 2^-149, then 2^-133), so they are
 * rounded once, directly to the 2^-133 quantum of bf16 subnormals. */
static inline uint16_t bf16_mul(uint16_t x, uint16_t y)
{
    double p     = (double)mxh_bf16_to_float(x) * (double)mxh_bf16_to_float(y);
    double ap    = p < 0 ? -p : p;
    double m     = (ap * 0x1p133 + 0x1p52) - 0x1p52; /* round to integer, ties to even */
    uint16_t sub = (uint16_t)(((x ^ y) & 0x8000u) | (uint16_t)m);
    uint16_t nrm = mxh_float_to_bf16((float)p);
    return ap < 0x1p-126 ? sub : nrm;
}
KERNEL(prod_bf16, uint16_t, bf16_mul(a[i], b[i]))

#define INT_ROW(s) {sum_##s, prod_##s, max_##s, min_##s, land_##s, lor_##s, lxor_##s, \
                    band_##s, bor_##s, bxor_##s}

/* The kernels per element. None for the complex elements (MPI_Reduce_local):
 * when both operands of an add or multiply are NaN, which payload MPICH
 * returns depends on the operand order its compiler chose for each component
 * (it differs between C and Fortran complex, SUM and PROD), so no loop of ours
 * can promise its bits. */
static const struct {
    size_t size, align;
    kern_t fn[NOPK];
} kinds[MXH_ELEM_COUNT] = {
    [MXH_ELEM_I8]   = {1, alignof(int8_t), INT_ROW(i8)},
    [MXH_ELEM_I16]  = {2, alignof(int16_t), INT_ROW(i16)},
    [MXH_ELEM_I32]  = {4, alignof(int32_t), INT_ROW(i32)},
    [MXH_ELEM_I64]  = {8, alignof(int64_t), INT_ROW(i64)},
    [MXH_ELEM_U8]   = {1, alignof(uint8_t), INT_ROW(u8)},
    [MXH_ELEM_U16]  = {2, alignof(uint16_t), INT_ROW(u16)},
    [MXH_ELEM_U32]  = {4, alignof(uint32_t), INT_ROW(u32)},
    [MXH_ELEM_U64]  = {8, alignof(uint64_t), INT_ROW(u64)},
    [MXH_ELEM_F32]  = {sizeof(float), alignof(float), {sum_f32, prod_f32, max_f32, min_f32}},
    [MXH_ELEM_F64]  = {sizeof(double), alignof(double), {sum_f64, prod_f64, max_f64, min_f64}},
    [MXH_ELEM_LD]   = {sizeof(long double), alignof(long double), {sum_ld, prod_ld, max_ld, min_ld}},
    [MXH_ELEM_BOOL] = {sizeof(bool), alignof(bool),
                {[MXH_OP_LAND] = land_bool, [MXH_OP_LOR] = lor_bool, [MXH_OP_LXOR] = lxor_bool}},
    [MXH_ELEM_BYTE] = {1, 1, {[MXH_OP_BAND] = band_u8, [MXH_OP_BOR] = bor_u8, [MXH_OP_BXOR] = bxor_u8}},
    [MXH_ELEM_FP16] = {2, alignof(uint16_t), {sum_fp16, prod_fp16, max_fp16, min_fp16}},
    [MXH_ELEM_BF16] = {2, alignof(uint16_t), {sum_bf16, prod_bf16, max_bf16, min_bf16}},
};

/* ---- dispatch ----------------------------------------------------------------- */

/* MPICH 4.0.2 compares unsigned integers as signed in MPI_MAX/MPI_MIN (its
 * MPI_Reduce_local gives max(1, UINT_MAX) = 1). Results must equal MPICH's,
 * so each unsigned type is probed once: 1 = MPI compares as unsigned,
 * 2 = as signed (then the signed kernel of the same width is used). */
static unsigned char unsigned_minmax[MXH_DTYPES_MAX];

static int minmax_as_signed(const mxh_dtype_desc_t *row, mxh_elem_t k)
{
    int idx = row != NULL ? (int)(row - mxh_dtypes) : -1;
    if (idx < 0)
        return 0;
    if (unsigned_minmax[idx] == 0) {
        unsigned char one[8], ones[8];
        const size_t sz = kinds[k].size;
        uint64_t v1 = 1;
        int init = 0, fin = 0;
        MPI_Initialized(&init);
        MPI_Finalized(&fin);
        if (!init || fin)
            return 0; /* cannot ask; do not cache */
        /* the value 1 in a little- or big-endian integer of sz bytes */
        memset(one, 0, sizeof(one));
        if (k == MXH_ELEM_U8) { uint8_t x = 1; memcpy(one, &x, 1); }
        else if (k == MXH_ELEM_U16) { uint16_t x = 1; memcpy(one, &x, 2); }
        else if (k == MXH_ELEM_U32) { uint32_t x = 1; memcpy(one, &x, 4); }
        else memcpy(one, &v1, 8);
        memset(ones, 0xff, sizeof(ones));
        if (MPI_Reduce_local(one, ones, 1, row->dt, MPI_MAX) != MPI_SUCCESS)
            return 0;
        unsigned_minmax[idx] = memcmp(ones, one, sz) == 0 ? 2 : 1;
        if (unsigned_minmax[idx] == 2)
            mxh_debug("MPI compares %s as signed in MPI_MAX/MPI_MIN; kernels do the same",
                      row->name);
    }
    return unsigned_minmax[idx] == 2;
}

#define BOUNCE_BYTES 2048

/* Misaligned buffers: chunks through aligned copies. */
static void run_bounced(kern_t fn, size_t esize, const char *in, char *inout, size_t count)
{
    union {
        long double ld;
        uint64_t u64;
        char bytes[BOUNCE_BYTES];
    } bi, bo;
    const size_t per = BOUNCE_BYTES / esize;

    while (count > 0) {
        size_t n = count < per ? count : per;
        memcpy(bi.bytes, in, n * esize);
        memcpy(bo.bytes, inout, n * esize);
        fn(bi.bytes, bo.bytes, n);
        memcpy(inout, bo.bytes, n * esize);
        in += n * esize;
        inout += n * esize;
        count -= n;
    }
}

static mxh_status_t fallback(const void *in, void *inout, size_t count, MPI_Datatype dt,
                             MPI_Op op)
{
    MPI_Aint lb, extent;
    int rc;

    if (MPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS) {
        mxh_error("mxh_reduce_local: invalid datatype");
        return MXH_ERR_INVALID_PARAM;
    }
    while (count > 0) {
        int n = count > (size_t)INT_MAX ? INT_MAX : (int)count;
        rc = MPI_Reduce_local(in, inout, n, dt, op);
        if (rc != MPI_SUCCESS) {
            mxh_error("mxh_reduce_local: MPI_Reduce_local failed (code %d)", rc);
            return MXH_ERR_MPI;
        }
        count -= (size_t)n;
        in = (const char *)in + (size_t)n * (size_t)extent;
        inout = (char *)inout + (size_t)n * (size_t)extent;
    }
    return MXH_OK;
}

/* The element kind of @dt (*row: its datatype table row) and the kernel op of
 * @op (-1: none), the half types' user ops resolved to their predefined op. */
static mxh_elem_t lookup(MPI_Datatype dt, MPI_Op op, const mxh_dtype_desc_t **row, int *o)
{
    mxh_elem_t k = kind_of(dt, row);

    *o = opk_of(op);
    if (*o < 0) {
        /* the user ops standing for SUM/PROD/MAX/MIN on the half types */
        mxh_half_kind_t hk;
        MPI_Op base;
        if (mxh_half_op_lookup(op, &hk, &base) &&
            (hk == MXH_HALF_FP16 ? MXH_ELEM_FP16 : MXH_ELEM_BF16) == k)
            *o = opk_of(base);
    }
    return k;
}

int mxh_reduce_has_kernel(MPI_Datatype dt, MPI_Op op)
{
    const mxh_dtype_desc_t *row;
    int o;
    mxh_elem_t k = lookup(dt, op, &row, &o);
    /* unsigned MAX/MIN may run the signed kernel of the same width: both exist */
    return k != MXH_ELEM_NONE && o >= 0 && kinds[k].fn[o] != NULL;
}

/* inout = in op inout, not charged to a simulated clock. */
static mxh_status_t reduce_exec(const void *in, void *inout, size_t count, MPI_Datatype dt,
                                MPI_Op op)
{
    const mxh_dtype_desc_t *row;
    mxh_elem_t k;
    int o;
    kern_t fn = NULL;

    k = lookup(dt, op, &row, &o);
    if ((o == MXH_OP_MAX || o == MXH_OP_MIN) && k >= MXH_ELEM_U8 && k <= MXH_ELEM_U64 &&
        minmax_as_signed(row, k))
        k = (mxh_elem_t)(k - MXH_ELEM_U8 + MXH_ELEM_I8);
    if (k != MXH_ELEM_NONE && o >= 0)
        fn = kinds[k].fn[o];
    if (fn == NULL && (k == MXH_ELEM_FP16 || k == MXH_ELEM_BF16) && opk_of(op) >= 0) {
        /* MPI would reject a predefined op on the derived half type */
        mxh_error("mxh_reduce_local: op not defined for the half precision datatypes "
                  "(SUM, PROD, MAX, MIN are)");
        return MXH_ERR_INVALID_PARAM;
    }
    if (fn == NULL)
        return fallback(in, inout, count, dt, op);
    if (((uintptr_t)in | (uintptr_t)inout) % kinds[k].align == 0)
        fn(in, inout, count);
    else
        run_bounced(fn, kinds[k].size, (const char *)in, (char *)inout, count);
    return MXH_OK;
}

#ifdef MXH_SIMGRID
/* In the simulation the modelled time of a reduction of @count elements reading
 * @nin inputs (the output written once) is charged; returns 1 when it is not
 * to be executed. A two-input reduction is the unit of MPIX_HIER_SIM_REDUCE_BW. */
static int sim_charge(size_t count, MPI_Datatype dt, int nin)
{
    int tsz = 0;
    MPI_Type_size(dt, &tsz);
    mxh_sim_charge_reduce(count * (size_t)(tsz > 0 ? tsz : 1) * (size_t)(nin + 1) / 3);
    return mxh_sim_model();
}
#endif

mxh_status_t mxh_reduce_local(const void *in, void *inout, size_t count, MPI_Datatype dt,
                              MPI_Op op)
{
    if (count == 0)
        return MXH_OK;
    if (in == NULL || inout == NULL) {
        mxh_error("mxh_reduce_local: NULL buffer with count %zu", count);
        return MXH_ERR_INVALID_PARAM;
    }
#ifdef MXH_SIMGRID
    if (sim_charge(count, dt, 2))
        return MXH_OK;
#endif
    return reduce_exec(in, inout, count, dt, op);
}

/* Bytes of output produced per pass over the inputs: small enough that the
 * output block stays in L1/L2 while all inputs are folded into it. */
#define MXH_REDUCE_BLOCK (16u << 10)

mxh_status_t mxh_reduce_multi(const void *const *in, int nin, void *out, size_t count,
                              MPI_Datatype dt, MPI_Op op)
{
    MPI_Aint lb, extent;
    size_t blk;

    if (count == 0)
        return MXH_OK;
    if (in == NULL || out == NULL || nin < 1) {
        mxh_error("mxh_reduce_multi: no inputs or no output (count %zu)", count);
        return MXH_ERR_INVALID_PARAM;
    }
    for (int j = 0; j < nin; j++)
        if (in[j] == NULL) {
            mxh_error("mxh_reduce_multi: input %d is NULL (count %zu)", j, count);
            return MXH_ERR_INVALID_PARAM;
        }
    if (MPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS || extent <= 0) {
        mxh_error("mxh_reduce_multi: invalid datatype");
        return MXH_ERR_INVALID_PARAM;
    }
#ifdef MXH_SIMGRID
    if (sim_charge(count, dt, nin))
        return MXH_OK;
#endif
    blk = MXH_REDUCE_BLOCK / (size_t)extent;
    if (blk == 0)
        blk = 1;
    for (size_t done = 0; done < count; done += blk) {
        size_t n = count - done < blk ? count - done : blk, off = done * (size_t)extent;
        char *o  = (char *)out + off;
        if ((const void *)out != in[0])
            memcpy(o, (const char *)in[0] + off, n * (size_t)extent);
        for (int j = 1; j < nin; j++) {
            mxh_status_t st = reduce_exec((const char *)in[j] + off, o, n, dt, op);
            if (st != MXH_OK)
                return st;
        }
    }
    return MXH_OK;
}
