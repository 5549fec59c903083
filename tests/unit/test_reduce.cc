// CPU reduction kernels (src/reduce): mxh_reduce_local against MPICH's
// MPI_Reduce_local bit for bit on every predefined type/op pair MPI allows
// (random data with special values, odd counts, misaligned buffers); the
// fp16/bf16 conversions exhaustively and against a long double reference;
// half SUM/PROD/MAX/MIN against a correctly rounded reference; the user ops
// of mxh_reduce_mpi_op. MPI_Reduce_local is the reference, so main() calls
// MPI_Init (singleton, no mpiexec needed).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <mpi.h>

#include "mpix_hier.h"
#include "unit_util.hh"
extern "C" {
#include "reduce/half.h"
#include "reduce/reduce.h"
}

namespace {

// ---- the type/op matrix ----------------------------------------------------

enum Flavor { F_INT, F_F32, F_F64, F_LD, F_RAW, F_BOOL1, F_LOGICAL };
enum Class { C_CINT, C_FINT, C_FLOAT, C_COMPLEX, C_LOGICAL, C_BYTE };

struct TypeInfo {
    MPI_Datatype dt;
    const char *name;
    Class cls;
    Flavor flavor; // of each component
};

#define T(dt, cls, fl) {dt, #dt, cls, fl}
#define T_INT(dt) T(dt, C_CINT, F_INT)
#define T_FINT(dt) T(dt, C_FINT, F_INT)
#define T_REAL(dt, fl) T(dt, C_FLOAT, fl)
#define T_CPLX(dt, fl) T(dt, C_COMPLEX, fl)
const std::vector<TypeInfo> &types()
{
    static const std::vector<TypeInfo> all = {
        T_INT(MPI_INT), T_INT(MPI_LONG), T_INT(MPI_SHORT), T_INT(MPI_UNSIGNED_SHORT),
        T_INT(MPI_UNSIGNED), T_INT(MPI_UNSIGNED_LONG), T_INT(MPI_LONG_LONG_INT),
        T_INT(MPI_LONG_LONG), T_INT(MPI_UNSIGNED_LONG_LONG), T_INT(MPI_SIGNED_CHAR),
        T_INT(MPI_UNSIGNED_CHAR), T_INT(MPI_INT8_T), T_INT(MPI_INT16_T), T_INT(MPI_INT32_T),
        T_INT(MPI_INT64_T), T_INT(MPI_UINT8_T), T_INT(MPI_UINT16_T), T_INT(MPI_UINT32_T),
        T_INT(MPI_UINT64_T), T_FINT(MPI_INTEGER), T_FINT(MPI_AINT), T_FINT(MPI_OFFSET),
        T_FINT(MPI_COUNT), T_FINT(MPI_INTEGER1), T_FINT(MPI_INTEGER2), T_FINT(MPI_INTEGER4),
        T_FINT(MPI_INTEGER8), T_REAL(MPI_FLOAT, F_F32), T_REAL(MPI_DOUBLE, F_F64),
        T_REAL(MPI_LONG_DOUBLE, F_LD), T_REAL(MPI_REAL, F_F32), T_REAL(MPI_DOUBLE_PRECISION, F_F64),
        T_REAL(MPI_REAL4, F_F32), T_REAL(MPI_REAL8, F_F64), T_REAL(MPI_REAL16, F_RAW),
        T_CPLX(MPI_COMPLEX, F_F32), T_CPLX(MPI_DOUBLE_COMPLEX, F_F64), T_CPLX(MPI_C_COMPLEX, F_F32),
        T_CPLX(MPI_C_FLOAT_COMPLEX, F_F32), T_CPLX(MPI_C_DOUBLE_COMPLEX, F_F64),
        T_CPLX(MPI_C_LONG_DOUBLE_COMPLEX, F_LD), T_CPLX(MPI_CXX_FLOAT_COMPLEX, F_F32),
        T_CPLX(MPI_CXX_DOUBLE_COMPLEX, F_F64), T_CPLX(MPI_CXX_LONG_DOUBLE_COMPLEX, F_LD),
        T_CPLX(MPI_COMPLEX8, F_F32), T_CPLX(MPI_COMPLEX16, F_F64),
        T(MPI_LOGICAL, C_LOGICAL, F_LOGICAL), T(MPI_C_BOOL, C_LOGICAL, F_BOOL1),
        T(MPI_CXX_BOOL, C_LOGICAL, F_BOOL1), T(MPI_BYTE, C_BYTE, F_INT),
    };
    return all;
}
#undef T_CPLX
#undef T_REAL
#undef T_FINT
#undef T_INT
#undef T

struct OpInfo {
    MPI_Op op;
    const char *name;
};
const std::vector<OpInfo> &ops()
{
    static const std::vector<OpInfo> all = {
        {MPI_SUM, "MPI_SUM"},   {MPI_PROD, "MPI_PROD"}, {MPI_MAX, "MPI_MAX"},
        {MPI_MIN, "MPI_MIN"},   {MPI_LAND, "MPI_LAND"}, {MPI_LOR, "MPI_LOR"},
        {MPI_LXOR, "MPI_LXOR"}, {MPI_BAND, "MPI_BAND"}, {MPI_BOR, "MPI_BOR"},
        {MPI_BXOR, "MPI_BXOR"}};
    return all;
}

// MPI's table of predefined reductions (MPI 4.0, 6.9.2)
bool allowed(Class c, MPI_Op op)
{
    if (op == MPI_MAX || op == MPI_MIN)
        return c == C_CINT || c == C_FINT || c == C_FLOAT;
    if (op == MPI_SUM || op == MPI_PROD)
        return c == C_CINT || c == C_FINT || c == C_FLOAT || c == C_COMPLEX;
    if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR)
        return c == C_CINT || c == C_LOGICAL;
    return c == C_CINT || c == C_FINT || c == C_BYTE;
}

