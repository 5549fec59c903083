/* mpix_kernel_bench: bandwidth of mpix-hier's GPU reduction kernels against
 * cudaMemcpy device-to-device, measured in the same run on the current GPU.
 *
 *   mpix_kernel_bench [-b BYTES] [-n ITERS]      (default 256 MiB per buffer, 20 iterations)
 *
 * Bandwidth counts every byte read and written (memcpy: 2 N; an n-input
 * reduction: (n + 1) N), so the ratio to memcpy says how close a kernel gets
 * to the memory system's limit. Median over the iterations (CUDA events).
 * No MPI. Exit 0 on success, 2 when there is no CUDA device. */
#include "config.h"

#include "reduce/reduce_cuda.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(_call)                                                              \
    do {                                                                       \
        cudaError_t _rc = (_call);                                             \
        if (_rc != cudaSuccess) {                                              \
            fprintf(stderr, "mpix_kernel_bench: %s: %s\n", #_call,             \
                    cudaGetErrorString(_rc));                                  \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Median milliseconds of @iters runs of @what (0 memcpy, else a reduction). */
static float time_ms(int iters, int what, void *out, const void *const *in, int nin, size_t bytes,
                     mxh_cuda_dt_t dt, mxh_cuda_op_t op)
{
    float *ms = malloc(sizeof(float) * (size_t)iters), med;
    cudaEvent_t a, b;
    size_t count = bytes / mxh_cuda_dt_size(dt);

    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = -2; i < iters; i++) { /* 2 warm-up runs */
        CK(cudaEventRecord(a, 0));
        if (what == 0)
            CK(cudaMemcpyAsync(out, in[0], bytes, cudaMemcpyDeviceToDevice, 0));
        else
            CK(mxh_cuda_reduce(out, in, nin, count, dt, op, 0));
        CK(cudaEventRecord(b, 0));
        CK(cudaEventSynchronize(b));
        if (i >= 0)
            CK(cudaEventElapsedTime(&ms[i], a, b));
    }
    qsort(ms, (size_t)iters, sizeof(float), cmp_float);
    med = ms[iters / 2];
    free(ms);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return med;
}

int main(int argc, char **argv)
{
    size_t bytes = (size_t)256 << 20;
    int iters = 20, ndev = 0, dev = 0;
    struct cudaDeviceProp prop;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-b") && i + 1 < argc) {
            bytes = strtoull(argv[++i], NULL, 10);
            if (bytes < 1024)
                bytes <<= 20; /* small numbers are MiB */
        } else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            iters = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [-b BYTES|MIB] [-n ITERS]\n", argv[0]);
            return 1;
        }
    }
    if (iters < 1)
        iters = 1;
    bytes &= ~(size_t)15;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("mpix_kernel_bench: no CUDA device\n");
        return 2;
    }
    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&prop, dev));
    printf("# mpix_kernel_bench: %s (device %d, %d SMs), %zu MiB per buffer, median of %d\n",
           prop.name, dev, prop.multiProcessorCount, bytes >> 20, iters);

    enum { NBUF = 9 };
    void *buf[NBUF];
    for (int i = 0; i < NBUF; i++) {
        CK(cudaMalloc(&buf[i], bytes + 64));
        CK(cudaMemset(buf[i], 0, bytes + 64));
    }
    const void *in[8];
    for (int i = 0; i < 8; i++)
        in[i] = buf[i + 1];

    float t0 = time_ms(iters, 0, buf[0], in, 1, bytes, MXH_CUDA_U8, MXH_CUDA_SUM);
    double copy_gbs = 2.0 * (double)bytes / (t0 * 1e6);
    printf("%-34s %10s %10s %8s\n", "# operation", "time_us", "GB/s", "vs_copy");
    printf("%-34s %10.1f %10.1f %8.3f\n", "cudaMemcpy D2D", t0 * 1e3, copy_gbs, 1.0);

    struct {
        const char *name;
        mxh_cuda_dt_t dt;
        mxh_cuda_op_t op;
        int nin, misalign;
    } cases[] = {
        {"sum float, 2 inputs", MXH_CUDA_F32, MXH_CUDA_SUM, 2, 0},
        {"sum bf16, 2 inputs", MXH_CUDA_BF16, MXH_CUDA_SUM, 2, 0},
        {"sum fp16, 2 inputs", MXH_CUDA_F16, MXH_CUDA_SUM, 2, 0},
        {"sum double, 2 inputs", MXH_CUDA_F64, MXH_CUDA_SUM, 2, 0},
        {"max int32, 2 inputs", MXH_CUDA_I32, MXH_CUDA_MAX, 2, 0},
        {"sum float, 4 inputs (IPC RS)", MXH_CUDA_F32, MXH_CUDA_SUM, 4, 0},
        {"sum bf16, 8 inputs (IPC RS)", MXH_CUDA_BF16, MXH_CUDA_SUM, 8, 0},
        {"sum float, 2 inputs, +4 B offset", MXH_CUDA_F32, MXH_CUDA_SUM, 2, 4},
    };
    double worst = 10;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const void *ins[8];
        size_t b = bytes - (cases[c].misalign ? 16 : 0);
        for (int i = 0; i < cases[c].nin; i++)
            ins[i] = (const char *)in[i] + cases[c].misalign;
        float t = time_ms(iters, 1, (char *)buf[0] + cases[c].misalign, ins, cases[c].nin, b,
                          cases[c].dt, cases[c].op);
        double gbs = (double)(cases[c].nin + 1) * (double)b / (t * 1e6);
        if (!cases[c].misalign && gbs / copy_gbs < worst)
            worst = gbs / copy_gbs;
        printf("%-34s %10.1f %10.1f %8.3f\n", cases[c].name, t * 1e3, gbs, gbs / copy_gbs);
    }
    printf("# aligned kernels reach %.3f of cudaMemcpy D2D at worst (target >= 0.9): %s\n", worst,
           worst >= 0.9 ? "OK" : "BELOW TARGET");
    for (int i = NBUF - 1; i >= 0; i--)
        cudaFree(buf[i]);
    return 0;
}
