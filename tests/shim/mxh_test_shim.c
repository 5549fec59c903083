/* C helpers for the MPI GoogleTest suites: see mxh_test_shim.h. */
#define _GNU_SOURCE
#include "mxh_test_shim.h"

#include <complex.h>
#include <dlfcn.h>
#include <errno.h>
#include <float.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ===================================================================== types */

/* Pair layouts, as MPI defines them (MPI-4 6.9.4). */
struct mxh_float_int  { float v; int i; };
struct mxh_double_int { double v; int i; };
struct mxh_long_int   { long v; int i; };
struct mxh_short_int  { short v; int i; };
struct mxh_2int       { int v; int i; };
struct mxh_ldouble_int { long double v; int i; };
struct mxh_2float     { float v; float i; };
struct mxh_2double    { double v; double i; };

/* Significant bytes of a long double (x87 80-bit: 10 of 16). */
#if LDBL_MANT_DIG == 64
#define MXH_LDBL_SIG 10
#else
#define MXH_LDBL_SIG ((int)sizeof(long double))
#endif

#define MXH_MAX_TYPES 80
static mxh_type_t mxh_types[MXH_MAX_TYPES];
static int mxh_ntypes;

static const MPI_Op *mxh_ops_tab(void)
{
    static MPI_Op ops[12];
    ops[0] = MPI_MAX;  ops[1] = MPI_MIN;  ops[2] = MPI_SUM;  ops[3] = MPI_PROD;
    ops[4] = MPI_LAND; ops[5] = MPI_LOR;  ops[6] = MPI_LXOR; ops[7] = MPI_BAND;
    ops[8] = MPI_BOR;  ops[9] = MPI_BXOR; ops[10] = MPI_MINLOC; ops[11] = MPI_MAXLOC;
    return ops;
}
static const char *const mxh_op_names[12] = {
    "MPI_MAX", "MPI_MIN", "MPI_SUM", "MPI_PROD", "MPI_LAND", "MPI_LOR",
    "MPI_LXOR", "MPI_BAND", "MPI_BOR", "MPI_BXOR", "MPI_MINLOC", "MPI_MAXLOC"};

int mxh_num_ops(void) { return 12; }
MPI_Op mxh_op_at(int i) { return mxh_ops_tab()[i]; }

static int mxh_op_index(MPI_Op op)
{
    for (int i = 0; i < 12; i++)
        if (mxh_ops_tab()[i] == op)
            return i;
    return -1;
}

const char *mxh_op_name(MPI_Op op)
{
    int i = mxh_op_index(op);
    if (i >= 0)
        return mxh_op_names[i];
    if (op == MPI_OP_NULL)
        return "MPI_OP_NULL";
    if (op == MPI_REPLACE)
        return "MPI_REPLACE";
    if (op == MPI_NO_OP)
        return "MPI_NO_OP";
    return "user-op";
}

static void add_type(MPI_Datatype t, const char *name, int group, mxh_kind_t kind, mxh_fp_t fp,
                     mxh_fp_t idx_fp, int idx_off, int idx_len)
{
    if (t == MPI_DATATYPE_NULL || mxh_ntypes >= MXH_MAX_TYPES)
        return;
    mxh_type_t *e = &mxh_types[mxh_ntypes++];
    MPI_Aint lb, extent;
    MPI_Type_get_extent(t, &lb, &extent);
    memset(e, 0, sizeof(*e));
    e->type = t;
    e->name = name;
    e->group = group;
    e->kind = kind;
    e->fp = fp;
    e->idx_fp = idx_fp;
    e->extent = (int)extent;
    e->nseg = e->nmseg = 1;
    e->seg[0].off = e->mseg[0].off = 0;
    e->seg[0].len = e->mseg[0].len = (int)extent;
    if (kind == MXH_KIND_FLOAT && fp == MXH_FP_LDOUBLE) {
        e->seg[0].len = MXH_LDBL_SIG;
    } else if (kind == MXH_KIND_COMPLEX && fp == MXH_FP_LDOUBLE) {
        e->nseg = 2;
        e->seg[0].len = MXH_LDBL_SIG;
        e->seg[1].off = (int)sizeof(long double);
        e->seg[1].len = MXH_LDBL_SIG;
    } else if (kind == MXH_KIND_PAIR) {
        int vlen = 0;
        switch (fp) {
        case MXH_FP_FLOAT: vlen = 4; break;
        case MXH_FP_DOUBLE: vlen = 8; break;
        case MXH_FP_LDOUBLE: vlen = (int)sizeof(long double); break;
        case MXH_FP_INT: vlen = (int)sizeof(int); break;
        case MXH_FP_LONG: vlen = (int)sizeof(long); break;
        case MXH_FP_SHORT: vlen = (int)sizeof(short); break;
        default: break;
        }
        e->nseg = e->nmseg = 2;
        e->seg[0].len = e->mseg[0].len = vlen;
        if (fp == MXH_FP_LDOUBLE)
            e->seg[0].len = MXH_LDBL_SIG;
        e->seg[1].off = e->mseg[1].off = idx_off;
        e->seg[1].len = e->mseg[1].len = idx_len;
    }
}

static int mxh_mpich_ok_tab[MXH_MAX_TYPES][12];