// ---- data ---------------------------------------------------------------------

void fill(std::mt19937_64 &rng, const TypeInfo &t, size_t bytes, unsigned char *p)
{
    std::uniform_int_distribution<int> pct(0, 99);
    switch (t.flavor) {
    case F_INT:
    case F_RAW:
        for (size_t i = 0; i < bytes; i++)
            p[i] = (unsigned char)rng();
        break;
    case F_BOOL1:
        for (size_t i = 0; i < bytes; i++)
            p[i] = (unsigned char)(rng() & 1);
        break;
    case F_LOGICAL: { // Fortran LOGICAL: .FALSE. = 0, .TRUE. = 1 (gfortran)
        int sz = 0;
        MPI_Type_size(t.dt, &sz);
        memset(p, 0, bytes);
        for (size_t i = 0; i + (size_t)sz <= bytes; i += (size_t)sz)
            p[i] = (unsigned char)(rng() & 1);
        break;
    }
    case F_F32: {
        static const uint32_t sp[] = {0, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                      0xffc00000u, 0x7fc12345u, 0x7f812345u, 1, 0x80000001u,
                                      0x7f7fffffu, 0x3f800000u, 0xbf800000u, 0x00800000u};
        for (size_t i = 0; i + 4 <= bytes; i += 4) {
            uint32_t v = (uint32_t)rng();
            if (pct(rng) < 15)
                v = sp[rng() % (sizeof(sp) / sizeof(sp[0]))];
            else if (pct(rng) < 50) // ordinary magnitudes, so sums and products are not all Inf/0
                v = (v & 0x807fffffu) | ((uint32_t)(110 + rng() % 36) << 23);
            memcpy(p + i, &v, 4);
        }
        break;
    }
    case F_F64: {
        static const uint64_t sp[] = {0, 0x8000000000000000ull, 0x7ff0000000000000ull,
                                      0xfff0000000000000ull, 0x7ff8000000000000ull,
                                      0xfff8000000000000ull, 0x7ff8000000012345ull, 1,
                                      0x7fefffffffffffffull, 0x3ff0000000000000ull};
        for (size_t i = 0; i + 8 <= bytes; i += 8) {
            uint64_t v = rng();
            if (pct(rng) < 15)
                v = sp[rng() % (sizeof(sp) / sizeof(sp[0]))];
            else if (pct(rng) < 50)
                v = (v & 0x800fffffffffffffull) | ((uint64_t)(1000 + rng() % 48) << 52);
            memcpy(p + i, &v, 8);
        }
        break;
    }
    case F_LD: {
        const size_t ls = sizeof(long double);
        std::uniform_real_distribution<double> u(-4.0, 4.0);
        for (size_t i = 0; i + ls <= bytes; i += ls) {
            long double v;
            int k = pct(rng);
            if (k < 4) v = 0.0L;
            else if (k < 6) v = -0.0L;
            else if (k < 8) v = INFINITY;
            else if (k < 10) v = -INFINITY;
            else if (k < 12) v = NAN;
            else v = (long double)u(rng) * powl(2.0L, (long double)(int)(rng() % 64) - 32) +
                     (long double)u(rng) * 1e-12L;
            memset(p + i, 0x5a, ls); // padding: defined, not compared
            memcpy(p + i, &v, 10);
        }
        break;
    }
    }
}

