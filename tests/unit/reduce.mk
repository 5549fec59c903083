# Reduction kernels and half precision types (src/reduce): tests/unit/test_reduce.cc
# compares with MPICH's MPI_Reduce_local, so it calls MPI_Init (a singleton: no
# mpiexec). tests/mpi/test_half.cc runs the MPIX_Hier_* collectives on the half
# types under mpiexec on 1-4 ranks (mpi/run_half_tests.sh).
# Included from tests/Makefile.am; paths are relative to tests/.
check_PROGRAMS += unit/test_reduce
unit_test_reduce_SOURCES = unit/test_reduce.cc unit/unit_util.hh
unit_test_reduce_LDADD = $(top_builddir)/libmpixhier_core.la $(GTEST_LIBS) -lpthread
unit_test_reduce_LDFLAGS = -no-install
TESTS += unit/test_reduce

check_PROGRAMS += mpi/test_half
mpi_test_half_SOURCES = mpi/test_half.cc $(MXH_MPI_COMMON)
mpi_test_half_LDADD = $(top_builddir)/libmpixhier_core.la $(GTEST_LIBS) -lpthread -ldl
mpi_test_half_LDFLAGS = -no-install
TESTS += mpi/run_half_tests.sh
EXTRA_DIST += mpi/run_half_tests.sh
CLEANFILES += mpi/mxh-half-*.log