void mxh_types_init(void)
{
    if (mxh_ntypes)
        return;
    /* each macro stringifies its own argument (MPI_INT is itself a macro) */
#define CI(h, k) add_type(h, #h, MXH_GRP_C_INT, k, MXH_FP_NONE, MXH_FP_NONE, 0, 0)
    CI(MPI_INT, MXH_KIND_SINT);
    CI(MPI_LONG, MXH_KIND_SINT);
    CI(MPI_SHORT, MXH_KIND_SINT);
    CI(MPI_UNSIGNED_SHORT, MXH_KIND_UINT);
    CI(MPI_UNSIGNED, MXH_KIND_UINT);
    CI(MPI_UNSIGNED_LONG, MXH_KIND_UINT);
    CI(MPI_LONG_LONG_INT, MXH_KIND_SINT);
    CI(MPI_UNSIGNED_LONG_LONG, MXH_KIND_UINT);
    CI(MPI_SIGNED_CHAR, MXH_KIND_SINT);
    CI(MPI_UNSIGNED_CHAR, MXH_KIND_UINT);
    CI(MPI_CHAR, (char)-1 < 0 ? MXH_KIND_SINT : MXH_KIND_UINT);      /* MPICH reduces it */
    CI(MPI_CHARACTER, (char)-1 < 0 ? MXH_KIND_SINT : MXH_KIND_UINT); /* (as C's char) */
    CI(MPI_INT8_T, MXH_KIND_SINT);
    CI(MPI_INT16_T, MXH_KIND_SINT);
    CI(MPI_INT32_T, MXH_KIND_SINT);
    CI(MPI_INT64_T, MXH_KIND_SINT);
    CI(MPI_UINT8_T, MXH_KIND_UINT);
    CI(MPI_UINT16_T, MXH_KIND_UINT);
    CI(MPI_UINT32_T, MXH_KIND_UINT);
    CI(MPI_UINT64_T, MXH_KIND_UINT);
#define FI(h) add_type(h, #h, MXH_GRP_F_INT, MXH_KIND_SINT, MXH_FP_NONE, MXH_FP_NONE, 0, 0)
    FI(MPI_INTEGER);
    FI(MPI_INTEGER1);
    FI(MPI_INTEGER2);
    FI(MPI_INTEGER4);
    FI(MPI_INTEGER8);
    FI(MPI_INTEGER16); /* MPI_DATATYPE_NULL in Debian's MPICH: skipped */
#define ML(h) add_type(h, #h, MXH_GRP_MULTI, MXH_KIND_SINT, MXH_FP_NONE, MXH_FP_NONE, 0, 0)
    ML(MPI_AINT);
    ML(MPI_OFFSET);
    ML(MPI_COUNT);
#define FL(h, fp) add_type(h, #h, MXH_GRP_FLOAT, MXH_KIND_FLOAT, fp, MXH_FP_NONE, 0, 0)
    FL(MPI_FLOAT, MXH_FP_FLOAT);
    FL(MPI_DOUBLE, MXH_FP_DOUBLE);
    FL(MPI_LONG_DOUBLE, MXH_FP_LDOUBLE);
    FL(MPI_REAL, MXH_FP_FLOAT);
    FL(MPI_DOUBLE_PRECISION, MXH_FP_DOUBLE);
    FL(MPI_REAL4, MXH_FP_FLOAT);
    FL(MPI_REAL8, MXH_FP_DOUBLE);
#ifdef __SIZEOF_FLOAT128__
    FL(MPI_REAL16, MXH_FP_FLOAT128); /* gfortran real(16) = __float128 */
#endif
#define LG(h) add_type(h, #h, MXH_GRP_LOGICAL, MXH_KIND_BOOL, MXH_FP_NONE, MXH_FP_NONE, 0, 0)
    LG(MPI_LOGICAL);
    LG(MPI_C_BOOL);
    LG(MPI_CXX_BOOL);
#define CX(h, fp) add_type(h, #h, MXH_GRP_COMPLEX, MXH_KIND_COMPLEX, fp, MXH_FP_NONE, 0, 0)
    CX(MPI_C_FLOAT_COMPLEX, MXH_FP_FLOAT);
    CX(MPI_C_DOUBLE_COMPLEX, MXH_FP_DOUBLE);
    CX(MPI_C_LONG_DOUBLE_COMPLEX, MXH_FP_LDOUBLE);
    CX(MPI_CXX_FLOAT_COMPLEX, MXH_FP_FLOAT);
    CX(MPI_CXX_DOUBLE_COMPLEX, MXH_FP_DOUBLE);
    CX(MPI_CXX_LONG_DOUBLE_COMPLEX, MXH_FP_LDOUBLE);
    CX(MPI_COMPLEX, MXH_FP_FLOAT);
    CX(MPI_DOUBLE_COMPLEX, MXH_FP_DOUBLE);
    CX(MPI_COMPLEX8, MXH_FP_FLOAT);
    CX(MPI_COMPLEX16, MXH_FP_DOUBLE);
#ifdef __SIZEOF_FLOAT128__
    CX(MPI_COMPLEX32, MXH_FP_FLOAT128); /* MPICH 4.0 rejects it: probed, skipped */
#endif
    add_type(MPI_BYTE, "MPI_BYTE", MXH_GRP_BYTE, MXH_KIND_BYTE, MXH_FP_NONE, MXH_FP_NONE, 0, 0);
#define PR(h, st, vfp, ifp)                                                                   \
    add_type(h, #h, MXH_GRP_PAIR, MXH_KIND_PAIR, vfp, ifp, (int)offsetof(struct st, i),      \
             (int)sizeof(((struct st *)0)->i))
    PR(MPI_2INT, mxh_2int, MXH_FP_INT, MXH_FP_INT);
    PR(MPI_FLOAT_INT, mxh_float_int, MXH_FP_FLOAT, MXH_FP_INT);
    PR(MPI_DOUBLE_INT, mxh_double_int, MXH_FP_DOUBLE, MXH_FP_INT);
    PR(MPI_LONG_INT, mxh_long_int, MXH_FP_LONG, MXH_FP_INT);
    PR(MPI_SHORT_INT, mxh_short_int, MXH_FP_SHORT, MXH_FP_INT);
    PR(MPI_LONG_DOUBLE_INT, mxh_ldouble_int, MXH_FP_LDOUBLE, MXH_FP_INT);
    PR(MPI_2INTEGER, mxh_2int, MXH_FP_INT, MXH_FP_INT);
    PR(MPI_2REAL, mxh_2float, MXH_FP_FLOAT, MXH_FP_FLOAT);
    PR(MPI_2DOUBLE_PRECISION, mxh_2double, MXH_FP_DOUBLE, MXH_FP_DOUBLE);
#define OP(h) add_type(h, #h, MXH_GRP_NONE, MXH_KIND_OPAQUE, MXH_FP_NONE, MXH_FP_NONE, 0, 0)
    OP(MPI_WCHAR); /* (MPI_CHAR, MPI_CHARACTER: C integers above, as MPICH reduces them) */
    OP(MPI_PACKED);
    OP(MPIX_C_FLOAT16);
#undef CI
#undef FI
#undef ML
#undef FL
#undef LG
#undef CX
#undef PR
#undef OP

    /* Probe which allowed pairs MPICH accepts (count 1 on MPI_COMM_SELF). */
    MPI_Comm self;
    MPI_Comm_dup(MPI_COMM_SELF, &self);
    MPI_Comm_set_errhandler(self, MPI_ERRORS_RETURN);
    unsigned char in[64], out[64];
    memset(in, 0, sizeof(in));
    for (int t = 0; t < mxh_ntypes; t++)
        for (int o = 0; o < 12; o++) {
            mxh_mpich_ok_tab[t][o] = 0;
            if (!mxh_op_allowed(&mxh_types[t], mxh_op_at(o)))
                continue;
            mxh_mpich_ok_tab[t][o] =
                MPI_Allreduce(in, out, 1, mxh_types[t].type, mxh_op_at(o), self) == MPI_SUCCESS;
        }
    MPI_Comm_free(&self);
}

