/* Reduction kernels on the GPU (reduce_cuda.cu), callable from C.
 *
 *   out[i] = in[0][i] op in[1][i] op ... op in[n-1][i]     (left to right)
 *
 * for every predefined arithmetic type MPI can reduce (as raw element kinds:
 * integers by size and signedness, float, double, complex float/double) and
 * for IEEE fp16 / bfloat16 (computed in float, rounded to nearest even after
 * every op, so n inputs give the same bits as n-1 pairwise MPI_Reduce_local
 * calls in rank order). The n-input form gives every rank of an IPC
 * reduce-scatter the same bits. Any count, any alignment: 16-byte vector
 * loads and stores on the part where every pointer is 16-byte aligned (all
 * pointers must then share their address modulo 16), scalar otherwise. @out
 * may be one of the inputs (same pointer), other overlaps are not allowed.
 * Inputs may live on other GPUs (peer / IPC mappings). Asynchronous on
 * @stream; returns the launch status (cudaSuccess, or the error of the
 * launch). No allocation, no synchronization. */
#ifndef MXH_REDUCE_CUDA_H
#define MXH_REDUCE_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mxh_cuda_dt {
    MXH_CUDA_DT_NONE = -1,
    MXH_CUDA_I8 = 0, MXH_CUDA_U8, MXH_CUDA_I16, MXH_CUDA_U16,
    MXH_CUDA_I32, MXH_CUDA_U32, MXH_CUDA_I64, MXH_CUDA_U64,
    MXH_CUDA_F16, MXH_CUDA_BF16, MXH_CUDA_F32, MXH_CUDA_F64,
    MXH_CUDA_C32, /* complex float (two floats) */
    MXH_CUDA_C64, /* complex double */
    MXH_CUDA_DT_COUNT
} mxh_cuda_dt_t;

typedef enum mxh_cuda_op {
    MXH_CUDA_OP_NONE = -1,
    MXH_CUDA_SUM = 0, MXH_CUDA_PROD, MXH_CUDA_MAX, MXH_CUDA_MIN,
    MXH_CUDA_LAND, MXH_CUDA_LOR, MXH_CUDA_LXOR, MXH_CUDA_BAND, MXH_CUDA_BOR, MXH_CUDA_BXOR,
    MXH_CUDA_OP_COUNT
} mxh_cuda_op_t;

/* Most inputs one launch takes; mxh_cuda_reduce chains launches beyond it
 * (keeping the left-to-right order). */
#define MXH_CUDA_REDUCE_MAX_INPUTS 32

/* Bytes of one element of @dt (0 for NONE). */
size_t mxh_cuda_dt_size(mxh_cuda_dt_t dt);
/* 1 if a kernel exists for (dt, op): integers: all ops; floating point and
 * half: SUM PROD MAX MIN; complex: SUM PROD. */
int mxh_cuda_reduce_supported(mxh_cuda_dt_t dt, mxh_cuda_op_t op);
const char *mxh_cuda_dt_name(mxh_cuda_dt_t dt);
const char *mxh_cuda_op_name(mxh_cuda_op_t op);

/* out = in[0] op ... op in[nin-1] over @count elements (nin >= 1; nin == 1 is
 * a copy). cudaErrorInvalidValue for an unsupported pair or bad arguments. */
cudaError_t mxh_cuda_reduce(void *out, const void *const *in, int nin, size_t count,
                            mxh_cuda_dt_t dt, mxh_cuda_op_t op, cudaStream_t stream);

/* How a launch splits @count elements of @esize bytes at these addresses:
 * [0, head) scalar, [head, head + nvec * (16 / esize)) as 16-byte vectors,
 * the rest scalar. nvec = 0 when the pointers disagree modulo 16 or esize
 * does not divide 16. Host-side logic, exposed for unit tests. */
void mxh_cuda_reduce_split(uintptr_t const *addrs, int naddrs, size_t count, size_t esize,
                           size_t *head, size_t *nvec);

#ifdef __cplusplus
}
#endif

#endif