// Compares two buffers of @count elements of @t; long double components are
// compared on their 10 value bytes (the padding is not part of the value).
// Returns the index of the first differing element, or -1.
long first_diff(const TypeInfo &t, const unsigned char *a, const unsigned char *b, size_t count)
{
    int sz = 0;
    MPI_Type_size(t.dt, &sz);
    const size_t es = (size_t)sz;
    for (size_t i = 0; i < count; i++) {
        const unsigned char *x = a + i * es, *y = b + i * es;
        if (t.flavor == F_LD) {
            for (size_t c = 0; c < es; c += sizeof(long double))
                if (memcmp(x + c, y + c, 10) != 0)
                    return (long)i;
        } else if (memcmp(x, y, es) != 0) {
            return (long)i;
        }
    }
    return -1;
}

std::string hex(const unsigned char *p, size_t n)
{
    std::string s;
    char b[4];
    for (size_t i = n; i-- > 0;) {
        snprintf(b, sizeof(b), "%02x", p[i]);
        s += b;
    }
    return s;
}

// A buffer at a chosen misalignment from a 64-byte boundary.
struct Buf {
    std::vector<unsigned char> mem;
    unsigned char *p;
    Buf(size_t bytes, size_t off) : mem(bytes + 128)
    {
        uintptr_t a = ((uintptr_t)mem.data() + 63) & ~(uintptr_t)63;
        p = (unsigned char *)a + off;
    }
};

// ---- reduce_local vs MPI_Reduce_local ---------------------------------------------

TEST(ReduceLocal, EveryPredefinedPairBitwiseVsMpich)
{
    static const size_t counts[] = {1, 2, 3, 7, 15, 17, 33, 127, 1001, 4099};
    static const size_t offs[][2] = {{0, 0}, {1, 0}, {0, 3}, {8, 8}, {4, 12}, {5, 7}};
    std::mt19937_64 rng(12345);
    int pairs = 0, failures = 0;

    for (const TypeInfo &t : types()) {
        if (t.dt == MPI_DATATYPE_NULL)
            continue;
        int sz = 0;
        MPI_Type_size(t.dt, &sz);
        ASSERT_GT(sz, 0) << t.name;
        for (const OpInfo &o : ops()) {
            if (!allowed(t.cls, o.op))
                continue;
            pairs++;
            for (size_t count : counts) {
                for (auto &off : offs) {
                    const size_t bytes = count * (size_t)sz;
                    Buf in(bytes, off[0]), ref(bytes, off[1]), got(bytes, off[1]);
                    fill(rng, t, bytes, in.p);
                    fill(rng, t, bytes, ref.p);
                    memcpy(got.p, ref.p, bytes);
                    ASSERT_EQ(MPI_SUCCESS, MPI_Reduce_local(in.p, ref.p, (int)count, t.dt, o.op))
                        << t.name << " " << o.name;
                    ASSERT_EQ(MXH_OK, mxh_reduce_local(in.p, got.p, count, t.dt, o.op))
                        << t.name << " " << o.name;
                    long d = first_diff(t, ref.p, got.p, count);
                    if (d >= 0 && failures++ < 20) {
                        size_t e = (size_t)d * (size_t)sz;
                        ADD_FAILURE() << t.name << " " << o.name << " count " << count
                                      << " offsets " << off[0] << "," << off[1] << ": element "
                                      << d << " in " << hex(in.p + e, (size_t)sz)
                                      << " mpich " << hex(ref.p + e, (size_t)sz) << " mxh "
                                      << hex(got.p + e, (size_t)sz);
                    }
                }
            }
        }
    }
    EXPECT_EQ(0, failures);
    EXPECT_GE(pairs, 150); // the matrix was really covered
}

TEST(ReduceLocal, LargeCountsBitwiseVsMpich)
{
    std::mt19937_64 rng(7);
    const TypeInfo tf = {MPI_FLOAT, "MPI_FLOAT", C_FLOAT, F_F32};
    const TypeInfo td = {MPI_DOUBLE, "MPI_DOUBLE", C_FLOAT, F_F64};
    for (const TypeInfo &t : {tf, td}) {
        for (MPI_Op op : {MPI_SUM, MPI_MAX}) {
            const size_t count = 1000003;
            int sz;
            MPI_Type_size(t.dt, &sz);
            Buf in(count * sz, 0), ref(count * sz, 0), got(count * sz, 0);
            fill(rng, t, count * sz, in.p);
            fill(rng, t, count * sz, ref.p);
            memcpy(got.p, ref.p, count * sz);
            ASSERT_EQ(MPI_SUCCESS, MPI_Reduce_local(in.p, ref.p, (int)count, t.dt, op));
            ASSERT_EQ(MXH_OK, mxh_reduce_local(in.p, got.p, count, t.dt, op));
            EXPECT_EQ(-1, first_diff(t, ref.p, got.p, count)) << t.name;
        }
    }
}