int mxh_num_types(void) { return mxh_ntypes; }
const mxh_type_t *mxh_type_at(int i) { return &mxh_types[i]; }

const mxh_type_t *mxh_type_find(MPI_Datatype type)
{
    for (int i = 0; i < mxh_ntypes; i++)
        if (mxh_types[i].type == type)
            return &mxh_types[i];
    return NULL;
}

int mxh_op_allowed(const mxh_type_t *t, MPI_Op op)
{
    int g = t->group;
    if (op == MPI_MAX || op == MPI_MIN)
        return (g & (MXH_GRP_C_INT | MXH_GRP_F_INT | MXH_GRP_FLOAT | MXH_GRP_MULTI)) != 0;
    if (op == MPI_SUM || op == MPI_PROD)
        return (g & (MXH_GRP_C_INT | MXH_GRP_F_INT | MXH_GRP_FLOAT | MXH_GRP_COMPLEX |
                     MXH_GRP_MULTI)) != 0;
    if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR)
        return (g & (MXH_GRP_C_INT | MXH_GRP_LOGICAL)) != 0;
    if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR)
        return (g & (MXH_GRP_C_INT | MXH_GRP_F_INT | MXH_GRP_BYTE | MXH_GRP_MULTI)) != 0;
    if (op == MPI_MINLOC || op == MPI_MAXLOC)
        return (g & MXH_GRP_PAIR) != 0;
    return 0;
}

int mxh_op_mpich_ok(const mxh_type_t *t, MPI_Op op)
{
    int o = mxh_op_index(op);
    int ti = (int)(t - mxh_types);
    if (o < 0 || ti < 0 || ti >= mxh_ntypes)
        return 0;
    return mxh_mpich_ok_tab[ti][o];
}

/* ===================================================================== fill */

static uint64_t splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t elem_hash(size_t i, int rank, uint64_t salt, int opi)
{
    uint64_t h = splitmix(salt ^ 0x5eed5eed12345678ULL);
    h = splitmix(h ^ (uint64_t)i);
    h = splitmix(h ^ ((uint64_t)(unsigned)rank << 32) ^ (uint64_t)(unsigned)(opi + 7));
    return h;
}

static void put_int(void *dst, int size, int64_t v)
{
    switch (size) {
    case 1: { int8_t x = (int8_t)v; memcpy(dst, &x, 1); break; }
    case 2: { int16_t x = (int16_t)v; memcpy(dst, &x, 2); break; }
    case 4: { int32_t x = (int32_t)v; memcpy(dst, &x, 4); break; }
    case 8: { int64_t x = v; memcpy(dst, &x, 8); break; }
    default: break;
    }
}

static void put_fp(void *dst, mxh_fp_t fp, double v)
{
    switch (fp) {
    case MXH_FP_FLOAT: { float x = (float)v; memcpy(dst, &x, sizeof(x)); break; }
    case MXH_FP_DOUBLE: { double x = v; memcpy(dst, &x, sizeof(x)); break; }
    case MXH_FP_LDOUBLE: { long double x = v; memcpy(dst, &x, MXH_LDBL_SIG); break; }
#ifdef __SIZEOF_FLOAT128__
    case MXH_FP_FLOAT128: { __float128 x = v; memcpy(dst, &x, sizeof(x)); break; }
#endif
    case MXH_FP_INT: put_int(dst, (int)sizeof(int), (int64_t)v); break;
    case MXH_FP_LONG: put_int(dst, (int)sizeof(long), (int64_t)v); break;
    case MXH_FP_SHORT: put_int(dst, (int)sizeof(short), (int64_t)v); break;
    default: break;
    }
}

static int fp_size(mxh_fp_t fp)
{
    switch (fp) {
    case MXH_FP_FLOAT: return 4;
    case MXH_FP_DOUBLE: return 8;
    case MXH_FP_LDOUBLE: return (int)sizeof(long double);
    case MXH_FP_FLOAT128: return 16;
    case MXH_FP_INT: return (int)sizeof(int);
    case MXH_FP_LONG: return (int)sizeof(long);
    case MXH_FP_SHORT: return (int)sizeof(short);
    default: return 0;
    }
}

static void random_bytes(unsigned char *dst, int n, uint64_t h)
{
    for (int k = 0; k < n; k += 8) {
        h = splitmix(h);
        int m = n - k < 8 ? n - k : 8;
        memcpy(dst + k, &h, (size_t)m);
    }
}

/* "true" values for logical ops on C integers: not only 1. */
static int64_t truthy(uint64_t h, int is_unsigned)
{
    switch ((h >> 20) % 4) {
    case 0: return 1;
    case 1: return 2;
    case 2: return 5;
    default: return is_unsigned ? 0x7f : -1;
    }
}

