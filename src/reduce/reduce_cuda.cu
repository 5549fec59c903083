// GPU reduction kernels: see reduce_cuda.h. One kernel template per (storage
// type, op); signed and unsigned integers share the kernels of every op but
// MAX/MIN (two's complement sums, products and bit operations are the same
// bits), which keeps the instantiations (and nvcc's compile time) small.
#include "reduce/reduce_cuda.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdint.h>

namespace {

constexpr int kThreads = 256;
constexpr int kUnroll  = 4; // independent 16-byte vectors in flight per thread

struct Inputs {
    const void *p[MXH_CUDA_REDUCE_MAX_INPUTS];
};

struct cf32 {
    float x, y;
};
// natural alignment (8): MPI_C_DOUBLE_COMPLEX buffers at 8 mod 16 are legal, and a
// 16-byte-aligned type would make their scalar loads fault
struct cf64 {
    double x, y;
};

// ---- element operations: acc = acc op x ------------------------------------

template <typename T> struct Wide {
    typedef T type;
};
template <> struct Wide<uint8_t> {
    typedef uint32_t type;
};
template <> struct Wide<uint16_t> {
    typedef uint32_t type;
};

template <typename T> struct Sum {
    __device__ static T apply(T a, T b) { return (T)((typename Wide<T>::type)a + (typename Wide<T>::type)b); }
};
template <typename T> struct Prod {
    __device__ static T apply(T a, T b) { return (T)((typename Wide<T>::type)a * (typename Wide<T>::type)b); }
};
template <typename T> struct Max {
    __device__ static T apply(T a, T b) { return a > b ? a : b; }
};
template <typename T> struct Min {
    __device__ static T apply(T a, T b) { return a < b ? a : b; }
};
template <typename T> struct Land {
    __device__ static T apply(T a, T b) { return (T)(a != 0 && b != 0); }
};
template <typename T> struct Lor {
    __device__ static T apply(T a, T b) { return (T)(a != 0 || b != 0); }
};
template <typename T> struct Lxor {
    __device__ static T apply(T a, T b) { return (T)((a != 0) != (b != 0)); }
};
template <typename T> struct Band {
    __device__ static T apply(T a, T b) { return (T)(a & b); }
};
template <typename T> struct Bor {
    __device__ static T apply(T a, T b) { return (T)(a | b); }
};
template <typename T> struct Bxor {
    __device__ static T apply(T a, T b) { return (T)(a ^ b); }
};
// float/double: explicitly rounded operations (no contraction into FMA), as the host does
template <> struct Sum<float> {
    __device__ static float apply(float a, float b) { return __fadd_rn(a, b); }
};
template <> struct Prod<float> {
    __device__ static float apply(float a, float b) { return __fmul_rn(a, b); }
};
template <> struct Sum<double> {
    __device__ static double apply(double a, double b) { return __dadd_rn(a, b); }
};
template <> struct Prod<double> {
    __device__ static double apply(double a, double b) { return __dmul_rn(a, b); }
};
template <> struct Sum<cf32> {
    __device__ static cf32 apply(cf32 a, cf32 b) { return {__fadd_rn(a.x, b.x), __fadd_rn(a.y, b.y)}; }
};
template <> struct Prod<cf32> {
    __device__ static cf32 apply(cf32 a, cf32 b)
    {
        return {__fsub_rn(__fmul_rn(a.x, b.x), __fmul_rn(a.y, b.y)),
                __fadd_rn(__fmul_rn(a.x, b.y), __fmul_rn(a.y, b.x))};
    }
};
template <> struct Sum<cf64> {
    __device__ static cf64 apply(cf64 a, cf64 b) { return {__dadd_rn(a.x, b.x), __dadd_rn(a.y, b.y)}; }
};
template <> struct Prod<cf64> {
    __device__ static cf64 apply(cf64 a, cf64 b)
    {
        return {__dsub_rn(__dmul_rn(a.x, b.x), __dmul_rn(a.y, b.y)),
                __dadd_rn(__dmul_rn(a.x, b.y), __dmul_rn(a.y, b.x))};
    }
};

// half types: stored as uint16_t, computed in float, rounded to nearest even once per op
struct Fp16 {
    __device__ static float load(uint16_t h) { return __half2float(__ushort_as_half(h)); }
    __device__ static uint16_t store(float f) { return __half_as_ushort(__float2half_rn(f)); }
};
struct Bf16 {
    __device__ static float load(uint16_t h) { return __bfloat162float(__ushort_as_bfloat16(h)); }
    __device__ static uint16_t store(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
};
template <typename H, template <typename> class OpT> struct HalfOp {
    __device__ static uint16_t apply(uint16_t a, uint16_t b)
    {
        return H::store(OpT<float>::apply(H::load(a), H::load(b)));
    }
};

// ---- the kernel --------------------------------------------------------------

template <typename S, typename Op> __device__ __forceinline__ uint4 combine(uint4 a, uint4 b)
{
    constexpr int V = 16 / sizeof(S);
    S x[V], y[V];
    memcpy(x, &a, 16);
    memcpy(y, &b, 16);
#pragma unroll
    for (int j = 0; j < V; j++)
        x[j] = Op::apply(x[j], y[j]);
    memcpy(&a, x, 16);
    return a;
}

// Element @e of @p; @bytes: some pointer is not aligned to the element (MPI allows it),
// so the scalar path moves it byte by byte instead of faulting.
template <typename S> __device__ __forceinline__ S ld(const void *p, size_t e, bool bytes)
{
    if (!bytes)
        return ((const S *)p)[e];
    S v;
    const unsigned char *b = (const unsigned char *)p + e * sizeof(S);
    unsigned char *d       = (unsigned char *)&v;
#pragma unroll
    for (int i = 0; i < (int)sizeof(S); i++)
        d[i] = b[i];
    return v;
}

template <typename S> __device__ __forceinline__ void st(void *p, size_t e, S v, bool bytes)
{
    if (!bytes) {
        ((S *)p)[e] = v;
        return;
    }
    unsigned char *b       = (unsigned char *)p + e * sizeof(S);
    const unsigned char *s = (const unsigned char *)&v;
#pragma unroll
    for (int i = 0; i < (int)sizeof(S); i++)
        b[i] = s[i];
}

template <typename S, typename Op>
__global__ void __launch_bounds__(kThreads)
    reduce_kernel(S *out, Inputs in, int nin, size_t head, size_t nvec, size_t count, bool bytes)
{
    constexpr size_t V = 16 / sizeof(S);
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t nth = (size_t)gridDim.x * blockDim.x;

    // vectors: kUnroll independent loads per input before they are combined
    const uint4 *vin0 = (const uint4 *)((const S *)in.p[0] + head);
    uint4 *vout       = (uint4 *)(out + head);
    for (size_t v0 = tid; v0 < nvec; v0 += nth * kUnroll) {
        uint4 acc[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            size_t v = v0 + (size_t)u * nth;
            if (v < nvec)
                acc[u] = vin0[v];
        }
        for (int k = 1; k < nin; k++) {
            const uint4 *vk = (const uint4 *)((const S *)in.p[k] + head);
            uint4 x[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; u++) {
                size_t v = v0 + (size_t)u * nth;
                if (v < nvec)
                    x[u] = vk[v];
            }
#pragma unroll
            for (int u = 0; u < kUnroll; u++)
                acc[u] = combine<S, Op>(acc[u], x[u]);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            size_t v = v0 + (size_t)u * nth;
            if (v < nvec)
                vout[v] = acc[u];
        }
    }

    // scalars: the head [0, head) and the tail [head + nvec * V, count)
    const size_t tail0 = head + nvec * V, nscalar = head + (count - tail0);
    for (size_t i = tid; i < nscalar; i += nth) {
        size_t e = i < head ? i : tail0 + (i - head);
        S acc    = ld<S>(in.p[0], e, bytes);
        for (int k = 1; k < nin; k++)
            acc = Op::apply(acc, ld<S>(in.p[k], e, bytes));
        st<S>(out, e, acc, bytes);
    }
}

int sm_count(void)
{
    static int cached[64];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0)
        return 32;
    if (dev < 64 && cached[dev] > 0)
        return cached[dev];
    int n = 0;
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n <= 0)
        n = 32;
    if (dev < 64)
        cached[dev] = n;
    return n;
}