TEST(ReduceLocal, ZeroCountAndSameBuffer)
{
    float a[5] = {1, 2, 3, 4, 5};
    EXPECT_EQ(MXH_OK, mxh_reduce_local(nullptr, nullptr, 0, MPI_FLOAT, MPI_SUM));
    EXPECT_EQ(MXH_OK, mxh_reduce_local(a, a, 5, MPI_FLOAT, MPI_SUM));
    for (int i = 0; i < 5; i++)
        EXPECT_EQ(2.0f * (float)(i + 1), a[i]);
    mxh_test::QuietStderr quiet;
    EXPECT_EQ(MXH_ERR_INVALID_PARAM, mxh_reduce_local(nullptr, a, 5, MPI_FLOAT, MPI_SUM));
}

// first_diff, except that two NaNs count as equal: which NaN payload survives
// an operation on two NaNs depends on the operand order the compiler picked,
// which differs between a kernel's vector body and its scalar tail.
long first_diff_nan_eq(const TypeInfo &t, const unsigned char *a, const unsigned char *b,
                       size_t count)
{
    size_t cs = t.flavor == F_F32 ? 4 : t.flavor == F_F64 ? 8
              : t.flavor == F_LD  ? sizeof(long double) : 0;
    if (cs == 0)
        return first_diff(t, a, b, count);
    int sz = 0;
    MPI_Type_size(t.dt, &sz);
    for (size_t i = 0; i < count; i++)
        for (size_t c = 0; c < (size_t)sz; c += cs) {
            const unsigned char *x = a + i * (size_t)sz + c, *y = b + i * (size_t)sz + c;
            if (memcmp(x, y, t.flavor == F_LD ? 10 : cs) == 0)
                continue;
            bool nx, ny;
            if (cs == 4) {
                float u, v;
                memcpy(&u, x, 4), memcpy(&v, y, 4);
                nx = std::isnan(u), ny = std::isnan(v);
            } else if (cs == 8) {
                double u, v;
                memcpy(&u, x, 8), memcpy(&v, y, 8);
                nx = std::isnan(u), ny = std::isnan(v);
            } else {
                long double u = 0, v = 0;
                memcpy(&u, x, 10), memcpy(&v, y, 10);
                nx = std::isnan(u), ny = std::isnan(v);
            }
            if (!(nx && ny))
                return (long)i;
        }
    return -1;
}

// The fused n-input form: out = in[n-1] op (... op in[0]) must equal the chain of
// MPI_Reduce_local calls bit for bit (up to NaN payloads), across the block size (16 KiB of output),
// in place on in[0] and out of place, for every type class.
TEST(ReduceMulti, MatchesTheChainOfReduceLocal)
{
    static const size_t counts[] = {1, 5, 4095, 4097, 20011};
    std::mt19937_64 rng(99);
    int checked = 0;
    for (const TypeInfo &t : types()) {
        if (t.dt == MPI_DATATYPE_NULL)
            continue;
        int sz = 0;
        MPI_Type_size(t.dt, &sz);
        for (MPI_Op op : {MPI_SUM, MPI_MAX, MPI_BAND, MPI_LXOR}) {
            if (!allowed(t.cls, op))
                continue;
            for (size_t count : counts)
                for (int nin : {1, 2, 3, 8}) {
                    const size_t bytes = count * (size_t)sz;
                    std::vector<Buf> in;
                    in.reserve((size_t)nin);
                    for (int j = 0; j < nin; j++) {
                        in.emplace_back(bytes, (size_t)(j % 3) * 4);
                        fill(rng, t, bytes, in.back().p);
                    }
                    Buf ref(bytes, 0), got(bytes, 8);
                    memcpy(ref.p, in[0].p, bytes);
                    for (int j = 1; j < nin; j++)
                        ASSERT_EQ(MPI_SUCCESS,
                                  MPI_Reduce_local(in[j].p, ref.p, (int)count, t.dt, op));
                    std::vector<const void *> ptrs;
                    for (auto &b : in)
                        ptrs.push_back(b.p);
                    ASSERT_EQ(MXH_OK, mxh_reduce_multi(ptrs.data(), nin, got.p, count, t.dt, op));
                    EXPECT_EQ(-1, first_diff_nan_eq(t, ref.p, got.p, count))
                        << t.name << " count " << count << " inputs " << nin << " out of place";
                    // in place on the first input
                    ASSERT_EQ(MXH_OK,
                              mxh_reduce_multi(ptrs.data(), nin, in[0].p, count, t.dt, op));
                    EXPECT_EQ(-1, first_diff_nan_eq(t, ref.p, in[0].p, count))
                        << t.name << " count " << count << " inputs " << nin << " in place";
                    checked++;
                }
        }
    }
    EXPECT_GE(checked, 400);
    mxh_test::QuietStderr quiet;
    const void *none[1] = {nullptr};
    float out[1];
    EXPECT_EQ(MXH_ERR_INVALID_PARAM, mxh_reduce_multi(none, 1, out, 1, MPI_FLOAT, MPI_SUM));
    EXPECT_EQ(MXH_ERR_INVALID_PARAM, mxh_reduce_multi(none, 0, out, 1, MPI_FLOAT, MPI_SUM));
    EXPECT_EQ(MXH_OK, mxh_reduce_multi(none, 0, out, 0, MPI_FLOAT, MPI_SUM));
}