void mxh_fill(const mxh_type_t *t, MPI_Op op, void *buf, size_t count, int rank,
              uint64_t salt)
{
    unsigned char *b = (unsigned char *)buf;
    int opi = op == MPI_OP_NULL ? -1 : mxh_op_index(op);
    int ext = t->extent;
    memset(b, 0, count * (size_t)ext);
    for (size_t i = 0; i < count; i++) {
        unsigned char *e = b + i * (size_t)ext;
        uint64_t h = elem_hash(i, rank, salt, opi);
        if (op == MPI_OP_NULL || t->kind == MXH_KIND_OPAQUE) {
            random_bytes(e, ext, h);
            continue;
        }
        /* one "2" per 8 consecutive ranks for PROD */
        int two = ((i + (size_t)rank) % 8) == 0;
        int neg = (int)((h >> 33) & 1);
        switch (t->kind) {
        case MXH_KIND_SINT:
        case MXH_KIND_UINT: {
            int uns = t->kind == MXH_KIND_UINT;
            int64_t v = 0;
            if (op == MPI_SUM)
                v = uns ? (int64_t)(h % 16) : (int64_t)(h % 17) - 8;
            else if (op == MPI_PROD)
                v = (two ? 2 : 1) * ((!uns && neg) ? -1 : 1);
            else if (op == MPI_LAND)
                v = (h % 8 == 0) ? 0 : truthy(h, uns);
            else if (op == MPI_LOR)
                v = (h % 8 == 0) ? truthy(h, uns) : 0;
            else if (op == MPI_LXOR)
                v = (h & 1) ? truthy(h, uns) : 0;
            else if (op == MPI_BAND) {
                uint64_t a = splitmix(h), c = splitmix(a), d = splitmix(c);
                v = (int64_t)(a | c | d);
            } else if (op == MPI_BOR) {
                uint64_t a = splitmix(h), c = splitmix(a), d = splitmix(c);
                v = (int64_t)(a & c & d);
            } else /* MAX, MIN, BXOR: arbitrary bits */
                v = (int64_t)splitmix(h ^ 0xabcdef);
            put_int(e, ext, v);
            break;
        }
        case MXH_KIND_FLOAT: {
            double v;
            if (op == MPI_SUM)
                v = (double)((int)(h % 17) - 8);
            else if (op == MPI_PROD)
                v = (two ? 2.0 : 1.0) * (neg ? -1.0 : 1.0);
            else /* MAX / MIN: multiples of 1/4, no signed zeros */
                v = ((int)(h % 2001) - 1000) / 4.0; /* 0 is +0.0 only */
            put_fp(e, t->fp, v);
            break;
        }
        case MXH_KIND_COMPLEX: {
            int ps = fp_size(t->fp);
            double re, im;
            if (op == MPI_SUM) {
                re = (double)((int)(h % 17) - 8);
                im = (double)((int)((h >> 12) % 17) - 8);
            } else {
                /* PROD: (2+i) times a unit. No partial product of such
                 * numbers has a zero component ((2+i) is a Gaussian prime
                 * not associated with its conjugate), so no signed zero can
                 * depend on the order; components stay below 5^(p/2). */
                static const double ur[4] = {2, -1, -2, 1}, ui[4] = {1, 2, -1, -2};
                int u = (int)((h >> 7) % 4);
                re = ur[u];
                im = ui[u];
            }
            put_fp(e, t->fp, re);
            put_fp(e + ps, t->fp, im);
            break;
        }
        case MXH_KIND_BOOL: {
            int v;
            if (op == MPI_LAND)
                v = (h % 8) != 0;
            else if (op == MPI_LOR)
                v = (h % 8) == 0;
            else
                v = (int)(h & 1);
            put_int(e, ext, v);
            break;
        }
        case MXH_KIND_BYTE: {
            uint64_t a = splitmix(h), c = splitmix(a), d = splitmix(c);
            uint64_t v = op == MPI_BAND ? (a | c | d) : op == MPI_BOR ? (a & c & d) : a;
            memcpy(e, &v, 1);
            break;
        }
        case MXH_KIND_PAIR: {
            double v = (double)((int)(h % 5) - 2);
            double ix = (double)((h >> 16) % 7);
            put_fp(e, t->fp, v);
            put_fp(e + t->seg[1].off, t->idx_fp, ix);
            break;
        }
        default:
            random_bytes(e, ext, h);
            break;
        }
    }
}

