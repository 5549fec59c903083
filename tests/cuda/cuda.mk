# cuda fragment (owned by its subsystem); included from tests/Makefile.am inside
# `if HAVE_GTEST`; paths are relative to tests/. GPU tests of the MPIX_Hier_*
# collectives on device and managed buffers, run by cuda/run_cuda_tests.sh on
# 1/2/4 ranks and fake multi-node layouts. Without a CUDA device every test
# skips collectively ("no CUDA device") and the runner exits 77 (SKIP).
if HAVE_CUDA
check_PROGRAMS += cuda/test_cuda_colls
cuda_test_cuda_colls_SOURCES = cuda/test_cuda_colls.cc mpi/main_mpi.cc mpi/mpi_util.hh \
	shim/mxh_test_shim.c shim/mxh_test_shim.h
cuda_test_cuda_colls_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src $(CUDA_CPPFLAGS)
cuda_test_cuda_colls_LDADD = $(top_builddir)/libmpixhier.la $(CUDA_LDFLAGS) $(CUDA_LIBS) \
	$(GTEST_LIBS) -lpthread -ldl
cuda_test_cuda_colls_LDFLAGS = -no-install
TESTS += cuda/run_cuda_tests.sh
CLEANFILES += cuda/mxh-cuda-*.log
endif
EXTRA_DIST += cuda/run_cuda_tests.sh