void int_max_user(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const int n = *dt == MPI_INT ? *len : 2 * *len; // MPI_INT or a pair of them
    for (int i = 0; i < n; i++)
        ((int *)inout)[i] = 3 * ((int *)inout)[i] + ((int *)in)[i];
}

TEST(ReduceLocal, UserOpsAndDerivedTypesGoToMpi)
{
    MPI_Op op;
    ASSERT_EQ(MPI_SUCCESS, MPI_Op_create(int_max_user, 0, &op));
    int in[7], io[7];
    for (int i = 0; i < 7; i++) {
        in[i] = i;
        io[i] = 10 * i;
    }
    EXPECT_EQ(MXH_OK, mxh_reduce_local(in, io, 7, MPI_INT, op));
    for (int i = 0; i < 7; i++)
        EXPECT_EQ(31 * i, io[i]);
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    EXPECT_EQ(MXH_OK, mxh_reduce_local(in, io, 3, pair, op)); // 6 ints
    for (int i = 0; i < 6; i++)
        EXPECT_EQ(93 * i + i, io[i]);
    EXPECT_EQ(31 * 6, io[6]);
    MPI_Type_free(&pair);
    MPI_Op_free(&op);
}

// ---- half precision: reference arithmetic in long double --------------------------

struct HalfFmt {
    const char *name;
    int mant_bits;   // stored mantissa bits (10, 7)
    int exp_bits;    // 5, 8
    uint16_t max_finite, inf;
    float (*to_float)(uint16_t);
    uint16_t (*from_float)(float);
    mxh_half_kind_t kind;
};
const HalfFmt FP16 = {"fp16", 10, 5, 0x7bff, 0x7c00, mxh_fp16_to_float, mxh_float_to_fp16,
                      MXH_HALF_FP16};
const HalfFmt BF16 = {"bf16", 7, 8, 0x7f7f, 0x7f80, mxh_bf16_to_float, mxh_float_to_bf16,
                      MXH_HALF_BF16};

bool ref_isnan(const HalfFmt &f, uint16_t h) { return (h & 0x7fff) > f.inf; }

long double ref_val(const HalfFmt &f, uint16_t h)
{
    const int bias = (1 << (f.exp_bits - 1)) - 1;
    const int e = (h >> f.mant_bits) & ((1 << f.exp_bits) - 1);
    const int m = h & ((1 << f.mant_bits) - 1);
    long double v;
    if (e == (1 << f.exp_bits) - 1)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexpl((long double)m, 1 - bias - f.mant_bits);
    else
        v = ldexpl((long double)(m + (1 << f.mant_bits)), e - bias - f.mant_bits);
    return (h & 0x8000) ? -v : v;
}