void mxh_fill_random_fp(MPI_Datatype type, void *buf, size_t count, int rank, uint64_t salt)
{
    for (size_t i = 0; i < count; i++) {
        uint64_t h = elem_hash(i, rank, salt, 99);
        double v = (double)(h >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0;
        if (type == MPI_FLOAT)
            ((float *)buf)[i] = (float)v;
        else
            ((double *)buf)[i] = v;
    }
}

/* ================================================================== buffers */

#define MXH_GUARD_BYTE 0xA5

void mxh_buf_alloc(mxh_buf_t *b, size_t bytes, int fill)
{
    mxh_buf_wrap(b, malloc(bytes + 2 * MXH_GUARD), bytes, fill);
}

void mxh_buf_wrap(mxh_buf_t *b, void *base, size_t bytes, int fill)
{
    b->bytes = bytes;
    b->base = (unsigned char *)base;
    if (!b->base) {
        fprintf(stderr, "mxh_buf_alloc: out of memory (%zu bytes)\n", bytes);
        abort();
    }
    memset(b->base, MXH_GUARD_BYTE, MXH_GUARD);
    memset(b->base + MXH_GUARD + bytes, MXH_GUARD_BYTE, MXH_GUARD);
    memset(b->base + MXH_GUARD, fill, bytes);
    b->p = b->base + MXH_GUARD;
}

void mxh_buf_free(mxh_buf_t *b)
{
    free(b->base);
    b->base = NULL;
    b->p = NULL;
    b->bytes = 0;
}

int mxh_buf_guards_ok(const mxh_buf_t *b)
{
    for (int k = 0; k < MXH_GUARD; k++)
        if (b->base[k] != MXH_GUARD_BYTE || b->base[MXH_GUARD + b->bytes + k] != MXH_GUARD_BYTE)
            return 0;
    return 1;
}

/* =============================================================== comparison */

static void describe_elem(const mxh_type_t *t, const unsigned char *e, char *out, size_t len)
{
    size_t n = 0;
    out[0] = 0;
    switch (t->kind) {
    case MXH_KIND_SINT:
    case MXH_KIND_UINT: {
        int64_t v = 0;
        if (t->extent == 1) v = t->kind == MXH_KIND_SINT ? *(const int8_t *)e : *(const uint8_t *)e;
        else if (t->extent == 2) { int16_t x; uint16_t u; memcpy(&x, e, 2); memcpy(&u, e, 2); v = t->kind == MXH_KIND_SINT ? x : u; }
        else if (t->extent == 4) { int32_t x; uint32_t u; memcpy(&x, e, 4); memcpy(&u, e, 4); v = t->kind == MXH_KIND_SINT ? x : (int64_t)u; }
        else if (t->extent == 8) memcpy(&v, e, 8);
        n = (size_t)snprintf(out, len, "%lld ", (long long)v);
        break;
    }
    case MXH_KIND_FLOAT:
    case MXH_KIND_PAIR:
    case MXH_KIND_COMPLEX: {
        long double v = 0;
        if (t->fp == MXH_FP_FLOAT) { float x; memcpy(&x, e, 4); v = x; }
        else if (t->fp == MXH_FP_DOUBLE) { double x; memcpy(&x, e, 8); v = x; }
        else if (t->fp == MXH_FP_LDOUBLE) memcpy(&v, e, MXH_LDBL_SIG);
        else break;
        n = (size_t)snprintf(out, len, "%Lg ", v);
        break;
    }
    default:
        break;
    }
    if (n >= len)
        return;
    n += (size_t)snprintf(out + n, len - n, "[");
    for (int s = 0; s < t->nmseg && n < len; s++)
        for (int k = 0; k < t->mseg[s].len && k < 16 && n < len; k++)
            n += (size_t)snprintf(out + n, len - n, "%02x", e[t->mseg[s].off + k]);
    if (n < len)
        snprintf(out + n, len - n, "]");
}

long mxh_compare(const mxh_type_t *t, int whole, const void *got, const void *want,
                 size_t count, char *msg, size_t msglen)
{
    const unsigned char *g = (const unsigned char *)got, *w = (const unsigned char *)want;
    int ns = whole ? t->nmseg : t->nseg;
    const mxh_seg_t *seg = whole ? t->mseg : t->seg;
    for (size_t i = 0; i < count; i++) {
        size_t base = i * (size_t)t->extent;
        for (int s = 0; s < ns; s++) {
            if (memcmp(g + base + seg[s].off, w + base + seg[s].off, (size_t)seg[s].len) != 0) {
                if (msg && msglen) {
                    char a[128], b[128];
                    describe_elem(t, g + base, a, sizeof(a));
                    describe_elem(t, w + base, b, sizeof(b));
                    snprintf(msg, msglen, "element %zu of %zu differs: got %s, expected %s", i,
                             count, a, b);
                }
                return (long)i;
            }
        }
    }
    if (msg && msglen)
        msg[0] = 0;
    return -1;
}

long mxh_compare_bytes(const void *got, const void *want, size_t n)
{
    const unsigned char *g = (const unsigned char *)got, *w = (const unsigned char *)want;
    for (size_t i = 0; i < n; i++)
        if (g[i] != w[i])
            return (long)i;
    return -1;
}

uint64_t mxh_hash_bytes_fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

uint64_t mxh_hash(const mxh_type_t *t, int whole, const void *buf, size_t count)
{
    const unsigned char *b = (const unsigned char *)buf;
    int ns = whole ? t->nmseg : t->nseg;
    const mxh_seg_t *seg = whole ? t->mseg : t->seg;
    uint64_t h = MXH_FNV_INIT;
    if (ns == 1 && seg[0].off == 0 && seg[0].len == t->extent)
        return mxh_hash_bytes_fnv(h, b, count * (size_t)t->extent);
    for (size_t i = 0; i < count; i++)
        for (int s = 0; s < ns; s++)
            h = mxh_hash_bytes_fnv(h, b + i * (size_t)t->extent + seg[s].off, (size_t)seg[s].len);
    return h;
}

int mxh_hashes_agree(MPI_Comm comm, const uint64_t *h, int n, int *first_bad)
{
    uint64_t *root = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)(n > 0 ? n : 1));
    if (n > 0)
        memcpy(root, h, sizeof(uint64_t) * (size_t)n);
    MPI_Bcast(root, n, MPI_UINT64_T, 0, comm);
    int bad = n;
    for (int i = 0; i < n; i++)
        if (root[i] != h[i]) {
            bad = i;
            break;
        }
    free(root);
    int gbad;
    MPI_Allreduce(&bad, &gbad, 1, MPI_INT, MPI_MIN, comm);
    if (first_bad)
        *first_bad = gbad < n ? gbad : -1;
    return gbad >= n;
}

int mxh_collective_failures(MPI_Comm comm, int failed, int *ranks, int cap)
{
    int size;
    MPI_Comm_size(comm, &size);
    int *all = (int *)malloc(sizeof(int) * (size_t)size);
    int mine = failed != 0;
    MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, comm);
    int n = 0;
    for (int r = 0; r < size; r++)
        if (all[r]) {
            if (ranks && n < cap)
                ranks[n] = r;
            n++;
        }
    free(all);
    return n;
}

/* ============================================================= verdicts */

MPI_Comm mxh_test_verdict_comm = MPI_COMM_NULL;

/* ============================================================= environment */

const char *mxh_env(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return (v && *v) ? v : dflt;
}

int mxh_env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    long x = strtol(v, &end, 10);
    return *end ? dflt : (int)x;
}

void mxh_node_name(char *buf, size_t len)
{
    const char *h = getenv("MPIX_HIER_HOSTNAME");
    if (h && *h) {
        snprintf(buf, len, "%s", h);
        return;
    }
    char name[MPI_MAX_PROCESSOR_NAME];
    int l = 0;
    MPI_Get_processor_name(name, &l);
    name[l] = 0;
    snprintf(buf, len, "%s", name);
}

/* ================================================================ watchdog */

static struct {
    pthread_t       thread;
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    int             started, stop, armed, rank, timeout;
    unsigned long   gen;
    struct timespec deadline;
    char            what[512];
} wd = {.mu = PTHREAD_MUTEX_INITIALIZER};

int mxh_watchdog_timeout(void) { return mxh_env_int("MXH_TEST_TIMEOUT", 120); }

static void *wd_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&wd.mu);
    while (!wd.stop) {
        if (!wd.armed) {
            pthread_cond_wait(&wd.cv, &wd.mu);
            continue;
        }
        unsigned long gen = wd.gen;
        int rc = pthread_cond_timedwait(&wd.cv, &wd.mu, &wd.deadline);
        if (rc == ETIMEDOUT && wd.armed && wd.gen == gen && !wd.stop) {
            fprintf(stderr,
                    "mxh watchdog: test %s hung on rank %d (more than %d s; set "
                    "MXH_TEST_TIMEOUT to change)\n",
                    wd.what, wd.rank, wd.timeout);
            fflush(stderr);
            fflush(stdout);
            _exit(124);
        }
    }
    pthread_mutex_unlock(&wd.mu);
    return NULL;
}

void mxh_watchdog_start(int rank)
{
    wd.timeout = mxh_watchdog_timeout();
    wd.rank = rank;
    if (wd.timeout <= 0 || wd.started)
        return;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wd.cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&wd.thread, NULL, wd_main, NULL) == 0)
        wd.started = 1;
}

