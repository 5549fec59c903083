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

enum opk { O_SUM, O_PROD, O_MAX, O_MIN, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR, NOPK };

enum kind {
    K_NONE = 0,
    K_I8, K_I16, K_I32, K_I64, K_U8, K_U16, K_U32, K_U64,
    K_F32, K_F64, K_LD,
    K_BOOL, K_BYTE, K_FP16, K_BF16,
    NKIND,
    /* resolved by MPI_Type_size at lookup (Fortran types) */
    K_FINT, K_FREAL
};

typedef void (*kern_t)(const void *restrict in, void *restrict inout, size_t n);

#define KSINT(T) (sizeof(T) == 1 ? K_I8 : sizeof(T) == 2 ? K_I16 : sizeof(T) == 4 ? K_I32 \
                  : sizeof(T) == 8 ? K_I64 : K_NONE)
#define KUINT(T) (sizeof(T) == 1 ? K_U8 : sizeof(T) == 2 ? K_U16 : sizeof(T) == 4 ? K_U32 \
                  : sizeof(T) == 8 ? K_U64 : K_NONE)

static const struct {
    MPI_Datatype dt;
    unsigned char kind;
} dt_kinds[] = {
    /* the common ones first (linear search) */
    {MPI_FLOAT, K_F32}, {MPI_DOUBLE, K_F64}, {MPI_INT, KSINT(int)},
    {MPI_LONG, KSINT(long)}, {MPI_UNSIGNED, KUINT(unsigned)},
    {MPI_INT32_T, K_I32}, {MPI_INT64_T, K_I64}, {MPI_UINT64_T, K_U64}, {MPI_UINT32_T, K_U32},
    {MPI_INT8_T, K_I8}, {MPI_UINT8_T, K_U8}, {MPI_INT16_T, K_I16}, {MPI_UINT16_T, K_U16},
    {MPI_BYTE, K_BYTE}, {MPI_C_BOOL, K_BOOL},
    {MPI_SHORT, KSINT(short)}, {MPI_UNSIGNED_SHORT, KUINT(unsigned short)},
    {MPI_UNSIGNED_LONG, KUINT(unsigned long)}, {MPI_LONG_LONG_INT, KSINT(long long)},
    {MPI_LONG_LONG, KSINT(long long)}, {MPI_UNSIGNED_LONG_LONG, KUINT(unsigned long long)},
    {MPI_SIGNED_CHAR, KSINT(signed char)}, {MPI_UNSIGNED_CHAR, KUINT(unsigned char)},
    {MPI_AINT, KSINT(MPI_Aint)}, {MPI_OFFSET, KSINT(MPI_Offset)}, {MPI_COUNT, KSINT(MPI_Count)},
    {MPI_LONG_DOUBLE, K_LD}, {MPI_CXX_BOOL, K_BOOL},
    /* Fortran: sizes from MPI */
    {MPI_INTEGER, K_FINT}, {MPI_INTEGER1, K_FINT}, {MPI_INTEGER2, K_FINT},
    {MPI_INTEGER4, K_FINT}, {MPI_INTEGER8, K_FINT},
    {MPI_REAL, K_FREAL}, {MPI_DOUBLE_PRECISION, K_FREAL}, {MPI_REAL4, K_FREAL},
    {MPI_REAL8, K_FREAL},
    /* No kernel, MPI_Reduce_local: MPI_LOGICAL (Fortran .TRUE. encoding),
     * MPI_REAL16, MPI_INTEGER16, and all complex types: when both operands
     * of an add or multiply are NaN, which payload MPICH returns depends on
     * the operand order its compiler chose for each component (it differs
     * between C and Fortran complex, SUM and PROD), so no loop of ours can
     * promise its bits. */
};

#define NDT_KINDS (sizeof(dt_kinds) / sizeof(dt_kinds[0]))

/* *idx: the table entry (NDT_KINDS if none) */
static enum kind kind_of(MPI_Datatype dt, size_t *idx)
{
    *idx = NDT_KINDS;
    for (size_t i = 0; i < NDT_KINDS; i++) {
        if (dt_kinds[i].dt != dt || dt == MPI_DATATYPE_NULL)
            continue;
        *idx = i;
        enum kind k = (enum kind)dt_kinds[i].kind;
        int sz = 0;
        if (k < NKIND)
            return k;
        if (MPI_Type_size(dt, &sz) != MPI_SUCCESS)
            return K_NONE;
        switch (k) {
        case K_FINT: return sz == 1 ? K_I8 : sz == 2 ? K_I16 : sz == 4 ? K_I32 : sz == 8 ? K_I64
                                                                                     : K_NONE;
        case K_FREAL: return sz == 4 ? K_F32 : sz == 8 ? K_F64 : K_NONE;
        default: return K_NONE;
        }
    }
    switch (mxh_half_kind(dt)) {
    case MXH_HALF_FP16: return K_FP16;
    case MXH_HALF_BF16: return K_BF16;
    default: return K_NONE;
    }
}