// Correctly rounded (nearest, ties to even) encoding of @v; NaN -> 0xffff marker.
uint16_t ref_round(const HalfFmt &f, long double v)
{
    if (std::isnan(v))
        return 0xffff;
    const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
    const long double av = fabsl(v);
    const long double vmax = ref_val(f, f.max_finite);
    const long double vinf = vmax + (vmax - ref_val(f, f.max_finite - 1)); // next step
    uint16_t lo, hi;
    long double lv, hv;
    if (av >= vmax) {
        lo = f.max_finite;
        hi = f.inf;
        lv = vmax;
        hv = vinf;
        if (std::isinf(av))
            return sign | f.inf;
    } else {
        uint32_t a = 0, b = f.max_finite; // largest enc with val <= av
        while (a < b) {
            uint32_t mid = (a + b + 1) / 2;
            if (ref_val(f, (uint16_t)mid) <= av) a = mid; else b = mid - 1;
        }
        lo = (uint16_t)a;
        hi = (uint16_t)(a + 1);
        lv = ref_val(f, lo);
        hv = ref_val(f, hi);
    }
    if (av == lv)
        return sign | lo;
    const long double d1 = av - lv, d2 = hv - av;
    uint16_t r = d1 < d2 ? lo : d2 < d1 ? hi : ((lo & 1) ? hi : lo);
    return sign | r;
}

void check_conversion_exhaustive(const HalfFmt &f)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float x = f.to_float((uint16_t)h);
        long double r = ref_val(f, (uint16_t)h);
        uint32_t xb = mxh_f32_bits(x);
        if (ref_isnan(f, (uint16_t)h)) {
            // payload kept, shifted into place; the sign too
            uint32_t want = ((h & 0x8000u) << 16) | 0x7f800000u |
                            ((h & ((1u << f.mant_bits) - 1)) << (23 - f.mant_bits));
            if (xb != want && bad++ < 10)
                ADD_FAILURE() << f.name << " " << std::hex << h << " -> " << xb;
        } else if (((long double)x != r || std::signbit(x) != std::signbit(r)) && bad++ < 10) {
            ADD_FAILURE() << f.name << " " << std::hex << h << " -> " << xb;
        }
        // round trip: the same encoding; NaNs come back quiet
        uint16_t back = f.from_float(x);
        uint16_t want = ref_isnan(f, (uint16_t)h) ? (uint16_t)(h | (1u << (f.mant_bits - 1)))
                                                  : (uint16_t)h;
        if (back != want && bad++ < 10)
            ADD_FAILURE() << f.name << " round trip " << std::hex << h << " -> " << back;
    }
    EXPECT_EQ(0, bad);
}

TEST(Half, Fp16AllPatternsConvertAndRoundTrip) { check_conversion_exhaustive(FP16); }
TEST(Half, Bf16AllPatternsConvertAndRoundTrip) { check_conversion_exhaustive(BF16); }

void check_rounding(const HalfFmt &f, uint32_t x, int &bad)
{
    float v = mxh_f32_from_bits(x);
    uint16_t got = f.from_float(v);
    uint16_t want;
    if (std::isnan(v)) {
        // quiet NaN, sign and top payload bits kept
        const int drop = 23 - f.mant_bits;
        want = (uint16_t)(((x >> 16) & 0x8000u) | f.inf | (1u << (f.mant_bits - 1)) |
                          ((x & 0x7fffffu) >> drop));
    } else {
        want = ref_round(f, (long double)v);
    }
    if (got != want && bad++ < 10)
        ADD_FAILURE() << f.name << " float " << std::hexfloat << v << " (0x" << std::hex << x
                      << "): got 0x" << got << " want 0x" << want;
}

void sweep_rounding(const HalfFmt &f)
{
    // every exponent/kept-mantissa combination with the dropped bits at the
    // interesting places: exact, just above, just below / at / above the tie
    const int drop = 23 - f.mant_bits;
    const uint32_t half = 1u << (drop - 1), full = (1u << drop) - 1;
    const uint32_t lows[] = {0, 1, half - 1, half, half + 1, full};
    int bad = 0;
    for (uint32_t hi = 0; hi < (1u << (32 - drop)); hi += 1)
        for (uint32_t low : lows)
            check_rounding(f, (hi << drop) | low, bad);
    std::mt19937 rng(99);
    for (int i = 0; i < 2000000; i++)
        check_rounding(f, (uint32_t)rng(), bad);
    // named cases: overflow to Inf, largest finite, subnormal boundaries
    for (float v : {65504.0f, 65519.99f, 65520.0f, 1e6f, -1e6f, 5.9604645e-8f, 2.9802322e-8f,
                    2.9802326e-8f, 6.1035156e-5f, 6.1032e-5f, 3.4e38f, 3.3961776e38f,
                    1e-40f, -0.0f, 0.0f, INFINITY, -INFINITY})
        check_rounding(f, mxh_f32_bits(v), bad);
    EXPECT_EQ(0, bad);
}

TEST(Half, Fp16RoundingVsLongDoubleReference) { sweep_rounding(FP16); }
TEST(Half, Bf16RoundingVsLongDoubleReference) { sweep_rounding(BF16); }