void mxh_watchdog_arm(const char *what)
{
    if (!wd.started)
        return;
    pthread_mutex_lock(&wd.mu);
    snprintf(wd.what, sizeof(wd.what), "%s", what);
    clock_gettime(CLOCK_MONOTONIC, &wd.deadline);
    wd.deadline.tv_sec += wd.timeout;
    wd.armed = 1;
    wd.gen++;
    pthread_cond_signal(&wd.cv);
    pthread_mutex_unlock(&wd.mu);
}

void mxh_watchdog_disarm(void)
{
    if (!wd.started)
        return;
    pthread_mutex_lock(&wd.mu);
    wd.armed = 0;
    wd.gen++;
    pthread_cond_signal(&wd.cv);
    pthread_mutex_unlock(&wd.mu);
}

void mxh_watchdog_stop(void)
{
    if (!wd.started)
        return;
    pthread_mutex_lock(&wd.mu);
    wd.stop = 1;
    pthread_cond_signal(&wd.cv);
    pthread_mutex_unlock(&wd.mu);
    pthread_join(wd.thread, NULL);
    wd.started = 0;
}

/* ======================================================= yield when idle */

static unsigned long mxh_polls;

unsigned long mxh_yield_polls(void) { return mxh_polls; }

/* Interposes UCX's progress call made by MPICH ch4:ucx (the executable's
 * definition wins over libucp's): on an oversubscribed machine a rank that
 * polls without progress gives the CPU to the rank it waits for. It yields at
 * first and, once idle for more than 50 us, sleeps 20 us per poll: yielding
 * alone is not enough when other jobs load the machine (8 ranks on 2 busy
 * cores: allreduce ~9 ms with yield only, ~1.3 ms with the sleep; on an idle
 * machine both ~50 us, against ~50 ms when spinning). */
__attribute__((visibility("default"))) unsigned ucp_worker_progress(void *worker);
unsigned ucp_worker_progress(void *worker)
{
    static unsigned (*real)(void *);
    static int yield = -1;
    static unsigned idle;
    static struct timespec idle_since;
    if (!real) {
        real = (unsigned (*)(void *))dlsym(RTLD_NEXT, "ucp_worker_progress");
        if (!real)
            return 0;
    }
    if (yield < 0) {
        const char *v = getenv("MXH_TEST_NO_YIELD");
        yield = !(v && *v && strcmp(v, "0") != 0);
        if (yield)
            prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); /* short sleeps stay short */
    }
    mxh_polls++;
    unsigned n = real(worker);
    if (n || !yield) {
        idle = 0;
        return n;
    }
    if (idle++ == 0)
        clock_gettime(CLOCK_MONOTONIC, &idle_since);
    if (idle < 16) {
        sched_yield();
        return n;
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long us = (long)(now.tv_sec - idle_since.tv_sec) * 1000000L +
              (now.tv_nsec - idle_since.tv_nsec) / 1000;
    if (us < 50) {
        sched_yield();
    } else {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    return n;
}

/* ============================================ plain-MPI stand-in (harness) */
#ifdef MXH_TEST_PLAIN_MPI

/* Fault injection to check that the harness catches failures:
 * MXH_TEST_PLAIN_INJECT = corrupt (allreduce result wrong on rank 1),
 * hang (rank 1 never returns from bcast -> watchdog), leak (level
 * communicators never freed), nonroot (reduce writes a non-root recvbuf). */
static int inject(const char *what)
{
    const char *v = getenv("MXH_TEST_PLAIN_INJECT");
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return v && !strcmp(v, what) && (rank == 1 || !strcmp(what, "leak"));
}

int MPIX_Hier_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm)
{
    int rc = MPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    if (count > 0 && inject("corrupt"))
        ((unsigned char *)recvbuf)[0] ^= 1;
    return rc;
}

int MPIX_Hier_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    return MPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
}

int MPIX_Hier_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                        void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return MPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPIX_Hier_bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    while (inject("hang"))
        sleep(1);
    return MPI_Bcast(buffer, count, datatype, root, comm);
}

int MPIX_Hier_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, int root, MPI_Comm comm)
{
    /* MPICH 4.0.2 (ch4) segfaults in MPI_Reduce with MPI_IN_PLACE at a root
     * other than 0 from about 600 ints on: reduce out of place from a copy. */
    int rank;
    if (sendbuf == MPI_IN_PLACE && comm != MPI_COMM_NULL && count > 0 &&
        MPI_Comm_rank(comm, &rank) == MPI_SUCCESS && rank == root && root != 0) {
        MPI_Aint lb, extent, tlb, textent;
        MPI_Type_get_extent(datatype, &lb, &extent);
        MPI_Type_get_true_extent(datatype, &tlb, &textent);
        size_t bytes = (size_t)textent + (size_t)(count - 1) * (size_t)extent;
        char *tmp = (char *)malloc(bytes);
        memcpy(tmp, (char *)recvbuf + tlb, bytes);
        int rc = MPI_Reduce(tmp - tlb, recvbuf, count, datatype, op, root, comm);
        free(tmp);
        return rc;
    }
    int rc = MPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    if (count > 0 && recvbuf && inject("nonroot") && MPI_Comm_rank(comm, &rank) == MPI_SUCCESS &&
        rank != root)
        ((unsigned char *)recvbuf)[0] ^= 1;
    return rc;
}

/* Persistent forms (the five the suites use): MPICH's own. */
int MPIX_Hier_Allreduce_init(const void *sendbuf, void *recvbuf, int count,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                             MPI_Request *request)
{
    return MPI_Allreduce_init(sendbuf, recvbuf, count, datatype, op, comm, info, request);
}

int MPIX_Hier_Reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int recvcount,
                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                        MPI_Info info, MPI_Request *request)
{
    return MPI_Reduce_scatter_block_init(sendbuf, recvbuf, recvcount, datatype, op, comm, info,
                                         request);
}

int MPIX_Hier_Allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Info info, MPI_Request *request)
{
    return MPI_Allgather_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                              info, request);
}

int MPIX_Hier_Bcast_init(void *buffer, int count, MPI_Datatype datatype, int root,
                         MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    return MPI_Bcast_init(buffer, count, datatype, root, comm, info, request);
}

int MPIX_Hier_Reduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, int root, MPI_Comm comm, MPI_Info info,
                          MPI_Request *request)
{
    return MPI_Reduce_init(sendbuf, recvbuf, count, datatype, op, root, comm, info, request);
}

/* Nonblocking forms: MPICH's own. */
int MPIX_Hier_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    return MPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
}

