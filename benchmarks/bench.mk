bin_PROGRAMS += benchmarks/mpix_bench
benchmarks_mpix_bench_SOURCES = benchmarks/mpix_bench.c benchmarks/bench_util.h
benchmarks_mpix_bench_LDADD = libmpixhier.la
