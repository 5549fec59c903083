bin_PROGRAMS += benchmarks/mpix_bench
benchmarks_mpix_bench_SOURCES = benchmarks/mpix_bench.c benchmarks/bench_util.h
benchmarks_mpix_bench_LDADD = libmpixhier.la
benchmarks_mpix_bench_CPPFLAGS = $(AM_CPPFLAGS)
if HAVE_CUDA
# -m cuda (device buffers)
benchmarks_mpix_bench_CPPFLAGS += $(CUDA_CPPFLAGS) -DMXH_BENCH_CUDA
benchmarks_mpix_bench_LDADD += $(CUDA_LDFLAGS) $(CUDA_LIBS)
endif
# GPU benchmarks (CUDA builds): kernel bandwidth vs cudaMemcpy D2D, and
# MPIX_Hier_allreduce on device buffers vs host-staged MPI_Allreduce
if HAVE_CUDA
bin_PROGRAMS += benchmarks/mpix_kernel_bench benchmarks/mpix_gpu_bench
benchmarks_mpix_kernel_bench_SOURCES = benchmarks/mpix_kernel_bench.c
benchmarks_mpix_kernel_bench_LDADD = src/libmxh.la $(CUDA_LDFLAGS) $(CUDA_LIBS)
benchmarks_mpix_gpu_bench_SOURCES = benchmarks/mpix_gpu_bench.c benchmarks/bench_util.h
benchmarks_mpix_gpu_bench_LDADD = libmpixhier.la $(CUDA_LDFLAGS) $(CUDA_LIBS)
endif
# persistent against blocking allreduce (MPIX_Hier_Allreduce_init + MPI_Start/MPI_Wait)
bin_PROGRAMS += benchmarks/mpix_persist_bench
benchmarks_mpix_persist_bench_SOURCES = benchmarks/mpix_persist_bench.c
benchmarks_mpix_persist_bench_LDADD = libmpixhier.la