int MPIX_Hier_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                    MPI_Request *request)
{
    return MPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, request);
}

int MPIX_Hier_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                         void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                         MPI_Request *request)
{
    return MPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                          request);
}

int MPIX_Hier_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                     MPI_Request *request)
{
    return MPI_Ibcast(buffer, count, datatype, root, comm, request);
}

int MPIX_Hier_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                      MPI_Op op, int root, MPI_Comm comm, MPI_Request *request)
{
    return MPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, request);
}

/* v-collectives and all-to-all: MPICH's own; corrupt: the last received
 * element of an allgatherv wrong on rank 1. */
int MPIX_Hier_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                         void *recvbuf, const int recvcounts[], const int displs[],
                         MPI_Datatype recvtype, MPI_Comm comm)
{
    int rc = MPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                            comm);
    int rank, size;
    if (inject("corrupt") && MPI_Comm_rank(comm, &rank) == MPI_SUCCESS && rank == 1 &&
        MPI_Comm_size(comm, &size) == MPI_SUCCESS && recvcounts[size - 1] > 0) {
        MPI_Aint lb, extent;
        MPI_Type_get_extent(recvtype, &lb, &extent);
        ((unsigned char *)recvbuf)[(size_t)displs[size - 1] * (size_t)extent] ^= 1;
    }
    return rc;
}

int MPIX_Hier_reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    return MPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
}

int MPIX_Hier_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return MPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPIX_Hier_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                        MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                        const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    return MPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                         recvtype, comm);
}

int MPIX_Hier_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, const int recvcounts[], const int displs[],
                          MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    return MPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                           comm, request);
}

int MPIX_Hier_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                              MPI_Request *request)
{
    return MPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, request);
}

int MPIX_Hier_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                        void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                        MPI_Request *request)
{
    return MPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                         request);
}

int MPIX_Hier_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                         MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                         const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                         MPI_Request *request)
{
    return MPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                          recvtype, comm, request);
}

/* The test memory kind (src/mem/mem.h) for the harness: plain host memory, no
 * copies ever counted (the tests do not assert staging in this build). */
void *mxh_mem_test_alloc(size_t n);
void mxh_mem_test_free(void *p);
void mxh_mem_test_set_delay(int polls);
uint64_t mxh_mem_test_copies(void);

void *mxh_mem_test_alloc(size_t n) { return calloc(1, n ? n : 1); }
void mxh_mem_test_free(void *p) { free(p); }
void mxh_mem_test_set_delay(int polls) { (void)polls; }
uint64_t mxh_mem_test_copies(void) { return 0; }

int MPIX_Hier_get_version(int *major, int *minor, int *patch)
{
    *major = MPIX_HIER_VERSION_MAJOR;
    *minor = MPIX_HIER_VERSION_MINOR;
    *patch = MPIX_HIER_VERSION_PATCH;
    return MPI_SUCCESS;
}

static int plain_class = -1;

int MPIX_Hier_get_error_class(int *errorclass)
{
    if (plain_class < 0) {
        MPI_Add_error_class(&plain_class);
        MPI_Add_error_string(plain_class, "mpix-hier configuration error (plain-MPI stand-in)");
    }
    *errorclass = plain_class;
    return MPI_SUCCESS;
}

/* Raise @code; with @msg, a new code of the stand-in's configuration class
 * carrying @msg (@code is then ignored). */
static int plain_raise(MPI_Comm comm, int code, const char *msg)
{
    if (msg) {
        int c;
        MPIX_Hier_get_error_class(&c);
        MPI_Add_error_code(c, &code);
        MPI_Add_error_string(code, msg);
    }
    MPI_Comm_call_errhandler(comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm, code);
    return code;
}

/* A small emulation of the library's hierarchy (node = shared-memory clique
 * and MPIX_HIER_HOSTNAME; rail = same local index under one leaf; spine =
 * same local index and position across leaves; levels of size 1 everywhere
 * dropped). The leaf of a rank comes from MXH_TEST_EXPECT_LEAF: the stand-in
 * does not parse topology.conf. */
typedef struct plain_hier {
    int      nlevels;
    MPI_Comm level[MPIX_HIER_MAX_LEVELS];
    char     name[MPIX_HIER_MAX_LEVELS][MPIX_HIER_MAX_LEVEL_NAME];
    char     desc[512];
} plain_hier_t;

static int plain_keyval = MPI_KEYVAL_INVALID;

static int plain_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm; (void)keyval; (void)extra;
    plain_hier_t *h = (plain_hier_t *)attr;
    for (int l = 0; l < h->nlevels && !inject("leak"); l++)
        MPI_Comm_free(&h->level[l]);
    free(h);
    return MPI_SUCCESS;
}

/* color = lowest rank with the same 64-bit key */
static MPI_Comm split_by_key(MPI_Comm comm, uint64_t key)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    uint64_t *all = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)size);
    MPI_Allgather(&key, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, comm);
    int color = rank;
    for (int r = 0; r < size; r++)
        if (all[r] == key) {
            color = r;
            break;
        }
    free(all);
    MPI_Comm out;
    MPI_Comm_split(comm, color, rank, &out);
    return out;
}

static plain_hier_t *plain_build(MPI_Comm comm)
{
    if (plain_keyval == MPI_KEYVAL_INVALID)
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, plain_delete, &plain_keyval, NULL);
    plain_hier_t *h = (plain_hier_t *)calloc(1, sizeof(*h));
    MPI_Comm shm, node, rail, spine;
    int rank;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shm);
    char host[256];
    mxh_node_name(host, sizeof(host));
    node = split_by_key(shm, mxh_hash_bytes_fnv(MXH_FNV_INIT, host, strlen(host)));
    MPI_Comm_free(&shm);
    int local, rrank;
    MPI_Comm_rank(node, &local);
    const char *leaf = mxh_env("MXH_TEST_EXPECT_LEAF", "");
    uint64_t lk = mxh_hash_bytes_fnv(MXH_FNV_INIT, leaf, strlen(leaf));
    rail = split_by_key(comm, lk * 1000003ULL + (uint64_t)local);
    MPI_Comm_rank(rail, &rrank);
    spine = split_by_key(comm, ((uint64_t)local << 32) | (uint64_t)rrank);
    MPI_Comm lv[3] = {node, rail, spine};
    const char *nm[3] = {"node", "rail", "spine"};
    int n = 0, off = 0;
    off += snprintf(h->desc + off, sizeof(h->desc) - (size_t)off, "plain-MPI stand-in:");
    for (int l = 0; l < 3; l++) {
        int s, maxs;
        MPI_Comm_size(lv[l], &s);
        MPI_Allreduce(&s, &maxs, 1, MPI_INT, MPI_MAX, comm);
        if (maxs > 1) {
            h->level[n] = lv[l];
            snprintf(h->name[n], MPIX_HIER_MAX_LEVEL_NAME, "%s", nm[l]);
            off += snprintf(h->desc + off, sizeof(h->desc) - (size_t)off,
                            " level %d %s (largest group %d);", n, nm[l], maxs);
            n++;
        } else {
            MPI_Comm_free(&lv[l]);
        }
    }
    h->nlevels = n;
    MPI_Comm_set_attr(comm, plain_keyval, h);
    return h;
}