static int opk_of(MPI_Op op)
{
    if (op == MPI_SUM) return O_SUM;
    if (op == MPI_MAX) return O_MAX;
    if (op == MPI_MIN) return O_MIN;
    if (op == MPI_PROD) return O_PROD;
    if (op == MPI_BAND) return O_BAND;
    if (op == MPI_BOR) return O_BOR;
    if (op == MPI_BXOR) return O_BXOR;
    if (op == MPI_LAND) return O_LAND;
    if (op == MPI_LOR) return O_LOR;
    if (op == MPI_LXOR) return O_LXOR;
    return -1;
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

static const struct {
    size_t size, align;
    kern_t fn[NOPK];
} kinds[NKIND] = {
    [K_I8]   = {1, alignof(int8_t), INT_ROW(i8)},
    [K_I16]  = {2, alignof(int16_t), INT_ROW(i16)},
    [K_I32]  = {4, alignof(int32_t), INT_ROW(i32)},
    [K_I64]  = {8, alignof(int64_t), INT_ROW(i64)},
    [K_U8]   = {1, alignof(uint8_t), INT_ROW(u8)},
    [K_U16]  = {2, alignof(uint16_t), INT_ROW(u16)},
    [K_U32]  = {4, alignof(uint32_t), INT_ROW(u32)},
    [K_U64]  = {8, alignof(uint64_t), INT_ROW(u64)},
    [K_F32]  = {sizeof(float), alignof(float), {sum_f32, prod_f32, max_f32, min_f32}},
    [K_F64]  = {sizeof(double), alignof(double), {sum_f64, prod_f64, max_f64, min_f64}},
    [K_LD]   = {sizeof(long double), alignof(long double), {sum_ld, prod_ld, max_ld, min_ld}},
    [K_BOOL] = {sizeof(bool), alignof(bool),
                {[O_LAND] = land_bool, [O_LOR] = lor_bool, [O_LXOR] = lxor_bool}},
    [K_BYTE] = {1, 1, {[O_BAND] = band_u8, [O_BOR] = bor_u8, [O_BXOR] = bxor_u8}},
    [K_FP16] = {2, alignof(uint16_t), {sum_fp16, prod_fp16, max_fp16, min_fp16}},
    [K_BF16] = {2, alignof(uint16_t), {sum_bf16, prod_bf16, max_bf16, min_bf16}},
};

/* ---- dispatch ----------------------------------------------------------------- */

/* MPICH 4.0.2 compares unsigned integers as signed in MPI_MAX/MPI_MIN (its
 * MPI_Reduce_local gives max(1, UINT_MAX) = 1). Results must equal MPICH's,
 * so each unsigned type is probed once: 1 = MPI compares as unsigned,
 * 2 = as signed (then the signed kernel of the same width is used). */
static unsigned char unsigned_minmax[NDT_KINDS];

static int minmax_as_signed(size_t idx, enum kind k)
{
    if (idx >= NDT_KINDS)
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
        if (k == K_U8) { uint8_t x = 1; memcpy(one, &x, 1); }
        else if (k == K_U16) { uint16_t x = 1; memcpy(one, &x, 2); }
        else if (k == K_U32) { uint32_t x = 1; memcpy(one, &x, 4); }
        else memcpy(one, &v1, 8);
        memset(ones, 0xff, sizeof(ones));
        if (MPI_Reduce_local(one, ones, 1, dt_kinds[idx].dt, MPI_MAX) != MPI_SUCCESS)
            return 0;
        unsigned_minmax[idx] = memcmp(ones, one, sz) == 0 ? 2 : 1;
        if (unsigned_minmax[idx] == 2)
            mxh_debug("MPI compares this unsigned type as signed in MPI_MAX/MPI_MIN; "
                      "kernels do the same");
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

/* The element kind of @dt (*idx: its dt_kinds entry) and the op index of @op
 * (-1: none), the half types' user ops resolved to their predefined op. */
static enum kind lookup(MPI_Datatype dt, MPI_Op op, size_t *idx, int *o)
{
    enum kind k = kind_of(dt, idx);

    *o = opk_of(op);
    if (*o < 0) {
        /* the user ops standing for SUM/PROD/MAX/MIN on the half types */
        mxh_half_kind_t hk;
        MPI_Op base;
        if (mxh_half_op_lookup(op, &hk, &base) &&
            (hk == MXH_HALF_FP16 ? K_FP16 : K_BF16) == k)
            *o = opk_of(base);
    }
    return k;
}

int mxh_reduce_has_kernel(MPI_Datatype dt, MPI_Op op)
{
    size_t idx;
    int o;
    enum kind k = lookup(dt, op, &idx, &o);
    /* unsigned MAX/MIN may run the signed kernel of the same width: both exist */
    return k != K_NONE && o >= 0 && kinds[k].fn[o] != NULL;
}

/* inout = in op inout, not charged to a simulated clock. */
static mxh_status_t reduce_exec(const void *in, void *inout, size_t count, MPI_Datatype dt,
                                MPI_Op op)
{
    enum kind k;
    size_t idx;
    int o;
    kern_t fn = NULL;

    k = lookup(dt, op, &idx, &o);
    if ((o == O_MAX || o == O_MIN) && k >= K_U8 && k <= K_U64 && minmax_as_signed(idx, k))
        k = (enum kind)(k - K_U8 + K_I8);
    if (k != K_NONE && o >= 0)
        fn = kinds[k].fn[o];
    if (fn == NULL && (k == K_FP16 || k == K_BF16) && opk_of(op) >= 0) {
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