template <typename S, typename Op>
cudaError_t launch(void *out, const Inputs &in, int nin, size_t count, cudaStream_t stream)
{
    uintptr_t addrs[MXH_CUDA_REDUCE_MAX_INPUTS + 1];
    size_t head = 0, nvec = 0;

    addrs[0] = (uintptr_t)out;
    for (int k = 0; k < nin; k++)
        addrs[k + 1] = (uintptr_t)in.p[k];
    mxh_cuda_reduce_split(addrs, nin + 1, count, sizeof(S), &head, &nvec);
    bool bytes = false;
    for (int k = 0; k <= nin; k++)
        bytes = bytes || addrs[k] % alignof(S) != 0;
    size_t nscalar = count - nvec * (16 / sizeof(S));
    size_t work    = (nvec + kUnroll - 1) / kUnroll;
    if (nscalar > work)
        work = nscalar;
    size_t blocks = (work + kThreads - 1) / kThreads, maxb = (size_t)sm_count() * 8;
    if (blocks > maxb)
        blocks = maxb;
    if (blocks == 0)
        blocks = 1;
    reduce_kernel<S, Op><<<(unsigned)blocks, kThreads, 0, stream>>>((S *)out, in, nin, head, nvec,
                                                                      count, bytes);
    return cudaGetLastError();
}