static plain_hier_t *plain_get(MPI_Comm comm)
{
    void *v = NULL;
    int flag = 0;
    if (plain_keyval != MPI_KEYVAL_INVALID)
        MPI_Comm_get_attr(comm, plain_keyval, &v, &flag);
    return flag ? (plain_hier_t *)v : plain_build(comm);
}

/* MPICH 4.0.2: a code made by MPI_Add_error_code on a predefined class gets a
 * garbage MPI_Error_string (the dynamic-code bit is missing), so codes of
 * predefined classes come from MPICH's own (exported) MPIR_Err_create_code,
 * which records the function name in the error stack. */
int MPIR_Err_create_code(int lastcode, int fatal, const char fcname[], int line, int error_class,
                         const char generic_msg[], const char specific_msg[], ...);

static int plain_check_comm(MPI_Comm comm, const char *fn)
{
    if (comm == MPI_COMM_NULL) {
        int code = MPIR_Err_create_code(MPI_SUCCESS, 0, fn, __LINE__, MPI_ERR_COMM, "**commnull",
                                        NULL);
        return plain_raise(MPI_COMM_NULL, code, NULL);
    }
    return MPI_SUCCESS;
}

static int parse_bool(const char *v, int *out)
{
    if (!strcasecmp(v, "yes") || !strcasecmp(v, "y") || !strcmp(v, "1") || !strcasecmp(v, "true") ||
        !strcasecmp(v, "on")) {
        *out = 1;
        return 0;
    }
    if (!strcasecmp(v, "no") || !strcasecmp(v, "n") || !strcmp(v, "0") || !strcasecmp(v, "false") ||
        !strcasecmp(v, "off")) {
        *out = 0;
        return 0;
    }
    return -1;
}

int MPIX_Hier_comm_init(MPI_Comm comm, MPI_Info info)
{
    int rc = plain_check_comm(comm, "MPIX_Hier_comm_init");
    if (rc)
        return rc;
    char msg[1400] = "";
    int enable = 1;
    if (info != MPI_INFO_NULL) {
        char val[1024];
        int flag = 0;
        MPI_Info_get(info, "mpix_hier_topo_file", sizeof(val) - 1, val, &flag);
        if (flag) {
            FILE *f = fopen(val, "r");
            if (!f)
                snprintf(msg, sizeof(msg), "MPIX_Hier_comm_init: cannot open topology file '%s': %s",
                         val, strerror(errno));
            else
                fclose(f);
        }
        MPI_Info_get(info, "mpix_hier_enable", sizeof(val) - 1, val, &flag);
        if (flag && !msg[0] && parse_bool(val, &enable))
            snprintf(msg, sizeof(msg),
                     "MPIX_Hier_comm_init: MPI_Info mpix_hier_enable: bad value '%s'", val);
    }
    int bad = msg[0] != 0, anybad, emin, emax;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, comm);
    MPI_Allreduce(&enable, &emin, 1, MPI_INT, MPI_MIN, comm);
    MPI_Allreduce(&enable, &emax, 1, MPI_INT, MPI_MAX, comm);
    if (!bad && anybad)
        snprintf(msg, sizeof(msg), "MPIX_Hier_comm_init: configuration error on another rank");
    else if (!anybad && emin != emax)
        snprintf(msg, sizeof(msg),
                 "MPIX_Hier_comm_init: mpix_hier_enable differs across ranks (must be equal)");
    if (msg[0]) {
        return plain_raise(comm, 0, msg);
    }
    if (plain_keyval != MPI_KEYVAL_INVALID) {
        void *v;
        int flag = 0;
        MPI_Comm_get_attr(comm, plain_keyval, &v, &flag);
        if (flag)
            MPI_Comm_delete_attr(comm, plain_keyval);
    }
    plain_build(comm);
    return MPI_SUCCESS;
}

int MPIX_Hier_comm_get_num_levels(MPI_Comm comm, int *num_levels)
{
    int rc = plain_check_comm(comm, "MPIX_Hier_comm_get_num_levels");
    if (rc)
        return rc;
    *num_levels = plain_get(comm)->nlevels;
    return MPI_SUCCESS;
}

int MPIX_Hier_comm_get_level(MPI_Comm comm, int level, MPI_Comm *level_comm, char *name)
{
    int rc = plain_check_comm(comm, "MPIX_Hier_comm_get_level");
    if (rc)
        return rc;
    plain_hier_t *h = plain_get(comm);
    if (level < 0 || level >= h->nlevels) {
        int code = MPIR_Err_create_code(MPI_SUCCESS, 0, "MPIX_Hier_comm_get_level", __LINE__,
                                        MPI_ERR_ARG, "**argrange", "**argrange %s %d %d", "level",
                                        level, h->nlevels - 1);
        return plain_raise(comm, code, NULL);
    }
    *level_comm = h->level[level];
    if (name)
        snprintf(name, MPIX_HIER_MAX_LEVEL_NAME, "%s", h->name[level]);
    return MPI_SUCCESS;
}

int MPIX_Hier_comm_describe(MPI_Comm comm, char *buf, int buflen, int *resultlen)
{
    int rc = plain_check_comm(comm, "MPIX_Hier_comm_describe");
    if (rc)
        return rc;
    plain_hier_t *h = plain_get(comm);
    int len = (int)strlen(h->desc);
    if (buf && buflen > 0)
        snprintf(buf, (size_t)buflen, "%s", h->desc);
    if (resultlen)
        *resultlen = len;
    return MPI_SUCCESS;
}

#endif /* MXH_TEST_PLAIN_MPI */
