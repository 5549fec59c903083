/* IEEE binary16 (fp16) and bfloat16 <-> binary32 conversions, branch-free so
 * that loops over them vectorize. float -> half rounds to nearest, ties to
 * even; overflow gives Inf; subnormals are produced and read exactly; NaNs
 * stay NaN (quiet bit set, top payload bits kept, as x86 F16C does).
 * Header-only (static inline), usable from C and C++; no MPI. */
#ifndef MXH_REDUCE_HALF_H
#define MXH_REDUCE_HALF_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

static inline uint32_t mxh_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline float mxh_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* binary16 -> binary32 (exact). Subnormals go through an int -> float
 * conversion, so no denormal operand ever reaches the FPU. */
static inline float mxh_fp16_to_float(uint16_t h)
{
    uint32_t em   = (uint32_t)h & 0x7fffu;
    uint32_t exp  = em & 0x7c00u;
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t nrm  = (em << 13) + ((uint32_t)(127 - 15) << 23);
    uint32_t sub  = mxh_f32_bits((float)(int32_t)em * 5.9604644775390625e-8f); /* 2^-24 */
    uint32_t inf  = (em << 13) | 0x7f800000u;
    uint32_t r    = exp == 0 ? sub : (exp == 0x7c00u ? inf : nrm);
    return mxh_f32_from_bits(r | sign);
}

/* binary32 -> binary16, round to nearest even. */
static inline uint16_t mxh_float_to_fp16(float f)
{
    uint32_t x    = mxh_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t a    = x & 0x7fffffffu;
    /* normal results: rebias the exponent (-112 << 23, mod 2^32) and round
     * the 13 dropped bits to even; a carry may go on into the exponent (Inf) */
    uint32_t nrm = (a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13;
    /* subnormal results (|f| < 2^-14): adding 0.5 makes the FPU round at the
     * 2^-24 quantum (the ulp of 0.5); the low bits are then the encoding */
    uint32_t sub = mxh_f32_bits(mxh_f32_from_bits(a) + 0.5f) - 0x3f000000u;
    uint32_t big = a > 0x7f800000u ? (0x7e00u | ((a >> 13) & 0x3ffu)) : 0x7c00u;
    uint32_t r   = a >= 0x47800000u ? big : (a < 0x38800000u ? sub : nrm);
    return (uint16_t)(r | sign);
}

/* bfloat16 -> binary32 (exact). */
static inline float mxh_bf16_to_float(uint16_t h)
{
    return mxh_f32_from_bits((uint32_t)h << 16);
}

/* binary32 -> bfloat16, round to nearest even. */
static inline uint16_t mxh_float_to_bf16(float f)
{
    uint32_t x   = mxh_f32_bits(f);
    uint32_t rnd = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    uint32_t nan = (x >> 16) | 0x40u;
    return (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? nan : rnd);
}

#ifdef __cplusplus
}
#endif

#endif