template <typename S>
cudaError_t by_op_int(mxh_cuda_op_t op, void *out, const Inputs &in, int nin, size_t count,
                      cudaStream_t s)
{
    switch (op) {
    case MXH_CUDA_SUM:  return launch<S, Sum<S>>(out, in, nin, count, s);
    case MXH_CUDA_PROD: return launch<S, Prod<S>>(out, in, nin, count, s);
    case MXH_CUDA_LAND: return launch<S, Land<S>>(out, in, nin, count, s);
    case MXH_CUDA_LOR:  return launch<S, Lor<S>>(out, in, nin, count, s);
    case MXH_CUDA_LXOR: return launch<S, Lxor<S>>(out, in, nin, count, s);
    case MXH_CUDA_BAND: return launch<S, Band<S>>(out, in, nin, count, s);
    case MXH_CUDA_BOR:  return launch<S, Bor<S>>(out, in, nin, count, s);
    case MXH_CUDA_BXOR: return launch<S, Bxor<S>>(out, in, nin, count, s);
    default:            return cudaErrorInvalidValue;
    }
}

template <typename S>
cudaError_t by_op_minmax(mxh_cuda_op_t op, void *out, const Inputs &in, int nin, size_t count,
                         cudaStream_t s)
{
    return op == MXH_CUDA_MAX ? launch<S, Max<S>>(out, in, nin, count, s)
                              : launch<S, Min<S>>(out, in, nin, count, s);
}

template <typename S>
cudaError_t by_op_float(mxh_cuda_op_t op, void *out, const Inputs &in, int nin, size_t count,
                        cudaStream_t s)
{
    switch (op) {
    case MXH_CUDA_SUM:  return launch<S, Sum<S>>(out, in, nin, count, s);
    case MXH_CUDA_PROD: return launch<S, Prod<S>>(out, in, nin, count, s);
    case MXH_CUDA_MAX:  return launch<S, Max<S>>(out, in, nin, count, s);
    case MXH_CUDA_MIN:  return launch<S, Min<S>>(out, in, nin, count, s);
    default:            return cudaErrorInvalidValue;
    }
}

template <typename H>
cudaError_t by_op_half(mxh_cuda_op_t op, void *out, const Inputs &in, int nin, size_t count,
                       cudaStream_t s)
{
    switch (op) {
    case MXH_CUDA_SUM:  return launch<uint16_t, HalfOp<H, Sum>>(out, in, nin, count, s);
    case MXH_CUDA_PROD: return launch<uint16_t, HalfOp<H, Prod>>(out, in, nin, count, s);
    case MXH_CUDA_MAX:  return launch<uint16_t, HalfOp<H, Max>>(out, in, nin, count, s);
    case MXH_CUDA_MIN:  return launch<uint16_t, HalfOp<H, Min>>(out, in, nin, count, s);
    default:            return cudaErrorInvalidValue;
    }
}

template <typename S>
cudaError_t by_op_complex(mxh_cuda_op_t op, void *out, const Inputs &in, int nin, size_t count,
                          cudaStream_t s)
{
    return op == MXH_CUDA_SUM ? launch<S, Sum<S>>(out, in, nin, count, s)
                              : launch<S, Prod<S>>(out, in, nin, count, s);
}

cudaError_t dispatch(mxh_cuda_dt_t dt, mxh_cuda_op_t op, void *out, const Inputs &in, int nin,
                     size_t count, cudaStream_t s)
{
    bool mm = op == MXH_CUDA_MAX || op == MXH_CUDA_MIN;
    switch (dt) {
    case MXH_CUDA_I8:  return mm ? by_op_minmax<int8_t>(op, out, in, nin, count, s) : by_op_int<uint8_t>(op, out, in, nin, count, s);
    case MXH_CUDA_U8:  return mm ? by_op_minmax<uint8_t>(op, out, in, nin, count, s) : by_op_int<uint8_t>(op, out, in, nin, count, s);
    case MXH_CUDA_I16: return mm ? by_op_minmax<int16_t>(op, out, in, nin, count, s) : by_op_int<uint16_t>(op, out, in, nin, count, s);
    case MXH_CUDA_U16: return mm ? by_op_minmax<uint16_t>(op, out, in, nin, count, s) : by_op_int<uint16_t>(op, out, in, nin, count, s);
    case MXH_CUDA_I32: return mm ? by_op_minmax<int32_t>(op, out, in, nin, count, s) : by_op_int<uint32_t>(op, out, in, nin, count, s);
    case MXH_CUDA_U32: return mm ? by_op_minmax<uint32_t>(op, out, in, nin, count, s) : by_op_int<uint32_t>(op, out, in, nin, count, s);
    case MXH_CUDA_I64: return mm ? by_op_minmax<int64_t>(op, out, in, nin, count, s) : by_op_int<uint64_t>(op, out, in, nin, count, s);
    case MXH_CUDA_U64: return mm ? by_op_minmax<uint64_t>(op, out, in, nin, count, s) : by_op_int<uint64_t>(op, out, in, nin, count, s);
    case MXH_CUDA_F16: return by_op_half<Fp16>(op, out, in, nin, count, s);
    case MXH_CUDA_BF16: return by_op_half<Bf16>(op, out, in, nin, count, s);
    case MXH_CUDA_F32: return by_op_float<float>(op, out, in, nin, count, s);
    case MXH_CUDA_F64: return by_op_float<double>(op, out, in, nin, count, s);
    case MXH_CUDA_C32: return by_op_complex<cf32>(op, out, in, nin, count, s);
    case MXH_CUDA_C64: return by_op_complex<cf64>(op, out, in, nin, count, s);
    default:           return cudaErrorInvalidValue;
    }
}

} // namespace