TEST(Half, NamedConversions)
{
    EXPECT_EQ(0x3c00, mxh_float_to_fp16(1.0f));
    EXPECT_EQ(0x7bff, mxh_float_to_fp16(65504.0f));
    EXPECT_EQ(0x7c00, mxh_float_to_fp16(65520.0f));       // tie at the top: to Inf
    EXPECT_EQ(0x7bff, mxh_float_to_fp16(65519.0f));
    EXPECT_EQ(0x0001, mxh_float_to_fp16(5.9604645e-8f));  // smallest subnormal
    EXPECT_EQ(0x0000, mxh_float_to_fp16(2.9802322e-8f));  // half of it: tie to even (0)
    EXPECT_EQ(0x8000, mxh_float_to_fp16(-1e-10f));
    EXPECT_EQ(0x3c00, mxh_float_to_fp16(1.00048828125f)); // 1 + 2^-11: tie to even (down)
    EXPECT_EQ(0x3c02, mxh_float_to_fp16(1.00146484375f)); // 1 + 3*2^-11: tie to even (up)
    EXPECT_EQ(0x3f80, mxh_float_to_bf16(1.0f));
    EXPECT_EQ(0x3f80, mxh_float_to_bf16(1.00390625f));    // 1 + 2^-8: tie, down to even
    EXPECT_EQ(0x3f82, mxh_float_to_bf16(1.01171875f));    // 1 + 3*2^-8: tie, up to even
    EXPECT_EQ(0x7f80, mxh_float_to_bf16(3.4028235e38f));  // FLT_MAX rounds to Inf
    EXPECT_EQ(0x7fc0, mxh_float_to_bf16(NAN) & 0x7fc0);
    EXPECT_TRUE(std::isnan(mxh_fp16_to_float(0x7e00)));
    EXPECT_EQ(INFINITY, mxh_fp16_to_float(0x7c00));
    EXPECT_EQ(-2.0f, mxh_bf16_to_float(0xc000));
}

// ---- half reductions ------------------------------------------------------------------

uint16_t ref_op(const HalfFmt &f, MPI_Op op, uint16_t io, uint16_t in)
{
    long double a = ref_val(f, io), b = ref_val(f, in);
    if (op == MPI_MAX)
        return a > b ? io : in; // MPICH's operand order for MPI_FLOAT
    if (op == MPI_MIN)
        return a < b ? io : in;
    return ref_round(f, op == MPI_SUM ? a + b : a * b);
}

void check_half_ops(const HalfFmt &f)
{
    MPI_Datatype dt = f.kind == MXH_HALF_FP16 ? MPIX_HIER_FLOAT16 : MPIX_HIER_BFLOAT16;
    ASSERT_NE(MPI_DATATYPE_NULL, dt);
    std::mt19937 rng(f.kind);
    // pairs: random encodings, plus every pair of a set of special values
    std::vector<uint16_t> sp = {0x0000, 0x8000, f.inf, (uint16_t)(f.inf | 0x8000),
                                (uint16_t)(f.inf | 1), (uint16_t)(f.inf | 0x8000 | 0x10),
                                0x0001, 0x8001, f.max_finite, (uint16_t)(f.max_finite | 0x8000),
                                (uint16_t)(f.max_finite - 1)};
    for (int i = 0; i < 24; i++)
        sp.push_back((uint16_t)rng());
    std::vector<uint16_t> a, b;
    for (uint16_t x : sp)
        for (uint16_t y : sp) {
            a.push_back(x);
            b.push_back(y);
        }
    for (int i = 0; i < 400000; i++) {
        uint16_t x = (uint16_t)rng(), y = (uint16_t)rng();
        if (i % 3 == 0) // close magnitudes: cancellation, ties
            y = (uint16_t)((x & 0x7fff) + (int)(rng() % 64) - 32) | (uint16_t)(rng() & 0x8000);
        a.push_back(x);
        b.push_back(y);
    }
    const size_t n = a.size() | 1; // odd
    a.resize(n, 0x3c00);
    b.resize(n, 0x3c00);
    for (MPI_Op op : {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN}) {
        for (size_t off : {0, 1}) { // 1: misaligned for uint16_t
            Buf in(2 * n, off), io(2 * n, off);
            memcpy(in.p, b.data(), 2 * n);
            memcpy(io.p, a.data(), 2 * n);
            ASSERT_EQ(MXH_OK, mxh_reduce_local(in.p, io.p, n, dt, op));
            int bad = 0;
            for (size_t i = 0; i < n; i++) {
                uint16_t got;
                memcpy(&got, io.p + 2 * i, 2);
                uint16_t want = ref_op(f, op, a[i], b[i]);
                bool ok = want == 0xffff ? ref_isnan(f, got) : got == want;
                if (!ok && bad++ < 10)
                    ADD_FAILURE() << f.name << " op " << (op == MPI_SUM ? "sum" : op == MPI_PROD ? "prod" : op == MPI_MAX ? "max" : "min")
                                  << std::hex << ": 0x" << a[i] << " op 0x" << b[i] << " = 0x"
                                  << got << ", want 0x" << want;
            }
            EXPECT_EQ(0, bad);
        }
    }
}