extern "C" {

size_t mxh_cuda_dt_size(mxh_cuda_dt_t dt)
{
    static const size_t sz[MXH_CUDA_DT_COUNT] = {1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8, 8, 16};
    return (dt >= 0 && dt < MXH_CUDA_DT_COUNT) ? sz[dt] : 0;
}

const char *mxh_cuda_dt_name(mxh_cuda_dt_t dt)
{
    static const char *const names[MXH_CUDA_DT_COUNT] = {
        "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
        "fp16", "bf16", "float", "double", "complex-float", "complex-double"};
    return (dt >= 0 && dt < MXH_CUDA_DT_COUNT) ? names[dt] : "?";
}

const char *mxh_cuda_op_name(mxh_cuda_op_t op)
{
    static const char *const names[MXH_CUDA_OP_COUNT] = {"sum",  "prod", "max",  "min",  "land",
                                                         "lor",  "lxor", "band", "bor",  "bxor"};
    return (op >= 0 && op < MXH_CUDA_OP_COUNT) ? names[op] : "?";
}

int mxh_cuda_reduce_supported(mxh_cuda_dt_t dt, mxh_cuda_op_t op)
{
    if (dt < 0 || dt >= MXH_CUDA_DT_COUNT || op < 0 || op >= MXH_CUDA_OP_COUNT)
        return 0;
    if (dt <= MXH_CUDA_U64)
        return 1;
    if (dt >= MXH_CUDA_C32)
        return op == MXH_CUDA_SUM || op == MXH_CUDA_PROD;
    return op <= MXH_CUDA_MIN;
}

void mxh_cuda_reduce_split(uintptr_t const *addrs, int naddrs, size_t count, size_t esize,
                           size_t *head, size_t *nvec)
{
    *head = 0;
    *nvec = 0;
    if (esize == 0 || 16 % esize != 0 || naddrs <= 0 || count == 0)
        return;
    uintptr_t mis = addrs[0] & 15u;
    for (int k = 1; k < naddrs; k++)
        if ((addrs[k] & 15u) != mis)
            return;
    if (mis % esize != 0) /* element-misaligned pointers: never reach a 16-byte boundary */
        return;
    size_t h = mis ? (16 - mis) / esize : 0;
    if (h >= count)
        return;
    *head = h;
    *nvec = (count - h) * esize / 16;
}

cudaError_t mxh_cuda_reduce(void *out, const void *const *in, int nin, size_t count,
                            mxh_cuda_dt_t dt, mxh_cuda_op_t op, cudaStream_t stream)
{
    if (nin < 1 || in == NULL || (count > 0 && out == NULL) ||
        (nin > 1 && !mxh_cuda_reduce_supported(dt, op)) || mxh_cuda_dt_size(dt) == 0)
        return cudaErrorInvalidValue;
    if (count == 0)
        return cudaSuccess;
    /* chained launches read @out as their first input: @out must not be an input
     * that a later launch still has to read */
    for (int k = MXH_CUDA_REDUCE_MAX_INPUTS; k < nin; k++)
        if (in[k] == out)
            return cudaErrorInvalidValue;
    if (nin == 1) {
        if (in[0] == out)
            return cudaSuccess;
        return cudaMemcpyAsync(out, in[0], count * mxh_cuda_dt_size(dt), cudaMemcpyDefault,
                               stream);
    }
    int done = 0;
    while (done < nin) {
        Inputs args;
        int n = 0;
        if (done > 0)
            args.p[n++] = out;
        while (n < MXH_CUDA_REDUCE_MAX_INPUTS && done < nin)
            args.p[n++] = in[done++];
        cudaError_t rc = dispatch(dt, op, out, args, n, count, stream);
        if (rc != cudaSuccess)
            return rc;
    }
    return cudaSuccess;
}

} // extern "C"