TEST(Half, Fp16OpsVsCorrectlyRoundedReference) { check_half_ops(FP16); }
TEST(Half, Bf16OpsVsCorrectlyRoundedReference) { check_half_ops(BF16); }

TEST(Half, DatatypeHandles)
{
    MPI_Datatype h = MPIX_HIER_FLOAT16, b = MPIX_HIER_BFLOAT16;
    ASSERT_NE(MPI_DATATYPE_NULL, h);
    ASSERT_NE(MPI_DATATYPE_NULL, b);
    EXPECT_NE(h, b);
    EXPECT_EQ(h, MPIX_HIER_FLOAT16); // same handle every time
    EXPECT_EQ(MXH_HALF_FP16, mxh_half_kind(h));
    EXPECT_EQ(MXH_HALF_BF16, mxh_half_kind(b));
    EXPECT_EQ(MXH_HALF_NONE, mxh_half_kind(MPI_UINT16_T));
    for (MPI_Datatype t : {h, b}) {
        int sz = 0;
        MPI_Aint lb = -1, ext = 0;
        MPI_Type_size(t, &sz);
        MPI_Type_get_extent(t, &lb, &ext);
        EXPECT_EQ(2, sz);
        EXPECT_EQ(0, lb);
        EXPECT_EQ(2, ext);
    }
    char name[MPI_MAX_OBJECT_NAME];
    int len = 0;
    MPI_Type_get_name(h, name, &len);
    EXPECT_STREQ("MPIX_HIER_FLOAT16", name);
    MPI_Type_get_name(b, name, &len);
    EXPECT_STREQ("MPIX_HIER_BFLOAT16", name);
}

TEST(Half, MpiOpsMatchTheKernels)
{
    std::mt19937 rng(5);
    for (MPI_Datatype dt : {MPIX_HIER_FLOAT16, MPIX_HIER_BFLOAT16}) {
        for (MPI_Op op : {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN}) {
            MPI_Op uop = mxh_reduce_mpi_op(dt, op);
            ASSERT_NE(op, uop);
            ASSERT_NE(MPI_OP_NULL, uop);
            int commute = 0;
            MPI_Op_commutative(uop, &commute);
            EXPECT_EQ(1, commute);
            EXPECT_EQ(uop, mxh_reduce_mpi_op(dt, op)); // created once
            const int n = 1001;
            std::vector<uint16_t> in(n), a(n), b(n), c(n);
            for (int i = 0; i < n; i++) {
                in[i] = (uint16_t)rng();
                a[i] = b[i] = c[i] = (uint16_t)rng();
            }
            ASSERT_EQ(MXH_OK, mxh_reduce_local(in.data(), a.data(), n, dt, op));
            ASSERT_EQ(MPI_SUCCESS, MPI_Reduce_local(in.data(), b.data(), n, dt, uop));
            ASSERT_EQ(MXH_OK, mxh_reduce_local(in.data(), c.data(), n, dt, uop)); // mapped op
            EXPECT_EQ(0, memcmp(a.data(), b.data(), 2 * n));
            EXPECT_EQ(0, memcmp(a.data(), c.data(), 2 * n));
        }
        // other ops and other types are handed through
        EXPECT_EQ(MPI_LAND, mxh_reduce_mpi_op(dt, MPI_LAND));
        mxh_test::QuietStderr quiet;
        uint16_t x = 1, y = 1;
        EXPECT_EQ(MXH_ERR_INVALID_PARAM, mxh_reduce_local(&x, &y, 1, dt, MPI_LAND));
    }
    EXPECT_EQ(MPI_SUM, mxh_reduce_mpi_op(MPI_FLOAT, MPI_SUM));
    EXPECT_EQ(MPI_MAX, mxh_reduce_mpi_op(MPI_UINT16_T, MPI_MAX));
}

} // namespace

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    ::testing::InitGoogleTest(&argc, argv);
    int rc = RUN_ALL_TESTS();
    MPI_Finalize();
    return rc;
}
